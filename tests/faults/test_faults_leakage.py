"""Fault suite: evaluating on the training data is never called held out.

An evaluation split that is, or shares images with, the data the model was trained on (the
run's own split, a byte-identical copy of it in another folder, a copy sharing some of its
images, or the data a ``--checkpoint``'s card says it was trained on) is refused in one line,
exit 2, before any work and with no record; ``--allow-train-overlap`` scores it, the records
say ``held_out: false`` with the counts (``config.train_overlap``), and every table marks the
rows ``(not held out)`` and never ranks them with held-out rows.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from diffzoo import open_dataset
from diffzoo.harness.models.checkpoints import cached_checkpoints
from diffzoo.harness.records.document import ResultRecord
from diffzoo.leaderboard.layouts.cases import build_tables

from helpers.cli import cli
from helpers.data import make_diffseg_folder
from helpers.images import save_image

pytestmark = pytest.mark.isolated_cache  # test 6 reads the checkpoint its own first run cached

FAST = ["--detector", "segformer.tiny", "--suite", "cross-dataset", "--iterations", "3", "--batch-size", "2",
        "--bootstrap", "0", "--device", "cpu"]
FIX = "pick a held-out split or pass --allow-train-overlap to score it as not held out"


def refused(code, stdout, stderr, *needles):
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert code == 2, (code, stdout, stderr)
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert "Traceback" not in stderr and FIX in lines[0], lines[0]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def records_of(out: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((out / "records").glob("*.json"))]


def train_ids(folder: Path) -> list[str]:
    return open_dataset(str(folder)).ids("train")


def other_dataset(root: Path) -> Path:
    """A DiffSeg30k-layout folder whose every image is new (random pixels of another size)."""
    rng = np.random.default_rng(7)
    folder = root / "train_copy"
    for i in range(8):
        image = rng.integers(0, 256, (24, 24, 3), dtype=np.uint8)
        mask = np.zeros((24, 24), np.uint8)
        mask[4:12, 6:14] = 1 if i % 2 else 0
        save_image(folder / f"{i:08d}.image.png", image)
        save_image(folder / f"{i:08d}.mask.png", mask)
    (root / "labels.json").write_text(json.dumps({"names": ["background", "sd2"], "verified": True}))
    return root


def test_the_runs_own_training_split_is_refused_with_no_record(capsys, tmp_path):
    ds = make_diffseg_folder(tmp_path / "ds")
    n = len(train_ids(ds))
    out = tmp_path / "out"
    line = refused(*cli(capsys, "run", *FAST, "--dataset", ds, "--out", out, "--eval-dataset", f"{ds}:train"),
                   f"evaluation split {ds}:train overlaps the training data of segformer.tiny [binary]",
                   f"({n} of {n} images)")
    assert "cross-dataset" not in line
    assert not records_of(out)
    # --plan refuses it too, before any work
    refused(*cli(capsys, "run", *FAST, "--dataset", ds, "--plan", "--eval-dataset", f"{ds}:train"))


def test_a_byte_identical_copy_in_another_folder_is_refused(capsys, tmp_path):
    ds = make_diffseg_folder(tmp_path / "ds")
    copy = tmp_path / "elsewhere" / "copy"
    shutil.copytree(ds, copy)
    n = len(train_ids(ds))
    out = tmp_path / "out"
    refused(*cli(capsys, "run", *FAST, "--dataset", ds, "--out", out, "--eval-dataset", f"{copy}:train"),
            f"evaluation split {copy}:train overlaps", f"({n} of {n} images)")
    assert not records_of(out)


def test_a_copy_sharing_only_some_images_is_refused_naming_the_count(capsys, tmp_path):
    ds = make_diffseg_folder(tmp_path / "ds")
    copy = tmp_path / "partial"
    shutil.copytree(ds, copy)
    ids = train_ids(copy)
    rng = np.random.default_rng(3)
    for sid in ids[:4]:  # four images replaced by new content: the copy's fingerprint differs
        save_image(copy / "train_copy" / f"{sid}.image.png", rng.integers(0, 256, (32, 32, 3), dtype=np.uint8))
    assert open_dataset(str(copy)).fingerprint() != open_dataset(str(ds)).fingerprint()
    out = tmp_path / "out"
    refused(*cli(capsys, "run", *FAST, "--dataset", ds, "--out", out, "--eval-dataset", f"{copy}:train"),
            f"evaluation split {copy}:train overlaps", f"({len(ids) - 4} of {len(ids)} images)")
    assert not records_of(out)


def test_allowed_overlap_is_recorded_and_marked_in_every_table(capsys, tmp_path):
    ds = make_diffseg_folder(tmp_path / "ds")
    n = len(train_ids(ds))
    out = tmp_path / "out"
    code, stdout, stderr = cli(capsys, "run", *FAST, "--dataset", ds, "--out", out, "--eval-dataset",
                               f"{ds}:train", "--allow-train-overlap")
    assert code == 0, stderr
    records = records_of(out)
    assert len(records) == 3
    for r in records:
        assert r["case"]["split"] == "train"
        overlap = r["config"]["train_overlap"]
        assert overlap["held_out"] is False and overlap["shared_images"] == overlap["images"] == n
        assert overlap["training"]["split"] == "train"
        assert overlap["training"]["fingerprint"] == r["dataset"]["fingerprint"]  # the training data itself
    text = " ".join(stdout.split())
    assert "not held out (--allow-train-overlap)" in text and f"{n} of {n} images are training images" in text
    assert "segformer.tiny (not held out)" in text  # the console's case tables and summary
    summary = (out / "summary.md").read_text()
    cross = summary[summary.index("### Cross-dataset"):]
    assert "evaluated on other datasets" not in cross
    assert "| segformer.tiny (not held out) |" in cross
    assert not any(line.startswith("| segformer.tiny |") for line in summary.splitlines())
    code, stdout, _ = cli(capsys, "leaderboard", "verify", "--store", out)
    assert code == 0 and "3 good, 0 bad" in stdout
    code, _, stderr = cli(capsys, "leaderboard", "publish", "--store", out, "-f", "md,csv", "--out", tmp_path / "lb")
    assert code == 0, stderr
    assert "segformer.tiny (not held out)" in (tmp_path / "lb" / "leaderboard.md").read_text()
    # the mark cannot be dropped unseen: it is part of the record's identity and digests
    path = next((out / "records").glob("*.json"))
    data = json.loads(path.read_text())
    del data["config"]["train_overlap"]
    path.write_text(json.dumps(data))
    code, stdout, stderr = cli(capsys, "leaderboard", "verify", "--store", out)
    assert code != 0 and "field config.train_overlap was removed" in stdout + stderr


def test_not_held_out_rows_are_never_ranked_with_held_out_ones(capsys, tmp_path):
    ds = make_diffseg_folder(tmp_path / "ds")
    other = other_dataset(tmp_path / "other")
    held, leaked = tmp_path / "held", tmp_path / "leaked"
    code, _, stderr = cli(capsys, "run", *FAST, "--dataset", ds, "--out", held, "--eval-dataset", f"{other}:train")
    assert code == 0, stderr
    code, _, stderr = cli(capsys, "run", *FAST, "--dataset", other, "--out", leaked, "--eval-dataset",
                          f"{other}:train", "--allow-train-overlap")
    assert code == 0, stderr
    records = [ResultRecord(r) for r in records_of(held) + records_of(leaked)]
    table = next(t for t in build_tables(records) if t.key is not None and t.key.case == "binary (train)")
    rows = {r.label: r for r in table.rows if not r.baseline}
    assert set(rows) == {"segformer.tiny", "segformer.tiny (not held out)"}
    assert rows["segformer.tiny"].rank == 1 and rows["segformer.tiny (not held out)"].rank is None
    assert not any(table.is_best(rows["segformer.tiny (not held out)"], c.key) for c in table.columns)
    assert [r.label for r in table.rows if not r.baseline][-1] == "segformer.tiny (not held out)"
    assert any("not held out" in remark for remark in table.remarks)


def test_a_truly_different_dataset_is_held_out_as_before(capsys, tmp_path):
    ds = make_diffseg_folder(tmp_path / "ds")
    other = other_dataset(tmp_path / "other")
    out = tmp_path / "out"
    code, stdout, stderr = cli(capsys, "run", *FAST, "--dataset", ds, "--out", out, "--eval-dataset", f"{other}:train")
    assert code == 0, stderr
    records = records_of(out)
    assert len(records) == 3 and not any("train_overlap" in r["config"] for r in records)
    assert "not held out" not in stdout
    summary = (out / "summary.md").read_text()
    assert "evaluated on other datasets" in summary and "not held out" not in summary
    # a held-out split of the training data itself (val) is held out too
    code, _, stderr = cli(capsys, "run", *FAST, "--dataset", ds, "--out", tmp_path / "val", "--eval-dataset",
                          f"{ds}:val")
    assert code == 0, stderr
    assert not any("train_overlap" in r["config"] for r in records_of(tmp_path / "val"))


def test_a_checkpoint_whose_card_names_its_training_data_is_refused_on_it(capsys, tmp_path):
    ds = make_diffseg_folder(tmp_path / "ds")
    other = other_dataset(tmp_path / "other")
    code, _, stderr = cli(capsys, "run", *FAST, "--dataset", ds, "--out", tmp_path / "first", "--eval-dataset",
                          f"{other}:train")
    assert code == 0, stderr
    (checkpoint,) = cached_checkpoints("segformer.tiny")
    card = json.loads((checkpoint / "card.json").read_text())
    assert card["dataset_fingerprint"] == open_dataset(str(ds)).fingerprint()
    n = len(train_ids(ds))
    # the run's own data is another dataset: only the card says the model saw ds/train
    out = tmp_path / "out"
    refused(*cli(capsys, "run", *FAST, "--dataset", other, "--checkpoint", checkpoint, "--no-train", "--out", out,
                 "--eval-dataset", f"{ds}:train"),
            f"evaluation split {ds}:train overlaps the training data of checkpoint {checkpoint}",
            f"({n} of {n} images)")
    assert not records_of(out)
    code, _, stderr = cli(capsys, "run", *FAST, "--dataset", other, "--checkpoint", checkpoint, "--no-train",
                          "--out", tmp_path / "val", "--eval-dataset", f"{ds}:val")
    assert code == 0, stderr


def test_extra_authentic_copies_of_evaluated_images_are_refused_or_marked(capsys, tmp_path):
    """--extra-authentic DIR holding the val split's own images trained on them, and the run scored val as held
    out: ids alone were compared within the training data, and extra images have ids of their own."""
    ds = make_diffseg_folder(tmp_path / "ds")
    val = open_dataset(str(ds)).ids("val")
    coco = tmp_path / "coco"
    coco.mkdir()
    for sid in val:  # byte-identical copies, under other names
        shutil.copy(ds / "train_copy" / f"{sid}.image.png", coco / f"copy-{sid}.png")
    args = ["run", *FAST[:2], "--suite", "standard", *FAST[4:], "--dataset", ds, "--extra-authentic", coco]
    refused(*cli(capsys, *args, "--plan"),
            f"evaluation split {ds}:val overlaps the training data of segformer.tiny [binary]",
            f"({len(val)} of {len(val)} images)")
    code, stdout, stderr = cli(capsys, *args, "--out", tmp_path / "out", "--allow-train-overlap")
    assert code == 0, stderr
    assert f"{len(val)} of {len(val)} images are training images" in " ".join(stdout.split())
    overlaps = [r["config"]["train_overlap"] for r in records_of(tmp_path / "out")]
    assert overlaps and all(o["shared_images"] == o["images"] == len(val) for o in overlaps)
    # extra images that are no evaluated image leave val held out
    for sid in val:
        save_image(coco / f"copy-{sid}.png", np.full((32, 32, 3), 7, np.uint8))
    code, stdout, stderr = cli(capsys, *args, "--plan")
    assert code == 0, stderr
