"""Benchmark suites: versioned, declarative lists of cases.

A case names the split it evaluates, the task, the distortion applied before
the detector, and the training it needs.  Bump a suite's ``version`` and add a
changelog line whenever a change could move a number; a test pins the hash of
every suite definition to its version.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .cards import stable_hash
from .errors import ConfigError
from .types import TASKS


@dataclass(frozen=True)
class TrainSpec:
    """Which data a case's model is trained on, and for which task.

    Equal specs are merged by the runner, so two cases that need the same
    model train it once.
    """

    task: str  # binary | semantic | classification
    split: str = "train"
    exclude_editors: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"task": self.task, "split": self.split, "exclude_editors": list(self.exclude_editors)}


@dataclass(frozen=True)
class Case:
    """One evaluation: a split, a task, a distortion, a model, metrics to report."""

    name: str
    task: str  # the metric task: binary | semantic | image (image-level detection)
    train: TrainSpec
    split: str = "val"
    distortion: str = "none"
    distortion_params: tuple[tuple[str, Any], ...] = ()
    metrics: tuple[str, ...] = ()
    description: str = ""

    def __post_init__(self) -> None:
        if self.task not in ("binary", "semantic", "image"):
            raise ConfigError(f"case {self.name!r}: task must be binary, semantic or image")
        if self.train.task not in TASKS:
            raise ConfigError(f"case {self.name!r}: training task must be one of {TASKS}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "task": self.task,
            "train": self.train.to_dict(),
            "split": self.split,
            "distortion": self.distortion,
            "distortion_params": dict(self.distortion_params),
            "metrics": list(self.metrics),
        }


@dataclass(frozen=True)
class Suite:
    name: str
    version: str
    description: str
    cases: tuple[Case, ...]
    changelog: tuple[str, ...] = field(default=())

    def definition_hash(self) -> str:
        """Hash of everything that can move a number (not the description)."""
        return stable_hash({"name": self.name, "cases": [c.to_dict() for c in self.cases]})

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "definition_hash": self.definition_hash(),
            "cases": [c.to_dict() for c in self.cases],
        }


PIXEL_METRICS = ("aAcc", "mAcc", "mIoU", "bF1", "bF1_image_mean", "precision", "recall", "F1", "pixel_AUC")
IMAGE_METRICS = ("img_Acc", "img_real_Acc", "img_edited_Acc", "img_AP", "img_AUC")

STANDARD = Suite(
    name="standard",
    version="1",
    description=(
        "DiffSeg30k-style evaluation on the validation split: binary localization, "
        "per-editor semantic segmentation, and image-level detection from the "
        "binary segmentation (edited if predicted edited area > 1%)."
    ),
    cases=(
        Case(
            name="binary",
            task="binary",
            train=TrainSpec("binary"),
            metrics=PIXEL_METRICS + ("gIoU", "cIoU", "FPR_authentic"),
            description="edited vs unedited pixels",
        ),
        Case(
            name="semantic",
            task="semantic",
            train=TrainSpec("semantic"),
            metrics=("aAcc", "mAcc", "mIoU", "bF1", "bF1_image_mean", "top1", "top3"),
            description="which editor made each pixel (background + one class per editor)",
        ),
        Case(
            name="image",
            task="image",
            train=TrainSpec("binary"),
            metrics=IMAGE_METRICS,
            description="image-level detection from the binary segmentation (1% area rule)",
        ),
    ),
    changelog=("1: binary, semantic and image-level cases (spine).",),
)
