"""ImgEdit's file formats: parquet rows of edit pairs and ImgEdit-Bench JSON files.

Parquet (PKU-YuanGroup/ImgEdit README; ``Parquet/*.parquet`` on the hub):

- single-turn rows: ``input_images``, ``output_images`` (lists of paths into
  the extracted ``.tar`` files, e.g. ``results_remove_laion_part5/<id>/original.png``)
  and ``prompt``;
- multi-turn rows: ``data``, a list of ``{input_images, output_images, prompt}``.

An image item may also be raw bytes or a ``{"bytes", "path"}`` struct (the
``datasets`` Image feature), for re-packed copies.

Benchmark JSON (``Benchmark/``): ``basic_edit.json`` ``{key: {id, prompt,
edit_type}}`` (``id`` = the original image's path below the benchmark's image
folder, e.g. ``animal/000342021.jpg``; the edited image is saved as
``<key>.png``), ``UGE_edit.json`` ``{key: {id, prompt}}`` (no edit type),
multi-turn ``{key: {id, turn1, turn2, turn3}}``.

A pair joins entry ``key`` when the entry's prompt for the pair's turn
(``prompt`` for a single-turn row, ``turn<t>`` for turn ``t``) equals the
pair's prompt, whitespace collapsed (a pair without prompt accepts any), and
either its output's file stem is ``key`` (tried first) or the row's first
input path ends with ``id`` (whole path components).  Several entries share
an ``id`` (one image, several instructions), so there the prompt decides; a
pair matching more than one entry is counted as ambiguous and not joined.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from diffzoo.harness.core.errors import DataError
from diffzoo.harness.data.fingerprint import DigestCache

PAIR_COLUMNS = ("input_images", "output_images", "prompt")
TURNS_COLUMN = "data"
SIDES = ("input_images", "output_images")


class Missing(Exception):
    """An image item that cannot be used: not found, unsafe path, empty or unsupported."""


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def schema_kind(file: Path) -> str:
    """``pairs`` (single-turn) or ``turns`` (multi-turn); DataError naming what is missing otherwise."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(file)
    except (OSError, pa.ArrowException) as exc:
        raise DataError(f"{file}: not a readable parquet file ({exc})") from None
    names = set(schema.names)
    if TURNS_COLUMN in names and not names & set(PAIR_COLUMNS):
        t = schema.field(TURNS_COLUMN).type
        fields: set[str] = set()
        if (pa.types.is_list(t) or pa.types.is_large_list(t)) and pa.types.is_struct(t.value_type):
            fields = {t.value_type.field(i).name for i in range(t.value_type.num_fields)}
        if not set(PAIR_COLUMNS) <= fields:
            raise DataError(f"{file}: multi-turn column {TURNS_COLUMN!r} must be a list of structs with fields "
                            f"{', '.join(PAIR_COLUMNS)}; got {t}")  # fmt: skip
        return "turns"
    missing = [c for c in PAIR_COLUMNS if c not in names]
    if missing:
        raise DataError(f"{file}: not an ImgEdit parquet: missing column(s) {', '.join(missing)} (has "
                        f"{', '.join(schema.names)}); rows need {', '.join(PAIR_COLUMNS)}, or {TURNS_COLUMN!r} "
                        "for multi-turn rows")  # fmt: skip
    return "pairs"


def items(cell: Any) -> list[Any]:
    """An image cell as a list of items (a lone item is a list of one; null is empty)."""
    if cell is None:
        return []
    return list(cell) if isinstance(cell, (list, tuple)) else [cell]


def raw_path(item: Any) -> str:
    """The path written in an image item, or ''."""
    path = item.get("path") if isinstance(item, dict) else item
    return path if isinstance(path, str) else ""


def embedded(item: Any) -> bytes | None:
    """The encoded image held in an item, if it holds one."""
    data = item.get("bytes") if isinstance(item, dict) else item
    return bytes(data) if isinstance(data, (bytes, bytearray, memoryview)) and len(data) else None


Roots = Mapping[Path, Callable[[str], Path]]
"""Image roots, each with its :class:`.walk.StoredPaths` finder."""


def resolve(path: str, roots: Roots, where: str) -> Path:
    """The file ``path`` names below one of ``roots`` (a path written composed finds the file
    stored decomposed); never an absolute path or one with ``..``."""
    rel = PurePosixPath(path.replace("\\", "/"))
    if not path or rel.is_absolute() or ".." in rel.parts or (rel.parts and rel.parts[0].endswith(":")):
        raise Missing(f"{where}: path {path!r} is absolute or leaves the image root: not opened")
    for find in roots.values():
        if (file := find(rel.as_posix())).is_file():
            return file
    raise Missing(f"{where}: {path} not found under {', '.join(map(str, roots)) or '(no image root)'}")


class Digests:
    """sha256 of image files, memoised by (path, size, mtime_ns) in a
    :class:`~diffzoo.harness.data.fingerprint.DigestCache` named ``key`` (None: not kept)."""

    def __init__(self, key: str | None) -> None:
        self.cache = DigestCache(key) if key is not None else None

    def __call__(self, path: Path) -> str:
        st = path.stat()
        stamp = [st.st_size, st.st_mtime_ns]
        digest = self.cache.get(str(path), stamp) if self.cache is not None else None
        if digest is None:
            digest = sha256(path.read_bytes())
            if self.cache is not None:
                self.cache.put(str(path), stamp, digest)
        return digest

    def save(self) -> None:
        if self.cache is not None:
            self.cache.save()


class RowReader:
    """Random access to parquet rows (for images embedded in the file), one row group held."""

    def __init__(self) -> None:
        self._held: tuple[Path, int, Any] | None = None
        self._starts: dict[Path, list[int]] = {}

    def row(self, file: Path, row: int, columns: list[str]) -> dict[str, Any]:
        import bisect

        import pyarrow.parquet as pq

        pf = pq.ParquetFile(file)
        if file not in self._starts:
            sizes = [pf.metadata.row_group(i).num_rows for i in range(pf.num_row_groups)]
            self._starts[file] = [sum(sizes[:i]) for i in range(len(sizes))]
        starts = self._starts[file]
        rg = bisect.bisect_right(starts, row) - 1
        if self._held is None or self._held[:2] != (file, rg):
            self._held = (file, rg, pf.read_row_group(rg, columns=columns))
        return self._held[2].slice(row - starts[rg], 1).to_pylist()[0]

    def __getstate__(self) -> dict[str, Any]:
        return {"_held": None, "_starts": {}}  # worker processes read what they need


def _norm(text: str) -> str:
    return " ".join(str(text).split())


class Benchmark:
    """One ImgEdit-Bench JSON, validated, indexed by key and by the ``id``'s file name."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        try:
            raw = self.path.read_bytes()
            data = json.loads(raw)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise DataError(f"benchmark JSON {self.path}: not readable JSON ({exc})") from None
        if not isinstance(data, dict) or not data:
            raise DataError(f"benchmark JSON {self.path}: expected a non-empty object {{key: {{id, prompt, ...}}}}")
        self.digest = sha256(raw)
        self.entries: dict[str, dict[str, Any]] = {}
        self.by_name: dict[str, list[str]] = {}
        for key, entry in data.items():
            where = f"benchmark JSON {self.path}: entry {key!r}"
            if not isinstance(entry, dict):
                raise DataError(f"{where} is {type(entry).__name__}, expected an object with id and prompt")
            if not isinstance(entry.get("id"), str) or not entry["id"]:
                raise DataError(f"{where} has no 'id' (the original image's path), so no pair can join it")
            if not any(isinstance(entry.get(k), str) for k in ("prompt", "turn1")):
                raise DataError(f"{where} has neither 'prompt' nor 'turn1'")
            self.entries[str(key)] = entry
            self.by_name.setdefault(PurePosixPath(entry["id"]).name, []).append(str(key))
        self.joined: Counter = Counter()  # edit type -> pairs joined
        self.ambiguous = 0

    def _prompt(self, key: str, turn: int | None) -> str | None:
        value = self.entries[key].get("prompt" if turn is None else f"turn{turn}")
        return _norm(value) if isinstance(value, str) else None

    def join(self, out_path: str, first_input_path: str, turn: int | None, prompt: str) -> tuple[str, str] | None:
        """(edit type, prompt) of the one entry the pair joins (type ``unknown`` if it has none), else None."""

        def agrees(key: str) -> bool:
            p = self._prompt(key, turn)
            return p is not None and (not prompt or p == _norm(prompt))

        stem = PurePosixPath(out_path).stem if out_path else ""
        hits = [stem] if stem in self.entries and agrees(stem) else []
        parts = PurePosixPath(first_input_path.replace("\\", "/")).parts
        for key in self.by_name.get(parts[-1], []) if parts and not hits else []:
            want = PurePosixPath(self.entries[key]["id"]).parts
            if parts[-len(want) :] == want and agrees(key):
                hits.append(key)
        if len(hits) != 1:
            self.ambiguous += len(hits) > 1
            return None
        edit_type = str(self.entries[hits[0]].get("edit_type") or "unknown")
        self.joined[edit_type] += 1
        return edit_type, self._prompt(hits[0], turn) or ""

    def describe(self) -> dict[str, Any]:
        return {"path": str(self.path), "entries": len(self.entries), "joined": sum(self.joined.values()),
                "ambiguous": self.ambiguous, "edit_types": dict(sorted(self.joined.items()))}  # fmt: skip
