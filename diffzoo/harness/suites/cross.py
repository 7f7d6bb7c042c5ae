"""The ``cross-dataset`` suite: the run's model scored on other datasets.

A model trained on the run's dataset (``--dataset``) is evaluated on each
dataset named by ``--eval-dataset PATH[:SPLIT]`` (repeatable): binary
localization and image-level detection from the binary mask, as OpenSDI's
board ranks localizers trained on one generator and tested on others.  Its
cases carry the option ``eval_dataset: other``; the runner gives each
evaluation dataset its own copy of them, with the split it reads (``SPLIT``,
default ``test`` where the dataset has one, else ``val``), and each record
names the evaluation dataset in ``dataset`` and the training dataset
(fingerprint, label map, split scheme) in ``config.train_dataset``, both
part of its identity.
"""

from __future__ import annotations

from diffzoo.harness.suites.model import Case, Suite
from diffzoo.harness.suites.standard import BINARY_TRAIN, IMAGE_METRICS, LOCALIZATION_METRICS, PIXEL_METRICS

EVAL_OPTION = ("eval_dataset", "other")
"""The option that marks a case evaluated on the ``--eval-dataset`` datasets, not the run's."""
EVAL_SPLITS = ("test", "val")
"""The split an ``--eval-dataset`` without ``:SPLIT`` reads: the first of these it has."""

CROSS_DATASET = Suite(
    name="cross-dataset",
    version="1",
    description=(
        "The model trained on --dataset, evaluated on each --eval-dataset PATH[:SPLIT] (repeatable; default "
        "split test, else val): binary localization and image-level detection from the binary mask."
    ),
    cases=(
        Case(name="binary", task="binary", train=BINARY_TRAIN, metrics=PIXEL_METRICS + LOCALIZATION_METRICS,
             description="edited vs unedited pixels, on another dataset", options=(EVAL_OPTION,)),
        Case(name="image", task="image", train=BINARY_TRAIN, metrics=IMAGE_METRICS,
             description="image-level detection from the binary mask (1% area rule), on another dataset",
             options=(EVAL_OPTION,)),
    ),
    changelog=("1: binary and image cases on each --eval-dataset.",),
)


def is_cross(case: Case) -> bool:
    """True for a case evaluated on the ``--eval-dataset`` datasets."""
    return case.option(EVAL_OPTION[0]) == EVAL_OPTION[1]
