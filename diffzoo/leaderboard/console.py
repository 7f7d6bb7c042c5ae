"""Console tables of result records (rich), from the same table model as
every published format (:mod:`.tables`)."""

from __future__ import annotations

from collections.abc import Iterable

from rich.markup import escape
from rich.table import Table as RichTable

from ..harness.records import ResultRecord
from .tables import build_tables, render_cell


def case_tables(records: Iterable[ResultRecord]) -> list[RichTable]:
    """One table per suite case: rows are detectors (then baselines), in %."""
    out = []
    for t in build_tables(records, compact=True):
        table = RichTable(title=escape(t.key.title) + "  (%, ± = half 95% CI)", title_justify="left")
        table.add_column("detector", style="bold")
        for col in t.columns:
            table.add_column(escape(f"{col.label} {col.arrow}".strip()), justify="right")
        for row in t.rows:
            cells = [render_cell(t, row, col, ci=lambda v, h: f"{v} [dim]±{h}[/]") for col in t.columns]
            name = f"[dim]{escape(row.detector)}[/]" if row.baseline else escape(row.detector)
            table.add_row(name, *cells)
        out.append(table)
    return out
