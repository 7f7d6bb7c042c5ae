"""``diffzoo train``: :func:`diffzoo.train` (one model, as ``diffzoo run`` would train it), printed.

The config resolution (card recipe <- dataset overrides <- options) and the
checkpoint cache are the runner's, so ``diffzoo run`` later finds the model
in the cache.  Under torchrun the model trains through DDP and rank 0 writes.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from diffzoo.cli.console import console
from diffzoo.cli.options import CONFIG, CONFIG_KEYS, request_command, request_values
from diffzoo.cli.progress import RichProgress, rank_output
from diffzoo.cli.run import print_dataset
from diffzoo.harness.core.train_config import TRAIN_OPTIONS
from diffzoo.harness.records.fields import is_number
from diffzoo.leaderboard.render.escape import term

if TYPE_CHECKING:  # these import torch: only when the command runs, never for --help or list
    from diffzoo.harness.run.plan import Job, Plan
    from diffzoo.harness.run.runner import Runner, TrainOutput

log = logging.getLogger(__name__)


def train_cmd(
    ctx: typer.Context,
    task: str = typer.Option("binary", "--task", help="binary or semantic (or any task the detector card lists)."),
    exclude_editors: str | None = typer.Option(
        None, "--exclude-editors", help="Comma-separated editors whose images are left out of training."
    ),
    out: Path | None = typer.Option(None, "--out", help="Also write the checkpoint to this folder."),
    config: Path | None = CONFIG,
    **options: Any,
) -> None:
    """Train one detector on a dataset's train split; the checkpoint goes to the cache (and --out)."""
    from diffzoo.api import train

    own = {"task": task, "exclude_editors": exclude_editors, "out": out}
    values = request_values(ctx, own, options, config)
    # a --config file may hold run options too (one file serves both): train reads its own, and says which it leaves
    from_file = ctx.meta.get(CONFIG_KEYS, frozenset())
    if unread := from_file - {*own, *TRAIN_OPTIONS}:
        ran = "out" in from_file  # a run's file: its out is the run's output folder, no copy of one model
        if ran:
            values["out"] = out  # the command line's, or none
        log.warning("--config %s: diffzoo train does not read %s (options of diffzoo run); it trains with the others%s",
                    config, ", ".join(sorted(unread | ({"out"} if ran else set()))),
                    " (give --out on the command line for a copy of the checkpoint)" if ran else "")
    with rank_output(console):
        excluded = values["exclude_editors"]  # "" is given, and refused: None is the option left out
        _report(train(task=values["task"], exclude_editors=() if excluded is None else excluded, out=values["out"],
                      progress=RichProgress(console), on_plan=_print_plan,
                      **{k: v for k, v in values.items() if k in TRAIN_OPTIONS}))


request_command(train_cmd, TRAIN_OPTIONS)


def _print_plan(runner: Runner, plan: Plan) -> None:
    print_dataset(runner.dataset, plan.fingerprint)
    job = plan.jobs[0]
    console.print(f"[bold]plan[/] {term(_describe(plan.card.name, job))} (cache key {job.key})")


def _describe(name: str, job: Job) -> str:
    held_out = f" without editors {', '.join(job.spec.exclude_editors)}" if job.spec.exclude_editors else ""
    recipe = f", {job.config.recipe} recipe" if job.config.recipe != "native" else ""
    return f"{name} [{job.task}] on the {job.spec.split} split{held_out}{recipe}"


def _report(result: TrainOutput) -> None:
    ckpt, job = result.checkpoint, result.job
    log = ckpt.training or {}
    how = "found in the cache (trained earlier)" if ckpt.source == "cache" else "trained"
    console.print(
        f"{how}: {term(_describe(result.detector.card.name, job))}, "
        f"{log.get('num_train_images', '?')} images, {log.get('iterations', '?')} iterations on "
        f"{log.get('world_size', 1)} process(es); loss {_number(log.get('first_loss'))} -> "
        f"final loss {_number(log.get('final_loss'))}"
    )
    console.print(f"checkpoint: {term(str(ckpt.path))} (sha256 {ckpt.sha256[:16]}...)")
    if ckpt.log_dir is not None:
        console.print(f"training log: {term(str(ckpt.log_dir))} (log.jsonl; tensorboard --logdir "
                      f"{term(str(ckpt.log_dir))})" + _times(ckpt.log_dir / "log.jsonl"))
    if result.copy is not None:
        console.print(f"copy: {term(str(result.copy))}")


def _number(value: Any, spec: str = ".4f") -> str:
    """A number of the card's ``training`` or of the log's ``end`` line as printed: '?' where the file holds none."""
    return f"{value:{spec}}" if is_number(value) else "?"


def _times(log_file: Path) -> str:
    """``"; 42 s of training steps, 7 s of validation"`` from the log's last ``end`` line ('' without one)."""
    from diffzoo.leaderboard.render.training_plots import read_log

    end = next((row for row in reversed(read_log(log_file)) if row.get("event") == "end"), None)
    if not end:
        return ""
    val = f", {_number(end.get('validation_seconds'), '.0f')} s of validation" if end.get("validation_seconds") else ""
    return f"; {_number(end.get('train_seconds', 0), '.0f')} s of training steps{val}"
