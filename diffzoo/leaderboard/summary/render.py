"""The summary as Markdown (``summary.md``) and as rich console tables.

Record text is escaped for where it goes: :func:`~diffzoo.leaderboard.render.escape.md_cell`
in Markdown, :func:`~diffzoo.leaderboard.render.escape.term_text` (control
characters escaped, no markup) on the terminal.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.rule import Rule
from rich.table import Table as RichTable
from rich.text import Text

from diffzoo.leaderboard.render.escape import md_cell, printable, term_text
from diffzoo.leaderboard.render.layout import LEFT, RIGHT, markdown_table
from diffzoo.leaderboard.summary.build import Summary
from diffzoo.leaderboard.summary.model import ABSENT, SummaryTable

LEGEND = (f"Values in %; ± is half the 95% bootstrap CI over images; ↑ higher is better, ↓ lower is better; "
          f"{ABSENT} = not run (no record for that case), - = undefined on these images.")


# -- Markdown -----------------------------------------------------------------------------
def summary_markdown(summary: Summary, *, title: str, notes: Sequence[str] = ()) -> str:
    """The summary as Markdown; ``title`` and ``notes`` are escaped like record text."""
    lines = [f"# {md_cell(title)}", "", md_cell(LEGEND), ""]
    lines += [f"- {md_cell(n)}" for n in notes]
    for group in summary.groups:
        lines += ["", f"## {md_cell(group.title)}", ""]
        lines += [f"**FLAG**: {md_cell(f)}" + "  " for f in group.flags]
        if group.flags:
            lines.append("")
        if group.policies:
            lines += ["Threshold policy:", "", *(f"- {md_cell(p)}" for p in group.policies)]
        if not group.newest:
            lines += ["", "Older suite versions: only tables with records are shown."]
        for t in group.shown:
            lines += ["", *md_table(t)]
    return "\n".join(lines).rstrip() + "\n"


def md_table(t: SummaryTable) -> list[str]:
    """``t`` as Markdown: its title (``###``), the table, its hint when empty, its notes."""
    heads = ([t.group_header] if t.group_header else []) + [t.row_header] + [c.header for c in t.columns]
    align = [LEFT] * (len(heads) - len(t.columns)) + [RIGHT] * len(t.columns)
    rows = [([md_cell(row.group)] if t.group_header else []) + [md_cell(row.label)]
            + [c.text(row.cells.get(c.key)) for c in t.columns] for row in t.rows]
    lines = [f"### {md_cell(t.title)}", "", *markdown_table([md_cell(h) for h in heads], rows, align), ""]
    if t.empty:
        lines.append(f"_{md_cell(t.hint)}_")
        lines.append("")
    lines += [f"- {md_cell(n)}" for n in t.notes]
    return lines


# -- console (rich) ----------------------------------------------------------------------------
def summary_console(summary: Summary) -> list[Any]:
    """Rich renderables: per group a rule, its FLAG and threshold lines, its
    tables with rows, and one line naming the tables no record filled (their
    shapes are in summary.md).  Record text is shown with
    :func:`~.escape.term_text`: control characters escaped, no markup."""
    out: list[Any] = [Text(LEGEND, style="dim")]
    for group in summary.groups:
        out.append(Rule(term_text(group.title)))
        out += [Text.assemble(("FLAG ", "bold red"), (printable(f), "red")) for f in group.flags]
        out += [Text.assemble(("threshold policy ", "bold"), printable(p)) for p in group.policies]
        out += [part for t in group.shown if not t.empty for part in _rich_tables(t)]
        empty = [t.title.split(":")[0] for t in group.shown if t.empty]
        if empty:
            out.append(term_text(f"not run here (shapes in summary.md; add the suite to fill them): "
                                 f"{', '.join(empty)}", style="dim"))
    return out


CONSOLE_COLUMNS = 10
"""A wider table (Table 5: two columns per editor) is printed in parts of at most
this many value columns, each repeating the row labels; summary.md keeps it whole."""


def _rich_tables(t: SummaryTable) -> list[RichTable]:
    chunks = [t.columns[i:i + CONSOLE_COLUMNS] for i in range(0, len(t.columns), CONSOLE_COLUMNS)] or [[]]
    return [_rich_table(t, cols, part=(i + 1, len(chunks)), last=i == len(chunks) - 1)
            for i, cols in enumerate(chunks)]


def _rich_table(t: SummaryTable, columns: list, part: tuple[int, int] = (1, 1), last: bool = True) -> RichTable:
    caption = "; ".join([t.hint] * t.empty + t.notes) if last else ""
    title = t.title + (f" (part {part[0]} of {part[1]})" if part[1] > 1 else "")
    table = RichTable(title=term_text(title), title_justify="left",
                      caption=term_text(caption) if caption else None, caption_justify="left")
    if t.group_header:
        table.add_column(term_text(t.group_header), style="bold")
    table.add_column(term_text(t.row_header), style="bold" if not t.group_header else None)
    for c in columns:
        table.add_column(term_text(c.header), justify="right", style="italic" if c.oracle else None)
    previous = None
    for row in t.rows:
        group = [term_text(row.group) if row.group != previous else ""] if t.group_header else []
        previous = row.group
        table.add_row(*group, term_text(row.label),
                      *(term_text(c.text(row.cells.get(c.key), ci=lambda v, h: f"{v} ±{h}")) for c in columns))
    return table
