"""Metrics of diffzoo: streaming, mergeable, tested against independent references.

The definitions are those of docs/metrics.md.  The runner
uses :class:`EvalState`; the functions below are its building blocks, public
so that they can be tested and reused.
"""

from diffzoo.harness.core.lazy import lazy_exports

# Each name is imported from its module on first use (the suites import the catalog, and
# `diffzoo list` stays free of numpy and SciPy).  No exported name may also name a module
# here: once that module is imported, the package attribute is the module, not the name
# (hence boundaries.py, which defines `boundary`).
_EXPORTS = {
    "AREA_THRESHOLD": ".catalog",
    "EVAL_TASKS": ".state",
    "EvalState": ".state",
    "METRICS_VERSION": ".state",
    "MetricConfig": ".aggregate",
    "SCORE_THRESHOLD": ".catalog",
    "SLICE_KEYS": ".catalog",
    "average_precision": ".image_level",
    "boundary": ".boundaries",
    "boundary_f1": ".boundaries",
    "confusion_counts": ".confusion",
    "editor_ranking": ".attribution",
    "histogram_auc": ".pixel_auc",
    "iou_per_class": ".confusion",
    "per_class_bf1": ".boundaries",
    "pixel_metrics": ".confusion",
    "prediction_digest": ".state",
    "prob_histograms": ".pixel_auc",
    "roc_auc": ".image_level",
    "tolerance": ".boundaries",
    "topk_hits": ".attribution",
}
__getattr__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
