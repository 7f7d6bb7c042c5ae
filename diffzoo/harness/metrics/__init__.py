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
_MODULES = {
    ".aggregate": ("MetricConfig",),
    ".attribution": ("editor_ranking", "topk_hits"),
    ".boundaries": ("boundary", "boundary_f1", "per_class_bf1", "tolerance"),
    ".catalog": ("AREA_THRESHOLD", "SCORE_THRESHOLD", "SLICE_KEYS"),
    ".confusion": ("confusion_counts", "iou_per_class", "pixel_metrics"),
    ".image_level": ("average_precision", "roc_auc"),
    ".pixel_auc": ("histogram_auc", "prob_histograms"),
    ".state": ("EVAL_TASKS", "EvalState", "METRICS_VERSION", "prediction_digest"),
}
_EXPORTS = {name: module for module, names in _MODULES.items() for name in names}
__getattr__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
