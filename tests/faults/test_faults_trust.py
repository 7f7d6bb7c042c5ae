"""Fault suite: rows you can trust (the plugin API's faults are tests/faults/test_faults_api.py).

1. binary masks are never silently read as "ignore"; an (almost) all-ignore split
   or training stream is an error naming the dataset;
2. a metric state is bound to the run that made it: moved to another record, numbers
   and all, it is refused naming the mismatch;
3. a non-finite loss or weights stop any detector's training, whoever wrote ``fit``;
   nothing diverged is cached or scored;
4. user errors exit 2 with one line; no OSError the user can fix is an internal error;
   a FIFO is named; Ctrl-C says it was interrupted.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from diffzoo import DetectorCard
from diffzoo.harness.core.errors import CorruptSampleError, DataError
from diffzoo.harness.core.types import BINARY
from diffzoo.harness.models.segmenter import SegmentationDetector
from diffzoo.leaderboard.store import RecordStore

from helpers.cli import cli
from helpers.data import make_diffseg_folder
from helpers.detectors import register_test_detector
from helpers.records import make_record, make_state

pytestmark = pytest.mark.isolated_cache

FAST = ["--iterations", "4", "--batch-size", "2", "--crop-size", "32", "--bootstrap", "0", "--device", "cpu"]


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def records_of(out: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((out / "records").glob("*.json"))]


def binary_folder(root: Path, edited: int = 255, n: int = 12, labels: list[str] | None = None) -> Path:
    """A DiffSeg30k-layout folder whose masks mark edits with ``edited`` (255 or 1), the way
    third-party copies store them; no labels.json unless ``labels``."""
    make_diffseg_folder(root, n=n)
    for mask in (root / "train_copy").glob("*.mask.png"):
        m = np.asarray(Image.open(mask))
        Image.fromarray(np.where(m > 0, edited, 0).astype(np.uint8)).save(mask)
    (root / "labels.json").unlink()
    if labels is not None:
        (root / "labels.json").write_text(json.dumps({"names": labels}))
    return root


# -- 1. binary masks and ignore ------------------------------------------------------------------
def test_masks_of_0_and_255_are_scored_as_binary_with_255_edited(capsys, tmp_path):
    data = binary_folder(tmp_path / "third-party")
    code, out, err = cli(capsys, "data", "info", data)
    assert code == 0 and "binary masks: 0 unedited, 255 edited" in out and "['background', 'edited']" in out
    out_dir = tmp_path / "out"
    code, out, err = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "standard", "--dataset", data,
                         "--out", out_dir, *FAST)
    assert code == 0, err
    text = " ".join(out.split())
    assert text.count("read as a binary dataset") >= 1 and "255 edited" in text
    assert "skipped standard/semantic: dataset third-party has binary masks" in text
    recs = {r["case"]["name"]: r for r in records_of(out_dir)}
    assert set(recs) == {"binary", "image"}
    binary = recs["binary"]
    assert binary["dataset"]["label_map"]["source"] == "binary masks (binary-255)"
    assert binary["label_space"] == ["background", "edited"]
    assert binary["metrics"]["F1"] is not None and binary["baselines"]["all_edited"]["mIoU"] > 0  # edited pixels


def test_masks_of_0_and_1_are_binary_unless_a_label_map_says_otherwise(capsys, tmp_path):
    from diffzoo import open_dataset

    plain = open_dataset(str(binary_folder(tmp_path / "a", edited=1)))
    assert plain.label_space == BINARY and plain.mask_encoding.kind == "binary-1"
    vouched = open_dataset(str(binary_folder(tmp_path / "b", edited=1, labels=["background", "sd2", "sdxl"])))
    assert vouched.label_space.names == ("background", "sd2", "sdxl") and not vouched.mask_encoding.binary


def test_masks_of_0_1_and_of_0_255_mixed_are_refused_never_read_as_class_1_and_ignore(tmp_path):
    from diffzoo import open_dataset

    data = binary_folder(tmp_path / "mixed")
    for mask in sorted((data / "train_copy").glob("*.mask.png"))[1::4]:  # some re-saved as 0/1
        Image.fromarray((np.asarray(Image.open(mask)) > 0).astype(np.uint8)).save(mask)
    with pytest.raises(DataError) as err:
        open_dataset(str(data))
    assert str(err.value) == (
        f"{data}: the 12 mask(s) read hold 0, 1 and 255 and no label map says what they mean: binary masks of 0/1 "
        "and of 0/255 mixed (re-save them all as 0/255), or class indices with 255 = ignore (pass --labels FILE)")
    (data / "labels.json").write_text(json.dumps({"names": ["background", "sd2"]}))
    assert open_dataset(str(data)).mask_encoding.values == (0, 1, 255)  # vouched: class indices, 255 ignore


def test_0_255_masks_with_values_no_default_class_has_are_refused_never_read_with_255_ignore(tmp_path):
    """One mask resized with interpolation (edge values 1 and 254) turned the sniff to class indices: every
    other mask's 255 (edited) was then read as ignore, its edits never scored; the noisy one alone was refused."""
    from diffzoo import open_dataset

    data = binary_folder(tmp_path / "resized")
    noisy = sorted((data / "train_copy").glob("*.mask.png"))[1]
    m = np.asarray(Image.open(noisy)).copy()
    m[m == 255] = 254  # the rim a bilinear resize leaves
    m.flat[0] = 1
    Image.fromarray(m).save(noisy)
    with pytest.raises(DataError) as err:
        open_dataset(str(data))
    assert str(err.value) == (
        f"{data}: the 12 mask(s) read hold 0 and 255 and also 254, which no class of the 9-class default label map "
        "has: 0/255 binary masks resized with interpolation or once saved as JPEG? Read as class indices, 255 would "
        "be ignore and their edits never scored; re-save the masks with 0 and 255 only (or, for class indices with "
        "255 = ignore, pass --labels FILE)")
    (data / "labels.json").write_text(json.dumps({"names": ["background", "sd2"]}))
    assert open_dataset(str(data)).mask_encoding.values == (0, 1, 254, 255)  # vouched: class indices, 255 ignore


def test_a_0_255_mask_with_noise_the_sniff_did_not_read_is_skipped_never_a_1_read_as_edited(tmp_path):
    """A mask the sniff passed over holding JPEG noise (1 beside 0): its 1s were read as edited pixels."""
    from diffzoo import open_dataset

    data = binary_folder(tmp_path / "third-party")
    ds = open_dataset(str(data))
    assert ds.mask_encoding.kind == "binary-255"
    mask = data / "train_copy" / "00000001.mask.png"
    m = np.asarray(Image.open(mask)).copy()
    m[0, 0] = 1
    Image.fromarray(m).save(mask)
    with pytest.raises(CorruptSampleError) as err:
        ds.load("00000001")
    assert err.value.kind == "mask-values"
    assert str(err.value).endswith(f"{mask}: mask values 1 are neither of 0 (unedited) and 255 (edited)")


def test_labels_naming_editors_for_binary_masks_are_refused(capsys, tmp_path):
    data = binary_folder(tmp_path / "ds")
    code, out, err = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "standard", "--dataset", data,
                         "--labels", "sd2,sdxl", *FAST)
    assert code == 2 and len(lines(err)) == 1 and "--labels names the editors sd2, sdxl" in err
    assert "binary masks: 0 unedited, 255 edited" in err


def test_train_semantic_on_binary_masks_is_one_line(capsys, tmp_path):
    data = binary_folder(tmp_path / "ds")
    code, out, err = cli(capsys, "train", "--detector", "segformer.tiny", "--task", "semantic", "--dataset", data,
                         *FAST[:-4])
    assert code == 2 and len(lines(err)) == 1 and "binary masks" in err and "per-editor labels" in err


def _ignore_folder(root: Path, split_ignored: str) -> Path:
    """Class-index masks (labels.json: sd2, sdxl) whose ``split_ignored`` split is all 255."""
    make_diffseg_folder(root, n=12)
    ids = sorted(p.name.split(".")[0] for p in (root / "train_copy").glob("*.mask.png"))
    splits = {"train": ids[:8], "val": ids[8:]}
    (root / "splits.json").write_text(json.dumps(splits))
    for sid in splits[split_ignored]:
        mask = root / "train_copy" / f"{sid}.mask.png"
        Image.fromarray(np.full(np.asarray(Image.open(mask)).shape, 255, np.uint8)).save(mask)
    return root


def test_a_split_whose_labels_are_all_ignore_is_an_error_not_a_row(capsys, tmp_path):
    data = _ignore_folder(tmp_path / "ds", "val")
    code, out, err = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "standard", "--dataset", data,
                         "--out", tmp_path / "out", *FAST)
    assert code == 1 and len(lines(err)) == 1, err
    assert "dataset ds, split val: 100.0% of" in err and "'ignore'" in err
    assert not list((tmp_path / "out" / "records").glob("*.json"))


def test_training_on_all_ignore_labels_stops_naming_the_dataset(capsys, tmp_path):
    data = _ignore_folder(tmp_path / "ds", "train")
    code, out, err = cli(capsys, "train", "--detector", "segformer.tiny", "--dataset", data, "--iterations", "12",
                         "--batch-size", "2", "--crop-size", "32", "--device", "cpu")
    assert code == 1 and len(lines(err)) == 1, err
    assert "dataset ds, the first 10 training batch(es): 100.0% of" in err


def test_data_stats_says_how_the_stored_values_are_read(capsys, tmp_path):
    data = binary_folder(tmp_path / "ds")
    code, out, err = cli(capsys, "data", "stats", data, "--json", "--no-plots")
    assert code == 0, err
    stats = json.loads(out)
    assert stats["dataset"]["mask_encoding"]["kind"] == "binary-255"
    assert stats["dataset"]["mask_encoding"]["values"] == [0, 255]
    assert "0 unedited, 255 edited" in stats["dataset"]["mask_encoding"]["meaning"]
    assert stats["label_values"]["1"]["name"] == "edited" and stats["label_values"]["1"]["pixels"] > 0


# -- 2. a state belongs to the run that made it --------------------------------------------------
def _move_state(target: dict, donor: dict) -> dict:
    """``target`` re-written with ``donor``'s numbers and state, every digest and the id
    recomputed with diffzoo's own functions."""
    from diffzoo.harness.records import document

    for key in ("metrics", "ci95", "slices", "counts", "predictions_digest", "state_file", "state_sha256",
                "baselines", "confusion"):
        if key in donor:
            target[key] = donor[key]
    target["digests"] = document.field_digests(target)
    target["record_id"] = document.record_id_of(target)
    return target


@pytest.mark.parametrize("other", [{"seed": 1}, {"checkpoint": "cd" * 32}, {"fingerprint": "fp0002"}])
def test_a_state_moved_to_another_record_is_refused_naming_the_mismatch(capsys, tmp_path, other):
    store = RecordStore(tmp_path / "store")
    a = make_record(state=make_state(seed=0))
    b = make_record(state=make_state(seed=1), **other)
    store.add(a)
    store.add(b)
    path = store.records_dir / f"{a.id}.json"
    path.write_text(json.dumps(_move_state(json.loads(path.read_text()), b.data)))
    code, out, _ = cli(capsys, "leaderboard", "verify", "--store", store.root)
    text = " ".join(out.split())
    assert code == 1 and "belongs to another run" in text
    key, value = next(iter(other.items()))
    named = {"seed": "seed 1, the record names 0", "checkpoint": "detector.checkpoint_sha256",
             "fingerprint": "dataset_fingerprint \"fp0002\""}[key]
    assert named in text
    code, out, _ = cli(capsys, "leaderboard", "add", path, "--store", tmp_path / "other")
    assert code == 1 and "belongs to another run" in " ".join(out.split())


def test_runs_of_two_seeds_cannot_swap_states(capsys, diffseg_folder, tmp_path):
    """The same with real runs: one case, seeds 0 and 1, then A carrying B's state."""
    outs = []
    for seed in (0, 1):
        out = tmp_path / f"seed{seed}"
        code, _, err = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "standard", "--dataset",
                           diffseg_folder, "--out", out, "--seed", str(seed), *FAST)
        assert code == 0, err
        outs.append({r["case"]["name"]: r for r in records_of(out)}["binary"])
    a, b = outs
    assert a["state_sha256"] != b["state_sha256"]
    store = RecordStore(tmp_path / "seed0")
    (store.root / "states" / Path(b["state_file"]).name).write_bytes(
        (tmp_path / "seed1" / b["state_file"]).read_bytes())
    path = store.records_dir / f"{a['record_id']}.json"
    path.write_text(json.dumps(_move_state(a, b)))
    code, out, _ = cli(capsys, "leaderboard", "verify", "--store", store.root)
    assert code == 1 and "belongs to another run: the state was made with seed 1, the record names 0" in \
        " ".join(out.split())


# -- 3. divergence outside the shared trainer ----------------------------------------------------
class OwnFit(SegmentationDetector):
    """A plugin detector with its own fit, as docs/plugins.md teaches; ``mode``: 'nan-loss'
    reports a NaN loss at step 3, 'nan-weights' reports finite losses but leaves NaN weights
    and writes its own model.safetensors."""

    mode = "nan-loss"

    def build_network(self, num_outputs, pretrained):
        return torch.nn.Conv2d(3, num_outputs, 3, padding=1)

    def fit(self, train, config, progress=None):
        losses = [0.9, 0.7, float("nan"), 0.5]
        for step, loss in enumerate(losses[:config.iterations], start=1):
            if progress is not None:
                progress(step, 0.5 if self.mode == "nan-weights" else loss)
        if self.mode == "nan-weights":
            with torch.no_grad():
                self.model.net.weight.fill_(float("nan"))
        return {"iterations": config.iterations}

    def save(self, path, extra=None):
        if self.mode != "nan-weights":
            return super().save(path, extra)
        from safetensors.torch import save_file  # its own writer, not save_checkpoint

        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        save_file({k: v.contiguous() for k, v in self.model.state_dict().items()}, str(path / "model.safetensors"))
        (path / "card.json").write_text(json.dumps({"card": self.card.to_dict(), **(extra or {})}))
        return path / "model.safetensors"


@pytest.fixture
def ownfit(monkeypatch):
    card = DetectorCard(name="ownfit.x", description="its own fit", tasks=("binary",))
    register_test_detector(monkeypatch, card, OwnFit)
    return OwnFit


def _cached(name: str) -> list[Path]:
    """The checkpoint folders cached for ``name`` (not the ``<key>.train`` logs or ``<key>.resume`` states)."""
    from diffzoo.harness.core.fsutil import cache_root

    return [p for p in (cache_root() / "checkpoints" / name).glob("*") if p.is_dir() and "." not in p.name] \
        if (cache_root() / "checkpoints" / name).is_dir() else []


def test_a_nan_loss_in_a_plugins_own_fit_stops_the_run_and_caches_nothing(capsys, diffseg_folder, tmp_path, ownfit):
    code, out, err = cli(capsys, "run", "--detector", "ownfit", "--suite", "standard", "--dataset", diffseg_folder,
                         "--out", tmp_path / "out", *FAST)
    assert code == 1 and len(lines(err)) == 1, err
    assert ("detector 'ownfit.x': training diverged at step 3 (loss nan; the last finite loss was 0.7 at step 2); "
            "nothing was cached or recorded") in err
    assert not _cached("ownfit.x") and not list((tmp_path / "out" / "records").glob("*.json"))
    code, out, err = cli(capsys, "run", "--detector", "ownfit", "--suite", "standard", "--dataset", diffseg_folder,
                         "--out", tmp_path / "out2", "--no-train", *FAST)
    assert code != 0 and "no binary checkpoint" in err  # nothing diverged was kept to reuse


def test_nan_weights_written_by_a_plugins_own_save_are_not_kept(capsys, diffseg_folder, tmp_path, ownfit, monkeypatch):
    monkeypatch.setattr(ownfit, "mode", "nan-weights")
    code, out, err = cli(capsys, "run", "--detector", "ownfit", "--suite", "standard", "--dataset", diffseg_folder,
                         "--out", tmp_path / "out", *FAST)
    assert code == 1 and len(lines(err)) == 1, err
    assert "holds NaN or inf weights" in err and "it was not kept in the cache" in err
    assert not _cached("ownfit.x")


def test_no_train_refuses_a_cached_checkpoint_with_nan_weights(capsys, diffseg_folder, tmp_path):
    """A cache entry made before diffzoo checked (or by hand), hash made to match."""
    from safetensors.torch import load_file, save_file

    from diffzoo.harness.core.fsutil import sha256_file

    args = ["run", "--detector", "segformer.tiny", "--suite", "standard", "--dataset", diffseg_folder, *FAST]
    assert cli(capsys, *args, "--out", tmp_path / "out")[0] == 0
    for folder in _cached("segformer.tiny"):
        weights = folder / "model.safetensors"
        tensors = load_file(str(weights))
        first = next(k for k, v in tensors.items() if v.is_floating_point())
        tensors[first] = torch.full_like(tensors[first], float("nan"))
        save_file(tensors, str(weights))
        card = json.loads((folder / "card.json").read_text())
        (folder / "card.json").write_text(json.dumps({**card, "sha256": sha256_file(weights)}))
    code, out, err = cli(capsys, *args, "--out", tmp_path / "out2", "--no-train")
    assert code == 1 and len(lines(err)) == 1 and "holds NaN or inf weights" in err and "delete" in err
    assert not list((tmp_path / "out2" / "records").glob("*.json"))


# -- 4. user errors ------------------------------------------------------------------------------
@pytest.mark.parametrize("content, why", [
    ({"names": ["background", "sd2", "sd2"]}, "editors 'sd2' and 'sd2' are one class, 'sd2'"),
    # a label file's classes follow the editors' rule: 'Background' was a second background class, and
    # 'café' typed composed and decomposed two classes
    (["background", "sdxl", " Background"], "editor 'Background' cannot name a class: background is label 0"),
    (["background", "caf\u00e9", "cafe\u0301"], "editors 'caf\\xe9' and 'cafe\\u0301' are one class, 'café'"),
    # a line break in a class name split every line naming it
    (["background", "sd2\nx"], "editor 'sd2\\nx' cannot name a class: it holds a control character (a line break"),
    # '@' names a metric's slice: a class 'a@b' gave a column IoU.a@b read as IoU.a sliced by b
    (["background", "a@b"], "editor 'a@b' cannot name a class: it holds '@', which names a metric's slice"),
    ({"names": ["background", *(f"e{i}" for i in range(300))]}, "at most 255 classes"),
    ([["a"]], "class names must be non-empty strings"),
])
def test_an_unusable_labels_file_is_a_usage_error(capsys, diffseg_folder, tmp_path, content, why):
    labels = tmp_path / "labels-given.json"
    labels.write_text(json.dumps(content))
    code, out, err = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "standard", "--dataset",
                         diffseg_folder, "--labels", labels, "--out", tmp_path / "out", *FAST)
    assert code == 2 and len(lines(err)) == 1 and err.startswith("error: --labels: ") and why in err


def test_a_cache_under_a_regular_file_is_refused_before_any_work(capsys, diffseg_folder, tmp_path, monkeypatch):
    (tmp_path / "afile").write_text("x")
    monkeypatch.setenv("DIFFZOO_CACHE", str(tmp_path / "afile" / "cache"))
    code, out, err = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "standard", "--dataset",
                         diffseg_folder, "--out", tmp_path / "out", *FAST)
    assert code == 2 and len(lines(err)) == 1 and "internal error" not in err
    assert "$DIFFZOO_CACHE" in err and "afile/cache" in err and "a part of the path is a file" in err
    assert "training" not in out


def test_out_under_a_regular_file_is_one_line(capsys, diffseg_folder, tmp_path):
    (tmp_path / "afile").write_text("x")
    code, out, err = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "standard", "--dataset",
                         diffseg_folder, "--out", tmp_path / "afile" / "out", *FAST)
    assert code == 2 and len(lines(err)) == 1 and "--out" in err and "a part of the path is a file" in err


@pytest.mark.parametrize("code_, words", [
    (errno.EACCES, "permission denied"), (errno.EROFS, "read-only"), (errno.ENAMETOOLONG, "too long"),
    (errno.ENOTDIR, "is a file, not a folder"), (errno.EISDIR, "it is a folder"),
])
def test_a_user_fixable_oserror_in_any_writer_is_one_line(capsys, tmp_path, monkeypatch, code_, words):
    import diffzoo.leaderboard.render.text as formats

    target = tmp_path / "pub" / "leaderboard.md"

    def fails(selection, fmts, out, **options):
        raise OSError(code_, os.strerror(code_), str(target))

    monkeypatch.setattr(formats, "publish_formats", fails)
    store = RecordStore(tmp_path / "store")
    store.add(make_record(state=make_state()))
    code, out, err = cli(capsys, "leaderboard", "publish", "--store", store.root, "--out", tmp_path / "pub")
    assert code == 2 and len(lines(err)) == 1 and "internal error" not in err
    assert f"{target} cannot be used" in err and words in err


def test_a_fifo_named_like_an_image_is_named_and_never_opened(tmp_path):
    data = make_diffseg_folder(tmp_path / "ds", n=9)
    fifo = data / "train_copy" / "00000004.image.png"
    fifo.unlink()
    os.mkfifo(fifo)
    code = ("import sys; from diffzoo.cli import main\n"
            "main(['data', 'stats', sys.argv[1], '--json', '--no-plots'])")
    env = {**os.environ, "DIFFZOO_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", code, str(data)], capture_output=True, text=True, timeout=120,
                          env=env)  # a FIFO opened for reading would block for ever: the timeout fails the test
    assert done.returncode == 0, done.stderr
    stats = json.loads(done.stdout)
    assert stats["skipped"]["by_kind"] == {"not-a-file": 1}
    assert "00000004.image.png is a FIFO (named pipe), not an image file" in stats["skipped"]["samples"][0]["reason"]
    assert "have no image" not in done.stderr


def test_a_fifo_listed_by_a_json_list_is_named_not_called_missing(capsys, tmp_path):
    """The class, not only DiffSeg30k's folder: a generic JSON list naming a FIFO."""
    from diffzoo import open_dataset
    from diffzoo.harness.core.errors import CorruptSampleError

    root = tmp_path / "list"
    root.mkdir()
    Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(root / "a.png")
    os.mkfifo(root / "b.png")
    (root / "list.json").write_text(json.dumps([["a.png", "Negative"], ["b.png", "Negative"]]))
    ds = open_dataset(str(root / "list.json"), val_fraction=0.0)
    ids = [i for s in ds.splits() for i in ds.ids(s)]
    fifo = next(i for i in ids if "b" in i)
    with pytest.raises(CorruptSampleError, match="is a FIFO \\(named pipe\\), not an image file") as err:
        ds.load(fifo)
    assert err.value.kind == "not-a-file"


def test_a_fifo_or_device_given_as_a_dataset_is_named_for_what_it_is_and_never_sniffed(capsys, tmp_path):
    """A FIFO named like an archive (``x.zip``) or a device as ``--dataset`` / ``--eval-dataset``
    / ``data info``: one line saying what the path is, never the list of every adapter's layout."""
    os.mkfifo(tmp_path / "data.zip")
    for path, kind in ((tmp_path / "data.zip", "a FIFO (named pipe)"), (Path("/dev/null"), "a character device")):
        said = f"error: dataset path {path} is {kind}, not a dataset folder or file"
        for args in (["data", "info", path], ["run", "--detector", "segformer.tiny", "--dataset", path, "--plan"],
                     ["run", "--detector", "segformer.tiny", "--eval-dataset", path, "--suite", "cross-dataset",
                      "--plan"]):
            code, _, err = cli(capsys, *args)
            named = f"--eval-dataset {path}: " if "--eval-dataset" in args else ""
            assert code == 2 and err.strip() == said.replace("error: ", f"error: {named}"), (args, err)


def test_ctrl_c_says_it_was_interrupted(capsys, monkeypatch):
    import diffzoo.api as api

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(api, "evaluate", interrupted)
    code, out, err = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "standard")
    assert code == 130 and len(lines(err)) == 1 and err.startswith("interrupted")
    assert " ".join(err.split()).endswith("the same command run again reuses what was finished")
    # a build is made in a temporary folder and deleted when stopped: run again, it starts anew
    monkeypatch.setattr("diffzoo.generators.datasets.mini.ensure_mini", interrupted)
    code, out, err = cli(capsys, "data", "build", "mini", "--root", "x")
    assert code == 130 and " ".join(err.split()).endswith("the same command run again starts anew"), err
