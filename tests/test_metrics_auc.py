"""Pixel AUC (histogram) and image-level AP / AUC against sklearn."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import average_precision_score, roc_auc_score

from diffzoo.harness.core.errors import DataError
from diffzoo.harness.core.types import BINARY, SampleMeta
from diffzoo.harness.metrics import EvalState, average_precision, histogram_auc, prob_histograms, roc_auc
from diffzoo.harness.metrics.pixel_auc import bin_index

pytestmark = pytest.mark.usefixtures("metric_reduce_path")  # every test on both metric paths

BINS = 1024


def pixel_case(rng: np.random.Generator, quantized: bool):
    """A few images of GT 0/1/255 and edited probabilities correlated with the GT."""
    images = []
    for _ in range(int(rng.integers(1, 4))):
        h, w = (int(v) for v in rng.integers(2, 30, size=2))
        gt = (rng.random((h, w)) < rng.uniform(0.05, 0.95)).astype(np.uint8)
        gt[rng.random((h, w)) < 0.05] = 255
        prob = np.clip(rng.normal(0.3 + 0.4 * (gt == 1), rng.uniform(0.05, 0.5)), 0, 1)
        if rng.random() < 0.2:
            prob = np.round(prob * 4) / 4  # heavy ties, including exactly 0 and 1
        if quantized:
            prob = (bin_index(prob, BINS) + 0.5) / BINS
        images.append((gt, prob.astype(np.float32)))
    return images


def state_auc(images) -> float:
    state = EvalState(BINARY, "binary", auc_bins=BINS)
    for i, (gt, prob) in enumerate(images):
        state.update(SampleMeta(str(i)), gt, (prob > 0.5).astype(np.uint8), prob)
    return state.compute()["pixel_AUC"]


def flat(images):
    gt = np.concatenate([g.ravel() for g, _ in images])
    prob = np.concatenate([p.ravel() for _, p in images]).astype(np.float64)
    valid = gt != 255
    return gt[valid] == 1, prob[valid]


def test_pixel_auc_equals_sklearn_on_bin_centres():
    rng = np.random.default_rng(11)
    compared = 0
    for _ in range(220):
        images = pixel_case(rng, quantized=True)
        y, s = flat(images)
        got = state_auc(images)
        if y.all() or not y.any():
            assert math.isnan(got)
            continue
        # scores are bin centres: binning loses nothing, so only float error remains
        assert got == pytest.approx(roc_auc_score(y, s), abs=1e-12)
        compared += 1
    assert compared > 150


def test_pixel_auc_within_tie_bound_on_raw_scores():
    rng = np.random.default_rng(12)
    for _ in range(220):
        images = pixel_case(rng, quantized=False)
        y, s = flat(images)
        if y.all() or not y.any():
            continue
        got, exact = state_auc(images), roc_auc_score(y, s)
        # binning can only merge pairs that share a bin; each merged pair moves
        # the AUC by at most 1/2 of its weight 1/(P N)
        b = bin_index(s, BINS)
        shared = np.sum(np.bincount(b[y], minlength=BINS) * np.bincount(b[~y], minlength=BINS))
        bound = 0.5 * shared / (y.sum() * (~y).sum())
        assert abs(got - exact) <= bound + 1e-12


def test_histogram_edges_and_one_class():
    assert bin_index(np.array([0.0, 1 / BINS, 0.5, 1.0]), BINS).tolist() == [0, 1, 512, BINS - 1]
    pos, neg = prob_histograms(np.array([[1, 0, 255]], np.uint8), np.array([[1.0, 0.0, 0.7]]), BINS)
    assert pos.dtype == np.float64 and pos.sum() == 1 and neg.sum() == 1  # 255 dropped
    assert histogram_auc(pos, neg) == 1.0
    assert math.isnan(histogram_auc(pos, np.zeros(BINS)))
    assert math.isnan(histogram_auc(np.zeros(BINS), neg))


def test_pixel_auc_nan_without_probabilities():
    state = EvalState(BINARY, "binary")
    state.update(SampleMeta("a"), np.array([[0, 1]], np.uint8), np.array([[0, 1]], np.uint8), None)
    assert math.isnan(state.compute()["pixel_AUC"])


def test_bad_probabilities_raise():
    state = EvalState(BINARY, "binary")
    gt = np.zeros((2, 2), np.uint8)
    for bad in (np.full((2, 2), 1.5), np.full((2, 2), np.nan), np.zeros((3, 2)), np.zeros((2, 2), int)):
        with pytest.raises(DataError):
            state.update(SampleMeta("x"), gt, gt, bad)


def test_image_level_ap_auc_against_sklearn_with_ties_and_weights():
    rng = np.random.default_rng(13)
    for case in range(250):
        n = int(rng.integers(1, 40))
        y = rng.random(n) < rng.uniform(0.1, 0.9)
        s = rng.random(n)
        if case % 2:
            s = np.round(s * rng.integers(1, 6)) / 5  # many ties
        w = rng.integers(0, 4, n).astype(np.float64) if case % 3 == 0 else None
        sw = w if w is not None else np.ones(n)
        has_pos, has_neg = (sw[y] > 0).any(), (sw[~y] > 0).any()
        if has_pos:
            assert average_precision(y, s, w) == pytest.approx(
                average_precision_score(y, s, sample_weight=w), abs=1e-12)
        else:
            assert math.isnan(average_precision(y, s, w))
        if has_pos and has_neg:
            assert roc_auc(y, s, w) == pytest.approx(roc_auc_score(y, s, sample_weight=w), abs=1e-12)
        else:
            assert math.isnan(roc_auc(y, s, w))


def test_integer_weights_equal_duplication():
    rng = np.random.default_rng(14)
    y = rng.random(30) < 0.5
    s = np.round(rng.random(30), 1)
    w = rng.integers(0, 4, 30)
    rep = np.repeat(np.arange(30), w)
    assert average_precision(y, s, w) == pytest.approx(average_precision(y[rep], s[rep]), abs=1e-12)
    assert roc_auc(y, s, w) == pytest.approx(roc_auc(y[rep], s[rep]), abs=1e-12)
