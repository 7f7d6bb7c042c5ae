"""Every Markdown file diffzoo writes, from the one table model: the
leaderboard (``leaderboard.md``), the overview (``overview.md``), the run
summary (``summary.md``) and the paper report (``paper.md``).

Tables are laid out by the maintained library ``tabulate`` rather than by
hand: every cell arrives escaped for Markdown (:func:`~.escape.md_cell`, or
a number diffzoo formatted itself) and tabulate pads and aligns it, with
number parsing off, so ``90.0 ± 1.2``, ``**3.0**`` or ``-6.1`` are written
as given.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

from tabulate import tabulate

from diffzoo.leaderboard.layouts.paper import NOT_IN_PAPER, Section, Summary
from diffzoo.leaderboard.render.escape import md_cell
from diffzoo.leaderboard.table import DASH, Column, Row, Table, cell_text, conditions_line, format_delta, format_value

Align = Literal["left", "right"]
LEFT: Align = "left"  # text
RIGHT: Align = "right"  # numbers
Header = Sequence[tuple[str, str]]
"""(label, value) lines naming what was published (render/text.py's ``header_lines``)."""
SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")
MARKS: dict[str, Callable[[str], str]] = {"bracket": lambda n: f" [{n}]",
                                          "superscript": lambda n: n.translate(SUPERSCRIPT)}
"""How a cell points to a note: ``— [2]`` (the overview) or ``—²`` (the paper report)."""
MAX_PAD = 60
"""The most characters a Markdown table's column is padded to: a cell longer than that (a
10,000-character name) lengthens its own line only, never every line of its table."""


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]], align: Sequence[Align]) -> list[str]:
    """The lines of a GitHub (pipe) Markdown table: a header row, the alignment row (``:---`` left,
    ``---:`` right, per ``align``) and one line per row; ``headers`` and ``rows`` are escaped cells.
    A column is padded to its widest cell of at most :data:`MAX_PAD` characters; a longer cell is
    written whole and unpadded."""
    width = len(headers)
    if len(align) != width or any(len(row) != width for row in rows):
        raise ValueError(f"a Markdown table of {width} column(s) got {len(align)} alignment(s) "
                         f"and rows of {sorted({len(row) for row in rows})} cell(s)")
    long: dict[str, str] = {}

    def fit(cell: str) -> str:  # a cell over MAX_PAD is laid out as a token of MAX_PAD characters
        if len(cell) <= MAX_PAD:
            return cell
        token = f"<{len(long)}>".ljust(MAX_PAD, "<")  # no escaped cell holds a "<" (md_cell writes &lt;)
        long[token] = cell
        return token

    # tabulate takes a column's alignment from its cells, so a table without
    # rows would lose it: lay one empty row out and leave its line off.
    body = [[fit(cell) for cell in row] for row in rows] or [[""] * width]
    text = tabulate(body, headers=[fit(h) for h in headers], tablefmt="pipe", colalign=list(align),
                    disable_numparse=True)
    for token, cell in long.items():
        text = text.replace(token, cell, 1)
    lines = text.split("\n")
    return lines if rows else lines[:2]


# -- one table ------------------------------------------------------------------------------------
def _cell(t: Table, row: Row, col: Column, mark: Callable[[str], str] | None) -> str:
    cell = row.cells.get(col.key)
    if cell is None:
        return DASH
    text = cell_text(col, cell, ci=lambda v, h: f"{v} ± {h}", mark=mark, detail=lambda d: f" ({md_cell(d)})")
    if t.is_best(row, col.key):
        text = f"**{text}**"
    if t.paper and col.paper and (cell.paper is not None or cell.paper_note):  # ours | paper | Δ
        paper = DASH if cell.paper is None else format_value(col.info, cell.paper)
        parts = (text, paper, format_delta(col.info, cell.delta))
        text = DASH if parts == (DASH, DASH, DASH) else " \\| ".join(parts)
    return text


def table_lines(t: Table, marks: str | None = None) -> list[str]:
    """``t`` as a pipe table, then its notes (``marks``: how cells point to them; None: no marks),
    why its paper parts are dashes, its remarks, and how to get it when no record fed it."""
    mark = MARKS[marks] if marks else None
    provenance = t.key is not None
    heads = (["#"] * t.ranked + ["model (paper)"] * t.paper_columns + [t.group_header] * bool(t.group_header)
             + [t.row_header] + [f"{c.group}: {c.header}" if c.group else c.header for c in t.columns] + t.mixed
             + ["checkpoint", "git", "date"] * provenance)
    align = [RIGHT] * t.ranked + [LEFT] * (len(heads) - t.ranked - len(t.columns) - len(t.mixed) - 3 * provenance)
    align += [RIGHT] * len(t.columns) + [LEFT] * (len(t.mixed) + 3 * provenance)
    rows = []
    for row in t.rows:
        marks_ = "".join(mark(n) for n in row.notes) if mark else ""  # after the name of the row's detector
        group, label = md_cell(row.group) + marks_ * bool(t.group_header), md_cell(row.label) + marks_ * (
            not t.group_header)
        p = row.provenance
        rows.append([str(row.rank or "")] * t.ranked + [md_cell(row.model or DASH)] * t.paper_columns
                    + [group] * bool(t.group_header) + [f"*{label}*" if row.baseline else label]
                    + [_cell(t, row, c, mark) for c in t.columns]
                    + [md_cell(row.conditions.get(name, "-")) for name in t.mixed]
                    + ([md_cell((p.get("checkpoint_sha256") or "-")[:12]), md_cell((p.get("git") or "-")[:10]),
                        md_cell((p.get("date") or "")[:10])] if p else ["", "", ""]) * provenance)
    lines = markdown_table([md_cell(h) if i >= t.ranked else h for i, h in enumerate(heads)], rows, align)
    tail = [f"- {mark(n.id).strip() if marks == 'bracket' else mark(n.id)} {md_cell(n.text)}"
            for n in t.notes] if mark else []
    gaps = dict.fromkeys(c.paper_note for r in t.rows for col in t.columns if col.paper
                         for c in [r.cells[col.key]] if t.paper and c.paper is None and c.paper_note)
    tail += [f"- paper {DASH}: {md_cell('; '.join(gaps))}"] if gaps else []
    tail += [f"- {md_cell(r)}" for r in t.remarks]
    hint = [f"_{md_cell(t.hint)}_", ""] if not t.fed and t.hint else []
    return lines + [""] + hint + tail


# -- the leaderboard ------------------------------------------------------------------------------
NOTE = ("Values in %; ↑ higher is better, ↓ lower is better; ± is half the 95% bootstrap CI "
        "over images; **bold** = best detector in the column; baselines are trivial predictors "
        "scored on the same images.")


def leaderboard_markdown(header: Header, tables: list[Table], cross: list[Table]) -> str:
    """``leaderboard.md``: what was published, the cross-dataset tables (the overview of that
    suite), then one table per case with the line saying what its numbers were made under."""
    lines = ["# diffzoo leaderboard", "", *(f"- **{label}**: {md_cell(value)}" for label, value in header), "",
             NOTE, ""]
    for t in cross:
        lines += [f"## {md_cell(t.title)}", "", *table_lines(t), ""]
    for t in tables:
        k = t.key
        assert k is not None
        info = [f"task {md_cell(k.task)}", f"dataset fingerprint {md_cell(k.fingerprint)}",
                f"suite definition {md_cell(k.definition_hash)}", f"metrics v{md_cell(k.metrics_version)}",
                *filter(None, [md_cell(conditions_line(t.shared)), md_cell(distortion(t.case))])]
        if t.mixed:
            info.append(f"**mixed: {md_cell(', '.join(t.mixed))} (see the columns)**")
        lines += [f"## {md_cell(t.title)}", "", " · ".join(info), "", *table_lines(t), ""]
    return "\n".join(lines)


def distortion(case: dict) -> str:
    """``distortion jpeg (quality=80)`` of a per-case table's case ("" for none)."""
    dist = case.get("distortion")
    if not dist or dist == "none":
        return ""
    params = case.get("distortion_params") or {}
    shown = ", ".join(f"{k}={v}" for k, v in (params.items() if isinstance(params, dict) else params))
    return f"distortion {dist}" + (f" ({shown})" if shown else "")


# -- the overview ---------------------------------------------------------------------------------
def overview_markdown(header: Header, tables: list[Table], legend: str) -> str:
    lines = ["# diffzoo overview", "", *(f"- **{label}**: {md_cell(value)}" for label, value in header), "",
             md_cell(legend), ""]
    if not tables:
        lines += [md_cell("No overview: no record is of the suites standard, distortions, unseen-generators, "
                          "cross-dataset or opensdi."), ""]
    for t in tables:
        assert t.group is not None
        lines += [f"## {md_cell(t.group.title)}", "",
                  " · ".join(f"{k} {md_cell(v)}" for k, v in t.group.conditions.items()), "",
                  *table_lines(t, marks="bracket"), ""]
    return "\n".join(lines)


# -- the run summary ------------------------------------------------------------------------------
LEGEND = (f"Values in %; ± is half the 95% bootstrap CI over images; ↑ higher is better, ↓ lower is better; "
          f"{DASH} = not run (no record for that case), - = undefined on these images.")


def section_lines(section: Section, marks: str | None) -> list[str]:
    """A group's heading, the conditions its numbers were made under, its FLAG and threshold
    lines, and its tables (``###``)."""
    conditions = " · ".join(f"{k} {v}" for k, v in section.group.key.conditions.items())
    lines = ["", f"## {md_cell(section.title)}", "", md_cell(conditions) if section.group.records else "", ""]
    lines += [f"**FLAG**: {md_cell(f)}" + "  " for f in section.flags] + [""] * bool(section.flags)
    if section.policies:
        lines += ["Threshold policy:", "", *(f"- {md_cell(p)}" for p in section.policies)]
    if not section.group.newest:
        lines += ["", "Older suite versions: only tables with records are shown."]
    for t in section.shown:
        why = f"_{NOT_IN_PAPER}_" if t.paper and not t.paper_columns else ""
        lines += ["", f"### {md_cell(t.title)}", "", *([why, ""] if why else []), *table_lines(t, marks)]
    return lines


def summary_markdown(summary: Summary, *, title: str, notes: Sequence[str] = ()) -> str:
    """The summary as Markdown; ``title`` and ``notes`` are escaped like record text."""
    lines = [f"# {md_cell(title)}", "", md_cell(LEGEND), "", *(f"- {md_cell(n)}" for n in notes)]
    for section in summary.sections:
        lines += section_lines(section, None)
    return "\n".join(lines).rstrip() + "\n"
