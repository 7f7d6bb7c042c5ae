"""Boundary F1 (bF1) of one image, per class.

Definition (METRICS.md), Csurka et al. 2013 (MATLAB bfscore) style, per
(image, class) for classes 1..N:

- boundary(mask) = mask AND NOT erode(mask, 3x3 cross), zero padding (a mask
  touching the image edge has boundary at the edge);
- tolerance theta = 0.75% of the image diagonal; a boundary point matches if
  its Euclidean distance to the other boundary is < theta (strict);
- P = matched predicted points / predicted points, R likewise for GT,
  F = 2PR/(P+R) (0 when P = R = 0);
- both masks empty: skipped (NaN); exactly one empty: 0.

The DiffSeg30k paper does not say which bF1 it used; diffzoo uses Csurka et
al. 2013 / MATLAB bfscore style with theta = 0.75% of the diagonal.

Ignore pixels (GT 255) are dropped first: they belong to neither the GT nor
the predicted mask of any class, exactly like pixels outside the image.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import ndimage

from diffzoo.harness.core.errors import DataError
from diffzoo.harness.core.types import IGNORE_INDEX

TOLERANCE_FRACTION = 0.0075
"""theta as a fraction of the image diagonal."""

CROSS = ndimage.generate_binary_structure(2, 1)
"""The 3x3 cross (4-neighbourhood) structuring element."""


def tolerance(shape: tuple[int, ...]) -> float:
    """theta = 0.75% of the diagonal of an image of ``shape`` (H, W)."""
    h, w = shape[:2]
    return TOLERANCE_FRACTION * math.hypot(h, w)


def boundary(mask: np.ndarray) -> np.ndarray:
    """boundary(mask) = mask AND NOT erode(mask, 3x3 cross), zero padding."""
    mask = np.asarray(mask, dtype=bool)
    if mask.ndim != 2:
        raise DataError(f"a mask must be 2-D (H x W), got shape {mask.shape}")
    return mask & ~ndimage.binary_erosion(mask, structure=CROSS, border_value=0)


def boundary_f1(gt_mask: np.ndarray, pred_mask: np.ndarray, theta: float | None = None) -> float:
    """bF1 of two boolean masks of the same shape (see the module docstring).

    ``theta`` defaults to 0.75% of the image diagonal.  Returns NaN when both
    masks are empty (the pair is skipped) and 0.0 when exactly one is.
    """
    gt_mask = np.asarray(gt_mask, dtype=bool)
    pred_mask = np.asarray(pred_mask, dtype=bool)
    if gt_mask.shape != pred_mask.shape:
        raise DataError(f"bF1: GT mask {gt_mask.shape} and prediction {pred_mask.shape} differ in shape")
    if theta is None:
        theta = tolerance(gt_mask.shape)
    # Work on the union bounding box grown by one pixel (clipped to the image):
    # erosion there equals erosion of the full image (outside the box there is
    # no mask pixel, and at the image edge the zero padding is the same), and
    # every boundary point lies in the box, so the distance transforms are
    # exact too.  This only saves time on large images with small masks.
    union = gt_mask | pred_mask
    rows, cols = np.flatnonzero(union.any(axis=1)), np.flatnonzero(union.any(axis=0))
    if rows.size:
        crop = (slice(max(rows[0] - 1, 0), rows[-1] + 2), slice(max(cols[0] - 1, 0), cols[-1] + 2))
        gt_mask, pred_mask = gt_mask[crop], pred_mask[crop]
    b_gt, b_pred = boundary(gt_mask), boundary(pred_mask)
    n_gt, n_pred = int(b_gt.sum()), int(b_pred.sum())
    if n_gt == 0 and n_pred == 0:
        return math.nan
    if n_gt == 0 or n_pred == 0:
        return 0.0
    dist_to_gt = ndimage.distance_transform_edt(~b_gt)
    dist_to_pred = ndimage.distance_transform_edt(~b_pred)
    precision = np.count_nonzero(dist_to_gt[b_pred] < theta) / n_pred
    recall = np.count_nonzero(dist_to_pred[b_gt] < theta) / n_gt
    if precision + recall == 0:
        return 0.0
    return 2 * precision * recall / (precision + recall)


def per_class_bf1(gt: np.ndarray, pred: np.ndarray, num_classes: int) -> np.ndarray:
    """bF1 of classes 1..N of one image: float64 array of length N (NaN = skipped).

    GT mask of class c: ``gt == c``; predicted mask: ``pred == c`` on pixels
    whose GT is not 255.  Classes absent from both are skipped without work.
    """
    out = np.full(num_classes - 1, np.nan)
    valid = gt != IGNORE_INDEX
    pred_valid = np.where(valid, pred, IGNORE_INDEX)
    gt_present = np.bincount(gt.ravel(), minlength=IGNORE_INDEX + 1)[1:num_classes] > 0
    pred_present = np.bincount(pred_valid.ravel(), minlength=IGNORE_INDEX + 1)[1:num_classes] > 0
    theta = tolerance(gt.shape)
    for c in np.flatnonzero(gt_present | pred_present) + 1:
        out[c - 1] = boundary_f1(gt == c, pred_valid == c, theta)
    return out
