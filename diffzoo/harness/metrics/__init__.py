"""Metrics of diffzoo: streaming, mergeable, tested against independent references.

The definitions are those of METRICS.md (see docs/metrics.md).  The runner
uses :class:`EvalState`; the functions below are its building blocks, public
so that they can be tested and reused.

The DiffSeg30k paper does not say which bF1 it used; diffzoo uses Csurka et
al. 2013 / MATLAB bfscore style with theta = 0.75% of the diagonal.
"""

from .aggregate import MetricConfig
from .attribution import editor_ranking, topk_hits
from .boundary import boundary, boundary_f1, per_class_bf1, tolerance
from .confusion import confusion_counts, iou_per_class, pixel_metrics
from .image_level import average_precision, roc_auc
from .pixel_auc import histogram_auc, prob_histograms
from .slices import SLICE_KEYS
from .state import AREA_THRESHOLD, EVAL_TASKS, METRICS_VERSION, SCORE_THRESHOLD, EvalState, prediction_digest

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
