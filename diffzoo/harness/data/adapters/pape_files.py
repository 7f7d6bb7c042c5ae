"""Reading PAPE's own files: manifest rows (never the builder-machine paths
they carry) and the seed-2026 split file.  See :mod:`.pape`."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from diffzoo.harness.core.errors import DataError

LANGUAGE_FIELDS = ("lang", "language")
_CJK = re.compile(r"[\u3400-\u9fff]")


def _safe_stem(value: Any, file: Path, lineno: int) -> str:
    """An ``image_id`` usable as a file-name stem inside the dataset folder."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise DataError(f"{file}, line {lineno}: field 'image_id' is {value!r}; expected a string or integer")
    text = str(value)
    if not text.strip() or text in (".", "..") or any(c in text for c in "/\\\x00") or os.path.isabs(text):
        raise DataError(
            f"{file}, line {lineno}: field 'image_id' is {text!r}, which would name a file "
            f"outside <editor>/<folder>/; expected a plain file-name stem (no '/', '\\' or '..'). "
            f"Files are only ever looked up inside the dataset folder"
        )
    return text


def _language(row: dict[str, Any], prompt: str) -> str:
    for key in LANGUAGE_FIELDS:
        if isinstance(row.get(key), str) and row[key].strip():
            return row[key].strip().lower()
    return "zh" if _CJK.search(prompt) else "en"


def read_pape_manifest(file: Path, edits: str) -> dict[str, dict[str, str]]:
    """``image_id`` -> {language: prompt of ``edits``}, rows of one image merged.

    Required per row: ``image_id`` and ``<edits>_prompt`` (a string).  Path
    fields (``source_paths``, ``export_paths``, ...) are ignored.
    """
    field = f"{edits}_prompt"
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{file}: not readable ({exc})") from None
    out: dict[str, dict[str, str]] = {}
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{file}, line {lineno}: not valid JSON ({exc})") from None
        if not isinstance(row, dict):
            raise DataError(f"{file}, line {lineno}: expected a JSON object, got {type(row).__name__}")
        for key in ("image_id", field):
            if key not in row:
                raise DataError(
                    f"{file}, line {lineno}: missing field {key!r} (each row needs 'image_id', "
                    f"'normal_prompt' and 'abnormal_prompt')"
                )
        image_id = _safe_stem(row["image_id"], file, lineno)
        prompt = row[field]
        if not isinstance(prompt, str):
            raise DataError(f"{file}, line {lineno}: field {field!r} is {prompt!r}; expected a string")
        out.setdefault(image_id, {}).setdefault(_language(row, prompt), prompt)
    if not out:
        raise DataError(f"{file}: no rows")
    return out


def read_split_json(file: Path) -> dict[str, Any]:
    """A split file: ``{split: [image ids]}`` or ``{subset: {split: [image ids]}}``."""
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"PAPE split file {file}: not readable JSON ({exc})") from None
    flat = isinstance(data, dict) and all(isinstance(v, list) for v in data.values())
    nested = isinstance(data, dict) and all(
        isinstance(v, dict) and all(isinstance(x, list) for x in v.values()) for v in data.values()
    )
    if not data or not (flat or nested):
        raise DataError(
            f'PAPE split file {file}: expected {{"train": [image ids], "val": [...], "test": [...]}} '
            f'or {{"<subset>": {{"test": [image ids], ...}}, ...}}'
        )
    seen: dict[tuple[str, str], str] = {}
    for subset, part in (data.items() if nested else [("", data)]):
        for split_name, ids in part.items():
            for i in map(str, ids):
                first = seen.setdefault((subset, i), split_name)
                if first != split_name:
                    raise DataError(
                        f"PAPE split file {file}: image id {i} is in both {first!r} and {split_name!r}"
                    )
    return data


def split_part(data: dict[str, Any], subset: str, file: Path) -> dict[str, list[Any]]:
    if subset not in data:
        raise DataError(f"PAPE split file {file}: no entry for subset {subset!r} (it has {', '.join(sorted(data))})")
    return data[subset]
