"""Image/mask pairs read through the ``datasets`` library.

Covers the hub id ``Chaos2629/Diffseg30k`` (``load_dataset``, non-streaming),
a local ``.parquet`` or ``.arrow`` file, a folder of them, and a
``save_to_disk`` folder.  Rows need ``image`` and ``mask`` columns; image
columns are read undecoded (``Image(decode=False)``) so that decoding, and
its errors, go through :mod:`.imageio` like every other source.

Ids: the row key column (``__key__``, ``id``, ``key``, ``image_id``, ``name``;
for a key like ``train_copy/00000001`` its last path part) if present, else
the row index zero-padded to 8 digits.  When two splits share ids, every id
is prefixed with ``<split>/`` so that ids stay unique across splits.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any


from diffzoo.harness.core.errors import CorruptSampleError, DataError, DiffzooError
from diffzoo.harness.core.fsutil import sha256_file
from diffzoo.harness.data.fingerprint import UNREADABLE, DigestCache, combine, pair_fingerprint
from diffzoo.harness.data.splits import CANONICAL_SPLITS, SPLIT_ALIASES, canonical_split

log = logging.getLogger(__name__)

DIFFSEG30K_HUB_ID = "Chaos2629/Diffseg30k"
KNOWN_HUB_IDS = {DIFFSEG30K_HUB_ID.lower()}
HUB_PREFIXES = ("hf://datasets/", "hub:")
KEY_COLUMNS = ("__key__", "id", "key", "image_id", "name")
CLASS_LABEL_COLUMNS = ("mask", "label", "labels", "class", "classes", "editor")
"""Columns searched first for a ``ClassLabel`` feature naming the mask values."""
REQUIRED_COLUMNS = ("image", "mask")
_DATA_SUFFIXES = (".parquet", ".arrow")

Ref = tuple[Any, str]  # (image source for imageio, name used in messages)


def is_hub_id(text: str) -> bool:
    """The DiffSeg30k hub id, or any id written ``hf://datasets/<id>`` / ``hub:<id>``."""
    t = text.strip()
    return t.lower() in KNOWN_HUB_IDS or t.startswith(HUB_PREFIXES)


def hub_repo(text: str) -> str:
    t = text.strip()
    for prefix in HUB_PREFIXES:
        if t.startswith(prefix):
            return t[len(prefix) :]
    return t


def data_files(root: Path) -> list[Path]:
    """Parquet/arrow files in ``root`` up to two folders down (hidden ones skipped)."""
    found = {
        f
        for pattern in ("*", "*/*", "*/*/*")
        for suffix in _DATA_SUFFIXES
        for f in root.glob(pattern + suffix)
        if not any(part.startswith(".") for part in f.relative_to(root).parts)
    }
    return sorted(found)


def looks_like_hf_dir(root: Path) -> bool:
    return (
        (root / "dataset_dict.json").is_file()
        or (root / "state.json").is_file()
        or bool(data_files(root))
    )


def hf_columns(path: Path) -> set[str] | None:
    """Column names of a parquet/arrow file or datasets folder, cheaply: empty for
    anything else, None when such a file exists but cannot be read."""
    try:
        if path.is_file():
            if path.suffix.lower() == ".parquet":
                import pyarrow.parquet as pq

                return set(pq.read_schema(path).names)
            if path.suffix.lower() == ".arrow":
                import pyarrow as pa

                with pa.memory_map(str(path)) as src:
                    try:
                        return set(pa.ipc.open_stream(src).schema.names)
                    except pa.ArrowInvalid:
                        src.seek(0)
                        return set(pa.ipc.open_file(src).schema.names)
            return set()
        if (path / "dataset_dict.json").is_file():
            splits = json.loads((path / "dataset_dict.json").read_text())["splits"]
            return hf_columns(path / splits[0]) if splits else set()
        if (path / "dataset_info.json").is_file():
            info = json.loads((path / "dataset_info.json").read_text())
            return set((info.get("features") or {}).keys())
        files = data_files(path)
        return hf_columns(files[0]) if files else set()
    except Exception as exc:  # sniffing never raises; the caller decides what unreadable means
        log.debug("cannot read columns of %s: %s", path, exc)
        return None


def _split_from_filename(path: Path) -> str:
    """``validation-00000-of-00001.parquet`` -> ``val``; anything else -> ``train``."""
    head = path.stem.split("-", 1)[0].lower()
    if head in CANONICAL_SPLITS or head in SPLIT_ALIASES:
        return canonical_split(head)
    return "train"


def _load(path: Path | None, hub: str | None) -> dict[str, Any]:
    import datasets

    try:
        if hub is not None:
            obj = datasets.load_dataset(hub, streaming=False)
        elif path.is_file() and path.suffix.lower() == ".parquet":
            obj = {_split_from_filename(path): datasets.Dataset.from_parquet(str(path))}
        elif path.is_file():
            obj = {_split_from_filename(path): datasets.Dataset.from_file(str(path))}
        elif (path / "dataset_dict.json").is_file() or (path / "state.json").is_file():
            obj = datasets.load_from_disk(str(path))
        else:
            obj = datasets.load_dataset(str(path))
    except DiffzooError:
        raise
    except Exception as exc:  # the library raises many types; all mean "cannot read"
        if hub is not None:
            raise DataError(
                f"cannot load {hub} through `datasets` ({type(exc).__name__}: {exc}). "
                f"Download it where there is network access: `huggingface-cli download "
                f"{hub} --repo-type dataset --local-dir DIR`, copy DIR here and pass the "
                f"local path instead (for DiffSeg30k: DIR/train.zip, or the folder it was "
                f"extracted to)"
            ) from None
        raise DataError(
            f"{path}: cannot be read by `datasets` ({type(exc).__name__}: {exc})"
        ) from None
    if isinstance(obj, datasets.Dataset):
        obj = {"train": obj}
    return dict(obj)


def _class_label_of(feature: Any) -> Any:
    """The ClassLabel in ``feature`` (itself, or inside a Sequence / List), else None."""
    import datasets

    while feature is not None:
        if isinstance(feature, datasets.ClassLabel):
            return feature
        feature = getattr(feature, "feature", None)  # Sequence, List, LargeList
    return None


def class_label_names(features: Any) -> tuple[str, list[str]] | None:
    """(column, names) of the dataset's ClassLabel feature: the first of
    :data:`CLASS_LABEL_COLUMNS` that has one, else the first column that has one."""
    columns = [c for c in CLASS_LABEL_COLUMNS if c in features]
    columns += [c for c in features if c not in columns]
    for column in columns:
        found = _class_label_of(features[column])
        if found is not None:
            return column, list(found.names)
    return None


def _row_ids(ds: Any, where: str) -> list[str]:
    key = next((c for c in KEY_COLUMNS if c in ds.column_names), None)
    if key is None:
        return [f"{i:08d}" for i in range(ds.num_rows)]
    full = [str(k) for k in ds[key]]
    short = [k.rsplit("/", 1)[-1] for k in full]
    for ids in (short, full):
        if len(set(ids)) == len(ids):
            return ids
    raise DataError(f"{where}: key column {key!r} has duplicate values; ids must be unique")


class HFSource:
    """Pairs from a ``datasets`` Dataset / DatasetDict."""

    kind = "datasets"

    def __init__(self, spec: str | os.PathLike) -> None:
        import datasets

        text = os.fspath(spec)
        self.hub_id = hub_repo(text) if is_hub_id(text) and not Path(text).exists() else None
        path = None if self.hub_id else Path(text)
        self.path = path
        self.location = self.hub_id or str(path)
        self.sidecar_dir = None if path is None else (path if path.is_dir() else path.parent)
        raw = _load(path, self.hub_id)
        self._raw = {canonical_split(k): v for k, v in raw.items()}
        self._data: dict[str, Any] = {}
        self.class_label: tuple[str, list[str]] | None = None
        split_ids: dict[str, list[str]] = {}
        for raw_name, ds in raw.items():
            split = canonical_split(raw_name)
            where = f"{self.location} (split {raw_name})"
            self._check_class_label(class_label_names(ds.features), where)
            missing = [c for c in REQUIRED_COLUMNS if c not in ds.column_names]
            if missing:
                raise DataError(
                    f"{where}: rows need columns {', '.join(REQUIRED_COLUMNS)}; missing "
                    f"{', '.join(missing)} (columns: {', '.join(ds.column_names)})"
                )
            split_ids[split] = _row_ids(ds, where)
            ds = ds.select_columns(list(REQUIRED_COLUMNS))
            for col in REQUIRED_COLUMNS:
                if isinstance(ds.features[col], datasets.Image):
                    ds = ds.cast_column(col, datasets.Image(decode=False))
            self._data[split] = ds
        all_ids = [i for ids in split_ids.values() for i in ids]
        if len(set(all_ids)) != len(all_ids):
            split_ids = {s: [f"{s}/{i}" for i in ids] for s, ids in split_ids.items()}
        self.index = {sid: (s, row) for s, ids in split_ids.items() for row, sid in enumerate(ids)}
        self.pairs = self.index
        self._split_ids = {s: sorted(ids) for s, ids in split_ids.items()}
        if not self.index:
            raise DataError(f"{self.location}: the dataset has no rows")

    def _check_class_label(self, found: tuple[str, list[str]] | None, where: str) -> None:
        """Keep the first split's ClassLabel; another split naming other classes is an error."""
        if found is None:
            return
        if self.class_label is not None and self.class_label[1] != found[1]:
            raise DataError(
                f"{where}: ClassLabel feature {found[0]!r} names {', '.join(found[1])}, but "
                f"another split names {', '.join(self.class_label[1])}; pass --labels FILE"
            )
        self.class_label = self.class_label or found

    def native_splits(self) -> dict[str, list[str]]:
        return {s: list(ids) for s, ids in self._split_ids.items()}

    def read_pair(self, sample_id: str) -> tuple[Ref, Ref]:
        split, row = self.index[sample_id]
        where = f"{self.location}[{split} row {row}]"
        try:
            record = self._data[split][row]
        except Exception as exc:  # arrow read failures of one row
            raise CorruptSampleError(sample_id, f"{where}: unreadable row ({exc})") from None
        return (
            _cell_ref(record["image"], sample_id, where + ".image"),
            _cell_ref(record["mask"], sample_id, where + ".mask"),
        )

    def read_mask(self, sample_id: str) -> Ref:
        return self.read_pair(sample_id)[1]  # one row holds both cells

    def _backing_files(self) -> list[Path]:
        """The files the rows are read from (parquet / arrow, or the hub's arrow cache)."""
        if self.hub_id is None:
            assert self.path is not None
            return [self.path] if self.path.is_file() else data_files(self.path)
        return sorted({Path(f["filename"]) for ds in self._raw.values() for f in ds.cache_files})

    def fingerprint(self) -> str:
        """The sha256 of every image and mask cell's encoded bytes, keyed by sample id
        (:func:`.fingerprint.pair_fingerprint`), so that the same PNG files give the same
        fingerprint as a zip or folder.  Digests are cached while the backing files'
        sizes and mtimes are unchanged."""
        stamp = _files_stamp(self._backing_files())
        cache = DigestCache(f"datasets:{self.hub_id or os.path.abspath(self.location)}")
        digests: dict[str, str] = {}
        todo: dict[str, dict[int, str]] = {}  # split -> row -> sample id
        for sid, (split, row) in self.index.items():
            for role in REQUIRED_COLUMNS:
                hit = cache.get(f"{sid}.{role}", [stamp, split, row]) if stamp else None
                if hit is None:
                    todo.setdefault(split, {})[row] = sid
                else:
                    digests[f"{sid}.{role}"] = hit
        for split, rows in todo.items():
            log.info("fingerprinting %d row(s) of %s (split %s) once", len(rows), self.location, split)
            for row, record in enumerate(self._data[split]):
                if row not in rows:
                    continue
                for role in REQUIRED_COLUMNS:
                    key = f"{rows[row]}.{role}"
                    digests[key] = _cell_digest(record[role])
                    if stamp:
                        cache.put(key, [stamp, split, row], digests[key])
        cache.save()
        return pair_fingerprint({sid: (f"{sid}.image", f"{sid}.mask") for sid in self.index}, digests)


def _files_stamp(files: list[Path]) -> str | None:
    """One string for the files' absolute paths, sizes and mtimes; None: do not cache."""
    try:
        stats = [(os.path.abspath(f), os.stat(f)) for f in files]
    except OSError:
        return None
    return combine([(p, st.st_size, st.st_mtime_ns) for p, st in stats]) if stats else None


def _cell_digest(value: Any) -> str:
    """sha256 of a cell's encoded image bytes (``{"bytes", "path"}`` or raw bytes)."""
    if isinstance(value, dict):
        data, path = value.get("bytes"), value.get("path")
        if data is None and path and Path(path).is_file():
            return sha256_file(Path(path))
        value = data
    if isinstance(value, (bytes, bytearray, memoryview)):
        return hashlib.sha256(bytes(value)).hexdigest()
    return f"{UNREADABLE}{type(value).__name__}"


def _cell_ref(value: Any, sample_id: str, what: str) -> Ref:
    """A ``datasets`` image cell (``{"bytes", "path"}``, bytes, PIL) as (source, name)."""
    if isinstance(value, dict):
        data, path = value.get("bytes"), value.get("path")
        if data is not None:
            return data, f"{what} ({path})" if path else what
        if path:
            return path, path
    else:
        from PIL import Image  # here: the builtins import this module's hub id, and `diffzoo list` stays light

        if isinstance(value, (bytes, bytearray, Image.Image)):
            return value, what
    raise CorruptSampleError(
        sample_id, f"{what}: empty or unsupported cell ({type(value).__name__})"
    )
