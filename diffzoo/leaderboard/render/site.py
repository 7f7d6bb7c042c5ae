"""The static leaderboard site: plain HTML files that work offline.

``write_site(selection, out)`` writes ``out/index.html``: the title and one
line of context, the overview tables (:mod:`diffzoo.leaderboard.layouts.overview`;
sortable, filterable, the header row and detector column frozen while a table scrolls),
the comparison figures of all detectors (:mod:`.comparison_plots`), then,
folded, the cross-dataset tables and one ranked table per case
(:mod:`diffzoo.leaderboard.layouts.cases`), and the version's manifest last;
``out/detectors/<slug>.html`` per detector (its overview rows, its figures:
confusion matrices, robustness curves, per-editor IoU bars and the training
curves of each trained model; its card; its rows in every per-case table,
folded) and the figures in ``out/plots/``; publish lists them in its manifest
(:data:`~.text.PUBLISHED`).

The pages are jinja2 templates (``templates/``) rendered with autoescape:
every value a template writes goes through :func:`~.escape.html` (entities
for ``& < > " '``, control and bidi characters shown visibly), in text and in
attribute values; file names and link targets are built from slugs only
(:func:`~diffzoo.leaderboard.table.slugify`), never from raw names.  No
external resources; the one script is :data:`OVERVIEW_JS`, a constant: it
sorts and filters the overview by the cells' ``data-value`` numbers and the
rows' ``data-detector`` text, never evaluating them, and unfolds the section
a link points into.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
from markupsafe import Markup

from diffzoo.harness.core.fsutil import atomic_write_text
from diffzoo.harness.core.registry import natural_key
from diffzoo.harness.records.document import ResultRecord
from diffzoo.leaderboard.formats import MAIN_FILES, SITE_DIRS
from diffzoo.leaderboard.index import newest_record, record_conditions
from diffzoo.leaderboard.layouts.cases import build_tables
from diffzoo.leaderboard.layouts.overview import build_overview
from diffzoo.leaderboard.layouts.paper import cross_tables
from diffzoo.leaderboard.render.comparison_plots import comparison_figures
from diffzoo.leaderboard.render.escape import html, shown_name
from diffzoo.leaderboard.render.site_figures import robustness_figures, semantic_figures, training_figures
from diffzoo.leaderboard.table import Column, Table, conditions_line, format_ci, format_value, slugify, value_text
from diffzoo.leaderboard.versions import Selection, summarize

log = logging.getLogger(__name__)

TEMPLATES = Path(__file__).with_name("templates")
OVERVIEW_JS = (TEMPLATES / "overview.js").read_text(encoding="utf-8")
"""The pages' one script (constant; see the module doc)."""
CSS = (TEMPLATES / "site.css").read_text(encoding="utf-8")
CONTEXT = ("Detectors of diffusion-model image edits, ranked per dataset and evaluator version: values in %, "
           "± half the 95% bootstrap CI over images, ↑ higher is better; click a column to sort, a name for its "
           "page.")
LEGEND = ("Values in %; \u00b1 is half the 95% confidence interval (bootstrap over images) where one was computed. "
          "\u2191 higher is better, \u2193 lower is better; the best detector value per column is bold on green; "
          "baselines (trivial predictors on the same data) are grey italics and not ranked; \u2014 = not in the "
          "record, - = undefined on these images.")
TASKS = ("binary", "semantic", "image")
INDEX, (DETECTORS_DIR, PLOTS) = MAIN_FILES["html"], SITE_DIRS


def _escape(value: Any) -> Markup:
    """Every value a template writes: :func:`~.escape.html` (markup made by the templates passes)."""
    return value if isinstance(value, Markup) else Markup(html(value))


def _named(name: Any) -> Markup:
    """A name where a page shows it: quoted if it has outer spaces (:func:`~.escape.shown_name`)
    and isolated (``<bdi>``), so that a right-to-left name never reorders the text around it (the
    names before and after it in a list)."""
    return Markup("<bdi>{}</bdi>").format(_escape(shown_name(name)))


def short(text: str | None, n: int = 12) -> Markup:
    """A hash or id shortened to ``n`` characters, the whole in its tooltip."""
    if not text:
        return Markup('<span class="unknown">\u2014</span>')
    dirty = "-dirty" if str(text).endswith("-dirty") else ""
    return Markup('<code title="{}">{}{}</code>').format(_escape(text), _escape(str(text)[:n]), dirty)


def _date(text: str | None) -> Markup:
    if not text:
        return Markup('<span class="unknown">\u2014</span>')
    return Markup('<span title="{}">{}</span>').format(_escape(text), _escape(str(text)[:16].replace("T", " ")))


def _tip(table: Table, col: Column) -> str:
    tip = {True: "higher is better", False: "lower is better", None: "count"}[col.info.higher_is_better]
    return tip + ("; rows are ranked by this column" if col.key == table.primary else "")


def _used_notes(table: Table, only: str | None) -> list:
    rows = [r for r in table.rows if only is None or r.detector == only]
    used = {n for r in rows for c in r.cells.values() for n in c.notes}
    return [n for n in table.notes if n.id in used]


ENV = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True, finalize=_escape,
                         undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
ENV.filters.update(urlquote=quote, repr=repr, named=_named, shown=shown_name)
ENV.globals.update(
    value_text=value_text, format_ci=format_ci, format_value=format_value, short=short, date=_date, tip=_tip,
    conditions_line=conditions_line, used_notes=_used_notes, zip=zip,
    tasks=lambda t: [task for task in TASKS if any(c.task == task for c in t.columns)],
    params=lambda case: ", ".join(f"{k}={v}" for k, v in sorted((case.get("distortion_params") or {}).items())),
    detail=lambda p: "; ".join(f"{k}: {p.get(k)}" for k in ("plugin", "pretrained", "seed", "checkpoint_source",
                                                             "diffzoo", "device") if p.get(k) is not None))


def _page(template: str, title: str, script: bool, **values: Any) -> str:
    return ENV.get_template(template).render(title=title, css=Markup(CSS), script=Markup(OVERVIEW_JS) if script
                                             else "", **values)


def detector_slugs(names: Iterable[str]) -> dict[str, str]:
    """A distinct file-name slug per detector name (:func:`~diffzoo.leaderboard.table.slugify`);
    names whose slugs would collide (also case-insensitively) get a short hash of the name
    appended, and those that still collide (a name made to read as another's hashed slug,
    ``x-cdb4ee2a`` beside ``.``, or to share its 8 hex digits) the whole hash: no name is ever
    given another's page."""
    slugs, digits = {n: slugify(n) for n in sorted(set(names))}, 8
    while True:
        count = Counter(slug.lower() for slug in slugs.values())
        clash = [n for n, s in slugs.items() if count[s.lower()] > 1]
        if not clash:
            return slugs
        for n in clash:
            slugs[n] = slugify(n, digits)
        digits = 64


def _manifest(selection: Selection) -> list[tuple[str, list[Any]]]:
    version = selection.version
    summary = summarize(selection.records) if version is None else version
    items: list[tuple[str, list[Any]]] = []
    if version is None:
        items.append(("version", [Markup("not frozen: the working copy (freeze it with <code>diffzoo leaderboard "
                                         "freeze NAME</code>)")]))
    else:
        items += [("version", [version.get("name")]), ("created", [version.get("created")])]
        if version.get("note"):
            items.append(("note", [version["note"]]))
        if version.get("content_hash"):
            items.append(("content hash", [short(version["content_hash"], 16)]))
    return items + [
        ("records", [len(version.get("records", [])) if version else len(selection.records)]),
        ("datasets", [Markup("{} (fingerprint {})").format(_escape(d.get("name")), short(d.get("fingerprint"), 16))
                      for d in sorted(summary.get("datasets", []), key=lambda d: natural_key(str(d.get("name"))))]),
        ("suites", [Markup("{} v{} (definition {})").format(_escape(s.get("name")), _escape(s.get("version")),
                                                            short(s.get("definition_hash")))
                    for s in summary.get("suites", [])]),
        ("metric definitions", [", ".join(f"v{m}" for m in summary.get("metrics_versions", []))]),
        *((f"{name}s", sorted({record_conditions(r)[name] for r in selection.records}))
          for name in ("label map", "split"))]


def _card(records: list[ResultRecord]) -> list[tuple[str, Any]]:
    det = newest_record(records).body.detector
    card = det.card
    items: list[tuple[str, Any]] = [("variant", card.get("name", det.name)), ("plugin", det.plugin)]
    items += [(key, ", ".join(map(str, value)) if isinstance(value, list) else value)
              for key in ("description", "tasks", "weights", "input_size", "licence", "paper")
              if (value := card.get(key)) not in (None, "", [], {})]
    pretrained = (card.get("recipe") or {}).get("pretrained")
    if isinstance(pretrained, dict) and pretrained.get("source"):  # every weight file and where it comes from
        items.append(("weight sources", str(pretrained["source"])))
    items.append(("weights of each row", sorted({_trained_on(r) for r in records})))
    return items


def _trained_on(record: ResultRecord) -> str:
    """What a row's weights were trained on: a release's training data (zero-shot), or the
    data the run trained it on (its dataset, split and held-out editors), or that the record
    does not say."""
    b = record.body
    release = b.detector.release
    if release is not None:
        return (f"{b.row_name}: released weights {release.get('name')} ({release.get('source')}), trained on "
                f"{release.get('trained_on')}; scored zero-shot")
    subset = b.config.get("train_subset")
    if not isinstance(subset, dict):  # a run records it for every model: a record without it does not say
        return f"{b.row_name}: training data not recorded"
    # a run names the training data only when it is not the record's dataset (an --eval-dataset case)
    data = b.config.get("train_dataset") or {"name": b.dataset.name}
    held = subset.get("exclude_editors") or []
    without = f" without {', '.join(map(str, held))}" if held else ""
    how = "given checkpoint" if b.detector.checkpoint_source == "given" else "trained"
    return f"{b.row_name}: {how} on {data.get('name')}/{subset.get('split', 'train')}{without}"


def write_site(selection: Selection, out: Path) -> set[str]:
    """Write the static site for ``selection`` into ``out``; returns the paths it wrote, relative
    to ``out`` (``index.html``, the pages, the figures).  Existing files of the same names are
    replaced, each whole or not at all (the pages last: an index never links to a figure not yet
    written)."""
    out = Path(out)
    tables = build_tables(selection.records)
    anchors = [f"t-{t.id}" for t in tables]
    overviews = [t for t in build_overview(selection.records) if t.rows]
    by_detector: dict[str, list[ResultRecord]] = {}
    for r in selection.records:
        by_detector.setdefault(r.body.detector.name, []).append(r)
    slugs = detector_slugs(by_detector)
    plot_dir = out / PLOTS  # made by the first figure's write, which names a file standing there
    used: set[str] = set()
    written: set[str] = set()
    for name, records in sorted(by_detector.items()):
        stem = slugs[name]
        confusion, bars = semantic_figures(name, records, stem, plot_dir, used)
        plots = [("Confusion matrices", confusion, "no semantic records with a confusion matrix"),
                 ("Robustness", robustness_figures(name, records, stem, plot_dir, used),
                  "no distortion evaluated at two or more strengths"),
                 ("Per-editor IoU", bars, "no semantic records with per-editor IoU"),
                 ("Training", training_figures(name, records, stem, plot_dir, used),
                  "no training curve in these records (a pretrained model, or records made before training "
                  "curves were kept)")]
        own = [t for t in overviews if any(r.detector == name for r in t.rows)]
        results = [(t, a) for t, a in zip(tables, anchors) if any(r.detector == name and not r.baseline
                                                                    for r in t.rows)]
        page = _page("detector.html", f"{shown_name(name)} \u2014 diffzoo leaderboard {selection.label}", bool(own),
                     selection=selection, name=name, legend=LEGEND, overviews=own, plots=plots, card=_card(records),
                     results=results, slugs=slugs)
        atomic_write_text(out / DETECTORS_DIR / f"{stem}.html", page)
        written |= {f"{DETECTORS_DIR}/{stem}.html", *(f"{PLOTS}/{f.file}" for _, figures, _ in plots for f in figures)}
    comparisons = comparison_figures(selection.records, overviews, plot_dir, used)
    written |= {f"{PLOTS}/{f.file}" for _, figures, _ in comparisons for f in figures}
    index = _page("index.html", f"diffzoo leaderboard \u2014 {selection.label}", True, selection=selection,
                  context=CONTEXT, legend=LEGEND, overviews=overviews, tables=tables, anchors=anchors, slugs=slugs,
                  cross=cross_tables(selection.records), manifest=_manifest(selection), comparisons=comparisons)
    atomic_write_text(out / INDEX, index)
    log.info("wrote the leaderboard site for %s (%d tables, %d detectors) to %s",
             selection.label, len(tables), len(by_detector), out)
    return written | {INDEX}
