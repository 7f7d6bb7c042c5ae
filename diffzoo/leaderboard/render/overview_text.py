"""The overview table (:mod:`diffzoo.leaderboard.overview`) as Markdown, CSV and LaTeX:
``overview.md``, ``overview.csv`` and ``overview.tex``, written beside the leaderboard's
file of the same format by ``diffzoo leaderboard publish``.

Every string from a record (detector and dataset names, label maps, splits, the version
label, the notes, which name detectors) is escaped for its format with :mod:`.escape`;
numbers diffzoo formats itself are written as they are.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Sequence
from pathlib import Path

from diffzoo.harness.core.fsutil import atomic_write_text
from diffzoo.leaderboard.formats import OVERVIEW_FILES
from diffzoo.leaderboard.overview.build import build_overview
from diffzoo.leaderboard.overview.model import OVERVIEW_VERSION, OverviewCell, OverviewColumn, OverviewTable
from diffzoo.leaderboard.render.escape import csv_cell, latex, md_cell
from diffzoo.leaderboard.render.layout import LEFT, RIGHT, markdown_table
from diffzoo.leaderboard.summary.model import ABSENT
from diffzoo.leaderboard.tables import format_value
from diffzoo.leaderboard.versions import Selection

Header = Sequence[tuple[str, str]]
"""(label, value) lines naming what was published (render/text.py's ``header_lines``)."""
NOT_APPLICABLE = "n/a"
OVERVIEW_NOTE = (f"Overview definition v{OVERVIEW_VERSION} (docs/leaderboard.md, \"The overview table\"). Values in "
                 "%; ↑ higher is better; ± is half the 95% bootstrap CI over images, where the record has one "
                 "(means and worst-of columns have none); " + ABSENT + " [n] = missing, note n says why and how "
                 f"to get it; {NOT_APPLICABLE} = the detector has no such output. Rows are ranked by the standard "
                 "binary mIoU, missing last; one table per dataset, label map, split, recipe and evaluator version.")


def cell_text(col: OverviewColumn, cell: OverviewCell, ci: Callable[[str, str], str],
              ref: Callable[[str], str], mark: str = ABSENT) -> str:
    """A cell in %: ``ci(value, half)`` adds the CI; a missing one is ``mark`` and ``ref`` of each note id."""
    if not cell.applicable:
        return NOT_APPLICABLE
    if cell.value is None:
        return " ".join([mark, *(ref(n) for n in cell.notes)])
    text = format_value(col.info, cell.value)
    half = cell.half_width
    return ci(text, f"{100 * half:.1f}") if half is not None else text


def _header(col: OverviewColumn) -> str:
    return f"{col.label} {col.info.arrow}".strip()


# -- Markdown ----------------------------------------------------------------------------------
def overview_markdown(selection: Selection, tables: list[OverviewTable], header: Header) -> str:
    lines = ["# diffzoo overview", "", *(f"- **{label}**: {md_cell(value)}" for label, value in header), "",
             md_cell(OVERVIEW_NOTE), ""]
    if not tables:
        lines.append(md_cell("No overview: no record is of the suites standard, distortions, unseen-generators, "
                             "cross-dataset or opensdi."))
    for t in tables:
        lines += [f"## {md_cell(t.group.title)}", "",
                  " · ".join(f"{k} {md_cell(v)}" for k, v in t.group.conditions.items()), ""]
        head = ["#", "detector", *(md_cell(f"{c.benchmark}: {_header(c)}") for c in t.columns)]
        rows = [[str(r.rank or ""), md_cell(r.label),
                 *(cell_text(c, r.cells[c.key], ci=lambda v, h: f"{v} ± {h}", ref=lambda n: f"[{n}]")
                   for c in t.columns)] for r in t.rows]
        lines += markdown_table(head, rows, [RIGHT, LEFT, *[RIGHT] * len(t.columns)])
        if t.notes:
            lines += ["", *(f"- [{n.id}] {md_cell(n.text)}" for n in t.notes)]
        lines.append("")
    return "\n".join(lines)


# -- CSV (tidy: one line per table, row and column) ----------------------------------------------
CSV_FIELDS = ("version", "overview_version", "group", "benchmark", "column", "label", "rank", "detector", "value",
              "ci_half", "status", "detail", "note")
CSV_NUMBERS = frozenset(("rank", "value", "ci_half"))
"""Columns written as numbers diffzoo formats itself (``repr`` of a float, an int, or empty);
every other column goes through :func:`~.escape.csv_cell`."""


def overview_csv(selection: Selection, tables: list[OverviewTable], header: Header) -> str:
    """``status``: ``value``, ``missing`` (``note``: why, and how to get it) or ``n/a``;
    ``detail``: e.g. the setting a worst-of value is."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for t in tables:
        for row in t.rows:
            for col in t.columns:
                cell = row.cells[col.key]
                half = cell.half_width
                fields = {
                    "version": selection.label, "overview_version": t.version, "group": t.group.name,
                    "benchmark": col.benchmark, "column": col.key, "label": col.label, "rank": row.rank or "",
                    "detector": row.label, "value": "" if cell.value is None else repr(float(cell.value)),
                    "ci_half": "" if half is None else repr(float(half)),
                    "status": NOT_APPLICABLE if not cell.applicable else "missing" if cell.missing else "value",
                    "detail": cell.detail, "note": "; ".join(t.note(n).text for n in cell.notes),
                }
                writer.writerow({k: v if k in CSV_NUMBERS else csv_cell(v) for k, v in fields.items()})
    return buf.getvalue()


# -- LaTeX (booktabs; laid out by hand, as render/text.py's to_latex says why) ------------------------
def overview_latex(selection: Selection, tables: list[OverviewTable], header: Header) -> str:
    out = ["% diffzoo overview; needs \\usepackage{booktabs}",
           *(f"% {label}: {latex(value)}" for label, value in header), f"% {latex(OVERVIEW_NOTE)}", ""]
    for t in tables:
        groups = t.benchmarks
        spans, first = [], 3
        for _, cols in groups:
            spans.append(rf"\cmidrule(lr){{{first}-{first + len(cols) - 1}}}")
            first += len(cols)
        out += [r"\begin{table}[t]", r"\centering", r"\small",
                r"\caption{Overview: " + latex(t.group.title) + " ("
                + "; ".join(latex(f"{k} {v}") for k, v in t.group.conditions.items())
                + rf"; overview v{latex(t.version)}; \%, $\pm$ half 95\% CI; --- missing, see the notes)}}",
                r"\label{tab:" + latex(t.group.slug) + "}",
                r"\begin{tabular}{rl" + "r" * len(t.columns) + "}", r"\toprule",
                " & & " + " & ".join(rf"\multicolumn{{{len(cols)}}}{{c}}{{{latex(name)}}}" for name, cols in groups)
                + r" \\", " ".join(spans),
                r"\# & Detector & " + " & ".join(latex(c.label) + r" $\uparrow$" * bool(c.info.higher_is_better)
                                                 for c in t.columns) + r" \\", r"\midrule"]
        for row in t.rows:
            cells = [cell_text(c, row.cells[c.key], ci=lambda v, h: rf"{v} {{\scriptsize$\pm${h}}}",
                               ref=lambda n: latex(f"[{n}]"), mark="---") for c in t.columns]
            out.append(" & ".join([str(row.rank or ""), latex(row.label), *cells]) + r" \\")
        out += [r"\bottomrule", r"\end{tabular}"]
        if t.notes:
            out += [r"\par\smallskip\footnotesize", *(latex(f"[{n.id}] {n.text}") + r"\par" for n in t.notes)]
        out += [r"\end{table}", ""]
    return "\n".join(out)


OVERVIEW_RENDERERS: dict[str, Callable[[Selection, list[OverviewTable], Header], str]] = {
    "md": overview_markdown, "csv": overview_csv, "latex": overview_latex,
}


def write_overview(selection: Selection, fmt: str, out: Path, header: Header) -> Path | None:
    """Write the overview of ``selection`` in ``fmt`` under ``out`` (None: ``fmt`` has none)."""
    if fmt not in OVERVIEW_RENDERERS:
        return None
    return atomic_write_text(out / OVERVIEW_FILES[fmt],
                             OVERVIEW_RENDERERS[fmt](selection, build_overview(selection.records), header))
