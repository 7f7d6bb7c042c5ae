"""What a run is asked to do: :class:`RunRequest`, the first step of
request -> plan -> train or load -> evaluate -> record (``diffzoo.evaluate``
builds one from its options, ``diffzoo run`` from its command line)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from diffzoo.harness.models.resume import check_every
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
    log_every: int | None = None  # training steps between log lines; None: models/monitor.default_log_every
    val_every: int | None = None  # training steps between validations; None: 16,000 for --recipe paper, else 0 (off)
    workers: int | None = None  # loader processes; None: $DIFFZOO_WORKERS or by device (core/parallel.default_workers)
    eval_datasets: list[str] = field(default_factory=list)  # cross-dataset suite: PATH_OR_NAME[:SPLIT] each
    eval_dataset_options: dict[str, Any] = field(default_factory=dict)  # adapter options of every --eval-dataset

    def check_cadence(self) -> None:
        """``save_every``, ``log_every`` (at least 1) and ``val_every``: whole numbers of steps, or
        a ConfigError naming the option."""
        check_every(self.save_every)
        check_every(self.log_every, "--log-every", minimum=1)
        check_every(self.val_every, "--val-every")


def eval_dataset_spec(spec: str) -> tuple[str, str | None]:
    """An ``--eval-dataset`` value, ``PATH_OR_NAME[:SPLIT]``, as (dataset, split or None):
    a path that exists is taken whole (its name may hold a colon)."""
    if Path(spec).expanduser().exists() or ":" not in spec:
        return spec, None
    head, _, split = spec.rpartition(":")
    return (head, split or None) if head else (spec, None)
