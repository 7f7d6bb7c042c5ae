"""Planning a run: which models must exist for which cases.

Every suite case names its training data; equal training specs are merged so
each model is trained (or loaded) once.  Each model gets a cache key hashed
from (detector card, train config, dataset fingerprint, subset, seed, task,
label space).

An image-level classifier (a card whose only task is ``classification``)
serves a suite's image-level cases with a classification model trained on
the case's data; the pixel cases it cannot serve are skipped and listed in
the plan, not an error.  Any other detector lacking a case's task is an error.

A model's cases are then grouped into passes (:func:`passes`): one pass
over a split per distinct distortion, the undistorted pass first, so that a
pass that would feed the detector the undistorted pass's very input (a
``rescale`` at the training resolution, a ``resize`` that is a no-op) reuses
its predictions instead of running again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any

from diffzoo.harness.core import distributed
from diffzoo.harness.core.cards import DetectorCard, stable_hash
from diffzoo.harness.models.checkpoints import cache_key
from diffzoo.harness.data.editor_index import select_ids
from diffzoo.harness.data.mask_encoding import is_binary_space
from diffzoo.harness.core.errors import ConfigError
from diffzoo.harness.run.evaluate import same_input
from diffzoo.harness.core.plugins import get_registry
from diffzoo.harness.core.protocols import Dataset
from diffzoo.harness.suites import Case, Suite, TrainSpec, is_cross
from diffzoo.harness.core.train_config import TrainConfig

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
            recipe = f", {job.config.recipe} recipe" if job.config.recipe != "native" else ""
            lines.append(f"{self.card.name} [{job.task}] on {job.spec.split}{held_out}{recipe} -> {cases} "
                         f"(key {job.key})")
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
    if "semantic" in (spec.task, case.task) and is_binary_space(dataset.label_space):
        return None, (f"dataset {dataset.name} has binary masks (one class, 'edited'): the semantic task "
                      "needs per-editor labels")
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


NO_EVAL_DATASET = ("no --eval-dataset given: this case evaluates the model on other datasets "
                   "(--eval-dataset PATH[:SPLIT], repeatable)")


def make_plan(
    card: DetectorCard,
    suites: list[Suite],
    dataset: Dataset,
    config: TrainConfig,
    fingerprint: str,
    eval_datasets: bool = False,
) -> Plan:
    """The models ``suites`` need of ``card`` on ``dataset`` (``eval_datasets``: whether the
    cross-dataset cases have datasets to evaluate; without, they are skipped, saying so)."""
    jobs: dict[TrainSpec, TrainingJob] = {}
    skipped: list[SkippedCase] = []
    for suite in suites:
        for case in suite.cases:
            spec, reason = (None, NO_EVAL_DATASET) if is_cross(case) and not eval_datasets else \
                _train_spec(card, case, dataset)
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


def model_input_size(card: DetectorCard, config: TrainConfig) -> int:
    """The model's input resolution, which ``rescale`` scales: the
    ``crop_size`` it is trained with (segmenters and classifiers alike
    train on crops of that size), or the card's ``input_size`` for a card
    used as built (``trainable=False``)."""
    return config.crop_size if card.trainable else card.input_size


def eval_input(card: DetectorCard, config: TrainConfig, extra_negatives: int | None = None) -> dict[str, Any]:
    """How evaluation brings an image to the detector, as the record says it.

    ``{"recipe": "native"}``: as stored.  ``{"recipe": "paper", "short_side":
    crop_size, "extra_negatives": N}``: shorter side resized to the training
    crop (mmseg's test Resize), logits resized back to the label; ``N`` the
    extra authentic training images (the paper's 5k COCO; 0 = none given).
    An image-level classifier keeps its own training views under ``paper``
    (the mmseg transform is the segmenters'), so it is evaluated as stored
    and its dict has no ``short_side``; so is a card used as built
    (``trainable=False``): it was not trained under the recipe.
    """
    if config.recipe != "paper":
        return {"recipe": config.recipe}
    out: dict[str, Any] = {"recipe": "paper"}
    if not is_image_level(card) and card.trainable:
        out["short_side"] = config.crop_size
    out["extra_negatives"] = int(extra_negatives or 0)
    return out


@dataclass
class Pass:
    """One pass of a model over a split through one distortion, and the cases reading it."""

    split: str
    distortion: str
    params: dict[str, Any]
    members: list[tuple[Suite, Case]] = field(default_factory=list)

    @property
    def is_baseline(self) -> bool:
        return self.distortion == "none" and not self.params


def passes(cases: list[tuple[Suite, Case]], params_of: Any) -> list[Pass]:
    """``cases`` grouped by (split, distortion, parameters) (``params_of(case)``:
    the parameters the case runs with), each split's undistorted pass first."""
    groups: dict[tuple, Pass] = {}
    for suite, case in cases:
        params = params_of(case)
        key = (case.split, case.distortion, stable_hash(params))
        groups.setdefault(key, Pass(case.split, case.distortion, params)).members.append((suite, case))
    return sorted(groups.values(), key=lambda p: not p.is_baseline)


def pass_subsets(dataset: Dataset, p: Pass) -> tuple[dict[tuple, frozenset[str]], list[tuple[Suite, Case]]]:
    """The ids each editor-restricted case of ``p`` reads (by its subset key),
    and the cases whose split has no image of their editors."""
    subset_ids: dict[tuple, frozenset[str]] = {}
    for _, case in p.members:
        if case.editors and case.subset_key not in subset_ids:
            subset_ids[case.subset_key] = subset_of(dataset, case)
    return subset_ids, [(s, c) for s, c in p.members if c.editors and not subset_ids[c.subset_key]]


def subset_of(dataset: Dataset, case: Case) -> frozenset[str]:
    """The ids ``case`` reads; empty when the split has no image of its editors."""
    editors, authentic = case.subset_key
    with distributed.main_first():  # rank 0 builds the editor index into the shared cache
        edited = select_ids(dataset, case.split, editors, authentic=False)
        if edited and authentic:
            return frozenset(select_ids(dataset, case.split, editors, authentic=True))
        return frozenset(edited)


@dataclass
class Baseline:
    """A model's undistorted pass over a split: the ids it read (None: all),
    its metric tasks and its result (None on ranks > 0)."""

    ids: frozenset[str] | None
    tasks: set[str]
    result: Any


def reuses_baseline(dataset: Dataset, p: Pass, ids: list[str] | None, tasks: set[str], baseline: Baseline | None,
                    seen: dict[str, dict[str, tuple[int, int] | None]], short_side: int | None
                    ) -> set[tuple[int, int]] | None:
    """The image sizes of pass ``p`` when it would feed the detector exactly
    the input of the model's undistorted pass on its split (which covered its
    images and tasks), else None.  ``seen``: split -> id -> (h, w) of the
    images this process read (None: unreadable); every rank judges its shard
    and all must agree."""
    if p.is_baseline or baseline is None or not tasks <= baseline.tasks:
        return None
    if baseline.ids is not None and (ids is None or not baseline.ids.issuperset(ids)):
        return None
    sizes_of = seen.get(p.split, {})
    mine = distributed.shard(ids if ids is not None else dataset.ids(p.split))
    sizes = {sizes_of[sid] for sid in mine if sizes_of.get(sid) is not None}
    distortion = get_registry().get("distortion", p.distortion).load()
    same = all(sid in sizes_of for sid in mine) and same_input(distortion, p.params, sizes, short_side)
    return sizes if all(distributed.all_gather(same)) else None


def same_input_note(p: Pass, model: str, sizes: set[tuple[int, int]], short_side: int | None) -> str:
    """The run's note for a pass that reused the undistorted pass's predictions."""
    cases = ", ".join(f"{s.name}/{c.name}" for s, c in p.members)
    what = ", ".join(f"{k}={v}" for k, v in p.params.items())
    shown = ", ".join(f"{w}x{h}" for h, w in sorted(sizes)[:3]) + (" ..." if len(sizes) > 3 else "")
    rule = f"shorter side {short_side}" if short_side else "as stored"
    why = "" if short_side else (" (the native recipe evaluates at the stored size; --recipe paper evaluates at "
                                 "the training resolution, as the DiffSeg30k paper did)")
    return (f"{cases}: {p.distortion} ({what}) feeds {model} the same input as the undistorted pass on "
            f"{p.split} (images {shown}, evaluated {rule}); its numbers are the baseline's, reused, not re-run"
            f"{why}")


def train_config(card: DetectorCard, dataset: Dataset, user: dict[str, Any], pretrained: bool | None,
                 seed: int) -> tuple[TrainConfig, dict[str, Any]]:
    """Card recipe <- dataset's recommended overrides <- the user's overrides
    (``user``: option -> value, None = not given); returns the config and the
    overrides applied (recorded in every record).

    A dataset may give ``lr_scale`` instead of an ``lr``: the card's recipe lr
    times that factor (``mini`` trains from scratch on a tiny budget, so it
    raises every recipe's lr tenfold).
    """
    overrides: dict[str, Any] = dict(dataset.training_overrides)
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

