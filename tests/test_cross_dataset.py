"""The cross-dataset suite: the model trained on --dataset, scored on each --eval-dataset
(docs/suites.md): one record per (evaluation dataset, case), the training data in each
record's identity, the cross-dataset table in the summary, records that verify."""

from __future__ import annotations

import json

import numpy as np
import pytest

from diffzoo import open_dataset
from diffzoo.harness.records.document import identity

from helpers.cli import cli
from helpers.data import make_diffseg_folder
from helpers.images import save_image

FAST = ["--iterations", "3", "--batch-size", "2", "--bootstrap", "0", "--device", "cpu"]


def make_tpgt(root):
    """A Tp/Gt folder (binary 0/255 masks) with authentic images: the classic IML layout."""
    rng = np.random.default_rng(1)
    for i in range(6):
        image = rng.integers(0, 256, (24, 24, 3), dtype=np.uint8)
        mask = np.zeros((24, 24), np.uint8)
        mask[4:12, 6:14] = 255
        save_image(root / "Tp" / f"t{i}.png", image)
        save_image(root / "Gt" / f"t{i}.png", mask)
        save_image(root / "Au" / f"a{i}.png", rng.integers(0, 256, (24, 24, 3), dtype=np.uint8))
    return root


def records_of(out):
    return [json.loads(p.read_text()) for p in sorted((out / "records").glob("*.json"))]


def test_a_model_trained_on_mini_is_scored_on_two_other_datasets(capsys, tmp_path):
    folder = make_diffseg_folder(tmp_path / "ds")
    tpgt = make_tpgt(tmp_path / "tpgt")
    tpgt_split = open_dataset(str(tpgt)).splits()[0]
    out = tmp_path / "out"
    code, stdout, stderr = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "cross-dataset", "--out",
                               out, "--eval-dataset", folder, "--eval-dataset", f"{tpgt}:{tpgt_split}", *FAST)
    assert code == 0, stderr
    records = records_of(out)
    mini = open_dataset("mini").fingerprint()
    evaluated = {(r["dataset"]["fingerprint"], r["case"]["name"], r["case"]["split"]) for r in records}
    cases = ("binary", "image", "binary.editor")
    assert evaluated == {(open_dataset(str(folder)).fingerprint(), name, "val") for name in cases} | {
        (open_dataset(str(tpgt)).fingerprint(), name, tpgt_split) for name in cases}
    for r in records:
        trained = identity(r)["config"]["train_dataset"]
        assert trained["fingerprint"] == mini and trained["name"] == "mini" and trained["split"]["id"]
        assert r["config"]["train_subset"]["split"] == "train"
    # one model: every record names the same checkpoint
    assert len({r["detector"]["checkpoint_sha256"] for r in records}) == 1
    # the summary's cross-dataset table holds the records' numbers
    summary = (out / "summary.md").read_text()
    table = summary[summary.index("### Cross-dataset"):]
    row = next(line for line in table.splitlines() if line.startswith("| segformer.tiny"))
    binary = next(r for r in records if r["case"]["name"] == "binary" and r["case"]["split"] == tpgt_split)
    assert f"{100 * binary['metrics']['F1']:.1f}" in row and f"{tpgt.name}/{tpgt_split} F1" in table
    # per generator where the evaluation dataset's metadata names them (the DiffSeg30k folder's sd2, sdxl)
    sliced = next(r for r in records if r["case"]["name"] == "binary.editor" and r["case"]["split"] == "val")
    assert f"{100 * sliced['metrics']['F1@editor=sd2']:.1f}" in row and "ds/val sd2 F1" in table
    code, stdout, _ = cli(capsys, "leaderboard", "verify", "--store", out)
    assert code == 0 and "6 good, 0 bad" in stdout
    # the published leaderboard opens with the same table
    code, _, stderr = cli(capsys, "leaderboard", "publish", "--store", out, "-f", "md,html", "--out", tmp_path / "lb")
    assert code == 0, stderr
    published = (tmp_path / "lb" / "leaderboard.md").read_text()
    assert "## Cross-dataset: trained on mini" in published and row in published
    assert f"{tpgt.name}/{tpgt_split} F1" in (tmp_path / "lb" / "index.html").read_text()


def test_without_an_eval_dataset_the_suite_says_what_it_needs(capsys, tmp_path):
    code, _, stderr = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "cross-dataset", "--out",
                          tmp_path / "out", *FAST)
    assert code != 0 and "no --eval-dataset given" in stderr and len(stderr.strip().splitlines()) == 1
    code, stdout, stderr = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "all", "--plan", *FAST)
    assert code == 0, stderr  # with other suites, the cross-dataset cases are listed as skipped, saying why
    text = " ".join(stdout.split())
    assert all(f"skipped cross-dataset/{case}: no --eval-dataset given" in text
               for case in ("binary", "image", "binary.editor"))
    code, _, stderr = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "standard,cross-dataset",
                          "--out", tmp_path / "run", *FAST)
    assert code == 0, stderr  # the run log says each skipped case once, with the plan
    run_log = next((tmp_path / "run" / "logs").glob("*-run.log")).read_text()
    assert run_log.count("cross-dataset/binary: no --eval-dataset given") == 1, run_log


@pytest.mark.parametrize("spec, message", [
    ("{folder}:nosuch", "has no split nosuch (it has "),
    ("{folder}", "the same dataset and split is given twice"),
])
def test_eval_dataset_errors_are_one_line(capsys, tmp_path, spec, message):
    folder = make_diffseg_folder(tmp_path / "ds")
    extra = ["--eval-dataset", str(folder)] if "twice" in message else []
    code, _, stderr = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "cross-dataset", "--out",
                          tmp_path / "out", "--eval-dataset", spec.format(folder=folder), *extra, *FAST)
    assert code != 0 and message in stderr and len(stderr.strip().splitlines()) == 1


def test_an_eval_split_named_by_an_alias_is_the_canonical_split(capsys, tmp_path):
    """DATA:validation said "has no split validation (it has train, val)", though ids("validation") reads val."""
    folder = make_diffseg_folder(tmp_path / "ds")
    code, stdout, stderr = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "cross-dataset", "--plan",
                               "--eval-dataset", f"{folder}:Validation", *FAST)
    assert code == 0, stderr
    data = open_dataset(str(folder))
    assert f"1 model pass(es), {len(data.ids('val'))} image reads of {data.name}:val" in stdout  # the eval dataset


def test_an_eval_dataset_without_a_cross_dataset_case_is_refused(capsys, tmp_path):
    folder = make_diffseg_folder(tmp_path / "ds")
    code, _, stderr = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "standard", "--out",
                          tmp_path / "out", "--eval-dataset", folder, *FAST)
    assert code == 2 and "--suite cross-dataset" in stderr


def test_the_opensdi_preset_reads_every_generator_split_of_the_eval_dataset(capsys, tmp_path):
    """``--suite opensdi``: each --eval-dataset is read at OpenSDI's five generator splits (those
    it has), one record per (split, case) and one summary column per generator."""
    folder = make_diffseg_folder(tmp_path / "ds", n=15)
    ids = sorted(p.name.split(".")[0] for p in (folder / "train_copy").glob("*.image.png"))
    (folder / "splits.json").write_text(json.dumps({"sd15": ids[:5], "sd2": ids[5:10], "flux": ids[10:]}))
    out = tmp_path / "out"
    code, stdout, stderr = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "opensdi", "--out", out,
                               "--eval-dataset", folder, *FAST)
    assert code == 0, stderr
    records = records_of(out)
    assert sorted((r["case"]["split"], r["case"]["name"]) for r in records) == [
        (split, case) for split in ("flux", "sd15", "sd2") for case in ("binary", "image")]
    table = (out / "summary.md").read_text().split("### Cross-dataset")[1]
    assert all(f"ds/{g} F1" in table for g in ("sd15", "sd2", "flux")) and "ds/sd3" not in table
    code, _, stderr = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "opensdi", "--out",
                          tmp_path / "out2", "--eval-dataset", make_diffseg_folder(tmp_path / "plain"), *FAST)
    assert code == 2 and "has no split sd15 or sd2 or sd3 or flux or sdxl" in stderr


def test_eval_dataset_mistakes_name_the_flag_and_the_fix(capsys, tmp_path):
    code, _, stderr = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "cross-dataset", "--out",
                          tmp_path / "out", "--eval-dataset", "mini", "--eval-dataset-option", "bogus=1", *FAST)
    assert code == 2 and "--eval-dataset mini: " in stderr and "does not take --eval-dataset-option bogus" in stderr
    code, _, stderr = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "cross-dataset", "--out",
                          tmp_path / "out2", "--eval-dataset", "someone/SomeBench:test", *FAST)
    assert code != 0 and "hf download someone/SomeBench --repo-type dataset" in stderr
