"""Plots of dataset statistics (``diffzoo data stats``), drawn from the dict
:func:`diffzoo.harness.data.stats.dataset_stats` returns, so that they can be
redrawn from a saved ``stats.json``."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from diffzoo.leaderboard.render.escape import plot_text as _text
from diffzoo.leaderboard.render.plots import _pyplot, _save, _title

STATS_PLOTS = ("editors.png", "edited-area.png", "turns.png", "base.png")
"""File names :func:`stats_pngs` writes, in this order."""


def _integer_ticks():
    from matplotlib.ticker import MaxNLocator

    return MaxNLocator(integer=True)


def _bars(ax, labels: list[str], series: Mapping[str, Sequence[float]]) -> None:
    """Grouped bars with their counts on top; one group per label, one bar per series."""
    x = np.arange(len(labels))
    width = 0.8 / max(len(series), 1)
    for i, (name, values) in enumerate(series.items()):
        bars = ax.bar(x - 0.4 + width * (i + 0.5), values, width, label=_text(name))
        ax.bar_label(bars, labels=[f"{v:g}" for v in values], fontsize=7)
    tilt = len(labels) > 4
    ax.set_xticks(x, [_text(s) for s in labels], rotation=30 if tilt else 0, ha="right" if tilt else "center")
    ax.yaxis.set_major_locator(_integer_ticks())
    ax.grid(True, axis="y", alpha=0.3)
    if len(series) > 1:
        ax.legend(fontsize=8)


def editors_png(stats: dict[str, Any], path: Path) -> Path:
    """Images per editor: from the masks, and from the turn metadata where there is some."""
    editors = stats["editors"]
    names = list(editors)
    series = {"in the mask": [editors[n]["images"] for n in names]}
    if any(e["images_from_turns"] is not None for e in editors.values()):
        series["named in the turns"] = [editors[n]["images_from_turns"] or 0 for n in names]
    return _bar_chart(stats, names, series, "editor", "images per editor", path, min_width=5.0)


def edited_area_png(stats: dict[str, Any], path: Path) -> Path:
    """Histogram of the edited-area fraction (%), one panel per editor and one overall."""
    plt = _pyplot()
    area = stats["edited_area"]
    panels = {"all editors": area["overall"], **area["editors"]}
    edges = 100 * np.asarray(area["bin_edges"])
    cols = min(4, len(panels))
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(2.8 * cols, 2.3 * rows + 0.6), squeeze=False, sharex=True)
    for ax, (name, dist) in zip(axes.flat, panels.items()):
        ax.stairs(dist["histogram"], edges, fill=True, alpha=0.8)
        median = dist["median"]
        ax.set_title(_text(f"{name} (n={dist['count']}"
                           + (f", median {100 * median:.1f}%)" if median is not None else ")")), fontsize=8)
        ax.set_xlim(0, 100)
        ax.yaxis.set_major_locator(_integer_ticks())
    for ax in axes.flat[len(panels):]:
        ax.axis("off")
    for ax in axes[-1]:
        ax.set_xlabel("edited area (% of image)", fontsize=8)
    for ax in axes[:, 0]:
        ax.set_ylabel("images", fontsize=8)
    fig.suptitle(_text(f"{stats['dataset']['name']}: edited-area fraction per editor"), fontsize=10)
    return _save(fig, path)


def turns_png(stats: dict[str, Any], path: Path) -> Path:
    """Images per number of edit turns (0 = authentic; unknown = no metadata)."""
    counts = stats["turns"]["counts"]
    return _bar_chart(stats, list(counts), {"images": list(counts.values())}, "edit turns",
                      "images per number of turns", path, min_width=4.5)


def _bar_chart(stats: dict[str, Any], names: list[str], series: dict[str, list[int]], xlabel: str, title: str,
               path: Path, min_width: float) -> Path:
    """Image counts per name as grouped bars (one group per series), titled with the dataset's name."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(min_width, 1.0 + 0.8 * len(names)), 4.0))
    _bars(ax, names, series)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("images")
    _title(ax, f"{stats['dataset']['name']}: {title}", fig)
    return _save(fig, path)


def base_png(stats: dict[str, Any], path: Path) -> Path:
    """Images on a real vs an AI-generated base (unknown: no metadata)."""
    plt = _pyplot()
    base = stats["base"]
    fig, ax = plt.subplots(figsize=(4.5, 4.0))
    _bars(ax, list(base), {"images": list(base.values())})
    ax.set_xlabel("base image")
    ax.set_ylabel("images")
    _title(ax, f"{stats['dataset']['name']}: real vs AI base", fig)
    return _save(fig, path)


_DRAW: dict[str, Callable[[dict[str, Any], Path], Path]] = {
    "editors.png": editors_png, "edited-area.png": edited_area_png, "turns.png": turns_png, "base.png": base_png,
}


def stats_pngs(stats: dict[str, Any], target: Callable[[str], Path]) -> dict[str, Path]:
    """Draw every plot of :data:`STATS_PLOTS`; ``target(name)`` gives the path to
    write each at (e.g. an output folder's ``check_writable``)."""
    return {name: _DRAW[name](stats, target(name)) for name in STATS_PLOTS}
