"""From a job's pass results to result records: one record per planned case, made with no I/O.

Cases of one pass share its metric states; a case restricted to some editors reads the
subset of the pass's per-image rows (one subset state per pass, state and images, shared by
the cases on it), a ``slice_by`` case reports the pass's slices, and a ``compare_to`` case
adds format-parity metrics against the other case's verdicts.  Each distinct state is
summarised once (metrics, slices, bootstrap), however many cases read it.

Every record carries the state its numbers come from (and, for a parity case, the compared
case's state): the store writes them beside the record, and ``records/check.py`` recomputes
the numbers from them with the same ``records/case_summary.py`` functions used here.  A
caller that wants each state on disk as soon as it is summarised (so a run stopped before its
records are stored keeps them) hands the :class:`Recorder` a ``write`` function; the harness
writes nothing itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from diffzoo.harness.core.plugins import get_plugin_system
from diffzoo.harness.core.protocols import Dataset, Detector
from diffzoo.harness.core.types import CaseTask
from diffzoo.harness.data.provenance import provenance_of
from diffzoo.harness.metrics import METRICS_VERSION, EvalState
from diffzoo.harness.records.binding import binding_of
from diffzoo.harness.records.case_summary import Summary, case_metrics, summarize
from diffzoo.harness.records.document import ResultRecord, clean_json, environment
from diffzoo.harness.records.model import TRAIN_OVERLAP, Counts, TrainOverlap
from diffzoo.harness.records.policy import ThresholdPolicy, Thresholds
from diffzoo.harness.run.evaluate import EvalResult
from diffzoo.harness.run.model_source import CheckpointInfo
from diffzoo.harness.run.plan import CaseKey, CaseSpec, Job

StateWriter = Callable[[EvalState], None]
"""Keeps a summarised metric state (the caller's store decides where)."""


@dataclass(frozen=True)
class RecordContext:
    """What every record of one job shares.  ``datasets``: the plan's, by fingerprint;
    ``fingerprint``: the run's dataset (a case on another one names it as its training data);
    ``request``: the run's options (:meth:`RunRequest.to_dict`);
    ``overlaps``: the cases scored on images their model was trained on (``--allow-train-overlap``)."""

    detector_name: str
    plugin: str
    detector: Detector
    checkpoint: CheckpointInfo
    job: Job
    datasets: dict[str, Dataset]
    fingerprint: str
    overrides: dict[str, Any]
    device: str
    strict: bool
    seed: int
    thresholds: Thresholds
    request: dict[str, Any] | None = None
    overlaps: Mapping[CaseKey, TrainOverlap] = field(default_factory=dict)


def dataset_info(dataset: Dataset, fingerprint: str, described: bool = True) -> dict[str, Any]:
    """The record's ``dataset`` field: name, fingerprint, the adapter's description, and the
    label map and split scheme the numbers were made under (both part of the record's
    identity); without ``described``, what ``config.train_dataset`` holds of a cross-dataset
    record's training data."""
    prov = provenance_of(dataset)
    info = {"name": dataset.name, "fingerprint": fingerprint, "label_map": prov["label_map"], "split": prov["split"]}
    return {**info, "description": dataset.describe()} if described else info


def run_fields(ctx: RecordContext, case: CaseSpec, used_params: dict[str, Any]) -> dict[str, Any]:
    """The fields of a record of ``case`` that say what made its numbers: the detector, the
    case, the dataset, the seed and the config (without the bootstrap, chosen when it is
    summarised).  Also what the case's state is bound to (records/binding.py).  A case on an
    ``--eval-dataset`` names that dataset in ``dataset`` and the run's in ``config.train_dataset``;
    a case scored on its model's training images says so in ``config.train_overlap`` (held-out
    cases have no such key, so their identity is what it always was)."""
    det, job = ctx.detector, ctx.job
    other = case.dataset != ctx.fingerprint
    trained_on = {"train_dataset": dataset_info(ctx.datasets[ctx.fingerprint], ctx.fingerprint, described=False)}
    overlap = ctx.overlaps.get(case.key)
    # released weights name their release (a model trained here has no such key: its identity is unchanged)
    released = {"release": ctx.checkpoint.release} if ctx.checkpoint.release is not None else {}
    not_held_out = {TRAIN_OVERLAP: overlap.to_dict()} if overlap is not None else {}
    return {
        "detector": {"name": ctx.detector_name, "card": det.card.to_dict(), "task": det.task,
                     "checkpoint_sha256": ctx.checkpoint.sha256, "checkpoint_source": ctx.checkpoint.source,
                     "pretrained": job.config.pretrained, "plugin": ctx.plugin,
                     "plugin_version": get_plugin_system().versions.get(ctx.plugin), **released},
        "case": case.case.to_dict(),
        "dataset": dataset_info(ctx.datasets[case.dataset], case.dataset),
        "seed": ctx.seed,
        "config": {"train": job.config.to_dict(), "train_subset": job.spec.to_dict(), "overrides": ctx.overrides,
                   "cache_key": job.key, "device": ctx.device, "strict": ctx.strict,
                   "distortion_params": used_params, "eval_input": dict(job.eval_input),
                   **(trained_on if other else {}), **not_held_out},
    }


class Recorder:
    """Makes a job's records: ``bootstrap`` resamples with ``seed`` for the CIs; ``write``
    (optional) keeps each state as soon as it is summarised."""

    def __init__(self, bootstrap: int, seed: int, write: StateWriter | None = None):
        self.bootstrap, self.seed, self.write = bootstrap, seed, write
        self._summaries: dict[int, Summary] = {}  # by the state's id; each summary holds its state

    def records(self, job: Job, results: dict[str, EvalResult], ctx: RecordContext) -> list[ResultRecord]:
        """One record per case of ``job`` from its passes' ``results``."""
        states = case_states(job.cases, results)
        for case in job.cases:  # bound before any state is written, so each file holds its binding
            states[case.key].bind(binding_of(clean_json(run_fields(ctx, case, results[case.pass_key].params))))
        return [self.record(case, results[case.pass_key], states[case.key],
                            states.get(case.compare) if case.compare else None, ctx) for case in job.cases]

    def summary(self, state: EvalState) -> Summary:
        """``state``'s summary, computed once (and kept through ``write`` then)."""
        key = id(state)
        if key not in self._summaries:
            self._summaries[key] = summarize(state, self.bootstrap, self.seed)
            if self.write is not None:
                self.write(state)
        return self._summaries[key]

    def record(self, case: CaseSpec, result: EvalResult, state: EvalState, compared: EvalState | None,
               ctx: RecordContext) -> ResultRecord:
        """The record of one case read from ``state`` of ``result``; ``compared``: the state a
        format-parity case compares with, carried so its metrics can be recomputed."""
        summary = self.summary(state)
        c = case.case
        metrics, ci = case_metrics(c, summary, state.label_space.names, lambda name: compared)
        baselines = {}
        if c.task == CaseTask.BINARY and not c.editors and not c.slice_by:
            baselines = {name: {m: s.compute().get(m) for m in ("mIoU", "aAcc", "bF1", "F1")}
                         for name, s in result.baselines.items()}
        fields = run_fields(ctx, case, result.params)
        fields["config"]["bootstrap"] = {"resamples": summary.resamples, "seed": summary.ci_seed}
        policy = ThresholdPolicy.decided(ctx.detector.task, ctx.thresholds, state.image_score_source)
        return ResultRecord.create(
            **fields,
            suite={"name": case.suite.name, "version": case.suite.version,
                   "definition_hash": case.suite.definition_hash()},
            label_space=list(state.label_space.names),
            metrics=metrics,
            ci95=ci,
            metrics_version=METRICS_VERSION,
            threshold_policy=policy.to_dict(),
            baselines=baselines,
            confusion=state.confusion_matrix().tolist() if c.task == CaseTask.SEMANTIC else None,
            slices=summary.slices,
            counts=Counts.of(state.num_images, result.skipped).to_dict(),
            training=ctx.checkpoint.training,
            environment=environment(ctx.device),
            request=ctx.request,
            state=state,
            compared_state=compared if c.compare_to else None,
        )


def case_states(cases: tuple[CaseSpec, ...] | list[CaseSpec], results: dict[str, EvalResult]
                ) -> dict[CaseKey, EvalState]:
    """The state each case reads: its state of its pass, cut to its images (one subset state
    per (pass, state, images), shared by the cases on it)."""
    made: dict[tuple, EvalState] = {}
    out = {}
    for case in cases:
        key = (case.pass_key, case.state_key, case.ids)
        if key not in made:
            state = results[case.pass_key].states[case.state_key]
            made[key] = state.subset(case.ids) if case.ids is not None else state
        out[case.key] = made[key]
    return out
