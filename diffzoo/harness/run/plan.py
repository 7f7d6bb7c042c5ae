"""The plan of a run, as data: which models, which passes over which images, which cases.

:func:`make_plan` turns the resolved request (detector card, suites, dataset, training config,
``--eval-dataset`` datasets, threshold policy) into a :class:`Plan`: one :class:`Job` per
distinct model (equal training specs merged, each with the cache key hashed from card, train
config, dataset fingerprint, subset, seed and label space), each job with

- its evaluation passes (:class:`PassSpec`): one per (dataset, split, distortion, parameters),
  the undistorted pass of a split first, so that a later pass feeding the detector the very
  same input reuses its predictions (the Evaluator decides that from the images' sizes);
  an ``--eval-dataset`` pass is a pass on that dataset;
- its calibration and periodic-validation passes, when the run has them;
- its cases (:class:`CaseSpec`, keyed by one :class:`CaseKey`), each naming the pass it reads
  and the images of it (an editor subset).  A detector whose card declares
  ``gives_image_score`` gets each image case twice: judged by the predicted edited area and
  by its own image score.

An image-level classifier (a card whose only task is ``classification``) serves a suite's
image cases with a classification model trained on the case's data; the pixel cases it
cannot serve are skipped and listed, not an error.  Any other detector lacking a case's task
is an error.  The plan is computed alike on every torchrun rank, with no collective: ``--plan``
prints the very object the run then executes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from diffzoo.harness.core.cards import DetectorCard, Release, stable_hash
from diffzoo.harness.core.errors import ConfigError
from diffzoo.harness.core.plugins import get_registry
from diffzoo.harness.core.protocols import Dataset
from diffzoo.harness.core.train_config import TrainConfig
from diffzoo.harness.core.types import PIXEL_TASKS, CaseTask, JudgedBy, StateKey, Task
from diffzoo.harness.data.authentic import AUTHENTIC_PREFIX
from diffzoo.harness.data.editor_index import editor_index, select_ids
from diffzoo.harness.models.checkpoints import cache_key
from diffzoo.harness.models.monitor import default_val_every
from diffzoo.harness.records.case_summary import judged_by, own_score_case, state_key
from diffzoo.harness.records.model import TrainOverlap
from diffzoo.harness.run.loading import check_params, sets_input_size
from diffzoo.harness.suites import EVAL_SPLITS, EVAL_SPLITS_OPTION, Case, Suite, TrainSpec, is_cross

log = logging.getLogger(__name__)

PLAN_CASES_LISTED = 4
"""A plan line names a suite's cases up to this many, else counts them."""
EVALUATE, CALIBRATE, VALIDATE = "evaluate", "calibrate", "validate"
"""What a pass is for: cases' records, the thresholds, or a training's periodic validation."""
VALIDATION_SPLITS = ("calib", "val")
"""Where a training is validated: the first of these the dataset has (never a split chosen
to pick a checkpoint: the final weights are the model)."""
NO_EVAL_DATASET = ("no --eval-dataset given: this case evaluates the model on other datasets "
                   "(--eval-dataset PATH[:SPLIT], repeatable)")

EvalDataset = tuple[Dataset, "str | None", str]
"""An opened ``--eval-dataset``: (dataset, the split it named or None, the option as given)."""


@dataclass(frozen=True)
class PassSpec:
    """One pass of a model over images through a distortion: what the Evaluator runs.

    ``dataset``: the fingerprint of the dataset read (the run's, or an ``--eval-dataset``'s);
    ``ids``: the images read, in split order (None: the whole split); ``tasks``: the metric
    states it fills (:class:`StateKey`); ``baselines``: also score the constant predictors;
    ``short_side``: the recipe's evaluation input rule (None: as stored); ``purpose``: what it
    is for; ``cases``: the cases reading it, as ``suite/case`` (its notes name them)."""

    dataset: str
    split: str
    distortion: str = "none"
    params: tuple[tuple[str, Any], ...] = ()
    ids: tuple[str, ...] | None = None
    tasks: frozenset[str] = frozenset({StateKey.BINARY})
    baselines: bool = False
    short_side: int | None = None
    purpose: str = EVALUATE
    cases: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """What tells the passes of one job apart."""
        return f"{self.purpose}:{self.dataset}:{self.split}:{self.distortion}:{stable_hash(self.params)}"

    @property
    def distortion_params(self) -> dict[str, Any]:
        return dict(self.params)

    @property
    def undistorted(self) -> bool:
        return self.distortion == "none" and not self.params

    def read(self, datasets: Mapping[str, Dataset]) -> list[str]:
        """The ids of the images it reads, in split order (``datasets``: the plan's, by fingerprint)."""
        return list(self.ids) if self.ids is not None else datasets[self.dataset].ids(self.split)


@dataclass(frozen=True)
class CaseKey:
    """One row of a run: a suite's case, the data it scored (``target``: dataset fingerprint
    and split) and how it judged images (:class:`JudgedBy`)."""

    suite: str
    case: str
    target: tuple[str, str]
    judged_by: JudgedBy = JudgedBy.RULE


@dataclass(frozen=True)
class CaseSpec:
    """A case as the run records it: ``case`` as it goes into the record (a cross-dataset case
    with the split it read, an own-score case with its option), the pass it reads, the images
    of that pass it reads (``ids``; None: all), and the case a format-parity case compares with."""

    key: CaseKey
    suite: Suite
    case: Case
    pass_key: str
    ids: frozenset[str] | None = None
    compare: CaseKey | None = None

    @property
    def state_key(self) -> StateKey:
        return state_key(self.case)

    @property
    def dataset(self) -> str:
        """The fingerprint of the dataset the case scored."""
        return self.key.target[0]


@dataclass(frozen=True)
class Job:
    """One model (trained or loaded once) and everything the run does with it."""

    spec: TrainSpec
    config: TrainConfig
    key: str
    eval_input: Mapping[str, Any]
    passes: tuple[PassSpec, ...] = ()
    cases: tuple[CaseSpec, ...] = ()
    calibration: PassSpec | None = None
    validation: PassSpec | None = None
    val_every: int = 0

    @property
    def task(self) -> str:
        return self.spec.task

    @property
    def held_out(self) -> str:
        """`` without A+B`` for a model trained without some editors, else ''."""
        return f" without {'+'.join(self.spec.exclude_editors)}" if self.spec.exclude_editors else ""


@dataclass(frozen=True)
class SkippedCase:
    """A case the detector cannot serve (a classifier on a pixel case, a binary-only segmenter
    on a semantic case, a cross-dataset case without ``--eval-dataset``), and why."""

    suite: Suite
    case: Case
    reason: str


@dataclass
class Plan:
    card: DetectorCard
    dataset: Dataset
    fingerprint: str
    jobs: list[Job]
    skipped: list[SkippedCase] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Cases planned but without images (their editors are not in the split): no record."""
    datasets: dict[str, Dataset] = field(default_factory=dict)
    """Fingerprint -> dataset, of every dataset a pass reads."""
    detector: str = ""
    models: list[str] = field(default_factory=list)
    """Where each job's model comes from (trained now, the cache, a checkpoint...), job by job."""

    def describe(self) -> list[str]:
        """One line per model (its cases; a suite with many of them as a count) and one per
        skipped case."""
        lines = []
        for i, job in enumerate(self.jobs):
            by_suite: dict[str, dict[str, None]] = {}  # each suite's case names, once each, in order
            for spec in job.cases:
                by_suite.setdefault(spec.suite.name, {})[spec.case.name] = None
            cases = ", ".join(
                ", ".join(f"{name}/{c}" for c in names) if len(names) <= PLAN_CASES_LISTED
                else f"{name} ({len(names)} cases)"
                for name, names in by_suite.items()
            )
            recipe = f", {job.config.recipe} recipe" if job.config.recipe != "native" else ""
            model = f"; {self.models[i]}" if i < len(self.models) else ""
            lines.append(f"{self.card.name} [{job.task}] on {job.spec.split}{job.held_out}{recipe} -> {cases} "
                         f"(key {job.key}){model}")
        lines.extend(f"skipped {s.suite.name}/{s.case.name}: {s.reason}" for s in self.skipped)
        return lines

    def pass_lines(self) -> list[str]:
        """One line per model: how many evaluation passes it makes over how many images, and of
        which datasets and splits (an ``--eval-dataset`` is read there; a pass that turns out to see
        the undistorted input reuses its predictions, so the count is an upper bound)."""
        lines = []
        for job in self.jobs:
            reads = sum(len(p.read(self.datasets)) for p in job.passes)
            data = dict.fromkeys(f"{self.datasets[p.dataset].name}:{p.split}" for p in job.passes)
            lines.append(f"{self.detector or self.card.name} [{job.task}]{job.held_out}: {len(job.passes)} model "
                         f"pass(es), {reads} image reads of {', '.join(data)}")
        return lines


# -- what a model is, and how it sees images ----------------------------------------------------
def is_image_level(card: DetectorCard) -> bool:
    """True for a pure classifier: image scores, no pixel output."""
    return Task.CLASSIFICATION in card.tasks and not set(card.tasks) & set(PIXEL_TASKS)


def model_input_size(card: DetectorCard, config: TrainConfig) -> int:
    """The model's input resolution, which ``rescale`` scales: the ``crop_size`` it is trained
    with (segmenters and classifiers alike train on crops of that size), or the card's
    ``input_size`` for a card used as built (``trainable=False``)."""
    return config.crop_size if card.trainable else card.input_size


def eval_input(card: DetectorCard, config: TrainConfig, extra_negatives: int | None = None) -> dict[str, Any]:
    """How evaluation brings an image to the detector, as the record says it.

    ``{"recipe": "native"}``: as stored.  ``{"recipe": "paper", "short_side": crop_size,
    "extra_negatives": N}``: shorter side resized to the training crop (mmseg's test Resize),
    logits resized back to the label; ``N`` the extra authentic training images (the paper's 5k
    COCO; 0 = none given).  An image-level classifier keeps its own training views under
    ``paper`` (the mmseg transform is the segmenters'), so it is evaluated as stored and its
    dict has no ``short_side``; so is a card used as built (``trainable=False``): it was not
    trained under the recipe.
    """
    if config.recipe != "paper":
        return {"recipe": config.recipe}
    out: dict[str, Any] = {"recipe": "paper"}
    if not is_image_level(card) and card.trainable:
        out["short_side"] = config.crop_size
    out["extra_negatives"] = int(extra_negatives or 0)
    return out


def train_config(card: DetectorCard, dataset: Dataset, user: dict[str, Any], pretrained: bool | None,
                 seed: int) -> tuple[TrainConfig, dict[str, Any]]:
    """Card recipe <- dataset's recommended overrides <- the user's overrides (``user``: option
    -> value, None = not given); returns the config and the overrides applied (recorded in
    every record).

    A dataset may give ``lr_scale`` instead of an ``lr``: the card's recipe lr times that
    factor (``mini`` trains from scratch on a tiny budget, so it raises every recipe's lr
    tenfold).
    """
    overrides: dict[str, Any] = dict(dataset.training_overrides)
    overrides.update({k: v for k, v in user.items() if v is not None})
    if pretrained is not None:
        overrides["pretrained"] = pretrained
    overrides["seed"] = seed
    try:  # the card's own values are named as its, and are numbers before a dataset's lr_scale multiplies one
        config = TrainConfig.from_recipe(card.recipe_values())
    except ConfigError as exc:
        raise ConfigError(f"detector card {card.name}: its recipe gives {exc}") from None
    scale = overrides.pop("lr_scale", None)
    if scale is not None and "lr" not in overrides:
        # a dataset's budget scales each card's own lr (AdamW and SGD recipes differ 100x)
        overrides["lr"] = config.lr * float(scale)
    config = config.with_overrides(**overrides)
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
    if not (ids := select_ids(dataset, spec.split, spec.exclude_editors, authentic=True, exclude=True)):
        raise ConfigError(f"leaving out editors {', '.join(spec.exclude_editors)} leaves none of the "
                          f"{len(dataset.ids(spec.split))} images of {dataset.name}'s {spec.split!r} split to train on")
    if not any(editor_index(dataset, spec.split).get(sid) for sid in ids):  # the index select_ids just read
        raise ConfigError(f"leaving out editors {', '.join(spec.exclude_editors)} leaves no edited image among the "
                          f"{len(ids)} of {dataset.name}'s {spec.split!r} split it keeps, and a model that never "
                          "saw one is not scored")
    return ids


def case_targets(case: Case, eval_datasets: Iterable[EvalDataset]) -> list[tuple[Dataset, str]]:
    """The (dataset, split) pairs a cross-dataset case reads: the split an ``--eval-dataset``
    names; else the case's own splits (a preset such as ``opensdi``: those the dataset has);
    else ``test``, or ``val``."""
    preset = tuple(s for s in str(case.option(EVAL_SPLITS_OPTION, "")).split(",") if s)
    targets = []
    for ds, split, spec in eval_datasets:
        if split is not None:
            targets.append((ds, split))
            continue
        wanted = [s for s in preset if s in ds.splits()] if preset else \
            [next((s for s in EVAL_SPLITS if s in ds.splits()), "")][:1]
        if not [s for s in wanted if s]:
            raise ConfigError(f"--eval-dataset {spec}: dataset {ds.name} has no split "
                              f"{' or '.join(preset or EVAL_SPLITS)} (it has {', '.join(ds.splits())}); "
                              "name the one to evaluate as PATH:SPLIT")
        targets += [(ds, s) for s in wanted]
    return targets


# -- held out ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TrainingData:
    """What a job's model was trained on: the ``ids`` of ``split`` of ``dataset`` (of
    ``fingerprint``); ``model`` names the model in a refusal."""

    dataset: Dataset
    fingerprint: str
    split: str
    ids: frozenset[str]
    model: str

    def to_dict(self) -> dict[str, str]:
        return {"name": self.dataset.name, "fingerprint": self.fingerprint, "split": self.split}


Digests = Callable[[Dataset, Sequence[str]], Mapping[str, str | None]]
"""(dataset, ids) -> sample id -> the content digest of its image (run/loading.image_digests; None:
unreadable)."""


def case_images(plan: Plan, job: Job, case: CaseSpec) -> list[str]:
    """The ids of the images ``case`` scores (its pass's, cut to its own), in split order."""
    ids = next(p for p in job.passes if p.key == case.pass_key).read(plan.datasets)
    return ids if case.ids is None else [i for i in ids if i in case.ids]


def shared_images(plan: Plan, target: str, ids: Sequence[str], training: TrainingData, digests: Digests) -> int:
    """How many of ``ids`` (of the dataset of fingerprint ``target``) are images ``training`` holds:
    a split of the training data itself (the same fingerprint fixes every id's content) shares
    the training ids it holds; images from elsewhere, another dataset's or the extra authentic
    images added to training (ids of their own), are shared where their content digests meet."""
    same = target == training.fingerprint
    elsewhere = sorted(i for i in training.ids if not same or i.startswith(AUTHENTIC_PREFIX))
    trained = set(digests(training.dataset, elsewhere).values()) - {None} if elsewhere else set()
    theirs = digests(plan.datasets[target], ids) if trained else {}
    return sum((same and i in training.ids) or theirs.get(i) in trained for i in ids)


def authentic_copies(training: TrainingData, digests: Digests) -> int:
    """How many of the extra authentic images ``training`` holds (ids of their own, read as
    unedited) are copies of its other images, which the training split labels as it does."""
    extra = sorted(i for i in training.ids if i.startswith(AUTHENTIC_PREFIX))
    own = set(digests(training.dataset, sorted(training.ids - set(extra))).values()) - {None} if extra else set()
    return sum(d in own for d in digests(training.dataset, extra).values()) if own else 0


def train_overlaps(plan: Plan, job: Job, training: TrainingData, digests: Digests) -> dict[CaseKey, TrainOverlap]:
    """The cases of ``job`` that score images its model was trained on (``training``), each with
    how many (:func:`shared_images`)."""
    out = {}
    for case in job.cases:
        ids = case_images(plan, job, case)
        if shared := shared_images(plan, case.key.target[0], ids, training, digests):
            out[case.key] = TrainOverlap(shared, len(ids), training.to_dict())
    return out


def release_overlaps(plan: Plan, job: Job, release: Release) -> dict[CaseKey, TrainOverlap]:
    """The cases of ``job`` that score a dataset its released model was trained on (the
    release's ``train_datasets``, by adapter name): every image of such a case counts as a
    training image, since the release says the whole set was trained on."""
    out = {}
    for case in job.cases:
        fingerprint, split = case.key.target
        dataset = plan.datasets[fingerprint]
        if dataset.name in release.train_datasets:
            ids = case_images(plan, job, case)
            if ids:
                out[case.key] = TrainOverlap(len(ids), len(ids), {"name": dataset.name, "fingerprint": fingerprint,
                                                                  "split": f"released:{release.name}"})
    return out


# -- the plan -------------------------------------------------------------------------------------
def _binary_masks(dataset: Dataset) -> str:
    return (f"dataset {dataset.name} has binary masks (one class, 'edited'): the semantic task needs per-editor "
            "labels")


def _train_spec(card: DetectorCard, case: Case, dataset: Dataset,
                release: Release | None = None) -> tuple[TrainSpec | None, str]:
    """The model ``card`` needs for ``case``, or None and why it cannot serve it; with
    ``release``, the released model scores every case it can, as released."""
    spec = case.train
    if release is not None:
        if spec.exclude_editors:
            return None, (f"released weights {release.name} were not trained here: a case that holds editors out "
                          "of training needs a model trained without them")
        if spec.task not in release.tasks and not (case.task == CaseTask.IMAGE and Task.BINARY in release.tasks):
            return None, f"released weights {release.name} are a {'/'.join(release.tasks)} model"
    if Task.SEMANTIC in (spec.task, case.task) and dataset.label_space.is_binary:
        return None, _binary_masks(dataset)
    known = set(dataset.label_space.editors)
    missing = [e for e in dict.fromkeys((*case.editors, *case.train.exclude_editors)) if e not in known]
    if missing:
        return None, f"dataset {dataset.name} has no editor {', '.join(missing)}"
    if spec.task in card.tasks:
        return spec, ""
    if is_image_level(card):
        if case.task == CaseTask.IMAGE:  # the case's training data, learnt as image labels
            return replace(spec, task=Task.CLASSIFICATION.value), ""
        return None, f"{card.name} has no pixel output (image-level classifier)"
    return None, f"{card.name} supports {', '.join(card.tasks)}; this case needs a {spec.task} model"


@dataclass
class _Planner:
    """What every job of one plan shares."""

    card: DetectorCard
    dataset: Dataset
    config: TrainConfig
    fingerprint: str
    eval_datasets: list[EvalDataset]
    substitutes: dict[str, str]
    calibration_split: str | None
    val_every: int | None
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.eval_input = eval_input(self.card, self.config, self.dataset.describe().get("extra_authentic"))

    def job(self, spec: TrainSpec, members: Sequence[tuple[Suite, Case]] = ()) -> Job:
        """The job of one model: its key, input rule, passes and cases."""
        key = cache_key(
            card=self.card.to_dict(), train=self.config.to_dict(), dataset=self.fingerprint, subset=spec.to_dict(),
            seed=self.config.seed,
            label_space=list(self.dataset.label_space.names) if spec.task == Task.SEMANTIC else None,
        )
        short_side = self.eval_input.get("short_side")
        passes, cases = self._passes(spec, [m for m in members if not is_cross(m[1])], short_side)
        cross_passes, cross_cases = self._cross(spec, [m for m in members if is_cross(m[1])], short_side)
        val_every = default_val_every(self.config.recipe) if self.val_every is None else self.val_every
        return Job(spec, self.config, key, self.eval_input, tuple(passes + cross_passes), tuple(cases + cross_cases),
                   self._calibration(spec, short_side), self._validation(spec, short_side, val_every), val_every)

    def _params(self, suite: Suite, case: Case) -> tuple[tuple[str, Any], ...]:
        """The case's distortion parameters as run: a generator the dataset replaces by its
        offline stand-in (``mini``: tiny random-weight editors), or the request by another
        card, is swapped, and a distortion that takes ``input_size`` (``rescale``) gets the
        model's input resolution unless the case gives one; the record's config holds them.
        Names the distortion cannot take are refused here (:func:`check_params`)."""
        params = dict(case.distortion_params)
        distortion = get_registry().get("distortion", case.distortion).load()
        if "input_size" not in params and sets_input_size(distortion):
            params["input_size"] = model_input_size(self.card, self.config)
        if params.get("generator") in self.substitutes:
            params["generator"] = self.substitutes[params["generator"]]
        check_params(distortion, case.distortion, params, f"{suite.name}/{case.name}")
        return tuple(params.items())

    def _passes(self, spec: TrainSpec, members: list[tuple[Suite, Case]], short_side: int | None
                ) -> tuple[list[PassSpec], list[CaseSpec]]:
        """The run's-dataset passes: cases grouped by (split, distortion, parameters), each
        split's undistorted pass first; a case restricted to editors reads its subset of the
        pass, and one whose split has no image of them is noted, with no record."""
        groups: dict[tuple, list[tuple[Suite, Case]]] = {}
        params_of: dict[tuple, tuple[tuple[str, Any], ...]] = {}
        for suite, case in members:
            if case.split not in self.dataset.splits():
                raise ConfigError(f"case {case.name!r} evaluates split {case.split!r}, which dataset "
                                  f"{self.dataset.name} lacks (it has {', '.join(self.dataset.splits())})")
            params = self._params(suite, case)
            group = (case.split, case.distortion, stable_hash(params))
            params_of[group] = params
            groups.setdefault(group, []).append((suite, case))
        order = sorted(groups, key=lambda g: not (g[1] == "none" and not params_of[g]))
        passes: list[PassSpec] = []
        read: list[tuple[Suite, Case, PassSpec, frozenset[str] | None]] = []
        for group in order:
            split, distortion, _ = group
            subsets: dict[tuple, frozenset[str]] = {}
            kept = []
            for suite, case in groups[group]:
                if case.editors and case.subset_key not in subsets:
                    subsets[case.subset_key] = self._subset(case)
                if case.editors and not subsets[case.subset_key]:
                    note = (f"{suite.name}/{case.name}: no image of {', '.join(case.editors)} in "
                            f"{self.dataset.name}/{case.split}; no record")
                    log.info("%s", note)
                    self.notes.append(note)
                    continue
                kept.append((suite, case))
            if not kept:
                continue
            ids = None
            if all(c.editors for _, c in kept):
                wanted = frozenset().union(*subsets.values())
                ids = tuple(i for i in self.dataset.ids(split) if i in wanted)
            tasks = {state_key(c) for _, c in kept}
            if self.card.gives_image_score and any(c.task == CaseTask.IMAGE for _, c in kept):
                tasks.add(StateKey.OWN_SCORE)
            p = PassSpec(self.fingerprint, split, distortion, params_of[group], ids, frozenset(tasks),
                         baselines=spec.task == Task.BINARY and not kept[0][1].editors, short_side=short_side,
                         cases=tuple(f"{s.name}/{c.name}" for s, c in kept))
            passes.append(p)
            read += [(s, c, p, subsets[c.subset_key] if c.editors else None) for s, c in kept]
        position = {(s.name, c.name): i for i, (s, c) in enumerate(members)}
        cases = [self._case(s, c, p, ids)
                 for s, c, p, ids in sorted(read, key=lambda r: position[r[0].name, r[1].name])]
        if self.card.gives_image_score:  # the image cases again, judged by the detector's own score
            cases += [self._case(s, own_score_case(c), p, ids) for s, c, p, ids in read if c.task == CaseTask.IMAGE]
        return passes, cases

    def _subset(self, case: Case) -> frozenset[str]:
        """The ids ``case`` reads; empty when its split has no image of its editors."""
        editors, authentic = case.subset_key
        edited = select_ids(self.dataset, case.split, editors, authentic=False)
        if edited and authentic:
            return frozenset(select_ids(self.dataset, case.split, editors, authentic=True))
        return frozenset(edited)

    def _cross(self, spec: TrainSpec, members: list[tuple[Suite, Case]], short_side: int | None
               ) -> tuple[list[PassSpec], list[CaseSpec]]:
        """The ``--eval-dataset`` passes: one per (dataset, split) any cross-dataset case reads,
        each case copied with the split it read (and judged by the detector's own score too)."""
        passes: dict[tuple[str, str], PassSpec] = {}
        cases = []
        images = any(c.task == CaseTask.IMAGE for _, c in members)
        tasks = frozenset({StateKey.BINARY, *([StateKey.OWN_SCORE] if self.card.gives_image_score and images else [])})
        for suite, case in members:
            for ds, split in case_targets(case, self.eval_datasets):
                target = (ds.fingerprint(), split)
                if target not in passes:
                    passes[target] = PassSpec(target[0], split, tasks=tasks, baselines=spec.task == Task.BINARY,
                                              short_side=short_side, cases=(f"{suite.name}/{case.name}",))
                here = replace(case, split=split)
                variants = [here] + ([own_score_case(here)] if self.card.gives_image_score
                                     and case.task == CaseTask.IMAGE else [])
                cases += [self._case(suite, v, passes[target], None) for v in variants]
        return list(passes.values()), cases

    def _case(self, suite: Suite, case: Case, p: PassSpec, ids: frozenset[str] | None) -> CaseSpec:
        """``case`` as it reads pass ``p`` (``ids``: the images of it it reads; None: all)."""
        judged, target = judged_by(case), (p.dataset, p.split)
        compare = CaseKey(suite.name, case.compare_to, target, judged) if case.compare_to else None
        return CaseSpec(CaseKey(suite.name, case.name, target, judged), suite, case, p.key, ids, compare)

    def _calibration(self, spec: TrainSpec, short_side: int | None) -> PassSpec | None:
        """The pass thresholds are calibrated on (None: fixed thresholds; a semantic model
        decides pixels by argmax and keeps them fixed)."""
        if self.calibration_split is None or spec.task == Task.SEMANTIC:
            return None
        tasks = {StateKey.BINARY, *([StateKey.OWN_SCORE] if self.card.gives_image_score else [])}
        return PassSpec(self.fingerprint, self.calibration_split, tasks=frozenset(tasks), short_side=short_side,
                        purpose=CALIBRATE)

    def _validation(self, spec: TrainSpec, short_side: int | None, val_every: int) -> PassSpec | None:
        """The pass a training is validated on every ``val_every`` steps (None: not validated,
        or no validation split: the training then says so)."""
        if not val_every:
            return None
        split = next((s for s in VALIDATION_SPLITS if s in self.dataset.splits()), None)
        if split is None:
            return None
        tasks = {StateKey.BINARY, StateKey.SEMANTIC} if spec.task == Task.SEMANTIC else {StateKey.BINARY}
        return PassSpec(self.fingerprint, split, tasks=frozenset(tasks), short_side=short_side, purpose=VALIDATE)


def make_plan(card: DetectorCard, suites: list[Suite], dataset: Dataset, config: TrainConfig, fingerprint: str, *,
              detector: str = "", eval_datasets: Iterable[EvalDataset] = (),
              generators: Mapping[str, str] | None = None,
              calibration_split: str | None = None, val_every: int | None = 0,
              only: Collection[tuple[str, str]] | None = None, release: Release | None = None) -> Plan:
    """The plan of ``suites`` for ``card`` on ``dataset`` (of ``fingerprint``).

    ``eval_datasets``: the opened ``--eval-dataset`` datasets (without, the cross-dataset cases
    are skipped, saying so); ``generators``: generator name -> card to use instead (besides the
    dataset's own offline substitutes); ``calibration_split``: calibrate thresholds there (None:
    fixed); ``val_every``: the training's validation cadence (None: the recipe's default);
    ``only``: the (suite, case) names to plan, the others left out unsaid (``diffzoo reproduce``);
    ``release``: the released weights every case scores (``--weights released:NAME``)."""
    eval_datasets = list(eval_datasets)
    _check_generators(generators or {})
    planner = _Planner(card, dataset, config, fingerprint, eval_datasets,
                       {**dataset.generator_substitutes, **(generators or {})}, calibration_split, val_every)
    members: dict[TrainSpec, list[tuple[Suite, Case]]] = {}
    skipped: list[SkippedCase] = []
    for suite in suites:
        for case in suite.cases:
            if only is not None and (suite.name, case.name) not in only:
                continue
            spec, reason = (None, NO_EVAL_DATASET) if is_cross(case) and not eval_datasets else \
                _train_spec(card, case, dataset, release)
            if spec is None:
                skipped.append(SkippedCase(suite, case, reason))
                continue
            members.setdefault(spec, []).append((suite, case))
    # never an option given and left unread: some case of the suites generates with it (one the detector
    # cannot serve counts, as a sweep gives every detector the same options; a row re-run alone may not)
    used = {dict(case.distortion_params).get("generator") for suite in suites for case in suite.cases}
    if only is None and (unused := sorted(set(generators or {}) - used)):
        raise ConfigError(f"--generator {unused[0]}={(generators or {})[unused[0]]} was given, but no case of "
                          f"the suites generates with {unused[0]!r} (suites such as lora do)")
    if not members and skipped:
        names = ", ".join(sorted({s.suite.name for s in skipped}))
        raise ConfigError(
            f"{card.name} can serve no case of suite(s) {names}: {skipped[0].reason}"
            + ("; choose a suite with an image-level case (e.g. standard)" if is_image_level(card) else "")
        )
    jobs = [planner.job(spec, cases) for spec, cases in members.items()]
    datasets = {fingerprint: dataset, **{ds.fingerprint(): ds for ds, _, _ in eval_datasets}}
    return Plan(card, dataset, fingerprint, jobs, skipped, planner.notes, datasets, detector)


def _check_generators(generators: Mapping[str, str]) -> None:
    """An error with a did-you-mean for a ``--generator NAME=CARD`` whose NAME or CARD is not a
    registered generator: a misspelt NAME would be silently ignored, an unknown CARD found late."""
    for name, card in generators.items():
        for which in (name, card):
            get_registry().get("generator", which)


def training_plan(card: DetectorCard, spec: TrainSpec, dataset: Dataset, config: TrainConfig, fingerprint: str, *,
                  detector: str = "", val_every: int | None = 0) -> Plan:
    """The plan of one model trained without cases (``diffzoo train``): the job
    :func:`make_plan` makes for a case with this training, so the same cache key."""
    if spec.task == Task.SEMANTIC and dataset.label_space.is_binary:
        raise ConfigError(f"cannot train {card.name} [{spec.task}]: {_binary_masks(dataset)}")
    planner = _Planner(card, dataset, config, fingerprint, [], {}, None, val_every)
    return Plan(card, dataset, fingerprint, [planner.job(spec)], datasets={fingerprint: dataset}, detector=detector)
