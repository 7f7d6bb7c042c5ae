"""Figures a person would rather look at than read: confusion matrices."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def confusion_png(matrix: np.ndarray, names: list[str], path: Path, title: str = "") -> Path:
    """Row-normalised confusion matrix (rows = ground truth) as a PNG."""
    import matplotlib

    matrix = np.asarray(matrix, dtype=np.float64)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = matrix.sum(axis=1, keepdims=True)
    norm = np.divide(matrix, rows, out=np.zeros_like(matrix), where=rows > 0)
    size = 1.2 + 0.6 * len(names)
    fig, ax = plt.subplots(figsize=(size + 1, size))
    im = ax.imshow(norm, cmap="Blues", vmin=0, vmax=1)
    ax.set_xticks(range(len(names)), names, rotation=45, ha="right")
    ax.set_yticks(range(len(names)), names)
    ax.set_xlabel("predicted")
    ax.set_ylabel("ground truth")
    for i in range(len(names)):
        for j in range(len(names)):
            ax.text(j, i, f"{norm[i, j]:.2f}", ha="center", va="center",
                    color="white" if norm[i, j] > 0.5 else "black", fontsize=8)
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label="fraction of GT pixels")
    ax.set_title(title or "confusion matrix (row-normalised)")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
