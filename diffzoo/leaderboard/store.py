"""The record store: an append-only folder of ResultRecord JSON files.

Layout of a store (any ``diffzoo run --out`` folder is one)::

    <root>/records/<record_id>.json    one validated record per file
    <root>/versions/<NAME>.json        frozen leaderboard versions
    <root>/runs/<run_key>              id of the record of each run (for conflicts)

Records are content-addressed (the id is a hash of the content) and written
atomically (temp file + fsync + rename), so several processes may append at
once: two writers of the same record write the same bytes, and a writer
killed mid-write leaves only a ``.tmp`` file that readers never see.  Adding
is serialised by an advisory lock (``flock``) only so that the conflict
check below and the write are one step; the lock dies with its process.

A *conflict* is a second record for the same run - same detector and
checkpoint, suite version, case, dataset fingerprint, metric version and
seed - with different metrics: one of them is wrong, and the store keeps the
first instead of silently overwriting it.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..harness.cards import stable_hash
from ..harness.errors import RecordError
from ..harness.fsutil import atomic_write_text
from ..harness.records import ResultRecord, schema_problems

log = logging.getLogger(__name__)


def run_key(record: ResultRecord) -> str:
    """What identifies one run: records sharing it must agree on the metrics."""
    d = record.data
    return stable_hash({
        "detector": d["detector"].get("name"),
        "checkpoint": d["detector"].get("checkpoint_sha256"),
        "suite": [d["suite"].get("name"), d["suite"].get("version"), d["suite"].get("definition_hash")],
        "case": d["case"],
        "dataset": d["dataset"].get("fingerprint"),
        "metrics_version": d["metrics_version"],
        "seed": d["seed"],
    })


@dataclass(frozen=True)
class AddOutcome:
    source: str
    status: str  # added | present | rejected
    reason: str = ""
    record_id: str | None = None


class RecordStore:
    def __init__(self, root: Path):
        self.root = Path(root)
        self.records_dir = self.root / "records"
        self.versions_dir = self.root / "versions"
        self.runs_dir = self.root / "runs"

    # -- reading ---------------------------------------------------------------
    def paths(self) -> list[Path]:
        return sorted(self.records_dir.glob("*.json"))

    def __iter__(self) -> Iterator[ResultRecord]:
        for path in self.paths():
            yield ResultRecord.read(path)

    def __len__(self) -> int:
        return len(self.paths())

    def get(self, record_id: str) -> ResultRecord:
        """A record by id or unambiguous id prefix."""
        exact = self.records_dir / f"{record_id}.json"
        if exact.exists():
            return ResultRecord.read(exact)
        matches = sorted(self.records_dir.glob(f"{record_id}*.json")) if record_id else []
        if len(matches) == 1:
            return ResultRecord.read(matches[0])
        if not matches:
            raise RecordError(f"no record {record_id!r} in {self.records_dir}")
        raise RecordError(f"record id prefix {record_id!r} is ambiguous: "
                          + ", ".join(p.stem for p in matches[:5]))

    def check(self) -> list[tuple[Path, list[str]]]:
        """(path, problems) for every stored file that is not a valid record."""
        bad = []
        for path in self.paths():
            record, problems = read_record_file(path)
            if record is not None and path.stem != record.id:
                problems = [f"file name {path.name} does not match its record_id"]
            if problems:
                bad.append((path, problems))
        return bad

    # -- writing -----------------------------------------------------------------
    @contextmanager
    def _locked(self):
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / ".lock", "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def _run_index(self) -> Path:
        """The run-key index; built by one scan for a store that predates it."""
        if not self.runs_dir.is_dir():
            building = Path(tempfile.mkdtemp(prefix=".runs.", dir=self.root))
            for other in self:
                (building / run_key(other)).write_text(other.id)
            os.replace(building, self.runs_dir)  # whole index or none
        return self.runs_dir

    def _conflict(self, record: ResultRecord) -> str | None:
        marker = self._run_index() / run_key(record)
        if not marker.exists():
            return None
        other_id = marker.read_text().strip()
        other_path = self.records_dir / f"{other_id}.json"
        if other_id == record.id or not other_path.exists():
            return None
        other = ResultRecord.read(other_path)
        changed = sorted(m for m in set(other.metrics) | set(record.metrics)
                         if other.metrics.get(m) != record.metrics.get(m))
        if not changed:
            return None
        return (f"conflicts with stored record {other.id}: same run (detector, checkpoint, suite "
                f"version, case, dataset, seed) but different {', '.join(changed[:5])}")

    def add(self, record: ResultRecord) -> Path:
        """Store ``record``; a record already stored is left as it is.

        Raises RecordError if the record is invalid or conflicts with a
        stored one."""
        record.validate()
        with self._locked():
            path = self.records_dir / f"{record.id}.json"
            if path.exists():
                return path
            reason = self._conflict(record)
            if reason:
                raise RecordError(f"record {record.id} {reason}")
            written = record.write(self.records_dir)
            marker = self.runs_dir / run_key(record)
            if not marker.exists():
                atomic_write_text(marker, record.id)
            return written

    def import_files(self, paths: Iterable[Path]) -> list[AddOutcome]:
        """Add records from files (another machine's store); one outcome each,
        with the reason for every rejection."""
        outcomes = []
        for path in expand_record_paths(paths):
            record, problems = read_record_file(path)
            if record is None:
                outcomes.append(AddOutcome(str(path), "rejected", "; ".join(problems)))
                continue
            if (self.records_dir / f"{record.id}.json").exists():
                outcomes.append(AddOutcome(str(path), "present", "already in the store", record.id))
                continue
            try:
                self.add(record)
            except RecordError as exc:
                outcomes.append(AddOutcome(str(path), "rejected", str(exc), record.id))
                continue
            outcomes.append(AddOutcome(str(path), "added", "", record.id))
        return outcomes


def read_record_file(path: Path) -> tuple[ResultRecord | None, list[str]]:
    """(the record, []) if the file at ``path`` is a valid record, else (None, why)."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError) as exc:
        return None, [f"cannot read: {exc}"]
    except json.JSONDecodeError as exc:
        return None, [f"not JSON ({exc.msg} at line {exc.lineno})"]
    problems = schema_problems(data)
    return (None, problems) if problems else (ResultRecord(data), [])


def file_problems(path: Path) -> list[str]:
    """Why the file at ``path`` is not a valid record (empty: it is)."""
    return read_record_file(path)[1]


def expand_record_paths(paths: Iterable[Path]) -> list[Path]:
    """Files as given; folders expand to their records (``records/*.json``
    inside a store, else ``*.json``)."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            inner = p / "records"
            out.extend(sorted((inner if inner.is_dir() else p).glob("*.json")))
        elif p.exists():
            out.append(p)
        else:
            raise RecordError(f"{p} does not exist")
    return out
