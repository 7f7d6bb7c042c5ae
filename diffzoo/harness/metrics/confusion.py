"""Confusion counts and the pixel metrics derived from them.

Definitions (docs/metrics.md), over one (N+1)x(N+1) confusion matrix accumulated
over the whole dataset (rows = GT, columns = prediction; pixels with GT 255
dropped first).  Never average per-image ratios for these.

- IoU_c = I_c / (P_c + G_c - I_c).  A class with zero union is NaN and skipped.
- mIoU = nanmean(IoU_1..IoU_N): background is excluded by dropping its IoU,
  NOT by ignoring background pixels.  Binary mIoU = IoU of class 1.
- aAcc = trace / total (all pixels, background included); mAcc = nanmean over
  classes 1..N of I_c / G_c.
- Pixel precision / recall / F1 of the edited class on the binary view
  (every label > 0 becomes 1): P = TP/(TP+FP), R = TP/(TP+FN),
  F1 = 2TP/(2TP+FP+FN); NaN where the denominator is 0.
- c-IoU = dataset-level binary IoU = TP/(TP+FP+FN) (equals binary mIoU).
"""

from __future__ import annotations

import warnings
from typing import cast

import numpy as np

from diffzoo.harness.core.errors import DataError
from diffzoo.harness.core.types import IGNORE_INDEX


def nanmean(values: np.ndarray, axis: int | None = None) -> np.ndarray | float:
    """``np.nanmean`` that returns NaN for all-NaN input without a warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(values, axis=axis)


def ratio(num: np.ndarray | float, den: np.ndarray | float) -> np.ndarray | float:
    """num / den with NaN where den == 0 (no warning)."""
    num, den = np.asarray(num, dtype=np.float64), np.asarray(den, dtype=np.float64)
    out = np.divide(num, den, out=np.full(np.broadcast(num, den).shape, np.nan), where=den != 0)
    return out if out.ndim else float(out)


def check_label_map(name: str, labels: np.ndarray, num_classes: int, allow_ignore: bool) -> np.ndarray:
    """Validate an H x W integer label map (0..C-1, and 255 if allowed); returns it as uint8."""
    labels = np.asarray(labels)
    if labels.ndim != 2:
        raise DataError(f"{name} must be an H x W label map, got shape {labels.shape}")
    if labels.dtype == bool:
        labels = labels.astype(np.uint8)
    if not np.issubdtype(labels.dtype, np.integer):
        raise DataError(f"{name} must hold integer labels, got dtype {labels.dtype}")
    if labels.size == 0:
        return labels
    lo, hi = int(labels.min()), int(labels.max())
    if lo < 0:
        raise DataError(f"{name} has negative label {lo}")
    if hi >= num_classes:
        bad = np.unique(labels[labels >= num_classes])
        if not (allow_ignore and bad.tolist() == [IGNORE_INDEX]):
            allowed = f"0..{num_classes - 1}" + (f" or {IGNORE_INDEX}" if allow_ignore else "")
            raise DataError(f"{name} has labels {bad[:10].tolist()} outside {allowed}")
    return labels.astype(np.uint8, copy=False)


def confusion_counts(gt: np.ndarray, pred: np.ndarray, num_classes: int) -> np.ndarray:
    """C x C int64 confusion counts (rows = GT, cols = pred) of validated maps.

    Pixels with GT 255 are dropped first.
    """
    valid = gt != IGNORE_INDEX
    idx = gt[valid].astype(np.int64) * num_classes + pred[valid].astype(np.int64)
    return np.bincount(idx, minlength=num_classes * num_classes).reshape(num_classes, num_classes)


def binary_counts(conf: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(TP, FP, FN, TN) of the binary view (label > 0 = edited) of ``(..., C, C)`` counts."""
    tp = conf[..., 1:, 1:].sum(axis=(-2, -1))
    fp = conf[..., 0, 1:].sum(axis=-1)
    fn = conf[..., 1:, 0].sum(axis=-1)
    tn = conf[..., 0, 0]
    return tp, fp, fn, tn


def iou_per_class(conf: np.ndarray) -> np.ndarray:
    """IoU_c = I_c / (P_c + G_c - I_c); NaN where the union is 0."""
    inter = np.diagonal(conf).astype(np.float64)
    union = conf.sum(axis=0) + conf.sum(axis=1) - inter
    return cast(np.ndarray, ratio(inter, union))  # 1-D: one entry per class


def pixel_metrics(conf: np.ndarray, names: tuple[str, ...]) -> dict[str, float]:
    """aAcc, mAcc, mIoU, IoU.<class>, precision, recall, F1, cIoU of a C x C matrix."""
    conf = np.asarray(conf, dtype=np.float64)
    iou = iou_per_class(conf)
    inter = np.diagonal(conf)
    edited_acc = cast(np.ndarray, ratio(inter[1:], conf.sum(axis=1)[1:]))  # 1-D: one entry per edited class
    out: dict[str, float] = {
        "aAcc": float(ratio(inter.sum(), conf.sum())),
        "mAcc": float(nanmean(edited_acc)),
        "mIoU": float(nanmean(iou[1:])),
    }
    out.update({f"IoU.{name}": float(v) for name, v in zip(names, iou)})
    tp, fp, fn, _ = binary_counts(conf)
    out["precision"] = float(ratio(tp, tp + fp))
    out["recall"] = float(ratio(tp, tp + fn))
    out["F1"] = float(ratio(2 * tp, 2 * tp + fp + fn))
    out["cIoU"] = float(ratio(tp, tp + fp + fn))
    return out
