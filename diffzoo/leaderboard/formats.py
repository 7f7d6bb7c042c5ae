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

from ..harness.fsutil import atomic_write_text
from .escape import csv_cell, latex, md_cell
from .tables import Table, build_tables, render_cell
from .versions import Selection, summarize

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
        ("records", str(len(selection.records))),
    ]
    return pairs


# -- Markdown ------------------------------------------------------------------
def to_markdown(selection: Selection, tables: list[Table]) -> str:
    lines = ["# diffzoo leaderboard", ""]
    lines += [f"- **{label}**: {md_cell(value)}" for label, value in header_lines(selection)]
    lines += ["", NOTE, ""]
    for t in tables:
        k = t.key
        lines += [f"## {md_cell(k.title)}", "",
                  f"task {md_cell(k.task)} · dataset fingerprint {md_cell(k.fingerprint)} · "
                  f"suite definition {md_cell(k.definition_hash)} · metrics v{md_cell(k.metrics_version)}"
                  + _distortion_note(t), ""]
        head = ["#", "detector", *(f"{c.label} {c.arrow}".strip() for c in t.columns),
                "checkpoint", "git", "date"]
        lines.append("| " + " | ".join(head[:2] + [md_cell(h) for h in head[2:]]) + " |")
        lines.append("|" + "|".join(["--:", ":--", *(["--:"] * len(t.columns)), ":--", ":--", ":--"]) + "|")
        for row in t.rows:
            p = row.provenance
            name = f"*{md_cell(row.detector)}*" if row.baseline else md_cell(row.detector)
            cells = [str(row.rank or ""), name, *(render_cell(t, row, c, ci=lambda v, h: f"{v} ± {h}", best=lambda x: f"**{x}**")
                       for c in t.columns),
                     md_cell(short(p.get("checkpoint_sha256"))) if p else "",
                     md_cell(short(p.get("git"), 10)) if p else "",
                     md_cell((p.get("date") or "")[:10]) if p else ""]
            lines.append("| " + " | ".join(cells) + " |")
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
              "dataset_fingerprint", "metrics_version", "rank", "detector", "baseline", "metric",
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
def to_latex(selection: Selection, tables: list[Table]) -> str:
    out = ["% diffzoo leaderboard; needs \\usepackage{booktabs}",
           *(f"% {label}: {latex(value)}" for label, value in header_lines(selection)), ""]
    for t in tables:
        arrows = {True: r"$\uparrow$", False: r"$\downarrow$", None: ""}
        out += [r"\begin{table}[t]", r"\centering", r"\small",
                r"\caption{" + latex(t.key.title) + f" (metrics v{latex(t.key.metrics_version)}; "
                r"\%, $\pm$ half 95\% CI)" + "}",
                r"\label{tab:" + latex(t.key.slug) + "}",
                r"\begin{tabular}{l" + "r" * len(t.columns) + "}", r"\toprule",
                "Detector & " + " & ".join(f"{latex(c.label)} {arrows[c.higher_is_better]}".strip()
                                            for c in t.columns) + r" \\", r"\midrule"]
        for row in t.rows:
            cells = [render_cell(t, row, col, ci=lambda v, h: rf"{v} {{\scriptsize$\pm${h}}}",
                                 best=lambda x: rf"\textbf{{{x}}}") for col in t.columns]
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
            "columns": [{"metric": c.name, "label": c.label, "higher_is_better": c.higher_is_better,
                         "percent": c.percent} for c in t.columns],
            "rows": [{"rank": r.rank, "detector": r.detector, "baseline": r.baseline, "record_id": r.record_id,
                      "values": {m: {"value": c.value, "ci95": list(c.ci) if c.ci else None}
                                 for m, c in r.cells.items()},
                      "provenance": r.provenance} for r in t.rows],
        } for t in tables],
    }
    return json.dumps(doc, indent=2, sort_keys=True, allow_nan=False)


TEXT_FORMATS: dict[str, tuple[str, Callable[[Selection, list[Table]], str]]] = {
    "md": ("leaderboard.md", to_markdown),
    "csv": ("leaderboard.csv", to_csv),
    "latex": ("leaderboard.tex", to_latex),
    "json": ("leaderboard.json", to_json),
}
FORMATS = (*TEXT_FORMATS, "html")


def publish(selection: Selection, fmt: str, out: Path) -> Path:
    """Write ``selection`` in format ``fmt`` under ``out``; return the main file."""
    from ..harness.errors import ConfigError

    if fmt not in FORMATS:
        raise ConfigError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if not selection.records:
        from ..harness.errors import RecordError

        raise RecordError(f"nothing to publish: {selection.label} has no records")
    out = Path(out)
    if fmt == "html":
        from .site import write_site

        return write_site(selection, out)
    name, render = TEXT_FORMATS[fmt]
    return atomic_write_text(out / name, render(selection, build_tables(selection.records)))
