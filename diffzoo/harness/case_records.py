"""From metric states to result records: one record per (suite, case).

Cases of one model that read the same (split, distortion) pass share its
metric states; a case restricted to some editors reads the subset of the
pass's per-image rows, a ``slice_by`` case reports the pass's slices, and a
``compare_to`` case adds format-parity metrics against the other case's
verdicts.  Each distinct state is summarised once (metrics, slices,
bootstrap, state file), however many cases read it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .calibration import policy_record
from .cards import stable_hash
from .evaluate import EvalResult, Thresholds
from .fsutil import atomic_write_text
from .metrics import METRICS_VERSION, EvalState
from .metrics.catalog import SLICE_SEPARATOR
from .metrics.parity import parity_metrics
from .metrics.slices import SLICE_KEYS
from .protocols import Detector
from .records import ResultRecord, environment
from .suites import Case, Suite


def metric_task(case: Case) -> str:
    """The metric state a case reads: image-level cases use the binary one."""
    return "semantic" if case.task == "semantic" else "binary"


@dataclass
class Summary:
    """What every record of one metric state carries, computed once."""

    state: EvalState
    values: dict[str, Any]
    slices: dict[str, dict[str, dict[str, float]]]
    ci: dict[str, tuple[float, float]]
    state_file: str | None


class Summaries:
    """Summaries keyed by the identity of their state (computed on first use;
    each cached summary holds its state, so an id is never reused meanwhile)."""

    def __init__(self, bootstrap: int, seed: int, out: Path | None):
        self.bootstrap, self.seed, self.out = bootstrap, seed, out
        self._cache: dict[int, Summary] = {}

    def get(self, state: EvalState) -> Summary:
        key = id(state)
        if key not in self._cache:
            ci = state.bootstrap(n=self.bootstrap, seed=self.seed) if self.bootstrap else {}
            self._cache[key] = Summary(state, state.compute(), {k: state.slices(k) for k in SLICE_KEYS},
                                       ci, self._write_state(state))
        return self._cache[key]

    def _write_state(self, state: EvalState) -> str | None:
        if self.out is None:
            return None
        body = state.state_dict()
        name = f"states/{stable_hash(body, length=16)}.json"
        path = Path(self.out) / name
        if not path.exists():
            atomic_write_text(path, json.dumps(body))
        return name


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


def case_metrics(case: Case, summary: Summary, label_names: tuple[str, ...],
                 compared: Callable[[str], EvalState | None]) -> tuple[dict[str, Any], dict[str, list[float]]]:
    """(metrics, ci95) of one case."""
    values = summary.values
    wanted = list(case.metrics)
    if case.task == "semantic" and not case.slice_by:
        wanted += [f"IoU.{n}" for n in label_names if f"IoU.{n}" not in wanted]
    if case.compare_to:
        other = compared(case.compare_to)
        if other is not None:
            values = {**values, **parity_metrics(other, summary.state, float(case.option("tolerance", 0.05)))}
    if case.slice_by:
        metrics: dict[str, Any] = {}
        for value, sliced in summary.slices[case.slice_by].items():
            metrics.update({f"{m}{SLICE_SEPARATOR}{case.slice_by}={value}": sliced.get(m) for m in case.metrics})
        metrics["num_images"] = values.get("num_images")
        return metrics, {}
    metrics = {m: values.get(m) for m in wanted}
    ci = {m: list(summary.ci[m]) for m in case.metrics if m in summary.ci}
    return metrics, ci


@dataclass
class RecordContext:
    """What every record of one model shares."""

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


def build_record(ctx: RecordContext, suite: Suite, case: Case, summary: Summary, result: EvalResult,
                 metrics: dict[str, Any], ci: dict[str, list[float]], used_params: dict[str, Any]) -> ResultRecord:
    state = summary.state
    baselines = {}
    if case.task == "binary" and not case.editors and not case.slice_by:
        baselines = {name: {m: s.compute().get(m) for m in ("mIoU", "aAcc", "bF1", "F1")}
                     for name, s in result.baselines.items()}
    det = ctx.detector
    return ResultRecord.create(
        detector={"name": ctx.detector_name, "card": det.card.to_dict(), "task": det.task,
                  "checkpoint_sha256": ctx.checkpoint["sha256"], "checkpoint_source": ctx.checkpoint["source"],
                  "pretrained": ctx.pretrained, "plugin": ctx.plugin},
        suite={"name": suite.name, "version": suite.version, "definition_hash": suite.definition_hash()},
        case=case.to_dict(),
        dataset={"name": ctx.dataset.name, "fingerprint": ctx.fingerprint,
                 "description": ctx.dataset.describe()},
        label_space=list(state.label_space.names),
        metrics=metrics,
        ci95=ci,
        metrics_version=METRICS_VERSION,
        threshold_policy=policy_record(det, ctx.thresholds, state),
        baselines=baselines,
        confusion=state.confusion_matrix().tolist() if case.task == "semantic" else None,
        slices=summary.slices,
        counts={"evaluated": state.num_images, "skipped_corrupt": len(result.skipped),
                "skipped": result.skipped[:50]},
        seed=ctx.seed,
        config={"train": ctx.train_config, "train_subset": ctx.train_subset, "overrides": ctx.overrides,
                "cache_key": ctx.cache_key, "device": ctx.device, "strict": ctx.strict,
                "distortion_params": used_params},
        training=ctx.checkpoint.get("training"),
        environment=environment(ctx.device),
        state_file=summary.state_file,
    )
