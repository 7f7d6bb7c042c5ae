"""Content fingerprints of datasets: equal data gives an equal fingerprint.

The fingerprint keys checkpoint caches and is stored in every result record,
so it must change whenever an image or mask changes, and must not change when
the same data sits at another path, was copied (new mtimes) or comes in
another container (docs/datasets.md, "Fingerprints"):

- image/mask pairs (DiffSeg30k: zip, folder, ``datasets``): the sha256 of each
  file's bytes (a zip member decompressed, a ``datasets`` cell's encoded
  bytes), keyed ``<id>.image`` / ``<id>.mask`` and sorted by that key
  (:func:`pair_fingerprint`); no paths, no zip CRCs;
- other folders: (path relative to the dataset folder, size, sha256) of every
  file used (:func:`fingerprint_files`).

Hashing reads every byte once; the digests are then memoised under the
diffzoo cache (``<cache>/fingerprints/``, never beside the data), one JSON
file per dataset folder / archive / ``datasets`` source keyed by its absolute
path, each entry valid while its file's size and mtime_ns (a zip member: the
archive's size and mtime_ns) are unchanged.

The same walk counts the files that carry an EXIF orientation tag other than 1
(:func:`counting_orientation`): read from each file's header once, cached beside its digest,
never part of the fingerprint.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import stat
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from diffzoo.harness.core.errors import DataError, StorageError
from diffzoo.harness.core.fsutil import atomic_write_text, cache_root, file_kind, sha256_file
from diffzoo.harness.core.progress import NullProgress, current_progress
from diffzoo.harness.data.walk import by_canonical_name

log = logging.getLogger(__name__)

CACHE_DIR = "fingerprints"
_CACHE_VERSION = 2
_CHUNK = 1 << 20
HEADER_BYTES = 1 << 16
"""How much of a file is read for its EXIF orientation: EXIF sits in the header (JPEG APP1,
PNG/WebP chunks before the pixels, TIFF's first IFD)."""
_ANNOUNCE_BYTES = 256 * 2**20
UNREADABLE = "unreadable:"
"""Prefix of the digest of a member / cell / file whose bytes cannot be read (a FIFO, a
device): the fingerprint stays defined and the sample fails when it is loaded."""


_TALLIES: list[list[str]] = []


def file_orientation(path: Path) -> int | None:
    """The EXIF orientation tag of the image file ``path`` (its header only); None without one,
    or for what is not a regular file or cannot be read (reading the image says why)."""
    from diffzoo.harness.data.imageio import exif_orientation, image_trait  # Pillow: only when asked

    return image_trait(_file_head(path), exif_orientation)


@contextmanager
def counting_orientation() -> Iterator[list[str]]:
    """Collect, while inside, the names of the files hashed (or found in the digest cache)
    whose EXIF orientation is not 1: a dataset's count of images whose displayed view is not
    their stored pixels."""
    tally: list[str] = []
    _TALLIES.append(tally)
    try:
        yield tally
    finally:
        _TALLIES.remove(tally)


def combine(*parts: Any) -> str:
    """A 16-hex-digit sha256 of JSON-serialisable parts."""
    blob = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


class DigestCache:
    """sha256 digests of named blobs, memoised in ``<cache>/fingerprints/``.

    ``key`` names the source (``files:/abs/folder``, ``zip:/abs/train.zip``);
    each entry is stored with a ``stamp`` (sizes, mtimes) and is used only
    while the stamp is unchanged.  Written atomically (ranks may race); a
    cache that cannot be read or written only costs speed.
    """

    def __init__(self, key: str) -> None:
        self.key = key
        digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]
        self.path = cache_root() / CACHE_DIR / f"{digest}.json"
        self._entries, self._orientations = self._read()
        self._dirty = False

    def _read(self) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}, {}
        ok = isinstance(data, dict) and data.get("version") == _CACHE_VERSION and data.get("key") == self.key
        entries = data.get("entries") if ok else None
        orientations = data.get("orientation") if ok else None  # absent from caches written before it
        return (entries if isinstance(entries, dict) else {},
                orientations if isinstance(orientations, dict) else {})

    def get(self, name: str, stamp: list[Any]) -> str | None:
        hit = self._entries.get(name)
        if isinstance(hit, list) and len(hit) == len(stamp) + 1 and hit[:-1] == stamp:
            return str(hit[-1])
        return None

    def put(self, name: str, stamp: list[Any], digest: str) -> None:
        self._entries[name] = [*stamp, digest]
        self._dirty = True

    def save(self) -> None:
        if not self._dirty:
            return
        doc = {"version": _CACHE_VERSION, "key": self.key, "entries": self._entries,
               "orientation": self._orientations}
        try:
            atomic_write_text(self.path, json.dumps(doc, separators=(",", ":")))
        except (OSError, StorageError) as exc:  # the cache only saves work: a full disk there never stops a run
            log.debug("cannot write fingerprint cache %s (%s); continuing uncached", self.path, exc)
        self._dirty = False

    def fill(self, items: Iterable[tuple[str, list[Any], int, Callable[[], str]]], what: str) -> dict[str, str]:
        """name -> digest for ``items`` (name, stamp, size in bytes, how to compute the
        digest): from the cache where the stamp still matches, else computed (the total
        announced when large), stored and saved."""
        out: dict[str, str] = {}
        todo = []
        for name, stamp, size, compute in items:
            hit = self.get(name, stamp)
            if hit is None:
                todo.append((name, stamp, size, compute))
            else:
                out[name] = hit
        total = sum(size for _, _, size, _ in todo)
        progress = current_progress() if total > _ANNOUNCE_BYTES else NullProgress()  # a long read is shown
        with progress.task(f"fingerprinting {total / 2**30:.1f} GB of {what} once (cached in {self.path})",
                           len(todo)) as task:
            for name, stamp, _, compute in todo:
                out[name] = compute()
                self.put(name, stamp, out[name])
                task.advance()
        self.save()
        return out

    def count_orientation(self, items: Iterable[tuple[str, list[Any], Callable[[], bytes]]]) -> None:
        """Add to the active :func:`counting_orientation` tallies the ``items`` (name, stamp,
        how to read the file's header) whose EXIF orientation is not 1; each header is read
        once and the answer cached with the stamp (0: no tag)."""
        if not _TALLIES:
            return
        from diffzoo.harness.data.imageio import exif_orientation, image_trait  # Pillow: only when counting

        oriented = []
        for name, stamp, head in items:
            hit = self._orientations.get(name)
            if isinstance(hit, list) and hit[:-1] == stamp:
                value = hit[-1]
            else:
                value = image_trait(head(), exif_orientation) or 0
                self._orientations[name] = [*stamp, value]
                self._dirty = True
            if value:
                oriented.append(name)
        self.save()
        for tally in _TALLIES:
            tally.extend(oriented)


def _file_sha256(path: Path) -> str:
    try:
        return sha256_file(path)
    except OSError as exc:
        raise DataError(f"{path}: cannot be read to fingerprint the dataset ({exc})") from None


def _file_head(path: Path) -> bytes:
    try:
        if path.is_file():  # a FIFO is never opened: it would block
            with open(path, "rb") as fh:
                return fh.read(HEADER_BYTES)
    except OSError:
        pass
    return b""


def file_digests(root: Path, files: Iterable[Path]) -> dict[str, tuple[int, str]]:
    """(size, sha256) of each of ``files``, keyed by its path relative to ``root`` as ids read it
    (:func:`.walk.canonical_name`; two files under one such name are a DataError)."""
    root = Path(root)
    items, heads, out = [], [], {}
    for rel, f in by_canonical_name(root, ((os.path.relpath(f, root), f) for f in files)).items():
        try:
            st = os.stat(f)
        except OSError:  # a link loop, a dangling link: never followed (data/walk.py); not-a-file at load
            st = None
        if st is None or not stat.S_ISREG(st.st_mode):  # a FIFO or device: never read (it may never end)
            out[rel] = (0, f"{UNREADABLE}{file_kind(f)}")
        else:
            out[rel] = (st.st_size, "")
            items.append((rel, [st.st_size, st.st_mtime_ns], st.st_size, functools.partial(_file_sha256, Path(f))))
            heads.append((rel, [st.st_size, st.st_mtime_ns], functools.partial(_file_head, Path(f))))
    cache = DigestCache(f"files:{Path(os.path.abspath(root))}")
    digests = cache.fill(items, str(root))
    cache.count_orientation(heads)
    return {rel: (size, digests.get(rel, sha)) for rel, (size, sha) in out.items()}


def fingerprint_files(root: Path, files: Iterable[Path]) -> str:
    """Fingerprint ``files`` by (path relative to ``root``, size, sha256), sorted."""
    digests = file_digests(root, files)
    return combine("files", sorted((rel, size, sha) for rel, (size, sha) in digests.items()))


def _member_digest(zf: zipfile.ZipFile, info: zipfile.ZipInfo, heads: dict[str, bytes]) -> str:
    """The member's sha256; its first bytes kept in ``heads`` (the EXIF header: no second decompression)."""
    h = hashlib.sha256()
    try:
        with zf.open(info) as f:
            while chunk := f.read(_CHUNK):
                if info.filename not in heads:
                    heads[info.filename] = chunk[:HEADER_BYTES]
                h.update(chunk)
    except Exception as exc:  # zipfile raises BadZipFile, zlib.error, EOFError, ...
        log.warning("%s: member %s cannot be read (%s)", zf.filename, info.filename, exc)
        return f"{UNREADABLE}{info.CRC:08x}:{info.file_size}"
    return h.hexdigest()


def zip_digests(path: Path, zf: zipfile.ZipFile, names: Iterable[str]) -> dict[str, str]:
    """sha256 of each member ``names`` decompressed (cached per archive size + mtime).

    A member that cannot be decompressed gets ``unreadable:<crc>:<size>``, so
    the fingerprint stays defined and the sample fails when it is loaded.
    """
    st = os.stat(path)
    infos = [zf.getinfo(name) for name in names]
    heads: dict[str, bytes] = {}
    items = [(i.filename, [st.st_size, st.st_mtime_ns, i.CRC, i.file_size], i.file_size,
              functools.partial(_member_digest, zf, i, heads)) for i in infos]
    cache = DigestCache(f"zip:{Path(os.path.abspath(path))}")
    digests = cache.fill(items, str(path))
    cache.count_orientation((i.filename, [st.st_size, st.st_mtime_ns, i.CRC, i.file_size],
                             functools.partial(_member_head, zf, i, heads)) for i in infos)
    return digests


def _member_head(zf: zipfile.ZipFile, info: zipfile.ZipInfo, heads: dict[str, bytes]) -> bytes:
    if info.filename in heads:  # read while hashing
        return heads[info.filename]
    try:
        with zf.open(info) as f:
            return f.read(HEADER_BYTES)
    except Exception:  # an unreadable member: its digest says so, no tag counted
        return b""


def pair_fingerprint(pairs: Mapping[str, tuple[Any, Any]], digests: Mapping[Any, str]) -> str:
    """Fingerprint image/mask pairs: sorted (``<id>.image`` | ``<id>.mask``, sha256).

    ``pairs``: sample id -> (image ref, mask ref); ``digests``: ref -> sha256.
    Where the pairs came from (zip, folder, ``datasets``) plays no part.
    """
    rows = []
    for sid, (image, mask) in pairs.items():
        rows += [(f"{sid}.image", digests[image]), (f"{sid}.mask", digests[mask])]
    return combine("pairs", sorted(rows))
