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
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from diffzoo.harness.core import distributed
from diffzoo.harness.core.device import resolve_device
from diffzoo.harness.core.errors import ConfigError
from diffzoo.harness.core.fsutil import CACHE_ENV, cache_root, check_usable_dir
from diffzoo.harness.core.parallel import check_workers, resolve_workers
from diffzoo.harness.core.plugins import get_registry
from diffzoo.harness.core.progress import NullProgress, Progress
from diffzoo.harness.core.protocols import Detector
from diffzoo.harness.metrics import EvalState
from diffzoo.harness.models.checkpoints import check_copy_target, copy_checkpoint
from diffzoo.harness.models.monitor import Validation
from diffzoo.harness.records.document import ResultRecord
from diffzoo.harness.run.baselines import baseline_cache
from diffzoo.harness.run.case_records import (
    OWN_SCORE, RecordContext, Summaries, bind_states, build_record, case_metrics, case_states, metric_task,
    own_score_case,
)
from diffzoo.harness.records.policy import Thresholds
from diffzoo.harness.run.evaluate import EvalResult, evaluate, gather_eval_result, sets_input_size
from diffzoo.harness.run.factories import open_dataset
from diffzoo.harness.run.model_source import ModelSource, check_checkpoints
from diffzoo.harness.run.cross_eval import case_targets, cross_context, cross_states, open_eval_datasets
from diffzoo.harness.run.request import RunRequest
from diffzoo.harness.run.planning import Baseline, Pass, Plan, TrainingJob, eval_input, make_plan, model_input_size, pass_subsets, passes
from diffzoo.harness.run.planning import reuses_baseline, same_input_note, train_config
from diffzoo.harness.run.thresholds import calibrate, check_policy
from diffzoo.harness.run.validation import make_validation
from diffzoo.harness.suites import Case, Suite, TrainSpec, is_cross, unseen_generators_suite

log = logging.getLogger(__name__)


@dataclass
class RunOutput:
    records: list[ResultRecord]
    plan: Plan
    notes: list[str]
    skipped: dict[str, dict[str, str]] = field(default_factory=dict)
    """Samples skipped in any pass of the run: id -> {"kind", "reason"}
    (each sample once, however many passes or records it missed)."""
    checkpoints: list[dict[str, Any]] = field(default_factory=list)  # each model's (ModelSource.model_for)


@dataclass
class TrainOutput:
    """What :meth:`Runner.train` made: the model, its checkpoint, the job."""

    detector: Detector
    checkpoint: dict[str, Any]  # source, path, sha256, training log
    job: TrainingJob
    copy: Path | None = None


class Runner:
    """One detector's run: its request, dataset, training config and plan.

    Every name is resolved here, before any work: the detector, the suites,
    the given checkpoints, the dataset (built or downloaded once, by rank 0
    under torchrun) and the training config; :meth:`plan` then says which
    models and passes the suites need, and :meth:`run` does them.
    """

    def __init__(self, request: RunRequest, progress: Progress | None = None):
        self.request = request
        request.check_cadence()  # before any work
        check_usable_dir(cache_root(), f"the diffzoo cache (${CACHE_ENV})")  # checkpoints, resume states
        if request.workers is not None:  # a bad --workers fails before torchrun's group is joined
            check_workers(request.workers)
        self.device = distributed.init(resolve_device(request.device))  # joins torchrun's group
        self.workers = resolve_workers(request.workers, self.device)  # the default depends on the device
        self.progress = (progress or NullProgress()) if distributed.is_main() else NullProgress()
        registry = get_registry()
        self.entry = registry.get("detector", request.detector)  # unknown names fail before any work
        self.suites: list[Suite] = self._suites() if request.suites else []
        check_checkpoints(request.checkpoints)
        with distributed.main_first():  # rank 0 builds or downloads into the shared cache
            self.dataset = open_dataset(request.dataset, self.progress, **request.dataset_options)
        self.eval_datasets = open_eval_datasets(request.eval_datasets, self.suites, self.progress,
                                                request.eval_dataset_options)
        self.config, self.overrides = train_config(self.entry.card, self.dataset, request.train_overrides,
                                                   request.pretrained, request.seed)
        self.config = self.config.with_overrides(num_workers=self.workers)  # not in the cache key
        self.extra_negatives = int(self.dataset.describe().get("extra_authentic") or 0)
        if self.config.recipe == "paper" and not request.dataset_options.get("extra_authentic"):
            _warn_once("--recipe paper: no COCO negatives given (--dataset-option extra_authentic=DIR); "
                       "training without the paper's 5k unedited images", self.dataset.fingerprint())
        if self.suites:  # before any training: an unknown policy, or a calibration split missing or evaluated
            check_policy(request.thresholds, request.calibration_split, self.dataset,
                         {c.split for s in self.suites for c in s.cases if not is_cross(c)})
        self.models = ModelSource(self.entry, self.dataset, request, self.device, self.progress, self._validation)
        self.notes: list[str] = []
        self.skipped: dict[str, dict[str, str]] = {}
        self.plan_: Plan | None = None
        self._sizes: dict[str, dict[str, tuple[int, int] | None]] = {}  # split -> id -> (h, w) seen here

    # -- plan ---------------------------------------------------------------
    def _suites(self) -> list[Suite]:
        suites = [e.load() for e in get_registry().expand("suite", self.request.suites)]
        if self.request.unseen_pairs:
            if not any(s.name == "unseen-generators" for s in suites):
                raise ConfigError("held-out pairs were given, but no unseen-generators suite is selected")
            custom = unseen_generators_suite([tuple(p) for p in self.request.unseen_pairs])
            suites = [custom if s.name == "unseen-generators" else s for s in suites]
        return suites

    def _make_plan(self, suites: list[Suite]) -> Plan:
        self.plan_ = make_plan(self.entry.card, suites, self.dataset, self.config, self.dataset.fingerprint(),
                               eval_datasets=bool(self.eval_datasets))
        return self.plan_

    def plan(self) -> Plan:
        """The models and passes the request's suites need."""
        return self._make_plan(self.suites)

    def plan_training(self, task: str, exclude_editors: tuple[str, ...] = ()) -> Plan:
        """The plan of one model trained on the train split (``diffzoo train``).

        It goes through :func:`make_plan` like a suite case, so the model
        gets the cache key ``diffzoo run`` computes for the same training.
        A second call for the same training returns the same plan.
        """
        spec = TrainSpec(task, "train", tuple(exclude_editors))
        if self.plan_ is not None and [job.spec for job in self.plan_.jobs] == [spec]:
            return self.plan_
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
        return self._make_plan([Suite("train", "0", "one model, no evaluation", (case,))])

    # -- run -----------------------------------------------------------------
    def run(self) -> RunOutput:
        """Plan (unless :meth:`plan` ran), train or load, evaluate, record.

        Under torchrun only rank 0 gets records; the other ranks return none.
        """
        if self.plan_ is None:
            self.plan()
        records: list[ResultRecord] = []
        checkpoints: list[dict[str, Any]] = []
        summaries = Summaries(self.request.bootstrap, self.request.seed, self.request.out)
        for job in self.plan_.jobs:
            det, ckpt = self.models.model_for(job)
            checkpoints.append(ckpt)
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
            # a case missing from states has no image of its editors (noted); a case judged by the
            # detector's own image score, or on an --eval-dataset, is keyed by itself (_evaluate_job)
            read = [(suite, case, (suite.name, case.name)) for suite, case in job.cases
                    if (suite.name, case.name) in states]
            suites = {suite.name: suite for suite, _ in job.cases}
            read += [(suites[key[0]], key[1], key) for key in states if isinstance(key[1], Case)]
            contexts = {key: ctx if states[key][3] is None else
                        cross_context(ctx, self.dataset, self.plan_.fingerprint, states[key][3]) for _, _, key in read}
            for _, case, key in read:  # bound before any state is written, so each file holds its binding
                bind_states(contexts[key], [(case, states[key][0], states[key][2])])
            for suite, case, key in read:
                state, result, params, _ = states[key]
                summary = summaries.get(state)
                scored = isinstance(key[1], Case)

                def compared(name: str, s: Suite = suite, scored: bool = scored) -> EvalState | None:
                    other = (s.name, own_score_case(s.case(name)) if scored else name)
                    return states[other][0] if other in states else None
                metrics, ci = case_metrics(case, summary, contexts[key].dataset.label_space.names, compared)
                records.append(build_record(contexts[key], suite, case, summary, result, metrics, ci, params,
                                            compared(case.compare_to) if case.compare_to else None))
        return RunOutput(records, self.plan_, self.notes, self.skipped, checkpoints)

    def train(self, task: str = "binary", exclude_editors: tuple[str, ...] = ()) -> TrainOutput:
        """Train (or find in the cache) one model on the train split, as
        ``run`` would for a case with this training; with ``request.out``,
        rank 0 also writes a copy of the checkpoint there."""
        job = self.plan_training(task, exclude_editors).jobs[0]  # planned once if the caller did
        if self.request.out is not None:
            check_copy_target(Path(self.request.out))  # before training, not after
        det, ckpt = self.models.model_for(job)
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
        substitutes = {**self.dataset.generator_substitutes, **self.request.generators}
        if params.get("generator") in substitutes:
            params["generator"] = substitutes[params["generator"]]
        return params

    def job_passes(self, job: TrainingJob, notes: bool = False
                   ) -> Iterator[tuple[Pass, list[tuple[Suite, Case]], dict[tuple, frozenset[str]], list[str] | None]]:
        """The model passes ``job`` needs, in order: per distinct (split, distortion,
        parameters), the cases reading it, their editor subsets and the ids it reads
        (None: the whole split).  A case whose editors the split lacks is left out
        (with ``notes``: noted when its pass comes, no record)."""
        for p in passes([(s, c) for s, c in job.cases if not is_cross(c)], lambda c: self._distortion_params(c, job)):
            subset_ids, empty = pass_subsets(self.dataset, p)
            for suite, case in empty if notes else ():
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
            yield p, members, subset_ids, ids

    def pass_summary(self) -> list[str]:
        """One line per planned model: how many passes it makes over how many images
        (before any work; a pass that turns out to see the undistorted input reuses
        its predictions, so the count is an upper bound)."""
        lines = []
        for job in self.plan_.jobs:
            planned = list(self.job_passes(job))
            reads = sum(len(self.dataset.ids(p.split)) if ids is None else len(ids) for p, _, _, ids in planned)
            cross = {(ds.fingerprint(), split): (ds, split) for _, c in job.cases if is_cross(c)
                     for ds, split in case_targets(c, self.eval_datasets)}
            planned += list(cross.values())
            reads += sum(len(ds.ids(split)) for ds, split in cross.values())
            held_out = f" without {'+'.join(job.spec.exclude_editors)}" if job.spec.exclude_editors else ""
            lines.append(f"{self.entry.name} [{job.task}]{held_out}: {len(planned)} model pass(es), "
                         f"{reads} image reads")
        return lines

    def _evaluate_job(self, job: TrainingJob, det: Detector, thresholds: Thresholds
                      ) -> dict[tuple, tuple[EvalState, EvalResult, dict[str, Any], Any]] | None:
        """Every case's metric state: cases on the same (split, distortion)
        share one pass over the images any of them needs (planning.passes); a
        case restricted to some editors reads its part of the pass; a pass
        that feeds the detector the undistorted pass's very input reuses its
        predictions (noted, ``same_input_as`` in its parameters); a
        cross-dataset case reads one pass per ``--eval-dataset``.  Keyed by
        (suite, case name); an image case judged by the detector's own score
        (:func:`own_score_case`) by (suite, case), a cross-dataset case by (suite,
        case with its split, evaluation dataset's fingerprint).  Values: (state, result,
        pass parameters, the evaluation dataset or None for the run's).  None on ranks > 0."""
        out: dict[tuple, tuple[EvalState, EvalResult, dict[str, Any], Any]] = {}
        baseline: dict[str, Baseline] = {}
        for p, members, subset_ids, ids in self.job_passes(job, notes=True):
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
                out[(suite.name, case.name)] = (state, result, params, None)
            for suite, case in members:  # a detector's own image score: the image cases once more
                if case.task == "image" and OWN_SCORE in result.states:
                    scored = own_score_case(case)
                    out[(suite.name, scored)] = (case_states([scored], result, subset_ids)[0], result, params, None)
        out.update(cross_states(job.cases, self.eval_datasets, job.spec, lambda ds, where: self._evaluate(
            det, where, {"binary"}, None, thresholds, {}, input_short_side=self._short_side(job), dataset=ds)))
        return out if distributed.is_main() else None

    def _short_side(self, job: TrainingJob) -> int | None:
        """The recipe's evaluation input rule for ``job``'s model (None: as stored)."""
        return eval_input(self.entry.card, job.config).get("short_side")

    def _validation(self, job: TrainingJob, det: Detector) -> Validation | None:
        """The periodic validation of ``job``'s training: fixed thresholds, the evaluation's input rule."""
        return make_validation(self.dataset, job, det, lambda case, tasks, what: self._evaluate(
            det, case, tasks, None, Thresholds.fixed(det), {}, what=what, input_short_side=self._short_side(job)))

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
                  input_short_side: int | None = None, dataset: Any = None) -> EvalResult | None:
        """Metric states of ``det`` on the case's (split, distortion) (only
        ``ids`` of the split when given) of the run's dataset, or of ``dataset``
        (an ``--eval-dataset``); under torchrun each rank scores its shard and
        rank 0 gets the merged result."""
        other = dataset is not None
        dataset = dataset if other else self.dataset
        if case.split not in dataset.splits():
            raise ConfigError(
                f"case {case.name!r} evaluates split {case.split!r}, which dataset "
                f"{dataset.name} lacks (it has {', '.join(dataset.splits())})"
            )
        distortion = get_registry().get("distortion", case.distortion).load()
        every = dataset.ids(case.split)
        ids = every if ids is None else ids
        desc = what or f"evaluating {self.entry.name} [{det.task}] on {dataset.name}/{case.split}"
        if len(ids) < len(every):
            desc += f" ({len(ids)} images with the cases' editors)"
        if case.distortion != "none":
            desc += f" ({case.distortion} {', '.join(f'{k}={v}' for k, v in params.items())})"
        if distributed.world_size() > 1:
            desc += f" (rank 0's shard of {distributed.world_size()})"
        result = evaluate(
            det, dataset, case.split, distortion, params,
            tasks=tasks, strict=self.request.strict, baselines=det.task == "binary" and not case.editors,
            progress=self.progress, description=desc, ids=distributed.shard(ids), thresholds=thresholds,
            input_short_side=input_short_side, workers=self.workers, pin_memory=self.device.type == "cuda",
            cache=baseline_cache(dataset.fingerprint()),
        )
        if not other:  # the sizes the planner compares distortions with are the run's dataset's
            seen = self._sizes.setdefault(case.split, {})
            seen.update(result.sizes)
            seen.update((item["id"], None) for item in result.skipped)  # unreadable: skipped by every pass alike
        merged = gather_eval_result(result, ids)
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


def run(request: RunRequest, progress: Progress | None = None) -> RunOutput:
    return Runner(request, progress).run()
