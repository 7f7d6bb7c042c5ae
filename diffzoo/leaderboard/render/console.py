"""The console's tables (rich), from the one table model: each case's table
after a run (:func:`case_tables`) and the run summary (:func:`summary_console`).

Strings from records go into rich as :class:`~rich.text.Text`
(:func:`~.escape.term_text`): control characters are shown escaped and no
markup or emoji code in a name is interpreted."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from rich.rule import Rule
from rich.table import Table as RichTable
from rich.text import Text

from diffzoo.harness.records.document import ResultRecord
from diffzoo.leaderboard.layouts.cases import build_tables
from diffzoo.leaderboard.layouts.paper import Summary
from diffzoo.leaderboard.render.escape import printable, shown_name, term_text
from diffzoo.leaderboard.render.markdown import LEGEND
from diffzoo.leaderboard.table import Column, Row, Table, cell_text, conditions_line, format_ci

CONSOLE_COLUMNS = 10
"""A wider summary table (Table 5: two columns per editor) is printed in parts of at most this
many value columns, each repeating the row labels; summary.md keeps it whole."""


def _cell(t: Table, row: Row, col: Column) -> Text:
    """A cell: numbers diffzoo formatted, the CI dim, the best value bold."""
    cell = row.cells[col.key]
    text = Text(cell_text(col, cell))
    if half := format_ci(col, cell):
        text.append(f" ±{half}", style="dim")
    if t.is_best(row, col.key):
        text.stylize("bold")
    return text


def rich_tables(t: Table, title: str) -> list[RichTable]:
    """``t`` as rich tables (in parts of :data:`CONSOLE_COLUMNS` value columns); the last part's
    caption says how to get it when empty, and its remarks."""
    chunks = [t.columns[i:i + CONSOLE_COLUMNS] for i in range(0, len(t.columns), CONSOLE_COLUMNS)] or [[]]
    out = []
    for i, columns in enumerate(chunks):
        last = i == len(chunks) - 1
        caption = "; ".join([t.hint] * t.empty + t.remarks) if last else ""
        part = f" (part {i + 1} of {len(chunks)})" if len(chunks) > 1 else ""
        table = RichTable(title=term_text(shown_name(title) + part), title_justify="left",
                          caption=term_text(caption) if caption else None, caption_justify="left")
        if t.group_header:
            table.add_column(term_text(t.group_header), style="bold", overflow="fold")
        table.add_column(term_text(t.row_header), style=None if t.group_header else "bold", overflow="fold")
        for col in columns:
            table.add_column(term_text(col.header), justify="right", style="italic" if col.info.oracle else None,
                             overflow="fold")
        for name in t.mixed:
            table.add_column(term_text(name), overflow="fold")
        previous = None
        for row in t.rows:
            group = [term_text(shown_name(row.group) if row.group != previous else "")] if t.group_header else []
            previous = row.group
            table.add_row(*group, term_text(shown_name(row.label), "dim" if row.baseline else ""),
                          *(_cell(t, row, c) for c in columns),
                          *(term_text(row.conditions.get(name, "-")) for name in t.mixed))
        out.append(table)
    return out


def case_tables(records: Iterable[ResultRecord]) -> list[RichTable]:
    """One table per suite case: rows are detectors (then baselines), in %; the title names the
    label map and split; when rows differ in them (or another condition), a column per condition
    says which row is which."""
    out = []
    for t in build_tables(records, compact=True):
        assert t.key is not None
        shared = conditions_line(t.shared)
        out += rich_tables(t, f"{t.title}  (%, ± = half 95% CI; metrics v{t.key.metrics_version}"
                              + (f"; {shared}" if shared else "") + ")")
    return out


def summary_console(summary: Summary) -> Sequence[Any]:
    """Rich renderables: per group a rule, its FLAG and threshold lines, its tables with rows, and
    one line naming the tables no record filled (their shapes are in summary.md)."""
    out: list[Any] = [Text(LEGEND, style="dim")]
    for section in summary.sections:
        out.append(Rule(term_text(section.title)))
        out += [Text.assemble(("FLAG ", "bold red"), (printable(f), "red")) for f in section.flags]
        out += [Text.assemble(("threshold policy ", "bold"), printable(p)) for p in section.policies]
        out += [part for t in section.shown if not t.empty for part in rich_tables(t, t.title)]
        empty = [t.title.split(":")[0] for t in section.shown if t.empty]
        if empty:
            out.append(term_text(f"not run here (shapes in summary.md; add the suite to fill them): "
                                 f"{', '.join(empty)}", style="dim"))
    return out
