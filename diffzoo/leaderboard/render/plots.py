"""Figures a person would rather look at than read: confusion matrices,
robustness curves over distortion strength, per-editor IoU bars."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np

from diffzoo.leaderboard.render.escape import plot_text as _text


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _title(ax, text: str, fig) -> None:
    """A title wrapped to the figure's width (long names must not be cut off)."""
    ax.set_title(textwrap.fill(_text(text), max(20, int(fig.get_figwidth() * 9))), fontsize=10)


def _save(fig, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    _pyplot().close(fig)
    return path


def confusion_png(matrix: np.ndarray, names: list[str], path: Path, title: str = "") -> Path:
    """Row-normalised confusion matrix (rows = ground truth) as a PNG."""
    plt = _pyplot()
    matrix = np.asarray(matrix, dtype=np.float64)
    rows = matrix.sum(axis=1, keepdims=True)
    norm = np.divide(matrix, rows, out=np.zeros_like(matrix), where=rows > 0)
    size = 1.2 + 0.6 * len(names)
    fig, ax = plt.subplots(figsize=(size + 1, size))
    im = ax.imshow(norm, cmap="Blues", vmin=0, vmax=1)
    labels = [_text(n) for n in names]
    ax.set_xticks(range(len(names)), labels, rotation=45, ha="right")
    ax.set_yticks(range(len(names)), labels)
    ax.set_xlabel("predicted")
    ax.set_ylabel("ground truth")
    for i in range(len(names)):
        for j in range(len(names)):
            ax.text(j, i, f"{norm[i, j]:.2f}", ha="center", va="center",
                    color="white" if norm[i, j] > 0.5 else "black", fontsize=8)
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label="fraction of GT pixels")
    _title(ax, title or "confusion matrix (row-normalised)", fig)
    return _save(fig, path)


def robustness_png(series: dict[str, list[tuple[float, float | None]]], path: Path, *, xlabel: str,
                   ylabel: str, title: str = "", reference: float | None = None,
                   reference_label: str = "no distortion", integer_x: bool = False) -> Path:
    """Metric (fraction, drawn in %) over distortion strength, one line per series.

    ``series`` maps a legend label to (x, y) points; undefined y (None/NaN)
    is left out.  ``reference`` (the undistorted value) is drawn as a dashed
    horizontal line, since 'no distortion' has no position on the x axis.
    ``integer_x``: ticks at whole numbers only (an x axis of strength ranks).
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for label, points in series.items():
        pts = sorted((x, y) for x, y in points if y is not None and np.isfinite(y))
        if pts:
            xs, ys = zip(*pts)
            ax.plot(xs, [100 * y for y in ys], marker="o", label=_text(label))
    if reference is not None and np.isfinite(reference):
        ax.axhline(100 * reference, color="grey", linestyle="--",
                   label=f"{_text(reference_label)} ({100 * reference:.1f})")
    ax.set_xlabel(_text(xlabel))
    ax.set_ylabel(f"{_text(ylabel)} (%)")
    if integer_x:
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    _title(ax, title or f"{ylabel} over {xlabel}", fig)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path)


def editor_iou_png(series: dict[str, dict[str, float | None]], path: Path, title: str = "") -> Path:
    """Grouped bars of per-editor IoU (fractions, drawn in %): one group per
    editor, one bar per series (e.g. per case); undefined IoU is drawn as no bar."""
    plt = _pyplot()
    editors = list(dict.fromkeys(e for values in series.values() for e in values))
    n = max(len(series), 1)
    width = 0.8 / n
    fig, ax = plt.subplots(figsize=(max(5.0, 1.0 + 0.9 * len(editors) * max(1.0, n / 2)), 4.2))
    x = np.arange(len(editors))
    for i, (label, values) in enumerate(series.items()):
        ys = [values.get(e) for e in editors]
        ys = [100 * y if y is not None and np.isfinite(y) else np.nan for y in ys]
        bars = ax.bar(x - 0.4 + width * (i + 0.5), ys, width, label=_text(label))
        ax.bar_label(bars, labels=[f"{y:.1f}" if np.isfinite(y) else "" for y in ys], fontsize=7)
    tilt = len(editors) > 4
    ax.set_xticks(x, [_text(e) for e in editors], rotation=30 if tilt else 0, ha="right" if tilt else "center")
    ax.set_xlabel("editor")
    ax.set_ylabel("IoU (%)")
    ax.set_ylim(0, 100)
    _title(ax, title or "per-editor IoU", fig)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path)
