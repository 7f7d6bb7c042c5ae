"""``diffzoo train``: :func:`diffzoo.train` (one model, as ``diffzoo run`` would train it), printed.

The config resolution (card recipe <- dataset overrides <- options) and the
checkpoint cache are the runner's, so ``diffzoo run`` later finds the model
in the cache.  Under torchrun the model trains through DDP and rank 0 writes.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from diffzoo.cli.console import console
from diffzoo.cli.options import (
    BATCH_SIZE, CROP_SIZE, DATASET, DATASET_OPTION, DETECTOR, DEVICE, EXTRA_AUTHENTIC, ITERATIONS, LABELS,
    LOG_EVERY, PRETRAINED, RECIPE, SAVE_EVERY, SEED, VAL_EVERY, WORKERS, parse_options,
)
from diffzoo.cli.progress import RichProgress, rank_output
from diffzoo.cli.run import print_dataset
from diffzoo.leaderboard.render.escape import term

if TYPE_CHECKING:  # these import torch: only when the command runs, never for --help or list
    from diffzoo.harness.run.planning import Plan, TrainingJob
    from diffzoo.harness.run.runner import Runner, TrainOutput


def train_cmd(
    detector: str = DETECTOR,
    dataset: str = DATASET,
    task: str = typer.Option("binary", "--task", help="binary or semantic (or any task the detector card lists)."),
    exclude_editors: str | None = typer.Option(
        None, "--exclude-editors", help="Comma-separated editors whose images are left out of training."
    ),
    seed: int = SEED,
    device: str = DEVICE,
    pretrained: bool | None = PRETRAINED,
    iterations: int | None = ITERATIONS,
    batch_size: int | None = BATCH_SIZE,
    crop_size: int | None = CROP_SIZE,
    recipe: str = RECIPE,
    labels: str | None = LABELS,
    extra_authentic: Path | None = EXTRA_AUTHENTIC,
    dataset_option: list[str] = DATASET_OPTION,
    save_every: int | None = SAVE_EVERY,
    log_every: int | None = LOG_EVERY,
    val_every: int | None = VAL_EVERY,
    workers: int | None = WORKERS,
    out: Path | None = typer.Option(None, "--out", help="Also write the checkpoint to this folder."),
) -> None:
    """Train one detector on a dataset's train split; the checkpoint goes to the cache (and --out)."""
    from diffzoo.api import train

    with rank_output(console):
        _report(train(
            detector, dataset, task=task, exclude_editors=[e.strip() for e in (exclude_editors or "").split(",")
                                                           if e.strip()],
            out=out, progress=RichProgress(console), on_plan=_print_plan, seed=seed, device=device,
            pretrained=pretrained, iterations=iterations, batch_size=batch_size, crop_size=crop_size, recipe=recipe,
            labels=labels, extra_authentic=extra_authentic,
            dataset_options=parse_options(dataset_option, "--dataset-option"), save_every=save_every,
            log_every=log_every, val_every=val_every, workers=workers,
        ))


def _print_plan(runner: Runner, plan: Plan) -> None:
    print_dataset(runner.dataset, plan.fingerprint)
    job = plan.jobs[0]
    console.print(f"[bold]plan[/] {term(_describe(plan.card.name, job))} (cache key {job.key})")


def _describe(name: str, job: TrainingJob) -> str:
    held_out = f" without editors {', '.join(job.spec.exclude_editors)}" if job.spec.exclude_editors else ""
    recipe = f", {job.config.recipe} recipe" if job.config.recipe != "native" else ""
    return f"{name} [{job.task}] on the {job.spec.split} split{held_out}{recipe}"


def _report(result: TrainOutput) -> None:
    ckpt, job = result.checkpoint, result.job
    log = ckpt.get("training") or {}
    how = "found in the cache (trained earlier)" if ckpt["source"] == "cache" else "trained"
    console.print(
        f"{how}: {term(_describe(result.detector.card.name, job))}, "
        f"{log.get('num_train_images', '?')} images, {log.get('iterations', '?')} iterations on "
        f"{log.get('world_size', 1)} process(es); loss {log.get('first_loss', float('nan')):.4f} -> "
        f"final loss {log.get('final_loss', float('nan')):.4f}"
    )
    console.print(f"checkpoint: {term(ckpt['path'])} (sha256 {ckpt['sha256'][:16]}...)")
    if ckpt.get("log_dir"):
        console.print(f"training log: {term(ckpt['log_dir'])} (log.jsonl; tensorboard --logdir {term(ckpt['log_dir'])})"
                      + _times(Path(ckpt["log_dir"]) / "log.jsonl"))
    if result.copy is not None:
        console.print(f"copy: {term(str(result.copy))}")


def _times(log_file: Path) -> str:
    """``"; 42 s of training steps, 7 s of validation"`` from the log's last ``end`` line ('' without one)."""
    from diffzoo.leaderboard.render.training_plots import read_log

    end = next((row for row in reversed(read_log(log_file)) if row.get("event") == "end"), None)
    if not end:
        return ""
    val = f", {end.get('validation_seconds', 0):.0f} s of validation" if end.get("validation_seconds") else ""
    return f"; {end.get('train_seconds', 0):.0f} s of training steps{val}"
