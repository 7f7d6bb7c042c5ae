"""The image verdict: whether an image counts as edited, one rule for every user.

An image has one image score and its source says what the score is:

- ``detector``: the detector's own image probability, compared with the ``score`` threshold;
- ``edited_area``: the predicted edited-area fraction, compared with the ``area`` threshold.

The image is edited if score > the threshold of its source (strict; a NaN score is never
edited).  Evaluation (:class:`~.aggregate.Aggregator`, every image-level number and row
of the leaderboard) and ``diffzoo predict`` both decide with :func:`edited` /
:func:`image_verdict`, and a record's image rule text is :func:`rule_text`.  A detector
that gives pixels and its own score has two image rows, one per source
(:func:`row_name`).  The default thresholds are ``AREA_THRESHOLD`` and
``SCORE_THRESHOLD`` (:mod:`.catalog`); a calibrated run records its own
(``records/policy.py``).  No numpy here: the comparisons work on floats and arrays alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from diffzoo.harness.metrics.catalog import AREA_THRESHOLD, SCORE_THRESHOLD

DETECTOR, EDITED_AREA = "detector", "edited_area"
SOURCES = (DETECTOR, EDITED_AREA)
"""What an image score can be: the detector's own probability, or the predicted edited-area fraction."""
EDITED, AUTHENTIC = "edited", "authentic"
OWN_SCORE_ROW = "{} (own image score)"
"""The table row of a detector's image cases judged by its own score (beside the area row ``NAME``)."""
CALIBRATED_ROW = "{} (calibrated)"
"""A row of thresholds calibrated on a validation split (``--thresholds calibrated``): never the
row of the same model's fixed thresholds."""


class ImageThresholds(Protocol):
    """The two image thresholds (``records.policy.Thresholds`` and :class:`ImageRule` have them)."""

    @property
    def area(self) -> float: ...

    @property
    def score(self) -> float: ...


@dataclass(frozen=True)
class ImageRule:
    """Image thresholds alone: ``area`` on the edited-area fraction, ``score`` on the detector's own probability."""

    area: float = AREA_THRESHOLD
    score: float = SCORE_THRESHOLD


def image_threshold(source: str, thresholds: ImageThresholds) -> float:
    """The threshold a score of ``source`` is compared with."""
    if source == DETECTOR:
        return thresholds.score
    if source == EDITED_AREA:
        return thresholds.area
    raise ValueError(f"image score source must be one of {', '.join(SOURCES)}, got {source!r}")


def edited(score: Any, source: str, thresholds: ImageThresholds) -> Any:
    """score > the threshold of ``source``: a bool for a float, a bool array for an array."""
    return score > image_threshold(source, thresholds)


def rule_text(source: str, thresholds: ImageThresholds) -> str:
    """The rule in words: ``edited if predicted edited area > 0.01 of the image`` /
    ``edited if image probability > 0.5``."""
    threshold = threshold_text(image_threshold(source, thresholds))
    if source == DETECTOR:
        return f"edited if image probability > {threshold}"
    return f"edited if predicted edited area > {threshold} of the image"


def threshold_text(value: float) -> str:
    """A threshold as the rule applies it: short where that is exact (``0.5``), else in full
    (a calibrated 0.4999999701976776 is never shown as 0.5, another rule)."""
    return short if float(short := f"{value:g}") == value else repr(float(value))


def row_name(detector: str, source: str, gives_pixels: bool, calibrated: bool = False) -> str:
    """The leaderboard row that judges a detector's images by ``source``: ``NAME`` for the
    area rule and for a classifier's score, ``NAME (own image score)`` for the own score of a
    detector that also gives pixels; either ``... (calibrated)`` for calibrated thresholds."""
    name = OWN_SCORE_ROW.format(detector) if source == DETECTOR and gives_pixels else detector
    return CALIBRATED_ROW.format(name) if calibrated else name


@dataclass(frozen=True)
class ImageVerdict:
    """One image judged by one score: ``edited`` = score > threshold (:func:`edited`)."""

    edited: bool
    score: float
    source: str
    threshold: float

    @property
    def label(self) -> str:
        """``edited`` or ``authentic``."""
        return EDITED if self.edited else AUTHENTIC

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.label, "source": self.source, "score": self.score, "threshold": self.threshold}


def image_verdict(score: float, source: str, thresholds: ImageThresholds) -> ImageVerdict:
    """The verdict on one image whose image score of ``source`` is ``score``."""
    return ImageVerdict(bool(edited(score, source, thresholds)), float(score), source,
                        image_threshold(source, thresholds))
