"""bF1 against an independent brute-force oracle (numpy erosion + pairwise distances)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from diffzoo.harness.core.errors import DataError
from diffzoo.harness.metrics import boundary, boundary_f1, per_class_bf1, tolerance


def oracle_boundary(mask: np.ndarray) -> np.ndarray:
    """mask AND NOT (mask and its 4 neighbours all set), outside the image = 0."""
    p = np.pad(mask.astype(bool), 1)
    eroded = p[1:-1, 1:-1] & p[:-2, 1:-1] & p[2:, 1:-1] & p[1:-1, :-2] & p[1:-1, 2:]
    return mask.astype(bool) & ~eroded


def oracle_bf1(gt: np.ndarray, pred: np.ndarray, theta: float | None = None) -> float:
    if theta is None:
        theta = 0.0075 * math.sqrt(gt.shape[0] ** 2 + gt.shape[1] ** 2)
    bg = np.argwhere(oracle_boundary(gt)).astype(np.float64)
    bp = np.argwhere(oracle_boundary(pred)).astype(np.float64)
    if len(bg) == 0 and len(bp) == 0:
        return math.nan
    if len(bg) == 0 or len(bp) == 0:
        return 0.0
    d = np.sqrt(((bp[:, None, :] - bg[None, :, :]) ** 2).sum(-1))
    p = np.mean(d.min(axis=1) < theta)
    r = np.mean(d.min(axis=0) < theta)
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def random_mask(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    kind = rng.integers(0, 6)
    if kind == 0:
        return np.zeros((h, w), bool)
    if kind == 1:
        return np.ones((h, w), bool)
    if kind == 2 and h * w <= 1600:
        return rng.random((h, w)) < rng.uniform(0.1, 0.9)
    mask = np.zeros((h, w), bool)
    yy, xx = np.mgrid[:h, :w]
    for _ in range(rng.integers(1, 4)):
        cy, cx = rng.uniform(-0.2, 1.2) * h, rng.uniform(-0.2, 1.2) * w
        ry, rx = rng.uniform(0.5, 0.5 * h + 1), rng.uniform(0.5, 0.5 * w + 1)
        if rng.random() < 0.5:
            mask |= ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 <= 1
        else:
            mask |= (np.abs(yy - cy) <= ry) & (np.abs(xx - cx) <= rx)
    return mask


def perturb(rng: np.random.Generator, mask: np.ndarray) -> np.ndarray:
    """A prediction near the GT: shifted, with flipped pixels."""
    out = np.roll(mask, (rng.integers(-3, 4), rng.integers(-3, 4)), axis=(0, 1))
    if mask.size <= 1600:
        out ^= rng.random(mask.shape) < 0.03
    return out


def assert_same(a: float, b: float) -> None:
    assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, abs=1e-12), (a, b)


@pytest.mark.parametrize("seed", range(4))
def test_boundary_matches_oracle_erosion(seed):
    rng = np.random.default_rng(seed)
    for _ in range(50):
        h, w = rng.integers(1, 40, size=2)
        m = random_mask(rng, h, w)
        np.testing.assert_array_equal(boundary(m), oracle_boundary(m))


def test_bf1_random_cases_default_theta():
    rng = np.random.default_rng(1234)
    scored = 0
    for _ in range(250):
        h, w = (int(v) for v in rng.integers(1, 160, size=2))
        if rng.random() < 0.3:
            h, w = int(rng.integers(100, 200)), int(rng.integers(100, 260))  # theta > 1
        gt = random_mask(rng, h, w)
        pred = perturb(rng, gt) if rng.random() < 0.6 else random_mask(rng, h, w)
        got, want = boundary_f1(gt, pred), oracle_bf1(gt, pred)
        assert_same(got, want)
        scored += not math.isnan(want) and 0 < want < 1
    assert scored > 50  # the cases exercise partial matches, not only 0/1/NaN


def test_bf1_random_cases_explicit_theta():
    rng = np.random.default_rng(99)
    for _ in range(200):
        h, w = (int(v) for v in rng.integers(2, 60, size=2))
        gt, pred = random_mask(rng, h, w), random_mask(rng, h, w)
        theta = float(rng.choice([0.5, 1.0, 1.0001, 1.5, math.sqrt(2), 2.0, 2.5, 4.0]))
        assert_same(boundary_f1(gt, pred, theta), oracle_bf1(gt, pred, theta))


def test_tolerance_is_strict():
    gt = np.zeros((5, 9), bool)
    pred = np.zeros((5, 9), bool)
    gt[2, 2] = True
    pred[2, 5] = True  # distance exactly 3
    assert boundary_f1(gt, pred, theta=3.0) == 0.0
    assert boundary_f1(gt, pred, theta=3.0 + 1e-9) == 1.0


def test_edge_cases():
    empty = np.zeros((7, 11), bool)
    full = np.ones((7, 11), bool)
    assert math.isnan(boundary_f1(empty, empty))
    assert boundary_f1(empty, full) == 0.0
    assert boundary_f1(full, empty) == 0.0
    assert boundary_f1(full, full) == 1.0
    # a full mask has its boundary on the image frame (zero padding)
    frame = oracle_boundary(full)
    assert frame.sum() == 2 * 7 + 2 * 11 - 4
    np.testing.assert_array_equal(boundary(full), frame)
    one = empty.copy()
    one[3, 4] = True
    assert boundary(one).sum() == 1
    assert boundary_f1(one, one) == 1.0
    other = empty.copy()
    other[3, 5] = True
    assert boundary_f1(one, other) == 0.0  # theta = 0.1 px on this image
    assert boundary_f1(one, other, theta=1.5) == 1.0
    # masks touching the border, non-square, one-row images
    corner = empty.copy()
    corner[:3, :3] = True
    assert_same(boundary_f1(corner, corner), 1.0)
    row = np.ones((1, 30), bool)
    assert boundary(row).all()
    assert_same(boundary_f1(row, row[:, ::-1]), 1.0)


def test_tolerance_value():
    assert tolerance((300, 400)) == pytest.approx(0.0075 * 500)


def test_shape_mismatch_raises():
    with pytest.raises(DataError):
        boundary_f1(np.zeros((3, 4), bool), np.zeros((4, 3), bool))
    with pytest.raises(DataError):
        boundary(np.zeros((2, 3, 4), bool))


def test_per_class_bf1_with_ignore_matches_oracle():
    rng = np.random.default_rng(5)
    n_classes = 4
    for _ in range(60):
        h, w = (int(v) for v in rng.integers(2, 50, size=2))
        gt = np.zeros((h, w), np.uint8)
        pred = np.zeros((h, w), np.uint8)
        for c in range(1, n_classes):
            if rng.random() < 0.6:
                gt[random_mask(rng, h, w)] = c
            if rng.random() < 0.6:
                pred[random_mask(rng, h, w)] = c
        gt[random_mask(rng, h, w) & (rng.random((h, w)) < 0.3)] = 255
        got = per_class_bf1(gt, pred, n_classes)
        valid = gt != 255
        want = [oracle_bf1(gt == c, (pred == c) & valid) for c in range(1, n_classes)]
        assert got.shape == (n_classes - 1,)
        for g, wv in zip(got, want):
            assert_same(float(g), wv)
