"""Where image/mask files come from: a zip, a folder, or ``datasets``.

Each source lists its sample ids at open time (names only, nothing decoded)
and hands back the encoded image and mask of one id on demand, so opening the
21 GB hub zip costs one read of its central directory.  Decoding and checks
happen in the adapter (:mod:`.adapters.diffseg30k`), the same for every source.

:class:`ZipMembers` and :class:`FolderMembers` are the layout-free part: the
files of one zip or folder by POSIX name relative to it, read on demand and
hashed for fingerprints, so that an adapter whose download is a set of zips
(DEAL-300K) reads the zips and their extracted folders alike.
"""

from __future__ import annotations

import logging
import os
import re
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from diffzoo.harness.core.errors import CorruptSampleError, DataError
from diffzoo.harness.core.fsutil import file_kind
from diffzoo.harness.data.base import report_unpaired, require_path
from diffzoo.harness.data.fingerprint import file_digests, pair_fingerprint, zip_digests
from diffzoo.harness.data.hfsource import HFSource, Ref, is_hub_id, looks_like_hf_dir
from diffzoo.harness.data.labelmaps import LABEL_MAP_FILES
from diffzoo.harness.data.walk import by_canonical_name, canonical_name, is_folder, subfolders, walk_files

PAIR_RE = re.compile(
    r"^(?P<id>[^/]+)\.(?P<kind>image|mask)\.(?:png|jpe?g|webp|tiff?|bmp)$", re.IGNORECASE
)
"""``<id>.image.png`` / ``<id>.mask.png`` (DiffSeg30k's member names)."""

log = logging.getLogger(__name__)

LAYOUT_HELP = (
    "expected DiffSeg30k pairs <id>.image.png + <id>.mask.png in the folder or a subfolder "
    "such as train_copy/, the hub's train.zip, or a parquet/arrow/save_to_disk dataset "
    "with image and mask columns"
)


_DRIVE = re.compile(r"^[A-Za-z]:")


def unsafe_member(name: str) -> bool:
    """A member name that would leave the archive's folder when extracted:
    a ``..`` component (``/`` or ``\\`` separated), an absolute path or a drive letter."""
    parts = re.split(r"[\\/]", name)
    return name.startswith(("/", "\\")) or bool(_DRIVE.match(name)) or ".." in parts


def open_zip(path: Path) -> zipfile.ZipFile:
    """Open ``path`` as a zip; an empty, truncated or non-zip file, or one of encrypted members
    (each sample would be skipped as corrupt), is a DataError saying which."""
    kind = file_kind(path)
    if kind is not None:  # a FIFO would block the reader for ever
        raise DataError(f"{path} is {kind}, not a zip file")
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError as exc:
        raise DataError(f"{path} cannot be read ({exc})") from None
    try:
        zf = zipfile.ZipFile(path)
        if locked := [i.filename for i in zf.infolist() if i.flag_bits & 0x1]:  # bit 0: the member is encrypted
            zf.close()
            raise DataError(f"{path}: {len(locked)} member(s) are encrypted (e.g. {locked[0]!r}); diffzoo reads no "
                            "password: extract the archive with its password and give the folder")
        return zf
    except DataError:
        raise
    except Exception as exc:  # BadZipFile, and ValueError/EOFError/... for odd headers
        if size == 0:
            what = "the file is empty (0 bytes); the download or copy did not finish"
        elif head.startswith(b"PK"):
            what = (
                f"a truncated or damaged zip archive ({size:,} bytes; {exc}): its central "
                f"directory at the end of the file is missing or unreadable, usually because the "
                f"download or copy was cut short"
            )
        else:
            what = f"not a zip archive at all (it starts with {head!r}; {exc})"
        raise DataError(
            f"{path} is not a readable zip file: {what}. Download or copy it again, or pass the "
            f"folder it was extracted to"
        ) from None


def posix_names(zf: zipfile.ZipFile) -> list[str]:
    """The archive's member names as ids read them (:func:`.walk.canonical_name`)."""
    return [canonical_name(n) for n in zf.namelist()]


def check_member_names(path: Path, names: Iterable[str]) -> None:
    """Refuse the whole archive if any member name is unsafe (see :func:`unsafe_member`)."""
    bad = [n for n in names if unsafe_member(n)]
    if bad:
        shown = ", ".join(repr(n) for n in bad[:5]) + (" ..." if len(bad) > 5 else "")
        raise DataError(
            f"{path}: refusing the archive: {len(bad)} member name(s) point outside it "
            f"('..' components, absolute paths or drive letters): {shown}. diffzoo reads no "
            f"archive holding such names; re-create it with relative member names"
        )


def _is_junk(member: str) -> bool:
    base = member.rsplit("/", 1)[-1]
    return base.startswith("._") or member.startswith("__MACOSX/") or "/__MACOSX/" in member


def pair_files(names: Iterable[str], where: str, skip_unpaired: bool) -> dict[str, tuple[str, str]]:
    """Group ``.../<id>.image.png`` and ``.../<id>.mask.png`` names by id.

    An id with only an image or only a mask is an error naming the first few
    (or, with ``skip_unpaired``, dropped with a warning); so is an id that
    appears in two folders.
    """
    found: dict[str, dict[str, str]] = {}
    for name in names:
        m = PAIR_RE.match(name.rsplit("/", 1)[-1])
        if m is None or _is_junk(name):
            continue
        slot = found.setdefault(m["id"], {})
        kind = m["kind"].lower()
        if kind in slot:
            raise DataError(f"{where}: sample id {m['id']} appears twice: {slot[kind]} and {name}")
        slot[kind] = name
    no_mask = sorted(k for k, v in found.items() if "mask" not in v)
    no_image = sorted(k for k, v in found.items() if "image" not in v)
    report_unpaired(where, no_mask, "image(s) have no <id>.mask.png", skip_unpaired,
                    (no_image, "mask(s) have no <id>.image.png"))
    return {k: (v["image"], v["mask"]) for k, v in found.items() if len(v) == 2}


MAX_LABEL_FILE_BYTES = 1 << 20
"""A label map file inside the data larger than this is refused (it is not one)."""


def label_members(names: Iterable[str], pairs: dict[str, tuple[str, str]]) -> list[str]:
    """Names (``/``-separated) of :data:`LABEL_MAP_FILES` at the root or in a
    folder that holds pairs, in the order they are preferred."""
    dirs = {""} | {n.rpartition("/")[0] for pair in pairs.values() for n in pair}
    found = [
        n for n in names
        if n.rsplit("/", 1)[-1] in LABEL_MAP_FILES and n.rpartition("/")[0] in dirs and not _is_junk(n)
    ]
    # the archive root / top folder first, then by LABEL_MAP_FILES order
    return sorted(found, key=lambda n: (n.count("/"), LABEL_MAP_FILES.index(n.rsplit("/", 1)[-1]), n))


def _check_label_size(size: int, where: str) -> None:
    if size > MAX_LABEL_FILE_BYTES:
        raise DataError(
            f"{where}: {size:,} bytes is too large for a label map file (at most "
            f"{MAX_LABEL_FILE_BYTES:,}); rename it or pass --labels FILE"
        )


def folder_label_files(root: Path, pairs: dict[str, tuple[str, str]]) -> list[tuple[str, bytes]]:
    """``("folder:<path>", bytes)`` of the label map files in ``root`` and its pair folders."""
    names = []
    for d in {""} | {rel.rpartition("/")[0] for pair in pairs.values() for rel in pair}:
        names += [f"{d}/{n}".lstrip("/") for n in LABEL_MAP_FILES if (root / d / n).is_file()]
    out = []
    for rel in label_members(names, pairs):
        where = f"folder:{rel}"
        _check_label_size((root / rel).stat().st_size, where)
        try:
            out.append((where, (root / rel).read_bytes()))
        except OSError as exc:
            raise DataError(f"{root / rel}: label map file cannot be read ({exc})") from None
    return out


class ZipMembers:
    """The files of a zip, by member name, read straight from it (no extraction).

    Opening reads the central directory once and refuses the whole archive if a
    member name would leave it (:func:`check_member_names`); ``names`` are the
    files, without folders, ``__MACOSX/`` and ``._`` entries, as ids read them
    (:func:`.walk.by_canonical_name`: one name stored twice is refused).  The archive is
    reopened in each process (a ZipFile shares its file offset with forked
    children), so the object can go to loader workers.
    """

    kind = "zip"

    def __init__(self, path: Path) -> None:
        self.path = path
        self.location = str(path)
        self._zf: zipfile.ZipFile | None = None
        self._pid = -1
        stored = self.zip().namelist()
        check_member_names(path, stored)
        self._stored = by_canonical_name(path, ((n, n) for n in stored if not (
            n.endswith(("/", "\\")) or _is_junk(canonical_name(n)))))  # the name read -> the member's name as stored
        self.names = list(self._stored)

    def zip(self) -> zipfile.ZipFile:
        if self._zf is None or self._pid != os.getpid():
            self._zf = open_zip(self.path)
            self._pid = os.getpid()
        return self._zf

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_zf": None, "_pid": -1}

    def read(self, member: str, sample_id: str) -> Ref:
        """The member's bytes and its name in messages (``train.zip:a/b.png``)."""
        name = f"{self.path.name}:{member}"
        try:
            return self.zip().read(self._stored[member]), name
        except Exception as exc:  # BadZipFile, zlib.error, EOFError, NotImplementedError (method), ...
            raise CorruptSampleError(sample_id, f"{name}: corrupt zip member ({exc})") from None

    def digests(self, members: Iterable[str]) -> dict[str, str]:
        """sha256 of each member's decompressed bytes (cached, see :mod:`.fingerprint`)."""
        names = list(members)
        digests = zip_digests(self.path, self.zip(), [self._stored[n] for n in names])
        return {n: digests[self._stored[n]] for n in names}

    def label_files(self, pairs: dict[str, tuple[str, str]]) -> list[tuple[str, bytes]]:
        """``("archive:<member>", bytes)`` of the label map files inside the zip."""
        out = []
        for member in label_members(self.names, pairs):
            where = f"archive:{member}"
            _check_label_size(self.zip().getinfo(self._stored[member]).file_size, where)
            try:
                out.append((where, self.zip().read(self._stored[member])))
            except Exception as exc:  # BadZipFile, zlib.error, ...
                raise DataError(f"{self.path}: {where} cannot be read ({exc})") from None
        return out


class FolderMembers:
    """The files under a folder (recursively, hidden entries skipped; or the ``names`` given),
    by POSIX path relative to it as ids read it (:func:`.walk.by_canonical_name`: one name stored
    twice is refused); links as :mod:`.walk` says (a link loop is listed, a folder link below
    ``root`` is not entered)."""

    kind = "folder"

    def __init__(self, root: Path, names: list[str] | None = None) -> None:
        self.path = root
        self.location = str(root)
        stored = list(names) if names is not None else walk_files(root, skip_dirs=("__MACOSX",))
        self._stored = by_canonical_name(root, ((n, n) for n in stored))  # the name read -> the name on disk
        self.names = list(self._stored)

    def read(self, name: str, sample_id: str) -> Ref:
        path = self.path / self._stored[name]
        return path, str(path)

    def digests(self, names: Iterable[str]) -> dict[str, str]:
        """sha256 of each file (cached, see :mod:`.fingerprint`)."""
        files = [self.path / self._stored[n] for n in names]
        return {rel: sha for rel, (_, sha) in file_digests(self.path, files).items()}

    def label_files(self, pairs: dict[str, tuple[str, str]]) -> list[tuple[str, bytes]]:
        return folder_label_files(self.path, pairs)


def _pair_names(root: Path) -> Iterator[str]:
    """Pair file names in ``root`` and its non-hidden immediate subfolders (``train_copy/``...;
    a link to a folder too, unless it loops back or repeats one: :func:`.walk.subfolders`),
    relative to it (FIFOs, devices and links that lead nowhere too: loading names what they
    are, kind not-a-file); lazily, so that a look for one stops at the first."""
    for d in [root, *subfolders(root)]:
        with os.scandir(d) as it:
            yield from (Path(d, e.name).relative_to(root).as_posix() for e in it
                        if PAIR_RE.match(e.name) and not is_folder(e))


def folder_has_pairs(root: Path) -> bool:
    return next(_pair_names(root), None) is not None


class PairSource:
    """DiffSeg30k's pairs among the files of a zip (read straight from it, reopened per
    process) or of an extracted folder (the pairs in it or one level below)."""

    def __init__(self, members: ZipMembers | FolderMembers, skip_unpaired: bool, empty: str) -> None:
        self.members, self.kind, self.location = members, members.kind, members.location
        self.sidecar_dir: Path | None = members.path.parent if members.kind == "zip" else members.path
        self.pairs = pair_files(members.names, members.location, skip_unpaired)
        if not self.pairs:
            raise DataError(f"{members.location}: {empty}; {LAYOUT_HELP}")

    def native_splits(self) -> dict[str, list[str]]:
        return {"train": sorted(self.pairs)}

    def label_files(self) -> list[tuple[str, bytes]]:
        """The label map files inside the zip (``archive:<member>``) or in the folder and the
        folders holding pairs (``folder:<path>``)."""
        return self.members.label_files(self.pairs)

    def read_pair(self, sample_id: str) -> tuple[Ref, Ref]:
        image, mask = self.pairs[sample_id]
        return self.members.read(image, sample_id), self.members.read(mask, sample_id)

    def read_mask(self, sample_id: str) -> Ref:
        return self.members.read(self.pairs[sample_id][1], sample_id)

    def fingerprint(self) -> str:
        return pair_fingerprint(self.pairs, self.members.digests(n for pair in self.pairs.values() for n in pair))


def inner_label_files(source: Any) -> list[tuple[str, bytes]]:
    """The label map files a source carries: inside its zip, in its folder (and
    the folders holding pairs), or in a ``datasets`` source's folder."""
    if hasattr(source, "label_files"):
        return source.label_files()
    if source.sidecar_dir is not None and source.sidecar_dir.is_dir():
        return folder_label_files(source.sidecar_dir, {})
    return []


def open_source(path: str | os.PathLike | None, skip_unpaired: bool = False) -> Any:
    """The source for ``path``: zip, folder, or a ``datasets`` source (hub id, files); no path, or
    a local one that is not there, is refused as :func:`.base.require_path` refuses it."""
    if isinstance(path, str) and is_hub_id(path) and not Path(path).exists():
        return HFSource(path)
    p = require_path(path, "DiffSeg30k")
    if p.is_file():
        suffix = p.suffix.lower()
        if suffix == ".zip":
            return PairSource(ZipMembers(p), skip_unpaired, "the zip holds no image/mask pairs")
        if suffix in (".parquet", ".arrow"):
            return HFSource(p)
        raise DataError(
            f"{p}: not a DiffSeg30k source (a .zip, .parquet or .arrow file); {LAYOUT_HELP}"
        )
    if folder_has_pairs(p):
        return PairSource(FolderMembers(p, list(_pair_names(p))), skip_unpaired, "no image/mask pairs found")
    if looks_like_hf_dir(p):
        return HFSource(p)
    raise DataError(f"{p}: no DiffSeg30k data found; {LAYOUT_HELP}")
