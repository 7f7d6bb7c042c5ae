"""Label spaces as data: the DiffSeg30k default, label files, mask value checks.

How DiffSeg30k's mask PNGs encode the eight editors is not documented
(docs/datasets.md, "Label maps": unconfirmed), so the class order is never hard-wired: it is a
:class:`LabelSpace` that a user can pass (``--labels FILE`` or a comma list),
read from a ``labels.json`` beside the data, or, as a last resort, the paper's
editor order below, with a warning that the order is unverified.  Every mask
is checked against the label space it is read with, so a wrong guess fails
loudly instead of training on mislabelled classes.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import logging
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from diffzoo.harness.core.errors import ConfigError, CorruptSampleError, DataError, not_found
from diffzoo.harness.core.runlog import warn_once
from diffzoo.harness.core.types import IGNORE_INDEX, LabelSpace

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

DIFFSEG30K_PAPER_NAMES: dict[str, str] = {
    "sd2": "SD2",
    "sd3.5": "SD3.5",
    "sdxl": "SDXL",
    "flux1": "Flux.1",
    "glide": "Glide",
    "kolors": "Kolors",
    "hunyuandit1.1": "HunyuanDiT 1.1",
    "kandinsky2.2": "Kandinsky 2.2",
}
"""Short (label-space) name -> the name the paper uses, in the paper's order."""

DIFFSEG30K_EDITORS: tuple[str, ...] = tuple(DIFFSEG30K_PAPER_NAMES)
"""The eight editors in the order the DiffSeg30k paper lists them (arXiv 2511.19111)."""

DIFFSEG30K_LABELS = LabelSpace.from_editors(DIFFSEG30K_EDITORS)
"""Default DiffSeg30k label space: background = 0, then the editors in paper order.

UNVERIFIED: the dataset does not document which mask value is which editor;
this order is the paper's listing order, a guess.  Pass your own label map if
you know the real encoding.
"""

DIFFSEG30K_LABELS_VERIFIED = False

LabelSpec = LabelSpace | str | os.PathLike | None


def default_diffseg30k_labels() -> LabelSpace:
    """The default DiffSeg30k label space; logs the 'unverified order' warning once."""
    warn_once(
        log, "default-labels",
        "DiffSeg30k: the data carries no label names (no labels.json beside it, no label map "
        "inside it, no ClassLabel feature), so diffzoo uses the default label map %s: the "
        "mask value -> editor order is the paper's listing order and is UNVERIFIED (records "
        "say verified: false). Fix: pass --labels FILE (JSON {\"names\": [\"background\", "
        "...]}, YAML, or a value,name table) with your masks' encoding.",
        ",".join(DIFFSEG30K_LABELS.names),
    )
    return DIFFSEG30K_LABELS


class GivenLabelMapError(ConfigError, DataError):
    """A label map the user gave (``--labels``, ``label_space=``) cannot be used: the user's
    own input, so a usage error (exit 2), and a DataError like every unusable label map."""


DEFAULT_SOURCE = "default (unverified)"
"""The label map source recorded when the data names no classes."""

BACKGROUND_ALIASES = ("background", "bg", "none", "unedited", "authentic", "real", "pristine", "original")
"""Names a download may give value 0; each is read as ``background``."""

LABELS_FILE = "labels.json"
"""The label map file beside the data (written by the demo dataset and ``diffzoo generate``)."""
LABEL_MAP_FILES: tuple[str, ...] = (
    LABELS_FILE,
    "label_map.json",
    "labels.yaml",
    "labels.yml",
    "label_map.yaml",
    "labels.csv",
    "labels.tsv",
    "labels.txt",
    "classes.txt",
)
"""Label map files looked for inside a download (archive root or the folder
holding the pairs), in this order of preference."""

_TABLE_SUFFIXES = (".csv", ".tsv", ".txt")


def _editor_key(name: str) -> str:
    return re.sub(r"[\s._-]", "", name.lower())


_EDITOR_KEYS = {
    _editor_key(n): short
    for short, paper in DIFFSEG30K_PAPER_NAMES.items()
    for n in (short, paper)
}


def editor_label(name: str) -> str:
    """The class name a label map gives editor ``name``: a DiffSeg30k editor's short name however it
    is spelt (``SD3.5``, ``sd35``, ``Kandinsky 2.2`` -> ``sd3.5``, ``kandinsky2.2``), else ``name``."""
    return _EDITOR_KEYS.get(_editor_key(name), name.strip())


def label_map_sha256(names: Iterable[str]) -> str:
    """sha256 (64 hex) of the label map's canonical JSON: the list of names,
    ``json.dumps(names, separators=(",", ":"), ensure_ascii=True)``."""
    blob = json.dumps([str(n) for n in names], separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(blob.encode("ascii")).hexdigest()


def names_to_space(names: Sequence[Any], where: str) -> LabelSpace:
    """Class names in value order -> LabelSpace.

    Value 0 must be background (any of :data:`BACKGROUND_ALIASES`); the
    DiffSeg30k editors' paper names (``SDXL``, ``Flux.1``, ``HunyuanDiT 1.1``)
    become their short names (``sdxl``, ``flux1``, ``hunyuandit1.1``) so that
    suites find them.
    """
    if not names or not all(isinstance(n, str) and n.strip() for n in names):
        raise DataError(f"{where}: class names must be non-empty strings, got {list(names)}")
    first = names[0].strip()
    if first.lower() not in BACKGROUND_ALIASES:
        raise DataError(
            f"{where}: value 0 is named {first!r}, but value 0 is the background (unedited "
            f"pixels); list the classes in mask-value order starting with 'background'"
        )
    try:  # the editors' rule: an empty name, the background in any case or a repeat is refused
        return LabelSpace.from_editors([editor_label(n) for n in names[1:]])
    except DataError as exc:
        raise DataError(f"{where}: {exc}") from None


def _value_names(pairs: Iterable[tuple[Any, Any]], where: str) -> list[Any]:
    """``(value, name)`` pairs -> names in value order; values must be 0..N."""
    by_value: dict[int, Any] = {}
    for value, name in pairs:
        try:
            v = int(str(value).strip())
        except ValueError:
            raise DataError(f"{where}: {value!r} is not an integer mask value") from None
        if v in by_value:
            raise DataError(f"{where}: mask value {v} is given twice")
        by_value[v] = name
    values = sorted(by_value)
    if values != list(range(len(values))):
        raise DataError(
            f"{where}: mask values must be 0..{len(values) - 1} with no gap (background 0), "
            f"got {values}"
        )
    return [by_value[v] for v in values]


def _is_int(text: Any) -> bool:
    return isinstance(text, int) and not isinstance(text, bool) or (
        isinstance(text, str) and text.strip().lstrip("-").isdigit()
    )


def _names_of(data: Any, where: str) -> list[Any]:
    """Names from a list, a ``{value: name}`` map or a ``{name: value}`` map."""
    if isinstance(data, list):
        return data
    if isinstance(data, dict) and data and all(_is_int(k) for k in data):
        return _value_names(data.items(), where)
    if isinstance(data, dict) and data and all(_is_int(v) for v in data.values()):
        return _value_names(((v, k) for k, v in data.items()), where)
    raise DataError(
        f'{where}: a label map is {{"names": ["background", ...]}}, a list of names in '
        f"mask-value order, or a value -> name map (0: background, 1: ..., in order)"
    )


def _from_table(text: str, where: str) -> list[Any]:
    """One name per line, or ``value,name`` rows (comma or tab; header and ``#`` lines skipped)."""
    delimiter = "\t" if "\t" in text else ","
    rows = [
        [c.strip() for c in row]
        for row in csv.reader(io.StringIO(text), delimiter=delimiter)
        if row and any(c.strip() for c in row) and not row[0].lstrip().startswith("#")
    ]
    if rows and len(rows[0]) == 2 and not _is_int(rows[0][0]) and all(_is_int(r[0]) for r in rows[1:]):
        rows = rows[1:]  # a header such as "value,name"
    if rows and all(len(r) == 1 for r in rows):
        return [r[0] for r in rows]
    if rows and all(len(r) == 2 for r in rows):
        return _value_names(((r[0], r[1]) for r in rows), where)
    raise DataError(f"{where}: a label table has one name per line or 'value,name' rows")


def parse_label_bytes(
    data: bytes, name: str, where: str, verified: bool = False
) -> tuple[LabelSpace, bool]:
    """Parse a label map file's bytes; the format follows ``name``'s suffix.

    ``.json`` / ``.yaml`` / ``.yml``: a list of names, ``{"names": [...] or
    {value: name}, "verified": bool}``, or a ``{value: name}`` /
    ``{name: value}`` map; ``.csv`` / ``.tsv`` / ``.txt``: one name per line
    or ``value,name`` rows.  Values must be 0..N in order (background 0).
    Returns the label space and whether its order is verified (the file's
    ``verified`` field, else ``verified``).
    """
    import yaml  # here: the suites import this module's constants, and `diffzoo list` stays light

    from diffzoo.harness.core.fsutil import parse_json, read_yaml

    suffix = Path(name).suffix.lower()
    try:
        text = data.decode("utf-8-sig")
        if suffix in _TABLE_SUFFIXES:
            return names_to_space(_from_table(text, where), where), verified
        parsed = read_yaml(text, where) if suffix in (".yaml", ".yml") else parse_json(text, where, unique_keys=True)
    except (UnicodeDecodeError, json.JSONDecodeError, yaml.YAMLError, csv.Error) as exc:
        raise DataError(f"{where} is not a readable label map ({exc})") from None
    if isinstance(parsed, dict) and "names" in parsed:
        verified = parsed.get("verified", verified)
        if not isinstance(verified, bool):  # "false" is a true value: a string must not vouch for the order
            raise DataError(f"{where}: verified must be true or false, got {verified!r}")
        parsed = parsed["names"]
    return names_to_space(_names_of(parsed, where), where), verified


def read_label_file(path: str | os.PathLike, verified: bool = False) -> tuple[LabelSpace, bool]:
    """Read a label map file (see :func:`parse_label_bytes` for the formats).

    Returns the label space and whether its order is verified: the file's
    ``verified`` field, else ``verified``.
    """
    from diffzoo.harness.core.fsutil import TEXT_LIMIT, read_regular

    p = Path(path)
    try:
        data = read_regular(p, TEXT_LIMIT)
    except FileNotFoundError:
        raise not_found(DataError(f"label file {p} does not exist")) from None
    except OSError as exc:
        raise DataError(f"label file {p} is not readable ({exc})") from None
    return parse_label_bytes(data, p.name, f"label file {p}", verified)


def names_a_file(spec: str | os.PathLike, home: Path | None = None) -> bool:
    """Whether a ``--labels`` value names a label file (then a missing file is an error, never a
    class name): a path object, a label file suffix, a path starting ``/``, ``./``, ``../`` or
    ``~``, or anything but a folder in the current folder or in ``home`` (the dataset's folder): a FIFO
    or a link to nothing there is named as what it is, never read as a class name."""
    text = os.fspath(spec)
    prefixes = ("/", "./", "../", "~", f".{os.sep}", f"..{os.sep}")
    places = [Path(text), *([home / text] if home is not None else [])]
    return (isinstance(spec, os.PathLike) or text.lower().endswith((".json", ".yaml", ".yml", *_TABLE_SUFFIXES))
            or text.startswith(prefixes) or any(os.path.lexists(p) and not p.is_dir() for p in places))


def parse_label_spec(spec: LabelSpec) -> tuple[LabelSpace, bool] | None:
    """Like :func:`load_label_space`, also returning whether the order is verified.

    A label space given explicitly by the user (object, comma list, or a file
    that does not say ``"verified": false``) counts as verified: the user
    vouched for it.  ``None`` gives ``None``.
    """
    if spec is None:
        return None
    if isinstance(spec, LabelSpace):
        return spec, True
    text = os.fspath(spec)
    try:
        if os.path.isdir(os.path.expanduser(text)):  # a folder named as it stands is never a class name
            raise DataError(f"{text} is a folder, not a label file; give a label file, or for a class of that "
                            f"name 'background,{Path(text).name}'")
        if names_a_file(spec):  # under the home folder for `~`, as the shell reads it (it leaves `--labels=~/x`)
            return read_label_file(os.path.expanduser(text), verified=True)
        if any(c in text for c in ";|"):  # a typo for the comma here; a label file may name a class so
            meant = text.translate(str.maketrans(";|", ",,"))
            raise DataError(f"names {text!r}: class names are comma-separated; did you mean {meant!r}?")
        names = [n.strip() for n in text.split(",") if n.strip()]
        if not names:
            raise DataError(f"empty label specification {text!r}; give a label file or names")
        if names[0].lower() not in BACKGROUND_ALIASES:  # "Background,sd2" names value 0; "sd2,sdxl" starts at 1
            names.insert(0, "background")
        return names_to_space(names, f"names {text!r}"), True
    except DataError as exc:
        raise GivenLabelMapError(f"--labels: {exc}") from None


@dataclass(frozen=True)
class LabelMap:
    """A label space with where it came from and whether its order is vouched for."""

    space: LabelSpace
    verified: bool
    source: str

    def provenance(self) -> dict[str, Any]:
        """``{"names", "sha256", "source", "verified"}`` (the record's ``label_map``)."""
        names = list(self.space.names)
        return {"names": names, "sha256": label_map_sha256(names), "source": self.source,
                "verified": self.verified}


def resolve_label_map(
    spec: LabelSpec,
    beside: Path | None = None,
    inner: Callable[[], Sequence[tuple[str, bytes]]] = tuple,
    class_label: tuple[str, Sequence[str]] | None = None,
) -> LabelMap | None:
    """The label map of a dataset, first found of:

    1. ``spec``: given by the user (``--labels``);
    2. ``labels.json`` in ``beside`` (the folder holding the data);
    3. a label map file inside the download: ``inner()`` gives (``"archive:<member>"`` /
       ``"folder:<path>"``, bytes) of the :data:`LABEL_MAP_FILES` found there
       (called only when 1 and 2 gave nothing);
    4. ``class_label``: (column, names) of a ``datasets`` ``ClassLabel`` feature;
    else None: none was given or found (the DiffSeg30k adapter then takes :func:`default_diffseg30k_labels`).
    """
    parsed = parse_label_spec(spec)
    if parsed is not None:
        return LabelMap(parsed[0], parsed[1], "--labels")
    beside_file = beside / LABELS_FILE if beside is not None else None
    if beside_file is not None and beside_file.is_file():
        return LabelMap(*read_label_file(beside_file), LABELS_FILE)
    found = [(where, parse_label_bytes(data, where, where, verified=True)) for where, data in inner()]
    if found:  # the first label map file inside the download; the others must agree with it
        (where, (space, verified)), *rest = found
        for other, (other_space, _) in rest:
            if other_space != space:
                raise DataError(
                    f"the data holds two label maps that disagree: {where} gives "
                    f"{', '.join(space.names)} and {other} gives {', '.join(other_space.names)}; "
                    f"remove one or pass --labels FILE"
                )
        return LabelMap(space, verified, where)
    if class_label is not None:
        column, names = class_label
        where = f"ClassLabel feature {column!r}"
        return LabelMap(names_to_space(list(names), where), True, f"ClassLabel:{column}")
    return None


def load_label_space(spec: LabelSpace | str | os.PathLike) -> LabelSpace:
    """A label space from a LabelSpace, a JSON file path, or ``"sd2,sdxl,..."``.

    In the comma form ``background`` is prepended unless it is given first.
    """
    parsed = parse_label_spec(spec)
    if parsed is None:
        raise DataError("no label space given")
    return parsed[0]


def check_mask_values(
    mask: np.ndarray, label_space: LabelSpace, sample_id: str, where: str
) -> None:
    """Raise CorruptSampleError if ``mask`` holds a value outside ``label_space``.

    Value 255 (ignore) is always allowed.  ``where`` names the mask file.
    """
    import numpy as np

    counts = np.bincount(mask.ravel(), minlength=256)
    counts[IGNORE_INDEX] = 0
    bad = np.flatnonzero(counts[label_space.num_classes :]) + label_space.num_classes
    if bad.size == 0:
        return
    shown = ", ".join(label_space.names[:6]) + (", ..." if label_space.num_classes > 6 else "")
    values = ", ".join(str(v) for v in bad[:5]) + (" ..." if bad.size > 5 else "")
    noun, verb = ("value", "is") if bad.size == 1 else ("values", "are")
    raise CorruptSampleError(
        sample_id,
        f"{where}: mask {noun} {values} {verb} not in the label map "
        f"({label_space.num_classes} classes: {shown}); pass --labels FILE if your "
        f"masks use another encoding",
        "mask-values",
    )
