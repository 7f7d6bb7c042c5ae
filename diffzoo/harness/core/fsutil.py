"""Small filesystem helpers: the cache root, atomic writes, the one lock helper, disk-full errors."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from diffzoo.harness.core.errors import DataError, DiffzooError, StorageError, not_found

DISK_FULL = (errno.ENOSPC, errno.EDQUOT)

CACHE_ENV = "DIFFZOO_CACHE"


def cache_root() -> Path:
    """``$DIFFZOO_CACHE``, else ``diffzoo`` in the user's cache folder (``$XDG_CACHE_HOME``,
    else ``~/.cache``), as the hub and torch caches beside it are found.  A blank
    ``$DIFFZOO_CACHE`` (``" "``) is no value, as an empty one is."""
    if (root := os.environ.get(CACHE_ENV, "")).strip():
        return Path(root).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    # the XDG rule: a relative $XDG_CACHE_HOME is invalid and ignored
    base = Path(xdg).expanduser() if xdg and Path(xdg).expanduser().is_absolute() else Path.home() / ".cache"
    return base / "diffzoo"


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
    return f"{human_bytes(free)} free"


def human_bytes(count: int) -> str:
    """A byte count as people read it: ``512 B``, ``12.3 MB`` (powers of 1000)."""
    size = float(count)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1000:
            return f"{count} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} TB"


def disk_full_error(exc: OSError, path: Path | str | None = None) -> StorageError | None:
    """A StorageError naming the path and free space if ``exc`` is a disk-full
    (or quota) error, else None."""
    if exc.errno not in DISK_FULL:
        return None
    where = path or exc.filename
    # without a path the filesystem is unknown: never the working folder's free space
    space = f"{free_space(where)} on that filesystem" if where else "free space unknown"
    return StorageError(f"disk full while writing {where or 'a file'} ({space}); "
                        "free some space or write somewhere else (--out DIR, $DIFFZOO_CACHE)")


DISK_FULL_WORDS = ("No space left on device", "StorageFull", "Disk quota exceeded", "QuotaExceeded")
"""How a writer that wraps the OSError in its own exception says "disk full" (safetensors
raises ``SafetensorError("... IoError(Os { code: 28, kind: StorageFull ...")``)."""


def is_disk_full(exc: BaseException) -> bool:
    """Whether ``exc``, or an exception in its cause/context chain, is a full disk or quota,
    as an OSError or as the message of a writer that wraps it."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if (isinstance(current, OSError) and current.errno in DISK_FULL) or any(
                word in str(current) for word in DISK_FULL_WORDS):
            return True
        current = current.__cause__ or current.__context__
    return False


@contextmanager
def writing(path: Path | str) -> Iterator[None]:
    """Run a writer (PIL, matplotlib, json, safetensors, TensorBoard...) that writes ``path``:
    a full disk inside it, whatever form the writer gives it, becomes a StorageError naming
    ``path`` and the free space of the filesystem that holds it (exit 2), and a user-fixable
    OSError (:data:`USER_FIXABLE`) one naming ``path``."""
    try:
        yield
    except StorageError:
        raise
    except Exception as exc:
        if is_disk_full(exc):
            full = disk_full_error(OSError(errno.ENOSPC, "No space left on device"), path)
            assert full is not None  # ENOSPC always gives one
            raise full from exc
        if isinstance(exc, OSError) and (user := user_path_error(exc, exc.filename or path)) is not None:
            raise user from exc
        raise


USER_FIXABLE = {
    errno.ENOTDIR: "a part of the path is a file, not a folder",
    errno.EISDIR: "it is a folder, where a file is needed",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EROFS: "the filesystem is read-only",
    errno.ENAMETOOLONG: "the name is too long for the filesystem",
    errno.ELOOP: "too many symbolic links (a link loop)",
}
"""The OSErrors about a path that the user fixes by choosing another path or
changing the files (besides a full disk, :func:`disk_full_error`)."""


def given_as(option: str, value: object) -> str:
    """``value`` as it was given to ``option``: ``--captions X``, or ``split_file=X`` for an
    option written with its ``=`` (``--regions masks:X`` with its ``:``)."""
    return f"{option}{value}" if option.endswith(("=", ":")) else f"{option} {value}"


def written_as_path(text: str) -> str | None:
    """``text``, a value that is a hub id or a local folder, as the path it is written as (starting
    ``./``, ``../``, ``/`` or ``~``, the home folder expanded): one that is not there does not exist,
    never a hub id; None for anything else (``ORG/NAME``: a hub id, or a folder that exists)."""
    return os.path.expanduser(text) if text.startswith(("./", "../", "/", "~")) or text in (".", "..") else None


def require_file(path: Path | str, what: str, hint: str = "", *, folder: bool = False, option: str = "") -> None:
    """Check that a regular file (``folder``: a folder) is at ``path``, before any work: a DataError
    (exit 2: another path is the fix) saying that ``what`` ``path`` does not exist when nothing is
    there, or what is there instead (a FIFO would block the reader for ever; a FileRefused for a file).
    ``option`` (``--captions``, ``split_file=``): the option ``path`` was given as, named in ``what``'s
    place (:func:`given_as`), so the one line says which option to change."""
    named = given_as(option, path) if option else None
    said = named or f"{what} {path}"
    kind = "a folder" if os.path.isdir(path) else file_kind(path)
    if kind == MISSING[0] or (kind in MISSING and not folder):
        raise not_found(DataError(f"{said} does not exist{hint}"))
    if folder and kind != "a folder":
        raise not_found(DataError(f"{said} is {kind or 'a file'}, not a folder{hint}"))
    if not folder and kind is not None:
        raise not_regular(named or path, kind)


def cannot_use(where: str, reason: str) -> StorageError:
    """The one line (a StorageError, exit 2) of every path that cannot be used, whichever check or writer
    meets it: ``where`` (the path, after the option that named it where one did), ``reason`` and the fix."""
    return StorageError(f"{where} cannot be used: {reason}; choose another path (--out DIR, $DIFFZOO_CACHE) "
                        "or fix the files there")


def user_path_error(exc: OSError, path: Path | str | None = None) -> StorageError | None:
    """:func:`cannot_use` naming the path and what is wrong with it, if ``exc`` is one of
    :data:`USER_FIXABLE`; a full disk's StorageError; else None."""
    full = disk_full_error(exc, path)
    if full is not None or exc.errno not in USER_FIXABLE:
        return full
    other = f" (and {exc.filename2})" if getattr(exc, "filename2", None) else ""
    return cannot_use(f"{path or exc.filename or 'a path'}{other}", USER_FIXABLE[exc.errno])


def check_writable_dir(path: Path | str, what: str) -> Path:
    """Make folder ``path`` (with its parents) and check a file can be written in
    it, before any work: a StorageError (exit 2) naming ``what`` and the path otherwise."""
    path = Path(path)  # as given: the folder checked is the one written (the CLI expands a ~)
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        reason = USER_FIXABLE.get(exc.errno or 0) or exc.strerror or str(exc)
        raise cannot_use(f"{what} {path}", reason) from None
    return path


def _name_max(folder: Path) -> int:
    """The longest file name, in bytes, the filesystem of ``folder`` takes (255 where it does not say)."""
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (AttributeError, OSError, ValueError):  # no pathconf (Windows), or a filesystem that gives no limit
        return 255


def check_usable_dir(path: Path | str, what: str) -> Path:
    """Check, leaving nothing made, that folder ``path`` exists as a writable folder or
    can be made (its nearest existing ancestor is a writable folder that takes a new
    folder): a StorageError (exit 2) naming ``what`` otherwise."""
    path = Path(path)  # as given: the folder checked is the one written (the CLI expands a ~)
    here = path
    while not os.path.lexists(here) and here != here.parent:
        here = here.parent
    reason = None
    if not here.is_dir():
        reason = USER_FIXABLE[errno.ENOTDIR] if here != path else "it is not a folder"
    elif not os.access(here, os.W_OK | os.X_OK):
        reason = f"{USER_FIXABLE[errno.EACCES]} on {here.absolute()}"
    elif here != path and any(len(os.fsencode(p)) > _name_max(here) for p in path.relative_to(here).parts):
        reason = USER_FIXABLE[errno.ENAMETOOLONG]  # a folder below the first one made would fail, after the work
    elif here != path:
        # access() passes root everywhere, and some filesystems (/proc) refuse every mkdir:
        # make the first missing folder and take it away again to know
        probe = here / path.relative_to(here).parts[0]
        try:
            probe.mkdir()
        except FileExistsError:
            pass  # made by another process meanwhile: usable
        except OSError as exc:
            made = f"no folder can be made in {here.absolute()} ({exc.strerror or exc})"
            reason = USER_FIXABLE.get(exc.errno or 0) or made
        else:
            with contextlib.suppress(OSError):  # another process's files in it already: theirs to keep
                probe.rmdir()
    if reason is not None:
        raise cannot_use(f"{what} {path}", reason)
    return path


MISSING = ("missing", "a broken symbolic link")
"""What :func:`file_kind` says of a path with no file behind it."""


def file_kind(path: Path | str) -> str | None:
    """None for a regular file (or a link to one); else what ``path`` is, in words:
    a file diffzoo must not open (a FIFO would block the reader for ever)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return MISSING[1] if os.path.islink(path) else MISSING[0]
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symbolic link loop"
        return f"not readable ({exc.strerror})"
    return mode_kind(mode)


def mode_kind(mode: int) -> str | None:
    """None for a regular file's ``st_mode``; else what the file is, in words."""
    if stat.S_ISREG(mode):
        return None
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a regular file"


class FileRefused(DiffzooError, ValueError):
    """A file diffzoo does not read (not a regular file, larger than its bound, a link out of
    the folder it must stay in), or JSON or YAML nested deeper than its bound.  ``str()`` names
    the file and says why; ``reason`` is the why alone.  The user replaces the file: exit 2."""

    exit_code = 2

    def __init__(self, path: Path | str, reason: str):
        self.path, self.reason = str(path), reason
        super().__init__(f"{path} {reason}")

    def __reduce__(self):  # rebuilt from both arguments when it crosses a process boundary
        return type(self), (self.path, self.reason)


def not_regular(path: Path | str, kind: str) -> FileRefused:
    """The refusal of ``path``, which is ``kind`` (:func:`file_kind`), where a regular file is read."""
    return FileRefused(path, f"is {kind}, not a regular file; diffzoo reads only regular files")


def read_regular(path: Path | str, limit: int, *, within: Path | str | None = None) -> bytes:
    """The bytes of the regular file at ``path``, read without ever blocking.

    FileRefused if it is not a regular file (a FIFO, socket, device or folder), if it holds
    more than ``limit`` bytes, or, with ``within``, if it or a link on its way leads out of the
    folder ``within``.  The kind is checked before opening (opening a device can act on it)
    and again on the open descriptor, opened non-blocking: a file swapped for a FIFO in between
    is refused, never waited on.  Other errors (missing, permission) are open()'s OSError."""
    path = Path(path)
    target = path
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    if within is not None:
        target = Path(os.path.realpath(path))
        root = Path(os.path.realpath(within))
        if target != root and root not in target.parents:
            raise FileRefused(path, f"leads to {target}, outside {within} (a symbolic link); diffzoo reads "
                                    "only files inside it: replace the link by the file")
        flags |= getattr(os, "O_NOFOLLOW", 0)  # the resolved path: a link put there since is refused (ELOOP)
    try:
        kind = mode_kind(os.stat(target).st_mode)
    except OSError:
        kind = None  # open() below raises the error as it is
    if kind is not None:
        raise not_regular(path, kind)
    fd = os.open(target, flags)
    try:
        info = os.fstat(fd)
        if (kind := mode_kind(info.st_mode)) is not None:
            raise not_regular(path, kind)
        too_big = FileRefused(path, f"holds more than the {human_bytes(limit)} diffzoo reads from such a file "
                                    f"({human_bytes(info.st_size)})")
        if info.st_size > limit:
            raise too_big
        chunks, total = [], 0
        while block := os.read(fd, min(limit + 1 - total, 1 << 24)):  # one byte past the limit: a file still growing
            chunks.append(block)
            total += len(block)
            if total > limit:
                raise too_big
    finally:
        os.close(fd)
    return b"".join(chunks)


MAX_JSON_DEPTH = 100
"""How deep the arrays and objects of a JSON file diffzoo reads may nest: far beyond any record,
state, version or marker, far below where a parser or a recursive walk over the value overflows."""
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def json_depth(data: bytes) -> int:
    """How deep the arrays and objects of the JSON text ``data`` nest (0: none), counted without
    parsing it; brackets inside strings do not count."""
    import numpy as np

    brackets = _JSON_STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    if not brackets:
        return 0
    codes = np.frombuffer(brackets, dtype=np.uint8)
    steps = np.where((codes == ord("[")) | (codes == ord("{")), 1, -1).astype(np.int64)
    return int(np.cumsum(steps).max())


def json_kind(value: Any) -> str:
    """The JSON type of a parsed ``value`` as a message names it ("an array", "null"): a file read is
    JSON, and its reader knows no Python type names (list, NoneType)."""
    kinds = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return kinds.get(type(value), "a number")


def parse_json(data: bytes | str, source: str = "the JSON text", *, unique_keys: bool = False) -> Any:
    """The value of the JSON text ``data`` (UTF-8 bytes or text).  FileRefused naming ``source``
    if it nests deeper than :data:`MAX_JSON_DEPTH` (checked before parsing: no parser or recursive walk of
    the value overflows), if it holds an integer longer than Python converts
    (``sys.get_int_max_str_digits()``), or, with ``unique_keys`` (a file a person writes), if an object gives
    one key twice (json keeps the last silently); json.JSONDecodeError or UnicodeDecodeError
    (both ValueErrors) if it is not JSON."""
    if json_depth(data.encode("utf-8") if isinstance(data, str) else data) > MAX_JSON_DEPTH:
        raise FileRefused(source, f"nests arrays and objects deeper than {MAX_JSON_DEPTH} levels; diffzoo reads no "
                                  "JSON that deep")
    text = data if isinstance(data, str) else data.decode("utf-8-sig")  # a BOM skipped, as read_text skips it

    def once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise FileRefused(source, f"gives {key!r} twice in one object; keep one")
            seen.add(key)
        return dict(pairs)

    try:
        return json.loads(text, object_pairs_hook=once if unique_keys else None)
    except RecursionError:  # a parser with a lower limit than MAX_JSON_DEPTH
        raise FileRefused(source, "nests arrays and objects too deeply to be parsed") from None
    except (json.JSONDecodeError, FileRefused):
        raise
    except ValueError:  # the one other ValueError of json.loads: an integer of more digits than int() takes
        raise FileRefused(source, f"holds an integer of more than {sys.get_int_max_str_digits()} digits; diffzoo "
                                  "reads none that long") from None


TEXT_LIMIT = 256 * 1024 * 1024
"""The most diffzoo reads of a text file it is handed (a --config, a label map, a dataset's
metadata, split or list file): far beyond any such file, far below what exhausts memory."""


def read_text(path: Path | str, limit: int = TEXT_LIMIT) -> str:
    """The UTF-8 text of the regular file ``path`` (:func:`read_regular`: never a FIFO, never
    blocking, at most ``limit`` bytes), a byte-order mark skipped (Windows editors write one):
    every text file a user hands diffzoo is read so."""
    return read_regular(path, limit).decode("utf-8-sig")


def read_json(path: Path | str) -> Any:
    """The JSON value of the regular file ``path`` (at most :data:`TEXT_LIMIT` bytes), nesting
    bounded (:func:`parse_json`)."""
    return parse_json(read_regular(path, TEXT_LIMIT), str(path))


def read_yaml(text: str, source: str) -> Any:
    """The YAML value of ``text`` (safe_load); FileRefused naming ``source`` for one nested too
    deeply to be built (yaml's constructor recurses), or for a mapping that gives one key twice
    (safe_load keeps the last silently: ``detector:`` twice in a --config would run the second);
    a yaml.YAMLError of one line (line, column and the problem) for text that is not YAML."""
    import yaml

    class UniqueKeys(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            marks: dict[tuple[str, str], Any] = {}
            for key, _ in node.value:  # the mapping as written: a merged ("<<") key may be given again
                if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                    here = key.start_mark
                    if (first := marks.get((key.tag, key.value))) is not None:  # on one line: say the columns
                        where = (f"line {here.line + 1}, columns {first.column + 1} and {here.column + 1}"
                                 if first.line == here.line else f"lines {first.line + 1} and {here.line + 1}")
                        raise FileRefused(source, f"gives {key.value!r} twice ({where}); keep one")
                    marks[key.tag, key.value] = here
            return super().construct_mapping(node, deep)

    if json_depth(text.encode("utf-8")) > MAX_JSON_DEPTH:  # flow-style nesting, counted before parsing
        raise FileRefused(source, f"nests lists and mappings deeper than {MAX_JSON_DEPTH} levels; diffzoo reads no "
                                  "YAML that deep")
    try:
        value = yaml.load(text, Loader=UniqueKeys)  # noqa: S506 - UniqueKeys is a SafeLoader
        size = _expanded_size(value, {}, set())
    except RecursionError:
        raise FileRefused(source, "nests lists and mappings too deeply to be read") from None
    except yaml.YAMLError as exc:  # one line, where and what: yaml's own spans lines and quotes the text
        mark, context = getattr(exc, "problem_mark", None), getattr(exc, "context", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise yaml.YAMLError(where + what + (f" ({context})" if context else "")) from None
    if size is None:
        raise FileRefused(source, "holds a list or mapping that contains itself (through an alias *NAME)")
    if size > MAX_YAML_VALUES:
        raise FileRefused(source, f"holds {size:,} values (an alias *NAME counts each time it is used); diffzoo "
                                  f"reads at most {MAX_YAML_VALUES:,}")
    return value


MAX_YAML_VALUES = 100_000
"""The most values a YAML file may expand to: an alias shares what its anchor built, so a few lines
(each list nine aliases of the one before) are a billion values to whoever walks them."""


def _expanded_size(value: Any, sizes: dict[int, int], open_: set[int]) -> int | None:
    """How many values ``value`` is when every alias is walked (each shared list or mapping counted
    once per place it appears, computed once); None if one contains itself."""
    if not isinstance(value, (list, dict)):
        return 1
    key = id(value)
    if key in open_:
        return None
    if key not in sizes:
        open_.add(key)
        parts = [*value.keys(), *value.values()] if isinstance(value, dict) else value
        counted = [_expanded_size(part, sizes, open_) for part in parts]
        open_.discard(key)
        if None in counted:
            return None
        sizes[key] = 1 + sum(c for c in counted if c is not None)
    return sizes[key]


def umask() -> int:
    """The process's umask, read without changing it where the kernel tells it (``os.umask`` sets
    it to read it, for every thread at once)."""
    try:
        for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def new_mode(*, folder: bool = False) -> int:
    """The mode ``open`` or ``mkdir`` gives a new file or folder under the umask: what a temp file
    or folder renamed into place must get, as ``mkstemp``/``mkdtemp`` make theirs 0600/0700."""
    return (0o777 if folder else 0o666) & ~umask()


_LEFTOVER = re.compile(r"\.(?P<name>.+)\.[a-z0-9_]{8}\.tmp")
"""The temp file :func:`atomic_write_bytes` writes ``NAME`` through: mkstemp's ``.NAME.XXXXXXXX.tmp``."""


def write_leftover(path: Path) -> str | None:
    """The name whose write through :func:`atomic_write_bytes` left ``path`` behind when it was
    killed, or None for any other file (a user's ``.draft.tmp`` is not one)."""
    match = _LEFTOVER.fullmatch(Path(path).name)
    return match["name"] if match else None


def make_dir(path: Path) -> None:
    """``path.mkdir(parents=True, exist_ok=True)``, where a file standing for ``path`` or a folder
    above it is NotADirectoryError (:data:`USER_FIXABLE`), not mkdir's FileExistsError."""
    try:
        Path(path).mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # mkdir(exist_ok=True) raises it only where a file stands for the folder
        raise NotADirectoryError(errno.ENOTDIR, "Not a directory", str(path)) from None


def atomic_write_bytes(path: Path, data: bytes, *, exclusive: bool = False) -> Path:
    """Write via a temp file in the same folder + fsync + rename.

    A process killed mid-write leaves at most a ``.tmp`` file, never a
    partial ``path``; a full disk is a StorageError naming ``path``.  The file
    gets the mode a plain ``open`` would give it (:func:`new_mode`).
    ``exclusive``: ``path`` must not exist (FileExistsError if it does); the
    whole file appears under its name by a hard link, so no reader ever sees a
    name reserved but not yet written (on a filesystem without hard links, only
    the caller's lock keeps two such writers apart).
    """
    path = Path(path)
    try:
        make_dir(path.parent)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise disk_full_error(exc, path) or exc  # noqa: B904 - the OSError itself, or a StorageError in its context
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), new_mode())
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if exclusive:
            try:
                os.link(tmp, path)
            except FileExistsError:
                raise
            except OSError:  # no hard links on this filesystem: the name is checked, then renamed to
                if path.exists():
                    raise FileExistsError(errno.EEXIST, "file exists", str(path)) from None
                os.replace(tmp, path)
            else:
                os.unlink(tmp)
        else:
            os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError) and (full := disk_full_error(exc, path)) is not None:
            raise full from exc
        raise
    return path


def atomic_write_text(path: Path, text: str, *, exclusive: bool = False) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"), exclusive=exclusive)


def append_line(path: Path, line: str) -> None:
    """Append ``line`` and a newline to the log file ``path`` (folders made); a full disk is a
    StorageError naming ``path``.  For logs read line by line: a kill loses at most the line
    being written, never the lines before it."""
    path = Path(path)
    with writing(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")


def sha256_file(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


@contextmanager
def exclusive_lock(path: Path) -> Iterator[None]:
    """Hold the lock file ``path`` (exclusive; blocks until it is free; folders made).
    It works across processes and dies with its process: the operating system's
    file lock (``flock``, ``LockFileEx`` on Windows), through filelock, the one lock
    library diffzoo uses.  The file stays when released."""
    from filelock import FileLock

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with FileLock(Path(path)):
        yield


def lock_open_file(fh: IO[Any], wait: bool = True) -> bool:
    """Lock the open file ``fh`` exclusively, with the lock :func:`exclusive_lock` takes;
    ``wait=False``: return False at once if another holds it.  Held until ``fh`` is
    closed (or its process ends)."""
    from filelock import lock_descriptor

    return lock_descriptor(fh.fileno(), blocking=wait)
