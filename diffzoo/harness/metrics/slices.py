"""Slices of the evaluated images by metadata, for per-slice metrics.

Slice keys (METRICS.md "Uncertainty and slices"):

- ``base``: the image's base (``real``, ``ai`` or ``unknown``);
- ``turns``: its number of edit turns, as a string (``"0"``, ``"1"``, ...);
- ``editor``: every editor named in its turns (an image belongs to each of
  them once: multi-membership); images without turns go to ``(none)``;
- ``edit_type``: likewise with the edit types of its turns.

``base`` and ``turns`` partition the images; ``editor`` and ``edit_type``
cover every image at least once.
"""

from __future__ import annotations

import difflib

import numpy as np

from ..errors import ConfigError
from .rows import ImageRows

SLICE_KEYS: tuple[str, ...] = ("base", "turns", "editor", "edit_type")
NO_TURNS = "(none)"


def _groups(rows: ImageRows, key: str) -> list[tuple[str, ...]]:
    if key == "base":
        return [(b,) for b in rows.bases]
    if key == "turns":
        return [(str(t),) for t in rows.array("n_turns").tolist()]
    source = rows.editors if key == "editor" else rows.edit_types
    return [tuple(dict.fromkeys(names)) or (NO_TURNS,) for names in source]


def slice_masks(rows: ImageRows, order: np.ndarray, key: str) -> dict[str, np.ndarray]:
    """Slice value -> boolean membership over rows in ``order``, values sorted."""
    if key not in SLICE_KEYS:
        close = difflib.get_close_matches(key, SLICE_KEYS, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"unknown slice key {key!r}.{hint} Available: {', '.join(SLICE_KEYS)}")
    groups = _groups(rows, key)
    masks: dict[str, np.ndarray] = {}
    for pos, i in enumerate(order.tolist()):
        for value in groups[i]:
            if value not in masks:
                masks[value] = np.zeros(len(order), dtype=bool)
            masks[value][pos] = True
    return {v: masks[v] for v in sorted(masks)}
