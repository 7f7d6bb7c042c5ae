"""Small filesystem helpers: the cache root, atomic writes, lock files, disk-full errors."""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from diffzoo.harness.core.errors import StorageError

DISK_FULL = (errno.ENOSPC, errno.EDQUOT)

CACHE_ENV = "DIFFZOO_CACHE"


def cache_root() -> Path:
    """``$DIFFZOO_CACHE`` or ``~/.cache/diffzoo``."""
    root = os.environ.get(CACHE_ENV)
    return Path(root).expanduser() if root else Path.home() / ".cache" / "diffzoo"


def free_space(path: Path | str) -> str:
    """Free space on the filesystem holding ``path`` (its nearest existing
    parent), e.g. ``"12.3 MB free"``; ``"free space unknown"`` if unreadable."""
    here = Path(path).absolute()
    while not here.exists() and here != here.parent:
        here = here.parent
    try:
        free = shutil.disk_usage(here).free
    except OSError:
        return "free space unknown"
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if free < 1000 or unit == "TB":
            return f"{free:.1f} {unit} free" if unit != "B" else f"{free} B free"
        free /= 1000
    return "free space unknown"  # pragma: no cover


def disk_full_error(exc: OSError, path: Path | str | None = None) -> StorageError | None:
    """A StorageError naming the path and free space if ``exc`` is a disk-full
    (or quota) error, else None."""
    if exc.errno not in DISK_FULL:
        return None
    where = path or exc.filename or "a file"
    return StorageError(f"disk full while writing {where} ({free_space(where)} on that filesystem); "
                        "free some space or write somewhere else (--out DIR, $DIFFZOO_CACHE)")


def atomic_write_bytes(path: Path, data: bytes) -> Path:
    """Write via a temp file in the same folder + fsync + rename.

    A process killed mid-write leaves at most a ``.tmp`` file, never a
    partial ``path``; a full disk is a StorageError naming ``path``.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise disk_full_error(exc, path) or exc
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError) and (full := disk_full_error(exc, path)) is not None:
            raise full from exc
        raise
    return path


def atomic_write_text(path: Path, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


@contextmanager
def exclusive_lock(path: Path) -> Iterator[None]:
    """Hold the lock file ``path`` (POSIX flock, exclusive; folders made); it
    dies with its process.  Without fcntl (Windows) nothing is locked: callers
    also write atomically, which alone keeps a reader from a half-written file."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            yield
            return
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
