"""``diffzoo sweep``: detectors x weights x training data, each job a ``diffzoo run``, one store,
one board (:mod:`diffzoo.sweep`)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import typer

from diffzoo.cli.console import console
from diffzoo.cli.options import CONFIG, FORCE, KEY_VALUE, request_command, request_values, was_given
from diffzoo.cli.run import RUN_OPTIONS
from diffzoo.harness.core.errors import DiffzooError
from diffzoo.harness.run.request import parse_options
from diffzoo.leaderboard.render.escape import term

SWEEP_OPTIONS = tuple(o for o in RUN_OPTIONS if o not in ("detector", "dataset", "weights", "checkpoint", "suite"))
"""The run options a sweep passes to every job unchanged; the others are the sweep's own."""
DEFAULT_SUITES = ("standard", "standard,cross-dataset")
"""``--suite`` when not given: without, and with, ``--eval-dataset``."""


class SweepFailed(DiffzooError):
    """Some jobs of a sweep failed (each was said); the others' records are stored."""


def sweep_cmd(
    ctx: typer.Context,
    config: Path | None = CONFIG,
    detectors: list[str] = typer.Option(
        [], "--detectors", help="Detectors: names or patterns (segformer.tiny,fcn8s.*; diffzoo list detectors); "
        "comma-separated or repeated."),
    weights: list[str] = typer.Option(
        ["trained"], "--weights", help="trained (train on each --dataset), released (every release of each "
        "detector, zero-shot) or released:NAME; comma-separated or repeated."),
    dataset: list[str] = typer.Option(
        ["mini"], "--dataset", help="Training data of the trained jobs (one job each); released weights score the "
        "first as their own data. Repeatable."),
    suite: str | None = typer.Option(
        None, "--suite", "-s", help="Suites of every job (default: standard, and cross-dataset with --eval-dataset)."),
    out: Path = typer.Option(Path("diffzoo-out"), "--out", help="The record store every job writes into; the board "
                             "is published into OUT/board."),
    force: bool = FORCE,
    rerun: bool = typer.Option(
        False, "--rerun", help="A job that runs replaces its results already recorded with other numbers (the old "
        "records are kept under replaced/), as diffzoo run --rerun; finished jobs are still skipped."),
    executor: str = typer.Option(
        "local", "--executor", help="local: here, one job after another; slurm: a SLURM job array through "
        "submitit; submitit-local: each job in its own process here, through submitit."),
    gpus: int = typer.Option(1, "--gpus", min=1, help="GPUs per job; above 1 the job runs torchrun with one "
                             "process per GPU (here with local, in its allocation with slurm)."),
    partition: str | None = typer.Option(None, "--partition", help="SLURM partition."),
    time: int = typer.Option(24 * 60, "--time", min=1, help="Minutes each submitit job may run."),
    parallel: int | None = typer.Option(None, "--parallel", min=1, help="How many jobs of the SLURM array run at "
                                        "once (default: all)."),
    cpus_per_job: int | None = typer.Option(None, "--cpus-per-job", min=1, help="CPU cores per submitit job."),
    slurm_option: list[str] = typer.Option(
        [], "--slurm-option", metavar=KEY_VALUE, help="Another SLURM parameter of submitit (account=..., qos=..., "
        "constraint=..., mem_gb=...); repeatable."),
    wait: bool = typer.Option(True, "--wait/--no-wait", help="With slurm: wait for the jobs, then publish the "
                              "board (--no-wait: submit and return; run the same command again to publish)."),
    publish: bool = typer.Option(True, "--publish/--no-publish", help="Publish the store's board into OUT/board "
                                 "when every job is done."),
    plan: bool = typer.Option(False, "--plan", help="Print the jobs (and which are done, or still queued on SLURM) "
                              "and stop."),
    **options: Any,
) -> None:
    """Run detectors x weights x training data into one store and publish the board (one column
    group per benchmark); jobs already done are skipped, so a sweep resumes."""
    import submitit  # noqa: F401 - its import gives its logger handlers of its own, cleared below

    from diffzoo.cli.leaderboard import print_published
    from diffzoo.cli.progress import RichProgress, rank_output
    from diffzoo.leaderboard.outdir import check_out_unread, claim_output_dir
    from diffzoo.sweep import (
        BOARD_FORMATS,
        SweepOptions,
        check_executor,
        done_jobs,
        plan_sweep,
        publish_board,
        release_files,
        run_sweep,
        still_queued,
    )

    # submitit's records (an sacct error, a job's state) reach the CLI's one handler: once, escaped, on stderr
    logging.getLogger("submitit").handlers.clear()
    own = {"detectors": detectors, "weights": weights, "dataset": dataset, "suite": suite, "out": out,
           "executor": executor, "gpus": gpus, "partition": partition, "time": time, "parallel": parallel,
           "cpus_per_job": cpus_per_job, "slurm_option": slurm_option, "wait": wait, "publish": publish, "plan": plan,
           "force": force, "rerun": rerun}
    values = request_values(ctx, own, options, config)  # the sweep's own options may come from --config too
    executor, wait, publish, plan = values["executor"], values["wait"], values["publish"], values["plan"]
    # the run options a sweep sets per job reach plan_sweep when --config holds them, to be refused there
    given = {k: values[k] for k in (*SWEEP_OPTIONS, "detector", "checkpoint") if k in values}
    given["suite"] = DEFAULT_SUITES[bool(values.get("eval_dataset"))] if values["suite"] is None else values["suite"]
    # the executor's options are checked before the plan is shown, as the sweep itself checks them
    flags = {p.opts[0] for p in ctx.command.params if was_given(ctx, p.name)}  # check_executor reads its own
    flags |= {"--no-wait"} if not wait else set()
    check_executor(executor, flags)
    how = SweepOptions(executor=executor, wait=wait, force=values["force"], rerun=values["rerun"],
                       timeout_min=values["time"], gpus=values["gpus"], partition=values["partition"],
                       parallel=values["parallel"], cpus_per_task=values["cpus_per_job"],
                       extra=parse_options(values["slurm_option"], "--slurm-option"))
    sweep = plan_sweep(values["detectors"], weights=values["weights"], datasets=values["dataset"], options=given)
    out = Path(values["out"])
    for job in sweep.jobs:  # each job's run would refuse it; the plan and the sweep say so before any job
        check_out_unread(out, job.request)
    for line in sweep.skipped:
        console.print(f"[yellow]skipped:[/] {term(line)}")
    if plan:
        claim_output_dir(out, force=values["force"], make=False)  # as the sweep itself would refuse it, unmade
        done = done_jobs(sweep, out, how.rerun)
        todo = [job for job in sweep.jobs if job.key not in done]
        # SLURM is asked, as the sweep would ask it: a job an earlier sweep queued is not to run again
        queued = still_queued(out, todo) if executor == "slurm" and todo else {}
        for job in sweep.jobs:
            found = done.get(job.key)
            state = "to run" if job in todo else "done" if isinstance(found, list) else f"not run: {found}"
            state = f"queued: {queued[job.key][1]}" if job.key in queued else state
            console.print(f"[bold]job[/] {term(job.label)} ({term(state)}; key {job.key})", soft_wrap=True)
            files = release_files(job)
            if files is not None:  # a preview: what the job would say, nothing fetched, the plan goes on
                folder, missing = files
                said = f"missing: {term(missing)}" if missing else f"present in {term(folder)}"
                console.print(f"  release files {said}", soft_wrap=True)
        extra = "".join(f"; --slurm-option {k}={v}" for k, v in how.extra.items())  # what sbatch will be given
        console.print(f"{len(sweep.jobs)} job(s); suites {term(given['suite'])}; store {term(out)}{term(extra)}",
                      soft_wrap=True)
        return

    def said(outcome) -> None:
        console.print(f"[bold]job[/] {term(outcome.job.label)}: {term(outcome.text())}", soft_wrap=True)

    with rank_output(console):
        outcomes = run_sweep(sweep, out, how, progress=RichProgress(console), on_job=said)
    failed = [o for o in outcomes if o.status in ("failed", "refused")]
    waiting = [o for o in outcomes if o.status in ("submitted", "queued")]
    if waiting:
        console.print(f"{len(waiting)} job(s) submitted or queued; run the same command again when they are done to "
                      "publish the board (finished jobs are skipped)")
    elif publish and any(o.records for o in outcomes):
        print_published(publish_board(out), BOARD_FORMATS)
    if failed:
        others = f"the others' records are in {out}; " if len(failed) < len(outcomes) else ""  # none when all failed
        again = "with --rerun" if any(o.status == "refused" for o in failed) else "again"  # never retried without
        raise SweepFailed(f"{len(failed)} of {len(outcomes)} job(s) failed (listed above); {others}run the same "
                          f"command {again} to retry them")


request_command(sweep_cmd, SWEEP_OPTIONS, own_first=True)
