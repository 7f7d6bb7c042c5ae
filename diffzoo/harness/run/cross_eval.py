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
from diffzoo.harness.run.factories import open_dataset
from diffzoo.harness.run.request import eval_dataset_spec
from diffzoo.harness.suites import EVAL_SPLITS, Case, Suite, is_cross


def open_eval_datasets(specs: list[str], suites: list[Suite], progress: Any) -> list[tuple[Any, str]]:
    """The ``--eval-dataset`` datasets, opened (by rank 0 first), each with the split it is read at."""
    if specs and not any(is_cross(c) for s in suites for c in s.cases):
        raise ConfigError("--eval-dataset was given, but no selected suite evaluates other datasets: "
                          "add --suite cross-dataset")
    out: list[tuple[Any, str]] = []
    for spec in specs:
        target, split = eval_dataset_spec(spec)
        with distributed.main_first():
            ds = open_dataset(target, progress)
        split = split or next((s for s in EVAL_SPLITS if s in ds.splits()), None)
        if split not in ds.splits():
            raise ConfigError(f"--eval-dataset {spec}: dataset {ds.name} has no split "
                              f"{split or ' or '.join(EVAL_SPLITS)} (it has {', '.join(ds.splits())}); "
                              "name the one to evaluate as PATH:SPLIT")
        if any(other.fingerprint() == ds.fingerprint() and s == split for other, s in out):
            raise ConfigError(f"--eval-dataset {spec}: the same dataset and split is given twice")
        out.append((ds, split))
    return out


def cross_states(cases: list[tuple[Suite, Case]], eval_datasets: list[tuple[Any, str]], train: Any,
                 evaluate: Callable[[Any, Case], EvalResult | None]
                 ) -> dict[tuple, tuple[EvalState, EvalResult, dict[str, Any], Any]]:
    """The states of ``cases``' cross-dataset cases: one pass per evaluation dataset
    (``evaluate(dataset, where)``, None on ranks > 0), each case copied with the split it read
    (and judged by the detector's own score too, when it gives one).  Keyed by (suite, case,
    the dataset's fingerprint); values as Runner._evaluate_job's."""
    cross = [(suite, case) for suite, case in cases if is_cross(case)]
    out: dict[tuple, tuple[EvalState, EvalResult, dict[str, Any], Any]] = {}
    for ds, split in eval_datasets if cross else ():
        result = evaluate(ds, Case(name="cross-dataset", task="binary", train=train, split=split))
        if result is None:
            continue
        for suite, case in cross:
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
