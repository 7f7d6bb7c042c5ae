"""Output folders diffzoo owns: ``diffzoo run --out DIR`` writes only into a
folder it made or was allowed to claim.

A folder is diffzoo's when it holds the marker file :data:`MARKER`, written
when diffzoo creates the folder or claims an empty one.  A non-empty folder
without it is refused unless ``force``; a folder laid out as a store of an
older diffzoo (``records/`` and nothing but diffzoo's own names) is claimed
as it is.  With ``force`` the names already there are written into the
marker as *foreign*: diffzoo never writes to them (:meth:`OutputDir.check_writable`
refuses; it does not pick another name, so output is always where the docs
say).  The store folders (``records/``, ``states/``, ``replaced/``,
``versions/``) are never foreign: the store overwrites or deletes nothing in
them, and it trusts no file there without checking it (records are
validated, states are read only when their sha256 is the one a record names).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from diffzoo.harness.core.errors import ConfigError, RecordError, name_some
from diffzoo.harness.core.fsutil import atomic_write_text, check_usable_dir, check_writable_dir, write_leftover
from diffzoo.harness.core.runlog import LOGS_DIR, RunLog, log_relpath
from diffzoo.harness.records.document import STORE_DIRS, read_json_file
from diffzoo.harness.records.model import LOCK_FILE, RECORDS_DIR

if TYPE_CHECKING:
    from diffzoo.harness.run.request import RunRequest

MARKER = ".diffzoo-out.json"
MAX_MARKER_BYTES = 1 << 20
"""The largest marker read (a marker lists the names of one folder)."""
SUMMARY_FILE, PLOTS_DIR, TRAIN_DIR, STATS_DIR = "summary.md", "plots", "train", "stats"
SWEEP_DIR, BOARD_DIR = "sweep", "board"
OUTPUTS = (SUMMARY_FILE, PLOTS_DIR, TRAIN_DIR, STATS_DIR, SWEEP_DIR, BOARD_DIR, LOGS_DIR)
"""What a run (and ``diffzoo data stats``, ``diffzoo sweep``) writes beside the store: the summary,
its figures, the training logs of the models it trained, dataset statistics, a sweep's state and
logs, the board it publishes, and each run's and sweep's log."""
DIFFZOO_NAMES = frozenset({*STORE_DIRS, *OUTPUTS, "runs", LOCK_FILE, MARKER})
"""Every name diffzoo writes at the top of an output folder (``runs/``: stores of older diffzoos)."""


@dataclass(frozen=True)
class OutputDir:
    """A claimed output folder; ``foreign``: top-level names that were there
    before diffzoo claimed it with ``force`` (never written)."""

    root: Path
    foreign: frozenset[str] = field(default_factory=frozenset)

    def check_writable(self, relpath: str | Path) -> Path:
        """The path diffzoo may write ``relpath`` at; ConfigError (naming it)
        if it escapes the folder, lies in a foreign entry or goes through a
        symbolic link."""
        rel = PurePosixPath(str(relpath).replace("\\", "/"))
        if rel.is_absolute() or not rel.parts or ".." in rel.parts:
            raise ConfigError(f"{relpath!r} is not a path inside the output folder {self.root}")
        if rel.parts[0] in self.foreign:
            where = "" if len(rel.parts) == 1 else f" would be written inside {rel.parts[0]!r}, which"
            raise ConfigError(
                f"{self.root / rel}{where} was in {self.root} before diffzoo claimed it with --force; diffzoo "
                "never overwrites files it did not make: move it away or choose another --out")
        target = self.root
        for part in rel.parts:
            target = target / part
            if target.is_symlink():
                raise ConfigError(f"{target} is a symbolic link; diffzoo does not write through links in its "
                                  "output folder: remove it or choose another --out")
        return target

    def write_text(self, relpath: str | Path, text: str) -> Path:
        return atomic_write_text(self.check_writable(relpath), text)


@dataclass(frozen=True)
class Manifest:
    """The file ``name`` in an output folder that lists the files a command wrote there
    (``{"<key>": 1, "files": [...]}``), so that its next run there removes those it does not
    write again, and no other file.  ``own``: folder (``""``: the top) -> the suffixes (``.png``)
    or whole names (``index.html``) of the files the command writes there, the only files a
    manifest may name (one edited to name another file, or one outside, removes nothing).
    ``what``, ``hint``: the refusal of a manifest that cannot be read."""

    name: str
    key: str
    own: Mapping[str, tuple[str, ...]]
    what: str
    hint: str

    def files(self, out: Path) -> set[str]:
        """The files the manifest in ``out`` lists as the command's own (none without one);
        ConfigError for one that cannot be read."""
        data = _read_own(out / self.name, out, self.what, self.hint, lambda d: "" if isinstance(d, dict) and isinstance(
            d.get("files"), list) else "it lists no files")
        return set() if data is None else {f for f in data["files"] if isinstance(f, str) and self._owns(f)}

    def _owns(self, relpath: str) -> bool:
        folder, _, name = relpath.rpartition("/")
        return "\\" not in name and any(len(name) > len(s) and name.endswith(s) if s[0] == "." else name == s
                                         for s in self.own.get(folder, ()))

    def replace(self, out: Path, before: Iterable[str], now: Iterable[str]) -> list[str]:
        """Remove the files of ``before`` (:meth:`files`) not in ``now``, then list ``now`` in
        the manifest; returns the removed ones."""
        now = set(now)
        stale = sorted(set(before) - now)
        for rel in stale:  # gone before the manifest forgets them: a kill between leaves none unlisted
            through_link = (out / rel).parent != out and (out / rel).parent.is_symlink()  # a file of another folder
            if not through_link and ((out / rel).is_symlink() or (out / rel).is_file()):
                (out / rel).unlink()
        atomic_write_text(out / self.name, json.dumps({self.key: 1, "files": sorted(now)}, indent=2))
        return stale


def output_log(root: Path, name: str) -> RunLog:
    """The log a command leaves in the output folder ``root`` (``logs/<UTC time>-<name>.log``),
    written once ``root`` is diffzoo's (a run claims it once its plan stands, so a run refused while
    planning leaves no folder), never into a foreign ``logs/``."""
    relpath = log_relpath(name)

    def where() -> Path | None:
        marker = read_marker(root) if root.is_dir() else None
        if marker is None:
            return None
        return OutputDir(root, frozenset(marker.get("foreign", []))).check_writable(relpath)

    return RunLog(root / relpath, where)


def read_marker(root: Path) -> dict | None:
    """The marker of a diffzoo folder, None if there is none; ConfigError if unreadable."""
    return _read_own(Path(root) / MARKER, root, "diffzoo marker", "remove it only if the folder is diffzoo's,",
                     lambda m: "" if isinstance(m, dict) and isinstance(m.get("foreign", []), list)
                     else "it is not the object diffzoo writes")


def _read_own(path: Path, root: Path, what: str, hint: str, why_not: Callable[[Any], str]) -> Any:
    """The JSON of a file diffzoo keeps in an output folder (its marker, a manifest), None where there is
    none; ConfigError naming ``what`` and ``hint`` (the fix) where it cannot be read or ``why_not`` says why."""
    if not os.path.lexists(path):
        return None
    try:
        data = read_json_file(path, MAX_MARKER_BYTES, what, root)
    except RecordError as exc:
        why = exc.problems[0]
    else:
        if not (why := why_not(data)):
            return data
    raise ConfigError(f"{path} is not a readable {what} ({why}); {hint} or choose another --out")


def older_store(names: Iterable[str]) -> bool:
    """Whether a folder of these top-level ``names`` is a store an older diffzoo made (before the
    marker): ``records/`` and nothing but diffzoo's names."""
    names = set(names)
    return RECORDS_DIR in names and names <= DIFFZOO_NAMES


def store_part(path: Path) -> Path | None:
    """The store folder (``records/``, ``states/``, ``replaced/``, ``versions/`` of a folder
    diffzoo marked as its own, or of an :func:`older_store`) that ``path`` is or lies in, or
    None.  A user's folder that is merely named ``records`` is none."""
    where = Path(os.path.abspath(path))
    for folder in (where, *where.parents):
        if folder.name in STORE_DIRS and ((folder.parent / MARKER).is_file() or older_store(_names(folder.parent))):
            return folder
    return None


def _names(folder: Path) -> list[str]:
    """The names in ``folder``; none where it cannot be listed."""
    try:
        return os.listdir(folder)
    except OSError:
        return []


def claim_output_dir(path: Path, force: bool = False, make: bool = True, writes: Iterable[str] = ()) -> OutputDir:
    """Make or claim ``path`` as diffzoo's output folder, before any work.

    New or empty: created and marked.  Marked: used.  A store of an older
    diffzoo (``records/`` and only diffzoo's names): marked.  Otherwise
    ConfigError (exit 2) unless ``force``, which marks it and lists what was
    there as foreign (never written).  ``writes``: the paths the command
    will write in it, each refused (:meth:`OutputDir.check_writable`) before
    the folder is made or marked.  ``make=False``: every refusal, and
    nothing made or marked (a check before the planning that may still fail,
    which then leaves no folder behind)."""
    root = Path(path)
    if root.exists() and not root.is_dir():
        raise ConfigError(f"--out {root} exists and is not a folder; choose a folder")
    if (inner := store_part(root)) is not None:  # its files would be read as records, states or versions
        raise ConfigError(f"--out {root} is inside {inner}, a record store's own {inner.name}/ folder, where "
                          "diffzoo reads every file as the store's; choose a folder outside it")
    usable = check_writable_dir if make else check_usable_dir
    marker = read_marker(root) if root.is_dir() else None
    if marker is not None:
        usable(root, "--out")  # a read-only folder fails here, not after the work
        return _writable(OutputDir(root, frozenset(marker.get("foreign", []))), writes)
    # a marker still in its temp file is diffzoo's (another command claiming the folder now, or one
    # killed mid-claim), never a user's file that makes the folder foreign
    names = sorted(p.name for p in root.iterdir() if write_leftover(p) != MARKER) if root.is_dir() else []
    foreign: list[str] = []
    if not names:
        how, foreign = "created" if not root.exists() else "empty", []
    elif older_store(names):
        how, foreign = "older diffzoo store", []
    elif force:
        how, foreign = "forced", [n for n in names if n not in STORE_DIRS]
    else:
        raise ConfigError(
            f"--out {root} is not empty ({name_some(names, 5)}) and was not made by diffzoo (no {MARKER}); choose a "
            "new or empty folder, or pass --force to write diffzoo's files beside the ones there (those are never "
            "overwritten)")
    usable(root, "--out")  # made here; a path through a file or a read-only disk stops here
    folder = _writable(OutputDir(root, frozenset(foreign)), writes)  # a refusal leaves the folder as it was
    if make:
        atomic_write_text(root / MARKER, json.dumps({
            "diffzoo_output": 1, "claimed": how, "foreign": foreign,
            "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        }, indent=2))
    return folder


def _writable(folder: OutputDir, writes: Iterable[str]) -> OutputDir:
    for relpath in writes:
        folder.check_writable(relpath)
    return folder


def check_out_unread(out: Path, request: RunRequest) -> None:
    """ConfigError where ``out`` is the folder of a dataset the run reads, or lies in a folder below
    it that is there already and is not diffzoo's output folder, or lies anywhere in the
    ``--extra-authentic`` folder (every image below it is read): the adapter would read what the run
    writes there (plots, records) as the dataset's files the next time.  A new folder right below a
    dataset's (``diffzoo-out``, the default ``--out`` of a run started there) is in no layout."""
    from diffzoo.harness.data.base import option_places

    where, extra = Path(os.path.realpath(out)), request.dataset_options().get("extra_authentic")
    folders = [(flag, spec, False) for flag, spec in request.dataset_paths()] + [  # extra images: read all through
        ("--extra-authentic", str(p), True) for p in (option_places(extra, request.dataset_home())[1]
                                                      if isinstance(extra, str | os.PathLike) and extra else [])]
    for flag, spec, whole in folders:
        root = Path(os.path.realpath(os.path.expanduser(spec)))  # ~nouser stays a path, as the dataset reads it
        top = root / where.relative_to(root).parts[0] if where.is_relative_to(root) and where != root else None
        if where == root or (top is not None and (whole or top.exists() and not (top / MARKER).is_file())):
            shown = "the dataset" if flag == "--dataset" else flag  # data stats names its dataset with no flag
            raise ConfigError(f"--out {out} lies in the folder of {shown} {spec}, whose files diffzoo reads: what it "
                              "writes there would be read as the dataset's the next time; choose a folder outside it"
                              + ("" if whole else " (or a new one directly in it)"))
