"""One image reduced to what a metric state keeps of it: exact integer counts.

Everything :class:`~.state.EvalState` needs of an image's maps is small: the
GT pixels per class, the C x C confusion counts, the boundary-point counts of
bF1 (:func:`~.boundaries.boundary_counts`) and the positive / negative pixel
counts per probability bin of the pixel AUC.  :class:`Reduced` holds them;
two functions compute it, with the same integers:

- :func:`reduce_numpy`, on the CPU, used by ``EvalState.update``;
- :func:`reduce_torch`, on the tensors' own device: when the model runs on a
  GPU, the maps never leave it and only these counts travel to the CPU
  (``run/evaluate.py``).  Run on the CPU it is what the tests hold to the
  numpy path, bit for bit.

Speed on the CPU (measured, ``python benchmarks/metrics_benco.py``): the
numpy path counts values with OpenCV's ``calcHist`` (multi-threaded, SIMD)
instead of ``np.bincount`` (which first copies its input to int64): the
confusion counts of up to 15 classes are one histogram of the uint8 code
``gt * 16 + pred``, and the probability bins with their GT side are one
histogram of a uint16 code.  A histogram is float32, exact below 2**24 pixels
per value; larger images take ``np.bincount``.  With a power-of-two number
of bins (1024, docs/metrics.md) a probability's bin ``floor(p * bins)`` is exact
in the map's own float type (multiplying by a power of two rounds nothing),
so the float64 copy the general rule needs is skipped; and a binary image's
confusion counts and histograms come from one histogram (:func:`_binary_fused`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from diffzoo.harness.core.types import IGNORE_INDEX
from diffzoo.harness.metrics.bitmorph import boundary_bits, dilate_within, disk_half_widths
from diffzoo.harness.metrics.boundaries import boundary_counts, tolerance
from diffzoo.harness.metrics.confusion import confusion_counts
from diffzoo.harness.metrics.pixel_auc import prob_histograms

DIGEST_BINS = 1024
"""Resolution of the edited probability in a prediction digest (``state.prediction_digest``):
the default pixel-AUC bins.  A :class:`Reduced` made with this many bins carries them (``bins16``)."""
EXACT_FLOAT32 = 2**24
"""Counts below this are exact in the float32 histograms of OpenCV."""
SMALL_CLASSES = 15
"""Up to this many classes, the confusion counts are one histogram of a uint8 code."""


@dataclass(frozen=True)
class Reduced:
    """One image's counts (int64 numpy arrays).

    ``gt_counts``: GT pixels per class 0..C-1 (255 left out); ``conf``: C x C
    confusion counts, rows GT, columns prediction (None without a predicted
    map); ``boundary``: 4 x (C-1) bF1 counts (None without a predicted map);
    ``hist``: 2 x bins, the positive then negative pixels per probability bin
    (None without probabilities); ``bins16``: the H x W uint16 bin of each
    pixel's probability at :data:`DIGEST_BINS` bins, when it was computed anyway
    (the prediction digest reuses it), else None.
    """

    gt_counts: np.ndarray
    conf: np.ndarray | None = None
    boundary: np.ndarray | None = None
    hist: np.ndarray | None = None
    bins16: np.ndarray | None = None


def count_values(values: np.ndarray, n: int) -> np.ndarray:
    """int64 counts of each value 0..n-1 of a uint8 or uint16 array (larger values ignored)."""
    if values.size < EXACT_FLOAT32 and n <= 65536:
        import cv2

        hist = cv2.calcHist([np.ascontiguousarray(values)], [0], None, [n], [0, n])
        return hist.reshape(-1).astype(np.int64)
    return np.bincount(values.ravel(), minlength=n)[:n].astype(np.int64)


def _confusion(gt: np.ndarray, pred: np.ndarray, c: int) -> np.ndarray:
    if c > SMALL_CLASSES:
        return confusion_counts(gt, pred, c)
    code = (gt << 4) | pred  # GT 255 wraps to 240 + pred: row 15, which no class 0..14 reaches
    return count_values(code, 256).reshape(16, 16)[:c, :c]


def _power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _bins16(prob: np.ndarray, bins: int) -> np.ndarray:
    """:func:`~.pixel_auc.bin_index` as uint16, computed in ``prob``'s own float type: exact
    because ``bins`` is a power of two (multiplying by it rounds nothing)."""
    idx = (prob * prob.dtype.type(bins)).astype(np.uint16)
    np.minimum(idx, bins - 1, out=idx)
    return idx


def _histograms(gt: np.ndarray, prob: np.ndarray, bins: int) -> tuple[np.ndarray, np.ndarray | None]:
    """(2 x bins positive/negative counts, the uint16 bins when exact and cheap, else None)."""
    if not _power_of_two(bins) or 3 * bins > 65536:
        return np.stack(prob_histograms(gt, prob, bins)).astype(np.int64), None
    idx = _bins16(prob, bins)
    side = (gt > 0).view(np.uint8) + (gt == IGNORE_INDEX).view(np.uint8)  # 0 negative, 1 positive, 2 ignored
    counts = count_values(idx + side.astype(np.uint16) * np.uint16(bins), 3 * bins)
    return np.stack([counts[bins:2 * bins], counts[:bins]]), idx


def _binary_fused(gt: np.ndarray, pred: np.ndarray, prob: np.ndarray, bins: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(2 x 2 confusion counts, 2 x bins histograms, uint16 bins) of a binary image (GT 0, 1 or
    255, prediction 0 or 1, ``bins`` a power of two up to 1024) in one histogram of the code
    ``(GT << 1 | pred) << log2(bins) | bin``: below 4 x bins for the scored pixels; an ignored
    pixel's GT 255 shifts out of uint16 range to at least 63,488, past every scored code."""
    idx = _bins16(prob, bins)
    pair = ((gt << 1) | pred).astype(np.uint16)  # GT 255 -> 254 or 255
    code = (pair << np.uint16(bins.bit_length() - 1)) | idx
    counts = count_values(code, 4 * bins).reshape(2, 2, bins)  # GT, pred, bin
    conf = counts.sum(axis=2)
    hist = np.stack([counts[1].sum(axis=0), counts[0].sum(axis=0)])
    return conf, hist, idx


def _same_hist(like: Reduced | None, prob, bins: int) -> Reduced | None:
    """``like`` when its histogram is that of ``prob`` at ``bins`` bins (see :func:`reduce_numpy`), else None."""
    found = prob is not None and like is not None and like.hist is not None and like.hist.shape[1] == bins
    return like if found else None


def reduce_numpy(gt: np.ndarray, pred: np.ndarray | None, prob: np.ndarray | None, num_classes: int,
                 bins: int, like: Reduced | None = None) -> Reduced:
    """The counts of one image's checked uint8 maps (``gt`` may hold 255) and float probabilities.

    ``like``: the counts of the same probabilities against a GT with the same
    edited, authentic and ignored pixels (the binary view of this ``gt``), whose
    histogram is then this one's too."""
    c = num_classes
    hist: np.ndarray | None = None
    bins16: np.ndarray | None = None
    conf: np.ndarray | None = None
    if (shared := _same_hist(like, prob, bins)) is not None:
        hist, bins16 = shared.hist, shared.bins16
    elif c == 2 and pred is not None and prob is not None and _power_of_two(bins) and bins <= 1024:
        conf, hist, bins16 = _binary_fused(gt, pred, prob, bins)
    elif prob is not None:
        hist, bins16 = _histograms(gt, prob, bins)
    bins16 = bins16 if bins == DIGEST_BINS else None
    if pred is None:
        return Reduced(count_values(gt, 256)[:c], None, None, hist, bins16)
    conf = _confusion(gt, pred, c) if conf is None else conf
    return Reduced(conf.sum(axis=1), conf, boundary_counts(gt, pred, c, conf), hist, bins16)


# -- the device path -----------------------------------------------------------------------

PACK_TORCH = 30
"""Classes packed into the bits of one int32 tensor (bit 31, the sign, is left alone)."""


def _boundary_counts_torch(gt, pred, c: int):
    """:func:`~.boundaries.boundary_counts` on tensors: every class 1..C-1 packed at once, on
    the whole image (the numpy path's crop to the masks' box changes no count)."""
    import torch

    pred_valid = torch.where(gt == IGNORE_INDEX, torch.full_like(pred, IGNORE_INDEX), pred)
    widths = disk_half_widths(tolerance(tuple(gt.shape)), max(gt.shape) - 1)
    parts = []
    for start in range(1, c, PACK_TORCH):
        classes = torch.arange(start, min(c, start + PACK_TORCH), device=gt.device)
        lut = torch.zeros(256, dtype=torch.int32)
        lut[start:start + classes.numel()] = torch.tensor([1 << k for k in range(classes.numel())], dtype=torch.int32)
        lut = lut.to(gt.device)
        b_gt, b_pred = boundary_bits(lut[gt.long()]), boundary_bits(lut[pred_valid.long()])
        matched_gt, matched_pred = b_gt & dilate_within(b_pred, widths), b_pred & dilate_within(b_gt, widths)
        parts.append(torch.stack([torch.stack([((a >> k) & 1).sum() for k in range(classes.numel())])
                                  for a in (b_gt, b_pred, matched_gt, matched_pred)]))  # pixels per bit
    return torch.cat(parts, dim=1)


def reduce_torch(gt, pred, prob, num_classes: int, bins: int, like: Reduced | None = None) -> Reduced:
    """:func:`reduce_numpy` of tensors (uint8 ``gt`` and ``pred``, float ``prob``) on their device
    (``like`` as there); one transfer brings the counts back, a second the digest's bins."""
    import torch

    c = num_classes
    gt = gt.to(torch.uint8)
    ignore = gt == IGNORE_INDEX
    pieces, sizes = [], []
    if pred is not None:
        pred = pred.to(torch.uint8)
        code = torch.where(ignore, torch.full_like(gt, 0).long() + c * c, gt.long() * c + pred.long())
        pieces.append(torch.bincount(code.reshape(-1), minlength=c * c + 1)[:c * c])
        pieces.append(_boundary_counts_torch(gt, pred, c).reshape(-1))
        sizes += [c * c, 4 * (c - 1)]
    else:
        pieces.append(torch.bincount(gt.long().reshape(-1), minlength=256)[:c])
        sizes.append(c)
    shared = _same_hist(like, prob, bins)
    bins16 = shared.bins16 if shared is not None else None
    if prob is not None and shared is None:
        idx = torch.floor(prob.double() * bins).long().clamp_(max=bins - 1)  # bin_index's float64 rule
        side = (gt > 0).long() + ignore.long()  # 0 negative, 1 positive, 2 ignored
        counts = torch.bincount((idx + side * bins).reshape(-1), minlength=3 * bins)
        pieces.append(torch.cat([counts[bins:2 * bins], counts[:bins]]))
        sizes.append(2 * bins)
        if bins == DIGEST_BINS:
            bins16 = idx.to(torch.int16).cpu().numpy().astype(np.uint16)
    parts = np.split(torch.cat([p.long() for p in pieces]).cpu().numpy(), np.cumsum(sizes)[:-1])
    hist = None if prob is None else shared.hist if shared is not None else parts[-1].reshape(2, bins)
    if pred is None:
        return Reduced(parts[0], None, None, hist, bins16)
    conf = parts[0].reshape(c, c)
    return Reduced(conf.sum(axis=1), conf, parts[1].reshape(4, c - 1), hist, bins16)
