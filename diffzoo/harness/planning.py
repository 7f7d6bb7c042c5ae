"""Planning a run: which models must exist for which cases.

Every suite case names its training data; equal training specs are merged so
each model is trained (or loaded) once.  Each model gets a cache key hashed
from (detector card, train config, dataset fingerprint, subset, seed, task,
label space).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from .cards import DetectorCard
from .checkpoints import cache_key
from .errors import ConfigError
from .protocols import Dataset
from .suites import Case, Suite, TrainSpec
from .trainer import TrainConfig


@dataclass
class TrainingJob:
    spec: TrainSpec
    config: TrainConfig
    key: str
    cases: list[tuple[Suite, Case]] = field(default_factory=list)

    @property
    def task(self) -> str:
        return self.spec.task


@dataclass
class Plan:
    card: DetectorCard
    dataset: Dataset
    fingerprint: str
    jobs: list[TrainingJob]

    def describe(self) -> list[str]:
        lines = []
        for job in self.jobs:
            cases = ", ".join(f"{s.name}/{c.name}" for s, c in job.cases)
            lines.append(f"{self.card.name} [{job.task}] on {job.spec.split} -> {cases} (key {job.key})")
        return lines


def make_plan(
    card: DetectorCard,
    suites: list[Suite],
    dataset: Dataset,
    config: TrainConfig,
    fingerprint: str,
) -> Plan:
    jobs: dict[TrainSpec, TrainingJob] = {}
    for suite in suites:
        for case in suite.cases:
            spec = case.train
            if spec.task not in card.tasks:
                raise ConfigError(
                    f"suite {suite.name!r} case {case.name!r} needs a {spec.task} model; "
                    f"{card.name} supports {', '.join(card.tasks)}"
                )
            if spec not in jobs:
                key = cache_key(
                    card=card.to_dict(),
                    train=config.to_dict(),
                    dataset=fingerprint,
                    subset=spec.to_dict(),
                    seed=config.seed,
                    label_space=list(dataset.label_space.names) if spec.task == "semantic" else None,
                )
                jobs[spec] = TrainingJob(spec, config, key)
            jobs[spec].cases.append((suite, case))
    return Plan(card, dataset, fingerprint, list(jobs.values()))


def training_ids(dataset: Dataset, spec: TrainSpec) -> list[str]:
    """Sample ids of the training subset (held-out editors removed)."""
    if spec.split not in dataset.splits():
        raise ConfigError(
            f"dataset {dataset.name} has no {spec.split!r} split (it has {', '.join(dataset.splits())})"
        )
    ids = dataset.ids(spec.split)
    if not spec.exclude_editors:
        return ids
    excluded = {dataset.label_space.index(e) for e in spec.exclude_editors}
    keep = []
    for sid in ids:
        # reads every label map once; a manifest-based filter is faster where one exists
        if not set(np.unique(dataset.load(sid).label).tolist()) & excluded:
            keep.append(sid)
    return keep

