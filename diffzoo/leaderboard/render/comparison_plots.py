"""The front page's comparison figures (:mod:`.site`): every detector on one chart.

- ``benchmarks``: each detector's binary mIoU per benchmark (its own data's test split, then
  every ``--eval-dataset`` place), grouped bars, one chart per overview table with a
  benchmark column;
- ``robustness-all``: the primary metric over distortion strength, one chart per
  (task, dataset, distortion) whose records, over all detectors, hold two or more
  strengths and two or more lines (:func:`diffzoo.leaderboard.robustness.distortion_curves`, one line per
  detector row, its legend in natural name order; a detector evaluated at one strength
  is a lone marker);
- ``editor-iou-all``: per-editor IoU of the standard suite's semantic case, grouped bars
  (editors on the x axis, one bar per detector), one chart per dataset group and suite
  version with two or more detectors;
- ``binary-vs-semantic``: binary vs semantic mIoU of the standard suite, one point per
  detector, one chart per overview table (:mod:`diffzoo.leaderboard.layouts.overview`) with
  two or more detectors that have both.

A detector row (``det``, ``det (calibrated)``: named as the tables name it) has one style
(:func:`detector_styles`: colour, marker, line style, hatch) on every chart of the site, so
that 16+ detectors stay apart; legends sit outside the axes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from diffzoo.harness.core.registry import natural_key
from diffzoo.harness.records.document import ResultRecord
from diffzoo.leaderboard.index import RecordIndex
from diffzoo.leaderboard.layouts.overview import benchmark_columns
from diffzoo.leaderboard.render.escape import plot_text as _text
from diffzoo.leaderboard.render.plots import (
    _labelled,
    _pyplot,
    draw_curves,
    grouped_bars,
    legend_columns,
    percent_groups,
    short_legend,
    short_names,
    y_limits,
)
from diffzoo.leaderboard.render.site_figures import Figure, figure, plot_file
from diffzoo.leaderboard.robustness import distortion_curves
from diffzoo.leaderboard.table import Table, info_of

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7",
           "#dbdb8d", "#9edae5")
"""matplotlib's tab10, then tab20's light shades: 20 distinct colours."""
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINESTYLES = ("-", "--", "-.", ":")
HATCHES = ("", "//", "..", "xx", "\\\\", "++", "oo", "--")
BINARY_COLUMN, SEMANTIC_COLUMN = "standard.binary.mIoU", "standard.semantic.mIoU"


@dataclass(frozen=True)
class Style:
    """How one detector is drawn: ``color`` everywhere, ``marker`` and ``linestyle`` on
    curves and points, ``hatch`` on bars (the last three tell apart detectors past the
    palette's 20 colours)."""

    color: str
    marker: str
    linestyle: str
    hatch: str


def detector_styles(names: Iterable[str]) -> dict[str, Style]:
    """A style per detector name, dealt in the legends' natural order (``det2`` before ``det10``:
    :func:`natural_key`): the same set of names gives the same styles on every call; the first
    20 differ in colour, each further round of 20 in marker, line style and hatch too (160
    distinct (colour, marker) pairs)."""
    out = {}
    for i, name in enumerate(sorted(set(names), key=natural_key)):
        cycle = i // len(PALETTE)
        out[name] = Style(PALETTE[i % len(PALETTE)], MARKERS[cycle % len(MARKERS)],
                          LINESTYLES[cycle % len(LINESTYLES)], HATCHES[cycle % len(HATCHES)])
    return out


def _width(names: Iterable[str], base: float) -> float:
    """A figure wide enough for ``base`` inches of axes and a legend of ``names``."""
    return base + 2.2 * legend_columns(names)


def comparison_curves_png(series: dict[str, list[tuple[float, float | None]]], styles: dict[str, Style],
                          path: Path, *, xlabel: str, ylabel: str, title: str, ticks: list[str],
                          clean: dict[str, float | None]) -> Path:
    """Curves (fractions, drawn in %) over the settings (``ticks``), one per detector in ``series``
    (drawn in its style), each from its clean point (:func:`~.plots.draw_curves`)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(_width(series, 6.4), 4.4))
    draw_curves(ax, series, clean, ticks, style=lambda name: {
        "color": styles[name].color, "marker": styles[name].marker, "linestyle": styles[name].linestyle})
    short_legend(ax)
    return _labelled(fig, ax, path, title, xlabel, ylabel)


def grouped_bars_png(series: dict[str, dict[str, float | None]], styles: dict[str, Style], path: Path,
                     title: str, xlabel: str = "editor", ylabel: str = "IoU") -> Path:
    """Grouped bars of fractions (drawn in %): the keys of each series' values (editors,
    benchmarks) on the x axis, one bar per entry of ``series`` (its style); None is no bar."""
    plt = _pyplot()
    editors, percents = percent_groups(series)
    fig, ax = plt.subplots(figsize=(_width(series, max(6.0, 0.9 + 0.15 * len(editors) * len(series))), 4.4))
    grouped_bars(ax, editors, percents,
                 style=lambda name: {"color": styles[name].color, "hatch": styles[name].hatch, "linewidth": 0.3,
                                     "edgecolor": "white" if not styles[name].hatch else "black"})
    ax.set_ylim(0, 100)
    short_legend(ax)
    return _labelled(fig, ax, path, title, xlabel, ylabel)


def scatter_png(points: dict[str, tuple[float, float]], styles: dict[str, Style], path: Path, *, xlabel: str,
                ylabel: str, title: str) -> Path:
    """One point per detector (fractions, drawn in %), labelled with its name (one label naming
    all the detectors at one point), in its style."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(_width(points, 5.6), 5.0))
    ax.set_xlim(*y_limits(100 * x for x, _ in points.values()))
    ax.set_ylim(*y_limits(100 * y for _, y in points.values()))
    at: dict[tuple[float, float], list[str]] = {}  # detectors at one point share one label, never overprinted
    for name, (x, y) in points.items():
        s = styles[name]
        ax.scatter([100 * x], [100 * y], color=s.color, marker=s.marker, s=45, edgecolors="black",
                   linewidths=0.4, label=_text(name), zorder=3)
        at.setdefault((x, y), []).append(name)
    shown = short_names(points)
    for (x, y), names in at.items():
        right = 100 * x > sum(ax.get_xlim()) / 2  # label towards the middle, so that it stays inside the axes
        ax.annotate(", ".join(shown[n] for n in sorted(names, key=natural_key)), (100 * x, 100 * y),
                    xytext=(-4 if right else 4, 4), textcoords="offset points", ha="right" if right else "left",
                    fontsize=7)
    ax.grid(True, alpha=0.3)
    short_legend(ax)
    return _labelled(fig, ax, path, title, f"{xlabel} (%)", ylabel)


def robustness_all(records: list[ResultRecord], styles: dict[str, Style], plot_dir: Path,
                   used: set[str]) -> list[Figure]:
    """One chart per (task, dataset, distortion) with two or more strengths over all detectors and
    two or more lines (detector rows), each detector's line from its clean point."""
    owner: dict[str, tuple[str, str]] = {}
    made_by: dict[str, str] = {}  # line -> its detector: a detector's rows (calibrated, ...) are one detector

    def line_of(r: ResultRecord, line: str) -> str:  # a row (calibrated, released) is named as the tables name it
        label = f"{r.body.row_name}\x00{line}"
        owner[label] = (r.body.row_name, line.removeprefix(f"{r.body.row_name}: "))
        made_by[label] = r.body.detector.name
        return label

    figures = []
    for curve in distortion_curves(records, line_of):
        label = info_of(curve.metric).label
        lines = {owner[k] for k in curve.series}
        detectors = {d for d, _ in lines}
        one_each = len(lines) == len(detectors)  # else: name the suite version (and parameters) too
        series, styled, clean = {}, {}, {}
        for raw, points in curve.series.items():
            detector, line = owner[raw]
            key = detector if one_each else f"{detector} \u2014 {line}"
            series[key], styled[key], clean[key] = points, styles[detector], curve.clean.get(raw)
        if len(series) < 2:  # a comparison of one line is the detector page's own curve
            continue
        series = {key: series[key] for key in sorted(series, key=natural_key)}  # the legend in name order
        file = plot_file(used, "comparison", "robustness", curve.task, curve.distortion, curve.dataset)
        title = f"{label} under {curve.distortion} on {curve.dataset} ({curve.task}), all detectors"
        comparison_curves_png(series, styled, plot_dir / file, xlabel=f"{curve.distortion} {curve.parameter}",
                              ylabel=label, title=title, ticks=curve.ticks, clean=clean)
        made = len({made_by[k] for k in curve.series})
        figures.append(figure("robustness-all", plot_dir / file,
                               f"{title}: {made} detector(s){f', {len(series)} lines' if len(series) > made else ''}; "
                               f"{curve.parameter} on the x axis from the clean point, mildest first", prefix=""))
    return figures


def editor_iou_all(records: list[ResultRecord], styles: dict[str, Style], plot_dir: Path,
                   used: set[str]) -> list[Figure]:
    """Per-editor IoU bars of the standard suite's semantic case, one chart per group
    (:class:`~diffzoo.leaderboard.index.Group`: dataset and evaluator version) with two or more
    detectors (their records the group's, the newest)."""
    figures = []
    for group in RecordIndex(records).groups():
        series = {}
        for r in sorted(group.of("standard", ["semantic"]), key=lambda r: natural_key(r.body.detector.name)):
            ious = {n: r.metrics[f"IoU.{n}"] for n in list(r.body.label_space)[1:] if f"IoU.{n}" in r.metrics}
            if ious:
                series[r.body.detector.name] = ious
        if len(series) < 2:
            continue
        key, version = group.key, group.suites["standard"].version
        file = plot_file(used, "comparison", "editor-iou", key.dataset, key.fingerprint[:8], f"v{version}")
        title = f"per-editor IoU on {key.dataset} (standard v{version}, semantic case), all detectors"
        grouped_bars_png(series, {n: styles[n] for n in series}, plot_dir / file, title)
        figures.append(figure("editor-iou-all", plot_dir / file, f"{title}: {len(series)} detectors, one bar each",
                              prefix=""))
    return figures


def binary_vs_semantic(overviews: list[Table], styles: dict[str, Style], plot_dir: Path,
                       used: set[str]) -> list[Figure]:
    """Binary vs semantic mIoU (standard suite), one chart per overview table with two or more
    detectors that have both."""
    figures = []
    for table in overviews:
        points = {}
        for row in sorted(table.rows, key=lambda row: natural_key(row.detector)):  # the legend in name order
            binary, sem = row.cells.get(BINARY_COLUMN), row.cells.get(SEMANTIC_COLUMN)
            if not row.own_score and binary and sem and binary.value is not None and sem.value is not None:
                points[row.detector] = (binary.value, sem.value)
        if len(points) < 2 or table.group is None:
            continue
        file = plot_file(used, "comparison", "binary-vs-semantic", table.id)
        title = f"binary vs semantic mIoU on {table.group.title}"
        scatter_png(points, {n: styles[n] for n in points}, plot_dir / file, xlabel="binary mIoU",
                    ylabel="semantic mIoU", title=title)
        figures.append(figure("binary-vs-semantic", plot_dir / file,
                               f"{title}: one point per detector (standard suite; {table.group.name})", prefix=""))
    return figures


def benchmark_bars(overviews: list[Table], styles: dict[str, Style], plot_dir: Path,
                   used: set[str]) -> list[Figure]:
    """Each detector's binary mIoU per benchmark, one chart per overview table with a benchmark
    column (``--eval-dataset``): its own data's (the standard suite's binary case), then every
    evaluation place's; a bar per row (never an own-score row, which has no pixel values)."""
    figures = []
    for table in overviews:
        places = benchmark_columns(table)
        if not places or table.group is None:
            continue
        columns = [c for c in table.columns if c.key == BINARY_COLUMN] + places
        own = f"{table.group.key.dataset} (own)"
        series: dict[str, dict[str, float | None]] = {}
        for row in sorted(table.rows, key=lambda row: natural_key(row.label)):  # the legend in name order
            values = {own if c.key == BINARY_COLUMN else c.group: row.cells[c.key].value for c in columns}
            if not row.own_score and any(v is not None for v in values.values()):
                series[row.label] = values
        if not series:
            continue
        file = plot_file(used, "comparison", "benchmarks", table.id)
        title = f"binary mIoU per benchmark, {table.group.title}"
        grouped_bars_png(series, {label: styles[label] for label in series},  # a row's own: det (calibrated) apart
                         plot_dir / file, title, xlabel="benchmark (dataset/split)", ylabel="binary mIoU")
        figures.append(figure("benchmarks", plot_dir / file,
                               f"{title}: one bar per detector row; '{own}' is the standard suite's evaluation "
                               f"split of the run's own data ({table.group.name}); n/a: no record of that row "
                               "there", prefix=""))
    return figures


def comparison_figures(records: list[ResultRecord], overviews: list[Table], plot_dir: Path,
                       used: set[str]) -> list[tuple[str, list[Figure], str]]:
    """The front page's comparison figures (written to ``plot_dir``): (heading, figures, what is
    said when there are none) per kind."""
    styles = detector_styles(name for r in records for name in (r.body.detector.name, r.body.row_name))
    return [("Benchmarks", benchmark_bars(overviews, styles, plot_dir, used),
             "no benchmark columns: no record of a model evaluated with --eval-dataset"),
            ("Robustness", robustness_all(records, styles, plot_dir, used),
             "no distortion evaluated at two or more strengths with two or more detector rows"),
            ("Per-editor IoU", editor_iou_all(records, styles, plot_dir, used),
             "fewer than two detectors with per-editor IoU (standard semantic case)"),
            ("Binary vs semantic mIoU", binary_vs_semantic(overviews, styles, plot_dir, used),
             "fewer than two detectors with both binary and semantic mIoU (standard suite)")]
