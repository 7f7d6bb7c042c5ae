"""Dataset-level metrics from per-image rows under per-image weights.

One code path computes every metric: the full set (all weights 1), a slice
(weights 0/1) and a bootstrap replicate (weight = how often an image was
drawn).  Counts are summed, never per-image ratios averaged, except for the
metrics defined as means over images:

- g-IoU = mean over edited images of that image's binary IoU (authentic
  images are not given IoU 0; they count in FPR_authentic instead).
- FPR_authentic = fraction of authentic images whose predicted edited area
  fraction > area_threshold (the area verdict of :mod:`.verdict`).
- F1_benco / IoU_benco = IMDL-BenCo's per-image pixel F1 / IoU: mean over every
  scored image, an image without edited pixels counting 0.
- bF1 = mean over classes 1..N of (mean over the images where that class was
  scored); bF1_image_mean = mean, over images with at least one scored class,
  of the mean bF1 over that image's scored classes.
- top<k> = fraction of edited images whose Top-k ranking holds a GT editor.

Rows are put in canonical order (sorted by image id) first, so results do
not depend on the order shards were merged in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np

from diffzoo.harness.metrics.catalog import COUNT_METRICS
from diffzoo.harness.metrics.confusion import binary_counts, nanmean, pixel_metrics, ratio
from diffzoo.harness.metrics.image_level import RankedScores
from diffzoo.harness.metrics.rows import ImageRows
from diffzoo.harness.metrics.verdict import DETECTOR, EDITED_AREA, ImageRule, edited


@dataclass(frozen=True)
class MetricConfig:
    """What a metric state was built with; two states merge only if equal."""

    names: tuple[str, ...]  # classes of the task's label space
    task: str
    area_threshold: float
    score_threshold: float
    auc_bins: int
    top_k: tuple[int, ...]

    @property
    def num_classes(self) -> int:
        return len(self.names)

    @property
    def image_rule(self) -> ImageRule:
        """The image thresholds images are judged with (:mod:`.verdict`)."""
        return ImageRule(self.area_threshold, self.score_threshold)


def _wmean(w: np.ndarray, values: np.ndarray, mask: np.ndarray) -> float:
    """Weighted mean of ``values`` over ``mask``; NaN if no weight there."""
    wm = w[mask]
    return float(ratio(np.sum(wm * values[mask]), wm.sum()))


def _wsum(w: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """sum_i w_i * rows_i.  einsum, not BLAS: a fixed summation order and no
    thread start-up (a threaded BLAS took milliseconds per call here)."""
    return np.einsum("i,ij->j", w, rows)


class Aggregator:
    """Per-image rows in canonical order plus the per-image values derived from them."""

    def __init__(self, rows: ImageRows, cfg: MetricConfig, score_source: str):
        self.cfg = cfg
        self.order = order = rows.canonical_order()
        self.n = len(order)
        c = cfg.num_classes
        self.conf = conf = rows.array("conf")[order].astype(np.float64)  # n x C*C
        tp, fp, fn, _ = binary_counts(conf.reshape(self.n, c, c))
        valid = conf.sum(axis=1)
        has_pred = rows.array("has_pred")[order]
        label = rows.array("label")[order]
        self.edited, self.authentic = label == 1, label == 0

        self.frac = np.where(has_pred, ratio(tp + fp, valid), np.nan)
        self.img_iou = cast(np.ndarray, ratio(tp, tp + fp + fn))  # per image: 1-D
        self.giou_mask = self.edited & has_pred
        # IMDL-BenCo's per-image pixel F1 and IoU (evaluation/F1.py PixelF1 'origin', IOU.py), as
        # OpenSDI reports them: each scored image's own value averaged, an image without edited
        # pixels scoring 0 whatever the prediction (gIoU leaves authentic images out instead)
        self.benco_mask = (label >= 0) & has_pred
        self.img_f1_benco = np.where(self.edited, ratio(2 * tp, 2 * tp + fp + fn), 0.0)
        self.img_iou_benco = np.where(self.edited, self.img_iou, 0.0)
        self.fpr_mask = self.authentic & np.isfinite(self.frac)
        self.area_positive = edited(self.frac, EDITED_AREA, cfg.image_rule)

        score = rows.array("det_score")[order] if score_source == DETECTOR else self.frac
        self.img_mask = (label >= 0) & np.isfinite(score)
        self.predicted_edited = edited(score, score_source, cfg.image_rule)  # the verdict predict prints
        self.correct = self.predicted_edited == self.edited
        self.ranked = RankedScores(self.edited[self.img_mask], score[self.img_mask])

        bf1 = rows.array("bf1")[order]
        self.bf1_scored = (~np.isnan(bf1)).astype(np.float64)
        self.bf1_filled = np.where(np.isnan(bf1), 0.0, bf1)
        self.bf1_image = cast(np.ndarray, nanmean(bf1, axis=1)) if bf1.shape[1] else np.full(self.n, np.nan)
        self.topk = rows.array("topk")[order]

    def summarize(self, w: np.ndarray | None = None, pixel_auc: float = float("nan"),
                  f1_oracle: float = float("nan")) -> dict[str, float]:
        """Every metric of ``compute()`` with image i weighted by ``w[i]`` (default 1).

        ``pixel_auc`` and ``f1_oracle`` come from the dataset's pixel
        histograms, which are not kept per image (NaN in slices).
        ``img_Acc_oracle`` is the accuracy at the best image threshold for
        these very images: an oracle number, never a headline one.
        """
        cfg = self.cfg
        w = np.ones(self.n) if w is None else np.asarray(w, dtype=np.float64)
        c = cfg.num_classes
        out = pixel_metrics(_wsum(w, self.conf).reshape(c, c), cfg.names)
        cIoU = out.pop("cIoU")
        out["pixel_AUC"] = pixel_auc
        out["F1_oracle"] = f1_oracle

        per_class = cast(np.ndarray, ratio(_wsum(w, self.bf1_filled), _wsum(w, self.bf1_scored)))  # per class: 1-D
        out["bF1"] = float(nanmean(per_class)) if np.size(per_class) else float("nan")
        out["bF1_image_mean"] = _wmean(w, self.bf1_image, ~np.isnan(self.bf1_image))
        out["gIoU"] = _wmean(w, self.img_iou, self.giou_mask)
        out["cIoU"] = cIoU
        out["FPR_authentic"] = _wmean(w, self.area_positive, self.fpr_mask)
        out["F1_benco"] = _wmean(w, self.img_f1_benco, self.benco_mask)
        out["IoU_benco"] = _wmean(w, self.img_iou_benco, self.benco_mask)

        out["img_Acc"] = _wmean(w, self.correct, self.img_mask)
        out["img_real_Acc"] = _wmean(w, self.correct, self.img_mask & self.authentic)
        out["img_edited_Acc"] = _wmean(w, self.correct, self.img_mask & self.edited)
        w_img = w[self.img_mask]
        out["img_AP"] = self.ranked.average_precision(w_img)
        out["img_AUC"] = self.ranked.auc(w_img)
        out["img_Acc_oracle"] = self.ranked.best_accuracy(w_img)[0]

        for i, k in enumerate(cfg.top_k):
            out[f"top{k}"] = _wmean(w, self.topk[:, i] == 1, self.topk[:, i] >= 0)
        out.update(self.counts(w))
        return {k: (v if isinstance(v, int) else float(v)) for k, v in out.items()}

    def counts(self, w: np.ndarray) -> dict[str, int]:
        """The images, edited and authentic ones (:data:`.catalog.COUNT_METRICS`), image i weighted by ``w[i]``."""
        parts = (w, w[self.edited], w[self.authentic])
        return {name: int(round(part.sum())) for name, part in zip(COUNT_METRICS, parts, strict=True)}
