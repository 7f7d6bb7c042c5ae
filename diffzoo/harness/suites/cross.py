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

from dataclasses import replace

from diffzoo.harness.suites.model import Case, Suite
from diffzoo.harness.suites.standard import BINARY_TRAIN, IMAGE_METRICS, LOCALIZATION_METRICS, PIXEL_METRICS

BENCO = ("F1_benco", "IoU_benco")
"""IMDL-BenCo's per-image pixel F1 and IoU (the other boards' metric), named apart from F1 and gIoU."""
EVAL_OPTION = ("eval_dataset", "other")
"""The option that marks a case evaluated on the ``--eval-dataset`` datasets, not the run's."""
EVAL_SPLITS = ("test", "val")
"""The split an ``--eval-dataset`` without ``:SPLIT`` reads: the first of these it has."""
EVAL_SPLITS_OPTION = "eval_splits"
"""A preset's case option: the splits (comma-separated) it reads of each ``--eval-dataset``."""
OPENSDI_GENERATORS = ("sd15", "sd2", "sd3", "flux", "sdxl")
"""OpenSDI's test splits, one per generator (HF nebula/OpenSDI_test; OpenSDI, CVPR 2025)."""

CROSS_DATASET = Suite(
    name="cross-dataset",
    version="1",
    description=(
        "The model trained on --dataset, evaluated on each --eval-dataset PATH[:SPLIT] (repeatable; default "
        "split test, else val): binary localization and image-level detection from the binary mask."
    ),
    cases=(
        Case(name="binary", task="binary", train=BINARY_TRAIN, metrics=PIXEL_METRICS + LOCALIZATION_METRICS + BENCO,
             description="edited vs unedited pixels, on another dataset", options=(EVAL_OPTION,)),
        Case(name="image", task="image", train=BINARY_TRAIN, metrics=IMAGE_METRICS,
             description="image-level detection from the binary mask (1% area rule), on another dataset",
             options=(EVAL_OPTION,)),
        Case(name="binary.editor", task="binary", train=BINARY_TRAIN, metrics=("mIoU", "F1", "F1_benco"),
             slice_by="editor", description="binary localization per generator of the other dataset (its images "
             "by the editor their metadata names; none where it names none)", options=(EVAL_OPTION,)),
    ),
    changelog=("1: binary and image cases on each --eval-dataset, and binary per generator.",),
)


def is_cross(case: Case) -> bool:
    """True for a case evaluated on the ``--eval-dataset`` datasets."""
    return case.option(EVAL_OPTION[0]) == EVAL_OPTION[1]


OPENSDI = Suite(
    name="opensdi",
    version="1",
    description=(
        "OpenSDI's protocol (CVPR 2025): the model trained on --dataset (OpenSDI_train, its sd15 split), evaluated "
        "on each generator's test split (sd15, sd2, sd3, flux, sdxl) of --eval-dataset (OpenSDI_test): binary "
        "localization and image-level detection from the binary mask, one column per generator."
    ),
    cases=tuple(replace(case, options=(EVAL_OPTION, (EVAL_SPLITS_OPTION, ",".join(OPENSDI_GENERATORS))))
                for case in CROSS_DATASET.cases if not case.slice_by),  # one generator per split already
    changelog=("1: the cross-dataset cases on OpenSDI's five generator splits.",),
)
