"""``leaderboard verify`` and ``validate``: check every record of a store, a
frozen version or a set of files, and find what killed writes left behind.

A record passes when its schema and ranges hold, no field was edited after
it was written (digests), its id is its identity, its file is named by its
id, its state files are present with the sha256 it names, and every number
is recomputed from them (:mod:`diffzoo.harness.records.check`).  A frozen
version passes when its manifest is intact and every record it froze is in
the store with the content digest it was frozen with.  Temp files of killed
writes (``.NAME.RANDOM.tmp``) are listed, never passed over; ``clean``
removes them (under the store's lock).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from diffzoo.harness.core.errors import RecordError
from diffzoo.harness.records.check import StateSource, record_roots, state_problems
from diffzoo.harness.records.document import ResultRecord, read_record_file
from diffzoo.leaderboard.store import RecordStore, expand_record_paths
from diffzoo.leaderboard.versions import summary_problems, unpinned, version_files, version_paths


@dataclass
class BadRow:
    """One record (or, with ``version`` set, one version's pin of a record)
    that failed, and every reason."""

    label: str  # record id, or the file when there is no readable id
    path: Path | None
    problems: list[str]
    version: str | None = None  # a frozen version's problem, found while checking the whole store


@dataclass
class Report:
    label: str
    checked: int = 0
    bad: list[BadRow] = field(default_factory=list)
    temp_files: list[Path] = field(default_factory=list)
    cleaned: list[Path] = field(default_factory=list)
    orphan_states: list[Path] = field(default_factory=list)  # said, never failed: a stopped run leaves them too

    @property
    def bad_records(self) -> int:
        return sum(row.version is None for row in self.bad)

    @property
    def ok(self) -> bool:
        return not self.bad and not self.temp_files

    def check(self, paths: Iterable[Path], bad_of: Callable[[Path], BadRow | None]) -> None:
        """Count each of ``paths`` checked, and the row ``bad_of`` gives a bad one."""
        for path in paths:
            self.checked += 1
            if bad := bad_of(path):
                self.bad.append(bad)


def check_file(path: Path, source: StateSource, expect_id: str | None = None,
               read: tuple[ResultRecord | None, list[str]] | None = None) -> BadRow | None:
    """The problems of the record file at ``path`` (None: it is good); ``read``: what
    :func:`read_record_file` gave for it, where the caller has read it already."""
    record, problems = read if read is not None else read_record_file(path)
    if record is None:
        return BadRow(str(path), path, problems)
    problems = [f"holds record {record.id}, not {expect_id}"] if expect_id not in (None, record.id) else []
    problems += state_problems(record, source)
    return BadRow(record.id, path, problems) if problems else None


def verify_store(store: RecordStore, version: str | None = None, *, clean: bool = False) -> Report:
    """Every record of ``store`` (and every frozen version's pins), or only
    the records of frozen ``version``."""
    source = StateSource([store.root])
    # before any check: what a killed write left is removed, not reported as bad
    cleaned = store.clean_temp_files() if clean else []
    if version is not None:
        report = Report(f"version {version} of {store.root}")
        _check_version(store, version, source, report)
    else:
        report = Report(f"store {store.root}")
        report.check(store.paths(), lambda path: check_file(path, source))
        for path in sorted(store.replaced_dir.glob("*.json")):  # kept as they were: named by content, not verified
            if why := store.kept_problems(path):  # a bad one counts as a bad file; a good one is no record of the store
                report.checked += 1
                report.bad.append(BadRow(str(path), path, why))
        report.orphan_states = store.orphan_states()
        for vpath in version_files(store):
            _check_version(store, vpath.stem, source, report, count=False)
    report.cleaned = cleaned
    named = {row.path for row in report.bad}  # an unfinished version is said once: as the version it is
    report.temp_files = [path for path in store.temp_files() if path not in named]
    return report


def _check_version(store: RecordStore, name: str, source: StateSource, report: Report, count: bool = True) -> None:
    """Version ``name``'s manifest and pins; with ``count`` (verifying the
    version itself) each of its records is checked and counted, else (the
    whole store) its failures are version problems."""
    pin = None if count else name
    try:
        manifest, paths = version_paths(store, name)
    except RecordError as exc:
        report.bad.append(BadRow(f"version {name}", store.versions_dir / f"{name}.json", [str(exc)], name))
        return
    read = {rid: read_record_file(path) for rid, path in paths.items() if path is not None}
    records = [record for record, _ in read.values() if record is not None]
    # a record missing or unreadable is reported below, and says nothing of the summary
    if len(records) == len(paths) and (problems := summary_problems(manifest, records)):
        report.bad.append(BadRow(f"version {name}", store.versions_dir / f"{name}.json", problems, name))
    for rid, path in paths.items():
        report.checked += count
        if path is None:
            report.bad.append(BadRow(rid, None, [unpinned(store, name, rid, manifest["record_digests"][rid])], pin))
        elif count and (bad := check_file(path, source, expect_id=rid, read=read[rid])):
            report.bad.append(bad)


def verify_files(paths: Iterable[Path], *, clean: bool = False) -> Report:
    """``leaderboard validate``: record files or folders (a store, a run's
    --out, a folder of records), each checked against the states beside it;
    temp files in those folders are listed (and removed with ``clean``)."""
    paths = [Path(p) for p in paths]
    report = Report(", ".join(map(str, paths)))
    report.check(expand_record_paths(paths), lambda path: check_file(path, StateSource(record_roots(path))))
    for folder in {p if p.is_dir() else p.parent for p in paths}:
        store = RecordStore(folder.parent if folder.name == "records" else folder)
        if clean and store.temp_files():  # the lock is taken only to clean: a user's folder gets no lock file
            report.cleaned += store.clean_temp_files()
        report.temp_files += store.temp_files()
    report.temp_files = sorted(set(report.temp_files))
    return report
