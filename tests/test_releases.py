"""Released weights read as released (``--weights released:NAME``), through the generic loader
(``harness/models/releases.py``) on the DINOv3-IML family's layout at the tiny size: the file is
what the authors' release holds (the state dict under ``model``, their extra entries), written
by a re-implementation of the authors' module (tests/test_dinov3iml.py)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
import torch

from diffzoo.harness.core.plugins import get_registry

from helpers.cli import cli, one_line_exit_2
from helpers.dinov3iml import FILE, RELEASE, reference_model, released

pytestmark = pytest.mark.isolated_cache

RUN = ["run", "--detector", "dinov3iml.tiny", "--suite", "standard", "--bootstrap", "0", "--device", "cpu"]


def records(out: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((out / "records").glob("*.json"))]


def test_a_release_file_scores_zero_shot_and_every_record_names_it(capsys, tmp_path):
    path = released(tmp_path / "dl")
    out = tmp_path / "out"
    code, stdout, stderr = cli(capsys, *RUN, "--weights", f"released:{RELEASE}", "--checkpoint", path, "--no-train",
                               "--out", out)
    assert code == 0, stderr
    rows = records(out)
    assert rows and all(r["detector"]["checkpoint_source"] == "released" for r in rows)
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    for r in rows:
        release = r["detector"]["release"]
        assert release["name"] == RELEASE and release["files"] == [{"name": FILE, "sha256": sha}]
        assert "CASIA-v2" in release["trained_on"]
        assert r["training"] in (None, {})  # never trained
    assert "[released:cat-lora-r32]" in stdout
    code, text, err = cli(capsys, "leaderboard", "verify", "--store", out)
    assert code == 0, text + err


def test_the_release_is_found_in_the_cache_folder_and_converted_once(capsys, tmp_path):
    cache = Path(os.environ["DIFFZOO_CACHE"])
    released(cache / "weights" / "released" / "dinov3iml.tiny" / RELEASE)
    code, _, err = cli(capsys, *RUN, "--weights", f"released:{RELEASE}", "--out", tmp_path / "a")
    assert code == 0, err
    converted = list((cache / "checkpoints" / "dinov3iml.tiny").glob(f"released-{RELEASE}-*/model.safetensors"))
    assert len(converted) == 1
    card = json.loads((converted[0].parent / "card.json").read_text())
    assert card["release"]["name"] == RELEASE
    stamp = converted[0].stat().st_mtime_ns
    code, _, err = cli(capsys, *RUN, "--weights", f"released:{RELEASE}", "--out", tmp_path / "b")
    assert code == 0, err
    assert converted[0].stat().st_mtime_ns == stamp  # read from the cache, not converted again
    first = {r["case"]["name"]: r["metrics"] for r in records(tmp_path / "a")}
    assert first == {r["case"]["name"]: r["metrics"] for r in records(tmp_path / "b")}


def test_a_damaged_converted_release_is_converted_again(capsys, tmp_path, caplog):
    path = released(tmp_path / "dl")
    run = [*RUN, "--weights", f"released:{RELEASE}", "--checkpoint", path]
    code, _, err = cli(capsys, *run, "--out", tmp_path / "a")
    assert code == 0, err
    cache = Path(os.environ["DIFFZOO_CACHE"])
    weights = next((cache / "checkpoints" / "dinov3iml.tiny").glob(f"released-{RELEASE}-*/model.safetensors"))
    intact = weights.read_bytes()
    weights.write_bytes(intact[:-4] + b"\0\0\0\0")  # a flipped byte on disk, after the conversion
    code, _, err = cli(capsys, *run, "--out", tmp_path / "b")
    assert code == 0, err
    assert "damaged (its weights no longer match its card); converting it again" in caplog.text
    assert weights.read_bytes() == intact
    first = {r["case"]["name"]: r["metrics"] for r in records(tmp_path / "a")}
    assert first == {r["case"]["name"]: r["metrics"] for r in records(tmp_path / "b")}


def test_the_converted_release_given_as_checkpoint_is_still_the_release(capsys, tmp_path):
    path = released(tmp_path / "dl")
    code, _, err = cli(capsys, *RUN, "--weights", f"released:{RELEASE}", "--checkpoint", path, "--out", tmp_path / "a")
    assert code == 0, err
    [folder] = (Path(os.environ["DIFFZOO_CACHE"]) / "checkpoints" / "dinov3iml.tiny").glob(f"released-{RELEASE}-*")
    code, _, err = cli(capsys, *RUN, "--checkpoint", folder, "--no-train", "--out", tmp_path / "b")
    assert code == 0, err
    rows = records(tmp_path / "b")  # zero-shot and grouped apart, as released weights: never a trained model's row
    assert rows and all(r["detector"]["checkpoint_source"] == "released" for r in rows)
    assert all(r["detector"]["release"]["name"] == RELEASE for r in rows)
    first = {r["case"]["name"]: r["metrics"] for r in records(tmp_path / "a")}
    assert first == {r["case"]["name"]: r["metrics"] for r in rows}


def test_a_converted_release_given_to_another_detector_names_the_detector_it_is_for(capsys, tmp_path):
    """Never "segformer.tiny has no released weights called 'cat-lora-r32'", as if the release were misnamed."""
    code, _, err = cli(capsys, *RUN, "--weights", f"released:{RELEASE}", "--checkpoint", released(tmp_path / "dl"),
                       "--out", tmp_path / "a")
    assert code == 0, err
    [folder] = (Path(os.environ["DIFFZOO_CACHE"]) / "checkpoints" / "dinov3iml.tiny").glob(f"released-{RELEASE}-*")
    code, _, err = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "standard", "--checkpoint", folder,
                       "--no-train", "--plan")
    assert code == 1 and err.strip() == f"error: checkpoint {folder} is for detector 'dinov3iml.tiny', not " \
                                        "'segformer.tiny'", err


def test_a_missing_release_file_says_where_to_get_it(capsys, tmp_path):
    code, _, err = cli(capsys, *RUN, "--weights", f"released:{RELEASE}", "--out", tmp_path / "out")
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert code != 0 and len(lines) == 1, err
    assert FILE in lines[0] and "drive.google.com" in lines[0] and "released/dinov3iml.tiny" in lines[0]


def test_a_release_file_in_the_wrong_cache_folder_is_named_with_where_it_goes(capsys, tmp_path):
    """It was not noticed: the message said to download the file that lay one folder up."""
    detector = Path(os.environ["DIFFZOO_CACHE"]) / "weights" / "released" / "dinov3iml.tiny"
    home = detector / RELEASE
    released(detector / "a" / "b")  # deeper than the detector's folder's children: not looked for
    plan = [*RUN, "--weights", f"released:{RELEASE}", "--plan", "--out", tmp_path / "out"]
    for folders, it in ([detector], "it"), ([detector, detector / "other"], "them"):
        astray = [released(folder) for folder in folders]
        code, _, err = cli(capsys, *plan)
        [line] = [line for line in err.splitlines() if line.startswith("error:")]
        assert code == 1 and line.endswith(
            f"into {home} (diffzoo run also takes them as --checkpoint PATH); found in the wrong folder: "
            f"{', '.join(map(str, astray))}: move {it} into {home} (missing: {home / FILE})"), err


def test_the_plan_names_the_release_files_and_refuses_missing_ones(capsys, tmp_path):
    plan = [*RUN, "--weights", f"released:{RELEASE}", "--plan", "--out", tmp_path / "out"]
    code, _, err = cli(capsys, *plan)
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 1 and len(lines) == 1 and "are missing (diffzoo downloads none): download " \
        f"{FILE} from Google Drive" in lines[0], err
    path = released(tmp_path / "dl")
    code, text, err = cli(capsys, *plan, "--checkpoint", path)
    assert code == 0 and f"; released weights {RELEASE} ({path}), zero-shot" in " ".join(text.split()), text + err


def test_an_unknown_release_lists_the_cards_releases(capsys, tmp_path):
    code, _, err = cli(capsys, *RUN, "--weights", "released:nope", "--out", tmp_path / "out")
    assert code == 2 and RELEASE in err and "'nope'" in err, err
    code, _, err = cli(capsys, *RUN, "--weights", "casiav2", "--out", tmp_path / "out")
    assert code == 2 and "released:NAME" in err, err


def test_a_pickled_checkpoint_without_weights_is_read_as_the_release_it_names(capsys, tmp_path, caplog):
    path = released(tmp_path / "dl")  # named as the card's release names its file
    code, out, err = cli(capsys, *RUN, "--checkpoint", path, "--no-train", "--out", tmp_path / "out")
    assert code == 0, err
    assert f"as dinov3iml.tiny's release {RELEASE}" in out + err + caplog.text
    assert all(r["detector"]["release"]["name"] == RELEASE for r in records(tmp_path / "out"))


def test_a_pickled_checkpoint_of_no_single_release_asks_which_it_is(capsys, tmp_path, monkeypatch):
    from diffzoo.plugin import Release

    common = {"source": "https://example.org", "trained_on": "x", "protocol": "test", "licence": "MIT"}
    _layout_detector(monkeypatch, [Release("a", ("a.pth",), **common), Release("b", ("b.pth",), **common)])
    torch.save(_authors_state(), tmp_path / "other.pth")
    code, _, err = cli(capsys, "run", "--detector", "layouts.x", "--suite", "standard", "--device", "cpu",
                       "--checkpoint", tmp_path / "other.pth", "--no-train", "--out", tmp_path / "out")
    assert code == 2 and "--weights released:NAME" in err and "releases: a, b" in err, err


def test_a_pth_tar_checkpoint_without_weights_is_read_as_the_release_it_names(capsys, tmp_path, monkeypatch):
    from diffzoo.plugin import Release

    _layout_detector(monkeypatch, [Release("v2", ("CAT_full_v2.pth.tar",), "https://example.org", "x", "test", "MIT",
                                           unwrap=("state_dict",))])
    torch.save({"state_dict": _authors_state(), "epoch": 3}, tmp_path / "CAT_full_v2.pth.tar")
    code, _, err = cli(capsys, "run", "--detector", "layouts.x", "--suite", "standard", "--bootstrap", "0", "--device",
                       "cpu", "--checkpoint", tmp_path / "CAT_full_v2.pth.tar", "--no-train", "--out", tmp_path / "out")
    assert code == 0, err
    assert all(r["detector"]["release"]["name"] == "v2" for r in records(tmp_path / "out"))


def test_another_cards_release_file_as_checkpoint_names_the_run_of_its_detector(capsys, tmp_path):
    """Never "convert it to safetensors (safetensors.torch.save_file)", which gives no model's keys, nor the
    card's only release read from the file another card's release names."""
    path = released(tmp_path / "dl")  # dinov3iml.l's file (its tiny card lists it too)
    small = tmp_path / "dl" / "cat_vits_lora_r64.pth"  # dinov3iml.s's
    small.write_bytes(path.read_bytes())
    for detector, given, owner, release, also in (
            ("segformer.tiny", path, "dinov3iml.l", RELEASE, f" (also the file of dinov3iml.tiny released:{RELEASE})"),
            ("dinov3iml.tiny", small, "dinov3iml.s", "cat-lora-r64", "")):
        code, out, err = cli(capsys, "run", "--detector", detector, "--suite", "standard", "--device", "cpu",
                             "--checkpoint", given, "--out", tmp_path / "out")
        assert one_line_exit_2(code, out, err) == (
            f"error: --checkpoint {given} is a file {owner}'s authors released{also}, not {detector}'s: `diffzoo run "
            f"--detector {owner} --weights released:{release} --checkpoint {given}` scores it")


def test_a_release_with_a_key_missing_or_renamed_is_refused_naming_the_keys(capsys, tmp_path):
    state = reference_model().state_dict()
    gone = "seg_head.6.weight"
    del state[gone]
    state["seg_head.7.weight"] = torch.zeros(1)
    path = released(tmp_path / "dl", state)
    code, _, err = cli(capsys, *RUN, "--weights", f"released:{RELEASE}", "--checkpoint", path, "--out",
                       tmp_path / "out")
    assert code == 2, err
    assert gone in err and "seg_head.7.weight" in err and str(path) in err, err
    assert not (tmp_path / "out" / "records").exists() or not list((tmp_path / "out" / "records").iterdir())


def test_a_file_that_does_not_fit_the_release_never_has_its_hash_recorded(capsys, tmp_path):
    state = reference_model().state_dict()
    del state["seg_head.6.weight"]  # another file (another release, another model) where the release goes
    path = released(tmp_path / "dl", state)
    run = [*RUN, "--weights", f"released:{RELEASE}", "--checkpoint", path]
    code, _, err = cli(capsys, *run, "--out", tmp_path / "wrong")
    assert code == 2 and "seg_head.6.weight" in err, err
    assert not list((Path(os.environ["DIFFZOO_CACHE"]) / "weights").rglob("*.json"))
    released(tmp_path / "dl")  # the release's own file, put where the wrong one was: taken
    code, _, err = cli(capsys, *run, "--out", tmp_path / "right")
    assert code == 0, err
    [record] = (Path(os.environ["DIFFZOO_CACHE"]) / "weights").rglob("*.json")
    assert json.loads(record.read_text())["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_release_holding_tensors_of_another_kind_is_refused_and_half_precision_loads(capsys, tmp_path, monkeypatch):
    """An int tensor where the model's weight is float (or a float where its counter is int) was cast
    silently; a float16 release is cast as releases often need."""
    state = reference_model().state_dict()
    state["seg_head.6.weight"] = (state["seg_head.6.weight"] * 100).long()
    state["seg_head.1.num_batches_tracked"] = state["seg_head.1.num_batches_tracked"].float()
    path = released(tmp_path / "int", state)
    one_line_exit_2(*cli(capsys, *RUN, "--weights", f"released:{RELEASE}", "--checkpoint", path, "--out",
                         tmp_path / "refused"),
                    f"release {RELEASE} ({path}) does not fit the detector: 2 tensor dtype(s) of another kind: "
                    "seg_head.1.num_batches_tracked is float32 in the checkpoint, int64 in the model; "
                    "seg_head.6.weight is int64 in the checkpoint, float32 in the model")
    for low in (torch.float16, torch.bfloat16):  # the RoPE periods too, rounded as the file's precision rounds them
        monkeypatch.setenv("DIFFZOO_CACHE", str(tmp_path / f"cache-{low}"))  # each file the release's first
        state = {k: v.to(low) if v.is_floating_point() else v for k, v in reference_model().state_dict().items()}
        code, _, err = cli(capsys, *RUN, "--weights", f"released:{RELEASE}", "--checkpoint",
                           released(tmp_path / str(low), state), "--out", tmp_path / f"{low}-out")
        assert code == 0, err
    from diffzoo.plugin import describe_mismatch  # the one wording, for diffzoo's own checkpoints too

    model = {"w": torch.zeros(2), "n": torch.zeros((), dtype=torch.int64), "m": torch.zeros(2, dtype=torch.bool)}
    assert describe_mismatch(model, {"w": torch.zeros(2, dtype=torch.bfloat16), "n": torch.zeros((), dtype=torch.int32),
                                     "m": torch.zeros(2, dtype=torch.bool)}) is None
    assert describe_mismatch(model, {"w": torch.zeros(2), "n": torch.zeros(()), "m": torch.zeros(2, dtype=torch.uint8)}
                             ) == ("2 tensor dtype(s) of another kind: n is float32 in the checkpoint, int64 in the "
                                   "model; m is uint8 in the checkpoint, bool in the model")


class _Payload:
    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_a_malicious_release_file_never_runs_and_is_one_line(capsys, tmp_path):
    marker = tmp_path / "pwned"
    path = released(tmp_path / "dl", payload=_Payload(marker))
    code, _, err = cli(capsys, *RUN, "--weights", f"released:{RELEASE}", "--checkpoint", path, "--out",
                       tmp_path / "out")
    assert code == 2 and not marker.exists(), err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "not a plain tensor file" in lines[0] and "weights_only" not in lines[0], err
    # its hash was never recorded: the right file at the same place is accepted afterwards
    released(tmp_path / "dl")
    code, _, err = cli(capsys, *RUN, "--weights", f"released:{RELEASE}", "--checkpoint", path, "--out",
                       tmp_path / "out2")
    assert code == 0, err


def test_a_release_file_whose_wrapper_holds_itself_is_one_line(capsys, tmp_path):
    wrapper: dict = {"epoch": 3}
    wrapper["model"] = wrapper
    path = tmp_path / FILE
    torch.save(wrapper, path)
    code, out, err = cli(capsys, *RUN, "--weights", f"released:{RELEASE}", "--checkpoint", path, "--out",
                         tmp_path / "out")
    one_line_exit_2(code, out, err, f"{path} holds no tensors under model (its keys: epoch, model)")


@pytest.mark.parametrize(("held", "said"), [(lambda t: t.to_sparse(), "a sparse_coo tensor"),
                                            (lambda t: t.to("meta"), "a meta tensor (no values)")])
def test_a_release_file_holding_a_tensor_without_weight_values_is_one_line(capsys, tmp_path, held, said):
    state = reference_model().state_dict()
    state["seg_head.0.bias"] = held(state["seg_head.0.bias"])
    path = released(tmp_path / "dl", state)
    code, out, err = cli(capsys, *RUN, "--weights", f"released:{RELEASE}", "--checkpoint", path, "--out",
                         tmp_path / "out")
    one_line_exit_2(code, out, err, f"seg_head.0.bias is {said} in the checkpoint, [32] in the model")


def test_released_rows_are_grouped_apart_from_trained_ones(capsys, tmp_path):
    path = released(tmp_path / "dl")
    store = tmp_path / "store"
    code, _, err = cli(capsys, *RUN, "--weights", f"released:{RELEASE}", "--checkpoint", path, "--out", store)
    assert code == 0, err
    code, _, err = cli(capsys, *RUN, "--iterations", "2", "--batch-size", "2", "--crop-size", "32", "--out",
                       tmp_path / "trained")
    assert code == 0, err
    code, _, err = cli(capsys, "leaderboard", "add", *(tmp_path / "trained" / "records").glob("*.json"),
                       "--store", store)
    assert code == 0, err
    pub = tmp_path / "pub"
    code, _, err = cli(capsys, "leaderboard", "publish", "--store", store, "--format", "md", "--out", pub)
    assert code == 0, err
    text = (pub / "overview.md").read_text()
    released_part = text[text.index("released weights, zero-shot"):]
    assert "dinov3iml.tiny \\[released:cat-lora-r32\\]" in released_part or \
        "dinov3iml.tiny [released:cat-lora-r32]" in released_part
    trained_part = text[:text.index("released weights, zero-shot")]
    assert "released:" not in trained_part and "dinov3iml.tiny" in trained_part
    code, _, err = cli(capsys, "leaderboard", "publish", "--store", store, "--format", "html", "--out", tmp_path / "site")
    assert code == 0, err
    page = (tmp_path / "site" / "detectors" / "dinov3iml.tiny.html").read_text()
    assert "released weights cat-lora-r32" in page and "trained on CASIA-v2" in page  # what each row was trained on
    assert "dinov3iml.tiny: trained on mini/train" in page


def test_released_weights_scored_on_benchmarks_get_their_columns_in_the_released_table(capsys, tmp_path):
    from helpers.data import make_tpgt

    path = released(tmp_path / "dl")
    store = tmp_path / "store"
    code, _, err = cli(capsys, *RUN[:4], "standard,cross-dataset", *RUN[5:], "--weights", f"released:{RELEASE}",
                       "--checkpoint", path, "--eval-dataset", make_tpgt(tmp_path / "tpgt"), "--out", store)
    assert code == 0, err
    code, _, err = cli(capsys, "leaderboard", "publish", "--store", store, "--format", "md", "--out", tmp_path / "pub")
    assert code == 0, err
    text = (tmp_path / "pub" / "overview.md").read_text()
    # one table: the run's own data (mini) and the benchmark side by side, zero-shot
    assert text.count("\n## ") == 1 and "## mini (" in text and "released weights, zero-shot" in text
    header = next(line for line in text.splitlines() if line.startswith("|") and "detector" in line)
    assert "standard: binary mIoU" in header and "tpgt/val: mIoU" in header and "tpgt/val: image Acc" in header


def test_list_detectors_released_shows_each_release_with_its_source_and_numbers(capsys):
    code, out, _ = cli(capsys, "list", "detectors", "dinov3iml.l", "--released")
    assert code == 0
    assert RELEASE in out and "CASIAv1" in out and "0.907" in out
    card = get_registry().get("detector", "dinov3iml.l").card
    assert card.release(RELEASE).published[-1].value == 0.847
    assert "releases" not in card.to_dict()  # never part of a cache key or a record


def test_docs_list_every_release_the_cards_know():
    table = (Path(__file__).parents[1] / "docs" / "detectors.md").read_text(encoding="utf-8")
    for entry in get_registry().list("detector"):
        if entry.name.endswith(".tiny"):
            continue
        for release in entry.card.releases:
            assert f"| `{entry.name}` | `{release.name}` |" in table, (entry.name, release.name)


# -- every release layout the cards use, on a third party's detector ---------------------------------
class _Parts(torch.nn.Module):
    """Two parts, as a multi-file release splits its model (PSCC-Net: FENet, SegNet)."""

    def __init__(self, num_outputs: int):
        super().__init__()
        self.FENet = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4),
                                         torch.nn.ReLU())
        self.SegNet = torch.nn.Conv2d(4, num_outputs, 1)

    def forward(self, x):
        return self.SegNet(self.FENet(x))


def _layout_detector(monkeypatch, releases):
    from diffzoo.plugin import DetectorCard, SegmentationDetector

    from helpers.detectors import register_test_detector

    class PartsDetector(SegmentationDetector):
        def build_network(self, num_outputs, pretrained):
            return _Parts(num_outputs)

    card = DetectorCard(name="layouts.x", description="a two-part test model", tasks=("binary",),
                        releases=tuple(releases))
    register_test_detector(monkeypatch, card, lambda build: PartsDetector(build))
    return card


def _authors_state(seed: int = 3) -> dict[str, torch.Tensor]:
    """The two-part model's own keys (``FENet.*``, ``SegNet.*``) with random values."""
    torch.manual_seed(seed)
    model = _Parts(1)
    return {k: (torch.rand_like(v) + 0.5 if k.endswith("running_var") else torch.randn_like(v))
            if v.is_floating_point() else v for k, v in model.state_dict().items()}


def _scores(capsys, tmp_path, name, given):
    out = tmp_path / f"out-{name}"
    code, _, err = cli(capsys, "run", "--detector", "layouts.x", "--suite", "standard", "--bootstrap", "0",
                       "--device", "cpu", "--weights", f"released:{name}", *sum((["--checkpoint", p] for p in given),
                                                                                 []), "--out", out)
    assert code == 0, err
    return {r["case"]["name"]: r["metrics"] for r in records(out)}, records(out)


def test_every_release_layout_loads_to_the_same_model(capsys, tmp_path, monkeypatch):
    from diffzoo.plugin import Release

    state = _authors_state()
    common = {"source": "https://example.org/release", "trained_on": "a test set", "protocol": "test",
              "licence": "MIT"}
    _layout_detector(monkeypatch, [
        Release("bare", ("bare.pt",), unwrap=(), **common),  # MVSS-Net's: a bare state dict
        Release("wrapped", ("full.pth.tar",), unwrap=("state_dict",), **common),  # CAT-Net's, TruFor's wrapper
        Release("prefixed", ("fe.pth.tar",), unwrap=("state_dict",), prefixes=("FENet.",), **common),
        Release("parts", ("fe.pth", "seg.pth"), unwrap=(), prefixes=("FENet.", "SegNet."), **common),
    ])
    torch.save(state, tmp_path / "bare.pt")
    # CAT-Net's and TruFor's: {"state_dict": ..., "epoch": ...}, the keys one level below the detector's
    fe = {k[len("FENet."):]: v for k, v in state.items() if k.startswith("FENet.")}
    # PSCC-Net's: one file per part, every key under nn.DataParallel's `module.`
    torch.save({f"module.{k}": v for k, v in fe.items()}, tmp_path / "fe.pth")
    seg = {f"module.{k[len('SegNet.'):]}": v for k, v in state.items() if k.startswith("SegNet.")}
    torch.save(seg, tmp_path / "seg.pth")

    bare, rows = _scores(capsys, tmp_path, "bare", [tmp_path / "bare.pt"])
    assert rows[0]["detector"]["release"]["name"] == "bare"
    parts, rows = _scores(capsys, tmp_path, "parts", [tmp_path / "fe.pth", tmp_path / "seg.pth"])
    assert [f["name"] for f in rows[0]["detector"]["release"]["files"]] == ["fe.pth", "seg.pth"]
    assert parts == bare  # the same tensors, whatever the layout
    # files under the release's own names are its parts whatever their order on the command line
    assert _scores(capsys, tmp_path, "parts", [tmp_path / "seg.pth", tmp_path / "fe.pth"])[0] == bare
    torch.save({"state_dict": state, "epoch": 12, "best_p_mIoU": 0.5}, tmp_path / "full.pth.tar")
    wrapped, _ = _scores(capsys, tmp_path, "wrapped", [tmp_path / "full.pth.tar"])
    assert wrapped == bare
    # a release whose file holds one part only: the other part's keys are named as missing
    state_dict_file = tmp_path / "fe.pth.tar"
    torch.save({"state_dict": fe, "epoch": 12}, state_dict_file)
    code, _, err = cli(capsys, "run", "--detector", "layouts.x", "--suite", "standard", "--device", "cpu",
                       "--weights", "released:prefixed", "--checkpoint", state_dict_file, "--out", tmp_path / "w")
    assert code == 2 and "does not fit the detector: 2 tensor(s) missing from the checkpoint: SegNet." in err
    assert "SegNet.bias" in err and "SegNet.weight" in err, err


def test_a_release_file_holding_one_key_twice_once_stripped_is_refused_naming_both(capsys, tmp_path, monkeypatch):
    from diffzoo.plugin import Release

    _layout_detector(monkeypatch, [Release("bare", ("bare.pt",), "https://example.org/release", "a test set", "test",
                                           "MIT", unwrap=())])
    state = _authors_state()
    torch.save({**state, "module.SegNet.bias": torch.zeros_like(state["SegNet.bias"])}, tmp_path / "bare.pt")
    code, out, err = cli(capsys, "run", "--detector", "layouts.x", "--suite", "standard", "--device", "cpu",
                         "--weights", "released:bare", "--checkpoint", tmp_path / "bare.pt", "--out", tmp_path / "o")
    one_line_exit_2(code, out, err, f"release bare: {tmp_path / 'bare.pt'} holds SegNet.bias and module.SegNet.bias, "
                    "one key once module. is taken off")


@pytest.mark.parametrize("numpy_1", [False, True])
def test_a_release_file_holding_numpy_scalars_loads(capsys, tmp_path, numpy_1):
    """A score or step the authors' script saved as a numpy scalar, under numpy 2's or numpy 1's names."""
    import numpy as np

    path = released(tmp_path / "dl", best_score=np.float64(0.93), step=np.int64(7), flag=np.bool_(True))
    if numpy_1:  # as numpy 1 pickles it: the one format whose pickle may be rewritten in place
        torch.save(torch.load(path, weights_only=False), path, _use_new_zipfile_serialization=False)
        path.write_bytes(path.read_bytes().replace(b"numpy._core.multiarray\n", b"numpy.core.multiarray\n"))
        assert b"numpy.core.multiarray\nscalar" in path.read_bytes()
    code, _, stderr = cli(capsys, *RUN, "--weights", f"released:{RELEASE}", "--checkpoint", path, "--no-train",
                          "--out", tmp_path / "out")
    assert code == 0, stderr
    assert records(tmp_path / "out")[0]["detector"]["release"]["name"] == RELEASE


@pytest.mark.parametrize("saved_on", ["posix", "windows"])
def test_a_release_file_whose_saved_args_hold_paths_loads(capsys, tmp_path, saved_on):
    """An authors' script that kept its arguments' paths as pathlib objects, saved on Linux or on Windows
    (a WindowsPath, which cannot be built here, is read as the PureWindowsPath it is)."""
    import argparse
    from pathlib import PurePosixPath, PureWindowsPath

    args = argparse.Namespace(data=Path("/data/casia"), out=PurePosixPath("/runs"), log=PureWindowsPath("C:/runs"))
    path = released(tmp_path / "dl", args=args)
    if saved_on == "windows":  # as Windows pickles a Path: the legacy format, whose pickle may be rewritten in place
        torch.save(torch.load(path, weights_only=False), path, _use_new_zipfile_serialization=False)
        path.write_bytes(path.read_bytes().replace(b"pathlib\nPureWindowsPath\n", b"pathlib\nWindowsPath\n"))
        assert b"pathlib\nWindowsPath\n" in path.read_bytes()
    code, _, stderr = cli(capsys, *RUN, "--weights", f"released:{RELEASE}", "--checkpoint", path, "--no-train",
                          "--out", tmp_path / "out")
    assert code == 0, stderr
    assert records(tmp_path / "out")[0]["detector"]["release"]["name"] == RELEASE


def test_a_release_file_with_tied_tensors_loads_as_its_values(capsys, tmp_path, monkeypatch):
    from diffzoo.plugin import Release

    _layout_detector(monkeypatch, [Release(name, (f"{name}.pt",), "https://example.org", "x", "test", "MIT",
                                           unwrap=()) for name in ("tied", "apart")])
    state = _authors_state()
    tied = {**state, "FENet.1.bias": state["FENet.1.weight"]}  # one tensor under two keys, as torch.save keeps it
    torch.save(tied, tmp_path / "tied.pt")
    torch.save({k: v.clone() for k, v in tied.items()}, tmp_path / "apart.pt")
    scores, _ = _scores(capsys, tmp_path, "tied", [tmp_path / "tied.pt"])
    assert scores == _scores(capsys, tmp_path, "apart", [tmp_path / "apart.pt"])[0]


def test_a_release_file_holding_safetensors_under_its_released_name_loads(capsys, tmp_path, monkeypatch):
    from safetensors.torch import save_file

    from diffzoo.plugin import Release

    _layout_detector(monkeypatch, [Release(name, (f"{name}.pth",), "https://example.org", "x", "test", "MIT",
                                           unwrap=()) for name in ("pickled", "converted")])
    torch.save(_authors_state(), tmp_path / "pickled.pth")
    save_file(_authors_state(), str(tmp_path / "converted.pth"))  # the same tensors, saved as safetensors
    scores, _ = _scores(capsys, tmp_path, "converted", [tmp_path / "converted.pth"])
    assert scores == _scores(capsys, tmp_path, "pickled", [tmp_path / "pickled.pth"])[0]


def test_a_multi_file_release_given_the_wrong_number_of_files_says_how_many(capsys, tmp_path, monkeypatch):
    from diffzoo.plugin import Release

    _layout_detector(monkeypatch, [Release("parts", ("fe.pth", "seg.pth"), "https://example.org", "x", "test",
                                           "MIT", unwrap=(), prefixes=("FENet.", "SegNet."))])
    torch.save({}, tmp_path / "fe.pth")
    code, _, err = cli(capsys, "run", "--detector", "layouts.x", "--suite", "standard", "--device", "cpu",
                       "--weights", "released:parts", "--checkpoint", tmp_path / "fe.pth", "--out", tmp_path / "o")
    assert code == 2 and "2 file(s) (fe.pth, seg.pth)" in err, err


def test_a_release_scored_on_a_dataset_it_was_trained_on_is_refused_or_marked(capsys, tmp_path, monkeypatch):
    from diffzoo.plugin import Release

    _layout_detector(monkeypatch, [Release("bare", ("bare.pt",), "https://example.org", "mini's own images", "test",
                                           "MIT", unwrap=(), train_datasets=("mini",))])
    torch.save(_authors_state(), tmp_path / "bare.pt")
    run = ["run", "--detector", "layouts.x", "--suite", "standard", "--bootstrap", "0", "--device", "cpu",
           "--weights", "released:bare", "--checkpoint", tmp_path / "bare.pt"]
    code, _, err = cli(capsys, *run, "--out", tmp_path / "refused")
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2 and len(lines) == 1, err
    assert "overlaps the training data of layouts.x [released:bare]" in lines[0] and "--allow-train-overlap" in lines[0]
    code, out, err = cli(capsys, *run, "--allow-train-overlap", "--out", tmp_path / "marked")
    assert code == 0, err
    rows = records(tmp_path / "marked")
    assert rows and all(r["config"]["train_overlap"]["held_out"] is False for r in rows)
    assert "(not held out)" in out


def test_reference_detectors_of_a_suite_never_take_the_release():
    from diffzoo.harness.run.references import reference_requests
    from diffzoo.harness.run.request import RunRequest
    from diffzoo.harness.suites import Suite

    request = RunRequest.of(detector="dinov3iml.tiny", suite="classification", weights=f"released:{RELEASE}",
                            checkpoint=["cat_vitl_lora_r32.pth"])
    suites = [e.load() for e in get_registry().expand("suite", "classification")]
    assert all(isinstance(s, Suite) for s in suites) and any(s.references for s in suites)
    refs = reference_requests(request, suites)
    assert refs and all(r.weights is None and r.checkpoint == [] for r in refs)


TRAINING_UNREAD = ("--iterations, --batch-size are read only by a training, and none is run here: released weights "
                   f"{RELEASE} are scored as they are; drop them")


def test_training_options_with_released_weights_are_refused_not_ignored(capsys, tmp_path):
    """--iterations and --batch-size (--save-every, ...) were taken and never read: nothing is trained."""
    import diffzoo
    from diffzoo.harness.core.errors import ConfigError

    path = released(tmp_path / "dl")
    run = [*RUN, "--weights", f"released:{RELEASE}", "--checkpoint", path, "--plan"]
    one_line_exit_2(*cli(capsys, *run, "--iterations", "7", "--batch-size", "3"), TRAINING_UNREAD)
    config = tmp_path / "run.yaml"
    config.write_text("iterations: 7\nbatch_size: 3\n")
    one_line_exit_2(*cli(capsys, *run, "--config", config), TRAINING_UNREAD)
    one_line_exit_2(*cli(capsys, *run, "--save-every", "2"), "--save-every is read only by a training", "drop it")
    with pytest.raises(ConfigError) as error:
        diffzoo.evaluate("dinov3iml.tiny", "standard", weights=f"released:{RELEASE}", checkpoint=[path], iterations=7,
                         batch_size=3, device="cpu", plan_only=True)
    assert str(error.value) == TRAINING_UNREAD
    # the reference detectors a suite runs beside the release train with them: read, so taken
    classification = [a if a != "standard" else "classification" for a in run]  # --suite classification
    code, _, err = cli(capsys, *classification, "--iterations", "7")
    assert code == 0, err
    one_line_exit_2(*cli(capsys, *classification, "--no-references", "--iterations", "7"),
                    "--iterations is read only by a training")


def test_a_release_builds_no_pretrained_backbone_and_refuses_pretrained(capsys, tmp_path, monkeypatch,
                                                                         offline_empty_hub, diffseg_folder):
    """A release holds every tensor: its detector is built without the card's pretrained backbone
    (never fetched, offline too), so --pretrained asks for what is never done."""
    import dataclasses

    import diffzoo
    from diffzoo.harness.core.cards import RecipeValue

    entry = get_registry().get("detector", "dinov3iml.tiny")  # as a full card: its recipe starts from hub weights
    monkeypatch.setattr(entry, "card", dataclasses.replace(
        entry.card, weights="facebook/dinov3-vits16-pretrain",
        recipe={**entry.card.recipe, "pretrained": RecipeValue(True, "a full card's")}))
    path = released(tmp_path / "dl")
    result = diffzoo.evaluate("dinov3iml.tiny", "standard", str(diffseg_folder), weights=f"released:{RELEASE}",
                              checkpoint=[path], device="cpu", bootstrap=0)
    assert result.records and all(r.body.detector.pretrained is False for r in result.records)
    assert offline_empty_hub == []
    run = [*RUN, "--weights", f"released:{RELEASE}", "--checkpoint", path, "--plan"]
    one_line_exit_2(*cli(capsys, *run, "--pretrained"), f"--pretrained is read only by a training, and none is run "
                    f"here: released weights {RELEASE} are scored as they are; drop it")
    code, _, err = cli(capsys, *run, "--no-pretrained")  # what a release does anyway
    assert code == 0, err


def test_an_explicit_train_with_released_weights_is_refused_as_the_default_is_not(capsys, tmp_path):
    """--train spelt out (command line, --config, evaluate()) asks for a training none runs; left out, it
    is no option given, so the run stands."""
    import diffzoo
    from diffzoo.harness.core.errors import ConfigError

    path = released(tmp_path / "dl")
    run = [*RUN, "--weights", f"released:{RELEASE}", "--checkpoint", path, "--plan"]
    refused = (f"--train is read only by a training, and none is run here: released weights {RELEASE} are scored as "
               "they are; drop it")
    one_line_exit_2(*cli(capsys, *run, "--train"), refused)
    config = tmp_path / "run.yaml"
    config.write_text("train: true\n")
    one_line_exit_2(*cli(capsys, *run, "--config", config), refused)
    with pytest.raises(ConfigError) as error:
        diffzoo.evaluate("dinov3iml.tiny", "standard", weights=f"released:{RELEASE}", checkpoint=[path], train=True,
                         device="cpu", plan_only=True)
    assert str(error.value) == refused
    code, _, err = cli(capsys, *run)
    assert code == 0, err


def test_train_refuses_the_release_given_as_checkpoint_as_it_refuses_it_named(capsys, tmp_path):
    """The release diffzoo converted (or its own file) given to train() is the release: it was returned
    untrained with source "released", as if trained."""
    import diffzoo
    from diffzoo.harness.core.errors import ConfigError

    path = released(tmp_path / "dl")
    code, _, err = cli(capsys, *RUN, "--weights", f"released:{RELEASE}", "--checkpoint", path, "--out", tmp_path / "o")
    assert code == 0, err
    [folder] = (Path(os.environ["DIFFZOO_CACHE"]) / "checkpoints" / "dinov3iml.tiny").glob(f"released-{RELEASE}-*")
    for given in (folder, path):
        with pytest.raises(ConfigError) as error:
            diffzoo.train(detector="dinov3iml.tiny", checkpoint=[given], device="cpu")
        assert str(error.value) == (f"train() trains a model, and checkpoint=['{given}'] names released weights, which "
                                    "are never trained: score them with evaluate() (diffzoo run --weights)")


def test_a_release_folder_put_by_hand_is_the_release_for_train_and_run(capsys, tmp_path):
    """The release cache folder a user filled by hand, given as --checkpoint: it was "a trained one: score it with
    diffzoo run --checkpoint" to train(), and that run then failed, "has no model.safetensors"."""
    import diffzoo
    from diffzoo.harness.core.errors import ConfigError

    folder = released(Path(os.environ["DIFFZOO_CACHE"]) / "weights" / "released" / "dinov3iml.tiny" / RELEASE).parent
    with pytest.raises(ConfigError) as error:
        diffzoo.train(detector="dinov3iml.tiny", checkpoint=[folder], device="cpu")
    assert str(error.value) == (f"train() trains a model, and checkpoint=['{folder}'] names released weights, which "
                                "are never trained: score them with evaluate() (diffzoo run --weights)")
    code, _, err = cli(capsys, *RUN, "--checkpoint", folder, "--no-train", "--out", tmp_path / "o")
    assert code == 0, err
    assert all(r["detector"]["release"]["name"] == RELEASE for r in records(tmp_path / "o"))


def test_a_checkpoint_whose_card_claims_a_release_is_refused_unless_it_is_that_releases_conversion(capsys, tmp_path):
    """A card.json edited to name a release never makes a model trained here score as the authors' release."""
    from diffzoo.harness.run.factories import create_detector

    mine = tmp_path / "mine"
    create_detector("dinov3iml.tiny", "binary", pretrained=False).save(mine, extra={})
    card = json.loads((mine / "card.json").read_text())
    (mine / "card.json").write_text(json.dumps({**card, "release": {"name": RELEASE, "source": "by hand"}}))
    refused = (f"error: checkpoint {mine}: its card.json names release {RELEASE} of dinov3iml.tiny, but its weights "
               f"are not that release as diffzoo converted it here; give the release's own file ({FILE}) as "
               "--checkpoint")
    for weights in ([], ["--weights", f"released:{RELEASE}"]):
        assert one_line_exit_2(*cli(capsys, *RUN, *weights, "--checkpoint", mine, "--no-train", "--out",
                                    tmp_path / "o")) == refused
    assert not (tmp_path / "o" / "records").exists()
    code, _, err = cli(capsys, *RUN, "--weights", f"released:{RELEASE}", "--checkpoint", released(tmp_path / "dl"),
                       "--out", tmp_path / "a")
    assert code == 0, err
    [folder] = (Path(os.environ["DIFFZOO_CACHE"]) / "checkpoints" / "dinov3iml.tiny").glob(f"released-{RELEASE}-*")
    copy = tmp_path / "copy"  # the release as converted here, wherever it is kept
    copy.mkdir()
    for name in ("card.json", "model.safetensors"):
        (copy / name).write_bytes((folder / name).read_bytes())
    code, _, err = cli(capsys, *RUN, "--checkpoint", copy, "--no-train", "--out", tmp_path / "b")
    assert code == 0, err
    assert all(r["detector"]["release"]["name"] == RELEASE for r in records(tmp_path / "b"))


def test_a_release_state_dict_holding_a_non_tensor_names_it(capsys, tmp_path):
    """torch's strict load_state_dict takes tensors only: never "holds no tensors under model" of one that holds them."""
    path = tmp_path / FILE
    torch.save({"model": {**reference_model().state_dict(), "version": 1}, "epoch": 3}, path)
    code, out, err = cli(capsys, *RUN, "--weights", f"released:{RELEASE}", "--checkpoint", path, "--out",
                         tmp_path / "out")
    assert one_line_exit_2(code, out, err) == (f"error: release {RELEASE}: {path} holds a non-tensor value under "
                                               "model beside its tensors: version (int)")


def test_another_release_file_is_refused_under_any_name_once_the_first_is_recorded(capsys, tmp_path):
    """The first-use sha256 pins the release's file, not the name it was given under (a download renamed)."""
    run = [*RUN, "--weights", f"released:{RELEASE}", "--checkpoint"]
    code, _, err = cli(capsys, *run, released(tmp_path / "a"), "--out", tmp_path / "o")
    assert code == 0, err
    other = released(tmp_path / "b", reference_model(seed=1).state_dict())
    renamed = tmp_path / "c" / "cat_vitl_lora_r32 (1).pth"
    renamed.parent.mkdir()
    renamed.write_bytes(other.read_bytes())
    for given in (other, renamed):
        code, out, err = cli(capsys, *run, given, "--out", tmp_path / "o2")
        assert code != 0 and f"weights file {given} has sha256" in err and "at its first use" in err, err
