"""``diffzoo reproduce`` when the numbers do not come back: loud, per metric, non-zero exit."""

from __future__ import annotations

import json

import pytest

from helpers.cli import cli

pytestmark = pytest.mark.isolated_cache


def test_a_row_whose_numbers_moved_is_named_metric_by_metric(capsys, diffseg_folder, tmp_path, faulty):
    out = tmp_path / "out"
    code, _, stderr = cli(capsys, "run", "--detector", "faulty.x", "--suite", "standard", "--dataset", diffseg_folder,
                          "--out", out, "--bootstrap", "0", "--device", "cpu")
    assert code == 0, stderr
    binary = next(json.loads(p.read_text()) for p in (out / "records").glob("*.json")
                  if json.loads(p.read_text())["case"]["name"] == "binary")
    faulty(bias=1.5)  # same weights, other predictions: what another machine's kernels could do
    code, stdout, _ = cli(capsys, "reproduce", binary["record_id"], "--store", out)
    text = " ".join(stdout.split())
    assert code == 1 and "not identical:" in text and "mIoU" in text.split("not identical:")[1]
    code, stdout, _ = cli(capsys, "reproduce", binary["record_id"], "--store", out, "--tolerance", "1")
    assert code == 0 and "every metric within 1" in " ".join(stdout.split())


def test_a_row_whose_numbers_moved_run_again_into_its_own_store_is_compared_and_the_store_kept(
        capsys, diffseg_folder, tmp_path, faulty):
    """``--out`` the record's own store: the stored row is kept and the comparison still shown (it ended in
    the run's "Re-run with --rerun", an option reproduce does not take, and no comparison)."""
    out = tmp_path / "out"
    code, _, stderr = cli(capsys, "run", "--detector", "faulty.x", "--suite", "standard", "--dataset", diffseg_folder,
                          "--out", out, "--bootstrap", "0", "--device", "cpu")
    assert code == 0, stderr
    before = {p.name: p.read_text() for p in (out / "records").glob("*.json")}
    binary = next(json.loads(text) for text in before.values() if json.loads(text)["case"]["name"] == "binary")
    faulty(bias=1.5)
    code, stdout, stderr = cli(capsys, "reproduce", binary["record_id"], "--store", out, "--out", out)
    text = " ".join(stdout.split())
    assert code == 1 and "not identical:" in text and "--rerun" not in stdout + stderr, stdout + stderr
    assert f"not stored: {out} already holds 1 of this run's rows with other numbers (first: record " \
           f"{binary['record_id']}); they were kept" in text
    assert {p.name: p.read_text() for p in (out / "records").glob("*.json")} == before


def test_a_sweep_job_whose_numbers_moved_is_replaced_with_rerun_as_its_error_says(capsys, diffseg_folder, tmp_path,
                                                                                  faulty):
    """The job's error says to re-run with --rerun, which a sweep takes as run does (without it the job
    would fail the same way on every sweep)."""
    out = tmp_path / "out"
    args = ["sweep", "--detectors", "faulty.x", "--suite", "standard", "--dataset", diffseg_folder, "--out", out,
            "--bootstrap", "0", "--device", "cpu"]
    code, _, stderr = cli(capsys, *args)
    assert code == 0, stderr
    before = {p.name: p.read_text() for p in (out / "records").glob("*.json")}
    faulty(bias=1.5)  # other numbers, and a job that runs again (its options changed: another key)
    code, stdout, _ = cli(capsys, *args, "--workers", "0")
    text = " ".join(stdout.split())
    assert code == 1 and "already recorded with different numbers" in text and "Re-run with --rerun" in text
    code, stdout, stderr = cli(capsys, *args, "--workers", "0", "--rerun")
    assert code == 0 and "job faulty.x trained on" in stdout and ": done: " in stdout, stdout + stderr
    after = {p.name: p.read_text() for p in (out / "records").glob("*.json")}
    assert set(after) == set(before) and after != before  # the same rows, their numbers replaced
    assert len(list((out / "replaced").glob("*.json"))) == len(before)  # the old ones kept
