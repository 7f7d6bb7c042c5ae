"""The cross-dataset suite's side of a run: the ``--eval-dataset`` datasets and their records.

A cross-dataset case (suites/cross.py) is evaluated once per ``--eval-dataset
PATH[:SPLIT]``, with the run's model; its records name the evaluation dataset
in ``dataset`` and the training dataset in ``config.train_dataset``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from diffzoo.harness.core import distributed
from diffzoo.harness.core.errors import ConfigError
from diffzoo.harness.metrics import EvalState
from diffzoo.harness.records.case_summary import OWN_SCORE, metric_task, own_score_case
from diffzoo.harness.run.case_records import RecordContext, dataset_info
from diffzoo.harness.run.evaluate import EvalResult
from diffzoo.harness.run.factories import open_dataset_with
from diffzoo.harness.run.request import eval_dataset_spec
from diffzoo.harness.suites import EVAL_SPLITS, EVAL_SPLITS_OPTION, Case, Suite, is_cross


EvalDataset = tuple[Any, "str | None", str]
"""An opened ``--eval-dataset``: (dataset, the split it named or None, the option as given)."""


def open_eval_datasets(specs: list[str], suites: list[Suite], progress: Any,
                       options: dict[str, Any] | None = None) -> list[EvalDataset]:
    """The ``--eval-dataset`` datasets, opened (by rank 0 first) with the adapter ``options``
    (``--eval-dataset-option``, e.g. OpenSDI's ``kinds=partial``); every split a selected case
    would read is checked here, before any training."""
    cross = [c for s in suites for c in s.cases if is_cross(c)]
    if specs and not cross:
        raise ConfigError("--eval-dataset was given, but no selected suite evaluates other datasets: "
                          "add --suite cross-dataset")
    out: list[EvalDataset] = []
    for spec in specs:
        target, split = eval_dataset_spec(spec)
        try:
            with distributed.main_first():
                ds = open_dataset_with(target, progress, options or {}, flag="--eval-dataset-option")
        except ConfigError as exc:
            raise ConfigError(f"--eval-dataset {spec}: {exc}") from exc
        if split is not None and split not in ds.splits():
            raise ConfigError(f"--eval-dataset {spec}: dataset {ds.name} has no split {split} (it has "
                              f"{', '.join(ds.splits())})")
        if any(other.fingerprint() == ds.fingerprint() and s == split for other, s, _ in out):
            raise ConfigError(f"--eval-dataset {spec}: the same dataset and split is given twice")
        out.append((ds, split, spec))
    for case in cross:
        case_targets(case, out)
    return out


def case_targets(case: Case, eval_datasets: list[EvalDataset]) -> list[tuple[Any, str]]:
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


def cross_states(cases: list[tuple[Suite, Case]], eval_datasets: list[EvalDataset], train: Any,
                 evaluate: Callable[[Any, Case], EvalResult | None]
                 ) -> dict[tuple, tuple[EvalState, EvalResult, dict[str, Any], Any]]:
    """The states of ``cases``' cross-dataset cases: one pass per (evaluation dataset, split)
    any of them reads (``evaluate(dataset, where)``, None on ranks > 0), each case copied with
    the split it read (and judged by the detector's own score too, when it gives one).  Keyed
    by (suite, case, the dataset's fingerprint); values as Runner._evaluate_job's."""
    results: dict[tuple[str, str], EvalResult | None] = {}
    out: dict[tuple, tuple[EvalState, EvalResult, dict[str, Any], Any]] = {}
    for suite, case in cases:
        if not is_cross(case):
            continue
        for ds, split in case_targets(case, eval_datasets):
            key = (ds.fingerprint(), split)
            if key not in results:
                results[key] = evaluate(ds, Case(name="cross-dataset", task="binary", train=train, split=split))
            result = results[key]
            if result is None:
                continue
            here = replace(case, split=split)
            scored = [own_score_case(here)] if case.task == "image" and OWN_SCORE in result.states else []
            for variant in (here, *scored):
                out[(suite.name, variant, ds.fingerprint())] = (result.states[metric_task(variant)], result, {}, ds)
    return out


def cross_context(ctx: RecordContext, trained_on: Any, fingerprint: str, dataset: Any) -> RecordContext:
    """The record context of an evaluation ``dataset``: it in ``dataset``, the training data
    (``trained_on``, of ``fingerprint``) in ``config.train_dataset``."""
    return replace(ctx, dataset=dataset, fingerprint=dataset.fingerprint(),
                   train_dataset=dataset_info(trained_on, fingerprint, described=False))
