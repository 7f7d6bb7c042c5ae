"""The runner: resolve -> plan -> train or load -> evaluate -> record.

It returns one immutable :class:`ResultRecord` per (detector, suite, case);
the caller decides where records go (the CLI writes them to the output
folder, atomically).  :meth:`Runner.train` is the same path for one model
without suites (``diffzoo train``).

Under torchrun every rank runs the runner: training goes through DDP, each
rank evaluates its shard of a split, and rank 0 alone merges the metric
states, writes checkpoints and returns records (other ranks return none).
The checkpoint cache must be on a filesystem every rank sees.
"""

from __future__ import annotations

import difflib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from . import distributed
from .checkpoints import WEIGHTS_FILE, cache_dir, cached_meta, check_copy_target, checkpoint_meta, copy_checkpoint
from .checkpoints import sweep_partial
from .errors import ConfigError, ModelError
from .calibration import DEFAULT_CALIBRATION_SPLIT, calibrate, check_policy
from .case_records import RecordContext, Summaries, build_record, case_metrics, case_states, metric_task
from .evaluate import EvalResult, Thresholds, evaluate, sets_input_size
from .factories import create_detector, open_dataset
from .metrics import EvalState
from .planning import Baseline, Plan, TrainingJob, eval_input, make_plan, model_input_size, pass_subsets, passes
from .planning import reuses_baseline, same_input_note, train_config, training_ids
from .plugins import get_registry
from .progress import NullProgress, Progress
from .protocols import Detector
from .records import ResultRecord
from .resume import Resume, check_every, resume_dir
from .segmenter import TrainData
from .suites import Case, Suite, TrainSpec, unseen_generators_suite
from .trainer import TrainConfig, resolve_device
from .types import BINARY

log = logging.getLogger(__name__)


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


@dataclass
class RunOutput:
    records: list[ResultRecord]
    plan: Plan
    notes: list[str]
    skipped: dict[str, dict[str, str]] = field(default_factory=dict)
    """Samples skipped in any pass of the run: id -> {"kind", "reason"}
    (each sample once, however many passes or records it missed)."""


@dataclass
class TrainOutput:
    """What :meth:`Runner.train` made: the model, its checkpoint, the job."""

    detector: Detector
    checkpoint: dict[str, Any]  # source, path, sha256, training log
    job: TrainingJob
    copy: Path | None = None


class Runner:
    def __init__(self, request: RunRequest, progress: Progress | None = None):
        self.request = request
        check_every(request.save_every)  # before any work
        self.device = distributed.init(resolve_device(request.device))  # joins torchrun's group
        self.progress = (progress or NullProgress()) if distributed.is_main() else NullProgress()
        self.notes: list[str] = []
        self.skipped: dict[str, dict[str, str]] = {}
        self.plan_: Plan | None = None
        self._sizes: dict[str, dict[str, tuple[int, int] | None]] = {}  # split -> id -> (h, w) seen here

    # -- resolve and plan ------------------------------------------------
    def _resolve(self) -> TrainConfig:
        """Detector entry, dataset and training config (shared by run and train)."""
        self.entry = get_registry().get("detector", self.request.detector)
        with distributed.main_first():  # rank 0 builds or downloads into the shared cache
            self.dataset = open_dataset(self.request.dataset, self.progress, **self.request.dataset_options)
        config, self.overrides = train_config(self.entry.card, self.dataset, self.request.train_overrides,
                                              self.request.pretrained, self.request.seed)
        self.extra_negatives = int(self.dataset.describe().get("extra_authentic") or 0)
        if config.recipe == "paper" and not self.request.dataset_options.get("extra_authentic"):
            _warn_once("--recipe paper: no COCO negatives given (--dataset-option extra_authentic=DIR); "
                       "training without the paper's 5k unedited images", self.dataset.fingerprint())
        return config

    def _make_plan(self, suites: list[Suite], config: TrainConfig) -> Plan:
        self.plan_ = make_plan(self.entry.card, suites, self.dataset, config, self.dataset.fingerprint())
        return self.plan_

    def plan(self) -> Plan:
        registry = get_registry()
        registry.get("detector", self.request.detector)  # unknown names fail before any work
        self.suites: list[Suite] = [e.load() for e in registry.expand("suite", self.request.suites)]
        if self.request.unseen_pairs:
            if not any(s.name == "unseen-generators" for s in self.suites):
                raise ConfigError("held-out pairs were given, but no unseen-generators suite is selected")
            custom = unseen_generators_suite([tuple(p) for p in self.request.unseen_pairs])
            self.suites = [custom if s.name == "unseen-generators" else s for s in self.suites]
        _check_checkpoints(self.request.checkpoints)
        config = self._resolve()
        # before any training: an unknown policy or a calibration split that is missing or evaluated
        check_policy(self.request.thresholds, self.request.calibration_split, self.dataset,
                     {c.split for s in self.suites for c in s.cases})
        return self._make_plan(self.suites, config)

    def plan_training(self, task: str, exclude_editors: tuple[str, ...] = ()) -> Plan:
        """The plan of one model trained on the train split (``diffzoo train``).

        It goes through :func:`make_plan` like a suite case, so the model
        gets the cache key ``diffzoo run`` computes for the same training.
        A second call for the same training returns the same plan.
        """
        spec = TrainSpec(task, "train", tuple(exclude_editors))
        if self.plan_ is not None and [job.spec for job in self.plan_.jobs] == [spec]:
            return self.plan_
        config = self._resolve()
        card = self.entry.card
        if task not in card.tasks:
            raise ConfigError(f"{card.name} cannot be trained for task {task!r}; it supports {', '.join(card.tasks)}")
        editors = self.dataset.label_space.names[1:]
        for name in exclude_editors:
            if name not in editors:
                close = difflib.get_close_matches(name, editors, n=1)
                hint = f" Did you mean {close[0]!r}?" if close else ""
                raise ConfigError(
                    f"cannot exclude editor {name!r}: dataset {self.dataset.name} has no such editor.{hint} "
                    f"Its editors: {', '.join(editors)}"
                )
        case = Case(name=f"train-{task}", task=task if task in ("binary", "semantic") else "image", train=spec)
        return self._make_plan([Suite("train", "0", "one model, no evaluation", (case,))], config)

    # -- models ------------------------------------------------------------
    def _new_detector(self, job: TrainingJob) -> Detector:
        torch.manual_seed(job.config.seed)
        label_space = self.dataset.label_space if job.task == "semantic" else BINARY
        det = create_detector(self.entry.name, job.task, label_space, pretrained=job.config.pretrained)
        return det.to(self.device)

    def _given_checkpoint(self, job: TrainingJob) -> Path | None:
        for path in self.request.checkpoints:
            _, meta = checkpoint_meta(path)
            if meta.get("task", job.task) == job.task:
                return path
        return None

    def model_for(self, job: TrainingJob) -> tuple[Detector, dict[str, Any]]:
        det = self._new_detector(job)
        given = self._given_checkpoint(job)
        cached = cache_dir(self.entry.name, job.key)
        if given is not None:
            meta = det.load(given)
            return det, {"source": "given", "path": str(given), "sha256": meta["sha256"]}
        if distributed.is_main():
            sweep_partial(cached.parent)  # writes that a kill cut short
        # rank 0 decides, so that every rank loads or every rank trains
        if distributed.broadcast((cached / WEIGHTS_FILE).exists()):
            cached_meta(cached, job.key)  # diffzoo's card for this very job; det.load checks the weights' hash
            meta = det.load(cached)
            log.info("using cached checkpoint %s", cached)
            return det, {"source": "cache", "path": str(cached), "sha256": meta["sha256"],
                         "training": meta.get("training")}
        if not self.entry.card.trainable:  # used as built: its weights are the checkpoint
            return det, self._keep_untrained(job, det, cached)
        if not self.request.train:
            raise ModelError(
                f"no {job.task} checkpoint for {self.entry.name} on {self.dataset.name} "
                f"(cache key {job.key}); pass --checkpoint PATH or drop --no-train"
            )
        return det, self._train(job, det, cached)

    def _keep_untrained(self, job: TrainingJob, det: Detector, cached: Path) -> dict[str, Any]:
        """A training-free detector (card ``trainable=False``) is saved as
        built, so that its weights get a sha256 and later runs load the same bytes."""
        return self._cache_model(job, det, cached, "untrained", None)

    def _cache_model(self, job: TrainingJob, det: Detector, cached: Path, source: str,
                     training: dict[str, Any] | None, **extra: Any) -> dict[str, Any]:
        """Rank 0 writes ``det`` to the cache folder of ``job``, every rank then
        loads it back: the sha256 comes from the written file."""
        if distributed.is_main():
            det.save(cached, extra={**extra, "training": training, "train_subset": job.spec.to_dict(),
                                    "dataset_fingerprint": self.plan_.fingerprint, "cache_key": job.key})
        distributed.barrier()
        meta = det.load(cached)
        return {"source": source, "path": str(cached), "sha256": meta["sha256"], "training": training}

    def _train(self, job: TrainingJob, det: Detector, cached: Path) -> dict[str, Any]:
        """Train ``det`` (through DDP under torchrun); rank 0 writes the
        checkpoint to the cache, the other ranks wait, then all load it.

        The shared training loop saves its state every ``save_every`` steps
        beside the checkpoint and a later run of the same job resumes from
        it (:mod:`.resume`); the state is deleted once the checkpoint is written.
        """
        ids = training_ids(self.dataset, job.spec)
        desc = f"training {self.entry.name} [{job.task}] on {self.dataset.name}/{job.spec.split}"
        if job.spec.exclude_editors:
            desc += f" without {'+'.join(job.spec.exclude_editors)}"
        resume = Resume(resume_dir(self.entry.name, job.key), self.request.save_every,
                        {"detector": self.entry.name, "cache_key": job.key, "train_config": job.config.to_dict()})
        with self.progress.task(desc, total=job.config.iterations) as task:
            done = [0]

            def advance(step: int, loss: float) -> None:  # a resumed run starts past 0
                task.advance(step - done[0], loss=loss)
                done[0] = step

            log_ = det.fit(TrainData(self.dataset, ids, resume), job.config, progress=advance)
        log_["num_train_images"] = len(ids)
        ckpt = self._cache_model(job, det, cached, "trained", log_, train_config=job.config.to_dict())
        if distributed.is_main():
            resume.clear()  # the checkpoint is written: nothing left to resume
        return ckpt

    # -- run -----------------------------------------------------------------
    def run(self) -> RunOutput:
        """Plan (unless :meth:`plan` ran), train or load, evaluate, record.

        Under torchrun only rank 0 gets records; the other ranks return none.
        """
        if self.plan_ is None:
            self.plan()
        records: list[ResultRecord] = []
        summaries = Summaries(self.request.bootstrap, self.request.seed, self.request.out)
        for job in self.plan_.jobs:
            det, ckpt = self.model_for(job)
            thresholds = self._thresholds(job, det)
            states = self._evaluate_job(job, det, thresholds)
            if states is None:  # ranks > 0
                continue
            ctx = RecordContext(
                detector_name=self.entry.name, plugin=self.entry.source, detector=det, checkpoint=ckpt,
                dataset=self.dataset, fingerprint=self.plan_.fingerprint, train_config=job.config.to_dict(),
                train_subset=job.spec.to_dict(), overrides=self.overrides, cache_key=job.key,
                pretrained=job.config.pretrained, device=str(self.device), strict=self.request.strict,
                seed=self.request.seed, thresholds=thresholds,
                eval_input=eval_input(self.entry.card, job.config, self.extra_negatives),
            )
            for suite, case in job.cases:
                if (suite.name, case.name) not in states:  # no image of its editors (noted)
                    continue
                state, result, params = states[(suite.name, case.name)]
                summary = summaries.get(state)
                compared = lambda name, s=suite: states[(s.name, name)][0] if (s.name, name) in states else None
                metrics, ci = case_metrics(case, summary, self.dataset.label_space.names, compared)
                records.append(build_record(ctx, suite, case, summary, result, metrics, ci, params,
                                            compared(case.compare_to) if case.compare_to else None))
        return RunOutput(records, self.plan_, self.notes, self.skipped)

    def train(self, task: str = "binary", exclude_editors: tuple[str, ...] = ()) -> TrainOutput:
        """Train (or find in the cache) one model on the train split, as
        ``run`` would for a case with this training; with ``request.out``,
        rank 0 also writes a copy of the checkpoint there."""
        job = self.plan_training(task, exclude_editors).jobs[0]  # planned once if the caller did
        if self.request.out is not None:
            check_copy_target(Path(self.request.out))  # before training, not after
        det, ckpt = self.model_for(job)
        copy = None
        if self.request.out is not None and distributed.is_main():
            copy = copy_checkpoint(Path(ckpt["path"]), Path(self.request.out))
        return TrainOutput(det, ckpt, job, copy)

    def _distortion_params(self, case: Case, job: TrainingJob) -> dict[str, Any]:
        """The case's distortion parameters; a generator a dataset replaces by
        its offline stand-in (``mini``: tiny random-weight editors), or the
        request by another card, is swapped here, and a distortion that takes
        ``input_size`` (``rescale``) gets the model's input resolution unless
        the case gives one; the parameters used are recorded in every record's config."""
        params = dict(case.distortion_params)
        if "input_size" not in params and sets_input_size(get_registry().get("distortion", case.distortion).load()):
            params["input_size"] = model_input_size(self.entry.card, job.config)
        substitutes = {**(getattr(self.dataset, "generator_substitutes", None) or {}), **self.request.generators}
        if params.get("generator") in substitutes:
            params["generator"] = substitutes[params["generator"]]
        return params

    def _evaluate_job(self, job: TrainingJob, det: Detector, thresholds: Thresholds
                      ) -> dict[tuple[str, str], tuple[EvalState, EvalResult, dict[str, Any]]] | None:
        """Every case's metric state: cases on the same (split, distortion)
        share one pass over the images any of them needs (planning.passes); a
        case restricted to some editors reads its part of the pass; a pass
        that feeds the detector the undistorted pass's very input reuses its
        predictions (noted, ``same_input_as`` in its parameters).  None on ranks > 0."""
        out = {}
        baseline: dict[str, Baseline] = {}
        for p in passes(job.cases, lambda c: self._distortion_params(c, job)):
            subset_ids, empty = pass_subsets(self.dataset, p)
            for suite, case in empty:
                note = (f"{suite.name}/{case.name}: no image of {', '.join(case.editors)} in "
                        f"{self.dataset.name}/{case.split}; no record")
                log.info("%s", note)  # the CLI prints the run's notes
                self.notes.append(note)
            members = [m for m in p.members if m not in empty]
            if not members:
                continue
            ids = None
            if all(c.editors for _, c in members):
                wanted = frozenset().union(*subset_ids.values())
                ids = [i for i in self.dataset.ids(p.split) if i in wanted]
            tasks, params = {metric_task(c) for _, c in members}, p.params
            sizes = reuses_baseline(self.dataset, p, ids, tasks, baseline.get(p.split), self._sizes,
                                    self._short_side(job))
            if sizes is not None:
                note = same_input_note(p, self.entry.name, sizes, self._short_side(job))
                log.info("%s", note)
                self.notes.append(note)
                result, params = baseline[p.split].result, {**params, "same_input_as": "baseline"}
            else:
                result = self._evaluate(det, members[0][1], tasks, ids, thresholds, p.params,
                                        input_short_side=self._short_side(job))
            if p.is_baseline:
                baseline[p.split] = Baseline(None if ids is None else frozenset(ids), tasks, result)
            if result is None:
                continue
            states = case_states([c for _, c in members], result, subset_ids)
            for (suite, case), state in zip(members, states):
                out[(suite.name, case.name)] = (state, result, params)
        return out if distributed.is_main() else None

    def _short_side(self, job: TrainingJob) -> int | None:
        """The recipe's evaluation input rule for ``job``'s model (None: as stored)."""
        return eval_input(self.entry.card, job.config).get("short_side")

    def _thresholds(self, job: TrainingJob, det: Detector) -> Thresholds:
        """Fixed, or calibrated on the calibration split (never an evaluated
        one: :meth:`plan` checked it against every case of the run)."""
        request = self.request
        if request.thresholds == "fixed" or det.task == "semantic":
            return Thresholds.fixed(det)
        split = request.calibration_split  # checked by plan()
        identity = Case(name="calibration", task="binary", train=job.spec, split=split)

        def run(thresholds: Thresholds) -> EvalResult | None:
            return self._evaluate(det, identity, {"binary"}, None, thresholds, {},
                                  what=f"calibrating thresholds on {self.dataset.name}/{split}",
                                  input_short_side=self._short_side(job))

        return calibrate(det, split, run, distributed.broadcast)

    def _evaluate(self, det: Detector, case: Case, tasks: set[str], ids: list[str] | None,
                  thresholds: Thresholds, params: dict[str, Any], what: str | None = None,
                  input_short_side: int | None = None) -> EvalResult | None:
        """Metric states of ``det`` on the case's (split, distortion) (only
        ``ids`` of the split when given); under torchrun each rank scores its
        shard and rank 0 gets the merged result."""
        if case.split not in self.dataset.splits():
            raise ConfigError(
                f"case {case.name!r} evaluates split {case.split!r}, which dataset "
                f"{self.dataset.name} lacks (it has {', '.join(self.dataset.splits())})"
            )
        distortion = get_registry().get("distortion", case.distortion).load()
        every = self.dataset.ids(case.split)
        ids = every if ids is None else ids
        desc = what or f"evaluating {self.entry.name} [{det.task}] on {self.dataset.name}/{case.split}"
        if len(ids) < len(every):
            desc += f" ({len(ids)} images with the cases' editors)"
        if case.distortion != "none":
            desc += f" ({case.distortion} {', '.join(f'{k}={v}' for k, v in params.items())})"
        if distributed.world_size() > 1:
            desc += f" (rank 0's shard of {distributed.world_size()})"
        result = evaluate(
            det, self.dataset, case.split, distortion, params,
            tasks=tasks, strict=self.request.strict, baselines=det.task == "binary" and not case.editors,
            progress=self.progress, description=desc, ids=distributed.shard(ids), thresholds=thresholds,
            input_short_side=input_short_side,
        )
        seen = self._sizes.setdefault(case.split, {})
        seen.update(result.sizes)
        seen.update((item["id"], None) for item in result.skipped)  # unreadable: skipped by every pass alike
        merged = distributed.gather_eval_result(result, ids)
        if merged is not None:
            for item in merged.skipped:
                self.skipped.setdefault(item["id"], {"kind": item.get("kind", "corrupt"), "reason": item["reason"]})
        return merged


_WARNED: set[tuple[str, str]] = set()


def _warn_once(message: str, about: str) -> None:
    """Log ``message`` once per process for ``about`` (the reference
    detectors' runners of one run would repeat it)."""
    if (message, about) not in _WARNED:
        _WARNED.add((message, about))
        log.warning("%s", message)


def _check_checkpoints(paths: list[Path]) -> None:
    """One checkpoint per task: a run scores the model it is given, it never
    picks one of several by its scores (that would be choosing a checkpoint
    on the test split)."""
    by_task: dict[str, Path] = {}
    for path in paths:
        task = checkpoint_meta(path)[1].get("task", "?")
        if task in by_task:
            raise ConfigError(
                f"two --checkpoint for the {task} task ({by_task[task]} and {path}): a run scores one model "
                "per task and never chooses between checkpoints by their scores on the evaluated split; "
                "run each checkpoint separately (with its own --out) and compare the records"
            )
        by_task[task] = path


def run(request: RunRequest, progress: Progress | None = None) -> RunOutput:
    return Runner(request, progress).run()
