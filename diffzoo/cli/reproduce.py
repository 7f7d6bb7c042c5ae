"""``diffzoo reproduce RECORD_ID``: run a stored record's row again and compare its numbers.

The record's stored request is run again (the record's suite, only its case and the case it
compares with; no reference detectors) into ``--out`` (default: a temporary folder), and every
metric is printed as it was and as it is now.  On the machine that made the record the
numbers are identical (the same cached model, the same code); on another CPU a model trained
anew moves by its float kernels' last bits, so pass ``--tolerance`` (docs/user-guide.md).
"""

from __future__ import annotations

import contextlib
import math
import tempfile
from pathlib import Path
from typing import Any

import typer

from diffzoo.cli.console import console, folded_table
from diffzoo.cli.options import FORCE
from diffzoo.cli.progress import RichProgress, rank_output
from diffzoo.leaderboard.render.escape import term

DIFFERS = 1
"""The exit status when a number moved beyond the tolerance, or the row was not made again."""


def finite_tolerance(value: float) -> float:
    """``--tolerance`` as a number: inf would pass every metric."""
    if not math.isfinite(value):
        raise typer.BadParameter(f"{value} is no finite number; give the largest difference allowed, e.g. 0.01")
    return value


def reproduce_cmd(
    record_id: str = typer.Argument(..., metavar="RECORD_ID", help="The record's id (or an unambiguous prefix)."),
    store: Path = typer.Option(Path("diffzoo-out"), "--store", help="Record store holding the record."),
    out: Path | None = typer.Option(
        None, "--out", help="Store the new run here (default: a temporary folder, removed afterwards)."),
    force: bool = FORCE,
    tolerance: float = typer.Option(
        0.0, "--tolerance", min=0.0, callback=finite_tolerance,
        help="Largest difference allowed per metric (default 0: identical, as on the machine that made the "
        "record; on another CPU, e.g. 0.01 for pixel metrics)."),
    from_folder: Path | None = typer.Option(
        None, "--from-folder", exists=True, file_okay=False,
        help="The folder the record's run was started in: the relative paths it read (--dataset, --checkpoint, "
        "...) are read from there (default: the current folder)."),
    device: str | None = typer.Option(
        None, "--device",
        help="Run on this device (auto, cpu, cuda, cuda:1, ...) instead of the record's: a row made on a GPU, run "
        "again on a machine without one (other kernels: pass --tolerance)."),
) -> None:
    """Run a stored record's row again from its stored options; print its numbers then and now."""
    from diffzoo.api import reproduce
    from diffzoo.cli.leaderboard import open_store
    from diffzoo.cli.run import print_plan
    from diffzoo.harness.core.errors import RecordError
    from diffzoo.harness.records.check import StateSource
    from diffzoo.harness.records.document import changed_fields, field_digests, identity

    record = open_store(store).get(record_id)
    try:  # the numbers compared are the record's own; its state is what leaderboard verify recomputes them from
        if record.body.state is not None:
            StateSource([store]).blob(record.body.state)
    except RecordError as exc:
        console.print(f"[yellow]note:[/] record {record.id}: {term(str(exc))}")
    with rank_output(console), tempfile.TemporaryDirectory(prefix="diffzoo-reproduce-") as tmp:
        target = (out if out is not None else Path(tmp) / "out").absolute()  # named from here, not from-folder
        with contextlib.chdir(from_folder or Path.cwd()):  # the request's relative paths, as its run read them
            result, again = reproduce(record, target, RichProgress(console), on_plan=print_plan, device=device,
                                      force=force)
    if result.conflicts:
        console.print(f"[yellow]not stored:[/] {term(target)} already holds {len(result.conflicts)} of this run's "
                      f"rows with other numbers (first: record {term(result.conflicts[0].record_id)}); they were kept")
    body = record.body
    row = f"{body.row_name} / {body.suite.name} / {body.case_name} on {body.dataset.name}"
    if again is None:  # the same row of other data is no record of it: its numbers are not compared
        other = [r.body.dataset.fingerprint for r in result.records
                 if (r.body.suite.name, r.body.case) == (body.suite.name, body.case)]
        why = (f"it read {body.dataset.name} as fingerprint {other[0]}, the record's is {body.dataset.fingerprint}: "
               "the data changed since, or another copy of it is read" if other else "see the notes above")
        console.print(f"[bold red]the run made no record of {term(row)}[/] ({term(why)})")
        raise typer.Exit(DIFFERS)
    rows, moved = compare(record.metrics, again.metrics, tolerance)
    table = folded_table(term(row), ("metric", "then", "now", "difference"), right=("then", "now", "difference"))
    for name, then, now, diff, ok in rows:
        table.add_row(term(name), then, now, diff if ok else f"[bold red]{diff}[/]")
    console.print(table)
    allowed = "identical" if tolerance == 0 else f"within {tolerance:g}"
    if moved:
        console.print(f"[bold red]{len(moved)} metric(s) not {allowed}:[/] {term(', '.join(moved))}")
        raise typer.Exit(DIFFERS)
    fields = term(", ".join(changed_fields(*(field_digests(identity(r.data)) for r in (record, again)))))
    same_id = (f"the same record id {record.id}" if again.id == record.id
               else f"record {record.id} then, {again.id} now: what made it differs in {fields}")
    console.print(f"every metric {allowed} ({len(rows)} compared; {same_id})")


def compare(then: dict[str, Any], now: dict[str, Any], tolerance: float
            ) -> tuple[list[tuple[str, str, str, str, bool]], list[str]]:
    """Per metric of either record: (name, then, now, difference, within ``tolerance``), and
    the names of those not within it (0: equal as record numbers, undefined equal to undefined)."""
    from diffzoo.harness.records.check import same

    rows = []
    for name in sorted(set(then) | set(now)):
        a, b = then.get(name), now.get(name)
        defined = isinstance(a, (int, float)) and isinstance(b, (int, float)) and not any(
            isinstance(v, float) and math.isnan(v) for v in (a, b))
        ok = same(a, b) or (defined and abs(b - a) <= tolerance)
        rows.append((name, _shown(a), _shown(b), f"{b - a:+.6g}" if defined else "", ok))
    return rows, [row[0] for row in rows if not row[4]]


def _shown(value: Any) -> str:
    return "-" if value is None else f"{value:.6g}" if isinstance(value, float) else str(value)
