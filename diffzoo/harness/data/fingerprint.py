"""Content fingerprints of datasets: equal data gives an equal fingerprint.

The fingerprint keys checkpoint caches and is stored in every result record,
so it must change whenever an image or mask changes, and must not change when
the same data sits at another path or was copied (new mtimes).

- zip: the members' names, CRC32s and sizes from the central directory (read
  for free, nothing is decompressed);
- folder: names, sizes and a streamed sha256 of every file.  For a large
  extracted folder (DiffSeg30k is ~20 GB) that reads everything once; the
  per-file digests are then cached in ``.diffzoo-fingerprint.json`` beside the
  data, keyed by (name, size, mtime_ns), so later runs only ``stat`` the
  files.  A read-only folder just goes uncached;
- ``datasets`` hub sources: hub id + the fingerprint the library exposes
  (``Dataset._fingerprint``, which follows the hub revision) + split + rows.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import tempfile
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import DataError

log = logging.getLogger(__name__)

FINGERPRINT_CACHE = ".diffzoo-fingerprint.json"
_CACHE_VERSION = 1
_CHUNK = 1 << 20


def combine(*parts: Any) -> str:
    """A 16-hex-digit sha256 of JSON-serialisable parts."""
    blob = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def fingerprint_zip(zf: zipfile.ZipFile, names: Iterable[str] | None = None) -> str:
    """Fingerprint a zip's members (all, or ``names``) from its central directory."""
    wanted = None if names is None else set(names)
    entries = sorted(
        (i.filename, i.CRC, i.file_size)
        for i in zf.infolist()
        if not i.is_dir() and (wanted is None or i.filename in wanted)
    )
    return combine("zip", entries)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _read_cache(path: Path) -> dict[str, list[Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != _CACHE_VERSION:
        return {}
    files = data.get("files")
    return files if isinstance(files, dict) else {}


def _write_cache(path: Path, files: dict[str, list[Any]]) -> None:
    """Write atomically (several ranks may race); failure only costs speed."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=".diffzoo-fp-", dir=path.parent)
    except OSError as exc:
        log.debug("cannot write fingerprint cache %s (%s); continuing uncached", path, exc)
        return
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"version": _CACHE_VERSION, "files": files}, f)
        os.replace(tmp, path)
    except OSError as exc:
        log.debug("cannot write fingerprint cache %s (%s); continuing uncached", path, exc)
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def fingerprint_files(root: Path, files: Iterable[Path], *, use_cache: bool = True) -> str:
    """Fingerprint ``files`` by (path relative to ``root``, size, sha256).

    Digests are cached in ``root/.diffzoo-fingerprint.json`` keyed by
    (relative name, size, mtime_ns): an edited file gets a new mtime and is
    hashed again.
    """
    root = Path(root)
    cache_path = root / FINGERPRINT_CACHE
    cache = _read_cache(cache_path) if use_cache else {}
    updated = dict(cache)
    rows = []
    todo_bytes = 0
    stats = []
    for f in files:
        rel = os.path.relpath(f, root).replace(os.sep, "/")
        try:
            st = os.stat(f)
        except OSError as exc:
            raise DataError(f"{f}: cannot be read to fingerprint the dataset ({exc})") from None
        hit = cache.get(rel)
        fresh = isinstance(hit, list) and len(hit) == 3 and hit[:2] == [st.st_size, st.st_mtime_ns]
        if not fresh:
            todo_bytes += st.st_size
        stats.append((rel, Path(f), st, hit if fresh else None))
    if todo_bytes > 256 * 2**20:
        log.info(
            "fingerprinting %.1f GB under %s once (cached in %s)",
            todo_bytes / 2**30,
            root,
            FINGERPRINT_CACHE,
        )
    for rel, f, st, hit in sorted(stats, key=lambda r: r[0]):
        digest = hit[2] if hit is not None else sha256_file(f)
        updated[rel] = [st.st_size, st.st_mtime_ns, digest]
        rows.append((rel, st.st_size, digest))
    if use_cache and updated != cache:
        _write_cache(cache_path, updated)
    return combine("files", rows)


def fingerprint_hf(source: str, splits: dict[str, Any]) -> str:
    """Fingerprint ``datasets`` splits by hub id + library fingerprint + split + rows."""
    parts = sorted(
        (name, str(getattr(ds, "_fingerprint", "")), int(ds.num_rows))
        for name, ds in splits.items()
    )
    return combine("datasets", source, parts)
