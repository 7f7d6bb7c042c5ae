"""Plots of dataset statistics (``diffzoo data stats``), drawn from the dict
:func:`diffzoo.harness.data.stats.dataset_stats` returns, so that they can be
redrawn from a saved ``stats.json``."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from diffzoo.leaderboard.render.plots import _pyplot, _save, _title, grouped_bars, integer_ticks, short_legend

STATS_PLOTS = ("editors.png", "edited-area.png", "turns.png", "base.png")
"""File names :func:`stats_pngs` writes, in this order."""


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
        _title(ax, f"{name} (n={dist['count']}" + (f", median {100 * median:.1f}%)" if median is not None else ")"),
               fig, fontsize=8)
        ax.set_xlim(0, 100)
        ax.yaxis.set_major_locator(integer_ticks())
    for ax in axes.flat[len(panels):]:
        ax.axis("off")
    for ax in axes[-1]:
        ax.set_xlabel("edited area (% of image)", fontsize=8)
    for ax in axes[:, 0]:
        ax.set_ylabel("images", fontsize=8)
    _title(fig, f"{stats['dataset']['name']}: edited-area fraction per editor", fig)
    return _save(fig, path)


def turns_png(stats: dict[str, Any], path: Path) -> Path:
    """Images per number of edit turns (0 = authentic; unknown = no metadata)."""
    counts = stats["turns"]["counts"]
    return _bar_chart(stats, list(counts), {"images": list(counts.values())}, "edit turns",
                      "images per number of turns", path, min_width=4.5)


def _bar_chart(stats: dict[str, Any], names: list[str], series: dict[str, list[int]], xlabel: str, title: str,
               path: Path, min_width: float, per_name: float = 0.8) -> Path:
    """Image counts per name as grouped bars (one group per series), titled with the dataset's name;
    ``per_name`` inches of width per name beyond ``min_width``."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(min_width, 1.0 + per_name * len(names)), 4.0))
    grouped_bars(ax, names, series, fmt=lambda v: f"{v:g}")  # the counts on top
    ax.yaxis.set_major_locator(integer_ticks())
    if len(series) > 1:
        short_legend(ax, fontsize=8, outside=False)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("images")
    _title(ax, f"{stats['dataset']['name']}: {title}", fig)
    return _save(fig, path)


def base_png(stats: dict[str, Any], path: Path) -> Path:
    """Images on a real vs an AI-generated base (unknown: no metadata)."""
    base = stats["base"]
    return _bar_chart(stats, list(base), {"images": list(base.values())}, "base image", "real vs AI base", path,
                      min_width=4.5, per_name=0.0)


_DRAW: dict[str, Callable[[dict[str, Any], Path], Path]] = {
    "editors.png": editors_png, "edited-area.png": edited_area_png, "turns.png": turns_png, "base.png": base_png,
}


def stats_pngs(stats: dict[str, Any], target: Callable[[str], Path]) -> dict[str, Path]:
    """Draw every plot of :data:`STATS_PLOTS`; ``target(name)`` gives the path to
    write each at (e.g. an output folder's ``check_writable``)."""
    return {name: _DRAW[name](stats, target(name)) for name in STATS_PLOTS}
