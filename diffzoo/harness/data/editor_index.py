"""Which editors' pixels each sample holds, read from its label map once.

Suites select images by editor (leave-two-out training, the images a
held-out pair edited, the SDXL regions of the LoRA suite).  The label map is
the truth (a later edit can cover an earlier one completely, so the
manifest's turns may name an editor with no pixel left).  Reading every
label map of DiffSeg30k takes minutes, so the index is cached on disk per
(dataset fingerprint, split) and in memory for the process.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable

import numpy as np

from diffzoo.harness.core.errors import CorruptSampleError, DataError
from diffzoo.harness.core.fsutil import atomic_write_text, cache_root, read_json
from diffzoo.harness.core.protocols import Dataset
from diffzoo.harness.core.types import IGNORE_INDEX

log = logging.getLogger(__name__)

INDEX_VERSION = 1
_MEMORY: dict[tuple[str, str], dict[str, tuple[int, ...]]] = {}


def editor_index(dataset: Dataset, split: str) -> dict[str, tuple[int, ...]]:
    """Sample id -> sorted label values 1..N present in its label map.

    An unreadable sample maps to ``()`` here (the evaluation skips and
    counts it as usual).
    """
    key = (dataset.fingerprint(), split)
    if key in _MEMORY:
        return _MEMORY[key]
    path = cache_root() / "index" / f"editors-v{INDEX_VERSION}-{key[0]}-{split}.json"
    index: dict[str, tuple[int, ...]] | None = None
    if path.is_file():
        try:
            index = {k: tuple(v) for k, v in read_json(path).items()}
        except (OSError, ValueError, AttributeError):
            log.warning("ignoring unreadable editor index %s; rebuilding it", path)
    if index is None or set(index) != set(dataset.ids(split)):
        index = {}
        for sid in dataset.ids(split):
            try:
                label = dataset.load(sid).label
            except CorruptSampleError:
                index[sid] = ()
                continue
            values = np.unique(label)
            index[sid] = tuple(int(v) for v in values if 0 < v < IGNORE_INDEX)
        try:
            atomic_write_text(path, json.dumps({k: list(v) for k, v in index.items()}))
        except OSError as exc:  # a read-only cache only costs the rebuild next time
            log.warning("cannot write the editor index %s (%s); it is rebuilt next time", path, exc)
    _MEMORY[key] = index
    return index


def editor_values(dataset: Dataset, editors: Iterable[str]) -> set[int]:
    """Label values of named editors (DataError naming the dataset's editors otherwise)."""
    space, editors = dataset.label_space, list(editors)
    missing = [e for e in editors if not space.has_editor(e)]
    if missing:
        raise DataError(
            f"dataset {dataset.name} has no editor {', '.join(map(repr, missing))}; "
            f"its editors: {', '.join(space.editors)}"
        )
    return {space.index(e) for e in editors}


def select_ids(dataset: Dataset, split: str, editors: Iterable[str], *, authentic: bool,
               exclude: bool = False) -> list[str]:
    """Ids of ``split`` holding pixels of any of ``editors`` (plus the
    authentic ones when ``authentic``), or with ``exclude`` the ids holding
    none of them."""
    values = editor_values(dataset, editors)
    index = editor_index(dataset, split)
    if exclude:
        return [sid for sid in dataset.ids(split) if not values.intersection(index.get(sid, ()))]
    return [sid for sid in dataset.ids(split)
            if values.intersection(index.get(sid, ())) or (authentic and not index.get(sid))]
