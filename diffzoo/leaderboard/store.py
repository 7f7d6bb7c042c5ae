"""The record store: a folder of verified ResultRecord JSON files and the
metric states they were computed from.

Layout of a store (any ``diffzoo run --out`` folder is one)::

    <root>/.diffzoo-out.json                    the folder is diffzoo's (outdir.py)
    <root>/records/<record_id>.json             the current record of each identity
    <root>/states/<sha256>.json                 metric states, named by their content hash
    <root>/replaced/<record_id>.<digest>.json   records a re-run replaced (kept: versions name them)
    <root>/versions/<NAME>.json                 frozen leaderboard versions

A record's id is its identity (what determines its numbers, see
:mod:`diffzoo.harness.records.document`), so a re-run of the same thing has the same
id: :meth:`RecordStore.add` answers "already recorded: ID" and keeps the
stored record, saying which numbers differ when they do (nondeterminism, or
a stored record that fails verification: edited after it was written);
``replace=True`` (``diffzoo run --rerun``) stores the new one and moves the
old one to ``replaced/``.  Nothing is ever deleted.

Before a record is stored its schema, digests and id are checked and every
number is recomputed from its state (:mod:`diffzoo.harness.records.check`);
its states are written first, so a stored record always has them.  Files
are written atomically (temp file + fsync + rename) under an advisory lock
(``flock`` on ``<root>/.lock``), so several processes may add at once; a
writer killed mid-write leaves only a ``.NAME.RANDOM.tmp`` file, which
``leaderboard validate`` / ``verify`` report and ``--clean`` removes.

A store may come from elsewhere (a tarball, a shared folder): every file it
reads (records, states, versions, the folder's marker) must be a regular
file (never a FIFO, socket or device: opened non-blocking and checked
again once open), no larger than its bound, no symbolic link out of the
store, and JSON nested at most ``MAX_JSON_DEPTH`` levels (checked before
parsing).  Any other is named with why; the read-only commands skip it and
say so (:meth:`RecordStore.load`), ``verify`` counts it bad.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from diffzoo.harness.core.errors import ConfigError, RecordError, name_some, not_found
from diffzoo.harness.core.fsutil import (
    FileRefused,
    atomic_write_bytes,
    atomic_write_text,
    parse_json,
    read_regular,
    write_leftover,
)
from diffzoo.harness.records.check import StateSource, record_roots, same, state_problems
from diffzoo.harness.records.document import (
    MAX_RECORD_BYTES,
    REPLACED_DIR,
    STORE_DIRS,
    VERSIONS_DIR,
    Loaded,
    ResultRecord,
    content_digest,
    read_all,
    read_record_file,
    store_lock,
    write_state_file,
)
from diffzoo.harness.records.model import RECORDS_DIR, STATE_DIR
from diffzoo.leaderboard.outdir import DIFFZOO_NAMES, read_marker

log = logging.getLogger(__name__)
RECORD_ID = re.compile(r"[0-9a-f]{1,16}")
"""A record id (16 hex digits, ``record_id_of``) or a prefix of one."""
# The store never overwrites or deletes a file in its folders (STORE_DIRS: states are
# content-addressed, a replaced record is moved to ``replaced/``); every file it reads there is a
# regular file of bounded size and JSON depth inside the store (a link out of it is refused).


@dataclass(frozen=True)
class AddOutcome:
    """What adding one record did.  ``status``: ``added``; ``present`` (a
    record of this identity is stored and was kept; ``differs`` names the
    numbers that differ from it, empty if none); ``replaced`` (``replace=True``:
    the old one moved to ``replaced/``); ``rejected`` (imports only).
    ``reason`` is the sentence to show (``already recorded: ID``, ...)."""

    source: str
    status: str
    reason: str = ""
    record_id: str | None = None
    differs: tuple[str, ...] = ()
    path: Path | None = None
    stored_invalid: bool = False  # ``present``: the stored file of this id is not a valid record, or fails verification


def differences(old: ResultRecord, new: ResultRecord) -> tuple[str, ...]:
    """The numbers of two records of one identity that differ: metric names,
    then ``predictions_digest`` and ``counts.evaluated`` when they do."""
    a, b = old.body, new.body
    out = [m for m in sorted(set(a.metrics) | set(b.metrics)) if not same(a.metrics.get(m), b.metrics.get(m))]
    if a.predictions_digest != b.predictions_digest:
        out.append("predictions_digest")
    if a.counts.evaluated != b.counts.evaluated:
        out.append("counts.evaluated")
    return tuple(out)


def is_unfinished(path: Path) -> bool:
    """An empty version file: a name reserved by a freeze that never wrote it. A freeze writes
    its version whole or not at all; a store copied from elsewhere, or written by another
    tool, can still hold one, and no frozen version is ever empty."""
    try:
        return path.is_file() and not path.is_symlink() and path.stat().st_size == 0
    except OSError:
        return False


class RecordStore:
    def __init__(self, root: Path):
        self.root = Path(root)
        self.records_dir = self.root / RECORDS_DIR
        self.versions_dir = self.root / VERSIONS_DIR
        self.replaced_dir = self.root / REPLACED_DIR

    @property
    def absent(self) -> str:
        """Why ``root`` is no record store, for an error line ("" where it is one)."""
        return "" if self.records_dir.is_dir() else f"{self.root} is not a record store (no {self.records_dir})"

    # -- reading ---------------------------------------------------------------
    def paths(self) -> list[Path]:
        return sorted(self.records_dir.glob("*.json"))

    def load(self) -> Loaded:
        """Every record that is valid, and every file of ``records/`` that is not, with why."""
        return read_all(self.paths())

    def __len__(self) -> int:
        return len(self.paths())

    def get(self, record_id: str) -> ResultRecord:
        """A record by id or unambiguous id prefix (hex digits: never read as a file pattern
        or a path, so ``*`` or ``../x`` names no record).  An id that is not one, names no
        record or is ambiguous is the user's to fix: ConfigError.  Hex digits are read in either case.
        A file :meth:`load` skips (:func:`read_record_file`: invalid, misnamed, dated after the clock)
        is RecordError naming why, so no command shows a record the tables skip."""
        if not RECORD_ID.fullmatch(record_id.lower()):
            raise ConfigError(f"{record_id!r} is not a record id: its 16 hex digits, or a prefix of them "
                              "(diffzoo leaderboard list shows them)")
        record_id = record_id.lower()
        exact = self.records_dir / f"{record_id}.json"
        matches = [exact] if exact.exists() else [p for p in self.paths() if p.stem.startswith(record_id)]
        if len(matches) == 1:
            record, why = read_record_file(matches[0])
            if record is None:
                raise RecordError(f"{matches[0]} is not a valid record, so no table shows it: {'; '.join(why)}")
            return record
        if not matches:  # a record renamed in records/ (its content intact) is named where it is
            held = self.renamed(lambda data: str(data.get("record_id")).startswith(record_id))
            moved = "" if held is None else f": {held[0]} holds record {held[1]} under another file name: name it " \
                f"{held[1]}.json again"
            raise ConfigError(f"no record {record_id!r} in {self.records_dir}{moved}")
        raise ConfigError(f"record id prefix {record_id!r} is ambiguous: {name_some([p.stem for p in matches], 5)}; "
                          "give more of its digits")

    def find(self, record_id: str, digest: str) -> Path | None:
        """The file holding record ``record_id`` with content digest
        ``digest``: the current one, or one a re-run replaced."""
        paths = (self.records_dir / f"{record_id}.json", self.replaced_dir / f"{record_id}.{digest[:16]}.json")
        return next((p for p in paths if (data := self._json(p)) is not None and content_digest(data) == digest), None)

    def renamed(self, holds: Callable[[dict[str, Any]], bool]) -> tuple[Path, str] | None:
        """The file of ``records/`` whose record (a JSON object ``holds`` accepts) is under another
        name than its id, and that id, found in one pass: what an answer of "no such record" names."""
        return next(((p, str(data.get("record_id"))) for p in self.paths()
                     if isinstance(data := self._json(p), dict) and holds(data)), None)

    def _json(self, path: Path) -> Any:
        """What the file ``path`` of this store holds; None where it is no readable JSON file."""
        try:
            return parse_json(read_regular(path, MAX_RECORD_BYTES, within=self.root)) if path.is_file() else None
        except (OSError, ValueError):  # unreadable, not JSON, or refused (FileRefused): no record
            return None

    def kept_problems(self, path: Path) -> list[str]:
        """Why the file ``path`` of ``replaced/`` is not one :meth:`_keep_replaced` keeps (empty: it
        is): a regular file of the store named by a record id and its content (:func:`kept_digest`),
        the only name a version's pin finds it by (:meth:`find`)."""
        try:
            raw = read_regular(path, MAX_RECORD_BYTES, within=self.root)
        except FileRefused as exc:
            return [exc.reason]
        except OSError as exc:
            return [f"cannot be read ({exc.strerror or exc})"]
        rid, _, rest = path.name.partition(".")
        if len(rid) == 16 and RECORD_ID.fullmatch(rid) and rest == f"{kept_digest(raw)}.json":
            return []
        return [f"file name {path.name} is not ID.{kept_digest(raw)}.json (ID a record id), the name "
                f"{REPLACED_DIR}/ keeps its content under: no version finds it there"]

    def orphan_states(self) -> list[Path]:
        """The files of ``states/`` that no file of ``records/`` or ``replaced/`` names: the records
        were removed, or a run stopped (or was kept as already recorded) before writing them."""
        named = {data.get(key) for path in (*self.paths(), *self.replaced_dir.glob("*.json"))
                 if isinstance(data := self._json(path), dict) for key in ("state_file", "compared_state_file")}
        return [p for p in sorted((self.root / STATE_DIR).glob("*.json")) if f"{STATE_DIR}/{p.name}" not in named]

    def state_source(self, record: ResultRecord | None = None) -> StateSource:
        """Where this store's states are (and ``record``'s carried ones)."""
        return StateSource([self.root], record.attachments if record is not None else None)

    def temp_files(self) -> list[Path]:
        """Leftovers of killed writes in the store's folders, and nothing else: the temp files of
        its ``*.json`` files in ``records/``, ``states/``, ``versions/`` and ``replaced/``, of the
        names diffzoo writes at the top of an output folder (never one the marker lists as the
        user's), and empty version files (a name a freeze reserved and never wrote)."""
        try:
            top = DIFFZOO_NAMES - set((read_marker(self.root) or {}).get("foreign", []))
        except ConfigError:  # a marker unread says not which names are the user's: none at the top is taken
            top = frozenset()
        found: list[Path] = []
        for folder in (self.root, *(self.root / d for d in STORE_DIRS)):
            if folder.is_dir():
                found.extend(p for p in folder.iterdir() if (name := write_leftover(p)) is not None
                             and (name in top if folder == self.root else name.endswith(".json")))
        if self.versions_dir.is_dir():
            found.extend(p for p in self.versions_dir.glob("*.json") if is_unfinished(p))
        return sorted(found)

    def clean_temp_files(self) -> list[Path]:
        """Remove leftover temp files, holding the store's lock so that no
        write in progress loses its file; returns what was removed."""
        with store_lock(self.root):
            removed = []
            for path in self.temp_files():
                if path.is_symlink() or not path.is_dir():  # a FIFO or a device named so too: never opened
                    path.unlink(missing_ok=True)
                    removed.append(path)
            return removed

    # -- writing -----------------------------------------------------------------
    def add(self, record: ResultRecord, *, replace: bool = False, source: str | None = None) -> AddOutcome:
        """Store ``record`` and its states.

        RecordError if the record is invalid or edited, or its numbers
        disagree with its state.  A record without a state is stored with a
        warning (it cannot be verified; ``leaderboard verify`` reports it and
        ``leaderboard add`` never imports one)."""
        src = source or record.id
        record.validate()
        problems = state_problems(record, self.state_source(record))
        if record.body.state is None:
            log.warning("record %s has no metric state: stored unverified", record.id)
        elif problems:
            raise RecordError(f"record {record.id}: " + "; ".join(problems), problems=problems)
        with store_lock(self.root):
            path = self.records_dir / f"{record.id}.json"
            if not path.exists():
                self._write(record, path)
                return AddOutcome(src, "added", "", record.id, (), path)
            stored, problems = read_record_file(path)
            if stored is not None and stored.content_digest == record.content_digest:
                return AddOutcome(src, "present", f"already recorded: {record.id}", record.id, (), path)
            differs = differences(stored, record) if stored is not None else ()
            if not replace:
                # numbers that differ from a stored record its own state does not give (edited by hand,
                # as `leaderboard verify` finds) are the stored record's fault, not the run's
                failed = state_problems(stored, self.state_source(stored)) if stored is not None and differs else []
                if stored is None:
                    why = f", but the stored file is invalid ({'; '.join(problems)})"
                elif failed:
                    why = f", but the stored record fails verification ({'; '.join(failed)})"
                else:
                    why = f"; the new numbers differ in {', '.join(differs)} (nondeterminism)" if differs else ""
                return AddOutcome(src, "present", f"already recorded: {record.id}{why}"
                                  + ("; --rerun replaces it" if why else ""), record.id, differs, path,
                                  stored_invalid=stored is None or bool(failed))
            kept = self._keep_replaced(path)
            self._write(record, path)
            return AddOutcome(src, "replaced", f"replaced {record.id} (the old record is kept as {kept})",
                              record.id, differs, path)

    def _write(self, record: ResultRecord, path: Path) -> None:
        for name, blob in record.attachments.items():  # states first: a stored record always has them
            write_state_file(self.root, name, blob)
        atomic_write_text(path, record.to_json())

    def _keep_replaced(self, path: Path) -> Path:
        """Copy the record at ``path`` to ``replaced/`` under its content digest; RecordError if it
        is no regular file of the store diffzoo reads (a FIFO, a link out of the store, too large),
        which is left as it is."""
        try:
            raw = read_regular(path, MAX_RECORD_BYTES, within=self.root)
        except FileRefused as exc:
            raise RecordError(f"cannot replace {exc}; move it away and run again") from None
        kept = self.replaced_dir / f"{path.stem}.{kept_digest(raw)}.json"
        if not kept.exists():
            atomic_write_bytes(kept, raw)
        return kept

    def import_file(self, path: Path) -> AddOutcome:
        """Add the record of a file (another machine's store's, with its states); its outcome, with
        the reason of a rejection.  A record whose identity is stored with other numbers is rejected
        (a conflict)."""
        src = str(path)
        record, problems = read_record_file(path)
        if record is None:
            return AddOutcome(src, "rejected", "; ".join(problems))
        stored = self.records_dir / f"{record.id}.json"
        if stored.exists() and self.find(record.id, record.content_digest) == stored:
            return AddOutcome(src, "present", f"already recorded: {record.id}", record.id, (), stored)
        body = record.body
        if body.state is None:
            return AddOutcome(src, "rejected", state_problems(record, self.state_source())[0], record.id)
        source = StateSource([*record_roots(path), self.root])  # beside the file, else already here
        try:
            carried = {ref.file: source.blob(ref) for ref in (body.state, body.compared_state) if ref is not None}
            outcome = self.add(dataclasses.replace(record, attachments=carried), source=src)
        except RecordError as exc:
            return AddOutcome(src, "rejected", str(exc), record.id)
        if outcome.status == "present" and (outcome.stored_invalid or outcome.differs):
            conflict = (f"record {record.id} conflicts with stored record {record.id}: same run (identity) but "
                        f"different {name_some(outcome.differs, 5)}")
            return dataclasses.replace(outcome, status="rejected",
                                       reason=outcome.reason if outcome.stored_invalid else conflict)
        return outcome


def kept_digest(raw: bytes) -> str:
    """What ``replaced/`` names the bytes ``raw`` of a record file by (``ID.DIGEST.json``): the first
    16 digits of their content digest (of their sha256 where they are no JSON)."""
    try:
        return content_digest(parse_json(raw))[:16]
    except ValueError:
        return hashlib.sha256(raw).hexdigest()[:16]


def expand_record_paths(paths: Iterable[Path]) -> list[Path]:
    """Files as given; folders expand to their records (``records/*.json``
    inside a store, else ``*.json``).  A folder that is no store and holds no
    ``*.json`` is the user's to fix, as a folder that is no store is to every command (exit 2):
    a wrong folder is never "0 records"."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            inner = p / RECORDS_DIR
            found = sorted((inner if inner.is_dir() else p).glob("*.json"))
            if not found and not inner.is_dir():
                raise ConfigError(f"{p} holds no record (no *.json, and no {RECORDS_DIR}/ of a store): give record "
                                  "files, a records/ folder or a store (a `diffzoo run --out` folder)")
            out.extend(found)
        elif p.exists():
            out.append(p)
        else:
            raise not_found(RecordError(f"{p} does not exist"))
    return out
