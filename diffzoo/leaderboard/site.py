"""The static leaderboard site: plain HTML files that work offline.

``write_site(selection, out)`` writes ``out/index.html`` (the version, its
manifest summary, one ranked table per :class:`~.tables.Table`),
``out/detectors/<slug>.html`` per detector (its rows in every table, its
card, confusion matrices, robustness curves and per-editor IoU bars) and the
figures in ``out/plots/``.  No JavaScript and no external resources.

Every string that comes from a record or a plugin is escaped with
:func:`~.escape.html` (entities for ``& < > " '``, control and bidi
characters shown visibly), in text and in attribute values; file names and
link targets are built from slugs only (:func:`~.tables.slugify`), never
from raw names.
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..harness.fsutil import atomic_write_text
from ..harness.metrics.catalog import MetricInfo, metric_info
from ..harness.records import ResultRecord
from . import plots
from .escape import html as e
from .tables import (
    PRIMARY,
    Row,
    Table,
    build_tables,
    conditions_line,
    format_ci,
    format_value,
    record_conditions,
    record_date,
    slugify,
)
from .versions import Selection, summarize

log = logging.getLogger(__name__)

CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em auto; max-width: 1400px; padding: 0 1em; color: #222; }
h1 .version { color: #555; font-weight: normal; }
div.scroll { overflow-x: auto; margin: .5em 0 1.5em; }
table { border-collapse: collapse; }
th, td { padding: .25em .6em; border-bottom: 1px solid #ddd; text-align: left; white-space: nowrap; }
th { background: #f3f3f3; }
td.metric, th.metric, td.rank { text-align: right; font-variant-numeric: tabular-nums; }
th.primary { background: #e3ebf7; }
td.best { font-weight: bold; background: #e6f4e6; }
td .ci { color: #777; font-size: 90%; }
tr.baseline td { color: #777; font-style: italic; background: #fafafa; }
td.prov, td.prov code { color: #555; font-size: 90%; }
.arrow { color: #2a6; }
.case-info, .legend, figcaption { color: #555; }
dl.manifest dt, dl.card dt { font-weight: bold; float: left; clear: left; width: 11em; }
dl.manifest dd, dl.card dd { margin-left: 12em; }
figure.plot { display: inline-block; margin: .5em 1em 1em 0; vertical-align: top; }
figure.plot img { max-width: 100%; border: 1px solid #ddd; }
"""
LEGEND = ("Values in %; \u00b1 is half the 95% confidence interval (bootstrap over images) where one was computed. "
          "\u2191 higher is better, \u2193 lower is better; the best detector value per column is bold on green; "
          "baselines (trivial predictors on the same data) are grey italics and not ranked.")


def detector_slugs(names: Iterable[str]) -> dict[str, str]:
    """A distinct file-name slug per detector name; names whose slugs would
    collide (also case-insensitively) get a short hash of the name appended."""
    names = sorted(set(names))
    base = {n: slugify(n) for n in names}
    count: dict[str, int] = {}
    for slug in base.values():
        count[slug.lower()] = count.get(slug.lower(), 0) + 1
    return {n: s if count[s.lower()] == 1 else f"{s[:100]}-{hashlib.sha256(n.encode()).hexdigest()[:8]}"
            for n, s in base.items()}


def _unique(name: str, used: set[str]) -> str:
    """``name``, or ``name-2``, ``name-3``... if taken (compared case-insensitively)."""
    out, i = name, 2
    while out.lower() in used:
        out, i = f"{name}-{i}", i + 1
    used.add(out.lower())
    return out


def _page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{e(title)}</title>\n<style>{CSS}</style></head>\n<body>\n{body}\n</body></html>\n")


def _short(text: str | None, n: int = 12) -> str:
    if not text:
        return '<span class="unknown">\u2014</span>'
    dirty = "-dirty" if str(text).endswith("-dirty") else ""
    return f'<code title="{e(text)}">{e(str(text)[:n])}{dirty}</code>'


def _date(text: str | None) -> str:
    if not text:
        return '<span class="unknown">\u2014</span>'
    return f'<span title="{e(text)}">{e(str(text)[:16].replace("T", " "))}</span>'


def _case_info(table: Table) -> str:
    case, key = table.case, table.key
    params = ", ".join(f"{k}={v}" for k, v in sorted((case.get("distortion_params") or {}).items()))
    train = case.get("train") or {}
    excluded = ", ".join(map(str, train.get("exclude_editors") or []))
    parts = [f"task <b>{e(key.task)}</b>", f"split {e(case.get('split'))}",
             f"distortion {e(case.get('distortion', 'none'))}" + (f" ({e(params)})" if params else ""),
             f"trained on {e(train.get('split', '?'))}" + (f" without {e(excluded)}" if excluded else ""),
             f"dataset fingerprint {_short(key.fingerprint)}", f"suite definition {_short(key.definition_hash)}",
             f"metrics v{e(key.metrics_version)}",
             *([e(conditions_line(table.shared))] if conditions_line(table.shared) else []),
             *([f"<b>mixed: {e(', '.join(table.mixed))}</b> (see the columns)"] if table.mixed else []),
             f"{len(table.records)} record(s)"]
    return '<p class="case-info">' + "; ".join(parts) + "</p>"


def _header(table: Table) -> str:
    cells = ['<th class="rank">#</th>', '<th class="detector">detector</th>']
    for info in table.columns:
        cls = "metric primary" if info.name == table.primary else "metric"
        tip = {True: "higher is better", False: "lower is better", None: "count"}[info.higher_is_better]
        if info.name == table.primary:
            tip += "; rows are ranked by this column"
        arrow = f' <span class="arrow">{info.arrow}</span>' if info.arrow else ""
        cells.append(f'<th class="{cls}" data-metric="{e(info.name)}" title="{e(tip)}">{e(info.label)}{arrow}</th>')
    cells += [f'<th class="condition">{e(name)}</th>' for name in table.mixed]
    cells += ['<th class="prov checkpoint">checkpoint sha256</th>', '<th class="prov git">code (git)</th>',
              '<th class="prov date">date (UTC)</th>', '<th class="prov record">record</th>']
    return "<thead><tr>" + "".join(cells) + "</tr></thead>"


def _metric_cell(table: Table, info: MetricInfo, row: Row) -> str:
    cell = row.cells.get(info.name)
    value = cell.value if cell else None
    text = format_value(info, value)
    ci = format_ci(info, cell) if cell else ""
    attrs = f'class="metric{" best" if table.is_best(row, info.name) else ""}" data-metric="{e(info.name)}"'
    attrs += f' data-value="{e("" if value is None else repr(value))}"'
    if cell and cell.ci is not None:
        lo, hi = cell.ci
        attrs += f' title="{e(f"95% CI [{format_value(info, lo, 2)}, {format_value(info, hi, 2)}]")}"'
    html = f'<span class="value">{e(text)}</span>'
    if ci:
        html += f' <span class="ci">\u00b1 {e(ci)}</span>'
    return f"<td {attrs}>{html}</td>"


def _row(table: Table, row: Row, slugs: dict[str, str], prefix: str, rank_text: str) -> str:
    cells = [f'<td class="rank">{e(rank_text)}</td>']
    if row.baseline:
        cells.append(f'<td class="detector">{e(row.detector)}</td>')
    else:
        href = f"{prefix}detectors/{quote(slugs[row.detector])}.html"
        cells.append(f'<td class="detector"><a href="{e(href)}">{e(row.detector)}</a></td>')
    cells += [_metric_cell(table, info, row) for info in table.columns]
    cells += [f'<td class="condition">{e(row.conditions.get(name, "-"))}</td>' for name in table.mixed]
    p = row.provenance
    if row.baseline:
        cells += ['<td class="prov" colspan="4">trivial predictor on the same images</td>']
    else:
        detail = "; ".join(f"{k}: {p.get(k)}" for k in ("plugin", "pretrained", "seed", "checkpoint_source",
                                                          "diffzoo", "device") if p.get(k) is not None)
        cells += [f'<td class="prov checkpoint">{_short(p.get("checkpoint_sha256"))}</td>',
                  f'<td class="prov git">{_short(p.get("git"), 10)}</td>',
                  f'<td class="prov date">{_date(p.get("date"))}</td>',
                  f'<td class="prov record"><code title="{e(detail)}">{e((row.record_id or "")[:8])}</code></td>']
    cls = "baseline" if row.baseline else "entry"
    attrs = f'class="{cls}" data-detector="{e(row.detector)}"'
    if not row.baseline:
        attrs += f' data-rank="{e(row.rank)}" data-record-id="{e(row.record_id)}"'
    return f"<tr {attrs}>" + "".join(cells) + "</tr>"


def _table(table: Table, anchor: str, slugs: dict[str, str], prefix: str = "", only: str | None = None) -> str:
    """One leaderboard table; ``only`` keeps one detector's rows (its page)."""
    ranked = sum(1 for r in table.rows if not r.baseline)
    rows = []
    for row in table.rows:
        if only is not None and (row.baseline or row.detector != only):
            continue
        rank = "\u2013" if row.baseline else (str(row.rank) if only is None else f"{row.rank} of {ranked}")
        rows.append(_row(table, row, slugs, prefix, rank))
    k = table.key
    attrs = " ".join(f'data-{name}="{e(value)}"' for name, value in (
        ("suite", k.suite), ("suite-version", k.suite_version), ("case", k.case), ("task", k.task),
        ("dataset", k.dataset), ("fingerprint", k.fingerprint), ("metrics-version", k.metrics_version),
        ("primary", table.primary or "")))
    return (f'<div class="scroll"><table class="leaderboard" id="{e(anchor)}" {attrs}>{_header(table)}'
            f'<tbody>{"".join(rows)}</tbody></table></div>')


def _anchors(tables: list[Table]) -> list[str]:
    """Distinct HTML ids: a TableKey's slug leaves out the definition hash
    and the metric version, so two tables may share it."""
    used: set[str] = set()
    return [_unique(f"t-{t.key.slug}", used) for t in tables]


def _dl(cls: str, items: Iterable[tuple[str, str]]) -> str:
    """A definition list; values are already-escaped HTML."""
    return f'<dl class="{cls}">' + "".join(f"<dt>{e(k)}</dt><dd>{v}</dd>" for k, v in items) + "</dl>"


def _manifest(selection: Selection) -> str:
    version = selection.version
    summary = summarize(selection.records) if version is None else version
    items = []
    if version is None:
        items.append(("version", "not frozen: the working copy (freeze it with <code>diffzoo leaderboard "
                                 "freeze NAME</code>)"))
    else:
        items += [("version", e(version.get("name"))), ("created", e(version.get("created")))]
        if version.get("note"):
            items.append(("note", e(version["note"])))
        if version.get("content_hash"):
            items.append(("content hash", _short(version["content_hash"], 16)))
    items.append(("records", e(len(version.get("records", [])) if version else len(selection.records))))
    items.append(("datasets", "<br>".join(f'{e(d.get("name"))} (fingerprint {_short(d.get("fingerprint"), 16)})'
                                          for d in summary.get("datasets", [])) or "\u2014"))
    items.append(("suites", "<br>".join(f'{e(s.get("name"))} v{e(s.get("version"))} (definition '
                                        f'{_short(s.get("definition_hash"))})' for s in summary.get("suites", []))
                  or "\u2014"))
    items.append(("metric definitions", ", ".join(f"v{e(m)}" for m in summary.get("metrics_versions", []))
                  or "\u2014"))
    for name in ("label map", "split"):
        values = sorted({record_conditions(r)[name] for r in selection.records})
        items.append((f"{name}s", "<br>".join(e(v) for v in values) or "\u2014"))
    return f'<section id="version-summary"><h2>Version</h2>{_dl("manifest", items)}</section>'


def render_index(selection: Selection, tables: list[Table], slugs: dict[str, str]) -> str:
    anchors = _anchors(tables)
    toc = "".join(f'<li><a href="#{e(a)}">{e(t.key.title)}</a> <span class="case-info">({e(t.key.task)}, '
                  f'{sum(not r.baseline for r in t.rows)} detector row(s))</span></li>'
                  for t, a in zip(tables, anchors))
    dets = ", ".join(f'<a href="detectors/{e(quote(slugs[n]))}.html">{e(n)}</a>' for n in sorted(slugs))
    sections = "".join(f'<section class="case"><h2>{e(t.key.title)}</h2>{_case_info(t)}{_table(t, a, slugs)}'
                       "</section>" for t, a in zip(tables, anchors))
    body = (f'<header><h1>diffzoo leaderboard <span class="version">{e(selection.label)}</span></h1>'
            f'<p class="legend">{e(LEGEND)}</p></header>{_manifest(selection)}'
            f'<nav id="contents"><h2>Tables</h2><ul>{toc or "<li>no records</li>"}</ul>'
            f'<p>Detectors: {dets or "none"}</p></nav>{sections}')
    return _page(f"diffzoo leaderboard \u2014 {selection.label}", body)


def _card(records: list[ResultRecord]) -> str:
    det = max(records, key=record_date).body.detector
    card = det.card
    items = [("variant", e(card.get("name", det.name))), ("plugin", e(det.plugin))]
    for key in ("description", "tasks", "weights", "input_size", "licence", "paper"):
        value = card.get(key)
        if value not in (None, "", [], {}):
            items.append((key, e(", ".join(map(str, value)) if isinstance(value, list) else value)))
    return f'<section id="card"><h2>Card</h2>{_dl("card", items)}</section>'


def _plot_file(used: set[str], stem: str, *parts: str) -> str:
    """A distinct PNG name from slugs (``used`` is shared by the whole site)."""
    return _unique(slugify("-".join((stem[:60], *parts)))[:110], used) + ".png"


def _figure(kind: str, path: Path, caption: str) -> str:
    src = f"../plots/{quote(path.name)}"
    return (f'<figure class="plot" data-kind="{e(kind)}"><img src="{e(src)}" alt="{e(caption)}">'
            f"<figcaption>{e(caption)}</figcaption></figure>")


def _where(r: ResultRecord) -> str:
    b = r.body
    return f"{b.suite.name} v{b.suite.version} / {b.case_name} on {b.dataset.name}"


def _numeric(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _robustness(name: str, records: list[ResultRecord], stem: str, plot_dir: Path, used: set[str]) -> list[str]:
    """Primary metric over distortion strength, per (task, dataset, distortion)
    with at least two strengths; the undistorted case is the reference."""
    groups: dict[tuple, list[ResultRecord]] = {}
    for r in records:
        b = r.body
        groups.setdefault((b.task, b.dataset.name, b.dataset.fingerprint, b.distortion), []).append(r)
    figures = []
    for (task, dataset, fingerprint, distortion), recs in sorted(groups.items(), key=lambda kv: str(kv[0])):
        metric = PRIMARY.get(task)
        if distortion == "none" or metric is None:
            continue
        params = [r.body.distortion_params for r in recs]
        varying = sorted(k for k in {k for p in params for k in p}
                         if all(_numeric(p.get(k)) for p in params) and len({p.get(k) for p in params}) > 1)
        if not varying:
            continue
        x = varying[0]
        series: dict[str, dict[float, tuple[str, float | None]]] = {}
        for r, p in zip(recs, params):
            rest = ", ".join(f"{k}={v}" for k, v in sorted(p.items()) if k != x)
            label = f"{r.body.suite.name} v{r.body.suite.version}" + (f" ({rest})" if rest else "")
            date = record_date(r)
            points = series.setdefault(label, {})
            if p[x] not in points or date >= points[p[x]][0]:  # the newest record per strength
                points[p[x]] = (date, r.metrics.get(metric))
        refs = list(groups.get((task, dataset, fingerprint, "none"), []))
        suites = {r.body.suite.name for r in recs}
        refs.sort(key=lambda r: (r.body.suite.name in suites, record_date(r)))
        reference = refs[-1].metrics.get(metric) if refs else None
        label = (metric_info(metric) or MetricInfo(metric, metric, True)).label
        file = _plot_file(used, stem, "robustness", task, distortion, dataset)
        title = f"{name}: {label} under {distortion} on {dataset}"
        plots.robustness_png({k: [(xv, y) for xv, (_, y) in v.items()] for k, v in series.items()},
                             plot_dir / file, xlabel=f"{distortion} {x}", ylabel=label, title=title,
                             reference=reference,
                             reference_label=f"no distortion ({refs[-1].body.case_name})" if refs else "")
        figures.append(_figure("robustness", plot_dir / file, f"{title} ({task} task; {x} on the x axis; "
                                                              "dashed line: undistorted case)"))
    return figures


def _semantic_plots(name: str, records: list[ResultRecord], stem: str, plot_dir: Path,
                    used: set[str]) -> tuple[list[str], list[str]]:
    confusion, bars = [], []
    by_dataset: dict[tuple[str, str], dict[str, dict[str, float | None]]] = {}
    for r in records:
        b = r.body
        if b.task != "semantic":
            continue
        labels = list(b.label_space)
        if b.confusion and labels:
            file = _plot_file(used, stem, "confusion", r.id)
            plots.confusion_png(b.confusion, labels, plot_dir / file, title=f"{name}: {_where(r)}")
            confusion.append(_figure("confusion", plot_dir / file,
                                     f"{_where(r)}: rows = ground truth ({', '.join(labels)})"))
        background = labels[0] if labels else "background"
        names = [*labels, *sorted(m[4:] for m in r.metrics if m.startswith("IoU.") and m[4:] not in labels)]
        ious = {n: r.metrics[f"IoU.{n}"] for n in names if f"IoU.{n}" in r.metrics and n != background}
        if ious:
            key = (b.dataset.name, b.dataset.fingerprint)
            label = f"{b.suite.name} v{b.suite.version} / {b.case_name}"
            series = by_dataset.setdefault(key, {})
            series[label if label not in series else f"{label} [{r.id[:8]}]"] = ious
    for (dataset, fingerprint), series in sorted(by_dataset.items()):
        file = _plot_file(used, stem, "editor-iou", dataset, fingerprint[:8])
        title = f"{name}: per-editor IoU on {dataset}"
        plots.editor_iou_png(series, plot_dir / file, title=title)
        bars.append(_figure("editor-iou", plot_dir / file, f"{title} (one bar per semantic case)"))
    return confusion, bars


def render_detector(name: str, records: list[ResultRecord], tables: list[Table], anchors: list[str],
                    slugs: dict[str, str], selection: Selection, plot_dir: Path, used: set[str]) -> str:
    """``name``'s page: its rows in every table, its card and its figures
    (written to ``plot_dir``, file names taken from and added to ``used``)."""
    stem = slugs[name]
    results = "".join(
        f'<section class="case"><h3><a href="../index.html#{e(a)}">{e(t.key.title)}</a></h3>{_case_info(t)}'
        f"{_table(t, a, slugs, prefix='../', only=name)}</section>"
        for t, a in zip(tables, anchors) if any(r.detector == name and not r.baseline for r in t.rows))
    confusion, bars = _semantic_plots(name, records, stem, plot_dir, used)
    curves = _robustness(name, records, stem, plot_dir, used)
    parts = []
    for title, figs, empty in (
            ("Confusion matrices", confusion, "no semantic records with a confusion matrix"),
            ("Robustness", curves, "no distortion evaluated at two or more strengths"),
            ("Per-editor IoU", bars, "no semantic records with per-editor IoU")):
        parts.append(f'<h3>{title}</h3>{"".join(figs) or f"<p class=legend>{empty}</p>"}')
    body = (f'<p><a href="../index.html">\u2190 leaderboard {e(selection.label)}</a></p>'
            f'<h1 class="detector-name">{e(name)}</h1><p class="legend">{e(LEGEND)}</p>{_card(records)}'
            f'<section id="results"><h2>Results</h2>{results}</section>'
            f'<section id="plots"><h2>Plots</h2>{"".join(parts)}</section>')
    return _page(f"{name} \u2014 diffzoo leaderboard {selection.label}", body)


def write_site(selection: Selection, out: Path) -> Path:
    """Write the static site for ``selection`` into ``out``; returns
    ``out/index.html``.  Existing files of the same names are replaced."""
    out = Path(out)
    tables = build_tables(selection.records)
    by_detector: dict[str, list[ResultRecord]] = {}
    for r in selection.records:
        by_detector.setdefault(r.body.detector.name, []).append(r)
    slugs = detector_slugs(by_detector)
    anchors = _anchors(tables)
    plot_dir = out / "plots"
    plot_dir.mkdir(parents=True, exist_ok=True)
    used: set[str] = set()
    for name, records in sorted(by_detector.items()):
        page = render_detector(name, records, tables, anchors, slugs, selection, plot_dir, used)
        atomic_write_text(out / "detectors" / f"{slugs[name]}.html", page)
    index = atomic_write_text(out / "index.html", render_index(selection, tables, slugs))
    log.info("wrote the leaderboard site for %s (%d tables, %d detectors) to %s",
             selection.label, len(tables), len(by_detector), out)
    return index
