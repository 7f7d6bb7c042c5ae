"""diffzoo's public Python entry points: :func:`evaluate` and :func:`train`.

``diffzoo run`` is :func:`evaluate` plus printing, ``diffzoo train`` is :func:`train` plus
printing; everything a run decides (which models to train, which passes to share, which
records to store) happens here and in the harness, never in the CLI.  Like
lm-evaluation-harness's ``simple_evaluate``, one call goes from names to results::

    import diffzoo

    result = diffzoo.evaluate(detector="segformer", suite="standard", dataset="mini", out="diffzoo-out")
    for record in result.records:
        print(record.body.suite.name, record.body.case_name, record.metrics)

The options are ``diffzoo run``'s, by their flag names (``iterations=200``,
``recipe="paper"``, ``dataset_option={"split_file": "splits.json"}``,
``holdout=[("sd2", "glide")]``): the fields of :class:`RunRequest`, which may also be given
whole (``evaluate(request=RunRequest(...))``); an unknown one is a ConfigError.
"""

from __future__ import annotations

import inspect
import json
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field, fields, replace
from functools import partial
from pathlib import Path
from typing import Any

from diffzoo.harness.core import distributed
from diffzoo.harness.core.errors import ConfigError, UnknownNameError
from diffzoo.harness.core.fsutil import sha256_file
from diffzoo.harness.core.plugins import get_registry
from diffzoo.harness.core.progress import LoggedProgress, NullProgress, Progress, reporting
from diffzoo.harness.core.protocols import Dataset
from diffzoo.harness.core.train_config import TRAIN_OPTIONS
from diffzoo.harness.core.types import Task, check_task
from diffzoo.harness.metrics import METRICS_VERSION
from diffzoo.harness.models.checkpoints import (
    META_FILE,
    WEIGHTS_FILE,
    check_copy_target,
    checkpoint_meta,
    copy_checkpoint,
    read_meta,
)
from diffzoo.harness.records.document import ResultRecord, keep_state
from diffzoo.harness.records.model import RecordBody
from diffzoo.harness.run.factories import open_dataset
from diffzoo.harness.run.model_source import CheckpointInfo
from diffzoo.harness.run.plan import Plan
from diffzoo.harness.run.references import reference_requests
from diffzoo.harness.run.request import (
    TRAIN_FIELDS,
    RunRequest,
    check_known,
    check_suite_given,
    option_keys,
    typed_value,
)
from diffzoo.harness.run.runner import Runner, TrainOutput
from diffzoo.harness.run.thresholds import calibrated_split
from diffzoo.leaderboard.layouts.paper import Summary, build_summary
from diffzoo.leaderboard.outdir import (
    PLOTS_DIR,
    SUMMARY_FILE,
    TRAIN_DIR,
    check_out_unread,
    claim_output_dir,
    output_log,
)
from diffzoo.leaderboard.render.plots import confusion_png
from diffzoo.leaderboard.render.text import write_summary
from diffzoo.leaderboard.store import AddOutcome, RecordStore
from diffzoo.leaderboard.table import slugify
from diffzoo.leaderboard.training_logs import copy_training_logs

OUTPUTS_OUTSIDE_STORE = (SUMMARY_FILE, PLOTS_DIR, TRAIN_DIR)
"""What a run writes in ``out`` besides the store (records/, states/): checked up front."""


def make_request(request: RunRequest | Mapping[str, Any] | None = None, **options: Any) -> RunRequest:
    """``request`` (or the defaults; a mapping is read as a ``--config`` file's keys, either spelling) with
    ``options`` (flag names; None: not given) applied, validated as one :class:`RunRequest`."""
    if isinstance(request, RunRequest):
        request = {f.name: getattr(request, f.name) for f in fields(RunRequest)}
    if not isinstance(request, Mapping | None):
        raise ConfigError(f"request= takes a RunRequest or a mapping of its fields, got {type(request).__name__}")
    return RunRequest.from_dict(option_keys(request or {}, "request="),
                                **{k: v for k, v in options.items() if v is not None})


def _keywords(entry: Callable[..., Any]) -> list[str]:
    """The keywords ``entry`` (:func:`evaluate`, :func:`train`) takes itself, besides a request's options."""
    return [p.name for p in inspect.signature(entry).parameters.values() if p.kind != p.VAR_KEYWORD]


def _check_hooks(progress: Any, **hooks: Any) -> None:
    """A ConfigError naming the keyword of :func:`evaluate` or :func:`train` given no
    :class:`Progress` (an object with a ``task`` method) or, of a hook (``on_plan=``), nothing
    callable (None: none given), before any work: either would fail only where it is first used."""
    if progress is not None and not callable(getattr(progress, "task", None)):
        raise ConfigError(f"progress= takes a Progress (an object with a task(description, total) method), "
                          f"got {progress!r}")
    for name, hook in hooks.items():
        if hook is not None and not callable(hook):
            raise ConfigError(f"{name}= takes a function, got {hook!r}")


@dataclass
class Evaluation:
    """What :func:`evaluate` did: its plans, records, and what the store made of them.
    Every type it holds is exported by ``diffzoo``."""

    request: RunRequest
    dataset: Dataset
    plans: list[Plan] = field(default_factory=list)
    """The main detector's plan first, then one per reference detector."""
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
    checkpoints: list[CheckpointInfo] = field(default_factory=list)
    """Every model the run trained or loaded, the reference detectors' too."""
    training: dict[str, Path] = field(default_factory=dict)
    """Model name -> its training log folder in ``out`` (``train/<model>/``)."""
    seconds: float = 0.0

    @property
    def conflicts(self) -> list[AddOutcome]:
        """Records already stored for the same run with different numbers, or in a file that is no
        valid record (its place taken: this run's record is not stored)."""
        return [o for o in self.outcomes if o.status == "present" and (o.differs or o.stored_invalid)]


def evaluate(detector: str | None = None, suite: str | None = None, dataset: str | None = None, *,
             request: RunRequest | Mapping[str, Any] | None = None, out: str | Path | None = None,
             references: bool = True, rerun: bool = False, force: bool = False, plan_only: bool = False,
             progress: Progress | None = None, on_plan: Callable[[Evaluation], None] | None = None,
             on_result: Callable[[Evaluation], None] | None = None,
             only: Collection[tuple[str, str]] | None = None, **options: Any) -> Evaluation:
    """Run ``suite`` (a name, a wildcard or ``all``) for ``detector`` on ``dataset``, with the
    options of :class:`RunRequest` (or ``request`` itself, a RunRequest or a mapping of its
    fields as a ``--config`` file gives them, with any option given changed).

    Trains or loads every model the plan needs, evaluates each distinct pass once, and returns
    one :class:`ResultRecord` per (suite, case), plus the reference detectors' records when
    ``references``.  With ``out`` the records go to the record store there (one row per run;
    ``rerun`` replaces an existing one) with ``summary.md`` and plots.  ``on_plan`` sees the
    plans before any work (with ``plan_only`` nothing else is done: no training, no
    evaluation, nothing written); ``on_result`` sees the result before a conflict with stored
    records is raised (a ConfigError); ``only``: the (suite, case) names to run (None: every
    case of the suites; with reference detectors to run, a ConfigError).  Under torchrun every
    rank calls this and gets the records; rank 0 alone writes.
    """
    start = time.monotonic()
    check_known(options, [*(f.name for f in fields(RunRequest)), *_keywords(evaluate)])  # plan= is plan_only=
    _check_hooks(progress, on_plan=on_plan, on_result=on_result)
    request = make_request(request, detector=detector, suite=suite, dataset=dataset, **options)
    out = None if out is None else typed_value("--out", out, Path)  # "" is no folder: pathlib reads it as "."
    only = None if only is None else typed_value("only=", only, list[tuple[str, str]])
    references, rerun, force, plan_only = (typed_value(flag, value, bool) for flag, value in (
        ("--references", references), ("--rerun", rerun), ("--force", force), ("--plan", plan_only)))
    check_suite_given(request.suite)
    if out is None and (unread := [f"{k}=True" for k, v in (("rerun", rerun), ("force", force)) if v]):
        one = len(unread) == 1
        raise ConfigError(f"{' and '.join(unread)} {'acts' if one else 'act'} on the store at out=, and no out= is "
                          f"given: give out=DIR, or leave {'it' if one else 'them'} out")
    # before any work: an out folder that is not diffzoo's is refused now, not after hours of training;
    # it is made once the plan stands, so a run refused while planning (a device, a dataset) leaves none;
    # a plan is checked the same way, so a plan that passes names an --out the run can use
    if out is not None and distributed.launch_rank() == 0:
        check_out_unread(Path(out), request)
        claim_output_dir(Path(out), force, make=False, writes=OUTPUTS_OUTSIDE_STORE)
    claim = out is not None and not plan_only and distributed.launch_rank() == 0
    logged = output_log(Path(out), "run") if claim else None
    if logged is not None:
        progress = LoggedProgress(progress or NullProgress(), logged.note)
    with logged.attached() if logged is not None else nullcontext(), reporting(progress):
        if logged is not None:
            logged.note_command()
            logged.note(f"request: {json.dumps(request.to_dict(), default=str)}")
        write = partial(keep_state, Path(out)) if claim else None
        main = Runner(request, progress, write, only)
        refs = reference_requests(request, main.suites, main.dataset.reference_substitutes) if references else []
        if refs and only is not None:  # a row run alone is never the whole reference set's, unsaid
            raise ConfigError(f"only= limits the cases of {request.detector} alone, and the reference detectors ("
                              f"{', '.join(f'{r.detector}' for r in refs)}) would run every case of theirs: pass "
                              "references=False with only=")
        runners = [main, *(Runner(ref, main.progress, write) for ref in refs)]
        if main.release is not None and len(runners) == 1:  # references train with the run's training options
            request.check_trains_nothing(main.release.name)
        result = Evaluation(request, main.dataset, [r.plan for r in runners])
        if on_plan is not None:
            on_plan(result)
        if plan_only:
            return result
        if logged is not None:
            logged.note(f"dataset {result.dataset.name} (fingerprint {result.plans[0].fingerprint})")
            for plan in result.plans:
                for line in plan.describe():
                    logged.note(f"plan {line}")
                for line in plan.pass_lines():
                    logged.note(f"passes {line}")
        out_dir = claim_output_dir(Path(out), force, writes=OUTPUTS_OUTSIDE_STORE) if claim else None
        if logged is not None and out_dir is not None:  # the lines so far reach the file, before loaders fork
            logged.note(f"output folder {out_dir.root} claimed")
        for runner in runners:
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
        if logged is not None:
            made = Counter(o.status for o in result.outcomes)
            logged.note(f"done in {result.seconds:.0f} s: {len(result.records)} record(s) ("
                        + ", ".join(f"{n} {status}" for status, n in sorted(made.items())) + ")")
        if on_result is not None:
            on_result(result)
        if result.conflicts:
            where = "(listed above)" if on_result is not None else f"(first: {result.conflicts[0].reason})"
            if invalid := [o for o in result.conflicts if o.stored_invalid]:
                raise ConfigError(
                    f"{len(invalid)} result(s) of this run are stored in a file that is not a valid record or fails "
                    f"verification {where}: the stored files were kept and this run's results in their place not "
                    "stored. Re-run with --rerun to replace them (the old files are kept under replaced/)")
            raise ConfigError(
                f"{len(result.conflicts)} result(s) of this run were already recorded with different numbers "
                f"{where}: the same run is not reproducible here; the stored records were kept. Re-run with "
                "--rerun to replace them (the old ones are kept under replaced/), or find what differs (device, "
                "library versions)")
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
            confusion_png(body.confusion, body.label_space, out / PLOTS_DIR / f"{name}-confusion.png",
                          title=f"{body.detector.name} on {ds.name}")
    result.training = copy_training_logs(result.checkpoints, out)
    result.written = write_summary(result.summary, out, title=f"diffzoo run: {result.plans[0].card.name} on "
                                   f"{ds.name}", notes=[ds.notice] if ds.notice else [])


def train(detector: str | None = None, dataset: str | None = None, *, task: str = "binary",
          exclude_editors: Iterable[str] | str = (), out: str | Path | None = None,
          request: RunRequest | Mapping[str, Any] | None = None, progress: Progress | None = None,
          on_plan: Callable[[Runner, Plan], None] | None = None, **options: Any) -> TrainOutput:
    """Train one ``task`` model of ``detector`` on ``dataset``'s train split, as :func:`evaluate`
    would (the same cache key), and return it with its checkpoint; ``out`` also gets a copy of
    the checkpoint (written by rank 0)."""
    _check_hooks(progress, on_plan=on_plan)
    # evaluate()'s options are never ignored unsaid (a holdout= trained on every editor); the runner
    # refuses weights and checkpoints, which name models trained already, in words of their own
    # a mapping's keys as make_request reads them (batch-size is batch_size); a RunRequest holds every option
    given = {*options, *(option_keys(request, "request=") if isinstance(request, Mapping) else ())}
    reads = {*TRAIN_OPTIONS, "weights", "checkpoint"}
    # an option of neither train() nor evaluate(): those train() reads are listed (tasks= is task=)
    check_known(given - {f.name for f in fields(RunRequest)}, [*reads, *_keywords(train)])
    if unread := sorted(given - reads):
        hint = " (train() holds editors out with exclude_editors=)" if "holdout" in unread else ""
        one = len(unread) == 1
        raise ConfigError(f"train() does not read {', '.join(unread)}, {'an option' if one else 'options'} of "
                          f"evaluate(){hint}; leave {'it' if one else 'them'} out")
    request = make_request(request, detector=detector, suite="", dataset=dataset, **options)
    listed = typed_value("--exclude-editors", tuple(exclude_editors) if isinstance(exclude_editors, Iterator)
                         else exclude_editors, list[str])  # a mapping or a number is no list of editors
    given = [name for item in listed for name in item.split(",")]  # sd2,glide
    names = tuple(name for name in (str(e).strip() for e in given) if name)
    if given and not names:  # "$EDITORS" with EDITORS unset: never a training on every editor, unsaid
        raise ConfigError("--exclude-editors is empty (an unset shell variable?): give editor names or leave the "
                          "option out")
    check_task(task)  # no task at all is said so (did you mean), never as one the card lacks
    card = request.detector_entry().card  # an unknown name, a task it has not: no data read
    if task not in card.tasks:
        raise ConfigError(f"{card.name} cannot be trained for task {task!r}; it supports {', '.join(card.tasks)}")
    out = None if out is None else typed_value("--out", out, Path)  # "" is no folder: pathlib reads it as "."
    if out is not None:
        check_copy_target(out)  # before the data is opened, as every option's check
    with reporting(progress):  # the dataset's first fingerprint is shown as it is read
        runner = Runner(request, progress)
        plan = runner.training_plan(task, names)
    card = None if out is None else Path(out) / META_FILE
    if card is not None and (card.is_file() or (card.parent / WEIGHTS_FILE).is_file()):  # a copy replaces only
        there = read_meta(card) if card.is_file() else {}  # one of this training: bare weights are no one's known
        if (key := there.get("cache_key")) != plan.jobs[0].key:
            what = (f"a checkpoint of {there.get('card', {}).get('name', '?')} [{there.get('task', '?')}] (cache key "
                    f"{key})" if there else f"{WEIGHTS_FILE} without its {META_FILE}")
            raise ConfigError(f"--out {out} holds {what}, not of this training (cache key {plan.jobs[0].key}), and the "
                              "copy would replace it; give another folder, or remove it")
    if on_plan is not None:
        on_plan(runner, plan)
    trained = runner.train(plan=plan)
    if out is not None and distributed.is_main():
        trained.copy = copy_checkpoint(trained.checkpoint.path, Path(out))
    return trained


def _stated(body: RecordBody, given: dict[str, Any]) -> dict[str, Any]:
    """The fields of a stored request (``given``, :meth:`RunRequest.to_dict`) that the record
    ``body`` also states, by the record's value: the released weights (None: none), the seed, the
    training options the request gives (None: the record's run gave none), the threshold policy of a
    model that has one (a semantic model is never calibrated), its calibration split, strict and the
    bootstrap resamples."""
    config, policy, release = body.config, body.policy, body.detector.release_name
    stated = {"detector": body.detector.name, "seed": body.seed, "weights": release and f"released:{release}"}
    overrides = config.get("overrides") or {}  # the dataset's own are there too: only a given option is compared
    stated.update({k: overrides.get(k) for k in (*TRAIN_FIELDS, "pretrained") if given[k] is not None})
    found = {"thresholds": policy.mode if body.detector.task != Task.SEMANTIC else None,
             "calibration_split": calibrated_split(policy.source) if policy.mode == "calibrated" else None,
             "strict": config.get("strict"), "bootstrap": (config.get("bootstrap") or {}).get("resamples")}
    return {**stated, **{k: v for k, v in found.items() if v is not None}}


def _refuse_edited(record: ResultRecord, pairs: dict[str, tuple[Any, Any]]) -> None:
    """A ConfigError naming each field whose (request's, record's) values differ."""
    if edited := [f"{what} {now!r} (the record's: {then!r})" for what, (now, then) in pairs.items() if now != then]:
        raise ConfigError(f"record {record.id}'s stored request runs {', '.join(edited)}: it was edited after the "
                          "run, and would make another row")


def _check_reproducible(record: ResultRecord, request: RunRequest) -> None:
    """A ConfigError where this diffzoo cannot make ``record``'s row again from ``request``: its
    detector is not installed, the request says otherwise than the record in a field both state
    (:func:`_stated`; edited by hand: the request is no part of the id), or its suite or metrics
    version is not this one's."""
    body = record.body
    try:
        name = get_registry().resolve("detector", request.detector)
    except UnknownNameError:
        raise ConfigError(f"record {record.id}'s detector {request.detector!r} is not installed here: install its "
                          f"plugin {body.detector.plugin!r} (diffzoo list detectors lists those installed)") from None
    given = {**request.to_dict(), "detector": name}
    _refuse_edited(record, {what: (given[what], then) for what, then in _stated(body, given).items()})
    suite = get_registry().get("suite", body.suite.name).load()
    if older := [f"{what} {then} (this diffzoo's: {now})" for what, then, now in (
            (f"suite {suite.name} version", body.suite.version, suite.version),
            ("metrics version", body.metrics_version, METRICS_VERSION)) if then != now]:
        made = body.environment.packages.get("diffzoo")
        raise ConfigError(f"record {record.id} was made with {', '.join(older)}: this diffzoo cannot make its row "
                          f"again; reproduce it with the diffzoo that made it{f' ({made})' if made else ''}")


def _row_model(record: ResultRecord, request: RunRequest) -> RunRequest:
    """``request`` with only the ``--checkpoint`` of the record's model (a run given one per task
    made each row with one: the run of this row alone would refuse the other as unread), and
    trained where its run loaded it from a cache (``--no-train``: that model was trained from these
    very options, and this machine's cache may hold none); a ConfigError before any work where
    the checkpoint's weights are no longer the record's.  Released weights' files are the
    release's own, converted when loaded: left to the run."""
    request = replace(request, train=None) if request.train is False else request
    if request.weights is not None:
        return request
    model = record.body.detector
    kept = []
    for path in request.checkpoint:
        weights, meta = checkpoint_meta(path)
        if meta.get("task", model.task) != model.task:
            continue
        kept.append(path)
        if (sha := meta.get("sha256") or sha256_file(weights)) != model.checkpoint_sha256:
            raise ConfigError(f"record {record.id}'s run read --checkpoint {path}, whose weights are now sha256 "
                              f"{sha[:12]}, the record's {model.checkpoint_sha256[:12]}: the checkpoint changed "
                              "since, or another is at that path; put the record's there")
    return replace(request, checkpoint=kept)


def reproduce(record: ResultRecord, out: str | Path, progress: Progress | None = None,
              on_plan: Callable[[Evaluation], None] | None = None, device: str | None = None,
              force: bool = False) -> tuple[Evaluation, ResultRecord | None]:
    """Run ``record``'s row again from the request it stores (its suite, only its case and the
    case it compares with) into the store at ``out``; returns the run and its record of the same
    row (None: the run made none).  ``device``: run there instead of on the record's device (a
    row made with ``--device cuda``, run again on a machine without one); ``force``: an ``out``
    that is not empty and not diffzoo's is used, as :func:`evaluate`'s ``force``.  A row ``out``
    already holds with other numbers (the record's own store) is kept there, and the run's own
    compared (``result.conflicts``)."""
    body = record.body
    if body.request is None:
        raise ConfigError(f"record {record.id} stores no request (it was written before records stored their "
                          "options), so it cannot be run again; run it with diffzoo run")
    try:  # the options the record stores, not ones typed here: the error says whose they are
        request = RunRequest.from_dict(body.request, suite=body.suite.name)
    except ConfigError as exc:
        raise ConfigError(f"record {record.id}'s stored request: {exc}") from None
    request = request if device is None else replace(request, device=device)  # checked as given here
    _check_reproducible(record, request)
    lost = request.paths_not_found()
    relative = [said for said, path in lost if not path.is_absolute()]  # read from the folder the run started in
    absolute = [(said, path) for said, path in lost if path.is_absolute()]
    said = [f"{', '.join(relative)}, relative to the folder it was started in, and "
            f"{'it is' if len(relative) == 1 else 'they are'} not found from {Path.cwd()}: run diffzoo reproduce "
            "from that folder (or pass it as --from-folder DIR)"] if relative else []
    if absolute:  # a run reads what its request names: the data must be where the record's machine had it
        said.append(f"{', '.join(s for s, _ in absolute)}, not found on this machine: reproduce reads what its run "
                    f"read, so put {'it' if len(absolute) == 1 else 'each'} there (a link to the copy here will do: "
                    f"ln -s COPY {absolute[0][1]})")
    if said:
        raise ConfigError(f"record {record.id}'s run read {'; and '.join(said)}")
    overrides = body.config.get("overrides") or {}  # a training option left out (null) runs the dataset's own
    if nulls := [k for k in (*TRAIN_FIELDS, "pretrained") if k in overrides and getattr(request, k) is None]:
        own = open_dataset(request.dataset, progress, **request.dataset_options()).training_overrides
        _refuse_edited(record, {k: (None, overrides[k]) for k in nulls if own.get(k) != overrides[k]})
    request = _row_model(record, request)
    only = {(body.suite.name, name) for name in (body.case_name, body.case.get("compare_to")) if name}
    ran: list[Evaluation] = []
    try:
        result = evaluate(request=request, out=out, references=False, force=force, progress=progress,
                          on_plan=on_plan, on_result=ran.append, only=only)
    except ConfigError:
        if not (ran and ran[0].conflicts):  # raised after on_result for conflicts alone: what moved is compared
            raise
        result = ran[0]
    row = (body.suite.name, body.case, body.dataset.fingerprint)
    same = [r for r in result.records if r.id == record.id] or \
        [r for r in result.records if (r.body.suite.name, r.body.case, r.body.dataset.fingerprint) == row]
    return result, (same[0] if same else None)
