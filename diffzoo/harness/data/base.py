"""Plumbing shared by the in-tree adapters: named splits, extra authentic
images, a cached fingerprint, ``provenance`` and ``describe``; and the checks
every adapter makes while it opens its data (a path given, files that lack
their partner, subfolders named in any letter case).

A subclass fills ``self._splits`` (canonical split name -> sorted ids), and
``self.split_info`` (``{"id", "source"}``, see :mod:`.splits`) when it knows
how they were made, and implements ``_load`` and ``_content_fingerprint``.
"""

from __future__ import annotations

import csv
import logging
import os
from abc import abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, TypeVar

from diffzoo.harness.core.errors import ConfigError, DataError, not_found
from diffzoo.harness.core.fsutil import file_kind, not_regular
from diffzoo.harness.core.protocols import Dataset
from diffzoo.harness.core.runlog import warn_once
from diffzoo.harness.core.types import LabelSpace, Sample
from diffzoo.harness.data.authentic import AuthenticFolder
from diffzoo.harness.data.fingerprint import combine, counting_orientation
from diffzoo.harness.data.imageio import IMAGE_EXTENSIONS, is_image_file
from diffzoo.harness.data.labelmaps import LabelMap, label_map_sha256
from diffzoo.harness.data.splits import CANONICAL_SPLITS, canonical_split, one_split, own_splits, with_extra_authentic
from diffzoo.harness.data.walk import canonical_name, log_unused, read_at

log = logging.getLogger(__name__)
T = TypeVar("T")


def require_path(path: str | os.PathLike | None, adapter: str, *, exists: bool = True) -> Path:
    """The dataset path ``path`` as a Path: a clear error instead of a TypeError when a registry
    calls ``adapter(path=None)``, and (``exists``) for a path that is not there."""
    if path is None:
        raise DataError(f"{adapter} needs a dataset path (--dataset PATH); see docs/datasets.md")
    if exists and not Path(os.fspath(path)).exists():
        raise not_found(DataError(f"dataset path {path} does not exist"))
    return Path(path)


def option_places(value: str | os.PathLike, home: Path | None) -> tuple[list[Path], list[Path]]:
    """Where a path-valued option's ``value`` is looked for (:func:`option_path`'s rule), and
    those of them that hold something (a broken link too: it is named, never looked past)."""
    path = Path(os.path.expanduser(os.fspath(value)))
    # "." from the dataset folder is the dataset itself, never what an option names: the current folder
    places = [path] if path.is_absolute() or home is None or path == Path() else [path, home / path]
    return places, [p for p in places if os.path.lexists(p)]


def option_path(value: str | os.PathLike, home: Path | None, option: str) -> Path:
    """The file or folder a path-valued dataset option names (``split_file=``, ``gt_dir=``, ...;
    docs/datasets.md, "Paths in dataset options"): an absolute path (or ``~/...``) as given; a
    relative one from the current folder or from the dataset's folder ``home``, whichever holds
    it, so the same option names the same file from any folder the run is started in (``.``: the
    current folder).  Held by both as different things, or by neither: a DataError naming both
    places."""
    places, there = option_places(value, home)
    if len(there) == 2 and os.path.realpath(there[0]) != os.path.realpath(there[1]):
        raise DataError(f"{option}={value} names both {there[0].absolute()} (from the current folder) and "
                        f"{there[1].absolute()} (from the dataset folder); give the absolute path of the one meant")
    if not there:
        where = " or ".join(str(p.absolute()) for p in places)
        raise not_found(DataError(f"{option}={value} does not exist (looked for {where})"))
    return there[-1]


def folder_name(path: str | os.PathLike) -> str:
    """The name of the folder ``path`` names however it is written (``.``, ``..``, ``ds/``): a
    dataset's default name, never ``''`` or ``..``."""
    return Path(os.path.abspath(path)).name


def masks_by_stem(where: object, pairs: Iterable[tuple[str, T]], shown: Callable[[T], str] = str) -> dict[str, T]:
    """``{stem: mask}`` of the (stem, mask) ``pairs``, each stem read by :func:`.walk.canonical_name`
    (Unicode NFC: a mask stored decomposed pairs with an image stored composed), so an image's stem
    is looked up as ``canonical_name(stem)``; a second mask for one stem is a DataError naming
    ``where`` and both masks (``shown``): which of the two is the ground truth is not ours to guess."""
    masks: dict[str, T] = {}
    for s, mask in pairs:
        stem = read_at(where, s)
        if stem in masks:
            first, second, why = shown(masks[stem]), shown(mask), ""
            if canonical_name(first) == canonical_name(second):  # names that print alike are quoted and told apart
                first, second, why = repr(first), repr(second), " (another folder separator or Unicode form)"
            raise DataError(f"{where}: two masks for {stem}: {first} and {second}{why}")
        masks[stem] = mask
    return masks


def listed_once(seen: dict[str, tuple[str, str]], key: str, where: object, at: str, what: str, as_: str,
                rule: str) -> None:
    """Record the file ``key`` a data's own list names at ``at`` (``item 3``, ``line 4``) as ``as_``; one
    already recorded is a DataError naming ``where``, ``what`` and where it was listed first, and
    saying ``rule``: one file read for two entries would score one against the other's edit."""
    if key in seen:
        first, before = seen[key]
        raise DataError(f"{where}: {at}: {what} is already listed on {first} (as {before}); {rule}")
    seen[key] = (at, as_)


def files_by_stem(folder: Path, files: Iterable[Path]) -> dict[str, Path]:
    """``files`` of ``folder`` by their stem read by :func:`.walk.canonical_name`, as every adapter
    pairing by name reads a mask's name: its suffix in any letter case, its stem in either Unicode
    form but in its own letter case (a case-sensitive disk holds ``a.png`` and ``A.png``, two
    files); two for one stem are refused (:func:`masks_by_stem`)."""
    return masks_by_stem(folder, ((p.stem, p) for p in files), lambda p: p.name)


def report_unpaired(where: str, missing: list[str], what: str, skip: bool, *more: tuple[list[str], str]) -> None:
    """Refuse the data when files lack their partner (``missing``, ``what`` they are, the first five
    named; and each of ``more``'s, such a pair of its own), or, with ``skip`` (an adapter's
    ``skip_unpaired=True``), warn and go on without them."""
    halves = [(m, w) for m, w in ((missing, what), *more) if m]
    if not halves:
        return
    msg = f"{where}: " + " and ".join(f"{len(m)} {w} (e.g. {', '.join(m[:5])})" for m, w in halves)
    if not skip:
        raise DataError(msg + "; `--dataset-option skip_unpaired=true` skips them")
    log.warning("%s; skipping them", msg)


def warn_unread_images(where: object, unused: Sequence[str], what: str, files: Iterable[tuple[str, str]],
                       has_mask: Callable[[str], bool]) -> None:
    """Log the ``unused`` masks of ``where`` (:func:`.walk.log_unused`, ``what`` they are); with one, first
    warn, naming the first, about the ``files`` (name shown, stem as its mask is keyed; a lazy iterable, read
    only then) whose suffix is none of :data:`.imageio.IMAGE_EXTENSIONS` yet whose stem ``has_mask``: an
    image stored under a suffix never read (``x.jfif``, ``x.heic``) beside its mask, the copy scored on
    fewer images than it holds."""
    if unread := [shown for shown, stem in files if not is_image_file(shown) and has_mask(stem)] if unused else []:
        log.warning("%s: %d image(s) with a mask here are not read, their suffix being none of %s (e.g. %s); "
                    "convert them to one of those to score them", where, len(unread), ", ".join(IMAGE_EXTENSIONS),
                    unread[0])
    log_unused(where, unused, what)


def relative_cell(value: str, where: str, folder: str, rule: str) -> str:
    """``value``, a path written in the data's own list, as a normalised relative POSIX
    path (``a/./b`` -> ``a/b``) that stays inside the folder; the errors name what it
    must be relative to (``folder``) and how such paths are written (``rule``)."""
    value = value.strip()
    if not value:
        raise DataError(f"{where}: empty cell; expected a path relative to {folder}")
    posix = PurePosixPath(value.replace("\\", "/"))
    if PureWindowsPath(value).anchor or posix.is_absolute() or ".." in posix.parts:
        raise DataError(f"{where}: path {value!r} leaves the dataset folder; {rule}, without '..'")
    return posix.as_posix()


def read_csv(
    path: Path, needed: Sequence[str], *, delimiter: str = ",", lower: bool = False, what: str = "CSV"
) -> tuple[list[str], list[tuple[int, dict[str, Any]]] | None]:
    """The header of a UTF-8 CSV file (a byte-order mark skipped), its cells stripped (and lower-cased
    with ``lower``), and (line, row) per data row; rows None, read no further, when the header lacks
    one of ``needed``.  A file that cannot be read as such (``what``, in the error), an empty one, or a
    row with more fields than the header or without a cell of ``needed``, is a DataError; a path that
    is not a regular file (a FIFO would block the reader for ever, a link to nothing) a FileRefused."""
    if (kind := file_kind(path)) is not None:
        raise not_regular(path, kind)
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            # a line of only spaces is an empty line, which csv skips; the lines after it keep their numbers
            reader = csv.DictReader((line if line.strip() else "\n" for line in f), delimiter=delimiter)
            while reader.fieldnames == []:  # empty lines before the header are skipped as those between rows are
                reader.fieldnames = None  # None: the next line is read as the header
            fields = [(h or "").strip() for h in reader.fieldnames or []]
            reader.fieldnames = fields = [h.lower() for h in fields] if lower else fields
            if not fields:  # a download cut short, never a table of no columns
                raise DataError(f"{path}: empty {what} file (no header line); expected the columns {','.join(needed)}")
            if not set(needed) <= set(fields):
                return fields, None
            rows = [(reader.line_num, row) for row in reader]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise DataError(f"{path}: not a readable UTF-8 {what} file ({exc})") from None
    for line, row in rows:
        if None in row or any(row[c] is None for c in needed):
            raise DataError(f"{path}: line {line} has {'more' if None in row else 'fewer'} fields than "
                            f"the header {','.join(fields)[:120]}")
    return fields, rows


def csv_table(
    path: Path, needed: Sequence[str], expected: str, each_row: str, *, delimiter: str = ",",
    lower: bool = False, what: str = "CSV",
) -> list[tuple[int, dict[str, Any]]]:
    """:func:`read_csv`'s rows of a table that must hold ``needed`` (else a DataError naming the
    missing columns and what was ``expected``) and a row (else one saying what ``each_row`` is)."""
    fields, rows = read_csv(path, needed, delimiter=delimiter, lower=lower, what=what)
    if rows is None:
        missing = [c for c in needed if c not in fields]
        raise DataError(f"{path}: missing column(s) {', '.join(missing)}; expected {expected} "
                        f"(found: {','.join(fields)[:120] or 'nothing'})")
    if not rows:
        raise DataError(f"{path}: no rows; expected one row per {each_row}")
    return rows


def sniff_quietly(
    check: Callable[[Path], bool],
    path: str | os.PathLike,
    errors: tuple[type[Exception], ...] = (OSError, DataError),
) -> bool:
    """``check(Path(path))`` for an adapter's ``sniff``: a path that cannot be read
    while looking (one of ``errors``) is not recognised, never an error."""
    try:
        return check(Path(path))
    except errors:
        return False


def one_name(root: Path, names: list[str], what: str) -> str | None:
    """The one of ``names`` (``root``'s children, equal but for letter case), None for none; two are
    refused naming both: which is meant cannot be told, and a listing's order would pick one unsaid."""
    if len(names) > 1:
        raise DataError(f"{root}: {' and '.join(names)} are both {what}, in another letter case; keep one of them")
    return names[0] if names else None


def empty_split(location: object, holds: str, split: str) -> DataError:
    """The refusal of a split's folder or archive that holds none of its data (``holds`` says what it
    should): opened without it, the dataset would lack that split unsaid."""
    return DataError(f"{location}: holds no {holds}; the dataset would have no {split} split (a download or "
                     "extraction cut short?): get it again, or move it away")


def child_dir(root: Path, name: str, without: str | None = None) -> Path | None:
    """The subfolder of ``root`` called ``name``, any letter case.  ``without``: the folder is optional,
    and what the layout is read as without it; a file of that name is warned about (never passed over
    unsaid), and so is no folder where ``without`` says something."""
    if not root.is_dir():
        return None
    try:
        children = [p for p in root.iterdir() if p.name.lower() == name.lower()]  # name first: no stat per file
    except OSError as exc:
        raise DataError(f"{root}: cannot list the folder ({exc})") from None
    folder = one_name(root, sorted(p.name for p in children if p.is_dir()), f"the {name}/ folder")
    found = root / folder if folder else None
    if found is None and without is not None and (children or without):
        what = f"{children[0].name} is a file where a folder is expected" if children else f"no {name}/ folder"
        log.warning("%s: %s; %s", root, what, without or "read without it")
    return found


def name_list(value: Sequence[str] | str | None) -> list[str] | None:
    """Names from a list or a comma-separated string (an adapter option given
    on the command line), stripped, empty ones dropped; None stays None."""
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else list(value)
    return [str(v).strip() for v in items if str(v).strip()]


def not_a_choice(adapter: str, option: str, value: object, valid: Iterable[str],
                 unknown: Sequence[str] | None = None) -> ConfigError:
    """The refusal of a dataset option given a value outside its fixed choices, one wording for every
    adapter: ``ADAPTER option='value' is not one of a, b``; of a list option, the ``unknown`` names
    among those given (``ADAPTER option='x,a': x is not one of a, b``)."""
    named = "" if unknown is None else f": {', '.join(unknown) or 'nothing'}"
    return ConfigError(f"{adapter} {option}={value!r}{named} is not one of {', '.join(valid)}")


def chosen_names(
    value: Sequence[str] | str | None, valid: Sequence[str], refuse: Callable[[list[str]], Exception],
    read: Callable[[str], str] = str,
) -> list[str]:
    """The names a list option chose (``value``, as :func:`name_list` reads it, each name as ``read``
    reads it), once each in the order given; every one of ``valid`` when the option is not given.
    Names not in ``valid``, or none at all, raise ``refuse(those names)``."""
    names = name_list(value)
    if names is None:
        return list(valid)
    names = list(dict.fromkeys(read(n) for n in names))
    unknown = [n for n in names if n not in valid]
    if unknown or not names:
        raise refuse(unknown)
    return names


class SplitDataset(Dataset):
    """A :class:`Dataset` whose splits are lists of ids held in memory."""

    source_kind = ""
    labels_verified = True
    label_source = "dataset"
    """Where the label map came from (``labels.json``, ``archive:labels.yaml``, ...)."""

    def __init__(self, name: str, label_space: LabelSpace) -> None:
        self.name = name
        self.label_space = label_space
        self._splits: dict[str, list[str]] = {}
        self.split_info: dict[str, str] | None = None
        self._authentic: AuthenticFolder | None = None
        self._fingerprint: str | None = None
        self.exif_orientation: int | None = None
        """Files carrying an EXIF orientation tag other than 1; counted by :meth:`fingerprint`."""
        self.path = ""

    # -- splits -------------------------------------------------------------
    def splits(self) -> list[str]:
        rank = {s: i for i, s in enumerate(CANONICAL_SPLITS)}  # canonical splits first, in their order
        return sorted(self._splits, key=lambda s: (rank.get(s, len(rank)), s))

    def ids(self, split: str) -> list[str]:
        key = canonical_split(split)
        if key not in self._splits:
            raise DataError(
                f"dataset {self.name} has no split {split!r}; splits: {', '.join(self.splits())}"
            )
        return list(self._splits[key])

    def add_authentic(self, folder: AuthenticFolder) -> None:
        """Add ``folder``'s images (all-zero masks) to ``train``, the split :meth:`provenance` names them in."""
        self._splits = folder.merge_into(self._splits, "train", self.name)
        self._authentic = folder
        self._fingerprint = None

    def _split_by(self, split: str | None, ids: Iterable[str],
                  scheme: Callable[[], tuple[dict[str, list[str]], dict[str, str]]]) -> None:
        """``split`` (an adapter's ``split=NAME``): every sample (``ids``) in that one split; else
        the splits and their provenance ``scheme()`` gives (read only then)."""
        self._splits, self.split_info = one_split(split, ids) if split is not None else scheme()

    # -- samples ------------------------------------------------------------
    def load(self, sample_id: str) -> Sample:
        if self._authentic is not None and self._authentic.owns(sample_id):
            return self._authentic.load(sample_id)
        return self._load(sample_id)

    @abstractmethod
    def _load(self, sample_id: str) -> Sample: ...

    # -- identity -----------------------------------------------------------
    @abstractmethod
    def _content_fingerprint(self) -> str:
        """Fingerprint of the images and masks (and sidecar metadata) only."""

    def fingerprint(self) -> str:
        """Content + extra authentic images + the label map's sha256 + the split assignment.

        The split assignment is part of it so that a checkpoint cached for
        "train" is never reused after ``val_fraction``, the seed or
        ``splits.json`` moved samples between train and val.
        """
        if self._fingerprint is None:
            with counting_orientation() as oriented:  # the files' headers, read once with their digests
                content = self._content_fingerprint()
                authentic = self._authentic.fingerprint() if self._authentic is not None else None
            self._fingerprint = combine(
                type(self).__name__,
                content,
                authentic,
                {"label_map_sha256": label_map_sha256(self.label_space.names)},
                {k: self._splits[k] for k in sorted(self._splits)},
            )
            self.exif_orientation = len(oriented)
            if oriented:  # one warning per dataset content (per process)
                warn_once(log, f"{self.path}:{self._fingerprint}", "%d image file(s) of %s carry an EXIF orientation "
                          "tag (e.g. %s); diffzoo scores the stored pixels, not the rotated view, for images and masks "
                          "alike: a mask drawn on the displayed view is misaligned, and a reader that applies the tag "
                          "(OpenCV's imread) sees other pixels (docs/datasets.md, EXIF orientation)", len(oriented),
                          self.name, oriented[0])
        return self._fingerprint

    def _metadata_provenance(self) -> dict[str, Any]:
        """``{"source", "keys"}`` of per-sample metadata; adapters that read some override it."""
        return {"source": None, "keys": []}

    def provenance(self) -> dict[str, Any]:
        """The label map, split and metadata the dataset's numbers are made under:

        ``{"label_map": {"names", "sha256", "source", "verified"},
        "split": {"id", "source"}, "metadata": {"source", "keys"}}``.
        Extra authentic images are named in ``split.source`` (they change
        train, never val, so the split id stays).
        """
        info = dict(self.split_info or own_splits(type(self).__name__))
        if self._authentic is not None:
            info = with_extra_authentic(info, "train", len(self._authentic.ids()), folder_name(self._authentic.root))
        label_map = LabelMap(self.label_space, bool(self.labels_verified), self.label_source)
        return {"label_map": label_map.provenance(), "split": info,
                "metadata": self._metadata_provenance()}

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "source_kind": self.source_kind,
            "path": self.path,
            "splits": {s: len(self._splits[s]) for s in self.splits()},
            "label_space": list(self.label_space.names),
            "labels_verified": self.labels_verified,
            "extra_authentic": len(self._authentic.ids()) if self._authentic else 0,
            "provenance": self.provenance(),
            **({} if self.exif_orientation is None else {"exif_orientation": self.exif_orientation}),
        }

    def _unknown(self, sample_id: str) -> DataError:
        return DataError(f"dataset {self.name} has no sample {sample_id!r}")

    def _lookup(self, table: Mapping[str, T], sample_id: str) -> T:
        """``table[sample_id]``; an id the dataset does not hold is a DataError naming it."""
        try:
            return table[sample_id]
        except KeyError:
            raise self._unknown(sample_id) from None
