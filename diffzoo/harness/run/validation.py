"""The periodic validation of a training (``--val-every N``): the model as it
stands, scored on the validation split with the evaluation's own path.

The split is ``calib`` when the dataset has one (the split thresholds are
calibrated on, never an evaluated one), else ``val``.  Binary models report
binary mIoU and F1, semantic ones also semantic mIoU, classifiers image-level
accuracy and AP; the thresholds are the fixed ones.  A validation is logged
and plotted (:mod:`~diffzoo.harness.models.monitor`); it never selects a
checkpoint: the final weights are the model (docs/detectors.md).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable

from diffzoo.harness.core import distributed
from diffzoo.harness.core.protocols import Dataset, Detector
from diffzoo.harness.models.monitor import Validation
from diffzoo.harness.run.evaluate import EvalResult
from diffzoo.harness.run.planning import TrainingJob
from diffzoo.harness.suites import Case

log = logging.getLogger(__name__)

SPLITS = ("calib", "val")
"""Where a training is validated, the first the dataset has."""
METRICS = {"binary": (("mIoU", "binary_mIoU"), ("F1", "binary_F1"), ("img_Acc", "img_Acc"), ("img_AP", "img_AP")),
           "semantic": (("mIoU", "semantic_mIoU"),)}
"""Per metric state: (its metric, the name the log gives it)."""

Evaluate = Callable[[Case, set[str], str], "EvalResult | None"]
"""(case, metric tasks, progress text) -> the merged result (None on ranks > 0)."""


def validation_split(dataset: Dataset) -> str | None:
    splits = dataset.splits()
    return next((s for s in SPLITS if s in splits), None)


def validation_metrics(result: EvalResult, pixels: bool) -> dict[str, float]:
    """The logged metrics of one validation pass (``pixels``: a segmenter, else a classifier)."""
    out: dict[str, float] = {}
    for task, state in sorted(result.states.items()):
        if task not in METRICS:
            continue
        values = state.compute()
        for metric, name in METRICS[task]:
            if metric.startswith("img_") == pixels:
                continue  # a segmenter's pixels, a classifier's image scores
            value = values.get(metric, math.nan)
            out[name] = float(value) if value is not None else math.nan
    return out


def make_validation(dataset: Dataset, job: TrainingJob, det: Detector, evaluate: Evaluate) -> Validation | None:
    """The validation of ``job``'s training, or None (said) when ``dataset`` has no validation split."""
    split = validation_split(dataset)
    if split is None:
        log.warning("--val-every: dataset %s has no %s split; the training is not validated",
                    dataset.name, " or ".join(SPLITS))
        return None
    tasks = {"binary", "semantic"} if job.task == "semantic" else {"binary"}
    pixels = job.task != "classification"
    case = Case(name="validation", task="semantic" if job.task == "semantic" else "binary" if pixels else "image",
                train=job.spec, split=split)

    def validate() -> tuple[str, dict[str, float]]:
        result = evaluate(case, tasks, f"validating on {dataset.name}/{split}")
        return split, distributed.broadcast(validation_metrics(result, pixels) if result is not None else {})

    return validate
