"""Text outputs of the leaderboard: Markdown, CSV, LaTeX and JSON.

All render the tables of :mod:`.tables`; the HTML site is in :mod:`.site`.
Every string that comes from a record (detector, dataset, suite and case
names, metric names, git hashes, dates, the version label) is escaped for
the target format with :mod:`.escape`; numbers diffzoo formats itself are
written as they are.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from pathlib import Path

from diffzoo.harness.core.fsutil import atomic_write_text
from diffzoo.leaderboard.formats import FORMATS, TEXT_FORMAT_FILES
from diffzoo.leaderboard.render.escape import csv_cell, latex, md_cell
from diffzoo.leaderboard.render.layout import LEFT, RIGHT, markdown_table
from diffzoo.leaderboard.render.overview_text import write_overview
from diffzoo.leaderboard.summary.render import md_table as summary_md_table
from diffzoo.leaderboard.summary.tables import cross_tables
from diffzoo.leaderboard.tables import Table, build_tables, check_mixing, conditions_line, record_conditions, render_cell
from diffzoo.leaderboard.versions import Selection, summarize

NOTE = ("Values in %; ↑ higher is better, ↓ lower is better; ± is half the 95% bootstrap CI "
        "over images; **bold** = best detector in the column; baselines are trivial predictors "
        "scored on the same images.")


def short(sha: str | None, n: int = 12) -> str:
    return sha[:n] if sha else "-"


def header_lines(selection: Selection) -> list[tuple[str, str]]:
    """(label, value) pairs describing what was published."""
    info = selection.version or summarize(selection.records)
    pairs = [("version", selection.label if selection.version else f"not frozen ({selection.label})")]
    if selection.version:
        pairs.append(("frozen", selection.version.get("created", "")))
    pairs += [
        ("datasets", ", ".join(f"{d['name']} ({d['fingerprint']})" for d in info["datasets"])),
        ("suites", ", ".join(f"{s['name']} v{s['version']}" for s in info["suites"])),
        ("metric definitions", ", ".join(f"v{v}" for v in info["metrics_versions"])),
        *((f"{name}s", ", ".join(sorted({record_conditions(r)[name] for r in selection.records})))
          for name in ("label map", "split")),
        ("records", str(len(selection.records))),
    ]
    return pairs


def _mixed_cells(table: Table, row, escape: Callable[[str], str]) -> list[str]:
    """The row's value of each condition its table's rows differ in."""
    return [escape(row.conditions.get(name, "-")) for name in table.mixed]


# -- Markdown ------------------------------------------------------------------
def to_markdown(selection: Selection, tables: list[Table]) -> str:

    lines = ["# diffzoo leaderboard", ""]
    lines += [f"- **{label}**: {md_cell(value)}" for label, value in header_lines(selection)]
    lines += ["", NOTE, ""]
    for cross in cross_tables(selection.records):  # the cross-dataset suite's overview, first
        lines += ["## " + md_cell(cross.title), "", *summary_md_table(cross)[2:], ""]
    for t in tables:
        k = t.key
        lines += [f"## {md_cell(k.title)}", "",
                  f"task {md_cell(k.task)} · dataset fingerprint {md_cell(k.fingerprint)} · "
                  f"suite definition {md_cell(k.definition_hash)} · metrics v{md_cell(k.metrics_version)}"
                  + "".join(f" · {md_cell(part)}" for part in [conditions_line(t.shared)] if part)
                  + _distortion_note(t)
                  + (f" · **mixed: {md_cell(', '.join(t.mixed))} (see the columns)**" if t.mixed else ""), ""]
        head = ["#", "detector", *(f"{c.label} {c.arrow}".strip() for c in t.columns), *t.mixed,
                "checkpoint", "git", "date"]
        rows = []
        for row in t.rows:
            p = row.provenance
            name = f"*{md_cell(row.detector)}*" if row.baseline else md_cell(row.detector)
            rows.append([str(row.rank or ""), name, *(render_cell(t, row, c, ci=lambda v, h: f"{v} ± {h}",
                                                                   best=lambda x: f"**{x}**") for c in t.columns),
                         *_mixed_cells(t, row, md_cell),
                         md_cell(short(p.get("checkpoint_sha256"))) if p else "",
                         md_cell(short(p.get("git"), 10)) if p else "",
                         md_cell((p.get("date") or "")[:10]) if p else ""])
        align = [RIGHT, LEFT, *[RIGHT] * len(t.columns), *[LEFT] * len(t.mixed), LEFT, LEFT, LEFT]
        lines += markdown_table(head[:2] + [md_cell(h) for h in head[2:]], rows, align)
        lines.append("")
    return "\n".join(lines)


def _distortion_note(table: Table) -> str:
    dist = table.case.get("distortion")
    if not dist or dist == "none":
        return ""
    params = table.case.get("distortion_params") or {}
    shown = ", ".join(f"{k}={v}" for k, v in (params.items() if isinstance(params, dict) else params))
    return f" · distortion {md_cell(dist)}" + (f" ({md_cell(shown)})" if shown else "")


# -- CSV (tidy: one row per table row and metric) --------------------------------
CSV_FIELDS = ("version", "suite", "suite_version", "definition_hash", "case", "task", "dataset",
              "dataset_fingerprint", "label_map", "split", "metrics_version", "rank", "detector", "baseline", "metric",
              "value", "ci95_low", "ci95_high", "higher_is_better", "checkpoint_sha256", "git", "date",
              "record_id")
CSV_NUMBERS = frozenset(("rank", "baseline", "value", "ci95_low", "ci95_high", "higher_is_better"))
"""The columns diffzoo writes as numbers it formatted itself (``repr`` of a
float, an int, or empty): written as they are, so a negative value stays a
number.  Every other column is text that came from a record or the version
label (names, versions, hashes, dates, ids) and goes through
:func:`~.escape.csv_cell`."""


def to_csv(selection: Selection, tables: list[Table]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for t in tables:
        k = t.key
        for row in t.rows:
            for col in t.columns:
                cell = row.cells.get(col.name)
                if cell is None:
                    continue
                p = row.provenance
                fields = {
                    "version": selection.label, "suite": k.suite, "suite_version": k.suite_version,
                    "definition_hash": k.definition_hash, "case": k.case, "task": k.task,
                    "dataset": k.dataset, "dataset_fingerprint": k.fingerprint,
                    "label_map": row.conditions.get("label map", ""), "split": row.conditions.get("split", ""),
                    "metrics_version": k.metrics_version, "rank": row.rank or "", "detector": row.detector,
                    "baseline": int(row.baseline), "metric": col.name,
                    "value": "" if cell.value is None else repr(float(cell.value)),
                    "ci95_low": "" if cell.ci is None else repr(float(cell.ci[0])),
                    "ci95_high": "" if cell.ci is None else repr(float(cell.ci[1])),
                    "higher_is_better": {True: 1, False: 0, None: ""}[col.higher_is_better],
                    "checkpoint_sha256": p.get("checkpoint_sha256") or "", "git": p.get("git") or "",
                    "date": p.get("date") or "", "record_id": row.record_id or "",
                }
                writer.writerow({name: v if name in CSV_NUMBERS else csv_cell(v) for name, v in fields.items()})
    return buf.getvalue()


# -- LaTeX (booktabs) -------------------------------------------------------------
# Laid out by hand, not by tabulate: its only booktabs format (latex_booktabs)
# escapes every cell itself, which would double-escape the cells escaped here
# with escape.latex and break the markup cells carry on purpose (\textbf,
# {\scriptsize$\pm$...}); its raw format (latex_raw) writes \hline, not booktabs.
def to_latex(selection: Selection, tables: list[Table]) -> str:
    out = ["% diffzoo leaderboard; needs \\usepackage{booktabs}",
           *(f"% {label}: {latex(value)}" for label, value in header_lines(selection)), ""]
    for t in tables:
        arrows = {True: r"$\uparrow$", False: r"$\downarrow$", None: ""}
        out += [r"\begin{table}[t]", r"\centering", r"\small",
                r"\caption{" + latex(t.key.title) + f" (metrics v{latex(t.key.metrics_version)}; "
                + "".join(f"{latex(part)}; " for part in [conditions_line(t.shared)] if part)
                + r"\%, $\pm$ half 95\% CI)" + "}",
                r"\label{tab:" + latex(t.key.slug) + "}",
                r"\begin{tabular}{l" + "r" * len(t.columns) + "l" * len(t.mixed) + "}", r"\toprule",
                "Detector & " + " & ".join([*(f"{latex(c.label)} {arrows[c.higher_is_better]}".strip()
                                              for c in t.columns), *(latex(m) for m in t.mixed)]) + r" \\",
                r"\midrule"]
        for row in t.rows:
            cells = [render_cell(t, row, col, ci=lambda v, h: rf"{v} {{\scriptsize$\pm${h}}}",
                                 best=lambda x: rf"\textbf{{{x}}}") for col in t.columns]
            cells += _mixed_cells(t, row, latex)
            name = latex(row.detector)
            out.append((rf"\textit{{{name}}}" if row.baseline else name) + " & " + " & ".join(cells) + r" \\")
        out += [r"\bottomrule", r"\end{tabular}", r"\end{table}", ""]
    return "\n".join(out)


# -- JSON ------------------------------------------------------------------------------
def to_json(selection: Selection, tables: list[Table]) -> str:
    doc = {
        "version": selection.version or {"name": None, "label": selection.label, **summarize(selection.records)},
        "tables": [{
            "key": vars(t.key), "title": t.key.title, "case": t.case,
            "conditions": t.shared, "mixed": t.mixed,
            "columns": [{"metric": c.name, "label": c.label, "higher_is_better": c.higher_is_better,
                         "percent": c.percent} for c in t.columns],
            "rows": [{"rank": r.rank, "detector": r.detector, "baseline": r.baseline, "record_id": r.record_id,
                      "values": {m: {"value": c.value, "ci95": list(c.ci) if c.ci else None}
                                 for m, c in r.cells.items()},
                      "provenance": r.provenance, "conditions": r.conditions} for r in t.rows],
        } for t in tables],
    }
    return json.dumps(doc, indent=2, sort_keys=True, allow_nan=False)


RENDERERS: dict[str, Callable[[Selection, list[Table]], str]] = {
    "md": to_markdown, "csv": to_csv, "latex": to_latex, "json": to_json,
}
TEXT_FORMATS = {fmt: (TEXT_FORMAT_FILES[fmt], RENDERERS[fmt]) for fmt in TEXT_FORMAT_FILES}


def publish(selection: Selection, fmt: str, out: Path, allow_mixed: bool = False) -> Path:
    """Write ``selection`` in format ``fmt`` under ``out``; return the main file.

    Refuses (:class:`ConfigError`) a table whose rows were made under
    different label maps, splits or evaluator versions unless ``allow_mixed``
    (then a column names each).  ``paper``: the DiffSeg30k Tables 2-8 report
    (:mod:`.paper`)."""
    from diffzoo.harness.core.errors import ConfigError

    if fmt not in FORMATS:
        raise ConfigError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if not selection.records:
        from diffzoo.harness.core.errors import RecordError

        raise RecordError(f"nothing to publish: {selection.label} has no records")
    out = Path(out)
    if fmt == "paper":
        from diffzoo.leaderboard.paper import write_report

        return write_report(selection, out, allow_mixed=allow_mixed)
    tables = build_tables(selection.records)
    check_mixing(tables, allow_mixed)
    if fmt == "html":
        from diffzoo.leaderboard.render.site import write_site

        return write_site(selection, out)
    name, render = TEXT_FORMATS[fmt]
    path = atomic_write_text(out / name, render(selection, tables))
    write_overview(selection, fmt, out, header_lines(selection))  # md, csv, latex: the overview beside it
    return path
