"""``diffzoo run``: :func:`diffzoo.evaluate`, printed.

Under torchrun every rank runs the command; rank 0 alone prints and writes
(other ranks print errors only).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from diffzoo.cli.console import console
from diffzoo.cli.options import (
    BATCH_SIZE, CROP_SIZE, DATASET, DATASET_OPTION, DETECTOR, DEVICE, EXTRA_AUTHENTIC, ITERATIONS, LABELS,
    LOG_EVERY, PRETRAINED, RECIPE, SAVE_EVERY, SEED, VAL_EVERY, WORKERS, parse_options,
)
from diffzoo.cli.progress import RichProgress, rank_output
from diffzoo.harness.core.errors import ConfigError
from diffzoo.leaderboard.render.escape import term

if TYPE_CHECKING:  # these import torch or numpy: only when a command runs, never for --help or list
    from diffzoo.api import Evaluation
    from diffzoo.leaderboard.store import AddOutcome


MAX_CASE_TABLES = 6
"""Above this many cases (e.g. --suite all) the console shows the summary only;
every case's table is in the output folder's summary and records."""


def run_cmd(
    detector: str = DETECTOR,
    suite: str = typer.Option("all", "--suite", "-s", help="Suite name, wildcard (e.g. 'dist*'), or 'all'."),
    dataset: str = DATASET,
    checkpoint: list[Path] = typer.Option(
        [], "--checkpoint", help="Use this checkpoint (folder or .safetensors); one per task."
    ),
    train: bool = typer.Option(True, "--train/--no-train", help="Train when no checkpoint is given or cached."),
    out: Path = typer.Option(Path("diffzoo-out"), "--out", help="Output folder for records, summary and plots."),
    seed: int = SEED,
    device: str = DEVICE,
    strict: bool = typer.Option(False, "--strict", help="Stop at the first corrupt sample instead of skipping it."),
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
    bootstrap: int = typer.Option(1000, "--bootstrap", help="Bootstrap resamples for 95% CIs (0: none)."),
    thresholds: str = typer.Option(
        "fixed", "--thresholds",
        help="fixed (card / METRICS.md thresholds) or calibrated (on --calibration-split, never an evaluated one).",
    ),
    calibration_split: str = typer.Option("calib", "--calibration-split", help="Split to calibrate thresholds on."),
    holdout: list[str] = typer.Option(
        [], "--holdout", help="Held-out editor pair for unseen-generators, e.g. sd2,glide; repeatable "
        "(replaces the paper's pairs)."
    ),
    generator: list[str] = typer.Option(
        [], "--generator",
        help="NAME=CARD: use generator card CARD where a suite names NAME (e.g. the LoRA suite's "
        "sdxl.hyper-sd-8step); repeatable.",
    ),
    eval_dataset: list[str] = typer.Option(
        [], "--eval-dataset",
        help="PATH[:SPLIT]: a dataset the cross-dataset suite evaluates the model on (default split: test, "
        "else val); repeatable.",
    ),
    eval_dataset_option: list[str] = typer.Option(
        [], "--eval-dataset-option",
        help="KEY=VALUE: an adapter option for every --eval-dataset (e.g. kinds=partial for OpenSDI); repeatable.",
    ),
    references: bool = typer.Option(
        True, "--references/--no-references",
        help="Also run the reference detectors a suite names (classification: CNNSpot, UniversalFakeDetect).",
    ),
    force: bool = typer.Option(
        False, "--force",
        help="Use an --out folder that is not empty and was not made by diffzoo (its files are never overwritten).",
    ),
    plan: bool = typer.Option(
        False, "--plan",
        help="Print the plan (models to train or load, model passes and images per model) and stop before any work.",
    ),
    rerun: bool = typer.Option(
        False, "--rerun",
        help="Replace results already recorded for the same run (the old record is kept under replaced/).",
    ),
) -> None:
    """Run benchmark suites for one detector on one dataset (under torchrun: sharded over ranks)."""
    from diffzoo.api import evaluate

    with rank_output(console):
        evaluate(
            detector, suite, dataset, out=out, references=references, rerun=rerun, force=force, plan_only=plan,
            progress=RichProgress(console), on_plan=print_plan, on_result=print_result,
            seed=seed, device=device, pretrained=pretrained, iterations=iterations, batch_size=batch_size,
            crop_size=crop_size, recipe=recipe, labels=labels, extra_authentic=extra_authentic,
            dataset_options=parse_options(dataset_option, "--dataset-option"), checkpoints=list(checkpoint),
            train=train, strict=strict, bootstrap=bootstrap, thresholds=thresholds,
            calibration_split=calibration_split, holdout=_pairs(holdout),
            generators={k: str(v) for k, v in parse_options(generator, "--generator").items()},
            save_every=save_every, log_every=log_every, val_every=val_every, workers=workers,
            eval_datasets=list(eval_dataset),
            eval_dataset_options=parse_options(eval_dataset_option, "--eval-dataset-option"),
        )


def stored_line(outcomes: list[AddOutcome]) -> str:
    """``"3 record(s) added, 95 already recorded with the same numbers (...)"``: what the store did."""
    counts = Counter(o.status for o in outcomes)
    same = sum(1 for o in outcomes if o.status == "present" and not o.differs)
    parts = [f"{counts['added']} record(s) added"]
    if same:
        parts.append(f"{same} already recorded with the same numbers (one row each; --rerun replaces them)")
    if counts["present"] - same:
        parts.append(f"{counts['present'] - same} already recorded with DIFFERENT numbers")
    if counts["replaced"]:
        parts.append(f"{counts['replaced']} replaced (--rerun; old ones under replaced/)")
    return ", ".join(parts)


def skipped_line(skipped: dict[str, dict[str, str]]) -> str:
    """``"3 sample(s) skipped: 2 too-large, 1 corrupt"``: distinct samples, by reason."""
    kinds = Counter(item["kind"] for item in skipped.values())
    return f"{len(skipped)} sample(s) skipped: " + ", ".join(f"{n} {term(k)}" for k, n in kinds.most_common())


def _pairs(items: list[str]) -> list[tuple[str, str]]:
    pairs = []
    for item in items:
        names = tuple(n.strip() for n in item.replace("+", ",").split(",") if n.strip())
        if len(names) != 2:
            raise ConfigError(f"--holdout takes two editor names, e.g. sd2,glide; got {item!r}")
        pairs.append(names)
    return pairs


def print_dataset(ds, fingerprint: str) -> None:
    """``dataset NAME (fingerprint F); classes: ...``: what ``run`` and ``train`` read, first."""
    console.print(f"[bold]dataset[/] {term(ds.name)} (fingerprint {fingerprint}); "
                  f"classes: {term(', '.join(ds.label_space.names))}")


def print_plan(result: Evaluation) -> None:
    """The dataset and every model's plan, before any work."""
    main = result.runners[0]
    ds = main.dataset
    print_dataset(ds, main.plan_.fingerprint)
    notice = ds.notice
    if notice:
        console.print(f"[yellow]note:[/] {term(notice)}")
    for i, runner in enumerate(result.runners):
        for line in runner.plan_.describe():
            console.print(f"[bold]plan[/] [dim](reference)[/] {term(line)}" if i else f"[bold]plan[/] {term(line)}")
    for runner in result.runners:
        for line in runner.pass_summary():
            console.print(f"[bold]passes[/] {term(line)}")


def print_result(result: Evaluation) -> None:
    """Notes, case tables (up to MAX_CASE_TABLES), the summary and what the store did."""
    from diffzoo.leaderboard.render.console import case_tables
    from diffzoo.leaderboard.summary.render import summary_console

    for line in result.notes:  # cases without images; passes that reused the undistorted one
        console.print(f"[yellow]note:[/] {term(line)}")
    tables = case_tables(result.records)
    if len(tables) <= MAX_CASE_TABLES:
        for table in tables:
            console.print(table)
    for renderable in summary_console(result.summary):
        console.print(renderable)
    if result.skipped:
        console.print(f"[yellow]{skipped_line(result.skipped)}[/] (each listed in the records with its reason; "
                      "--strict stops at the first instead)")
    ds = result.dataset
    console.print(
        f"{stored_line(result.outcomes)} in {term(result.store.records_dir)}; summary "
        f"{term(result.written['summary.md'])} ({result.seconds:.0f} s; dataset {term(ds.name)})."
    )
    if result.training:
        logs = Path(result.store.root) / "train"
        console.print(f"training logs of {len(result.training)} model(s) in {term(logs)} (tensorboard --logdir "
                      f"{term(logs)}); curves in {term(logs.parent / 'plots')}/*-training.png")
    notice = ds.notice
    if notice:
        console.print(f"[yellow]note:[/] {term(notice)}")
    for o in result.conflicts:
        console.print(f"[bold red]{term(o.reason)}[/]", soft_wrap=True)
