"""Console tables of result records (rich), from the same table model as
every published format (:mod:`.tables`).

Strings from records go into rich as :class:`~rich.text.Text`
(:func:`~.escape.term_text`): control characters are shown escaped and no
markup or emoji code in a name is interpreted."""

from __future__ import annotations

from collections.abc import Iterable

from rich.table import Table as RichTable
from rich.text import Text

from diffzoo.harness.records.document import ResultRecord
from diffzoo.leaderboard.render.escape import term_text
from diffzoo.leaderboard.tables import build_tables, conditions_line, render_cell


def case_tables(records: Iterable[ResultRecord]) -> list[RichTable]:
    """One table per suite case: rows are detectors (then baselines), in %.
    The title names the label map and split; when rows differ in them (or
    another condition), a column per condition says which row is which."""
    out = []
    for t in build_tables(records, compact=True):
        shared = conditions_line(t.shared)
        table = RichTable(title=term_text(f"{t.key.title}  (%, ± = half 95% CI; metrics v{t.key.metrics_version}"
                                          + (f"; {shared}" if shared else "") + ")"), title_justify="left")
        table.add_column("detector", style="bold")
        for col in t.columns:
            table.add_column(term_text(f"{col.label} {col.arrow}".strip()), justify="right")
        for name in t.mixed:
            table.add_column(term_text(name))
        for row in t.rows:
            cells = [Text.from_markup(render_cell(t, row, col, ci=lambda v, h: f"{v} [dim]±{h}[/]"))
                     for col in t.columns]  # numbers diffzoo formatted, marked up here
            cells += [term_text(row.conditions.get(name, "-")) for name in t.mixed]
            table.add_row(term_text(row.detector, "dim" if row.baseline else ""), *cells)
        out.append(table)
    return out
