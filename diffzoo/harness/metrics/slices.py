"""Slices of the evaluated images by metadata, for per-slice metrics.

Slice keys (docs/metrics.md, "Slices and bootstrap"):

- ``base``: the image's base (``real``, ``ai`` or ``unknown``);
- ``turns``: its number of edit turns, as a string (``"0"``, ``"1"``, ...);
- ``multiturn``: ``single`` (1 turn) or ``multi`` (2 or more); an image
  without turns is ``none`` when it is authentic and ``unknown`` otherwise
  (edited pixels but no turn in its metadata);
- ``editor``: every editor named in its turns (an image belongs to each of
  them once: multi-membership); images without turns go to ``(none)``;
- ``edit_type``: likewise with the edit types of its turns.

``base``, ``turns`` and ``multiturn`` partition the images; ``editor`` and
``edit_type`` cover every image at least once.

A slice that no image carries metadata for (every base ``unknown``; no turn
on any image while some are edited; no editor or edit type other than
``unknown``) would put every image in one meaningless group: asking for it
raises :class:`SliceMetadataMissing`, whose message names the fix, instead.
"""

from __future__ import annotations

import numpy as np

from diffzoo.harness.core.errors import ConfigError, DataError, did_you_mean
from diffzoo.harness.metrics.catalog import SLICE_KEYS
from diffzoo.harness.metrics.rows import ImageRows

NO_TURNS = "(none)"
UNKNOWN = "unknown"
METADATA_FIX = "pass --dataset-option metadata=FILE (id -> base, editors per turn)"
_WHAT = {"base": "base", "turns": "turn", "multiturn": "turn", "editor": "editor", "edit_type": "edit-type"}


def missing_metadata_message(key: str) -> str:
    """What a run says when no image carries ``key``'s metadata, and the fix."""
    return f"dataset carries no {_WHAT.get(key, key)} metadata; {METADATA_FIX}"


class SliceMetadataMissing(DataError):
    """No evaluated image carries the metadata a slice key needs."""

    def __init__(self, key: str):
        self.key = key
        super().__init__(missing_metadata_message(key))


def _multiturn(n_turns: int, label: int) -> str:
    if n_turns >= 2:
        return "multi"
    if n_turns == 1:
        return "single"
    return "none" if label == 0 else UNKNOWN


def _groups(rows: ImageRows, key: str) -> list[tuple[str, ...]]:
    if key == "base":
        return [(b,) for b in rows.bases]
    if key == "turns":
        return [(str(t),) for t in rows.array("n_turns").tolist()]
    if key == "multiturn":
        return [(_multiturn(t, lab),) for t, lab in zip(rows.array("n_turns").tolist(),
                                                        rows.array("label").tolist())]
    source = rows.editors if key == "editor" else rows.edit_types
    return [tuple(dict.fromkeys(names)) or (NO_TURNS,) for names in source]


def metadata_missing(rows: ImageRows, key: str) -> bool:
    """True when no image of ``rows`` carries metadata for ``key`` (see the
    module docstring); a split without edited images, and without turns, is
    described truthfully by its turns and is not missing them."""
    if len(rows) == 0:
        return False
    if key == "base":
        return all(b == UNKNOWN for b in rows.bases)
    if not (rows.array("label") == 1).any():  # no edited image (authentic or unknown): "no turns" is the truth
        return False
    if key in ("turns", "multiturn"):
        return not (rows.array("n_turns") > 0).any()
    source = rows.editors if key == "editor" else rows.edit_types
    return all(name in (UNKNOWN, "") for names in source for name in names)


def slice_masks(rows: ImageRows, order: np.ndarray, key: str) -> dict[str, np.ndarray]:
    """Slice value -> boolean membership over rows in ``order``, values sorted.

    Raises :class:`SliceMetadataMissing` when no image carries ``key``'s metadata."""
    if key not in SLICE_KEYS:
        hint = did_you_mean(key, SLICE_KEYS)
        raise ConfigError(f"unknown slice key {key!r}.{hint} Available: {', '.join(SLICE_KEYS)}")
    if metadata_missing(rows, key):
        raise SliceMetadataMissing(key)
    groups = _groups(rows, key)
    masks: dict[str, np.ndarray] = {}
    for pos, i in enumerate(order.tolist()):
        for value in groups[i]:
            if value not in masks:
                masks[value] = np.zeros(len(order), dtype=bool)
            masks[value][pos] = True
    return {v: masks[v] for v in sorted(masks)}
