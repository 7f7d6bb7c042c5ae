"""Figures a person would rather look at than read: confusion matrices,
robustness curves over distortion strength, per-editor IoU bars."""

from __future__ import annotations

import io
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from diffzoo.harness.core.fsutil import atomic_write_bytes
from diffzoo.leaderboard.render.escape import plot_text as _text
from diffzoo.leaderboard.render.escape import printable


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def integer_ticks():
    """A tick locator that puts ticks on whole numbers only (counts, steps)."""
    from matplotlib.ticker import MaxNLocator

    return MaxNLocator(integer=True)


def shortened(text: str, budget: int) -> str:
    """``text``, or where it is longer than ``budget`` characters its head, ``…`` and its end
    (``budget`` characters in all; names sharing a long prefix differ at the end)."""
    head = budget // 4
    return text if len(text) <= budget else f"{text[:head]}\u2026{text[len(text) - budget + head + 1:]}"


def wrapped(text: str, width: int, lines: int | None = 3) -> str:
    """``text`` for a figure wrapped to lines of ``width`` characters, each line :func:`plot_text`
    (wrapped first: no line ends in the backslash of an escaped ``$``); at most ``lines`` lines
    (None: any number), a longer text :func:`shortened` to fit, so that a name of thousands of
    characters leaves room for the axes."""
    text = printable(text)
    parts, budget = textwrap.wrap(text, width), (lines or 0) * width
    while lines is not None and len(parts) > lines:
        budget -= max(1, width // 4)
        parts = textwrap.wrap(shortened(text, max(budget, 1)), width)
    return "\n".join(_text(line) for line in parts)


def _chars(inches: float) -> int:
    """How many characters of a title or an axis label fit along ``inches``."""
    return max(20, int(inches * 9))


def _fitted(draw: Callable[[str], Any], text: str, room: float, chars: int, lines: int, fig, along: int = 0) -> None:
    """``draw(wrapped text)`` (it returns the text artist) in at most ``lines`` lines wrapped at
    ``chars`` characters, then at fewer until the text as drawn is at most ``room`` pixels
    ``along`` (0: its width, 1: its height, a vertical label's length), since a wide character
    (``W``, ``漢``, an emoji) takes more room than a count of characters allows."""
    renderer = fig.canvas.get_renderer()
    while True:
        box = draw(wrapped(text, chars, lines)).get_window_extent(renderer)
        drawn = box.height if along else box.width
        if drawn <= room or chars == 1:
            return
        chars = max(1, min(chars - 1, int(chars * room / drawn)))


def _title(ax, text: str, fig, fontsize: float = 10) -> None:
    """A title in at most three lines (long names must not be cut off) of ``ax``, an Axes (over its
    width), or of the figure ``fig`` given as ``ax`` (a suptitle, over the figure's) (:func:`_fitted`)."""
    setter, room = (fig.suptitle, 0.95 * fig.bbox.width) if ax is fig else (ax.set_title, ax.bbox.width)
    _fitted(lambda t: setter(t, fontsize=fontsize), text, room, _chars(fig.get_figwidth()), 3, fig)


def grouped_bars(ax, groups: Sequence[str], series: Mapping[str, Sequence[float]],
                 style: Callable[[str], dict] = lambda name: {}, fmt: Callable[[float], str] | None = None) -> None:
    """Grouped bars: one group per entry of ``groups`` on the x axis (labels tilted past four
    groups), one bar per series in each (``style(name)``: its bar options; NaN: no bar, and
    "n/a" written where it would stand, a bar of 0 marked "0": neither is ever read as the other
    nor overlooked), each labelled on top with ``fmt`` of its value where ``fmt`` is given; a light y grid."""
    x = np.arange(len(groups))
    width = 0.8 / max(len(series), 1)
    for i, (name, values) in enumerate(series.items()):
        where = x - 0.4 + width * (i + 0.5)
        bars = ax.bar(where, values, width, label=_text(name), **style(name))
        if fmt is not None:
            ax.bar_label(bars, labels=[fmt(v) for v in values], fontsize=7)
        for at, value in zip(where, values):
            if not np.isfinite(value) or (value == 0 and fmt is None):
                ax.text(at, 0, "n/a" if value != 0 else "0", rotation=90, ha="center", va="bottom", fontsize=8,
                        color="0.3")
    tilt = len(groups) > 4
    shown = short_names(groups)
    ax.set_xticks(x, [shown[g] for g in groups], rotation=30 if tilt else 0, ha="right" if tilt else "center")
    ax.set_xlim(-0.5, len(groups) - 0.5)  # every group's slot, also where no bar has a value
    ax.grid(True, axis="y", alpha=0.3)


def percent_groups(series: Mapping[str, Mapping[str, float | None]]) -> tuple[list[str], dict[str, list[float]]]:
    """For :func:`grouped_bars` of fractions drawn in %: the keys of the series' values in the
    order first seen (the groups), and each series' values per group in % (NaN, no bar, where
    it has none or it is None or not finite)."""
    groups = list(dict.fromkeys(g for values in series.values() for g in values))
    return groups, {name: [100 * y if (y := values.get(g)) is not None and np.isfinite(y) else np.nan
                           for g in groups] for name, values in series.items()}


def short_names(names: Iterable[str], width: int = 56) -> dict[str, str]:
    """Each name as a figure shows it (:func:`wrapped`): one of over ``width``
    characters as its head, ``…`` and its end (names sharing a long prefix differ at the end),
    keeping more of both where two would read alike, so that names stay apart; wrapped to lines
    of half ``width``."""
    names, budget = list(dict.fromkeys(names)), width
    while True:
        shown = [wrapped(shortened(n, budget), width // 2, lines=None) for n in names]
        if len(set(shown)) == len(shown) or budget >= max(map(len, names)):  # past the longest: each whole
            return dict(zip(names, shown))
        budget *= 2


def legend_columns(names: Iterable[str]) -> int:
    """How many columns :func:`short_legend` lays ``names`` out in: 20 lines of text a column,
    each entry as many as its longest shortened name (:func:`short_names`) has."""
    return _columns(list(short_names(names).values()))


def _columns(shown: list[str]) -> int:
    """:func:`legend_columns` of names already shortened."""
    lines = max((text.count("\n") + 1 for text in shown), default=1)
    return max(1, -(-len(shown) // max(1, 20 // lines)))


def short_legend(ax, fontsize: int = 7, outside: bool = True) -> None:
    """The axes' legend, each name shortened (:func:`short_names`): ``outside`` them, on the
    right, in :func:`legend_columns` columns, else where it hides the fewest points; none
    without entries."""
    handles, labels = ax.get_legend_handles_labels()
    names = [label.removeprefix("\u200e").replace(r"\$", "$") for label in labels]  # the names plot_text shows
    if handles:
        shown = short_names(names)
        where = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0), "borderaxespad": 0.0,
                 "ncol": _columns(list(shown.values()))} if outside else {}
        ax.legend(handles, [shown[n] for n in names], fontsize=fontsize, **where)


def _save(fig, path: Path, dpi: int = 120, **savefig) -> Path:
    """The figure as a PNG at ``path``, whole or absent; a full disk names ``path`` and the free
    space of the filesystem that holds it (matplotlib's own error names neither).  A figure
    made without a layout engine is laid out tight first."""
    buf = io.BytesIO()
    try:
        if fig.get_layout_engine() is None:
            fig.tight_layout()
        fig.savefig(buf, format="png", dpi=dpi, **savefig)
    finally:
        _pyplot().close(fig)
    return atomic_write_bytes(Path(path), buf.getvalue())


def _labelled(fig, ax, path: Path, title: str, xlabel: str, ylabel: str) -> Path:
    """``fig`` with its axes' labels (the y axis in %) and its title, each fitted (:func:`_fitted`),
    saved (:func:`_save`)."""
    _fitted(ax.set_xlabel, xlabel, ax.bbox.width, _chars(fig.get_figwidth()), 1, fig)
    _fitted(lambda t: ax.set_ylabel(f"{t} (%)"), ylabel, ax.bbox.height, _chars(fig.get_figheight()), 1, fig, along=1)
    _title(ax, title, fig)
    return _save(fig, path)


def confusion_png(matrix: np.ndarray | list[list[int]], names: list[str], path: Path, title: str = "") -> Path:
    """Row-normalised confusion matrix (rows = ground truth) as a PNG; a row of no pixels is dashes."""
    plt = _pyplot()
    matrix = np.asarray(matrix, dtype=np.float64)
    rows = matrix.sum(axis=1, keepdims=True)
    norm = np.divide(matrix, rows, out=np.zeros_like(matrix), where=rows > 0)
    shown = short_names(names)
    labels = [shown[n] for n in names]
    longest = max((len(line) for label in labels for line in label.split("\n")), default=0)
    room = 0.085 * longest  # inches of the longest label line
    size = 1.2 + 0.6 * len(names)
    fig, ax = plt.subplots(figsize=(size + 1 + room, size + 0.7 * room))  # the matrix keeps its size beside them
    im = ax.imshow(norm, cmap="Blues", vmin=0, vmax=1)
    ax.set_xticks(range(len(names)), labels, rotation=45, ha="right")
    ax.set_yticks(range(len(names)), labels)
    ax.set_xlabel("predicted")
    ax.set_ylabel("ground truth")
    for i in range(len(names)):
        for j in range(len(names)):
            # a class with no ground-truth pixel has no fractions: a dash, never a row of zeros
            ax.text(j, i, f"{norm[i, j]:.2f}" if rows[i, 0] else "\u2014", ha="center", va="center",
                    color="white" if norm[i, j] > 0.5 else "black", fontsize=8)
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label="fraction of GT pixels")
    _title(ax, title or "confusion matrix (row-normalised)", fig)
    return _save(fig, path)


Y_SPAN = 20.0
"""The least a robustness plot's y axis (and the scatter's axes) spans, in % points (docs/leaderboard.md)."""


def y_limits(values: Iterable[float]) -> tuple[float, float]:
    """The range (in %) of an axis (a robustness plot's y, the scatter's) of ``values`` (in %): theirs,
    widened around its middle to span at least :data:`Y_SPAN` points and kept within 0-100, plus a small margin;
    so a change of a few tenths of a point is drawn as small as it is."""
    finite = [v for v in values if np.isfinite(v)] or [50.0]
    low, high = min(finite), max(finite)
    if high - low < Y_SPAN:
        middle = (low + high) / 2
        low, high = middle - Y_SPAN / 2, middle + Y_SPAN / 2
        shift = max(0.0, -low) - max(0.0, high - 100.0)
        low, high = low + shift, high + shift
    margin = 0.05 * (high - low)
    return low - margin, high + margin


def draw_curves(ax, series: dict[str, list[tuple[float, float | None]]], clean: dict[str, float | None],
                ticks: list[str], style: Callable[[str], dict] = lambda label: {"marker": "o"}) -> None:
    """One line per series on a categorical x axis (``ticks``: ``clean``, then the settings), each
    starting at its clean point (x = 0, where ``clean`` has it); a line breaks at an undefined
    point (never drawn straight across it, as if its value lay there); y in %, its range by
    :func:`y_limits`.  The lines stand side by side within a setting (at most 0.15 from it), so
    series of equal values never hide one another."""
    drawn: list[float] = []
    step = 0.3 / max(len(series), 1)
    for i, (label, points) in enumerate(series.items()):
        start = clean.get(label)
        first = [(0.0, start)] if start is not None and np.isfinite(start) else []
        pts = sorted(first + [(x, y if y is not None and np.isfinite(y) else np.nan) for x, y in points])
        ys = [100 * y for _, y in pts]
        if any(np.isfinite(ys)):
            drawn += [y for y in ys if np.isfinite(y)]
            dodge = (i - (len(series) - 1) / 2) * step
            ax.plot([x + dodge for x, _ in pts], ys, label=_text(label), **style(label))
    shown = short_names(ticks)
    ax.set_xticks(range(len(ticks)), [shown[t] for t in ticks])
    ax.set_xlim(-0.3, len(ticks) - 0.7)
    ax.set_ylim(*y_limits(drawn))
    ax.grid(True, alpha=0.3)


def robustness_png(series: dict[str, list[tuple[float, float | None]]], path: Path, *, ylabel: str,
                   title: str = "", clean: float | dict[str, float | None] | None = None,
                   ticks: list[str] | None = None, xlabel: str = "strength (1 = mildest setting)") -> Path:
    """Metric (fraction, drawn in %) over distortion strength, one line per series (legend label ->
    (x, y) points, x = 1, 2, ... from the mildest setting), each from its clean point: ``clean``
    is every line's (a number) or each line's (a dict); ``ticks`` label the x positions (default:
    ``clean``, then the strength ranks)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    width = int(max((x for points in series.values() for x, _ in points), default=0))
    starts = clean if isinstance(clean, dict) else {label: clean for label in series}
    draw_curves(ax, series, starts, ticks or ["clean", *(str(i) for i in range(1, width + 1))])
    short_legend(ax, fontsize=8, outside=False)
    return _labelled(fig, ax, path, title or f"{ylabel} over {xlabel}", xlabel, ylabel)


def editor_iou_png(series: dict[str, dict[str, float | None]], path: Path, title: str = "") -> Path:
    """Grouped bars of per-editor IoU (fractions, drawn in %): one group per
    editor, one bar per series (e.g. per case); undefined IoU is drawn as no bar."""
    plt = _pyplot()
    editors, percents = percent_groups(series)
    n = max(len(series), 1)
    fig, ax = plt.subplots(figsize=(max(5.0, 1.0 + 0.9 * len(editors) * max(1.0, n / 2)), 4.2))
    grouped_bars(ax, editors, percents, fmt=lambda y: f"{y:.1f}" if np.isfinite(y) else "")
    ax.set_ylim(0, 100)
    short_legend(ax, fontsize=8, outside=False)
    return _labelled(fig, ax, path, title or "per-editor IoU", "editor", "IoU")
