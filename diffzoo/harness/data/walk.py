"""Listing a dataset folder, and the rule for symbolic links in it (docs/datasets.md, "Links").

- A link to a regular file is followed wherever it points: its content is what is hashed
  and loaded.
- A link that leads nowhere (a loop, a dangling link) or to a FIFO, socket or device is
  listed as an entry, never followed: a sample named by one is skipped as ``not-a-file``
  when loaded and hashed as unreadable (``fingerprint.UNREADABLE``), so fingerprinting and
  loading agree; one named like nothing the layout reads is ignored.
- The dataset path, and the folders a layout names or scans one level down (``Tp/``,
  ``train_copy/``, a PAPE subset...), may be links to folders anywhere, except a link to
  the folder that holds it or to one of its ancestors (a loop), or to a folder already
  listed (the same files twice).
- Below those, folder links are not followed (a link back up would loop for ever, one to
  ``/`` would walk the whole disk); a warning names them.

Nothing here raises for a link: listing never stops on one.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

from diffzoo.harness.core.errors import DataError
from diffzoo.harness.core.fsutil import MISSING, file_kind
from diffzoo.harness.core.runlog import warn_once
from diffzoo.harness.core.types import nfc

log = logging.getLogger(__name__)
T = TypeVar("T")


def canonical_name(name: str) -> str:
    """A stored file or member name as ids, fingerprints and matching read it: ``/`` for every
    folder separator (a zip made on Windows may store ``a\\b.png``) and Unicode NFC (macOS
    stores an accent decomposed, most other systems composed), so the same files give the same
    ids and fingerprint however they were stored.  ASCII names without ``\\\\`` are unchanged.
    A name that is not UTF-8 (Latin-1 bytes a listing keeps as surrogates) is a DataError: no
    id, record or fingerprint can hold it."""
    if not name.isascii():
        try:
            name.encode()
        except UnicodeEncodeError:
            shown = os.fsencode(name).decode(errors="backslashreplace")
            raise DataError(f"{shown}: a name that is not UTF-8; diffzoo's ids are UTF-8 text: rename the file "
                            "in UTF-8") from None
    return nfc(name.replace("\\", "/"))


def read_at(where: object, name: str, read: Callable[[str], str] = canonical_name) -> str:
    """``read(name)``; a name it refuses (not UTF-8) is a DataError naming ``where`` too."""
    try:
        return read(name)
    except DataError as exc:  # a name no id can hold: named with where it is
        raise DataError(f"{where}: {exc}") from None


def keyed_once(where: object, items: Iterable[tuple[str, T]], read: Callable[[str], str],
               clash: Callable[[str, str, str], str]) -> dict[str, T]:
    """``{read(name): value}`` of the (name, value) ``items``; two names read as one key are a
    DataError naming ``where`` and saying ``clash(key, first, second)`` of them, in sorted order
    (a listing's order is the file system's); a name ``read`` refuses (not UTF-8) is named with ``where``."""
    out: dict[str, T] = {}
    names: dict[str, str] = {}
    for name, value in items:
        key = read_at(where, name, read)
        if key in out:
            raise DataError(f"{where}: " + clash(key, *sorted((names[key], name))))
        out[key], names[key] = value, name
    return out


def by_canonical_name(where: object, items: Iterable[tuple[str, T]]) -> dict[str, T]:
    """``{canonical_name(name): value}`` of the (stored name, value) ``items``; two stored names
    that read as one (``a\\b.png`` and ``a/b.png``, ``é`` composed and decomposed, or one name
    twice: a zip member appended again) are a DataError naming ``where`` and both: which one is
    meant cannot be told."""
    return keyed_once(where, items, canonical_name, lambda key, first, second: (
        f"{key} is stored twice, " + ("under that one name" if first == second else
                                      f"as {first!r} and {second!r} (another folder separator or Unicode form)")
        + "; keep one of them"))


def mask_once(where: object, entries: Mapping[str, tuple[Any, T | None]], shown: Callable[[T], str]) -> set[T]:
    """The masks of the (image, mask) ``entries``, each paired once: one that two of them share
    (``x.png`` and ``x.jpg`` beside one mask) is a DataError naming ``where``, the mask (``shown``)
    and both ids (:func:`keyed_once`): which image it is of is not ours to guess."""
    masks = {sid: mask for sid, (_, mask) in entries.items() if mask is not None}
    return set(keyed_once(where, masks.items(), lambda sid: shown(masks[sid]),
                          lambda mask, first, second: f"two images for {mask}: {first} and {second}").values())


def ids_of(folder: Path, files: Iterable[Path], prefix: str = "") -> dict[str, Path]:
    """``{id: file}`` of ``files`` under ``folder``, an id being ``prefix`` + the file's POSIX
    path inside ``folder`` as :func:`canonical_name` reads it; two files whose ids read as one
    are a DataError naming ``folder`` (:func:`by_canonical_name`)."""
    return by_canonical_name(folder, ((prefix + f.relative_to(folder).as_posix(), f) for f in files))


class StoredPaths:
    """A finder of the files a data's own list names (a table, a reference CSV, a JSON list, a
    manifest): ``find(name)`` is ``root / name`` when that is there, else the stored path whose
    parts read as ``name``'s (:func:`canonical_name`: a list written with ``café`` composed finds
    the file a macOS copy stores decomposed), else ``root / name`` (missing: the caller says so,
    with :meth:`absent`). A folder is listed once, and only when a name is not there as written."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._listings: dict[Path, tuple[dict[str, str], dict[str, str]]] = {}

    def _listing(self, folder: Path) -> tuple[dict[str, str], dict[str, str]]:
        """The names stored in ``folder`` by their canonical name, and by that name casefolded (of
        two, the first in sorted order)."""
        if folder not in self._listings:
            try:
                names = os.listdir(folder)
            except OSError:  # no folder there: the name is missing
                names = []
            read = by_canonical_name(folder, ((n, n) for n in names))
            self._listings[folder] = read, {k.casefold(): n for k, n in sorted(read.items(), reverse=True)}
        return self._listings[folder]

    def __call__(self, name: str) -> Path:
        path = self.root / name
        if os.path.lexists(path):
            return path
        here = self.root
        for part in PurePosixPath(canonical_name(name)).parts:
            here = here / (part if os.path.lexists(here / part) else self._listing(here)[0].get(part, part))
        return here if os.path.lexists(here) else path

    def absent(self, name: str) -> str | None:
        """None when ``name`` is found (a FIFO or folder too: loading it names what it is); else what to
        say after naming it missing: "", or the stored name that differs from it in letter case alone as
        a hint (a name is read in its own case: a case-sensitive disk may hold both ``x.png`` and ``x.PNG``)."""
        if file_kind(self(name)) not in MISSING:
            return None
        here = self.root
        for part in PurePosixPath(canonical_name(name)).parts:
            here = here / self._listing(here)[1].get(part.casefold(), part)
        twin = here.relative_to(self.root).as_posix() if here.is_relative_to(self.root) else str(here)  # name absolute
        return f" ({twin} is there: a name is read in its own letter case)" if file_kind(here) is None else ""


def log_unused(where: object, names: Sequence[str], what: str) -> None:
    """Say (info) how many files or folders listed under ``where`` the layout does not read, and the first
    of ``names``: ``what`` they are and why (``mask(s) match no image``)."""
    if names:
        log.info("%s: %d %s (e.g. %s)", where, len(names), what, names[0])


def is_folder(entry: os.DirEntry | Path) -> bool:
    """A folder, or a link to one; a link loop or a dangling link is none (never raises)."""
    try:
        return entry.is_dir()
    except OSError:  # DirEntry.is_dir raises ELOOP where pathlib says False
        return False


def files_in(folder: Path, suffixes: tuple[str, ...]) -> list[Path]:
    """The non-hidden entries directly in ``folder`` (not below it; folders skipped) whose name ends
    in one of ``suffixes`` (lower-case) in any letter case, sorted: ``PROMPTS.CSV`` is a CSV, and a
    macOS copy's ``._prompts.csv`` (AppleDouble) or ``.DS_Store`` is no data file.  A link that
    leads nowhere is listed: whoever reads it names what it is."""
    with os.scandir(folder) as it:
        return sorted(Path(folder, e.name) for e in it
                      if not e.name.startswith(".") and e.name.lower().endswith(suffixes) and not is_folder(e))


def subfolders(folder: Path, depth: int = 1) -> list[Path]:
    """The non-hidden folders up to ``depth`` levels below ``folder`` (each level sorted by
    name), links to folders included wherever they point, except one that resolves to
    ``folder``, to a folder holding it, or to a folder already listed (a real folder is
    preferred over a link to it)."""
    home = os.path.realpath(folder)
    seen = {home}
    out: list[Path] = []
    level = [Path(folder)]
    for _ in range(depth):
        found = []
        for parent in level:
            try:  # scandir's entry type needs no stat per file: a folder of 30k images stays cheap to look at
                with os.scandir(parent) as it:
                    children = sorted(Path(parent, e.name) for e in it if not e.name.startswith(".") and is_folder(e))
            except OSError as exc:
                warn_once(log, str(parent), "%s: cannot list the folder (%s)", parent, exc)  # each adapter looks
                continue
            for p in sorted(children, key=lambda c: (c.is_symlink(), c.name)):
                real = os.path.realpath(p)
                if real in seen or home == real or home.startswith(real.rstrip(os.sep) + os.sep):  # a loop
                    log.info("%s: folder link to %s not followed (a loop, or a folder listed already)", p, real)
                    continue
                seen.add(real)
                found.append(p)
        found.sort(key=lambda p: p.as_posix())
        out += found
        level = found
    return out


def walk_files(root: Path, skip_dirs: Iterable[str] = ()) -> list[str]:
    """POSIX paths relative to ``root`` of every non-hidden entry below it that is not a
    folder (files, links to files, links that lead nowhere, FIFOs...), folder by folder in
    name order (os.walk's, top down); folders named
    in ``skip_dirs`` and folder links below ``root`` are not entered (one warning names the
    links)."""
    skip = set(skip_dirs)
    names: list[str] = []
    links: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root, onerror=lambda exc: log.warning("%s", exc)):
        rel = Path(dirpath).relative_to(root).as_posix()
        prefix = "" if rel == "." else f"{rel}/"
        kept = []
        for d in sorted(dirnames):
            if d.startswith(".") or d in skip:
                continue
            if os.path.islink(os.path.join(dirpath, d)):  # os.walk would not enter it: say so
                links.append(prefix + d)
                continue
            kept.append(d)
        dirnames[:] = kept
        names += [prefix + f for f in sorted(filenames) if not f.startswith(".")]
    if links:
        log.warning("%s: %d folder link(s) not followed (e.g. %s -> %s); diffzoo follows links to files, and to "
                    "folders only at the top of a layout (docs/datasets.md, Links)", root, len(links), links[0],
                    os.readlink(os.path.join(root, links[0])))
    return names
