"""Split names, the deterministic train/val split, split files, split ids.

A sample's split depends only on (seed, its id): hashing each id on its own
means adding, removing or reordering other files never moves an id from train
to val or back, so a checkpoint trained on "train" stays valid as a dataset
grows.  Hub splits are renamed to the canonical ``train`` / ``val`` / ``test``.

Every split assignment has an id that records and tables carry: the hash
split ``diffzoo-hash-v1-seed<S>-val<P>[-calib<P>]``, the data's own splits
``native``, ``splits.json-<sha256[:16]>`` and ``file-<sha256[:16]>`` for a
split file.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TypeVar

from diffzoo.harness.core.errors import ConfigError, DataError
from diffzoo.harness.core.fsutil import parse_json, require_file
from diffzoo.harness.core.types import check_seed
from diffzoo.harness.data.metadata import data_bytes, data_text
from diffzoo.harness.data.walk import canonical_name, keyed_once

log = logging.getLogger(__name__)
T = TypeVar("T")

CANONICAL_SPLITS = ("train", "calib", "val", "test")
SPLIT_ALIASES = {"validation": "val", "valid": "val", "dev": "val", "training": "train"}

SPLITS_FILE = "splits.json"


def canonical_split(name: str) -> str:
    """``validation`` -> ``val``, ``Train`` -> ``train`` etc. (any letter case); other names
    (``cross_test``) are kept as written."""
    key = name.lower()
    return SPLIT_ALIASES.get(key, key if key in CANONICAL_SPLITS else name)


def by_canonical_split(where: object, items: Iterable[tuple[str, T]]) -> dict[str, T]:
    """``{canonical_split(name): value}`` of the (split name, value) ``items``; two names reading as
    one split (``val`` and ``validation``) are a DataError naming ``where`` and both: keeping one
    would drop the other's samples unsaid."""
    return keyed_once(where, items, canonical_split, lambda key, first, second: (
        f"splits {first!r} and {second!r} both read as split {key}; rename or leave out one of them"))


def split_ids(ids: Iterable[str], val_fraction: float = 0.2, seed: int = 0,
              calib_fraction: float = 0.0) -> dict[str, list[str]]:
    """Assign each id to ``train``, ``val`` or ``calib`` by a hash u of (seed, id).

    u < val_fraction: ``val``; then u < val_fraction + calib_fraction:
    ``calib`` (a validation split for calibrating thresholds, carved from
    what would be train, so ``val`` is the same with or without it); else
    ``train``.  Each list is sorted; ``calib`` is absent when its fraction is 0.
    """
    check_seed(seed, "split_seed")  # --seed's range: a seed every record and JSON reader holds
    if not 0.0 <= val_fraction < 1.0:
        raise ConfigError(f"val_fraction must be in [0, 1), got {val_fraction}")
    if not 0.0 <= calib_fraction < 1.0 - val_fraction:
        raise ConfigError(f"calib_fraction must be in [0, 1 - val_fraction), got {calib_fraction}")
    out: dict[str, list[str]] = {"train": [], "val": []}
    if calib_fraction:
        out["calib"] = []
    for sid in ids:
        u = int.from_bytes(hashlib.sha256(f"{seed}\x00{sid}".encode()).digest()[:8], "big") / 2.0**64  # in [0, 1)
        name = "val" if u < val_fraction else "calib" if u < val_fraction + calib_fraction else "train"
        out[name].append(sid)
    for v in out.values():
        v.sort()
    return out


HASH_SPLIT_VERSION = "diffzoo-hash-v1"
"""Name and version of :func:`split_ids`' rule; bump it if the rule ever changes."""


def percent(fraction: float) -> str:
    """``0.2`` -> ``20``: a fraction as the percentage split ids and sources name."""
    return format(round(fraction * 100, 6), "g")


def hash_split_id(seed: int, val_fraction: float, calib_fraction: float = 0.0) -> str:
    """``diffzoo-hash-v1-seed0-val20`` (``-calib10`` when a calib split is carved)."""
    calib = f"-calib{percent(calib_fraction)}" if calib_fraction else ""
    return f"{HASH_SPLIT_VERSION}-seed{seed}-val{percent(val_fraction)}{calib}"


def _parse_split_text(text: str, path: Path) -> dict[str, list[str]]:
    """A JSON ``{"train": [ids], ...}``, or ``id<TAB>split`` lines (``#`` comments)."""
    if text.lstrip().startswith(("{", "[")):
        try:
            data = parse_json(text, f"splits file {path}", unique_keys=True)  # a split given twice: refused, not merged
        except json.JSONDecodeError as exc:
            raise DataError(f"splits file {path} is not readable JSON ({exc})") from None
        if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
            raise DataError(f'splits file {path} must be {{"train": [ids], "val": [ids]}}')
        out = {str(k): [str(i).strip() for i in v] for k, v in data.items()}  # as id<TAB>split lines read an id
    else:
        out = {}
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            parts = [c.strip() for c in (line.split("\t") if "\t" in line else line.split())]
            if len(parts) != 2 or not all(parts):
                raise DataError(
                    f"splits file {path}, line {lineno}: expected 'id<TAB>split', got {line.strip()!r}"
                )
            out.setdefault(parts[1], []).append(parts[0])
    if not any(out.values()):  # {} or {"train": []}: a dataset of no split, whichever form says it
        raise DataError(
            f'splits file {path} is empty: give {{"train": [ids], "val": [ids]}} or id<TAB>split lines'
        )
    return out


def read_splits_file(path: Path, known_ids: Iterable[str],
                     prefix: str = SPLITS_FILE) -> tuple[dict[str, list[str]], dict[str, str]]:
    """Read ``{"train": [ids], "val": [ids], ...}`` or ``id<TAB>split`` lines;
    every id must exist in the data, matched as :func:`.walk.canonical_name`
    reads both (a file saved from a macOS copy writes ``café`` decomposed).

    Split names are made canonical; an id in two splits is an error (it
    would leak between training and evaluation).  Returns the splits and their
    provenance: id ``<prefix>-<first 16 hex of the file's sha256>``, read as its
    text is (:func:`.fsutil.read_regular`: a FIFO or a file past ``TEXT_LIMIT`` is
    refused, never read), and source (``split_file=NAME`` for ``prefix`` ``file``).
    """
    raw = data_bytes(path, f"splits file {path}")  # hashed below: the id is of the very bytes parsed
    data = _parse_split_text(data_text(path, f"splits file {path}", data=raw), path)
    known = {canonical_name(i): i for i in known_ids}
    out: dict[str, list[str]] = {}
    seen: dict[str, str] = {}
    by_canonical_split(f"splits file {path}", data.items())  # val beside validation: never merged
    for raw_name, listed in data.items():
        name = canonical_split(str(raw_name))
        missing = [i for i in listed if canonical_name(i) not in known]
        if missing:
            raise DataError(
                f"splits file {path}: split {raw_name!r} names {len(missing)} id(s) that are "
                f"not in the data, e.g. {', '.join(missing[:5])}"
            )
        ids = [known[canonical_name(i)] for i in listed]
        for i in ids:
            if i in seen and seen[i] != name:
                raise DataError(f"splits file {path}: id {i} is in both {seen[i]!r} and {name!r}")
            seen[i] = name
        out[name] = sorted(set(out.get(name, [])) | set(ids))
    log_unassigned(f"splits file {path}", known.values(), seen)
    return out, {"id": f"{prefix}-{hashlib.sha256(raw).hexdigest()[:16]}",
                 "source": f"split_file={path.name}" if prefix == "file" else f"{SPLITS_FILE} beside the data"}


def log_unassigned(source: str, ids: Iterable[str], assigned: Iterable[str]) -> None:
    """Say (info) how many of the data's ``ids`` ``source`` (a splits file, split files) puts in none of
    its splits (``assigned``), naming the first: they are in no run."""
    left = sorted(set(ids) - set(assigned))
    if left:
        log.info("%s leaves %d sample(s) in no split (e.g. %s)", source, len(left), left[0])


def resolve_split_scheme(
    native: Mapping[str, list[str]],
    splits_file: Path | None,
    val_fraction: float,
    seed: int,
    calib_fraction: float = 0.0,
    split_file: Path | None = None,
) -> tuple[dict[str, list[str]], dict[str, str]]:
    """The splits a dataset exposes and their provenance ``{"id", "source"}``.

    ``native``: the source's own splits (one unnamed pool is given as
    ``{"train": ids}``).  In order: ``split_file`` (``--dataset-option
    split_file=FILE``, id ``file-<sha256[:16]>``); a ``splits.json`` beside the
    data (``splits.json-<sha256[:16]>``); a lone ``train`` split divided by
    :func:`split_ids` (:func:`hash_split_id`); else the native splits with
    canonical names (``native``).  Empty splits are dropped.
    """
    all_ids = [i for ids in native.values() for i in ids]
    for path, prefix in ((split_file, "file"), (splits_file, SPLITS_FILE)):
        if path is None or (prefix == SPLITS_FILE and not path.is_file()):
            continue
        require_file(path, "split_file", option="split_file=")
        splits, info = read_splits_file(path, all_ids, prefix)
        return {k: v for k, v in splits.items() if v}, info
    named = by_canonical_split("the data's own splits", native.items())
    if list(named) != ["train"]:
        return native_splits(named, f"the data's own splits ({', '.join(sorted(native))})")
    calib = f", calib {percent(calib_fraction)}%" if calib_fraction else ""
    info = {"id": hash_split_id(seed, val_fraction, calib_fraction),
            "source": f"hash of each id (seed {seed}, val {percent(val_fraction)}%{calib})"}
    return {k: v for k, v in split_ids(named["train"], val_fraction, seed, calib_fraction).items() if v}, info


def ids_by_split(pairs: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """``{split: sorted ids}`` of the (id, split) ``pairs``, the splits in the order first met."""
    out: dict[str, list[str]] = {}
    for sid, split in pairs:
        out.setdefault(split, []).append(sid)
    return {s: sorted(ids) for s, ids in out.items()}


def fixed_split(name: str) -> str:
    """The canonical name of an adapter's ``split=NAME`` (every sample in that one split); an
    empty one is refused: ``split=$SPLIT`` with SPLIT unset named a split ``''``."""
    if not name.strip():
        raise ConfigError(f"split={name!r} names no split: give one (e.g. split=test) or leave the option out")
    return canonical_split(name.strip())


def one_split(name: str, ids: Iterable[str]) -> tuple[dict[str, list[str]], dict[str, str]]:
    """Every sample in the split ``name`` (a test set, or an adapter's ``split=NAME``)."""
    key = fixed_split(name)
    return {key: sorted(ids)}, {"id": "native", "source": f"every sample in {key}"}


def native_splits(splits: Mapping[str, Iterable[str]], source: str) -> tuple[dict[str, list[str]], dict[str, str]]:
    """The data's own ``splits`` (each sorted, empty ones dropped), split id ``native``, ``source``
    saying where they come from."""
    return {k: sorted(v) for k, v in splits.items() if v}, {"id": "native", "source": source}


def own_splits(owner: str) -> dict[str, str]:
    """The split provenance of a dataset that names no scheme: ``owner``'s own splits."""
    return {"id": "dataset", "source": f"{owner}'s own splits"}


def with_extra_authentic(info: dict[str, str], split: str, count: int, folder: str) -> dict[str, str]:
    """``info`` with extra authentic images named in its source: they join
    ``split`` (train), never the evaluated one, so the split id stays."""
    return {**info, "source": f"{info['source']}; {split} + {count} extra authentic images ({folder})"}
