"""Planning a run: which models must exist for which cases.

Every suite case names its training data; equal training specs are merged so
each model is trained (or loaded) once.  Each model gets a cache key hashed
from (detector card, train config, dataset fingerprint, subset, seed, task,
label space).

An image-level classifier (a card whose only task is ``classification``)
serves a suite's image-level cases with a classification model trained on
the case's data; the pixel cases it cannot serve are skipped and listed in
the plan, not an error.  Any other detector lacking a case's task is an error.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any

from .cards import DetectorCard
from .checkpoints import cache_key
from .data.editor_index import select_ids
from .errors import ConfigError
from .protocols import Dataset
from .suites import Case, Suite, TrainSpec
from .trainer import TrainConfig

log = logging.getLogger(__name__)

PIXEL_TASKS = ("binary", "semantic")
PLAN_CASES_LISTED = 4
"""A plan line names a suite's cases up to this many, else counts them."""


@dataclass
class TrainingJob:
    spec: TrainSpec
    config: TrainConfig
    key: str
    cases: list[tuple[Suite, Case]] = field(default_factory=list)

    @property
    def task(self) -> str:
        return self.spec.task


@dataclass(frozen=True)
class SkippedCase:
    """A case the detector cannot serve (a classifier on a pixel case, a
    binary-only segmenter on a semantic case), and why."""

    suite: Suite
    case: Case
    reason: str


@dataclass
class Plan:
    card: DetectorCard
    dataset: Dataset
    fingerprint: str
    jobs: list[TrainingJob]
    skipped: list[SkippedCase] = field(default_factory=list)

    def describe(self) -> list[str]:
        """One line per model (its cases; a suite with many of them as a count)
        and one per skipped case."""
        lines = []
        for job in self.jobs:
            by_suite: dict[str, list[str]] = {}
            for suite, case in job.cases:
                by_suite.setdefault(suite.name, []).append(case.name)
            cases = ", ".join(
                ", ".join(f"{name}/{c}" for c in names) if len(names) <= PLAN_CASES_LISTED
                else f"{name} ({len(names)} cases)"
                for name, names in by_suite.items()
            )
            held_out = f" without {'+'.join(job.spec.exclude_editors)}" if job.spec.exclude_editors else ""
            lines.append(f"{self.card.name} [{job.task}] on {job.spec.split}{held_out} -> {cases} (key {job.key})")
        lines.extend(f"skipped {s.suite.name}/{s.case.name}: {s.reason}" for s in self.skipped)
        return lines


def is_image_level(card: DetectorCard) -> bool:
    """True for a pure classifier: image scores, no pixel output."""
    return "classification" in card.tasks and not set(card.tasks) & set(PIXEL_TASKS)


def _missing_editors(dataset: Dataset, case: Case) -> list[str]:
    known = set(dataset.label_space.editors)
    return [e for e in (*case.editors, *case.train.exclude_editors) if e not in known]


def _train_spec(card: DetectorCard, case: Case, dataset: Dataset) -> tuple[TrainSpec | None, str]:
    """The model ``card`` needs for ``case``, or None and why it cannot serve it."""
    spec = case.train
    missing = _missing_editors(dataset, case)
    if missing:
        return None, f"dataset {dataset.name} has no editor {', '.join(missing)}"
    if spec.task in card.tasks:
        return spec, ""
    if is_image_level(card):
        if case.task == "image":  # the case's training data, learnt as image labels
            return replace(spec, task="classification"), ""
        return None, f"{card.name} has no pixel output (image-level classifier)"
    return None, f"{card.name} supports {', '.join(card.tasks)}; this case needs a {spec.task} model"


def make_plan(
    card: DetectorCard,
    suites: list[Suite],
    dataset: Dataset,
    config: TrainConfig,
    fingerprint: str,
) -> Plan:
    jobs: dict[TrainSpec, TrainingJob] = {}
    skipped: list[SkippedCase] = []
    for suite in suites:
        for case in suite.cases:
            spec, reason = _train_spec(card, case, dataset)
            if spec is None:
                log.info("skipping %s/%s: %s", suite.name, case.name, reason)
                skipped.append(SkippedCase(suite, case, reason))
                continue
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
    if not jobs and skipped:
        names = ", ".join(sorted({s.suite.name for s in skipped}))
        raise ConfigError(
            f"{card.name} can serve no case of suite(s) {names}: {skipped[0].reason}"
            + ("; choose a suite with an image-level case (e.g. standard)" if is_image_level(card) else "")
        )
    return Plan(card, dataset, fingerprint, list(jobs.values()), skipped)


def train_config(card: DetectorCard, dataset: Dataset, user: dict[str, Any], pretrained: bool | None,
                 seed: int) -> tuple[TrainConfig, dict[str, Any]]:
    """Card recipe <- dataset's recommended overrides <- the user's overrides
    (``user``: option -> value, None = not given); returns the config and the
    overrides applied (recorded in every record).

    A dataset may give ``lr_scale`` instead of an ``lr``: the card's recipe lr
    times that factor (``mini`` trains from scratch on a tiny budget, so it
    raises every recipe's lr tenfold).
    """
    overrides: dict[str, Any] = dict(getattr(dataset, "training_overrides", {}) or {})
    overrides.update({k: v for k, v in user.items() if v is not None})
    if pretrained is not None:
        overrides["pretrained"] = pretrained
    overrides["seed"] = seed
    recipe = card.recipe_values()
    scale = overrides.pop("lr_scale", None)
    if scale is not None and "lr" not in overrides:
        # a dataset's budget scales each card's own lr (AdamW and SGD recipes differ 100x)
        overrides["lr"] = float(recipe.get("lr", TrainConfig.lr)) * float(scale)
    config = TrainConfig.from_recipe(recipe, **overrides)
    if scale is not None:
        overrides["lr_scale"] = scale
    if config.pretrained and not card.weights:
        config = config.with_overrides(pretrained=False)
    return config, overrides


def training_ids(dataset: Dataset, spec: TrainSpec) -> list[str]:
    """Sample ids of the training subset (held-out editors removed)."""
    if spec.split not in dataset.splits():
        raise ConfigError(
            f"dataset {dataset.name} has no {spec.split!r} split (it has {', '.join(dataset.splits())})"
        )
    if not spec.exclude_editors:
        return dataset.ids(spec.split)
    return select_ids(dataset, spec.split, spec.exclude_editors, authentic=True, exclude=True)

