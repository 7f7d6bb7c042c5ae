"""Split names and the deterministic train/val split.

A sample's split depends only on (seed, its id): hashing each id on its own
means adding, removing or reordering other files never moves an id from train
to val or back, so a checkpoint trained on "train" stays valid as a dataset
grows.  Hub splits are renamed to the canonical ``train`` / ``val`` / ``test``.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable, Mapping
from pathlib import Path

from ..errors import DataError

log = logging.getLogger(__name__)

CANONICAL_SPLITS = ("train", "calib", "val", "test")
SPLIT_ALIASES = {"validation": "val", "valid": "val", "dev": "val", "training": "train"}

SPLITS_FILE = "splits.json"


def canonical_split(name: str) -> str:
    """``validation`` -> ``val`` etc.; other names (``cross_test``) are kept."""
    return SPLIT_ALIASES.get(name.lower(), name)


def _unit_hash(seed: int, sample_id: str) -> float:
    digest = hashlib.sha256(f"{seed}\x00{sample_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def split_ids(ids: Iterable[str], val_fraction: float = 0.2, seed: int = 0,
              calib_fraction: float = 0.0) -> dict[str, list[str]]:
    """Assign each id to ``train``, ``val`` or ``calib`` by a hash u of (seed, id).

    u < val_fraction: ``val``; then u < val_fraction + calib_fraction:
    ``calib`` (a validation split for calibrating thresholds, carved from
    what would be train, so ``val`` is the same with or without it); else
    ``train``.  Each list is sorted; ``calib`` is absent when its fraction is 0.
    """
    if not 0.0 <= val_fraction < 1.0:
        raise DataError(f"val_fraction must be in [0, 1), got {val_fraction}")
    if not 0.0 <= calib_fraction < 1.0 - val_fraction:
        raise DataError(f"calib_fraction must be in [0, 1 - val_fraction), got {calib_fraction}")
    out: dict[str, list[str]] = {"train": [], "val": []}
    if calib_fraction:
        out["calib"] = []
    for sid in ids:
        u = _unit_hash(seed, sid)
        name = "val" if u < val_fraction else "calib" if u < val_fraction + calib_fraction else "train"
        out[name].append(sid)
    for v in out.values():
        v.sort()
    return out


def read_splits_file(path: Path, known_ids: Iterable[str]) -> dict[str, list[str]]:
    """Read ``{"train": [ids], "val": [ids], ...}``; every id must exist in the data.

    Split names are made canonical; an id in two splits is an error (it
    would leak between training and evaluation).
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"splits file {path} is not readable JSON ({exc})") from None
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
        raise DataError(f'splits file {path} must be {{"train": [ids], "val": [ids]}}')
    known = set(known_ids)
    out: dict[str, list[str]] = {}
    seen: dict[str, str] = {}
    for raw_name, raw_ids in data.items():
        name = canonical_split(str(raw_name))
        ids = [str(i) for i in raw_ids]
        missing = [i for i in ids if i not in known]
        if missing:
            raise DataError(
                f"splits file {path}: split {raw_name!r} names {len(missing)} id(s) that are "
                f"not in the data, e.g. {', '.join(missing[:5])}"
            )
        for i in ids:
            if i in seen and seen[i] != name:
                raise DataError(f"splits file {path}: id {i} is in both {seen[i]!r} and {name!r}")
            seen[i] = name
        out[name] = sorted(set(out.get(name, [])) | set(ids))
    unassigned = len(known) - len(seen)
    if unassigned:
        log.info("splits file %s leaves %d sample(s) in no split", path, unassigned)
    return out


def resolve_splits(
    native: Mapping[str, list[str]],
    splits_file: Path | None,
    val_fraction: float,
    seed: int,
    calib_fraction: float = 0.0,
) -> dict[str, list[str]]:
    """The splits a dataset exposes.

    ``native``: the source's own splits (one unnamed pool is given as
    ``{"train": ids}``).  A ``splits.json`` wins; else a lone ``train`` split
    is divided 8:2 (by default) into train/val (and ``calib`` when
    ``calib_fraction`` > 0); else the native splits are kept, with canonical
    names.  Empty splits are dropped.
    """
    all_ids = [i for ids in native.values() for i in ids]
    if splits_file is not None and splits_file.is_file():
        return read_splits_file(splits_file, all_ids)
    named = {canonical_split(k): sorted(v) for k, v in native.items()}
    if list(named) == ["train"]:
        named = split_ids(named["train"], val_fraction, seed, calib_fraction)
    return {k: v for k, v in named.items() if v}
