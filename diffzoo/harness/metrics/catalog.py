"""What each metric name means for tables and validation: its range, which
direction is better, and a short label.

The definitions themselves are in docs/metrics.md and the metric modules; this
catalog only describes the numbers ``EvalState.compute`` returns, so that
records can be validated and published without knowing how they were made.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from diffzoo.harness.core.types import SLICE_SEPARATOR

AREA_THRESHOLD = 0.01
"""Edited if the predicted edited area is above this fraction of the image (DiffSeg30k rule)."""
SCORE_THRESHOLD = 0.5
"""Edited if a detector's own image probability is above this (classifiers)."""
SLICE_KEYS: tuple[str, ...] = ("base", "turns", "multiturn", "editor", "edit_type")
"""The per-image metadata a record's numbers can be sliced by (metrics/slices.py).  These
constants live here, with the names, so that the suites and the record model can name them
without loading the metric code and numpy."""


@dataclass(frozen=True)
class MetricInfo:
    name: str
    label: str
    higher_is_better: bool | None  # None: neither (counts)
    low: float = 0.0
    high: float = 1.0
    percent: bool = True  # shown x100 in tables
    oracle: bool = False  # best threshold chosen on the evaluated split: never a headline number

    @property
    def arrow(self) -> str:
        return {True: "↑", False: "↓", None: ""}[self.higher_is_better]

    def check(self, value: float | None) -> str | None:
        """Why ``value`` is not a valid value of this metric, or None."""
        if value is None:
            return None  # undefined (NaN) is allowed and written as null
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"is {type(value).__name__} {value!r}, not a number"
        if not math.isfinite(value):
            return f"is {value}, not finite (undefined values are written as null)"
        if not self.low <= value <= self.high:
            return f"is {value}, outside its range [{self.low}, {self.high}]"
        return None


_FRACTIONS = {
    # name: (label, higher is better)
    "aAcc": ("aAcc", True),
    "mAcc": ("mAcc", True),
    "mIoU": ("mIoU", True),
    "precision": ("precision", True),
    "recall": ("recall", True),
    "F1": ("F1", True),
    "pixel_AUC": ("pixel AUC", True),
    "bF1": ("bF1", True),
    "bF1_image_mean": ("bF1 (image mean)", True),
    "gIoU": ("gIoU", True),
    "cIoU": ("cIoU", True),
    "FPR_authentic": ("FPR auth.", False),
    "F1_benco": ("F1 (BenCo per-image)", True),
    "IoU_benco": ("IoU (BenCo per-image)", True),
    "img_Acc": ("Acc", True),
    "img_real_Acc": ("real Acc", True),
    "img_edited_Acc": ("edited Acc", True),
    "img_AP": ("AP", True),
    "img_AUC": ("AUC", True),
}
COUNT_METRICS = ("num_images", "num_edited", "num_authentic")
"""Image counts every record carries (not scores: no better direction)."""
_ORACLE = {"F1_oracle": "F1 (oracle thr.)", "img_Acc_oracle": "Acc (oracle thr.)"}
_PARITY = {
    # name: (label, low, high, higher is better)
    "verdict_flip_rate": ("verdicts moved", 0.0, 1.0, False),
    "flip_rate_authentic": ("moved (auth.)", 0.0, 1.0, False),
    "flip_rate_edited": ("moved (edited)", 0.0, 1.0, False),
    "delta_img_Acc": ("ΔAcc", -1.0, 1.0, None),
    "format_shortcut": ("format shortcut", 0.0, 1.0, False),
}

CATALOG: dict[str, MetricInfo] = {
    **{name: MetricInfo(name, label, better) for name, (label, better) in _FRACTIONS.items()},
    **{name: MetricInfo(name, name.replace("num_", "# "), None, 0.0, math.inf, False) for name in COUNT_METRICS},
    **{name: MetricInfo(name, label, True, oracle=True) for name, label in _ORACLE.items()},
    **{name: MetricInfo(name, label, better, low, high) for name, (label, low, high, better) in _PARITY.items()},
}


def metric_info(name: str) -> MetricInfo | None:
    """Info for ``name``; families ``IoU.<class>`` and ``top<k>`` included.
    None for a name the catalog does not know (a plugin's own metric).
    A slice metric ``<metric>@<key>=<value>`` is described like its metric."""
    if SLICE_SEPARATOR in name:
        base, _, where = name.partition(SLICE_SEPARATOR)
        info = metric_info(base)
        return None if info is None else replace(info, name=name, label=f"{info.label} [{where}]")
    if name in CATALOG:
        return CATALOG[name]
    if name.startswith("IoU."):
        return MetricInfo(name, name, True)
    if name.startswith("top") and name[3:].isdigit():
        return MetricInfo(name, f"Top-{name[3:]}", True)
    return None
