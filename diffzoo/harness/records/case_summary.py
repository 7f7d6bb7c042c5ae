"""What one case reports from a metric state, computed without a model:
the summary of a state (metrics, slices, bootstrap CIs) and the metrics a
case picks from it.  The writer (``harness/run/record.py``) and the checker
(:mod:`.check`) both use these, so a record's numbers are recomputed
by the very code that wrote them; this module imports no torch, so the
leaderboard commands stay light.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from diffzoo.harness.core.types import CaseTask, JudgedBy, StateKey
from diffzoo.harness.metrics import EvalState
from diffzoo.harness.metrics.catalog import SLICE_SEPARATOR
from diffzoo.harness.metrics.parity import parity_metrics
from diffzoo.harness.metrics.slices import SLICE_KEYS, SliceMetadataMissing
from diffzoo.harness.suites import Case, TrainSpec

log = logging.getLogger(__name__)


SCORE_OPTION = ("image_score", "detector")
"""The case option that marks a case judged by the detector's own image score (IMDL-BenCo's
``pred_label``): in the record's ``case`` field, so the second image row is another record."""


def own_score_case(case: Case) -> Case:
    """``case`` judged by the detector's own image score: the same name (one table, a second
    row), the option ``image_score: detector`` in its ``case`` field (another record)."""
    return replace(case, options=tuple(sorted({**dict(case.options), SCORE_OPTION[0]: SCORE_OPTION[1]}.items())))


def judged_by(case: Case) -> JudgedBy:
    """Whether ``case`` judges images by the detector's own score or by its own rule."""
    return JudgedBy.OWN_SCORE if case.option(SCORE_OPTION[0]) == SCORE_OPTION[1] else JudgedBy.RULE


def state_key(case: Case) -> StateKey:
    """The metric state a case reads: image-level cases the binary one (or, judged by the
    detector's own score, :attr:`StateKey.OWN_SCORE`)."""
    if judged_by(case) is JudgedBy.OWN_SCORE:
        return StateKey.OWN_SCORE
    return StateKey.SEMANTIC if case.task == CaseTask.SEMANTIC else StateKey.BINARY


@dataclass
class Summary:
    """What every record of one metric state carries, computed once."""

    state: EvalState
    values: dict[str, Any]
    slices: dict[str, dict[str, dict[str, float]]]
    ci: dict[str, tuple[float, float]]
    resamples: int = 0  # bootstrap resamples of ``ci`` (0: none)
    ci_seed: int = 0
    missing: dict[str, str] = field(default_factory=dict)
    """Slice key -> why it has no values (no image carries its metadata; the fix)."""


def summarize(state: EvalState, resamples: int = 0, seed: int = 0) -> Summary:
    """Metrics, every slice and (``resamples`` > 0) bootstrap CIs of ``state``.

    A slice key no image carries metadata for has no values (``{}``) and its
    reason in ``missing``: one group of every image would pass for a slice."""
    ci = state.bootstrap(n=resamples, seed=seed) if resamples else {}
    slices: dict[str, dict[str, dict[str, float]]] = {}
    missing: dict[str, str] = {}
    for key in SLICE_KEYS:
        try:
            slices[key] = state.slices(key)
        except SliceMetadataMissing as exc:
            slices[key], missing[key] = {}, str(exc)
    return Summary(state, state.compute(), slices, ci, resamples, seed, missing)


def case_metrics(case: Case, summary: Summary, label_names: tuple[str, ...],
                 compared: Callable[[str], EvalState | None]) -> tuple[dict[str, Any], dict[str, list[float]]]:
    """(metrics, ci95) of one case.  A slice case whose key no image carries
    metadata for reports no slice metric (only ``num_images``) and logs why."""
    values = summary.values
    wanted = list(case.metrics)
    if case.task == CaseTask.SEMANTIC and not case.slice_by:
        wanted += [f"IoU.{n}" for n in label_names if f"IoU.{n}" not in wanted]
    if case.compare_to:
        if (other := compared(case.compare_to)) is not None:
            values = {**values, **parity_metrics(other, summary.state, float(case.option("tolerance", 0.05)))}
    if case.slice_by:
        metrics: dict[str, Any] = {}
        if case.slice_by in summary.missing:
            log.warning("case %s: no metrics per %s: %s", case.name, case.slice_by, summary.missing[case.slice_by])
        for value, sliced in summary.slices[case.slice_by].items():
            metrics.update({f"{m}{SLICE_SEPARATOR}{case.slice_by}={value}": sliced.get(m) for m in case.metrics})
        metrics["num_images"] = values.get("num_images")
        return metrics, {}
    metrics = {m: values.get(m) for m in wanted}
    return metrics, {m: list(summary.ci[m]) for m in case.metrics if m in summary.ci}


def case_from_dict(d: dict[str, Any]) -> Case:
    """The :class:`Case` a record's ``case`` field was written from (``Case.to_dict``)."""
    train = d.get("train") or {}
    return Case(
        name=d["name"], task=d["task"],
        train=TrainSpec(train.get("task", "binary"), train.get("split", "train"),
                        tuple(train.get("exclude_editors", ()))),
        split=d.get("split", "val"), distortion=d.get("distortion", "none"),
        distortion_params=tuple((d.get("distortion_params") or {}).items()), metrics=tuple(d.get("metrics", ())),
        editors=tuple(d.get("editors", ())), authentic=d.get("authentic", True), slice_by=d.get("slice_by", ""),
        compare_to=d.get("compare_to", ""), options=tuple((d.get("options") or {}).items()),
        setting=d.get("setting", ""),
    )
