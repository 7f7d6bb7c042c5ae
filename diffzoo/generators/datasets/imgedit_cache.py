"""The label cache of the ImgEdit adapter: each pair's derived label and outcome, on disk.

An entry is ``<key[:2]>/<key>.json`` (the builder's outcome: status, changed
fraction, alignment reason, region) and, for an accepted pair,
``<key>.png`` (the label in the output image's frame: 0, 1, 255).  The key
(made by :class:`~diffzoo.generators.datasets.imgedit.ImgEditDataset`)
hashes both images' content, the builder settings and the rule version, so
an entry never goes stale.  The JSON is written last: its presence means
the entry is complete.  A cache that cannot be written is warned about once
and the dataset carries on uncached; a damaged label file is derived again.
A cache without a root (``cache=False``) reads nothing and writes nothing.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import numpy as np

from diffzoo.generators.generate.layout import png_bytes
from diffzoo.harness.core.errors import DataError, StorageError
from diffzoo.harness.core.fsutil import atomic_write_bytes, atomic_write_text
from diffzoo.harness.data.imageio import read_mask

log = logging.getLogger(__name__)


class LabelCache:
    """Cached labels under ``root`` (``None``: no cache)."""

    def __init__(self, root: Path | None) -> None:
        self.root = root
        self._warned = False

    def _paths(self, key: str) -> tuple[Path, Path]:
        d = self.root / key[:2]
        return d / f"{key}.json", d / f"{key}.png"

    def get(self, key: str) -> dict[str, Any] | None:
        """The outcome stored for ``key``, or None when there is none (or it is unreadable)."""
        if self.root is None:
            return None
        try:
            info = json.loads(self._paths(key)[0].read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return info if isinstance(info, dict) and info.get("status") else None

    def put(self, key: str, info: dict[str, Any], mask: np.ndarray | None) -> None:
        """Store an outcome, with its label when ``mask`` is given; a write failure is warned about once."""
        if self.root is None:
            return
        meta, png = self._paths(key)
        try:
            if mask is not None:
                atomic_write_bytes(png, png_bytes(mask))
            atomic_write_text(meta, json.dumps(info))  # written last: its presence means complete
        except (OSError, StorageError) as exc:  # a full disk too: the cache is optional, the run goes on
            if not self._warned:
                log.warning("cannot write the label cache %s (%s); continuing uncached", meta.parent, exc)
                self._warned = True

    def label(self, key: str, sample_id: str, hw: tuple[int, int]) -> np.ndarray | None:
        """The stored label of ``key`` at ``hw``, or None when it is missing or damaged."""
        if self.root is None:
            return None
        png = self._paths(key)[1]
        try:
            label = read_mask(png, sample_id, size=hw[::-1])
        except DataError as exc:  # CorruptSampleError included
            log.warning("label cache %s unusable (%s); deriving again", png, exc)
            return None
        return label if np.isin(label, (0, 1, 255)).all() else None
