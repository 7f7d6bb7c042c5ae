"""Everything read through the ``datasets`` library: finding tables on disk, reading their
rows, and DiffSeg30k's image/mask pairs from them.

Tables: parquet / arrow files, ``save_to_disk`` folders, their columns and split names
(:func:`load_tables`).  Split names come from the data: a ``DatasetDict``'s own names, or
the hub's data file names (``sd2-00000-of-00003.parquet`` -> ``sd2``), or, for the hub's
converted copies (``default/sd2/0000.parquet``), the folder name.  :class:`HFRows` reads
rows of tables with image and value columns, image columns undecoded
(``Image(decode=False)``) so that decoding, and its errors, go through :mod:`.imageio`
like every other source, their cell digests cached; the adapters whose rows carry more
than a pair (OpenSDI, SID-Set) read their tables through it.

:class:`HFSource` is DiffSeg30k's pair source: the hub id ``Chaos2629/Diffseg30k``
(``load_dataset``, non-streaming), a local ``.parquet`` or ``.arrow`` file, a folder of
them, and a ``save_to_disk`` folder.  Rows need ``image`` and ``mask`` columns.  Ids: the
row key column (``__key__``, ``id``, ``key``, ``image_id``, ``name``; for a key like
``train_copy/00000001`` its last path part) if present, else the row index zero-padded to
8 digits.  When two splits share ids, every id is prefixed with ``<split>/`` so that ids
stay unique across splits.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest.mock import patch

from diffzoo.harness.core.errors import CorruptSampleError, DataError
from diffzoo.harness.core.fsutil import read_json, sha256_file
from diffzoo.harness.core.hub import hub_offline, hub_unreachable
from diffzoo.harness.core.progress import current_progress
from diffzoo.harness.data.fingerprint import UNREADABLE, DigestCache, combine, pair_fingerprint
from diffzoo.harness.data.splits import CANONICAL_SPLITS, SPLIT_ALIASES, by_canonical_split, canonical_split
from diffzoo.harness.data.walk import files_in, subfolders

log = logging.getLogger(__name__)

_DATA_SUFFIXES = (".parquet", ".arrow")
SAVED_MARKERS = ("dataset_dict.json", "state.json")
"""Files that mark a ``save_to_disk`` folder (a DatasetDict / a Dataset)."""
SHARDED = re.compile(r"^(?P<split>.+?)-\d{5}-of-\d{5}(?:-[0-9a-f]+)?\.[^.]+$", re.IGNORECASE)
"""The hub's data file names, ``<split>-00000-of-00003.parquet`` (``-<hash>`` optional)."""
ROW_LAYOUTS = {
    "opensdi": frozenset({"key", "image", "mask", "label"}),
    "sidset": frozenset({"img_id", "image", "mask", "label"}),
    "sofake": frozenset({"image", "mask", "label", "filename"}),
}
"""Columns of the row layouts other adapters read (OpenSDI, SID-Set, So-Fake): the DiffSeg30k adapter
leaves such tables to them although they also hold ``image`` and ``mask``."""
OPENSDI_KEY = re.compile(r"[^/]+/[^/]+/(?:real|fake)/[^/]+")
"""OpenSDI's row keys, ``<subset>/<generator>/<real|fake>/<file>`` (``partial/sd15/fake/000651821.jpg``)."""


def data_files(root: Path) -> list[Path]:
    """Parquet/arrow files in ``root`` up to two folders down (hidden ones skipped; folder links
    as :func:`.walk.subfolders` follows them: never one back up, nor one folder twice)."""
    folders = [root, *subfolders(root, depth=2)] if root.is_dir() else []
    return sorted(f for d in folders for f in files_in(d, _DATA_SUFFIXES))


def looks_like_hf_dir(root: Path) -> bool:
    return any((root / m).is_file() for m in SAVED_MARKERS) or bool(data_files(root))


def hf_columns(path: Path) -> set[str] | None:
    """Column names of a parquet/arrow file or datasets folder, cheaply: empty for
    anything else, None when such a file exists but cannot be read (a parquet file of no
    rows included: `datasets` fails on it)."""
    try:
        if path.is_file():
            if path.suffix.lower() == ".parquet":
                import pyarrow.parquet as pq

                meta = pq.read_metadata(path)
                return set(meta.schema.to_arrow_schema().names) if meta.num_rows else None
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
            splits = read_json(path / "dataset_dict.json")["splits"]
            return hf_columns(path / splits[0]) if splits else set()
        if (path / "dataset_info.json").is_file():
            info = read_json(path / "dataset_info.json")
            return set((info.get("features") or {}).keys())
        files = data_files(path)
        return hf_columns(files[0]) if files else set()
    except Exception as exc:  # sniffing never raises; the caller decides what unreadable means
        log.debug("cannot read columns of %s: %s", path, exc)
        return None


def row_layout(columns: Collection[str]) -> str | None:
    """The name of the :data:`ROW_LAYOUTS` entry whose columns ``columns`` hold, else None."""
    return next((name for name, needed in ROW_LAYOUTS.items() if needed <= set(columns)), None)


def need_columns(where: object, needed: Sequence[str], columns: Sequence[str], then: str = "") -> None:
    """A DataError naming ``where``, the ``needed`` columns, those of them ``columns`` lack and
    ``columns``, then ``then``, where any is lacking: rows without them cannot be read."""
    if missing := [c for c in needed if c not in columns]:
        raise DataError(f"{where}: rows need columns {', '.join(needed)}; missing {', '.join(missing)} "
                        f"(columns: {', '.join(columns)}){then}")


def sharded_split(path: Path) -> str | None:
    """``cross_test-00000-of-00001.parquet`` -> ``cross_test``; None for other names."""
    m = SHARDED.match(path.name)
    return m["split"] if m else None


def file_split(path: Path) -> str:
    """The split a loose data file holds: ``sd2-00000-of-00003.parquet`` -> ``sd2`` (the hub's
    names), ``sd2/0000.parquet`` -> ``sd2`` (the hub's converted copies), else the file's stem."""
    sharded = sharded_split(path)
    if sharded is not None:
        return sharded
    return path.parent.name if path.stem.isdigit() else path.stem


def not_readable(path: Path) -> str:
    """What is said of a data file :func:`hf_columns` cannot read."""
    import pyarrow.parquet as pq

    try:
        if path.suffix.lower() == ".parquet" and pq.read_metadata(path).num_rows == 0:
            return f"{path}: holds no rows"
    except Exception:  # an unreadable file: said below
        pass
    return f"{path}: not a readable {path.suffix} file (empty, truncated or of another format)"


def read_data_files(files: Sequence[Path]) -> Any:
    """One ``datasets.Dataset`` of parquet files, or of arrow files (concatenated); a file
    that cannot be read is a DataError naming it."""
    import datasets

    if unreadable := [f for f in files if hf_columns(f) is None]:  # never handed to `datasets`, which logs errors
        raise DataError(not_readable(unreadable[0]))
    try:
        if all(f.suffix.lower() == ".parquet" for f in files):
            return datasets.Dataset.from_parquet([str(f) for f in files])
        return datasets.concatenate_datasets([datasets.Dataset.from_file(str(f)) for f in files])
    except Exception as exc:  # the library raises many types; all mean "cannot read"
        shown = str(files[0]) + (f" (and {len(files) - 1} more)" if len(files) > 1 else "")
        raise DataError(f"{shown}: cannot be read by `datasets` ({type(exc).__name__}: {exc})") from None


def unique_ids(split_ids: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """The ids of each split as given when no two splits share one, else each prefixed with
    its split (``val/00000003``) so that ids stay unique across splits."""
    every = [i for ids in split_ids.values() for i in ids]
    if len(set(every)) == len(every):
        return {s: list(ids) for s, ids in split_ids.items()}
    return {s: [f"{s}/{i}" for i in ids] for s, ids in split_ids.items()}


@dataclass(frozen=True)
class Table:
    """One ``datasets`` table found under a path (see :func:`load_tables`)."""

    name: str
    """Unique and stable under the path: ``<folder relative to it>:<split>`` (``.:sd2``)."""
    split: str
    """As stored: the DatasetDict's split name, or the data files' (:func:`file_split`)."""
    folder: Path
    """Where it was found: the ``save_to_disk`` folder, or the data files' folder."""
    data: Any
    """The ``datasets.Dataset``."""
    files: tuple[Path, ...]
    """What it is read from (parquet / arrow files)."""


def _load_saved(folder: Path, single: str | None = None) -> dict[str, Any]:
    """The splits of a ``save_to_disk`` folder: a DatasetDict's own, or one split named ``single``
    (default: the folder's name) for a saved Dataset."""
    import datasets

    try:
        obj = datasets.load_from_disk(str(folder))
    except Exception as exc:  # the library raises many types; all mean "cannot read"
        raise DataError(f"{folder}: a save_to_disk folder that `datasets` cannot read "
                        f"({type(exc).__name__}: {exc})") from None
    return {single or folder.name: obj} if isinstance(obj, datasets.Dataset) else dict(obj)


def load_tables(path: Path) -> list[Table]:
    """Every ``datasets`` table at ``path``: the file itself (a ``.parquet`` / ``.arrow``);
    else each ``save_to_disk`` folder (``path`` or up to two levels below: its splits, or
    one split named after the folder for a saved Dataset) and the other data files up to
    two folders down, one table per (folder, :func:`file_split`).  Nothing found: []."""
    if path.is_file() and path.suffix.lower() in _DATA_SUFFIXES:  # any other file: no folder below, so []
        return [Table(f".:{file_split(path)}", file_split(path), path.parent, read_data_files([path]), (path,))]
    tables: list[Table] = []
    saved: list[Path] = []  # the save_to_disk folders, the outermost of nested ones
    for folder in [path, *subfolders(path, depth=2)] if path.is_dir() else []:
        if any((folder / m).is_file() for m in SAVED_MARKERS) and not any(s in folder.parents for s in saved):
            saved.append(folder)
    for folder in saved:
        rel = folder.relative_to(path).as_posix()
        files = tuple(data_files(folder))
        for split, ds in _load_saved(folder).items():
            tables.append(Table(f"{rel}:{split}", split, folder, ds, files))
    groups: dict[tuple[Path, str], list[Path]] = {}
    for f in data_files(path):
        if not any(s in f.parents for s in saved):
            groups.setdefault((f.parent, file_split(f)), []).append(f)
    for (folder, split), group in sorted(groups.items()):
        rel = folder.relative_to(path).as_posix()
        tables.append(Table(f"{rel}:{split}", split, folder, read_data_files(group), tuple(group)))
    by_canonical_split(path, ((s, s) for s in dict.fromkeys(t.split for t in tables)))  # val beside validation
    return tables

DIFFSEG30K_HUB_ID = "Chaos2629/Diffseg30k"
DIFFSEG30K_COPIES = ("KhangTruong/Diffseg30k",)
"""Third-party re-uploads read as DiffSeg30k copies (parquet, split ``cross_test``, binary masks)."""
KNOWN_HUB_IDS = {DIFFSEG30K_HUB_ID.lower(), *(c.lower() for c in DIFFSEG30K_COPIES)}
HUB_PREFIXES = ("hf://datasets/", "hub:")
KEY_COLUMNS = ("__key__", "id", "key", "image_id", "name")
CLASS_LABEL_COLUMNS = ("mask", "label", "labels", "class", "classes", "editor")
"""Columns searched first for a ``ClassLabel`` feature naming the mask values."""
REQUIRED_COLUMNS = ("image", "mask")
NULL_CELL = "null"
"""The digest of an empty cell in an optional image column (OpenSDI's real images have no mask)."""

Ref = tuple[Any, str]  # (image source for imageio, name used in messages)


def is_hub_id(text: str) -> bool:
    """The DiffSeg30k hub id (or a known copy's), or any id written ``hf://datasets/<id>`` / ``hub:<id>``."""
    t = text.strip()
    return t.lower() in KNOWN_HUB_IDS or t.startswith(HUB_PREFIXES)


def hub_repo(text: str) -> str:
    t = text.strip()
    return next((t.removeprefix(prefix) for prefix in HUB_PREFIXES if t.startswith(prefix)), t)


def _split_from_filename(path: Path) -> str:
    """``validation-00000-of-00001.parquet`` -> ``val``, ``cross_test-00000-of-00001.parquet`` ->
    ``cross_test`` (a hub shard names its split; ``save_to_disk``'s ``data-00000-of-00001.arrow``
    does not); anything else -> ``train`` (one pool)."""
    word = _split_word(path)
    return "train" if word is None else canonical_split(word)


def _split_word(path: Path) -> str | None:
    """The split a data file's name gives, as written: a hub shard's (``cross_test-00000-of-00001.parquet``),
    else a stem that starts with a split name (``validation``, ``val.parquet``); None for none."""
    sharded = sharded_split(path)
    if sharded is not None and sharded.lower() != "data":
        return sharded
    head = path.stem.split("-", 1)[0]
    return head if head.lower() in CANONICAL_SPLITS or head.lower() in SPLIT_ALIASES else None


def _load(source: Path | str) -> dict[str, Any]:
    """The splits of a local file or folder (a Path) or of a hub id (a str); a saved Dataset, a
    file whose name names no split, and a folder ``load_dataset`` reads as one pool are ``train``."""
    import datasets

    if isinstance(source, Path):
        if source.is_file():
            return {_split_from_filename(source): read_data_files([source])}
        if any((source / marker).is_file() for marker in SAVED_MARKERS):
            return _load_saved(source, "train")
        # a data file datasets cannot read would be passed over, and the folder read as another kind
        files = data_files(source)
        # val.parquet beside validation.parquet: `datasets` merges them into one split, unsaid
        by_canonical_split(source, ((s, s) for s in dict.fromkeys(filter(None, map(_split_word, files)))))
        columns = {f: hf_columns(f) for f in files}
        if unreadable := [f for f in files if columns[f] is None]:
            raise DataError(f"{not_readable(unreadable[0])}; move it out of {source} or replace it")
        # `datasets` gives a file the columns of the folder's first: one it lacks would read as empty cells
        for f in files:
            need_columns(f, REQUIRED_COLUMNS, sorted(columns[f] or ()), f"; move it out of {source} or replace it")
        if upper := [f for f in files if f.suffix not in _DATA_SUFFIXES]:  # load_dataset skips them
            raise DataError(f"{upper[0]}: `datasets` reads a folder's data files by their lower-case suffix and would "
                            f"pass this one over; rename it to {upper[0].suffix.lower()}")
    try:
        if isinstance(source, str):  # shown: a download can take long
            # a hub that does not answer is asked once: `datasets` would retry for about half a minute before
            # reading its cache, which its offline mode reads at once
            offline = datasets.config.HF_HUB_OFFLINE or hub_offline() or hub_unreachable(source, "dataset")
            with (patch.object(datasets.config, "HF_HUB_OFFLINE", offline),
                  current_progress().task(f"loading {source} from the Hugging Face hub (datasets.load_dataset)", None)):
                return dict(datasets.load_dataset(source, streaming=False))
        return dict(datasets.load_dataset(str(source)))
    except Exception as exc:  # the library raises many types; all mean "cannot read"
        if isinstance(source, str):
            raise DataError(
                f"cannot load {source} through `datasets` ({type(exc).__name__}: {exc}). "
                f"Download it where there is network access: `hf download "
                f"{source} --repo-type dataset --local-dir DIR`, copy DIR here and pass the "
                f"local path instead (for DiffSeg30k: DIR/train.zip, or the folder it was "
                f"extracted to)"
            ) from None
        raise DataError(f"{source}: cannot be read by `datasets` ({type(exc).__name__}: {exc})") from None


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
    # OpenSDI's rows are its images (a real one has no mask), never image/mask pairs, whatever column they lack
    if key == "key" and full and all(map(OPENSDI_KEY.fullmatch, full)):
        need_columns(where, (*REQUIRED_COLUMNS, "key", "label"), ds.column_names,
                     f"; keys such as {full[0]} are OpenSDI's")
    short = [k.rsplit("/", 1)[-1] for k in full]
    for ids in (short, full):
        if len(set(ids)) == len(ids):
            return ids
    raise DataError(f"{where}: key column {key!r} has duplicate values; ids must be unique")


class HFRows:
    """Rows of ``datasets`` tables (name -> Dataset): the :data:`REQUIRED_COLUMNS` (image, mask)
    read undecoded when a row is read, ``values`` columns (keys, labels) read once, here.

    ``optional``: image columns whose empty cells are legitimate (OpenSDI's real images carry
    no mask): they read as None and hash as :data:`NULL_CELL`; any other empty cell is a
    corrupt sample when read.  Cell digests are cached (:class:`.fingerprint.DigestCache`,
    key ``datasets:<cache_key>``) while ``files`` keep their sizes and mtimes (default: the
    tables' own arrow cache files).
    """

    def __init__(self, tables: Mapping[str, Any], location: str,
                 values: Sequence[str] = (), *, optional: Collection[str] = (),
                 files: Sequence[Path] | None = None, cache_key: str | None = None) -> None:
        import datasets

        self.location = location
        self.images = REQUIRED_COLUMNS
        self._optional = frozenset(optional)
        self._values: dict[str, dict[str, list[Any]]] = {}
        self._data: dict[str, Any] = {}
        self._files = None if files is None else list(files)
        self._cache_key = cache_key or os.path.abspath(location)
        for name, ds in tables.items():
            need_columns(f"{location} (split {name})", [*self.images, *values], ds.column_names)
            self._values[name] = {c: list(ds[c]) for c in values}
            ds = ds.select_columns(list(self.images))
            for col in self.images:
                if isinstance(ds.features[col], datasets.Image):
                    ds = ds.cast_column(col, datasets.Image(decode=False))
            self._data[name] = ds

    def values(self, table: str, column: str) -> list[Any]:
        """A value column of ``table``, one entry per row."""
        return self._values[table][column]

    def read(self, table: str, row: int, sample_id: str) -> tuple[Ref, Ref | None]:
        """The image and mask cells of one row as (source, name) for :mod:`.imageio`; None for an
        empty optional cell.  An unreadable row or empty required cell: CorruptSampleError."""
        where = f"{self.location}[{table} row {row}]"
        try:
            record = self._data[table][row]
        except Exception as exc:  # arrow read failures of one row
            raise CorruptSampleError(sample_id, f"{where}: unreadable row ({exc})") from None
        image, mask = (None if record[col] is None and col in self._optional
                       else _cell_ref(record[col], sample_id, f"{where}.{col}") for col in self.images)
        return image, mask  # type: ignore[return-value]  # the image column is never optional

    def files(self) -> list[Path]:
        """The files the rows are read from (what the digest cache is stamped with)."""
        if self._files is not None:
            return self._files
        return sorted({Path(f["filename"]) for ds in self._data.values() for f in ds.cache_files})

    def digests(self, index: Mapping[str, tuple[str, int]]) -> dict[str, str]:
        """``<sample id>.<image column>`` -> sha256 of the cell's encoded bytes, for the
        samples of ``index`` (sample id -> (table, row)); cached while :meth:`files` are
        unchanged, so a second call reads nothing."""
        stamp = _files_stamp(self.files())
        cache = DigestCache(f"datasets:{self._cache_key}")
        digests: dict[str, str] = {}
        todo: dict[str, dict[int, str]] = {}  # table -> row -> sample id
        for sid, (table, row) in index.items():
            for col in self.images:
                hit = cache.get(f"{sid}.{col}", [stamp, table, row]) if stamp else None
                if hit is None:
                    todo.setdefault(table, {})[row] = sid
                else:
                    digests[f"{sid}.{col}"] = hit
        for table, rows in todo.items():
            log.info("fingerprinting %d row(s) of %s (split %s) once", len(rows), self.location, table)
            for row, record in enumerate(self._data[table]):
                if row not in rows:
                    continue
                for col in self.images:
                    key = f"{rows[row]}.{col}"
                    value = record[col]
                    digests[key] = NULL_CELL if value is None and col in self._optional else _cell_digest(value)
                    if stamp:
                        cache.put(key, [stamp, table, row], digests[key])
        cache.save()
        return digests


class HFSource:
    """Pairs from a ``datasets`` Dataset / DatasetDict."""

    kind = "datasets"

    def __init__(self, spec: str | Path) -> None:
        """``spec``: a hub id (a str, as :func:`.sources.open_source` reads one) or a local file or folder."""
        self.hub_id = hub_repo(spec) if isinstance(spec, str) else None
        path = None if isinstance(spec, str) else spec
        self.path = path
        self.location = self.hub_id or str(path)
        self.sidecar_dir = None if path is None else (path if path.is_dir() else path.parent)
        raw = by_canonical_split(self.location, _load(self.hub_id or spec).items())
        self.class_label: tuple[str, list[str]] | None = None
        for split, ds in raw.items():  # the first split's ClassLabel; another split naming other classes is refused
            found = class_label_names(ds.features)
            if found is not None and self.class_label is not None and self.class_label[1] != found[1]:
                raise DataError(
                    f"{self.location} (split {split}): ClassLabel feature {found[0]!r} names {', '.join(found[1])}, "
                    f"but another split names {', '.join(self.class_label[1])}; pass --labels FILE"
                )
            self.class_label = self.class_label or found
        files = None if path is None else [path] if path.is_file() else data_files(path)
        self._rows = HFRows(raw, self.location, files=files, cache_key=self.hub_id)
        split_ids = unique_ids({s: _row_ids(ds, f"{self.location} (split {s})") for s, ds in raw.items()})
        self.pairs = {sid: (s, row) for s, ids in split_ids.items() for row, sid in enumerate(ids)}
        self._split_ids = {s: sorted(ids) for s, ids in split_ids.items()}
        if not self.pairs:
            raise DataError(f"{self.location}: the dataset has no rows")

    def native_splits(self) -> dict[str, list[str]]:
        return {s: list(ids) for s, ids in self._split_ids.items()}

    def read_pair(self, sample_id: str) -> tuple[Ref, Ref]:
        return self._rows.read(*self.pairs[sample_id], sample_id)  # type: ignore[return-value]  # no optional cell here

    def read_mask(self, sample_id: str) -> Ref:
        return self.read_pair(sample_id)[1]  # one row holds both cells

    def fingerprint(self) -> str:
        """The sha256 of every image and mask cell's encoded bytes, keyed by sample id
        (:func:`.fingerprint.pair_fingerprint`), so that the same PNG files give the same
        fingerprint as a zip or folder.  Digests are cached while the backing files'
        sizes and mtimes are unchanged."""
        digests = self._rows.digests(self.pairs)
        return pair_fingerprint({sid: (f"{sid}.image", f"{sid}.mask") for sid in self.pairs}, digests)


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
