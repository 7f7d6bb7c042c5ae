"""The paper report, ``paper.md``: the paper layout of every group with the
paper's column (:func:`~diffzoo.leaderboard.layouts.paper.build_report`), each
cell ``ours | paper | Δ`` (Δ = ours - paper, in percentage points) where the
paper prints the column, then the other benchmarks' published numbers
(:mod:`.published`).

A part a cell lacks is a dash; why a value of ours is missing (no record:
the command that fills the row, a slice the data lacks, a metric the record
does not carry) is a note under the table, written once and marked where it
applies: after the row's label when it holds for the whole row, else in the
cell.
"""

from __future__ import annotations

from pathlib import Path

from diffzoo.harness.core.fsutil import atomic_write_text
from diffzoo.leaderboard.formats import MAIN_FILES
from diffzoo.leaderboard.layouts.paper import build_report
from diffzoo.leaderboard.paper.published import load_benchmarks, render_benchmarks
from diffzoo.leaderboard.paper.values import VALUES_FILE, load_values
from diffzoo.leaderboard.render.escape import md_cell
from diffzoo.leaderboard.render.markdown import section_lines
from diffzoo.leaderboard.table import DASH
from diffzoo.leaderboard.versions import Selection

REPORT_FILE = MAIN_FILES["paper"]


def paper_markdown(selection: Selection) -> str:
    values = load_values()
    lines = ["# DiffSeg30k paper tables, reproduced", "",
             f"- **records**: {md_cell(selection.label)} ({len(selection.records)} record(s))",
             f"- **paper**: Ci et al., DiffSeg30k, arXiv 2511.19111v2; {len(values)} published number(s) in "
             f"`{VALUES_FILE.name}` (diffzoo/leaderboard/paper/)", "",
             "Each cell of a column the paper prints: ours | paper | Δ (ours − paper, percentage points); values "
             "in %, ± half the 95% bootstrap CI over images. The paper's Acc is aAcc for pixel tasks "
             f"(docs/metrics.md). {DASH} marks a part with nothing to show (a cell with nothing at all is one "
             f"{DASH}); a superscript number points to the note under the table that says why a value of ours is "
             "missing, once per reason: after the row's label when it holds for the whole row (a row without a "
             "record names the command that fills it), else in the cell. One section per dataset, label map, "
             "split, recipe and evaluator version. Layout and the case behind each column: docs/paper.md.", ""]
    for section in build_report(selection.records, values):
        lines += section_lines(section, "superscript")
    lines += ["", *render_benchmarks(load_benchmarks(), selection.records)]
    return "\n".join(lines)


def write_report(selection: Selection, out: Path) -> Path:
    """Write ``out/paper.md``; returns its path."""
    return atomic_write_text(Path(out) / REPORT_FILE, paper_markdown(selection))
