"""Pixel ROC-AUC from fixed-bin score histograms.

Definition (docs/metrics.md): Pixel AUC (binary): ROC-AUC from score histograms
with a fixed number of bins (1024), accumulated in float64, so memory does not
grow with the dataset.

A probability p in [0, 1] falls in bin ``min(floor(p * bins), bins - 1)``.
The AUC is that of the binned scores with ties counted one half
(Mann-Whitney): sum_b neg_b * (pos_above_b + pos_b / 2) / (P * N).  It equals
the exact pixel AUC when all scores are bin centres; otherwise it differs from
it by at most ``sum_b pos_b * neg_b / (2 P N)`` (pairs that share a bin).
Positives are pixels whose GT is > 0 (binary view), negatives GT 0; GT 255 is
dropped.  NaN if there are no positives or no negatives.
"""

from __future__ import annotations

import numpy as np

from diffzoo.harness.core.errors import DataError
from diffzoo.harness.core.types import IGNORE_INDEX


def bin_index(prob: np.ndarray, bins: int) -> np.ndarray:
    """Bin of each probability: ``min(floor(p * bins), bins - 1)``."""
    return np.minimum(np.floor(np.asarray(prob, dtype=np.float64) * bins).astype(np.int64), bins - 1)


def check_prob_map(where: str, prob: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Validate an H x W map of probabilities in [0, 1]; ``where`` (``sample ID``) begins each error."""
    prob = np.asarray(prob)
    if prob.shape != shape:
        raise DataError(f"{where}: edited_prob has shape {prob.shape}, the GT has {shape}")
    if not np.issubdtype(prob.dtype, np.floating):
        raise DataError(f"{where}: edited_prob must be floating point, got dtype {prob.dtype}")
    if prob.size and not (np.isfinite(prob).all() and prob.min() >= 0.0 and prob.max() <= 1.0):
        raise DataError(f"{where}: edited_prob must hold finite probabilities in [0, 1]")
    return prob


def prob_histograms(gt: np.ndarray, prob: np.ndarray, bins: int) -> tuple[np.ndarray, np.ndarray]:
    """(positive, negative) float64 histograms of one image's edited probabilities."""
    valid = gt != IGNORE_INDEX
    idx = bin_index(prob[valid], bins)
    positive = gt[valid] > 0
    pos = np.bincount(idx[positive], minlength=bins).astype(np.float64)
    neg = np.bincount(idx[~positive], minlength=bins).astype(np.float64)
    return pos, neg


def histogram_auc(pos_hist: np.ndarray, neg_hist: np.ndarray) -> float:
    """ROC-AUC of binned scores (ties count one half); NaN with one class only."""
    pos = np.asarray(pos_hist, dtype=np.float64)
    neg = np.asarray(neg_hist, dtype=np.float64)
    n_pos, n_neg = pos.sum(), neg.sum()
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    pos_above = np.concatenate([np.cumsum(pos[::-1])[::-1][1:], [0.0]])
    return float(np.sum(neg * (pos_above + 0.5 * pos)) / (n_pos * n_neg))


def best_f1(pos_hist: np.ndarray, neg_hist: np.ndarray) -> tuple[float, float]:
    """(highest pixel F1 over the histogram's bin edges, its threshold t).

    Pixels in bins >= b are called edited, i.e. probability >= b / bins: for the
    float32 probabilities that the pixel rule "probability > t" compares
    (``core/outputs.py``), t is the float32 just below b / bins.  This is the
    "oracle" F1 when the histograms are the test split's (docs/metrics.md:
    reported only as a separately named column) and a calibrated threshold
    when they are a validation split's.  NaN without edited pixels.
    """
    pos = np.asarray(pos_hist, dtype=np.float64)
    neg = np.asarray(neg_hist, dtype=np.float64)
    n_pos = pos.sum()
    if n_pos == 0:
        return float("nan"), float("nan")
    tp = np.cumsum(pos[::-1])[::-1]  # edited pixels at or above each bin
    fp = np.cumsum(neg[::-1])[::-1]
    f1 = 2 * tp / np.maximum(2 * tp + fp + (n_pos - tp), 1e-300)
    b = int(np.argmax(f1))
    return float(f1[b]), float(np.nextafter(np.float32(b / pos.size), np.float32(-1)))
