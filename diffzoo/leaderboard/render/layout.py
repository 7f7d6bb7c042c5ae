"""Layout of the Markdown tables diffzoo writes (leaderboard, summary, paper
report), by the maintained library ``tabulate`` rather than by hand.

Layout only: every cell arrives already escaped for Markdown by its writer
(:func:`~diffzoo.leaderboard.render.escape.md_cell`, or a number diffzoo
formatted itself), and tabulate pads and aligns it.  Number parsing is off,
so ``90.0 ± 1.2``, ``**3.0**`` or ``-6.1`` are written exactly as given.
tabulate trims the spaces around a cell, as a Markdown viewer does anyway.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from tabulate import tabulate

Align = Literal["left", "right"]
LEFT: Align = "left"  # text
RIGHT: Align = "right"  # numbers


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]], align: Sequence[Align]) -> list[str]:
    """The lines of a GitHub (pipe) Markdown table: a header row, the
    alignment row (``:---`` left, ``---:`` right, per ``align``) and one line
    per row.  ``headers`` and ``rows`` are escaped cells, one per column."""
    width = len(headers)
    if len(align) != width or any(len(row) != width for row in rows):
        raise ValueError(f"a Markdown table of {width} column(s) got {len(align)} alignment(s) "
                         f"and rows of {sorted({len(row) for row in rows})} cell(s)")
    # tabulate takes a column's alignment from its cells, so a table without
    # rows would lose it: lay one empty row out and leave its line off.
    body = [list(row) for row in rows] or [[""] * width]
    lines = tabulate(body, headers=list(headers), tablefmt="pipe", colalign=list(align),
                     disable_numparse=True).split("\n")
    return lines if rows else lines[:2]
