"""Boundary F1 (bF1) of one image, per class.

Definition (docs/metrics.md), Csurka et al. 2013 (MATLAB bfscore) style, per
(image, class) for classes 1..N:

- boundary(mask) = mask AND NOT erode(mask, 3x3 cross), zero padding (a mask
  touching the image edge has boundary at the edge);
- tolerance theta = 0.75% of the image diagonal; a boundary point matches if
  its Euclidean distance to the other boundary is < theta (strict);
- P = matched predicted points / predicted points, R likewise for GT,
  F = 2PR/(P+R) (0 when P = R = 0);
- both masks empty: skipped (NaN); exactly one empty: 0.

The DiffSeg30k paper does not say which bF1 it used; this definition is diffzoo's choice.

Ignore pixels (GT 255) are dropped first: they belong to neither the GT nor
the predicted mask of any class, exactly like pixels outside the image.

How it is computed: the classes of an image are packed into the bits of one
integer array and handled together (:mod:`.bitmorph`); "within theta of the
other boundary" is a dilation of that boundary by the disk of offsets shorter
than theta, the same predicate as thresholding an exact Euclidean distance
transform with ``< theta``, so the counts, and hence the scores, are exactly
those of the distance-transform definition (the docs/metrics.md oracle).
"""

from __future__ import annotations

import math

import numpy as np

from diffzoo.harness.core.errors import DataError
from diffzoo.harness.core.types import IGNORE_INDEX
from diffzoo.harness.metrics.bitmorph import boundary_bits, dilate_within, disk_half_widths

TOLERANCE_FRACTION = 0.0075
"""theta as a fraction of the image diagonal."""

_PACK = 16
"""Classes handled together in one bit-packed array (uint8 up to 8, else uint16)."""


def tolerance(shape: tuple[int, ...]) -> float:
    """theta = 0.75% of the diagonal of an image of ``shape`` (H, W)."""
    h, w = shape[:2]
    return TOLERANCE_FRACTION * math.hypot(h, w)


def _check_2d(mask: np.ndarray) -> None:
    if mask.ndim != 2:
        raise DataError(f"a mask must be 2-D (H x W), got shape {mask.shape}")


def boundary(mask: np.ndarray) -> np.ndarray:
    """boundary(mask) = mask AND NOT erode(mask, 3x3 cross), zero padding."""
    mask = np.asarray(mask, dtype=bool)
    _check_2d(mask)
    return boundary_bits(mask.view(np.uint8)).view(bool)


def _f1(n_gt: int, n_pred: int, matched_gt: int, matched_pred: int) -> float:
    """F from the boundary-point counts of one (image, class) pair."""
    if n_gt == 0 and n_pred == 0:
        return math.nan
    if n_gt == 0 or n_pred == 0:
        return 0.0
    precision = matched_pred / n_pred
    recall = matched_gt / n_gt
    if precision + recall == 0:
        return 0.0
    return 2 * precision * recall / (precision + recall)


def _packed_counts(gt_codes: np.ndarray, pred_codes: np.ndarray, bits: int, theta: float) -> np.ndarray:
    """Boundary counts (n_gt, n_pred, matched_gt, matched_pred) per bit: int64 array 4 x ``bits``."""
    # Work on the union bounding box grown by one pixel (clipped to the image):
    # erosion there equals erosion of the full image (outside the box there is
    # no mask pixel, and at the image edge the zero padding is the same), and
    # every boundary point lies in the box, so matches are unchanged.
    union = gt_codes | pred_codes
    rows, cols = np.flatnonzero(union.any(axis=1)), np.flatnonzero(union.any(axis=0))
    if not rows.size:
        return np.zeros((4, bits), np.int64)
    crop = (slice(max(rows[0] - 1, 0), rows[-1] + 2), slice(max(cols[0] - 1, 0), cols[-1] + 2))
    b_gt, b_pred = boundary_bits(gt_codes[crop]), boundary_bits(pred_codes[crop])
    widths = disk_half_widths(theta, max(b_gt.shape) - 1)
    matched_gt = b_gt & dilate_within(b_pred, widths)
    matched_pred = b_pred & dilate_within(b_gt, widths)
    return np.array([[np.count_nonzero(a & a.dtype.type(1 << k)) for k in range(bits)]  # pixels per bit
                     for a in (b_gt, b_pred, matched_gt, matched_pred)], np.int64)


def boundary_f1(gt_mask: np.ndarray, pred_mask: np.ndarray, theta: float | None = None) -> float:
    """bF1 of two boolean masks of the same shape (see the module docstring).

    ``theta`` defaults to 0.75% of the image diagonal.  Returns NaN when both
    masks are empty (the pair is skipped) and 0.0 when exactly one is.
    """
    gt_mask = np.asarray(gt_mask, dtype=bool)
    pred_mask = np.asarray(pred_mask, dtype=bool)
    if gt_mask.shape != pred_mask.shape:
        raise DataError(f"bF1: GT mask {gt_mask.shape} and prediction {pred_mask.shape} differ in shape")
    _check_2d(gt_mask)
    if theta is None:
        theta = tolerance(gt_mask.shape)
    counts = _packed_counts(gt_mask.view(np.uint8), pred_mask.view(np.uint8), 1, theta)
    return _f1(*(int(v) for v in counts[:, 0]))


def _pack(labels: np.ndarray, classes: np.ndarray, dtype: type) -> np.ndarray:
    """Bit ``k`` set where ``labels == classes[k]``; every other label packs to 0."""
    if classes.size == 1 and dtype == np.uint8:  # one class (binary): a comparison, cheaper than a lookup
        return (labels == classes[0]).view(np.uint8)
    if labels.dtype == np.uint8:
        lut: np.ndarray = np.zeros(256, dtype)
        lut[classes] = 1 << np.arange(classes.size, dtype=dtype)
        return np.take(lut, labels)
    codes: np.ndarray = np.zeros(labels.shape, dtype)
    for k, c in enumerate(classes):
        codes[labels == c] = 1 << k
    return codes


def boundary_counts(gt: np.ndarray, pred: np.ndarray, num_classes: int, conf: np.ndarray | None = None) -> np.ndarray:
    """Boundary-point counts of classes 1..N of one image: int64 array 4 x N, rows
    (GT points, predicted points, matched GT points, matched predicted points).

    GT mask of class c: ``gt == c``; predicted mask: ``pred == c`` on pixels
    whose GT is not 255.  Classes absent from both are skipped without work
    (their counts are 0, their bF1 NaN).  ``conf``: the image's confusion
    counts when they are known, which say which classes are present and
    whether any pixel is ignored.
    """
    out = np.zeros((4, num_classes - 1), np.int64)
    if conf is None:
        pred_valid = np.where(gt != IGNORE_INDEX, pred, IGNORE_INDEX)
        gt_present = np.bincount(gt.ravel(), minlength=IGNORE_INDEX + 1)[1:num_classes] > 0
        pred_present = np.bincount(pred_valid.ravel(), minlength=IGNORE_INDEX + 1)[1:num_classes] > 0
    else:  # rows: GT pixels per class, columns: predicted pixels on non-ignored GT
        ignored = conf.sum() != gt.size
        pred_valid = np.where(gt != IGNORE_INDEX, pred, IGNORE_INDEX) if ignored else pred
        gt_present, pred_present = conf.sum(axis=1)[1:] > 0, conf.sum(axis=0)[1:] > 0
    theta = tolerance(gt.shape)
    present = np.flatnonzero(gt_present | pred_present) + 1
    if present.size:
        _check_2d(gt)
    for start in range(0, present.size, _PACK):
        classes = present[start : start + _PACK]
        dtype = np.uint8 if classes.size <= 8 else np.uint16
        out[:, classes - 1] = _packed_counts(_pack(gt, classes, dtype), _pack(pred_valid, classes, dtype),
                                             classes.size, theta)
    return out


def bf1_of_counts(counts: np.ndarray) -> np.ndarray:
    """bF1 per class (float64, NaN = skipped) of :func:`boundary_counts`' 4 x N counts."""
    return np.array([_f1(*(int(v) for v in counts[:, k])) for k in range(counts.shape[1])], dtype=np.float64)


def per_class_bf1(gt: np.ndarray, pred: np.ndarray, num_classes: int) -> np.ndarray:
    """bF1 of classes 1..N of one image: float64 array of length N (NaN = skipped)."""
    return bf1_of_counts(boundary_counts(gt, pred, num_classes))
