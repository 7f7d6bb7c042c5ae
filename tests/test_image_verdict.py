"""The image verdict (docs/metrics.md, image-level detection): one rule, used by evaluation
and by `diffzoo predict`, so that predict prints the verdict of each leaderboard image row."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from diffzoo import DetectionOutput, DetectorCard
from diffzoo.harness.core.types import BINARY, SampleMeta
from diffzoo.harness.metrics import EvalState
from diffzoo.harness.metrics.verdict import (
    DETECTOR,
    EDITED_AREA,
    ImageRule,
    edited,
    image_threshold,
    image_verdict,
    row_name,
    rule_text,
)
from diffzoo.harness.models.checkpoints import cache_dir
from diffzoo.harness.records.document import read_all
from diffzoo.harness.records.policy import ThresholdPolicy, Thresholds

from helpers.cli import cli
from helpers.data import make_diffseg_folder
from helpers.detectors import Scripted, register_test_detector


# -- the rule --------------------------------------------------------------------------------
@pytest.mark.parametrize("score, source, verdict", [
    (0.01, EDITED_AREA, "authentic"), (0.0101, EDITED_AREA, "edited"), (0.4, EDITED_AREA, "edited"),
    (0.5, DETECTOR, "authentic"), (0.51, DETECTOR, "edited"), (0.02, DETECTOR, "authentic"),
    (math.nan, EDITED_AREA, "authentic"), (math.nan, DETECTOR, "authentic"),
])
def test_the_fixed_rule_is_strictly_above_the_threshold_of_the_scores_source(score, source, verdict):
    v = image_verdict(score, source, ImageRule())
    assert v.label == verdict and v.edited is (verdict == "edited") and v.source == source
    assert v.threshold == {EDITED_AREA: 0.01, DETECTOR: 0.5}[source]


def test_each_source_reads_its_own_threshold_of_calibrated_values():
    t = Thresholds(pixel=0.3, area=0.2, score=0.9, source="calibrated on calib (10 images)")
    assert image_threshold(EDITED_AREA, t) == 0.2 and image_threshold(DETECTOR, t) == 0.9
    assert image_verdict(0.5, EDITED_AREA, t).label == "edited"  # 0.5 > area 0.2
    assert image_verdict(0.5, DETECTOR, t).label == "authentic"  # 0.5 <= score 0.9
    assert image_verdict(0.5, DETECTOR, t).to_dict() == {"verdict": "authentic", "source": DETECTOR,
                                                         "score": 0.5, "threshold": 0.9}
    with pytest.raises(ValueError, match="edited_area"):
        image_verdict(0.5, "pixels", t)


def test_the_rule_is_the_same_on_arrays_and_on_single_scores():
    scores = np.array([0.0, 0.01, 0.0100001, 0.5, 0.7, np.nan])
    rule = ImageRule(area=0.01, score=0.5)
    for source in (EDITED_AREA, DETECTOR):
        assert edited(scores, source, rule).tolist() == [image_verdict(s, source, rule).edited for s in scores]


def test_a_records_image_rule_text_is_the_verdicts_rule():
    t = Thresholds(pixel=0.5)
    assert ThresholdPolicy.decided("binary", t, EDITED_AREA).image == \
        "fixed: edited if predicted edited area > 0.01 of the image" == f"fixed: {rule_text(EDITED_AREA, t)}"
    assert ThresholdPolicy.decided("binary", t, DETECTOR).image == \
        "fixed: edited if image probability > 0.5" == f"fixed: {rule_text(DETECTOR, t)}"



def test_a_calibrated_threshold_a_short_text_would_round_is_written_as_applied():
    """0.4999999701976776 (the float32 below 0.5 a calibration chose) reads in full: "> 0.5" is another rule."""
    below = float(np.float32(0.5) - np.float32(2**-25))
    t = Thresholds(pixel=below, area=0.012345678, score=below, source="calibrated on calib (10 images)")
    assert ThresholdPolicy.decided("binary", t, DETECTOR).pixel == \
        f"calibrated: edited if probability > {below!r}" == "calibrated: edited if probability > 0.4999999701976776"
    assert ThresholdPolicy.decided("binary", t, DETECTOR).image == \
        "calibrated: edited if image probability > 0.4999999701976776"
    assert rule_text(EDITED_AREA, t) == "edited if predicted edited area > 0.012345678 of the image"
    fixed = ThresholdPolicy.decided("binary", Thresholds(pixel=0.5), EDITED_AREA)
    assert (fixed.pixel, fixed.image) == ("fixed: edited if probability > 0.5",
                                          "fixed: edited if predicted edited area > 0.01 of the image")

def test_rows_are_named_as_the_leaderboard_names_them(record_factory):
    assert row_name("benco.mvss_net", EDITED_AREA, True) == "benco.mvss_net"
    assert row_name("benco.mvss_net", DETECTOR, True) == "benco.mvss_net (own image score)"
    assert row_name("cnnspot", DETECTOR, False) == "cnnspot"  # a classifier's only image row
    from diffzoo.harness.records.case_summary import SCORE_OPTION

    record = record_factory()
    assert record.body.row_name == row_name(record.body.detector.name, EDITED_AREA, True)
    data = json.loads(json.dumps(record.data))
    data["case"]["options"] = {SCORE_OPTION[0]: SCORE_OPTION[1]}
    from diffzoo.harness.records.document import ResultRecord

    assert ResultRecord(data).body.row_name == row_name(record.body.detector.name, DETECTOR, True)


@pytest.mark.parametrize("source", [EDITED_AREA, DETECTOR])
def test_evaluation_decides_each_image_with_the_verdict(source):
    """The state's per-image decision (img_Acc, the parity flips) is image_verdict's."""
    rng = np.random.default_rng(3)
    state = EvalState(BINARY, "binary", area_threshold=0.07, score_threshold=0.4)
    expected = {}
    for i in range(40):
        gt = np.zeros((10, 10), np.uint8)
        gt[: i % 4] = 1
        pred = (rng.random((10, 10)) < rng.choice([0.0, 0.03, 0.07, 0.08, 0.2])).astype(np.uint8)
        if i == 5:
            pred[:] = 0
            pred.flat[:7] = 1  # exactly at the area threshold: not edited
        score = float(rng.choice([0.1, 0.4, 0.41, 0.9])) if source == DETECTOR else None
        meta = SampleMeta(f"{i:03d}")
        state.update(meta, gt, pred, pred.astype(np.float32), image_score=score)
        value = score if source == DETECTOR else float(pred.mean())
        expected[meta.id] = image_verdict(value, source, ImageRule(0.07, 0.4)).edited
    assert state.image_score_source == source
    assert {k: v[1] for k, v in state.verdicts().items()} == expected


def test_a_semantic_model_has_no_calibrated_thresholds(tmp_path):
    from diffzoo.harness.run.thresholds import CalibrationMissing, recorded_thresholds

    with pytest.raises(CalibrationMissing, match="argmax.*--thresholds fixed"):
        recorded_thresholds(tmp_path, "0" * 64, "segformer.tiny", "semantic")


def test_calibrated_thresholds_come_only_from_records_the_stores_tables_hold(tmp_path):
    """A record dated after the clock, or a copy under another name than its id, is in no table
    of the store (the store's rule): predict takes no thresholds from it either."""
    from diffzoo.harness.run.thresholds import recorded_thresholds

    from helpers.records import make_record

    def calibrated(area, **fields):
        values = Thresholds(0.5, area, 0.5, "calibrated on calib (10 images)")
        policy = ThresholdPolicy.decided("binary", values, EDITED_AREA).to_dict()
        return values, make_record("det", threshold_policy=policy, **fields)

    records = tmp_path / "records"
    records.mkdir()
    kept, record = calibrated(0.1846)
    (records / f"{record.id}.json").write_text(record.to_json())
    _, ahead = calibrated(0.3, date="2999-01-01T00:00:00+00:00")
    (records / f"{ahead.id}.json").write_text(ahead.to_json())
    _, copy = calibrated(0.4, seed=1)
    (records / f"{'0' * 16}.json").write_text(copy.to_json())
    assert recorded_thresholds(tmp_path, "ab" * 32, "det", "binary") == kept


# -- predict agrees with the leaderboard -------------------------------------------------------
NAME = "verdict.x"
OWN = f"{NAME} (own image score)"


def _pixels_and_score(task, label_space):
    """Edited where the blue channel leaves the fixture's constant 90 (its noise squares), and an
    image score of its own (the red channel's mean) that disagrees with the area on some images."""
    def answer(images):
        b, _, h, w = images.shape
        edit = (images[:, 2:3] - 90 / 255).abs() * 40 - 1
        logits = edit if task == "binary" else torch.cat([-edit, edit.expand(b, label_space.num_classes - 1, h, w)], 1)
        return DetectionOutput(mask_logits=logits, image_score=images[:, 0].mean((1, 2)).clamp(0, 1))
    return answer


@pytest.fixture
def both(monkeypatch):
    """Detector ``verdict.x``: pixels and its own image score (two image rows), used as built."""
    card = DetectorCard(name=NAME, description="pixels and an own score", tasks=("binary", "semantic"),
                        trainable=False, gives_image_score=True)
    register_test_detector(monkeypatch, card, lambda build: Scripted(
        build.task, build.label_space, _pixels_and_score(build.task, build.label_space), build.card))


def _run(capsys, folder, out, thresholds):
    code, _, err = cli(capsys, "run", "--detector", NAME, "--suite", "standard", "--dataset", folder,
                       "--dataset-option", "calib_fraction=0.25", "--out", out, "--bootstrap", "0", "--no-train",
                       "--device", "cpu", "--no-references", "--thresholds", thresholds)
    assert code == 0, err
    records = [json.loads(p.read_text()) for p in (out / "records").glob("*.json")]
    return {(r["case"]["name"], (r["case"].get("options") or {}).get("image_score")): r for r in records}


def _state_verdicts(out, record):
    state = EvalState.from_state_dict(json.loads((out / record["state_file"]).read_text()))
    return {sid: bool(edited_) for sid, (_, edited_) in state.verdicts().items()}


def _predict(capsys, folder, ids, checkpoint, out, *options):
    images = [folder / "train_copy" / f"{sid}.image.png" for sid in ids]
    code, stdout, err = cli(capsys, "predict", "--checkpoint", checkpoint, "--device", "cpu", "--out", out,
                            *options, *images)
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()] if code == 0 else []
    return code, " ".join(stdout.split()), err, rows


@pytest.mark.isolated_cache
@pytest.mark.parametrize("thresholds", ["fixed", "calibrated"])
def test_predict_prints_the_verdict_of_each_leaderboard_image_row(capsys, tmp_path, both, thresholds):
    folder = make_diffseg_folder(tmp_path / "ds", n=30)
    out = tmp_path / "out"
    records = _run(capsys, folder, out, thresholds)
    area, own = records[("image", None)], records[("image", "detector")]
    assert area["threshold_policy"]["mode"] == own["threshold_policy"]["mode"] == thresholds
    values = area["threshold_policy"]["values"]
    assert own["threshold_policy"]["values"] == values  # one model, one set of thresholds for both rows
    by_area, by_own = _state_verdicts(out, area), _state_verdicts(out, own)
    assert set(by_area) == set(by_own) and len(by_area) >= 5
    assert by_area != by_own  # the two rows disagree on some image, so each must be matched on its own

    ids = sorted(by_area)
    checkpoint = cache_dir(NAME, area["config"]["cache_key"])
    code, stdout, err, rows = _predict(capsys, folder, ids, checkpoint, tmp_path / "pred",
                                       "--thresholds", thresholds,
                                       *(["--records", out] if thresholds == "calibrated" else []))
    assert code == 0, err
    assert [r["image"].split("/")[-1] for r in rows] == [f"{sid}.image.png" for sid in ids]
    # each verdict named as the leaderboard's table names the record's row: `NAME (calibrated)` for calibrated ones
    rows_of = {r.body.case["name"] + str(r.body.own_score): r.body.row_name
               for r in read_all(sorted((out / "records").glob("*.json"))).records}
    name, own_name = rows_of["imageFalse"], rows_of["imageTrue"]
    assert (name, own_name) == ((NAME, OWN) if thresholds == "fixed" else (f"{NAME} (calibrated)",
                                                                          f"{OWN} (calibrated)"))
    for sid, row in zip(ids, rows):
        verdicts = {v["row"]: v for v in row["verdicts"]}
        assert list(verdicts) == [name, own_name]
        assert verdicts[name]["source"] == EDITED_AREA and verdicts[own_name]["source"] == DETECTOR
        assert verdicts[name]["threshold"] == values["area"] and verdicts[own_name]["threshold"] == values["score"]
        assert (verdicts[name]["verdict"] == "edited") == by_area[sid], sid
        assert (verdicts[own_name]["verdict"] == "edited") == by_own[sid], sid
        assert row["thresholds"] == {"source": "fixed" if thresholds == "fixed" else
                                     area["threshold_policy"]["calibrated_on"], **values}
    # both verdicts on the console, each under its row's name, with the row's rule
    for row_, record, verdicts in ((name, area, by_area), (own_name, own, by_own)):
        n = sum(verdicts.values())
        rule = record["threshold_policy"]["image"].split(": ", 1)[1]
        assert f"{row_}: {n} edited, {len(ids) - n} authentic of {len(ids)} image(s) ({rule})" in stdout
    if thresholds == "calibrated":  # calibration moved a verdict here, so the fixed thresholds would fail this test
        fixed = Thresholds(pixel=0.5)
        assert any(image_verdict(v["score"], v["source"], fixed).label != v["verdict"]
                   for row in rows for v in row["verdicts"])


@pytest.mark.isolated_cache
def test_calibrated_thresholds_missing_is_one_line_saying_how_to_get_them(capsys, tmp_path, both):
    folder = make_diffseg_folder(tmp_path / "ds", n=12)
    out = tmp_path / "out"
    records = _run(capsys, folder, out, "fixed")
    checkpoint = cache_dir(NAME, records[("image", None)]["config"]["cache_key"])
    for where in (out, tmp_path / "nowhere"):
        code, _, err, _ = _predict(capsys, folder, ["00000001"], checkpoint, tmp_path / "pred",
                                   "--thresholds", "calibrated", "--records", where)
        lines = [line for line in err.splitlines() if line.strip()]
        assert code != 0 and len(lines) == 1, err
        # the command evaluates these very weights: --detector alone would take the cache's default model
        sha = records[("image", None)]["detector"]["checkpoint_sha256"][:12]
        assert lines[0] == (f"error: no calibrated thresholds for verdict.x (weights sha256 {sha}) in the records of "
                            f"{where}: evaluate this model with `diffzoo run --detector verdict.x --checkpoint "
                            f"{checkpoint} --thresholds calibrated --out {where}`, or pass --records the --out folder "
                            "of such a run"), err
        assert not (tmp_path / "pred").exists()
    code, _, err, _ = _predict(capsys, folder, ["00000001"], checkpoint, tmp_path / "pred", "--thresholds", "oracle")
    assert code != 0 and "--thresholds 'oracle'" in err and "fixed, calibrated" in err
