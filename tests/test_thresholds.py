"""Oracle and calibrated thresholds, subsets of a pass, and format parity:
each checked against a brute-force computation."""

import math

import numpy as np
import pytest
import torch

from diffzoo.harness.core.errors import ConfigError, DataError
from diffzoo.harness.core.outputs import pixel_tensors
from diffzoo.harness.core.types import BINARY, DetectionOutput, EditRecord, SampleMeta
from diffzoo.harness.metrics import EvalState
from diffzoo.harness.metrics.image_level import RankedScores
from diffzoo.harness.metrics.parity import parity_metrics
from diffzoo.harness.metrics.pixel_auc import best_f1, bin_index, prob_histograms
from diffzoo.harness.records.policy import Thresholds
from diffzoo.harness.run.evaluate import EvalResult
from diffzoo.harness.run.request import RunRequest
from diffzoo.harness.run.thresholds import calibrate, calibrated_split, check_policy


def brute_best_accuracy(labels, scores):
    candidates = sorted(set(scores)) + [min(scores) - 1.0]
    return max(np.mean((np.asarray(scores) > t) == np.asarray(labels, bool)) for t in candidates)


@pytest.mark.parametrize("seed", range(200))
def test_best_accuracy_equals_brute_force_and_its_threshold_reaches_it(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 30))
    labels = rng.integers(0, 2, n)
    scores = np.round(rng.random(n), int(rng.integers(1, 3)))  # ties on purpose
    acc, t = RankedScores(labels, scores).best_accuracy()
    assert acc == pytest.approx(brute_best_accuracy(labels, scores), abs=1e-12)
    assert np.mean((scores > t) == labels.astype(bool)) == pytest.approx(acc, abs=1e-12)


def test_the_best_threshold_between_two_scores_one_float_apart_reaches_its_accuracy():
    """Halfway between two adjacent floats rounds to one of them; rounded up to the higher score,
    "score > t" no longer called that score edited (accuracy 0.5 where 1.0 was reported)."""
    low = np.nextafter(0.5, 1.0)
    high = np.nextafter(low, 1.0)
    scores, labels = np.array([low, high]), np.array([0, 1])
    acc, t = RankedScores(labels, scores).best_accuracy()
    assert (acc, t) == (1.0, low)
    assert np.mean((scores > t) == labels.astype(bool)) == 1.0


@pytest.mark.parametrize("seed", range(100))
def test_best_f1_equals_brute_force_over_bin_edges(seed):
    rng = np.random.default_rng(seed)
    bins = 16
    gt = rng.integers(0, 2, 300)
    prob = np.clip(rng.random(300) * 0.6 + gt * rng.random() * 0.5, 0, 1)
    idx = bin_index(prob, bins)
    pos = np.bincount(idx[gt == 1], minlength=bins).astype(float)
    neg = np.bincount(idx[gt == 0], minlength=bins).astype(float)
    f1, t = best_f1(pos, neg)
    best = 0.0
    for b in range(bins):
        pred = idx >= b
        tp, fp, fn = np.sum(pred & (gt == 1)), np.sum(pred & (gt == 0)), np.sum(~pred & (gt == 1))
        best = max(best, 2 * tp / (2 * tp + fp + fn))
    assert f1 == pytest.approx(best, abs=1e-12)
    pred = prob.astype(np.float32) > t  # the rule pixel_tensors applies, to float32 probabilities
    tp, fp, fn = np.sum(pred & (gt == 1)), np.sum(pred & (gt == 0)), np.sum(~pred & (gt == 1))
    assert 2 * tp / (2 * tp + fp + fn) == pytest.approx(f1, abs=1e-12)


def test_the_calibrated_pixel_threshold_applied_reaches_the_f1_it_was_chosen_for():
    """best_f1 chose "probability >= t" and pixel_tensors applied "> t": with saturated logits (probability
    exactly 0.0) the best rule, every pixel edited (t = 0), called only the pixel at 1.0 edited (F1 0.5, not 6/7)."""
    gt = np.array([1, 1, 1, 0])
    logits = torch.tensor([-200.0, -200.0, 200.0, -200.0]).reshape(1, 1, 1, 4)
    _, prob, _ = pixel_tensors(FakeDetector(), DetectionOutput(mask_logits=logits), 0.5, (1, 4))
    f1, t = best_f1(*prob_histograms(gt, prob[0, 0].numpy(), 1024))
    pred, _, _ = pixel_tensors(FakeDetector(), DetectionOutput(mask_logits=logits), t, (1, 4))
    tp, fp = int((pred[0, 0].numpy() & gt).sum()), int((pred[0, 0].numpy() & (1 - gt)).sum())
    assert (f1, 2 * tp / (tp + fp + gt.sum())) == (6 / 7, 6 / 7)


def test_best_f1_without_edited_pixels_is_nan():
    assert all(math.isnan(v) for v in best_f1(np.zeros(4), np.ones(4)))


def samples(n=40, seed=0):
    """(meta, gt, edited probability) of n small images, a third of them authentic."""
    rng = np.random.default_rng(seed)
    for i in range(n):
        edited = i % 3 != 0
        gt = np.zeros((8, 8), np.uint8)
        if edited:
            gt[:4, :4] = 1
        prob = np.clip(gt * 0.6 + rng.random((8, 8)) * 0.5, 0, 1)
        turns = (EditRecord("sd2" if i % 2 else "sdxl"),) if edited else ()
        yield SampleMeta(f"{i:03d}", base="real", turns=turns), gt, prob


def make_state(n=40, seed=0, flip=(), keep=None):
    """A binary state; ``flip`` ids get their prediction inverted, ``keep`` (ids) limits the images."""
    state = EvalState(BINARY, "binary")
    for meta, gt, prob in samples(n, seed):
        pred = (prob > 0.5).astype(np.uint8)
        if meta.id in flip:
            pred = 1 - pred if gt.any() else np.ones_like(pred)
        if keep is None or meta.id in keep:
            state.update(meta, gt, pred, prob)
    return state


def test_oracle_metrics_are_separate_and_at_least_the_fixed_ones():
    values = make_state().compute()
    assert values["F1_oracle"] >= values["F1"] - 1e-12
    assert values["img_Acc_oracle"] >= values["img_Acc"] - 1e-12


def test_subset_equals_a_separate_pass_except_histogram_metrics():
    full = make_state(40)
    ids = {f"{i:03d}" for i in range(0, 40, 2)}
    got, want = full.subset(ids).compute(), make_state(40, keep=ids).compute()
    for key in want:
        if key in ("pixel_AUC", "F1_oracle"):
            assert math.isnan(got[key])  # histograms belong to the whole pass
        else:
            assert got[key] == pytest.approx(want[key], nan_ok=True, abs=1e-12), key
    assert full.subset({f"{i:03d}" for i in range(40)}) is full


def test_parity_counts_moved_verdicts_by_class_and_flags_above_tolerance():
    native = make_state(30)
    moved = {"000", "003", "001"}  # two authentic, one edited
    reencoded = make_state(30, flip=moved)
    a, b = native.verdicts(), reencoded.verdicts()
    flips = [sid for sid in a if a[sid][1] != b[sid][1]]
    out = parity_metrics(native, reencoded, tolerance=0.05)
    assert out["verdict_flip_rate"] == pytest.approx(len(flips) / 30)
    n_auth = sum(1 for sid in a if a[sid][0] == 0)
    assert out["flip_rate_authentic"] == pytest.approx(sum(a[s][0] == 0 for s in flips) / n_auth)
    assert out["format_shortcut"] == float(len(flips) / 30 > 0.05)
    same = parity_metrics(native, make_state(30), tolerance=0.05)
    assert same["verdict_flip_rate"] == 0.0 and same["format_shortcut"] == 0.0 and same["delta_img_Acc"] == 0.0
    with pytest.raises(DataError, match="share no image"):
        parity_metrics(native, EvalState(BINARY, "binary"), 0.05)


class FakeDataset:
    name = "fake"

    def splits(self):
        return ["train", "calib", "val"]


class FakeDetector:
    task = "binary"

    class card:
        default_threshold = 0.5


def test_policy_checks_refuse_calibrating_on_an_evaluated_split():
    check_policy("fixed", "val", FakeDataset(), {"val"})
    check_policy("calibrated", "calib", FakeDataset(), {"val"})
    with pytest.raises(ConfigError, match="evaluates that split"):
        check_policy("calibrated", "val", FakeDataset(), {"val"})
    with pytest.raises(ConfigError, match="has no 'test' split"):
        check_policy("calibrated", "test", FakeDataset(), {"val"})
    # an unknown policy is the request's to refuse, before any work
    with pytest.raises(ConfigError, match="--thresholds 'best': choose one of fixed, calibrated"):
        RunRequest.of(detector="segformer.tiny", thresholds="best")


def test_calibrate_uses_the_calibration_states_best_thresholds():
    state = make_state(40, seed=3)
    seen = []

    def run(thresholds):
        seen.append(thresholds)
        return EvalResult({"binary": state})

    out = calibrate(FakeDetector(), "calib", run)
    best = state.best_thresholds()
    assert out.pixel == best["pixel"] and out.area == pytest.approx(best["image"])
    assert out.source.startswith("calibrated on calib") and calibrated_split(out.source) == "calib"
    assert calibrated_split("calibrated on a (b) (3 images)") == "a (b)" and calibrated_split("fixed") is None
    assert seen[0] == Thresholds(0.5) and seen[-1].pixel == best["pixel"]


def test_calibrating_reads_the_class_counts_without_computing_every_metric(caplog):
    """calibrate computed every metric of the calibration split to read its two class counts: on a split where
    some images had no edited probability that logged the partial pixel_AUC warning of a split no record shows."""
    state = make_state(12)
    for meta, gt, prob in samples(3, seed=9):
        state.update(SampleMeta(f"x{meta.id}", meta.base, meta.turns), gt, (prob > 0.5).astype(np.uint8), None)
    assert state.counts() == {"num_images": 15, "num_edited": 10, "num_authentic": 5}
    assert state.counts() == {k: v for k, v in state.compute().items() if k.startswith("num_")}
    caplog.clear()
    calibrate(FakeDetector(), "calib", lambda thresholds: EvalResult({"binary": state}))
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == []


@pytest.mark.parametrize("fill, keep", [(0, {"000", "001", "002"}), (1, {"000", "001", "003"})])
def test_a_calibrated_area_rule_calling_every_image_one_way_is_applied_that_way(fill, keep):
    """A detector predicting no pixel (fill 0) on a split of more edited images: the best rule, every image
    edited, was a threshold below 0 clamped to 0, so "area > 0" called every image authentic; one predicting
    every pixel (fill 1) on more authentic images: the threshold 1 was clamped to 0.999999 (every image edited)."""
    def state(area=0.01):
        made = EvalState(BINARY, "binary", area_threshold=area)
        for meta, gt, _ in samples(4):
            if meta.id in keep:
                made.update(meta, gt, np.full_like(gt, fill), None)
        return made

    out = calibrate(FakeDetector(), "calib", lambda thresholds: EvalResult({"binary": state()}))
    assert state(out.area).compute()["img_Acc"] == state().compute()["img_Acc_oracle"] == 2 / 3
    with pytest.raises(ConfigError, match=r"^area_threshold must be a number up to 1, got 1.5$"):
        state(1.5)


@pytest.mark.parametrize("keep, lacking, held", [
    ({f"{i:03d}" for i in range(0, 12, 3)}, "edited", "4 authentic"),
    ({f"{i:03d}" for i in range(12) if i % 3}, "authentic", "8 edited"),
])
def test_calibrating_on_a_split_without_one_class_is_refused(keep, lacking, held):
    """On authentic images alone the image threshold was the highest score (every image then
    authentic), on edited ones alone the pixel threshold 0 (every pixel edited): recorded as calibrated."""
    state = make_state(12, keep=keep)
    with pytest.raises(ConfigError) as error:
        calibrate(FakeDetector(), "calib", lambda thresholds: EvalResult({"binary": state}))
    assert str(error.value) == (
        f"cannot calibrate thresholds on split 'calib': it holds no {lacking} image ({held}), and a threshold "
        "chosen on one class calls every image of the other wrong; give --calibration-split a split holding both, "
        "or use --thresholds fixed")
