"""A detector that gives pixels and its own image score (IMDL-BenCo's pred_label) gets two
image-level rows: the area rule every segmenter is judged by, unchanged by the score, and
``NAME (own image score)`` judged by the score (docs/metrics.md, image-level detection)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from diffzoo import open_dataset
from diffzoo.harness.core.types import BINARY
from diffzoo.harness.metrics import EvalState

from helpers.cli import cli

pytestmark = pytest.mark.isolated_cache


def own_score(images):
    return images[:, 0].mean((1, 2)).clamp(0, 1)  # the red channel's mean: a score of its own


def run(capsys, folder, out, suite="standard"):
    code, stdout, stderr = cli(capsys, "run", "--detector", "faulty.x", "--suite", suite, "--dataset", folder,
                               "--out", out, "--bootstrap", "0", "--no-train", "--device", "cpu", "--no-references")
    assert code == 0, stderr
    return {(r["case"]["name"], (r["case"].get("options") or {}).get("image_score")): r
            for r in (json.loads(p.read_text()) for p in (out / "records").glob("*.json"))}


def test_pixels_and_an_own_score_give_two_image_rows(capsys, tmp_path, diffseg_folder, faulty):
    faulty()  # pixels only
    alone = run(capsys, diffseg_folder, tmp_path / "alone")
    faulty(score=own_score)  # the same pixels and a score
    both = run(capsys, diffseg_folder, tmp_path / "both")
    assert set(alone) == {("binary", None), ("semantic", None), ("image", None)}
    assert set(both) == set(alone) | {("image", "detector")}
    area, scored = both[("image", None)], both[("image", "detector")]
    # the area row is what it was without a score
    assert area["metrics"] == alone[("image", None)]["metrics"]
    assert area["threshold_policy"]["image_score_source"] == "edited_area"
    assert scored["threshold_policy"]["image_score_source"] == "detector"
    assert "image probability > 0.5" in scored["threshold_policy"]["image"]
    # the scored row is the score's, image by image
    ds = open_dataset(str(diffseg_folder))
    state = EvalState(BINARY, "binary")
    for sid in ds.ids("val"):
        sample = ds.load(sid)
        image = torch.from_numpy(sample.image).permute(2, 0, 1)[None].float() / 255
        state.update(sample.meta, ds.label_space.to_binary_map(sample.label), None, None,
                     image_score=float(own_score(image)[0]))
    expected = state.compute()
    for name in ("img_Acc", "img_AP", "img_AUC", "img_real_Acc", "img_edited_Acc"):
        want = None if math.isnan(expected[name]) else expected[name]  # undefined: null in a record
        assert scored["metrics"][name] == (want if want is None else pytest.approx(want, abs=1e-9)), name
    assert scored["metrics"] != area["metrics"]
    # one table, two rows; the store verifies
    summary = (tmp_path / "both" / "summary.md").read_text()
    assert "faulty.x (own image score)" in summary and "own image probability" in summary
    code, stdout, _ = cli(capsys, "leaderboard", "verify", "--store", tmp_path / "both")
    assert code == 0 and f"{len(both)} good, 0 bad" in stdout


def test_every_image_case_gets_its_second_row(capsys, tmp_path, diffseg_folder, faulty):
    """Image cases restricted to some editors (classification suite) read their part of the
    scored state too."""
    faulty(score=own_score)
    records = run(capsys, diffseg_folder, tmp_path / "out", "classification")
    names = {name for name, _ in records}
    assert set(records) == {(n, kind) for n in names for kind in (None, "detector")} and len(names) > 1
    for name in names:
        assert records[(name, "detector")]["counts"] == records[(name, None)]["counts"]


def test_calibration_sets_the_area_rule_and_the_score_rule_each_from_its_state():
    from diffzoo.harness.core.types import SampleMeta, StateKey
    from diffzoo.harness.run.evaluate import EvalResult
    from diffzoo.harness.run.thresholds import calibrate

    from helpers.detectors import Scripted

    area, scored = EvalState(BINARY, "binary"), EvalState(BINARY, "binary")
    for i in range(8):
        edited = i % 2
        gt = np.zeros((8, 8), np.uint8)
        gt[:4, :4] = edited
        pred = np.zeros((8, 8), np.uint8)
        pred[: 1 + i % 3, :2] = 1  # areas that do not follow the label
        meta = SampleMeta(f"s{i}")
        area.update(meta, gt, pred, None)
        scored.update(meta, gt, pred, None, image_score=0.3 + 0.1 * edited + 0.01 * i)
    result = EvalResult({StateKey.BINARY: area, StateKey.OWN_SCORE: scored})
    thresholds = calibrate(Scripted(), "calib", lambda t: result)
    assert thresholds.score == scored.best_thresholds()["image"] != 0.5
    assert thresholds.area == pytest.approx(area.best_thresholds()["image"])
    assert thresholds.score < 0.5  # every score is below the fixed 0.5; the calibrated one separates them
