"""``diffzoo run``: :func:`diffzoo.evaluate`, printed.

Under torchrun every rank runs the command; rank 0 alone prints and writes
(other ranks print errors only).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from diffzoo.cli.console import console
from diffzoo.cli.options import CONFIG, FORCE, request_command, request_values
from diffzoo.cli.progress import RichProgress, rank_output
from diffzoo.harness.run.request import RunRequest
from diffzoo.leaderboard.render.escape import term

if TYPE_CHECKING:  # these import torch or numpy: only when a command runs, never for --help or list
    from diffzoo.api import Evaluation
    from diffzoo.leaderboard.store import AddOutcome


MAX_CASE_TABLES = 6
"""Above this many cases (e.g. --suite all) the console shows the summary only;
every case's table is in the output folder's summary and records."""
RUN_OPTIONS = tuple(f.name for f in fields(RunRequest))
"""The request's options ``diffzoo run`` takes (all of them), in the order ``--help`` lists them."""


def run_cmd(
    ctx: typer.Context,
    config: Path | None = CONFIG,
    out: Path = typer.Option(Path("diffzoo-out"), "--out", help="Output folder for records, summary and plots."),
    references: bool = typer.Option(
        True, "--references/--no-references",
        help="Also run the reference detectors a suite names (classification: CNNSpot, UniversalFakeDetect).",
    ),
    force: bool = FORCE,
    plan: bool = typer.Option(
        False, "--plan",
        help="Print the plan (models to train or load, model passes and images per model) and stop before any "
        "training or evaluation (the dataset is opened: a mini variant --dataset-option asks for is built).",
    ),
    rerun: bool = typer.Option(
        False, "--rerun",
        help="Replace results already recorded for the same run (the old record is kept under replaced/).",
    ),
    **options: Any,
) -> None:
    """Run benchmark suites for one detector on one dataset (under torchrun: sharded over ranks)."""
    from diffzoo.api import evaluate, make_request

    values = request_values(ctx, {"out": out, "references": references, "force": force, "plan": plan,
                                  "rerun": rerun}, options, config)
    request = make_request(**{k: v for k, v in values.items() if k in RUN_OPTIONS})
    with rank_output(console):
        evaluate(request=request, out=values["out"], references=values["references"], rerun=values["rerun"],
                 force=values["force"], plan_only=values["plan"], progress=RichProgress(console),
                 on_plan=print_plan, on_result=print_result)


request_command(run_cmd, RUN_OPTIONS)


def stored_line(outcomes: list[AddOutcome]) -> str:
    """``"3 record(s) added, 95 already recorded with the same numbers (...)"``: what the store did."""
    counts = Counter(o.status for o in outcomes)
    invalid = sum(1 for o in outcomes if o.status == "present" and o.stored_invalid)
    same = sum(1 for o in outcomes if o.status == "present" and not o.differs and not o.stored_invalid)
    parts = [f"{counts['added']} record(s) added"]
    if same:
        parts.append(f"{same} already recorded with the same numbers (one row each; --rerun replaces them)")
    if counts["present"] - same - invalid:
        parts.append(f"{counts['present'] - same - invalid} already recorded with DIFFERENT numbers")
    if invalid:
        parts.append(f"{invalid} not stored: a file that is not a valid record holds its place")
    if counts["replaced"]:
        parts.append(f"{counts['replaced']} replaced (--rerun; old ones under replaced/)")
    return ", ".join(parts)


def skipped_line(skipped: dict[str, dict[str, str]]) -> str:
    """``"3 sample(s) skipped: 2 too-large, 1 corrupt"``: distinct samples, by reason."""
    kinds = Counter(item["kind"] for item in skipped.values())
    return f"{len(skipped)} sample(s) skipped: " + ", ".join(f"{n} {term(k)}" for k, n in kinds.most_common())


def print_dataset(ds, fingerprint: str) -> None:
    """``dataset NAME (fingerprint F); classes: ...``: what ``run`` and ``train`` read, first."""
    console.print(f"[bold]dataset[/] {term(ds.name)} (fingerprint {fingerprint}); "
                  f"classes: {term(', '.join(ds.label_space.names))}")


def print_plan(result: Evaluation) -> None:
    """The dataset and every model's plan, before any work."""
    ds = result.dataset
    print_dataset(ds, result.plans[0].fingerprint)
    if ds.notice:
        console.print(f"[yellow]note:[/] {term(ds.notice)}")
    for i, plan in enumerate(result.plans):
        for line in plan.describe():
            console.print(f"[bold]plan[/] [dim](reference)[/] {term(line)}" if i else f"[bold]plan[/] {term(line)}")
    for plan in result.plans:
        for line in plan.pass_lines():
            console.print(f"[bold]passes[/] {term(line)}")


def print_result(result: Evaluation) -> None:
    """Notes, case tables (up to MAX_CASE_TABLES), the summary and what the store did."""
    from diffzoo.leaderboard.render.console import case_tables, summary_console

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
    if ds.notice:
        console.print(f"[yellow]note:[/] {term(ds.notice)}")
    for o in result.conflicts:
        console.print(f"[bold red]{term(o.reason)}[/]", soft_wrap=True)
