"""Metrics of diffzoo: streaming, mergeable, tested against independent references.

The definitions are those of METRICS.md (see docs/metrics.md).  The runner
uses :class:`EvalState`; the functions below are its building blocks, public
so that they can be tested and reused.

The DiffSeg30k paper does not say which bF1 it used; diffzoo uses Csurka et
al. 2013 / MATLAB bfscore style with theta = 0.75% of the diagonal.
"""

from diffzoo.harness.metrics.aggregate import MetricConfig
from diffzoo.harness.metrics.attribution import editor_ranking, topk_hits
from diffzoo.harness.metrics.boundary import boundary, boundary_f1, per_class_bf1, tolerance
from diffzoo.harness.metrics.confusion import confusion_counts, iou_per_class, pixel_metrics
from diffzoo.harness.metrics.image_level import average_precision, roc_auc
from diffzoo.harness.metrics.pixel_auc import histogram_auc, prob_histograms
from diffzoo.harness.metrics.slices import SLICE_KEYS
from diffzoo.harness.metrics.state import AREA_THRESHOLD, EVAL_TASKS, METRICS_VERSION, SCORE_THRESHOLD, EvalState, prediction_digest

__all__ = [
    "METRICS_VERSION",
    "AREA_THRESHOLD",
    "SCORE_THRESHOLD",
    "EVAL_TASKS",
    "SLICE_KEYS",
    "EvalState",
    "prediction_digest",
    "MetricConfig",
    "boundary",
    "boundary_f1",
    "per_class_bf1",
    "tolerance",
    "confusion_counts",
    "iou_per_class",
    "pixel_metrics",
    "histogram_auc",
    "prob_histograms",
    "average_precision",
    "roc_auc",
    "editor_ranking",
    "topk_hits",
]
