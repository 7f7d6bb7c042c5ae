"""bF1 against an independent brute-force oracle (numpy erosion + pairwise distances),
and exactly equal to the distance-transform implementation it replaced."""

from __future__ import annotations

import math

import numpy as np
import pytest

from diffzoo.harness.core.errors import DataError
from diffzoo.harness.metrics import boundary, boundary_f1, per_class_bf1, tolerance
from diffzoo.harness.metrics.bitmorph import dilate_within, disk_half_widths

from helpers import boundary_oracle as oracle


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


# --- the fast implementation against the distance-transform oracle (exactly equal floats) ----


def assert_identical(got: np.ndarray, want: np.ndarray) -> None:
    """Exactly equal float64 arrays, NaN where NaN (no tolerance)."""
    assert got.dtype == want.dtype == np.float64
    assert got.shape == want.shape
    assert np.array_equal(np.isnan(got), np.isnan(want)), (got, want)
    assert np.array_equal(got[~np.isnan(got)], want[~np.isnan(want)]), (got, want)


def label_map(rng: np.random.Generator, h: int, w: int, n: int) -> np.ndarray:
    """A label map with values 0..n-1 of one of several shapes (worst cases included)."""
    kind = int(rng.integers(0, 8))
    out = np.zeros((h, w), np.uint8)
    if kind == 0:  # uniform random labels: every pixel a boundary point
        return rng.integers(0, n, (h, w)).astype(np.uint8)
    if kind == 1:  # empty
        return out
    if kind == 2:  # one class everywhere
        return np.full((h, w), rng.integers(0, n), np.uint8)
    if kind == 3:  # single pixels
        for _ in range(int(rng.integers(1, 6))):
            out[rng.integers(0, h), rng.integers(0, w)] = rng.integers(1, n) if n > 1 else 0
        return out
    if kind == 4:  # thin lines (1 px), horizontal, vertical and diagonal
        for _ in range(int(rng.integers(1, 4))):
            c = rng.integers(0, n)
            which = rng.integers(0, 3)
            if which == 0:
                out[rng.integers(0, h), :] = c
            elif which == 1:
                out[:, rng.integers(0, w)] = c
            else:
                k = np.arange(min(h, w))
                out[k, (k + rng.integers(0, w)) % w] = c
        return out
    if kind == 5:  # sparse random pixels
        sel = rng.random((h, w)) < 0.05
        out[sel] = rng.integers(0, n, int(sel.sum()))
        return out
    for c in range(1, n):  # blobs, later ones over earlier ones
        if rng.random() < 0.7:
            out[random_mask(rng, h, w)] = c
    return out


def sizes(rng: np.random.Generator) -> tuple[int, int]:
    kind = rng.integers(0, 4)
    if kind == 0:
        return 1, int(rng.integers(1, 200))
    if kind == 1:
        return int(rng.integers(1, 200)), 1
    if kind == 2:
        return int(rng.integers(2, 40)), int(rng.integers(2, 40))
    return int(rng.integers(100, 260)), int(rng.integers(100, 260))  # theta > 1


def fast_bf1(gt: np.ndarray, pred: np.ndarray, n_classes: int, path: str) -> np.ndarray:
    """bF1 per class by the numpy path, or by the device path's counts (torch, here on the CPU)."""
    if path == "numpy":
        return per_class_bf1(gt, pred, n_classes)
    import torch

    from diffzoo.harness.metrics.boundaries import bf1_of_counts
    from diffzoo.harness.metrics.reduce import _boundary_counts_torch

    counts = _boundary_counts_torch(torch.from_numpy(gt), torch.from_numpy(pred), n_classes)
    return bf1_of_counts(counts.numpy())


PATHS = ["numpy", "torch"]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("n_classes", [2, 3, 9, 12, 20, 40])
def test_per_class_bf1_identical_to_reference(n_classes, path):
    rng = np.random.default_rng(1000 + n_classes)
    for _ in range(40):
        h, w = sizes(rng)
        gt = label_map(rng, h, w, n_classes)
        if rng.random() < 0.5:
            pred = label_map(rng, h, w, n_classes)
        else:  # a prediction near the GT
            pred = np.roll(gt, (rng.integers(-3, 4), rng.integers(-3, 4)), axis=(0, 1))
            flip = rng.random((h, w)) < 0.02
            pred[flip] = rng.integers(0, n_classes, int(flip.sum()))
        if rng.random() < 0.3:
            gt[rng.random((h, w)) < rng.uniform(0.01, 0.5)] = 255
        if rng.random() < 0.1:
            pred[rng.random((h, w)) < 0.1] = n_classes + 3  # labels outside the space are nobody's
        assert_identical(fast_bf1(gt, pred, n_classes, path), oracle.per_class_bf1(gt, pred, n_classes))


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("n_classes", [2, 9])
def test_per_class_bf1_identical_on_worst_case_512(n_classes, path):
    rng = np.random.default_rng(n_classes)
    gt = rng.integers(0, n_classes, (512, 512)).astype(np.uint8)
    pred = rng.integers(0, n_classes, (512, 512)).astype(np.uint8)
    assert_identical(fast_bf1(gt, pred, n_classes, path), oracle.per_class_bf1(gt, pred, n_classes))


def test_per_class_bf1_other_integer_dtypes():
    rng = np.random.default_rng(77)
    for dtype in (np.int32, np.int64, np.uint16):
        for _ in range(10):
            h, w = sizes(rng)
            gt, pred = label_map(rng, h, w, 9), label_map(rng, h, w, 9)
            gt[rng.random((h, w)) < 0.1] = 255
            want = oracle.per_class_bf1(gt, pred, 9)
            assert_identical(per_class_bf1(gt.astype(dtype), pred.astype(dtype), 9), want)


def test_boundary_f1_identical_to_reference_at_exact_distances():
    """theta at (and next to) the lengths of integer offsets, where < and <= differ."""
    rng = np.random.default_rng(31)
    thetas = [0.0, -1.0, math.nan, math.inf, 0.5, 1.0, math.sqrt(2), 2.0, math.sqrt(5), math.sqrt(8), 3.0,
              math.sqrt(13), 5.0, math.sqrt(29), 7.5, 40.0]
    thetas += [math.nextafter(t, math.inf) for t in thetas if math.isfinite(t)]
    for _ in range(60):
        h, w = sizes(rng)
        gt, pred = label_map(rng, h, w, 2) == 1, label_map(rng, h, w, 2) == 1
        for theta in thetas:
            got, want = boundary_f1(gt, pred, theta), oracle.boundary_f1(gt, pred, theta)
            assert (math.isnan(got) and math.isnan(want)) or got == want, (theta, got, want)


def test_default_theta_just_above_and_below_an_offset_length():
    """Image sizes whose default theta is a hair above or below 1, sqrt(2), 2 or sqrt(5) px."""
    rng = np.random.default_rng(8)
    cases = {(86, 102): 1, (88, 100): 1, (113, 151): 2, (118, 147): 2,
             (183, 194): 4, (184, 193): 4, (170, 245): 5, (186, 233): 5}
    for (h, w), d2 in cases.items():
        theta = tolerance((h, w))
        assert 0 < abs(theta - math.sqrt(d2)) < 1e-3
        for density in (0.05, 0.3):
            gt, pred = rng.random((h, w)) < density, rng.random((h, w)) < density
            assert boundary_f1(gt, pred) == oracle.boundary_f1(gt, pred, theta), (h, w)
            # the other side of that length gives another score: the cases test the comparison
            other = math.sqrt(d2) if theta > math.sqrt(d2) else math.nextafter(math.sqrt(d2), math.inf)
            assert boundary_f1(gt, pred) != boundary_f1(gt, pred, other)


def test_disk_half_widths_match_brute_force():
    for theta in [0.0, 0.5, 1.0, 1.5, math.sqrt(2), 2.0, math.sqrt(5), 3.7, 5.43, 10.86, math.inf]:
        for limit in (0, 1, 4, 30):
            widths = disk_half_widths(theta, limit)
            want = [max((dx for dx in range(limit + 1) if math.sqrt(dy * dy + dx * dx) < theta), default=-1)
                    for dy in range(limit + 1)]
            want = [v for v in want if v >= 0]
            assert widths == want, (theta, limit)


def test_dilate_within_matches_offset_union():
    rng = np.random.default_rng(4)
    for _ in range(30):
        h, w = (int(v) for v in rng.integers(1, 30, size=2))
        codes = (rng.random((h, w)) < 0.05).astype(np.uint8) << rng.integers(0, 8, (h, w)).astype(np.uint8)
        theta = float(rng.uniform(0, 8))
        widths = disk_half_widths(theta, max(h, w) - 1)
        want = np.zeros_like(codes)
        for y, x in zip(*np.nonzero(codes)):
            for dy in range(-h, h + 1):
                for dx in range(-w, w + 1):
                    if 0 <= y + dy < h and 0 <= x + dx < w and math.sqrt(dy * dy + dx * dx) < theta:
                        want[y + dy, x + dx] |= codes[y, x]
        np.testing.assert_array_equal(dilate_within(codes, widths), want)
