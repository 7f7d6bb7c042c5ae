"""Boundary F1 by its definition: a full Euclidean distance transform per class
(scipy.ndimage): the slow, plain computation.

Not used to score anything: it is the oracle that the fast implementation
(:mod:`diffzoo.harness.metrics.boundaries`, bit-packed classes and disk dilation) is tested against for
exactly equal floats (tests/test_metrics_boundary.py) and benchmarked against
(benchmarks/bf1.py).  The definition is docs/metrics.md's: boundary = mask AND NOT
erode(mask, 3x3 cross) with zero padding; a point matches if its distance to
the other boundary is < theta (0.75% of the image diagonal); both empty: NaN;
one empty: 0; ignore pixels (GT 255) are dropped first.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import ndimage


def boundary(mask: np.ndarray) -> np.ndarray:
    cross = ndimage.generate_binary_structure(2, 1)
    return mask & ~ndimage.binary_erosion(mask, structure=cross, border_value=0)


def boundary_f1(gt_mask: np.ndarray, pred_mask: np.ndarray, theta: float) -> float:
    gt_mask = np.asarray(gt_mask, dtype=bool)
    pred_mask = np.asarray(pred_mask, dtype=bool)
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
    out = np.full(num_classes - 1, np.nan)
    valid = gt != 255
    pred_valid = np.where(valid, pred, 255)
    gt_present = np.bincount(gt.ravel(), minlength=256)[1:num_classes] > 0
    pred_present = np.bincount(pred_valid.ravel(), minlength=256)[1:num_classes] > 0
    theta = 0.0075 * math.hypot(*gt.shape[:2])
    for c in np.flatnonzero(gt_present | pred_present) + 1:
        out[c - 1] = boundary_f1(gt == c, pred_valid == c, theta)
    return out
