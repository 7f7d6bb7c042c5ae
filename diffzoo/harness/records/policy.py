"""A record's threshold policy as one typed object: the values the
thresholds had, how they were decided (fixed or calibrated, on what), and
the rule texts made from them.  ``harness/run/record.py``
writes a record's ``threshold_policy`` from it and readers (the run
summary's policy lines) read it back through ``RecordBody.policy``; no one
reads the numbers back from the texts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from diffzoo.harness.core.errors import RecordError
from diffzoo.harness.core.protocols import Detector
from diffzoo.harness.metrics.catalog import AREA_THRESHOLD, SCORE_THRESHOLD
from diffzoo.harness.metrics.verdict import DETECTOR, EDITED_AREA, rule_text, threshold_text
from diffzoo.harness.records.fields import is_number

FIXED_SOURCE = "fixed (detector card; docs/metrics.md / DiffSeg30k 1% rule)"
"""``threshold_policy.source`` of fixed thresholds."""
ORACLE_COLUMNS = "F1_oracle and img_Acc_oracle use the best threshold on the evaluated split"
PIXEL_RULES = {"binary": "edited if probability > {}",
               "semantic": "argmax over classes; edited = argmax != background",
               "classification": "none: image-level classifier (no pixel output)"}
"""The pixel rule of each detector task (``{}``: the pixel threshold's :func:`threshold_text`)."""
MODES = ("fixed", "calibrated")


@dataclass(frozen=True)
class Thresholds:
    """The thresholds one evaluation decides with, and where they came from.

    ``pixel``: edited if probability > pixel (binary models; semantic ones
    use the argmax); ``area`` and ``score``: the image thresholds of the image
    verdict (``metrics/verdict.py``: on the predicted edited-area fraction and
    on a detector's own image probability).  ``source``: ``fixed`` or
    ``calibrated on <split> (<n> images)``.
    """

    pixel: float
    area: float = AREA_THRESHOLD
    score: float = SCORE_THRESHOLD
    source: str = "fixed"

    @classmethod
    def fixed(cls, detector: Detector) -> Thresholds:
        return cls(pixel=detector.card.default_threshold)

    def as_dict(self) -> dict[str, float]:
        """The three numbers, as a record's ``threshold_policy.values`` holds them."""
        return {"pixel": self.pixel, "area": self.area, "score": self.score}


@dataclass(frozen=True)
class ThresholdPolicy:
    """What decided a record's thresholds (``threshold_policy``, written from
    :meth:`to_dict` by ``harness/run/record.py``): ``mode``
    (fixed|calibrated), the detector ``task`` (which pixel rule), the
    ``values``, the ``image_score_source``, where they were
    ``calibrated_on`` and their ``source``.  The rule texts (:attr:`pixel`,
    :attr:`image`) are made from these; a record without ``values`` (written
    before they existed, or by hand) keeps its own texts (``written``)."""

    source: str = "fixed"
    mode: str = "fixed"
    task: str = ""
    values: Thresholds | None = None
    image_score_source: str = ""
    calibrated_on: str | None = None
    written: tuple[str | None, str | None] = (None, None)  # (pixel, image) texts of a record without values

    @classmethod
    def decided(cls, task: str, values: Thresholds, image_score_source: str) -> ThresholdPolicy:
        """The policy of ``values``, decided as ``values.source`` says (``fixed`` or ``calibrated on <split> ...``)."""
        source = values.source
        calibrated = source != "fixed"
        return cls(source if calibrated else FIXED_SOURCE, MODES[calibrated], task, values, image_score_source,
                   source if calibrated else None)

    @classmethod
    def of(cls, policy: dict[str, Any], task: str = "") -> ThresholdPolicy:
        """A record's ``threshold_policy``; ``task``: its detector's task."""

        def text(key: str) -> str | None:
            value = policy.get(key)
            return value if isinstance(value, str) else None

        calibrated_on = policy.get("calibrated_on")
        source = text("source") or (f"calibrated on {calibrated_on}" if calibrated_on else "fixed")
        mode = policy["mode"] if policy.get("mode") in MODES else MODES[bool(calibrated_on)]
        numbers, kind = policy.get("values"), text("image_score_source")
        values = None
        if (isinstance(numbers, dict) and task in PIXEL_RULES and kind is not None
                and all(is_number(numbers.get(k)) for k in ("pixel", "area", "score"))):
            values = Thresholds(numbers["pixel"], numbers["area"], numbers["score"],
                                source if mode == "calibrated" else "fixed")
        return cls(source, mode, task, values, kind or "", text("calibrated_on"), (text("pixel"), text("image")))

    @property
    def pixel(self) -> str | None:
        """The pixel rule (``fixed: edited if probability > 0.5``); None when not known."""
        if self.values is None:
            return self.written[0]
        rule = PIXEL_RULES[self.task].format(threshold_text(self.values.pixel))
        if self.task == "classification":
            return rule
        return f"{MODES[self.mode == 'calibrated' and self.task == 'binary']}: {rule}"

    @property
    def image(self) -> str | None:
        """The image rule (``fixed: edited if predicted edited area > 0.01 of the image``); None when not known."""
        if self.values is None:
            return self.written[1]
        source = DETECTOR if self.image_score_source == DETECTOR else EDITED_AREA
        return f"{self.mode}: {rule_text(source, self.values)}"

    def to_dict(self) -> dict[str, Any]:
        """The record's ``threshold_policy`` (a policy with ``values``)."""
        if self.values is None:
            raise RecordError("a threshold policy without values cannot be written")
        return {"mode": self.mode, "pixel": self.pixel, "image": self.image,
                "image_score_source": self.image_score_source,
                "values": self.values.as_dict(),
                "calibrated_on": self.calibrated_on, "source": self.source, "oracle_columns": ORACLE_COLUMNS}
