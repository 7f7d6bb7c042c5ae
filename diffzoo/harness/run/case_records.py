"""From metric states to result records: one record per (suite, case).

Cases of one model that read the same (split, distortion) pass share its
metric states; a case restricted to some editors reads the subset of the
pass's per-image rows, a ``slice_by`` case reports the pass's slices, and a
``compare_to`` case adds format-parity metrics against the other case's
verdicts.  Each distinct state is summarised once (metrics, slices,
bootstrap), however many cases read it.

Every record carries the state its numbers come from (and, for a parity
case, the compared case's state): the store writes them beside the record,
and :mod:`.record_check` recomputes the numbers from them with the same
:mod:`.case_summary` functions used here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from diffzoo.harness.run.thresholds import policy_record
from diffzoo.harness.data.provenance import provenance_of
from diffzoo.harness.records.case_summary import OWN_SCORE, Summary, case_metrics, metric_task, own_score_case, summarize
from diffzoo.harness.records.policy import Thresholds
from diffzoo.harness.run.evaluate import EvalResult
from diffzoo.harness.metrics import METRICS_VERSION, EvalState
from diffzoo.harness.core.plugins import get_plugin_system
from diffzoo.harness.core.protocols import Detector
from diffzoo.harness.records.model import Counts
from diffzoo.harness.records.binding import binding_of
from diffzoo.harness.records.document import ResultRecord, clean_json, environment, state_blob, store_lock, write_state_file
from diffzoo.harness.suites import Case, Suite

__all__ = ["OWN_SCORE", "RecordContext", "Summaries", "Summary", "bind_states", "build_record", "case_metrics",
           "case_states", "dataset_info", "metric_task", "own_score_case", "run_fields", "summarize"]


class Summaries:
    """Summaries keyed by the identity of their state (computed on first use;
    each cached summary holds its state, so an id is never reused meanwhile).

    ``out``: when given, each state is also written to ``out/states/`` at
    once (content-addressed; a file already there is verified, never
    trusted), so a run stopped before its records are stored keeps them.
    """

    def __init__(self, bootstrap: int, seed: int, out: Path | None = None):
        self.bootstrap, self.seed, self.out = bootstrap, seed, out
        self._cache: dict[int, Summary] = {}

    def get(self, state: EvalState) -> Summary:
        key = id(state)
        if key not in self._cache:
            self._cache[key] = summarize(state, self.bootstrap, self.seed)
            if self.out is not None:
                ref, blob = state_blob(state)
                with store_lock(Path(self.out)):
                    write_state_file(Path(self.out), ref.file, blob)
        return self._cache[key]


def case_states(cases: list[Case], result: EvalResult, subset_ids: dict[tuple, frozenset[str]]
                ) -> list[EvalState]:
    """The state each case reads: its task's state of the pass, cut to its
    images (one subset state per (task, images), shared by the cases on it)."""
    made: dict[tuple, EvalState] = {}
    out = []
    for case in cases:
        key = (metric_task(case), case.subset_key)
        if key not in made:
            state = result.states[key[0]]
            made[key] = state.subset(subset_ids[case.subset_key]) if case.editors else state
        out.append(made[key])
    return out


@dataclass
class RecordContext:
    """What every record of one model shares.  ``plugin_version``: the
    version of the plugin that registered the detector (None: asked of the
    plugin system)."""

    detector_name: str
    plugin: str
    detector: Detector
    checkpoint: dict[str, Any]
    dataset: Any
    fingerprint: str
    train_config: dict[str, Any]
    train_subset: dict[str, Any]
    overrides: dict[str, Any]
    cache_key: str
    pretrained: bool
    device: str
    strict: bool
    seed: int
    thresholds: Thresholds
    plugin_version: str | None = None
    eval_input: dict[str, Any] | None = None
    """How images are brought to the detector (the recipe's test-time rule,
    e.g. ``{"recipe": "paper", "short_side": 512}``); None: as stored."""
    train_dataset: dict[str, Any] | None = None
    """A cross-dataset record's training dataset (name, fingerprint, label map, split scheme):
    ``dataset`` is then the evaluation dataset.  None: the model was trained on ``dataset``."""


def dataset_info(dataset: Any, fingerprint: str, described: bool = True) -> dict[str, Any]:
    """The record's ``dataset`` field: name, fingerprint, the adapter's
    description, and the label map and split scheme the numbers were made
    under (both part of the record's identity); without ``described``, what
    ``config.train_dataset`` holds of a cross-dataset record's training data."""
    prov = provenance_of(dataset)
    info = {"name": dataset.name, "fingerprint": fingerprint, "label_map": prov["label_map"], "split": prov["split"]}
    return {**info, "description": dataset.describe()} if described else info


def run_fields(ctx: RecordContext, case: Case, used_params: dict[str, Any]) -> dict[str, Any]:
    """The fields of a record of ``case`` that say what made its numbers: the detector, the
    case, the dataset, the seed and the config (without the bootstrap, chosen when it is
    summarised).  Also what the case's state is bound to (:func:`bind_states`)."""
    det = ctx.detector
    plugin_version = ctx.plugin_version or get_plugin_system().versions.get(ctx.plugin)
    return {
        "detector": {"name": ctx.detector_name, "card": det.card.to_dict(), "task": det.task,
                     "checkpoint_sha256": ctx.checkpoint["sha256"], "checkpoint_source": ctx.checkpoint["source"],
                     "pretrained": ctx.pretrained, "plugin": ctx.plugin, "plugin_version": plugin_version},
        "case": case.to_dict(),
        "dataset": dataset_info(ctx.dataset, ctx.fingerprint),
        "seed": ctx.seed,
        "config": {"train": ctx.train_config, "train_subset": ctx.train_subset, "overrides": ctx.overrides,
                   "cache_key": ctx.cache_key, "device": ctx.device, "strict": ctx.strict,
                   "distortion_params": used_params, "eval_input": ctx.eval_input or {"recipe": "native"},
                   **({"train_dataset": ctx.train_dataset} if ctx.train_dataset is not None else {})},
    }


def bind_states(ctx: RecordContext, cases: list[tuple[Case, EvalState, dict[str, Any]]]) -> None:
    """Bind each case's state to the run that made it (records/binding.py), before any
    state is written or summarised: cases reading one pass share its state and its binding."""
    for case, state, used_params in cases:
        state.bind(binding_of(clean_json(run_fields(ctx, case, used_params))))


def build_record(ctx: RecordContext, suite: Suite, case: Case, summary: Summary, result: EvalResult,
                 metrics: dict[str, Any], ci: dict[str, list[float]], used_params: dict[str, Any],
                 compared_state: EvalState | None = None) -> ResultRecord:
    """The record of one case; ``compared_state``: the state a format-parity
    case (``compare_to``) was compared with, carried so its metrics can be
    recomputed."""
    state = summary.state
    baselines = {}
    if case.task == "binary" and not case.editors and not case.slice_by:
        baselines = {name: {m: s.compute().get(m) for m in ("mIoU", "aAcc", "bF1", "F1")}
                     for name, s in result.baselines.items()}
    fields = run_fields(ctx, case, used_params)
    fields["config"]["bootstrap"] = {"resamples": summary.resamples, "seed": summary.ci_seed}
    return ResultRecord.create(
        **fields,
        suite={"name": suite.name, "version": suite.version, "definition_hash": suite.definition_hash()},
        label_space=list(state.label_space.names),
        metrics=metrics,
        ci95=ci,
        metrics_version=METRICS_VERSION,
        threshold_policy=policy_record(ctx.detector, ctx.thresholds, state),
        baselines=baselines,
        confusion=state.confusion_matrix().tolist() if case.task == "semantic" else None,
        slices=summary.slices,
        counts=Counts.of(state.num_images, result.skipped).to_dict(),
        training=ctx.checkpoint.get("training"),
        environment=environment(ctx.device),
        state=state,
        compared_state=compared_state if case.compare_to else None,
    )
