"""Per-sample metadata files beside a dataset, and which slice keys its samples really carry.

``manifest.jsonl``: one :meth:`SampleMeta.to_dict` object per line, written by
the demo dataset and ``diffzoo generate`` so that suites can filter by editor,
turn count or real/AI base.  DiffSeg30k itself ships no per-edit metadata, so
the slices suite cannot tell real from AI bases or count turns unless someone
supplies them: a sidecar (``--dataset-option metadata=FILE``) is JSON
``{id: {"base": "real"|"ai", "editors": [editor per turn], "edit_types": [...]}}``
or JSONL with one ``{"id": ..., "base": ..., "editors": [...]}`` per line;
``turns`` is ``len(editors)``.  Rows of both become :class:`SampleMeta`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from diffzoo.harness.core.errors import ConfigError, DataError
from diffzoo.harness.core.fsutil import TEXT_LIMIT, parse_json, read_regular, require_file
from diffzoo.harness.core.types import EditRecord, LabelSpace, SampleMeta

log = logging.getLogger(__name__)

MANIFEST_FILE = "manifest.jsonl"
BASES = ("real", "ai")
SLICE_KEYS = ("base", "turns", "editor", "edit_type")
"""The slice keys provenance reports, in this order."""


def data_bytes(path: Path, where: str) -> bytes:
    """The bytes of a file the data ships (:func:`.fsutil.read_regular`, at most ``TEXT_LIMIT``); one
    that cannot be read is a DataError ``<where>: not readable (why)``."""
    try:
        return read_regular(path, TEXT_LIMIT)
    except OSError as exc:
        raise DataError(f"{where}: not readable ({exc})") from None


def data_text(path: Path, where: str, *, data: bytes | None = None) -> str:
    """The UTF-8 text of a file the data ships (:func:`data_bytes`, a byte-order mark skipped as
    :func:`.fsutil.read_text` skips it), decoded from ``data`` when the caller has read its bytes (to
    hash the same bytes it parses); one that cannot be read is a DataError ``<where>: not readable (why)``."""
    raw = data_bytes(path, where) if data is None else data
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(f"{where}: not readable ({exc})") from None


def data_json(path: Path, where: str, *, unique_keys: bool = False, data: bytes | None = None) -> Any:
    """The JSON value of a file the data ships (:func:`.fsutil.parse_json`, ``unique_keys`` for a file
    a person writes), parsed from ``data`` when the caller has read its bytes (to hash the same bytes
    it parses); one that cannot be read as JSON is a DataError ``<where>: not readable JSON (why)``."""
    try:
        return parse_json(read_regular(path, TEXT_LIMIT) if data is None else data, where, unique_keys=unique_keys)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{where}: not readable JSON ({exc})") from None


def jsonl_rows(text: str, where: str) -> list[tuple[int, Any]]:
    """(line number, value) of each non-blank line of a JSON Lines text; a line that is not
    JSON is a DataError naming ``where`` and the line."""
    rows = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                rows.append((lineno, parse_json(line, where)))
            except json.JSONDecodeError as exc:
                raise DataError(f"{where}, line {lineno}: not valid JSON ({exc})") from None
    return rows


def read_manifest(path: Path, known_ids: Iterable[str]) -> dict[str, SampleMeta]:
    """Read ``manifest.jsonl``: id -> SampleMeta for the samples of ``known_ids`` (rows of
    other ids are logged and dropped, not an error).  Blank lines are skipped."""
    out: dict[str, SampleMeta] = {}
    for lineno, row in jsonl_rows(data_text(path, f"manifest {path}"), f"manifest {path}"):
        try:
            meta = SampleMeta.from_dict(row)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise DataError(
                f"manifest {path}, line {lineno}: not a sample record "
                f'({type(exc).__name__}: {exc}); expected {{"id", "base", "turns", "source"}}'
            ) from None
        if meta.id in out:
            raise DataError(f"manifest {path}, line {lineno}: id {meta.id} appears twice")
        out[meta.id] = meta
    known = set(known_ids)
    extra = [k for k in out if k not in known]
    if extra:  # none of them matching is a manifest of other ids (other data, padded ids): every sample's unknown
        log.log(logging.WARNING if len(extra) == len(out) else logging.INFO, "manifest %s: %d of its %d record(s) "
                "have no sample in the data (e.g. %s); ignored", path, len(extra), len(out),
                ", ".join(map(repr, extra[:3])))
    return {k: v for k, v in out.items() if k in known}


def _rows(path: Path) -> list[tuple[str, Any, str]]:
    """(id, row, where) for a JSON object / list or JSONL file."""
    text = data_text(path, f"metadata file {path}")
    try:  # an id given twice is refused in either form (json would keep the last row)
        data = parse_json(text, f"metadata file {path}", unique_keys=True)
    except json.JSONDecodeError:
        data = None
    if isinstance(data, dict):
        return [(str(k), v, f"metadata file {path}, id {k}") for k, v in data.items()]
    if isinstance(data, list):
        lines = [(i, row) for i, row in enumerate(data, 1)]
        what = "item"
    elif data is None:
        lines, what = jsonl_rows(text, f"metadata file {path}"), "line"
    else:
        raise DataError(f'metadata file {path}: expected {{id: {{"base", "editors"}}}} or JSONL rows')
    out = []
    for n, row in lines:
        if not isinstance(row, dict) or not isinstance(row.get("id"), (str, int)):
            raise DataError(f'metadata file {path}, {what} {n}: a row is {{"id", "base", "editors"}}')
        out.append((str(row["id"]), row, f"metadata file {path}, id {row['id']}"))
    return out


def _strings(row: dict[str, Any], field: str, where: str) -> list[str]:
    value = row.get(field)
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise DataError(f"{where}: field {field!r} must be a list of names, got {value!r}")
    return [v.strip() for v in value]


def _meta(sid: str, row: Any, where: str, editors: dict[str, str] | None) -> SampleMeta:
    if not isinstance(row, dict):
        raise DataError(f'{where}: expected {{"base": "real"|"ai", "editors": [...]}}, got {row!r}')
    base = row.get("base")
    if base not in BASES:
        raise DataError(f"{where}: field 'base' must be 'real' or 'ai', got {base!r}")
    names = _strings(row, "editors", where)
    if editors is not None:
        keys = [LabelSpace.read(n).lower() for n in names]  # read as the label space reads its names
        bad = [n for n, k in zip(names, keys) if k not in editors]
        if bad:
            raise DataError(f"{where}: field 'editors' names {', '.join(map(repr, bad))}, which the "
                            f"label map does not hold ({', '.join(sorted(set(editors.values())))})")
        names = [editors[k] for k in keys]
    types = _strings(row, "edit_types", where) if "edit_types" in row else ["unknown"] * len(names)
    if len(types) != len(names):
        raise DataError(f"{where}: field 'edit_types' has {len(types)} entries for "
                        f"{len(names)} editors; give one edit type per turn")
    turns = tuple(EditRecord(e, edit_type=t) for e, t in zip(names, types))
    return SampleMeta(sid, base=base, turns=turns, source="metadata")


def read_metadata_file(path: Path, known_ids: Iterable[str], label_space: LabelSpace) -> dict[str, SampleMeta]:
    """Read a metadata sidecar: sample id -> SampleMeta.

    Every id must be in the data; ``base`` must be ``real`` or ``ai``;
    ``editors`` a list of the label map's editors (short or paper names);
    ``edit_types`` (optional) one per editor.  Any violation is a DataError
    naming the file, the id and the field; a file of no rows (empty, ``{}``, ``[]``) is
    the wrong file given, a ConfigError.
    """
    require_file(path, "metadata file", option="metadata=")
    known = set(known_ids)
    editors: dict[str, str] | None = None  # lower-cased editor name -> label-space name; a binary space: unchecked
    if not label_space.is_binary:
        from diffzoo.harness.data.labelmaps import DIFFSEG30K_PAPER_NAMES  # paper names ("SDXL") are accepted too

        editors = {n.lower(): n for n in label_space.editors}
        editors.update({paper.lower(): short for short, paper in DIFFSEG30K_PAPER_NAMES.items()
                        if short in label_space.editors})
    out: dict[str, SampleMeta] = {}
    for sid, row, where in _rows(path):
        if sid not in known:
            raise DataError(f"{where}: no sample with this id in the data; check the ids (e.g. "
                            f"{', '.join(sorted(known)[:3])})")
        if sid in out:
            raise DataError(f"{where}: the id appears twice")
        out[sid] = _meta(sid, row, where, editors)
    if not out:  # every row must name a sample: none covered means none given
        raise ConfigError(f"metadata file {path} holds no rows, so it covers none of the {len(known)} samples; "
                          "give this data's metadata file (--dataset-option metadata=FILE)")
    missing = len(known) - len(out)
    if missing:
        log.warning("metadata file %s covers %d of %d samples; the others have base and turns "
                    "'unknown' in the slices", path, len(out), len(known))
    return out


def carried_keys(ids: Iterable[str], metas: Mapping[str, SampleMeta]) -> list[str]:
    """The :data:`SLICE_KEYS` every sample of ``ids`` really carries.

    ``base``: real or ai for every sample; ``turns``: every sample has a
    metadata row; ``editor`` / ``edit_type``: rows for every sample, at least
    one turn, and every turn names its editor / a known edit type.
    """
    found = [metas.get(i) for i in ids]
    rows = [m for m in found if m is not None]
    if not rows or len(rows) != len(found):
        return []
    turns = [t for m in rows for t in m.turns]
    have = {
        "base": all(m.base in BASES for m in rows),
        "turns": True,
        "editor": bool(turns) and all(t.editor for t in turns),
        "edit_type": bool(turns) and all(t.edit_type not in ("", "unknown") for t in turns),
    }
    return [k for k in SLICE_KEYS if have[k]]
