"""Image-level detection: the image score, the decision and AP / ROC-AUC.

Definitions (docs/metrics.md):

- Score per image: the detector's own image score if it provides one, else
  the predicted edited-area fraction (predicted label > 0 over the pixels whose
  GT is not 255).  ``EvalState.image_score_source`` records which.
- Decision: edited if predicted edited area > 1% of the image (DiffSeg30k rule,
  ``area_threshold``); when the detector gives an image score, edited if the
  probability > 0.5 (``score_threshold``).
- img_Acc over all images with a known label, img_real_Acc over authentic
  images, img_edited_Acc over edited images.
- img_AP = sklearn average_precision_score (non-interpolated):
  sum over distinct thresholds, in decreasing order, of (R_n - R_n-1) * P_n.
- img_AUC = ROC-AUC, ties counted one half (equals sklearn roc_auc_score).

Both ranking metrics take integer per-image weights, so a bootstrap
replicate (an image drawn k times has weight k) and a slice (weights 0/1) are
computed exactly like the full set.
"""

from __future__ import annotations

import numpy as np

from diffzoo.harness.metrics.pixel_auc import histogram_auc


class RankedScores:
    """Image scores sorted once; AP and AUC under any weighting of the images."""

    def __init__(self, labels: np.ndarray, scores: np.ndarray):
        scores = np.asarray(scores, dtype=np.float64)
        self.order = np.argsort(-scores, kind="stable")
        sorted_scores = scores[self.order]
        self.positive = np.asarray(labels, dtype=bool)[self.order]
        if sorted_scores.size:
            self.starts = np.flatnonzero(np.r_[True, sorted_scores[1:] != sorted_scores[:-1]])
        else:
            self.starts = np.zeros(0, dtype=np.int64)
        self.distinct = sorted_scores[self.starts]  # highest first

    def _grouped(self, weights: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """(positive, negative) weight per distinct score, highest score first."""
        if self.starts.size == 0:
            return np.zeros(0), np.zeros(0)
        w = np.ones(self.order.size) if weights is None else np.asarray(weights, dtype=np.float64)[self.order]
        pos = np.add.reduceat(np.where(self.positive, w, 0.0), self.starts)
        neg = np.add.reduceat(np.where(self.positive, 0.0, w), self.starts)
        return pos, neg

    def best_accuracy(self, weights: np.ndarray | None = None) -> tuple[float, float]:
        """(highest accuracy of the rule "edited if score > t" over every t, that t).

        t lies halfway between adjacent distinct scores (the lower of two with no
        float between them; above the highest: nothing edited; below the lowest:
        everything), so a calibrated t
        carries over to scores between the ones seen.  Ties in accuracy keep
        the lowest t.  NaN without images.  On the evaluated split itself this
        is the "oracle" accuracy (a separately named column, docs/metrics.md).
        """
        pos, neg = self._grouped(weights)
        total = pos.sum() + neg.sum()
        if total == 0:
            return float("nan"), float("nan")
        # call the top j score groups edited, j = 0..G
        correct = np.r_[0.0, np.cumsum(pos)] + (neg.sum() - np.r_[0.0, np.cumsum(neg)])
        j = int(len(correct) - 1 - np.argmax(correct[::-1]))  # the last maximum: lowest t
        d = self.distinct
        if j == 0:
            t = float(d[0])
        elif j == len(d):
            t = float(np.nextafter(d[-1], -np.inf))
        else:  # halfway; where no float lies between the two, halfway rounds to one: the lower one
            mid = float((d[j - 1] + d[j]) / 2)
            t = mid if mid < d[j - 1] else float(d[j])
        return float(correct[j] / total), t

    def auc(self, weights: np.ndarray | None = None) -> float:
        """ROC-AUC (ties one half); NaN without both classes."""
        pos, neg = self._grouped(weights)
        return histogram_auc(pos[::-1], neg[::-1])  # its bins rise with the score; the groups fall

    def average_precision(self, weights: np.ndarray | None = None) -> float:
        """Non-interpolated AP (sklearn's definition); NaN without positives."""
        pos, neg = self._grouped(weights)
        n_pos = pos.sum()
        if n_pos == 0:
            return float("nan")
        tps, fps = np.cumsum(pos), np.cumsum(neg)
        seen = tps + fps
        precision = np.divide(tps, seen, out=np.zeros_like(tps), where=seen > 0)
        recall = tps / n_pos
        return float(np.sum(np.diff(recall, prepend=0.0) * precision))


def roc_auc(labels: np.ndarray, scores: np.ndarray, weights: np.ndarray | None = None) -> float:
    """ROC-AUC of binary ``labels`` ranked by ``scores`` (see :class:`RankedScores`)."""
    return RankedScores(labels, scores).auc(weights)


def average_precision(labels: np.ndarray, scores: np.ndarray, weights: np.ndarray | None = None) -> float:
    """Non-interpolated average precision (see :class:`RankedScores`)."""
    return RankedScores(labels, scores).average_precision(weights)
