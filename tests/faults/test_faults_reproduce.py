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
