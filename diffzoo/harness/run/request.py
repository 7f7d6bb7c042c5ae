"""What a run is asked to do: :class:`RunRequest`, the first step of
request -> plan -> train or load -> evaluate -> record (``diffzoo.evaluate``
builds one from its options, ``diffzoo run`` from its command line)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from diffzoo.harness.run.thresholds import DEFAULT_CALIBRATION_SPLIT


@dataclass
class RunRequest:
    detector: str
    suites: str = "all"
    dataset: str = "mini"
    checkpoints: list[Path] = field(default_factory=list)
    train: bool = True
    seed: int = 0
    device: str = "auto"
    strict: bool = False
    pretrained: bool | None = None
    train_overrides: dict[str, Any] = field(default_factory=dict)
    dataset_options: dict[str, Any] = field(default_factory=dict)
    bootstrap: int = 1000
    out: Path | None = None
    thresholds: str = "fixed"  # fixed | calibrated (on calibration_split)
    calibration_split: str = DEFAULT_CALIBRATION_SPLIT
    unseen_pairs: list[tuple[str, str]] = field(default_factory=list)  # replaces the paper's pairs
    generators: dict[str, str] = field(default_factory=dict)  # generator a suite names -> card to use
    save_every: int | None = None  # training steps between resume saves; None: a tenth of the run, 0: never
    workers: int | None = None  # loader processes; None: $DIFFZOO_WORKERS or by device (core/parallel.default_workers)
