"""The static leaderboard site: plain HTML files that work offline.

``write_site(selection, out)`` writes ``out/index.html`` (the version, its
manifest summary, the overview tables, the comparison figures of all detectors
(:mod:`.comparison_plots`), one ranked table per :class:`~.tables.Table`),
``out/detectors/<slug>.html`` per detector (its rows in every table, its
card, confusion matrices, robustness curves, per-editor IoU bars and the
training curves of each trained model) and the figures in ``out/plots/``.
No external resources; the one script is the overview table's constant
sorting and filtering code (:mod:`.site_overview`).
The pages are put together here; their tables are drawn by
:mod:`.site_tables`, their figures by :mod:`.site_figures`.

Every string that comes from a record or a plugin is escaped with
:func:`~.escape.html` (entities for ``& < > " '``, control and bidi
characters shown visibly), in text and in attribute values; file names and
link targets are built from slugs only (:func:`~.tables.slugify`), never
from raw names.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import quote

from diffzoo.harness.core.fsutil import atomic_write_text
from diffzoo.harness.records.document import ResultRecord
from diffzoo.leaderboard.newest import newest_record
from diffzoo.leaderboard.render.comparison_plots import comparison_section
from diffzoo.leaderboard.render.escape import html as e
from diffzoo.leaderboard.overview.build import build_overview
from diffzoo.leaderboard.overview.model import OverviewTable
from diffzoo.leaderboard.render.site_figures import robustness_figures, semantic_figures, training_figures
from diffzoo.leaderboard.render.site_overview import OVERVIEW_CSS, OVERVIEW_JS, overview_section
from diffzoo.leaderboard.render.site_tables import case_info, short, summary_table_html, table_anchors, table_html
from diffzoo.leaderboard.summary.tables import cross_tables
from diffzoo.leaderboard.tables import Table, build_tables, record_conditions, slugify
from diffzoo.leaderboard.versions import Selection, summarize

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


def _page(title: str, body: str, script: bool = False) -> str:
    """A page; ``script``: with the overview's one constant script (site_overview.OVERVIEW_JS)."""
    js = f"<script>{OVERVIEW_JS}</script>\n" if script else ""
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{e(title)}</title>\n<style>{CSS}{OVERVIEW_CSS}</style></head>\n<body>\n{body}\n{js}"
            "</body></html>\n")


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
            items.append(("content hash", short(version["content_hash"], 16)))
    items.append(("records", e(len(version.get("records", [])) if version else len(selection.records))))
    items.append(("datasets", "<br>".join(f'{e(d.get("name"))} (fingerprint {short(d.get("fingerprint"), 16)})'
                                          for d in summary.get("datasets", [])) or "\u2014"))
    items.append(("suites", "<br>".join(f'{e(s.get("name"))} v{e(s.get("version"))} (definition '
                                        f'{short(s.get("definition_hash"))})' for s in summary.get("suites", []))
                  or "\u2014"))
    items.append(("metric definitions", ", ".join(f"v{e(m)}" for m in summary.get("metrics_versions", []))
                  or "\u2014"))
    for name in ("label map", "split"):
        values = sorted({record_conditions(r)[name] for r in selection.records})
        items.append((f"{name}s", "<br>".join(e(v) for v in values) or "\u2014"))
    return f'<section id="version-summary"><h2>Version</h2>{_dl("manifest", items)}</section>'


def render_index(selection: Selection, tables: list[Table], slugs: dict[str, str],
                 overviews: list[OverviewTable] | None = None, plot_dir: Path | None = None,
                 used: set[str] | None = None) -> str:
    """The index page: the version's manifest, the overview tables (sortable), the comparison
    figures (written to ``plot_dir``, names added to ``used``; none without ``plot_dir``), a
    table of contents and every table."""
    overviews = build_overview(selection.records) if overviews is None else overviews
    anchors = table_anchors(tables)
    toc = "".join(f'<li><a href="#{e(a)}">{e(t.key.title)}</a> <span class="case-info">({e(t.key.task)}, '
                  f'{sum(not r.baseline for r in t.rows)} detector row(s))</span></li>'
                  for t, a in zip(tables, anchors))
    dets = ", ".join(f'<a href="detectors/{e(quote(slugs[n]))}.html">{e(n)}</a>' for n in sorted(slugs))
    sections = "".join(overview_section(t, slugs) for t in overviews)
    if plot_dir is not None:
        sections += comparison_section(selection.records, overviews, plot_dir, set() if used is None else used)
    sections += "".join(f'<section class="cross-dataset"><h2>{e(t.title)}</h2>{summary_table_html(t)}</section>'
                        for t in cross_tables(selection.records))
    sections += "".join(f'<section class="case"><h2>{e(t.key.title)}</h2>{case_info(t)}{table_html(t, a, slugs)}'
                        "</section>" for t, a in zip(tables, anchors))
    body = (f'<header><h1>diffzoo leaderboard <span class="version">{e(selection.label)}</span></h1>'
            f'<p class="legend">{e(LEGEND)}</p></header>{_manifest(selection)}'
            f'<nav id="contents"><h2>Tables</h2><ul>{toc or "<li>no records</li>"}</ul>'
            f'<p>Detectors: {dets or "none"}</p></nav>{sections}')
    return _page(f"diffzoo leaderboard \u2014 {selection.label}", body, script=bool(overviews))


def _card(records: list[ResultRecord]) -> str:
    det = newest_record(records).body.detector
    card = det.card
    items = [("variant", e(card.get("name", det.name))), ("plugin", e(det.plugin))]
    for key in ("description", "tasks", "weights", "input_size", "licence", "paper"):
        value = card.get(key)
        if value not in (None, "", [], {}):
            items.append((key, e(", ".join(map(str, value)) if isinstance(value, list) else value)))
    pretrained = (card.get("recipe") or {}).get("pretrained")
    if isinstance(pretrained, dict) and pretrained.get("source"):  # every weight file and where it comes from
        items.append(("weight sources", e(str(pretrained["source"]))))
    return f'<section id="card"><h2>Card</h2>{_dl("card", items)}</section>'


def render_detector(name: str, records: list[ResultRecord], tables: list[Table], anchors: list[str],
                    slugs: dict[str, str], selection: Selection, plot_dir: Path, used: set[str],
                    overviews: list[OverviewTable] | None = None) -> str:
    """``name``'s page: its overview rows and its figures first, then its card and its rows
    in every table, folded (figures written to ``plot_dir``, file names taken from and added
    to ``used``)."""
    overviews = build_overview(records) if overviews is None else overviews
    own = "".join(overview_section(t, slugs, prefix="../", only=name, controls=False) for t in overviews
                  if any(r.detector == name for r in t.rows))
    stem = slugs[name]
    results = "".join(
        f'<section class="case"><h3><a href="../index.html#{e(a)}">{e(t.key.title)}</a></h3>{case_info(t)}'
        f"{table_html(t, a, slugs, prefix='../', only=name)}</section>"
        for t, a in zip(tables, anchors) if any(r.page == name and not r.baseline for r in t.rows))
    confusion, bars = semantic_figures(name, records, stem, plot_dir, used)
    curves = robustness_figures(name, records, stem, plot_dir, used)
    training = training_figures(name, records, stem, plot_dir, used)
    parts = []
    for title, figs, empty in (
            ("Confusion matrices", confusion, "no semantic records with a confusion matrix"),
            ("Robustness", curves, "no distortion evaluated at two or more strengths"),
            ("Per-editor IoU", bars, "no semantic records with per-editor IoU"),
            ("Training", training, "no training curve in these records (a pretrained model, or records made "
                                   "before training curves were kept)")):
        parts.append(f'<h3>{title}</h3>{"".join(figs) or f"<p class=legend>{empty}</p>"}')
    count = results.count('<section class="case">')
    body = (f'<p><a href="../index.html">\u2190 leaderboard {e(selection.label)}</a></p>'
            f'<h1 class="detector-name">{e(name)}</h1><p class="legend">{e(LEGEND)}</p>'
            f'<section id="overview-rows">{own or "<p class=legend>no headline figures yet</p>"}</section>'
            f'<section id="plots"><h2>Plots</h2>{"".join(parts)}</section>{_card(records)}'
            f'<section id="results"><h2>Results</h2><details><summary>{count} per-case table(s)</summary>'
            f'{results}</details></section>')
    return _page(f"{name} \u2014 diffzoo leaderboard {selection.label}", body, script=bool(own))


def write_site(selection: Selection, out: Path) -> Path:
    """Write the static site for ``selection`` into ``out``; returns
    ``out/index.html``.  Existing files of the same names are replaced."""
    out = Path(out)
    tables = build_tables(selection.records)
    by_detector: dict[str, list[ResultRecord]] = {}
    for r in selection.records:
        by_detector.setdefault(r.body.detector.name, []).append(r)
    slugs = detector_slugs(by_detector)
    anchors = table_anchors(tables)
    plot_dir = out / "plots"
    plot_dir.mkdir(parents=True, exist_ok=True)
    used: set[str] = set()
    overviews = build_overview(selection.records)
    for name, records in sorted(by_detector.items()):
        page = render_detector(name, records, tables, anchors, slugs, selection, plot_dir, used, overviews)
        atomic_write_text(out / "detectors" / f"{slugs[name]}.html", page)
    index = atomic_write_text(out / "index.html", render_index(selection, tables, slugs, overviews,
                                                                  plot_dir, used))
    log.info("wrote the leaderboard site for %s (%d tables, %d detectors) to %s",
             selection.label, len(tables), len(by_detector), out)
    return index
