"""One image's counts, three ways: the definitions (np.bincount, the per-class bF1 counts, the
float64 bin rule), the fast numpy path and the device path run on the CPU (torch tensors): the
same integers, bit for bit, on random, worst-case and edge-of-bin maps."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from diffzoo.harness.core.types import BINARY, IGNORE_INDEX, SampleMeta
from diffzoo.harness.metrics import EvalState
from diffzoo.harness.metrics.boundaries import boundary_counts
from diffzoo.harness.metrics.confusion import confusion_counts
from diffzoo.harness.metrics.pixel_auc import bin_index, prob_histograms
from diffzoo.harness.metrics.reduce import DIGEST_BINS, count_values, reduce_numpy, reduce_torch


def _maps(kind: str, shape: tuple[int, int], c: int, seed: int, dtype=np.float32):
    rng = np.random.default_rng(seed)
    h, w = shape
    if kind == "worst":  # uniform labels: every pixel a boundary point
        gt = rng.integers(0, c, shape).astype(np.uint8)
        pred = rng.integers(0, c, shape).astype(np.uint8)
        prob = rng.random(shape).astype(dtype)
    elif kind == "blobs":
        gt = np.zeros(shape, np.uint8)
        pred = np.zeros(shape, np.uint8)
        for _ in range(3):
            y, x = rng.integers(0, h - 4), rng.integers(0, w - 4)
            gt[y:y + rng.integers(2, h // 2), x:x + rng.integers(2, w // 2)] = rng.integers(1, c)
            y, x = rng.integers(0, h - 4), rng.integers(0, w - 4)
            pred[y:y + rng.integers(2, h // 2), x:x + rng.integers(2, w // 2)] = rng.integers(1, c)
        prob = np.clip((gt > 0) * 0.7 + rng.normal(0, 0.2, shape), 0, 1).astype(dtype)
    else:  # probabilities on and around every bin edge, 0 and 1
        gt = rng.integers(0, c, shape).astype(np.uint8)
        pred = np.zeros(shape, np.uint8)
        edges = (np.arange(h * w) % 1025 / 1024).astype(dtype)
        below = np.nextafter(edges, dtype(0)).astype(dtype)
        prob = np.where(rng.random(h * w) < 0.5, edges, below).reshape(shape).astype(dtype)
    ignore = rng.random(shape) < 0.05
    gt[ignore] = IGNORE_INDEX
    if kind == "blobs":
        gt[: h // 4, : w // 4] = IGNORE_INDEX  # a block of ignore too
    return gt, pred, prob


def _definition(gt, pred, prob, c, bins):
    valid = gt != IGNORE_INDEX
    pos, neg = prob_histograms(gt, prob, bins)
    return {"gt_counts": np.bincount(gt[valid], minlength=c)[:c], "conf": confusion_counts(gt, pred, c),
            "boundary": boundary_counts(gt, pred, c), "hist": np.stack([pos, neg]).astype(np.int64)}


CASES = [(kind, shape, c) for kind in ("worst", "blobs", "edges")
         for shape, c in (((64, 64), 2), ((37, 53), 9), ((128, 96), 9), ((40, 30), 20))]


@pytest.mark.parametrize("kind, shape, c", CASES)
@pytest.mark.parametrize("bins", [1024, 1000, 256])
def test_numpy_and_device_paths_count_exactly_what_the_definitions_count(kind, shape, c, bins):
    gt, pred, prob = _maps(kind, shape, c, seed=len(CASES) * bins + c)
    want = _definition(gt, pred, prob, c, bins)
    fast = reduce_numpy(gt, pred, prob, c, bins)
    device = reduce_torch(torch.from_numpy(gt), torch.from_numpy(pred), torch.from_numpy(prob), c, bins)
    for got in (fast, device):
        for name, value in want.items():
            assert np.array_equal(getattr(got, name), value), name
            assert getattr(got, name).dtype == np.int64
    if bins == DIGEST_BINS:  # the digest's bins, carried by both paths
        for got in (fast, device):
            assert np.array_equal(got.bins16, bin_index(prob, DIGEST_BINS).astype(np.uint16))
    else:
        assert fast.bins16 is None and device.bins16 is None


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_bins_of_every_float_type_follow_the_float64_rule_at_the_edges(dtype):
    gt, pred, prob = _maps("edges", (64, 80), 2, seed=1, dtype=dtype)
    want = _definition(gt, pred, prob, 2, 1024)["hist"]
    assert np.array_equal(reduce_numpy(gt, pred, prob, 2, 1024).hist, want)
    assert np.array_equal(reduce_torch(torch.from_numpy(gt), torch.from_numpy(pred), torch.from_numpy(prob),
                                       2, 1024).hist, want)


def test_without_a_predicted_map_or_probabilities_only_the_gt_is_counted():
    gt, _, prob = _maps("worst", (33, 47), 9, seed=3)
    want = np.bincount(gt[gt != IGNORE_INDEX], minlength=9)
    for got in (reduce_numpy(gt, None, None, 9, 1024), reduce_torch(torch.from_numpy(gt), None, None, 9, 1024)):
        assert np.array_equal(got.gt_counts, want) and got.conf is None and got.boundary is None and got.hist is None
    assert np.array_equal(reduce_torch(torch.from_numpy(gt), None, torch.from_numpy(prob), 9, 1024).hist,
                          _definition(gt, gt, prob, 9, 1024)["hist"])


@pytest.mark.parametrize("dtype, n", [(np.uint8, 256), (np.uint16, 3072), (np.uint16, 65536)])
def test_count_values_equals_bincount(dtype, n):
    values = np.random.default_rng(0).integers(0, min(n, np.iinfo(dtype).max + 1), (301, 257)).astype(dtype)
    values[0, :5] = [0, 1, n - 1, n - 1, 0]
    assert np.array_equal(count_values(values, n), np.bincount(values.ravel(), minlength=n)[:n])


def test_a_state_fed_device_counts_equals_one_fed_maps():
    """EvalState.add of the device path's counts gives the very state EvalState.update gives."""
    by_maps, by_counts = EvalState(BINARY, "binary"), EvalState(BINARY, "binary")
    for i in range(6):
        gt, pred, prob = _maps("blobs" if i % 2 else "worst", (48, 40), 2, seed=i)
        pred = (pred > 0).astype(np.uint8)
        gt = np.where(gt == IGNORE_INDEX, gt, gt > 0).astype(np.uint8)
        meta = SampleMeta(id=f"im{i}")
        by_maps.update(meta, gt, pred, prob, digest="d")
        by_counts.add(meta, reduce_torch(torch.from_numpy(gt), torch.from_numpy(pred), torch.from_numpy(prob),
                                         2, 1024), digest="d")
    assert by_maps.state_dict() == by_counts.state_dict()
