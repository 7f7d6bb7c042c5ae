"""diffzoo's public Python entry points: :func:`evaluate` and :func:`train`.

``diffzoo run`` is :func:`evaluate` plus printing, ``diffzoo train`` is
:func:`train` plus printing; everything a run decides (which models to
train, which passes to share, which records to store) happens here and in
the harness, never in the CLI.  Like lm-evaluation-harness's
``simple_evaluate``, one call goes from names to results::

    import diffzoo

    result = diffzoo.evaluate(detector="segformer", suite="standard", dataset="mini", out="diffzoo-out")
    for record in result.records:
        print(record.body.suite.name, record.body.case_name, record.metrics)

Options are ``diffzoo run``'s, spelled as Python names (``iterations=200``,
``recipe="paper"``, ``dataset_options={"split_file": "splits.json"}``,
``holdout=[("sd2", "glide")]``); an unknown one is a ConfigError.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from diffzoo.harness.core import distributed
from diffzoo.harness.core.errors import ConfigError
from diffzoo.harness.core.progress import Progress
from diffzoo.harness.records.document import ResultRecord
from diffzoo.harness.run.planning import Plan
from diffzoo.harness.run.references import reference_requests
from diffzoo.harness.run.request import RunRequest
from diffzoo.harness.run.runner import Runner, TrainOutput
from diffzoo.leaderboard.outdir import claim_output_dir
from diffzoo.leaderboard.render.plots import confusion_png
from diffzoo.leaderboard.training_logs import copy_training_logs
from diffzoo.leaderboard.store import AddOutcome, RecordStore
from diffzoo.leaderboard.summary.build import Summary, build_summary
from diffzoo.leaderboard.summary.write import write_summary
from diffzoo.leaderboard.tables import slugify

OUTPUTS_OUTSIDE_STORE = ("summary.md", "plots", "train")
"""What a run writes in ``out`` besides the store (records/, states/): checked up front."""

_TRAIN_OVERRIDES = ("iterations", "batch_size", "crop_size", "recipe")
_REQUEST_FIELDS = {f.name for f in fields(RunRequest)} - {"detector", "suites", "dataset", "train_overrides",
                                                        "dataset_options", "unseen_pairs"}


def make_request(detector: str, suite: str = "all", dataset: str = "mini", *,
                 labels: str | None = None, extra_authentic: str | Path | None = None,
                 dataset_options: Mapping[str, Any] | None = None,
                 holdout: Iterable[tuple[str, str]] = (), **options: Any) -> RunRequest:
    """The :class:`RunRequest` that ``options`` describe (``diffzoo run``'s options
    as Python names); an unknown option is a ConfigError naming it."""
    train_overrides = {k: options.pop(k) for k in _TRAIN_OVERRIDES if k in options}
    train_overrides.setdefault("recipe", "native")
    unknown = sorted(set(options) - _REQUEST_FIELDS)
    if unknown:
        known = sorted(_REQUEST_FIELDS | set(_TRAIN_OVERRIDES) | {"labels", "extra_authentic", "dataset_options",
                                                                  "holdout"})
        raise ConfigError(f"unknown option(s) {', '.join(unknown)}; options are: {', '.join(known)}")
    data_options = dict(dataset_options or {})
    data_options.update({k: v for k, v in (("label_space", labels), ("extra_authentic", extra_authentic)) if v})
    if "checkpoints" in options:
        options["checkpoints"] = [Path(p) for p in options["checkpoints"]]
    if options.get("out") is not None:
        options["out"] = Path(options["out"])
    return RunRequest(detector=detector, suites=suite, dataset=dataset, train_overrides=train_overrides,
                      dataset_options=data_options, unseen_pairs=[tuple(p) for p in holdout], **options)


@dataclass
class Evaluation:
    """What :func:`evaluate` did: its plans, records, and what the store made of them."""

    runners: list[Runner]
    """The main detector's runner first, then one per reference detector; each has its ``plan_``."""
    records: list[ResultRecord] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Cases without images; passes that reused the undistorted one."""
    skipped: dict[str, dict[str, str]] = field(default_factory=dict)
    """Samples skipped in any pass: id -> {"kind", "reason"}."""
    summary: Summary | None = None
    outcomes: list[AddOutcome] = field(default_factory=list)
    """What the record store did with each record (empty without ``out``)."""
    store: RecordStore | None = None
    written: dict[str, Path] = field(default_factory=dict)
    """Summary files written to ``out`` by name."""
    checkpoints: list[dict[str, Any]] = field(default_factory=list)
    """Every model the run trained or loaded (its checkpoint entry), the reference detectors' too."""
    training: dict[str, Path] = field(default_factory=dict)
    """Model name -> its training log folder in ``out`` (``train/<model>/``)."""
    seconds: float = 0.0

    @property
    def dataset(self) -> Any:
        return self.runners[0].dataset

    @property
    def plans(self) -> list[Plan]:
        return [r.plan_ for r in self.runners]

    @property
    def conflicts(self) -> list[AddOutcome]:
        """Records already stored for the same run with different numbers."""
        return [o for o in self.outcomes if o.status == "present" and o.differs]


def evaluate(detector: str, suite: str = "all", dataset: str = "mini", *, out: str | Path | None = None,
             references: bool = True, rerun: bool = False, force: bool = False, plan_only: bool = False,
             progress: Progress | None = None, on_plan: Callable[[Evaluation], None] | None = None,
             on_result: Callable[[Evaluation], None] | None = None, **options: Any) -> Evaluation:
    """Run ``suite`` (a name, a wildcard or ``all``) for ``detector`` on ``dataset``.

    Trains or loads every model the plan needs, evaluates each distinct pass
    once, and returns one :class:`ResultRecord` per (suite, case), plus the
    reference detectors' records when ``references``.  With ``out`` the
    records go to the record store there (one row per run; ``rerun``
    replaces an existing one) with ``summary.md`` and plots.  ``on_plan``
    sees the plans before any work (with ``plan_only`` nothing else is done:
    no training, no evaluation, nothing written); ``on_result`` sees the
    result before a conflict with stored records is raised (a ConfigError).  Under torchrun
    every rank calls this; rank 0 alone returns records.
    """
    start = time.monotonic()
    request = make_request(detector, suite, dataset, out=out, **options)
    # before any work: an out folder that is not diffzoo's is refused now, not after hours of training
    claim = out is not None and not plan_only and distributed.launch_rank() == 0
    out_dir = claim_output_dir(Path(out), force) if claim else None
    if out_dir is not None:
        for name in OUTPUTS_OUTSIDE_STORE:
            out_dir.check_writable(name)
    main = Runner(request, progress)
    main.plan()
    result = Evaluation([main])
    if references:
        for ref in reference_requests(request, main.suites, main.dataset.reference_substitutes):
            other = Runner(ref, main.progress)
            other.plan()
            result.runners.append(other)
    if on_plan is not None:
        on_plan(result)
    if plan_only:
        return result
    for runner in result.runners:
        output = runner.run()
        result.records.extend(output.records)
        result.skipped.update(output.skipped)
        result.notes.extend(output.notes)
        result.checkpoints.extend(output.checkpoints)
    if not distributed.is_main():
        return result
    result.summary = build_summary(result.records)
    if out is not None:
        _store(result, Path(out), rerun)
    result.seconds = time.monotonic() - start
    if on_result is not None:
        on_result(result)
    if result.conflicts:
        where = "(listed above)" if on_result is not None else f"(first: {result.conflicts[0].reason})"
        raise ConfigError(
            f"{len(result.conflicts)} result(s) of this run were already recorded with different numbers {where}: "
            "the same run is not reproducible here; the stored records were kept. Re-run with --rerun to "
            "replace them (the old ones are kept under replaced/), or find what differs (device, library versions)"
        )
    return result


def _store(result: Evaluation, out: Path, rerun: bool) -> None:
    """Records into the store at ``out``, a confusion matrix PNG per semantic record, the summary."""
    store = result.store = RecordStore(out)
    result.outcomes = [store.add(record, replace=rerun) for record in result.records]
    ds = result.dataset
    for record in result.records:
        body = record.body
        if body.confusion:
            name = slugify(f"{body.detector.name}-{body.suite.name}-{body.case_name}")
            confusion_png(body.confusion, body.label_space, out / "plots" / f"{name}-confusion.png",
                          title=f"{body.detector.name} on {ds.name}")
    result.training = copy_training_logs(result.checkpoints, out)
    notice = ds.notice
    result.written = write_summary(result.summary, out, title=f"diffzoo run: {result.runners[0].entry.name} on "
                                   f"{ds.name}", notes=[notice] if notice else [])


def train(detector: str, dataset: str = "mini", *, task: str = "binary", exclude_editors: Iterable[str] = (),
          out: str | Path | None = None, progress: Progress | None = None,
          on_plan: Callable[[Runner, Plan], None] | None = None, **options: Any) -> TrainOutput:
    """Train one ``task`` model of ``detector`` on ``dataset``'s train split, as
    :func:`evaluate` would (the same cache key), and return it with its checkpoint;
    ``out`` also gets a copy of the checkpoint."""
    request = make_request(detector, "", dataset, out=out, **options)
    runner = Runner(request, progress)
    excluded = tuple(exclude_editors)
    plan = runner.plan_training(task, excluded)
    if on_plan is not None:
        on_plan(runner, plan)
    return runner.train(task, excluded)
