"""The files ``diffzoo leaderboard publish`` and ``diffzoo run`` write: the
leaderboard and the overview as Markdown (:mod:`.markdown`), CSV, LaTeX and
JSON, the run summary (``summary.md`` and its robustness curves), and
:func:`publish`, which writes any format (the site: :mod:`.site`; the paper
report: :mod:`diffzoo.leaderboard.paper.report`).

Every string that comes from a record (detector, dataset, suite and case
names, metric names, git hashes, dates, the version label, notes) is escaped
for its format with :mod:`.escape`; numbers diffzoo formats itself are
written as they are.
"""

from __future__ import annotations

import csv
import io
import json
import logging
from collections.abc import Callable, Sequence
from itertools import groupby
from pathlib import Path

from diffzoo.harness.core.errors import ConfigError, RecordError, name_some
from diffzoo.harness.core.fsutil import atomic_write_text, writing
from diffzoo.leaderboard.formats import FORMATS, MAIN_FILES, MANIFEST, OVERVIEW_FILES, SITE_DIRS, TEXT_FORMAT_FILES
from diffzoo.leaderboard.index import check_mixing, record_conditions
from diffzoo.leaderboard.layouts.cases import build_tables
from diffzoo.leaderboard.layouts.overview import OVERVIEW_NOTE, build_overview
from diffzoo.leaderboard.layouts.paper import CLEAN, Summary, cross_tables
from diffzoo.leaderboard.outdir import PLOTS_DIR, SUMMARY_FILE, Manifest, claim_output_dir
from diffzoo.leaderboard.render import plots
from diffzoo.leaderboard.render.escape import csv_cell, latex, shown_name
from diffzoo.leaderboard.render.markdown import leaderboard_markdown, overview_markdown, summary_markdown
from diffzoo.leaderboard.render.site_figures import plot_file
from diffzoo.leaderboard.robustness import robustness_series
from diffzoo.leaderboard.table import ABSENT, NOT_APPLICABLE, Column, Row, Table, cell_text, conditions_line
from diffzoo.leaderboard.versions import Selection, dataset_order, summarize

log = logging.getLogger(__name__)


def header_lines(selection: Selection) -> list[tuple[str, str]]:
    """(label, value) pairs describing what was published."""
    info = selection.version or summarize(selection.records)
    frozen = [("frozen", selection.version.get("created", ""))] if selection.version else []
    return [
        ("version", selection.label if selection.version else f"not frozen ({selection.label})"), *frozen,
        ("datasets", ", ".join(f"{d['name']} ({d['fingerprint']})"
                               for d in dataset_order(info["datasets"]))),
        ("suites", ", ".join(f"{s['name']} v{s['version']}" for s in info["suites"])),
        ("metric definitions", ", ".join(f"v{v}" for v in info["metrics_versions"])),
        *((f"{name}s", ", ".join(sorted({record_conditions(r)[name] for r in selection.records})))
          for name in ("label map", "split")),
        ("records", str(len(selection.records))),
    ]


def to_markdown(selection: Selection, tables: list[Table]) -> str:
    return leaderboard_markdown(header_lines(selection), tables, cross_tables(selection.records))


# -- CSV (tidy: one line per table, row and column) -----------------------------------------------
CSV_FIELDS = ("version", "suite", "suite_version", "definition_hash", "case", "task", "dataset",
              "dataset_fingerprint", "label_map", "split", "metrics_version", "rank", "detector", "baseline", "metric",
              "value", "ci95_low", "ci95_high", "higher_is_better", "checkpoint_sha256", "git", "date",
              "record_id")
CSV_NUMBERS = frozenset(("rank", "baseline", "value", "ci95_low", "ci95_high", "higher_is_better", "ci_half"))
"""The columns diffzoo writes as numbers it formatted itself (``repr`` of a float, an int, or
empty): written as they are, so a negative value stays a number.  Every other column is text
that came from a record or the version label and goes through :func:`~.escape.csv_cell`."""


def _csv(fields: Sequence[str], lines: list[dict[str, object]]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fields, lineterminator="\n")
    writer.writeheader()
    for line in lines:
        writer.writerow({k: v if k in CSV_NUMBERS else csv_cell(v) for k, v in line.items()})
    return buf.getvalue()


def _number(value: float | None) -> str:
    return "" if value is None else repr(float(value))


def to_csv(selection: Selection, tables: list[Table]) -> str:
    lines: list[dict[str, object]] = []
    for t in tables:
        k = t.key
        assert k is not None
        for row in t.rows:
            p = row.provenance
            for col in t.columns:
                cell = row.cells[col.key]
                if cell.status == ABSENT:
                    continue
                lines.append({
                    "version": selection.label, "suite": k.suite, "suite_version": k.suite_version,
                    "definition_hash": k.definition_hash, "case": k.case, "task": k.task, "dataset": k.dataset,
                    "dataset_fingerprint": k.fingerprint, "label_map": row.conditions.get("label map", ""),
                    "split": row.conditions.get("split", ""), "metrics_version": k.metrics_version,
                    "rank": row.rank or "", "detector": row.label, "baseline": int(row.baseline), "metric": col.key,
                    "value": _number(cell.value), "ci95_low": _number(cell.ci[0] if cell.ci else None),
                    "ci95_high": _number(cell.ci[1] if cell.ci else None),
                    "higher_is_better": {True: 1, False: 0, None: ""}[col.info.higher_is_better],
                    "checkpoint_sha256": p.get("checkpoint_sha256") or "", "git": p.get("git") or "",
                    "date": p.get("date") or "", "record_id": row.record_id or ""})
    return _csv(CSV_FIELDS, lines)


OVERVIEW_CSV_FIELDS = ("version", "overview_version", "group", "benchmark", "column", "label", "rank", "detector",
                       "value", "ci_half", "status", "detail", "note")


def overview_csv(selection: Selection, tables: list[Table]) -> str:
    """One line per (overview table, row, column); ``status``: ``value``, ``missing`` (``note``:
    why, and how to get it) or ``n/a``; ``detail``: e.g. the setting a worst-of value is."""
    lines: list[dict[str, object]] = []
    for t in tables:
        assert t.group is not None
        for row in t.rows:
            for col in t.columns:
                cell = row.cells[col.key]
                lines.append({
                    "version": selection.label, "overview_version": t.version, "group": t.group.name,
                    "benchmark": col.group, "column": col.key, "label": col.label, "rank": row.rank or "",
                    "detector": row.label, "value": _number(cell.value), "ci_half": _number(cell.half_width),
                    "status": NOT_APPLICABLE if not cell.applicable else "missing" if cell.missing else "value",
                    "detail": cell.detail, "note": "; ".join(t.note(n).text for n in cell.notes)})
    return _csv(OVERVIEW_CSV_FIELDS, lines)


# -- LaTeX (booktabs) -----------------------------------------------------------------------------
# Laid out by hand, not by tabulate: its only booktabs format (latex_booktabs) escapes every cell
# itself, which would double-escape the cells escaped here with escape.latex and break the markup
# cells carry on purpose (\textbf, {\scriptsize$\pm$...}); its raw format (latex_raw) writes
# \hline, not booktabs.
ARROWS = {True: r" $\uparrow$", False: r" $\downarrow$", None: ""}


def latex_table(t: Table, caption: str, label: str) -> list[str]:
    """One booktabs ``table``: a rank column, the row labels, the value columns (grouped under
    their group's name where they have one), the differing conditions; then the notes."""
    groups = [(group, list(cols)) for group, cols in groupby(t.columns, key=lambda c: c.group)]  # in order
    head = [r"\begin{table}[t]", r"\centering", r"\small", r"\caption{" + caption + "}",
            r"\label{tab:" + label + "}",  # a slug, safe as it is: an escaped \_ breaks the label's \csname
            r"\begin{tabular}{rl" + "r" * len(t.columns) + "l" * len(t.mixed) + "}", r"\toprule"]
    if any(g for g, _ in groups):
        spans, first = [], 3
        for _, cols in groups:
            spans.append(rf"\cmidrule(lr){{{first}-{first + len(cols) - 1}}}")
            first += len(cols)
        head += [" & & " + " & ".join(rf"\multicolumn{{{len(cols)}}}{{c}}{{{latex(g)}}}" for g, cols in groups)
                 + " & " * len(t.mixed) + r" \\", " ".join(spans)]
    head += [r"\# & Detector & " + " & ".join([*(latex(c.label) + ARROWS[c.info.higher_is_better] for c in t.columns),
                                               *(latex(m) for m in t.mixed)]) + r" \\", r"\midrule"]
    body = []
    for row in t.rows:
        cells = [_latex_cell(t, row, c) for c in t.columns]
        name = latex(shown_name(row.label))
        body.append(" & ".join([str(row.rank or ""), rf"\textit{{{name}}}" if row.baseline else name, *cells,
                                *(latex(row.conditions.get(m, "-")) for m in t.mixed)]) + r" \\")
    said = [*(f"[{n.id}] {n.text}" for n in t.notes), *t.remarks]  # its numbered notes, then its remarks
    notes = [r"\par\smallskip\footnotesize", *(latex(shown_name(text)) + r"\par" for text in said)] * bool(said)
    return [*head, *body, r"\bottomrule", r"\end{tabular}", *notes, r"\end{table}", ""]


def _latex_cell(t: Table, row: Row, col: Column) -> str:
    cell = row.cells[col.key]
    text = cell_text(col, cell, ci=lambda v, h: rf"{v} {{\scriptsize$\pm${h}}}", mark=lambda n: latex(f" [{n}]"),
                     detail=lambda d: " " + latex(f"({d})"))
    text = "---" + text[1:] if cell.status == ABSENT else text
    return rf"\textbf{{{text}}}" if t.is_best(row, col.key) else text


def to_latex(selection: Selection, tables: list[Table]) -> str:
    out = ["% diffzoo leaderboard; needs \\usepackage{booktabs}",
           *(f"% {label}: {latex(shown_name(value))}" for label, value in header_lines(selection)), ""]
    for t in tables:
        assert t.key is not None
        shared = conditions_line(t.shared)
        caption = (latex(shown_name(t.title)) + f" (metrics v{latex(t.key.metrics_version)}; "
                   + (f"{latex(shared)}; " if shared else "") + r"\%, $\pm$ half 95\% CI)")
        out += latex_table(t, caption, t.id)
    return "\n".join(out)


def overview_latex(selection: Selection, tables: list[Table]) -> str:
    out = ["% diffzoo overview; needs \\usepackage{booktabs}",
           *(f"% {label}: {latex(shown_name(value))}" for label, value in header_lines(selection)),
           f"% {latex(OVERVIEW_NOTE)}", ""]
    for t in tables:
        assert t.group is not None
        caption = (r"Overview: " + latex(shown_name(t.group.title)) + " ("
                   + "; ".join(latex(f"{k} {v}") for k, v in t.group.conditions.items())
                   + rf"; overview v{latex(t.version)}; \%, $\pm$ half 95\% CI; --- missing, see the notes)")
        out += latex_table(t, caption, t.id)
    return "\n".join(out)


# -- JSON -----------------------------------------------------------------------------------------
def to_json(selection: Selection, tables: list[Table]) -> str:
    doc = {
        "version": selection.version or {"name": None, "label": selection.label, **summarize(selection.records)},
        "tables": [{
            "key": vars(t.key), "title": t.title, "case": t.case, "conditions": t.shared, "mixed": t.mixed,
            "columns": [{"metric": c.key, "label": c.label, "higher_is_better": c.info.higher_is_better,
                         "percent": c.info.percent} for c in t.columns],
            "rows": [{"rank": r.rank, "detector": r.label, "baseline": r.baseline, "record_id": r.record_id,
                      "values": {k: {"value": c.value, "ci95": list(c.ci) if c.ci else None}
                                 for k, c in r.cells.items()},
                      "provenance": r.provenance, "conditions": r.conditions} for r in t.rows],
        } for t in tables],
    }
    return json.dumps(doc, indent=2, sort_keys=True, allow_nan=False)


RENDERERS: dict[str, Callable[[Selection, list[Table]], str]] = {
    "md": to_markdown, "csv": to_csv, "latex": to_latex, "json": to_json,
}
OVERVIEW_RENDERERS: dict[str, Callable[[Selection, list[Table]], str]] = {
    "md": lambda selection, tables: overview_markdown(header_lines(selection), tables, OVERVIEW_NOTE),
    "csv": overview_csv, "latex": overview_latex,
}


PUBLISHED = Manifest(MANIFEST, "diffzoo_site", {"": (*MAIN_FILES.values(), *OVERVIEW_FILES.values()),
                                                SITE_DIRS[0]: (".html",), SITE_DIRS[1]: (".png",)}, "publish manifest",
                     "it names the files publish wrote there: remove it (they then stay)")
"""The files a publish wrote in its folder, so that the next publish there removes those it does not write again."""


def _write(fmt: str, selection: Selection, tables: list[Table], out: Path) -> set[str]:
    """Write ``selection`` in format ``fmt`` into ``out``; the paths written, relative to ``out``."""
    if fmt == "paper":
        from diffzoo.leaderboard.paper.report import write_report

        return {write_report(selection, out).name}
    if fmt == "html":
        from diffzoo.leaderboard.render.site import write_site

        return write_site(selection, out)
    written = {atomic_write_text(out / TEXT_FORMAT_FILES[fmt], RENDERERS[fmt](selection, tables)).name}
    if fmt in OVERVIEW_RENDERERS:
        overview = OVERVIEW_RENDERERS[fmt](selection, build_overview(selection.records))
        written.add(atomic_write_text(out / OVERVIEW_FILES[fmt], overview).name)
    return written


def format_names(fmt: str) -> tuple[str, ...]:
    """The names format ``fmt`` writes at the top of the output folder (the manifest too)."""
    return (MAIN_FILES[fmt], *((OVERVIEW_FILES[fmt],) if fmt in OVERVIEW_FILES else ()),
            *(SITE_DIRS if fmt == "html" else ()), MANIFEST)


def check_publish(out: Path, formats: Sequence[str], force: bool = False) -> None:
    """Every refusal :func:`publish_formats` of ``formats`` into ``out`` would meet (a folder diffzoo
    did not make, a file there before ``--force``), before any is written: nothing is made or marked,
    so a refused format never leaves the formats before it published and the folder claimed; a format
    diffzoo does not write is refused first, naming every such one."""
    if unknown := [f for f in formats if f not in FORMATS]:
        raise ConfigError(f"unknown format(s) {', '.join(unknown)}; choose from {', '.join(FORMATS)}")
    claim_output_dir(Path(out), force, make=False, writes=[n for fmt in formats for n in format_names(fmt)])


def publish(selection: Selection, fmt: str, out: Path, allow_mixed: bool = False, force: bool = False) -> Path:
    """Write ``selection`` in format ``fmt`` under ``out`` (:func:`publish_formats`); return the main file."""
    return publish_formats(selection, [fmt], out, allow_mixed, force)[fmt]


def publish_formats(selection: Selection, formats: Sequence[str], out: Path, allow_mixed: bool = False,
                    force: bool = False) -> dict[str, Path]:
    """Write ``selection`` in each of ``formats`` under ``out``; return each format's main file.

    Refuses (:class:`ConfigError`) a selection whose per-case tables hold rows made under
    different label maps, splits or recipes unless ``allow_mixed`` (then a column names each),
    whatever the format.  ``md``, ``csv`` and ``latex`` also write the overview beside it.
    ``out`` is claimed as ``diffzoo run --out`` claims its folder
    (:func:`~diffzoo.leaderboard.outdir.claim_output_dir`): a non-empty folder diffzoo did not
    make is refused unless ``force``, and then a file that was there is never overwritten.
    Every file is written whole or not at all; a full disk names it.  The files written are
    listed in :data:`PUBLISHED`; those the publish before wrote there that this one does not
    (another format's, a detector's page no longer shown) are removed, and no other file."""
    check_publish(out, formats, force)  # an unknown format, before the work of its tables
    if not selection.records:
        raise RecordError(f"nothing to publish: {selection.label} has no records")
    out = Path(out)
    tables = build_tables(selection.records)
    check_mixing(tables, allow_mixed)
    # a foreign file (with --force) stops it before the mark, and is never removed, though a manifest names it
    foreign = claim_output_dir(out, force, writes=[n for fmt in formats for n in format_names(fmt)]).foreign
    before = PUBLISHED.files(out)  # one unreadable: before any write
    if (out / MANIFEST).is_file():  # the folder is the publish's: every format's top file is its own, listed or not
        before |= {name for name in PUBLISHED.own[""] if (out / name).is_file()}
    before = {f for f in before if f.split("/")[0] not in foreign}
    with writing(out):  # a disk-full error that names no file names this folder, never "internal error"
        written: set[str] = set().union(*(_write(fmt, selection, tables, out) for fmt in formats))
        if stale := PUBLISHED.replace(out, before, written):
            log.info("removed %d file(s) of the publish before in %s that this one does not write", len(stale), out)
            shown = {name for fmt in formats for name in format_names(fmt)}
            if other := [f for f in stale if f.split("/")[0] not in shown]:  # a format left out: said, never unsaid
                log.warning("removed %d file(s) of a format the publish before wrote in %s and this one does not (%s): "
                            "give every format in one --format to keep them", len(other), out, name_some(other))
    return {fmt: out / MAIN_FILES[fmt] for fmt in formats}


# -- the run summary ------------------------------------------------------------------------------
ROBUSTNESS_CURVES = (("binary", "mIoU", "binary mIoU"), ("semantic", "mIoU", "semantic mIoU"),
                     ("image", "img_Acc", "image-level Acc"))
"""(task, metric, label) of the summary's robustness curves."""


def write_summary(summary: Summary, out_dir: Path, *, title: str, notes: Sequence[str] = ()) -> dict[str, Path]:
    """Write ``out_dir/summary.md`` and ``out_dir/plots/<detector>-robustness-<metric>.png`` (one per
    detector and robustness metric with distorted results); returns relative path -> path of every
    file written."""
    out_dir = Path(out_dir)
    written = {SUMMARY_FILE: atomic_write_text(out_dir / SUMMARY_FILE,
                                               summary_markdown(summary, title=title, notes=notes))}
    used: set[str] = set()
    for section in summary.sections:
        group = section.group
        suffix = f"-{group.key.dataset}-{group.key.fingerprint[:8]}" if len(summary.sections) > 1 else ""
        for row in group.rows("distortions"):
            records = [r for r in group.of("distortions") if r.body.row_name == row]
            for task, metric, label in ROBUSTNESS_CURVES:
                series, clean = robustness_series(records, task, metric, clean=CLEAN)
                if not any(y is not None for points in series.values() for _, y in points):
                    continue
                name = plot_file(used, row, "robustness", task, f"{metric}{suffix}")
                written[f"{PLOTS_DIR}/{name}"] = plots.robustness_png(
                    series, out_dir / PLOTS_DIR / name, ylabel=label, clean=clean,
                    title=f"{row}: {label} under distortions on {group.key.dataset}")
    log.info("wrote the summary and %d plot(s) to %s", len(written) - 1, out_dir)
    return written
