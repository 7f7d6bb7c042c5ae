"""The sweep: the whole board in one command (``diffzoo sweep``, docs/suites.md "Sweeps").

:func:`plan_sweep` expands detectors (names or patterns, as ``diffzoo list`` matches them),
weights and training datasets into jobs, one per (detector, weights, training data):

- ``trained``: the detector trained here on each ``--dataset`` (or its cached checkpoint);
- ``released`` / ``released:NAME``: the weights its authors released (every release its card
  lists, or the one named), never trained: one job per release, which scores the first
  ``--dataset`` as its own data; a detector without such a release is skipped, said once.

Each job is one :class:`~diffzoo.harness.run.request.RunRequest`, run exactly as ``diffzoo
run`` runs it (:func:`diffzoo.evaluate`: the same records, cache, checks and verification),
all into one record store (``--out``).  A job that finished leaves ``sweep/done/<key>.json``
naming its records (and, per ``--eval-dataset catalog:ROOT``, the benchmarks found under ROOT
when it ran); a job whose done file names records that are all in the store, and the same
benchmarks ROOT holds now, is skipped, so running a sweep again resumes it (a deleted record,
or a benchmark added or removed, runs its job again).

Jobs run here one after another (``local``), or through submitit (:func:`submit`): on a SLURM
cluster as a job array (``slurm``), or each in its own process on this machine
(``submitit-local``, the same code path without a cluster).  Each SLURM submission is
recorded (``sweep/submitted/<key>.json``); a later sweep does not submit a job again while its
SLURM job is pending or running, and submits it again once that job ended without finishing it.
A job asking for several GPUs
runs ``torchrun`` (inside its allocation on SLURM), as ``diffzoo run`` is run by hand.  An
executor option the chosen executor would not use is refused (:func:`check_executor`).  When the jobs
are done the store's records are published into ``board/`` (the overview with one column
group per benchmark, and the site).
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import shutil
import subprocess
import sys
import traceback
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from diffzoo.harness.core.cards import stable_hash
from diffzoo.harness.core.errors import ConfigError, DiffzooError, TrainingStopped, WeightsUnavailableError
from diffzoo.harness.core.fsutil import FileRefused, atomic_write_text, read_json, user_path_error
from diffzoo.harness.core.plugins import get_registry
from diffzoo.harness.models.releases import PREFIX as RELEASED_PREFIX
from diffzoo.harness.models.releases import find_files, release_dir, release_name
from diffzoo.harness.run.factories import check_dataset_options
from diffzoo.harness.run.request import TRAINING_ONLY, RunRequest, catalog_root, check_suite_given
from diffzoo.harness.suites.cross import is_cross
from diffzoo.leaderboard.outdir import BOARD_DIR, SWEEP_DIR, claim_output_dir, output_log

if TYPE_CHECKING:
    from diffzoo.leaderboard.store import Loaded

log = logging.getLogger(__name__)

TRAINED, RELEASED = "trained", "released"
"""``--weights``: trained here, or every release of the detector (``released:NAME``: that one)."""
EXECUTORS = ("local", "submitit-local", "slurm")
"""Where jobs run: here one after another; through submitit, each in its own process here, or
as a SLURM job array."""
SLURM_ONLY = ("--partition", "--parallel", "--slurm-option", "--no-wait")
"""The sweep's options only ``slurm`` uses (submitit-local always waits for its own processes)."""
SUBMITIT_ONLY = ("--time", "--cpus-per-job")
"""The sweep's options only the submitit executors (``slurm``, ``submitit-local``) use."""
DONE_DIR, LOGS_DIR, SUBMITTED_DIR = "done", "logs", "submitted"
"""``OUT/sweep/done/<key>.json`` per finished job, ``OUT/sweep/logs/`` submitit's job logs,
``OUT/sweep/submitted/<key>.json`` per job submitted to SLURM (``OUT/logs/<time>-sweep.log``:
each sweep's own log; ``OUT/board/``: the published board)."""
BOARD_FORMATS = ("md", "html")
"""What the board is published as: the overview (and per-case tables) in Markdown, and the site."""
SWEEP_REQUEST, SWEEP_SUBMISSION = "sweep-job", "sweep-submission"
"""The done file's kind, and the submission record's."""


@dataclass(eq=False)
class SweepJob:
    """One (detector, weights, training data): the run request that makes its records."""

    detector: str
    weights: str  # TRAINED or released:NAME
    dataset: str
    request: RunRequest

    @property
    def key(self) -> str:
        return job_key(self.request.to_dict())

    @property
    def label(self) -> str:
        if self.weights == TRAINED:
            return f"{self.detector} trained on {self.dataset}"
        return f"{self.detector} [{self.weights}] (zero-shot) on {self.dataset}"


@dataclass
class SweepPlan:
    """:func:`plan_sweep`'s answer: the jobs, what was passed over (a line each), and each
    ``catalog:ROOT``'s listing as the plan read it (:func:`catalog_listing`'s memo: a ROOT is
    listed once per sweep)."""

    jobs: list[SweepJob] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    catalogs: dict[str, list[dict[str, str]]] = field(default_factory=dict)


def _patterns(values: Sequence[str] | str) -> list[str]:
    """Comma lists, repeated or not, as their items; one text (a --config file's ``dataset: x``) is one value."""
    return [p.strip() for v in ([values] if isinstance(values, str) else values) for p in str(v).split(",")
            if p.strip()]


def _items(values: Sequence[str] | str, flag: str, example: str) -> list[str]:
    """The items of a sweep option that takes at least one (``_patterns``); ConfigError for an
    empty one (an unset shell variable), which would else stand for a default the user never chose."""
    items = _patterns(values)
    if not items:
        raise ConfigError(f"{flag} is empty: give at least one, e.g. {flag} {example}")
    return items


def plan_sweep(detectors: Sequence[str], *, weights: Sequence[str] = (TRAINED,), datasets: Sequence[str] = ("mini",),
               options: Mapping[str, Any] | None = None) -> SweepPlan:
    """The jobs of a sweep (module doc).  ``detectors``: names or fnmatch patterns (comma
    lists too); ``weights``: :data:`TRAINED`, :data:`RELEASED` or ``released:NAME``;
    ``datasets``: the training data (names or paths); ``options``: every other run option by
    its flag name (``suite``, ``eval_dataset``, ``iterations``...), the same for every job.
    ConfigError for an unknown detector or weights value, an option a sweep sets per job, or a
    sweep with no job."""
    options = dict(options or {})
    per_job = sorted(set(options) & {"detector", "dataset", "weights", "checkpoint"})
    if per_job:
        raise ConfigError(f"a sweep sets {', '.join(per_job)} per job: give --detectors, --dataset and --weights "
                          "(and leave it out of --config)")
    names = _patterns(detectors)
    if not names:
        raise ConfigError("a sweep needs detectors: --detectors NAME_OR_PATTERN[,...], or in --config detectors: "
                          "[NAME_OR_PATTERN, ...] (diffzoo list detectors)")
    entries = get_registry().expand("detector", ",".join(names))
    wanted = _items(weights, "--weights", f"{TRAINED},{RELEASED}")
    for w in wanted:
        if w not in (TRAINED, RELEASED) and not (w.startswith(RELEASED_PREFIX) and w[len(RELEASED_PREFIX):]):
            raise ConfigError(f"--weights {w!r}: use {TRAINED}, {RELEASED} (every release of each detector) or "
                              f"{RELEASED_PREFIX}NAME (diffzoo list detectors --released)")
    data = _items(datasets, "--dataset", "mini")
    suite = str(options.get("suite", "all"))
    check_suite_given(suite)
    suites = [e.load() for e in get_registry().expand("suite", suite)]  # an unknown suite would fail every job
    if not options.get("eval_dataset") and all(is_cross(case) for s in suites for case in s.cases):
        raise ConfigError(f"--suite {suite}: each of its cases evaluates the model on other datasets, and no "
                          "--eval-dataset is given: give one (PATH[:SPLIT] or catalog:ROOT, repeatable), or add a "
                          "suite such as standard")  # every job would stop on it
    plan = SweepPlan()
    # the training options are the trained jobs' (released jobs alone refuse them)
    released_options = {k: v for k, v in options.items() if k not in TRAINING_ONLY or TRAINED not in wanted}
    for entry in entries:
        releases = [r.name for r in entry.card.releases]
        for w in dict.fromkeys(wanted):
            if w == TRAINED:
                plan.jobs += [_job(entry.name, TRAINED, d, options) for d in data]
                continue
            chosen = releases if w == RELEASED else [n for n in releases if n == w[len(RELEASED_PREFIX):]]
            if not chosen:
                have = f"its releases: {', '.join(releases)}" if releases else "it lists no released weights"
                plan.skipped.append(f"{entry.name} --weights {w}: no such release ({have})")
            plan.jobs += [_job(entry.name, f"{RELEASED_PREFIX}{n}", data[0], released_options) for n in chosen]
    if not plan.jobs:
        raise ConfigError("the sweep has no job: " + "; ".join(plan.skipped))
    seen: dict[str, SweepJob] = {}
    for job in plan.jobs:  # released and released:NAME, or a dataset given twice, make one job
        seen.setdefault(job.key, job)
    plan.jobs = list(seen.values())
    # every job would stop on a ROOT that cannot be listed or holds no benchmark: say it once, before any
    # (the jobs' requests share the --eval-dataset, read as a list whatever form the options gave it)
    for root, found in catalog_listing(plan.jobs[0].request.to_dict(), plan.catalogs).items():
        if not found:
            raise ConfigError(f"--eval-dataset catalog:{root}: no dataset to evaluate on under {root}; "
                              f"`diffzoo data find {root} --verbose` says what is there")
    for spec, request in {job.dataset: job.request for job in plan.jobs}.items():  # as each job's run checks it
        check_dataset_options(spec, request.dataset_options())
    # a job fails alone and the others run; a path not found is said before any job, in --plan too
    if lost := sorted({said for job in plan.jobs for said, _ in job.request.paths_not_found()}):
        log.warning("not found: %s (paths are read from %s; a --dataset may also be a registered dataset's name, "
                    "diffzoo list datasets): each job naming it will fail", "; ".join(lost), Path.cwd())
    return plan


def _job(detector: str, weights: str, dataset: str, options: Mapping[str, Any]) -> SweepJob:
    released = {} if weights == TRAINED else {"weights": weights}
    request = RunRequest.of(detector=detector, dataset=dataset, **released, **options)
    if released:  # a job runs no reference detector: its released weights are all it scores
        request.check_trains_nothing(weights.removeprefix(RELEASED_PREFIX))
    return SweepJob(detector, weights, dataset, request)


def check_executor(executor: str, given: Collection[str] = ()) -> None:
    """ConfigError for an unknown ``executor``, or for options it would not use among ``given``
    (the flags given): a sweep that drops what was asked would run other than asked."""
    if executor not in EXECUTORS:
        raise ConfigError(f"--executor {executor!r}: choose one of {', '.join(EXECUTORS)}")
    unused = {"slurm": [f for f in SLURM_ONLY if f in given and executor != "slurm"],
              "slurm or submitit-local": [f for f in SUBMITIT_ONLY if f in given and executor == "local"]}
    said = [f"{', '.join(flags)} (only --executor {which})" for which, flags in unused.items() if flags]
    if said:
        many = sum(len(flags) for flags in unused.values()) > 1
        raise ConfigError(f"--executor {executor} does not use {'; '.join(said)}: drop {'them' if many else 'it'}, "
                          "or choose that executor")


def release_files(job: SweepJob) -> tuple[Path, str | None] | None:
    """For a released job: (the folder its release files are read from, None when every file
    is there, else the error the job would give: where to get them and where to put them);
    None for a trained job.  Reads no file and downloads nothing."""
    if job.weights == TRAINED:
        return None
    card = get_registry().get("detector", job.detector).card
    release = card.release(release_name(job.weights) or "")
    try:
        find_files(card, release)
    except WeightsUnavailableError as exc:
        return release_dir(card, release), str(exc)
    return release_dir(card, release), None


# -- what is done ---------------------------------------------------------------------------------
def job_key(request: dict[str, Any]) -> str:
    """A job's identity: a hash of every option of its request (:meth:`RunRequest.to_dict`)."""
    return stable_hash(request)


def job_file(out: Path, folder: str, key: str) -> Path:
    """The file of the job of ``key`` in ``OUT/sweep/<folder>``: its done file (:data:`DONE_DIR`)
    or the record of its SLURM submission (:data:`SUBMITTED_DIR`)."""
    return Path(out) / SWEEP_DIR / folder / f"{key}.json"


def catalog_listing(request: Mapping[str, Any], memo: dict[str, list[dict[str, str]]] | None = None
                    ) -> dict[str, list[dict[str, str]]]:
    """ROOT -> the benchmarks the catalog recognises under it now (path and adapter; no dataset
    opened, no image read), for each ``--eval-dataset catalog:ROOT`` of ``request``; ``memo``
    keeps each ROOT's listing for the next job of the same sweep.  A ROOT that cannot be
    listed raises the error the run itself gives."""
    from diffzoo.harness.run.catalog import find_datasets

    memo = {} if memo is None else memo
    listing: dict[str, list[dict[str, str]]] = {}
    for spec in request.get("eval_dataset") or []:
        root = catalog_root(str(spec))
        if root is None:
            continue
        if root not in memo:
            memo[root] = [{"path": str(path), "adapter": adapter}
                          for path, adapter in find_datasets(root, open_found=False).recognised]
        listing[root] = memo[root]
    return listing


def _catalog_changes(then: Any, now: Mapping[str, list[dict[str, str]]]) -> str:
    """How the benchmarks under each catalog ROOT differ from those a done file names ("" when
    they do not)."""
    def names(found: list[Any]) -> set[str]:
        return {f"{e.get('path')} ({e.get('adapter')})" if isinstance(e, dict) else repr(e) for e in found}

    said = []
    for root, found in now.items():
        before = then.get(root) if isinstance(then, dict) else None
        if not isinstance(before, list):
            said.append(f"its done file does not say which benchmarks were under {root}")
            continue
        old, new = names(before), names(found)
        if old != new:
            diff = [f"+{n}" for n in sorted(new - old)] + [f"-{n}" for n in sorted(old - new)]
            said.append(f"benchmarks under {root} changed since the job ran: {', '.join(diff)}")
    return "; ".join(said)


def done_records(out: Path, job: SweepJob, stored: Loaded,
                 listings: dict[str, list[dict[str, str]]] | None = None) -> list[str] | str | None:
    """The record ids a finished job's done file names when every one is in the store
    (``stored``) and each ``catalog:ROOT`` of the job lists what its done file names; None when
    the job has to run (no done file, an unreadable one, one of another request, a record of it
    missing, a benchmark added or removed under ROOT); why it is neither, where a record of it is
    in the store but no table shows it (run again, its record would meet that file).
    ``listings``: :func:`catalog_listing`'s memo, shared by the jobs of one sweep."""
    path = job_file(out, DONE_DIR, job.key)
    data = _read(path, "done file", "the job runs again")
    if data is None:
        return None
    ids = data.get("records")
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids) \
            or data.get("request") != job.request.to_dict():
        log.warning("%s: not this job's done file; the job runs again", path)
        return None
    refused = {path.stem: why for path, why in stored.skipped}
    if shown := next((i for i in ids if i in refused), None):
        return f"its record {shown} is in the store, but no table shows it: {refused[shown]}; --rerun replaces it"
    missing = [i for i in ids if i not in {r.id for r in stored.records}]
    if missing:
        log.info("%s: %d of its records are not in the store (first: %s); the job runs again", job.label,
                 len(missing), missing[0])
        return None
    changed = _catalog_changes(data.get("catalogs"), catalog_listing(job.request.to_dict(), listings))
    if changed:
        log.warning("%s: %s; the job runs again", job.label, changed)
        return None
    return [str(i) for i in ids]


def done_jobs(plan: SweepPlan, out: Path, rerun: bool = False) -> dict[str, list[str] | str]:
    """Job key -> its record ids, for each job of ``plan`` done in the store at ``out``, or why it
    is not run (:func:`done_records`; with ``rerun`` it runs); the others have to run."""
    from diffzoo.leaderboard.store import Loaded, RecordStore

    stored = RecordStore(Path(out)).load() if (Path(out) / "records").is_dir() else Loaded([], [])
    found = {job.key: done_records(out, job, stored, plan.catalogs) for job in plan.jobs}
    return {key: ids for key, ids in found.items() if isinstance(ids, list) or isinstance(ids, str) and not rerun}


def _write(path: Path, kind: str, **fields: Any) -> Path:
    """A sweep file of ``kind`` holding ``fields`` and the date, whole or not at all."""
    date = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    return atomic_write_text(path, json.dumps({"kind": kind, **fields, "date": date}, indent=1, sort_keys=True))


def _read(path: Path, what: str, then: str) -> dict[str, Any] | None:
    """The sweep file at ``path``: None when there is none, or (warned: ``what`` it is not, and
    ``then``) when it cannot be read as JSON; JSON that is not an object reads as {}, whose
    fields its reader then finds missing."""
    if not path.exists():
        return None
    try:
        data = read_json(path)
    except (FileRefused, OSError, ValueError) as exc:
        log.warning("%s: not a sweep's %s (%s); %s", path, what, exc, then)
        return None
    return data if isinstance(data, dict) else {}


# -- running one job ---------------------------------------------------------------------------
def run_job(request: dict[str, Any], out: str, how: SweepOptions, progress: Any = None) -> dict[str, Any]:
    """Run one job (its request as :meth:`RunRequest.to_dict` gives it) into the store at
    ``out`` as ``diffzoo run`` does (``how.rerun``: as ``diffzoo run --rerun``), then mark it done.
    With ``how.gpus`` > 1 the run is ``torchrun --nproc-per-node GPUS -m diffzoo run`` (the job's
    allocation holds the GPUs).  This is what submitit runs in a job: plain data in, plain data out,
    its outcome as :class:`JobOutcome`'s fields: ``status`` done and its ``records`` (ids), or failed
    and the ``error`` in one line (a bug's traceback goes to the ``--debug`` log here, to the job's
    own log in a submitit job).  Ctrl-C or SIGTERM here stops the sweep, not one job: it is raised."""
    from diffzoo.api import evaluate

    try:
        # listed before the run reads ROOT: a benchmark added while it runs makes the next sweep run it again
        catalogs = catalog_listing(request)
        if how.gpus > 1:
            ids = _torchrun(request, Path(out), how)
        else:
            result = evaluate(request=RunRequest.from_dict(request), out=out, references=False, rerun=how.rerun,
                              progress=progress)
            ids = [r.id for r in result.records]
        # the done file: its records' ids, and what catalog_listing found when it ran
        _write(job_file(Path(out), DONE_DIR, job_key(request)), SWEEP_REQUEST, request=request, records=ids,
               catalogs=catalogs)
    except Exception as exc:  # noqa: BLE001 - one job's failure, said in one line; the others go on
        if isinstance(exc, TrainingStopped) and how.executor == "local":
            raise  # running the sweep again resumes it
        user = exc if isinstance(exc, DiffzooError) else user_path_error(exc) if isinstance(exc, OSError) else None
        if user is not None:
            text = str(user)
        elif how.executor == "local":
            log.debug("job %s failed", job_key(request), exc_info=True)
            text = f"internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)"
        else:
            traceback.print_exc()  # a submitit job's stderr is its log
            text = f"internal error: {type(exc).__name__}: {exc} (its traceback is in the job's log)"
        return {"status": "failed", "error": text.splitlines()[0] if text else type(exc).__name__}
    return {"status": "done", "records": ids}


def _torchrun(request: dict[str, Any], out: Path, how: SweepOptions) -> list[str]:
    """The job under torchrun, one process per GPU; its records are the store's of this request."""
    from diffzoo.leaderboard.store import RecordStore

    config = out / SWEEP_DIR / "jobs" / f"{job_key(request)}.json"  # JSON is YAML: --config reads it
    atomic_write_text(config, json.dumps(request, indent=1))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={how.gpus}", "-m",
           "diffzoo", "run", "--config", str(config), "--out", str(out), "--no-references",
           *(["--rerun"] if how.rerun else [])]
    log.info("running %s", " ".join(cmd))
    done = subprocess.run(cmd, check=False)
    if done.returncode != 0:
        raise DiffzooError(f"the job's torchrun exited with {done.returncode} (its output is in the job's log)")
    return [r.id for r in RecordStore(out).load().records if r.body.request == request]


# -- many jobs -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class SweepOptions:
    """How a sweep runs its jobs: where (:data:`EXECUTORS`); ``wait``: with SLURM, wait for the jobs
    (submitit's local processes are always waited for); ``force``: use an ``out`` that is not empty and
    not diffzoo's, as ``diffzoo run --force`` does; ``rerun``: a job that runs replaces its records
    already stored with other numbers, as ``diffzoo run --rerun`` does; and what each job asks for:
    GPUs, minutes (a submitit job), CPU cores, the SLURM partition, how many jobs of the array run at
    once, and any other SLURM parameter (``slurm_<name>`` of submitit: account, qos, constraint,
    mem_gb...)."""

    executor: str = "local"
    wait: bool = True
    force: bool = False
    rerun: bool = False
    timeout_min: int = 24 * 60
    gpus: int = 1
    partition: str | None = None
    parallel: int | None = None
    cpus_per_task: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


def _submitit(executor: str) -> Any:
    """The submitit module (a hard dependency: a broken install says so)."""
    try:
        import submitit
    except ImportError as exc:
        raise ConfigError(f"--executor {executor} needs submitit, which is not importable ({exc}); "
                          "pip install submitit") from None
    return submitit


def _check_slurm() -> None:
    """ConfigError where SLURM's commands are missing: no job can be submitted, and none asked about."""
    if shutil.which("sbatch") is None:
        raise ConfigError("--executor slurm: sbatch is not on PATH, so this is no SLURM login node; run the sweep "
                          "on one, or use --executor local")


def _logs(out: Path, job_id: str = "%j") -> Path:
    """submitit's folder of the job ``job_id`` (``%j``: submitit's pattern for every job's own)."""
    return Path(out) / SWEEP_DIR / LOGS_DIR / job_id


def submit(jobs: Sequence[SweepJob], out: Path, how: SweepOptions) -> list[Any]:
    """Submit ``jobs`` through submitit as ``how`` says (``slurm``: a job array, each job's submission
    recorded; ``submitit-local``: one process each here); returns submitit's job handles (their logs
    under ``sweep/logs/``)."""
    executor = how.executor
    submitit = _submitit(executor)
    if executor == "slurm":
        _check_slurm()
    folder = _logs(out)
    try:
        ex = submitit.AutoExecutor(folder=folder, cluster="local" if executor == "submitit-local" else "slurm")
    except RuntimeError as exc:  # submitit finds no cluster tools (srun)
        raise ConfigError(f"--executor {executor}: {str(exc).splitlines()[0]}") from None
    params: dict[str, Any] = {"name": "diffzoo-sweep", "timeout_min": how.timeout_min, "tasks_per_node": 1,
                              "nodes": 1, "gpus_per_node": how.gpus if executor == "slurm" else None,
                              "cpus_per_task": how.cpus_per_task}
    if executor == "slurm":
        params |= {"slurm_partition": how.partition, "slurm_array_parallelism": how.parallel,
                   **{f"slurm_{k}": v for k, v in how.extra.items()}}
    try:
        ex.update_parameters(**{k: v for k, v in params.items() if v is not None})
    except (ValueError, NameError, AssertionError) as exc:
        raise ConfigError(f"--slurm-option: {str(exc).splitlines()[0]}") from None
    n = len(jobs)
    try:
        handles = list(ex.map_array(run_job, [j.request.to_dict() for j in jobs], [str(out)] * n, [how] * n))
    except (OSError, RuntimeError, subprocess.CalledProcessError) as exc:
        # sbatch refusing the array (a partition, an account): one line, what to check
        raise ConfigError(f"--executor {executor}: submitting the jobs failed: {str(exc).splitlines()[0] or exc}") \
            from None
    if executor == "slurm":  # recorded as soon as sbatch took them: a later sweep must not submit them twice
        for job, handle in zip(jobs, handles):
            _write(job_file(out, SUBMITTED_DIR, job.key), SWEEP_SUBMISSION, key=job.key, job_id=str(handle.job_id))
    return handles


def still_queued(out: Path, jobs: Sequence[SweepJob]) -> dict[str, tuple[Any, str]]:
    """Key -> (submitit's handle, what to say) of each of ``jobs`` an earlier sweep submitted to
    SLURM whose SLURM job has not ended (pending, running, or a state SLURM does not give).  A
    job whose SLURM job ended (without a done file: it is among ``jobs``) is said and left out,
    to be submitted again, as is one without a readable submission record."""
    submitit = _submitit("slurm")
    _check_slurm()
    earlier = []
    for job in jobs:
        path = job_file(out, SUBMITTED_DIR, job.key)
        data = _read(path, "submission record", "the job is submitted again")
        if data is None:
            continue
        job_id = data.get("job_id")
        if not isinstance(job_id, str) or not job_id:
            log.warning("%s: not a sweep's submission record (no job id); the job is submitted again", path)
            continue
        # every handle made before any state is asked: submitit asks sacct once for all of them
        earlier.append((job, path, submitit.SlurmJob(folder=_logs(out), job_id=job_id), data.get("date")))
    queued = {}
    for job, path, handle, date in earlier:
        # SLURM's state alone: a result file may appear while this loop runs, and such a job is waited for
        if handle.watcher.is_done(handle.job_id, mode="standard"):
            log.warning("%s: its SLURM job %s (submitted %s) ended (%s) and the job is not done; it is submitted "
                        "again", job.label, handle.job_id, date, handle.state)
            continue
        state = handle.state
        hint = f"; if it is not, delete {path} to submit it again" if state == "UNKNOWN" else ""
        queued[job.key] = (handle, f"SLURM job {handle.job_id} submitted {date} is still {state}{hint}")
    return queued


@dataclass
class JobOutcome:
    job: SweepJob
    # "skipped" (done before), "done", "failed", "refused" (done before, a record no table shows: --rerun
    # replaces it), "submitted", "queued" (submitted before, not ended)
    status: str
    records: list[str] = field(default_factory=list)
    error: str = ""
    log: str = ""
    note: str = ""  # a job an earlier sweep submitted to SLURM, not submitted again: its SLURM job and state

    def text(self) -> str:
        """What became of the job, as the command prints it and the sweep's log keeps it."""
        line = {"skipped": f"done before: {len(self.records)} record(s) in the store, skipped",
                "done": f"done: {len(self.records)} record(s)",
                "submitted": f"submitted (log {self.log})",
                "queued": f"not submitted again: {self.note} (log {self.log})",
                "failed": f"FAILED: {self.error}" + (f" (log {self.log})" if self.log else ""),
                "refused": f"FAILED: {self.error}"}[self.status]
        if self.note and self.status != "queued":  # waited for, not submitted: which SLURM job it was
            line += f" (not submitted again: {self.note})"
        return line


def run_sweep(plan: SweepPlan, out: Path, how: SweepOptions = SweepOptions(), progress: Any = None,
              on_job: Callable[[JobOutcome], None] | None = None) -> list[JobOutcome]:
    """Run the jobs of ``plan`` that are not done into the store at ``out`` as ``how`` says
    (module doc); each job's outcome goes to ``on_job`` as it is known.  A failed job is reported
    and the others go on.  A sweep that waits (``how.wait``) waits for the SLURM jobs an earlier
    sweep submitted that are still queued or running too (else they are said to be ``queued``).
    The sweep leaves its log in ``out/logs/`` (each job's outcome, every warning, how it ended)."""
    check_executor(how.executor)
    claim_output_dir(Path(out), force=how.force)  # once, before any job: a folder not diffzoo's is refused now
    logged = output_log(Path(out), "sweep")
    with logged.attached():
        logged.note_command()
        outcomes: list[JobOutcome] = []

        def report(outcome: JobOutcome) -> None:
            outcomes.append(outcome)
            logged.note(f"job {outcome.job.key} {outcome.job.label}: {outcome.text()}")
            if on_job is not None:
                on_job(outcome)

        _sweep(plan, Path(out), how, progress, report)
        counts = Counter(o.status for o in outcomes)
        logged.note(f"{len(outcomes)} job(s): " + ", ".join(f"{n} {status}" for status, n in sorted(counts.items())))
        return outcomes


def _sweep(plan: SweepPlan, out: Path, how: SweepOptions, progress: Any, report: Callable[[JobOutcome], None]
           ) -> None:
    done = done_jobs(plan, out, how.rerun)
    for job in (job for job in plan.jobs if job.key in done):
        found = done[job.key]
        report(JobOutcome(job, "refused", error=found) if isinstance(found, str) else JobOutcome(job, "skipped", found))
    todo = [job for job in plan.jobs if job.key not in done]
    if how.executor == "local":
        for job in todo:
            report(JobOutcome(job, **run_job(job.request.to_dict(), str(out), how, progress)))
        return
    queued = still_queued(out, todo) if how.executor == "slurm" and todo else {}
    fresh = [job for job in todo if job.key not in queued]
    handles = dict(zip([job.key for job in fresh], submit(fresh, out, how) if fresh else []))
    wait = how.wait or how.executor == "submitit-local"  # local processes are this one's children: never left behind
    for job in todo:
        handle, note = queued.get(job.key) or (handles[job.key], "")
        log_path = str(_logs(out, str(handle.job_id)))
        if not wait:
            report(JobOutcome(job, "queued" if note else "submitted", log=log_path, note=note))
        else:
            try:
                result = handle.result()
            except KeyboardInterrupt:  # the sweep's own job processes end with it: none goes on writing the store
                for started in handles.values() if how.executor == "submitit-local" else ():
                    started.cancel(check=False)
                raise
            except Exception:  # noqa: BLE001 - a process that returned nothing (a time limit, a kill): one job's failure
                result = {"status": "failed", "error": f"its process ended without an outcome (state {handle.state}); "
                                                       "its log says why"}
            report(JobOutcome(job, **result, log=log_path, note=note))
    # submitit (and each of its job processes) makes the folder of its pattern itself, besides each job's own
    if (pattern := _logs(out)).is_dir() and not any(pattern.iterdir()):
        pattern.rmdir()


def publish_board(out: Path) -> Path:
    """Publish every record of the store at ``out`` into ``out/board`` (:data:`BOARD_FORMATS`);
    that folder."""
    from diffzoo.leaderboard.render.text import publish_formats
    from diffzoo.leaderboard.store import RecordStore
    from diffzoo.leaderboard.versions import resolve

    publish_formats(resolve(None, RecordStore(Path(out))), BOARD_FORMATS, Path(out) / BOARD_DIR)
    return Path(out) / BOARD_DIR
