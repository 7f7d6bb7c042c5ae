"""Finding ``datasets`` tables on disk: parquet / arrow files, ``save_to_disk`` folders,
their columns and split names.

The DiffSeg30k source (:mod:`.hfsource`) reads a folder through ``load_dataset``;
the adapters whose rows are more than an image/mask pair (OpenSDI, SID-Set) find
every table under a path with :func:`load_tables` and read them through
:class:`.hfsource.HFRows`.  Split names come from the data: a ``DatasetDict``'s own
names, or the hub's data file names (``sd2-00000-of-00003.parquet`` -> ``sd2``),
or, for the hub's converted copies (``default/sd2/0000.parquet``), the folder name.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from diffzoo.harness.core.errors import DataError, DiffzooError

log = logging.getLogger(__name__)

_DATA_SUFFIXES = (".parquet", ".arrow")
SAVED_MARKERS = ("dataset_dict.json", "state.json")
"""Files that mark a ``save_to_disk`` folder (a DatasetDict / a Dataset)."""
SHARDED = re.compile(r"^(?P<split>.+?)-\d{5}-of-\d{5}(?:-[0-9a-f]+)?\.[^.]+$", re.IGNORECASE)
"""The hub's data file names, ``<split>-00000-of-00003.parquet`` (``-<hash>`` optional)."""
ROW_LAYOUTS = {
    "opensdi": frozenset({"key", "image", "mask", "label"}),
    "sidset": frozenset({"img_id", "image", "mask", "label"}),
}
"""Columns of the row layouts other adapters read (OpenSDI, SID-Set): the DiffSeg30k adapter
leaves such tables to them although they also hold ``image`` and ``mask``."""


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
    return any((root / m).is_file() for m in SAVED_MARKERS) or bool(data_files(root))


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


def row_layout(columns: Collection[str]) -> str | None:
    """The name of the :data:`ROW_LAYOUTS` entry whose columns ``columns`` hold, else None."""
    return next((name for name, needed in ROW_LAYOUTS.items() if needed <= set(columns)), None)


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


def read_data_files(files: Sequence[Path]) -> Any:
    """One ``datasets.Dataset`` of parquet files, or of arrow files (concatenated); a file
    that cannot be read is a DataError naming it."""
    import datasets

    try:
        if all(f.suffix.lower() == ".parquet" for f in files):
            return datasets.Dataset.from_parquet([str(f) for f in files])
        return datasets.concatenate_datasets([datasets.Dataset.from_file(str(f)) for f in files])
    except DiffzooError:
        raise
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


def _saved_folders(root: Path) -> list[Path]:
    """``save_to_disk`` folders: ``root`` or below it (two levels), the outermost of nested ones."""
    found: list[Path] = []
    for pattern in ("", "*", "*/*"):
        for marker in SAVED_MARKERS:
            for f in sorted(root.glob(f"{pattern}/{marker}" if pattern else marker)):
                folder = f.parent
                hidden = any(p.startswith(".") for p in folder.relative_to(root).parts)
                if not hidden and not any(folder == s or s in folder.parents for s in found):
                    found.append(folder)
    return found


def _load_saved(folder: Path) -> dict[str, Any]:
    import datasets

    try:
        obj = datasets.load_from_disk(str(folder))
    except Exception as exc:  # the library raises many types; all mean "cannot read"
        raise DataError(f"{folder}: a save_to_disk folder that `datasets` cannot read "
                        f"({type(exc).__name__}: {exc})") from None
    return {folder.name: obj} if isinstance(obj, datasets.Dataset) else dict(obj)


def load_tables(path: Path) -> list[Table]:
    """Every ``datasets`` table at ``path``: the file itself (a ``.parquet`` / ``.arrow``);
    else each ``save_to_disk`` folder (``path`` or up to two levels below: its splits, or
    one split named after the folder for a saved Dataset) and the other data files up to
    two folders down, one table per (folder, :func:`file_split`).  Nothing found: []."""
    if path.is_file():
        if path.suffix.lower() not in _DATA_SUFFIXES:
            return []
        return [Table(f".:{file_split(path)}", file_split(path), path.parent, read_data_files([path]), (path,))]
    tables: list[Table] = []
    saved = _saved_folders(path)
    for folder in saved:
        rel = folder.relative_to(path).as_posix()
        files = tuple(data_files(folder))
        for split, ds in _load_saved(folder).items():
            tables.append(Table(f"{rel}:{split}", split, folder, ds, files))
    groups: dict[tuple[Path, str], list[Path]] = {}
    for f in data_files(path):
        if not any(s in f.parents for s in saved):
            groups.setdefault((f.parent, file_split(f)), []).append(f)
    for (folder, split), files in sorted(groups.items()):
        rel = folder.relative_to(path).as_posix()
        tables.append(Table(f"{rel}:{split}", split, folder, read_data_files(files), tuple(files)))
    return tables
