"""Frozen leaderboard versions and what a table is built from.

``freeze NAME`` writes ``<store>/versions/NAME.json``: the records included,
each with the content digest of the record as frozen (``record_digests``),
and, for reading at a glance, the dataset fingerprints, suite versions (with
definition hashes) and metric-definition versions they carry; a digest of
each field (``digests``, as a record has) and a ``content_hash`` over every
field but itself, so an edit of any field is found and named.  A version
file is never rewritten.  A record a later ``--rerun`` replaced stays in the
store (``replaced/``), so a version always loads the very records it froze,
and one whose record was edited fails to load, naming it.  Tables are keyed
by suite, dataset and metric versions (:mod:`.index`), so records of
different versions never share a table.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from diffzoo.harness.core.cards import stable_hash
from diffzoo.harness.core.errors import ConfigError, RecordError, did_you_mean
from diffzoo.harness.core.fsutil import atomic_write_text
from diffzoo.harness.core.registry import natural_key
from diffzoo.harness.core.types import nfc
from diffzoo.harness.records.check import state_problems
from diffzoo.harness.records.document import (
    MAX_RECORD_BYTES,
    VERSIONS_DIR,
    ResultRecord,
    content_digest,
    dated_later,
    digest_problems,
    field_digests,
    read_all,
    read_json_file,
    skip_reasons,
    store_lock,
)
from diffzoo.harness.records.fields import HEX64, json_kind
from diffzoo.leaderboard.index import version_order
from diffzoo.leaderboard.store import RECORD_ID, RecordStore, expand_record_paths, is_unfinished

VERSION_SCHEMA = 2
NAME_RE = re.compile(r"^(?!(?i:con|prn|aux|nul|com[1-9]|lpt[1-9])(?:\.|$))[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
"""A version's name: its file ``versions/NAME.json`` can be written on every system (Windows
opens a device for ``con.json``, whatever follows the name)."""


@dataclass(frozen=True)
class Selection:
    """A set of records to publish or compare, and what to call it."""

    label: str  # version name, or "working copy of <store folder's name>"
    records: list[ResultRecord]
    version: dict[str, Any] | None = None  # the version manifest, when frozen
    skipped: tuple[tuple[Path, str], ...] = ()  # files of the folder read that are not valid records, and why


def summarize(records: list[ResultRecord]) -> dict[str, Any]:
    """Datasets, suite versions and metric versions present in ``records``."""
    bodies = [r.body for r in records]
    datasets = {(b.dataset.name, b.dataset.fingerprint) for b in bodies}
    suites = {(b.suite.name, b.suite.version, b.suite.definition_hash) for b in bodies}
    return {
        "datasets": dataset_order([{"name": n, "fingerprint": f} for n, f in datasets]),
        "suites": [{"name": n, "version": v, "definition_hash": h} for n, v, h in sorted(suites)],
        "metrics_versions": sorted({b.metrics_version for b in bodies}),
        "detectors": sorted({b.detector.name for b in bodies}),
    }


def dataset_order(datasets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Datasets (``{name, fingerprint}``) in the one order every listing of them has: natural
    name order (``ds9`` before ``ds10``, :func:`~diffzoo.harness.core.registry.natural_key`)."""
    return sorted(datasets, key=lambda d: (natural_key(str(d["name"])), str(d["fingerprint"])))


def _matches(value: str, patterns: Sequence[str]) -> bool:
    """Whether ``value`` matches a pattern, both read in NFC (a name typed or pasted decomposed
    matches the record's composed one)."""
    return not patterns or any(fnmatchcase(nfc(value), nfc(p)) for p in patterns)


def select(records: list[ResultRecord], *, suites: Sequence[str] = (), datasets: Sequence[str] = (),
           detectors: Sequence[str] = ()) -> list[ResultRecord]:
    """Records whose suite / dataset / detector match the wildcard patterns."""
    return [r for r in records
            if _matches(r.body.suite.name, suites)
            and _matches(r.body.dataset.name, datasets)
            and _matches(r.body.detector.name, detectors)]


def unmatched(records: list[ResultRecord], *, suites: Sequence[str] = (), datasets: Sequence[str] = (),
              detectors: Sequence[str] = ()) -> str:
    """Why :func:`select` kept none of ``records``: each filter that matches no record's name, with
    the names the records have (and the closest one); else that the filters match none together."""
    if not records:
        return "the store holds no records"
    said = []
    for flag, patterns, names in (("--suite", suites, {r.body.suite.name for r in records}),
                                  ("--dataset", datasets, {r.body.dataset.name for r in records}),
                                  ("--detector", detectors, {r.body.detector.name for r in records})):
        if patterns and not any(_matches(n, patterns) for n in names):
            said.append(f"{flag} {','.join(patterns)} matches none of {', '.join(sorted(names))}."
                        f"{did_you_mean(patterns[0], sorted(names))}")
    return " ".join(said) or "no record matches every filter at once"


def freeze(store: RecordStore, name: str, *, suites: Sequence[str] = (), datasets: Sequence[str] = (),
           detectors: Sequence[str] = (), note: str = "") -> Path:
    """Fix a leaderboard version from the store's records (optionally a subset)."""
    if not NAME_RE.match(name):
        raise ConfigError(f"version name {name!r} must be ASCII letters (A-Z, a-z), digits, '.', '_' or '-' "
                          "(at most 64, starting with a letter or digit, no device name of Windows: con, prn, aux, "
                          "nul, com1-9, lpt1-9): it is a file name on every system")
    if name.lower().endswith(".json"):  # the file is versions/NAME.json: never NAME.json.json
        raise ConfigError(f"version name {name!r} ends in .json: give the name, not the file ({name[:-5]!r})")
    try:  # a version file is UTF-8 text; an argument of other bytes reaches Python as lone surrogates
        "".join([note, *suites, *datasets, *detectors]).encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError("--note, --suite, --dataset and --detector must be UTF-8 text: one holds bytes "
                          "that are not") from None
    path = store.versions_dir / f"{name}.json"
    check_finished(path)
    if path.exists():  # the user's to fix by another name: exit 2
        raise ConfigError(f"version {name!r} already exists ({path}); versions are immutable, freeze under a new name")
    _refuse_case_twin(store, name)
    loaded = store.load()
    if loaded.skipped:  # a version names every record it may hold: none is left out unseen
        path, why = loaded.skipped[0]
        raise RecordError(f"cannot freeze {name!r}: {len(loaded.skipped)} file(s) of {store.records_dir} are not "
                          f"valid records (first: {path}: {why}); `diffzoo leaderboard verify` lists them: move "
                          "them away or repair them, then freeze")
    records = select(loaded.records, suites=suites, datasets=datasets, detectors=detectors)
    if not records:  # filters that keep no record are the user's to fix (exit 2); an empty store is not
        why = unmatched(loaded.records, suites=suites, datasets=datasets, detectors=detectors)
        raise (ConfigError if loaded.records else RecordError)(f"nothing to freeze: {why}")
    # a version pins numbers for good: none that its own state does not give (a record without a state
    # is the store's unverified kind, said when it was added)
    if bad := [(r, p) for r in records if r.body.state is not None and (p := state_problems(r, store.state_source(r)))]:
        record, problems = bad[0]
        raise RecordError(f"cannot freeze {name!r}: {len(bad)} record(s) whose numbers their state does not confirm "
                          f"(first: {record.id}: {problems[0]}); `diffzoo leaderboard verify` lists them")
    digests = {r.id: r.content_digest for r in sorted(records, key=lambda r: r.id)}
    manifest = sealed({
        "schema_version": VERSION_SCHEMA,
        "name": name,
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "note": note,
        "filters": {"suites": list(suites), "datasets": list(datasets), "detectors": list(detectors)},
        **summarize(records),
        "records": list(digests),
        "record_digests": digests,
    })
    with store_lock(store.root):
        _refuse_case_twin(store, name)  # again under the lock: one of another case may have been frozen since
        try:  # whole or absent, and two freezes of one name cannot both win
            return atomic_write_text(path, json.dumps(manifest, indent=2, sort_keys=True), exclusive=True)
        except FileExistsError:
            raise ConfigError(f"version {name!r} already exists ({path})") from None


def _refuse_case_twin(store: RecordStore, name: str) -> None:
    """ConfigError if a version whose name differs from ``name`` only in case exists: a store copied
    to a case-insensitive filesystem (macOS, Windows) must keep every version apart."""
    if store.versions_dir.is_dir() and (twin := next((p.stem for p in store.versions_dir.glob("*.json")
                                                      if p.stem != name and p.stem.lower() == name.lower()), None)):
        raise ConfigError(f"version {twin!r} exists, and {name!r} differs from it only in case: the two would be one "
                          "file on a case-insensitive filesystem; freeze under a new name")


# every field of a manifest as freeze writes it (what readers index), in the shapes :func:`_is` reads
_MANIFEST: dict[str, Any] = {
    "name": str, "created": str, "note": str, "content_hash": str, "digests": {"": str},
    "filters": {"suites": [str], "datasets": [str], "detectors": [str]},
    "datasets": [{"name": str, "fingerprint": str}], "suites": [{"name": str, "version": str, "definition_hash": str}],
    "metrics_versions": [str], "detectors": [str], "records": [RECORD_ID], "record_digests": {"": HEX64},
}


def _is(value: Any, kind: Any) -> bool:
    """``value`` has the JSON shape ``kind``: ``str``; a pattern (a string it matches); ``[k]`` (a
    list of ``k``); ``{"": k}`` (an object of ``k`` values); ``{key: k, ...}`` (exactly those keys)."""
    if isinstance(kind, list):
        return isinstance(value, list) and all(_is(v, kind[0]) for v in value)
    if isinstance(kind, dict):
        return isinstance(value, dict) and (all(_is(v, kind[""]) for v in value.values()) if "" in kind else
                                            value.keys() == kind.keys() and all(_is(value[k], kind[k]) for k in kind))
    if isinstance(kind, re.Pattern):
        return isinstance(value, str) and kind.fullmatch(value) is not None
    return isinstance(value, kind)


def sealed(fields: dict[str, Any]) -> dict[str, Any]:
    """A version manifest of ``fields``: with a digest of each field and a content hash over all."""
    body = {**fields, "digests": field_digests(fields)}
    return {**body, "content_hash": stable_hash(body)}


def seal_problems(manifest: dict[str, Any]) -> list[str]:
    """Each field of ``manifest`` edited since :func:`sealed` made it (empty: none); where the
    field digests cannot tell, that the content hash does not match."""
    body = {k: v for k, v in manifest.items() if k != "content_hash"}
    if stable_hash(body) == manifest.get("content_hash"):
        return []
    try:  # a value no freeze writes (NaN, a lone surrogate) has no field digest: the hash alone tells
        named = digest_problems(body, "it was frozen") if isinstance(body.get("digests"), dict) else []
    except ValueError:
        named = []
    return named or ["its content_hash does not match its content: it was changed after it was frozen"]


def check_finished(path: Path) -> None:
    """RecordError for a version file a freeze reserved and never wrote (:func:`~.store.is_unfinished`)."""
    if is_unfinished(path):
        raise RecordError(f"version file {path} is empty: a freeze that did not finish; "
                          "`diffzoo leaderboard verify --clean` removes it, then freeze again")


def version_files(store: RecordStore) -> list[Path]:
    """The store's version files in version order (``v2`` before ``v10``; :func:`~.index.version_order`)."""
    if os.path.lexists(store.versions_dir) and not store.versions_dir.is_dir():  # never read as "none frozen"
        raise RecordError(f"{store.versions_dir} is not a folder: a store keeps its frozen versions there; "
                          "move it away (or back where it was)")
    return sorted(store.versions_dir.glob("*.json"), key=lambda p: (version_order(p.stem), p.stem))


def list_versions(store: RecordStore) -> tuple[list[dict[str, Any]], list[str]]:
    """(the manifests of the store's versions, by name; why each version file that is none cannot
    be read): one bad file never hides the others."""
    manifests, bad = [], []
    for path in version_files(store):
        try:
            manifests.append(read_manifest(store, path.stem))
        except RecordError as exc:
            bad.append(str(exc))
    return manifests, bad


def read_manifest(store: RecordStore, name: str) -> dict[str, Any]:
    """The manifest of version ``name``, checked: schema, the shape of every field
    (``_MANIFEST``), name, a content hash that matches every field (:func:`seal_problems`), and
    a summary its number of records can hold."""
    path = store.versions_dir / f"{name}.json"
    if Path(name).name != name or not path.exists():  # a name that is a path (../x) is no version: never read
        known = [p.stem for p in version_files(store)]
        raise ConfigError(f"no version {name!r} in {store.versions_dir}"
                          + (f" (versions: {', '.join(known)})" if known else " (none frozen yet)"))
    check_finished(path)
    manifest = read_json_file(path, MAX_RECORD_BYTES, "version file", store.root)
    if not isinstance(manifest, dict):
        raise RecordError(f"version file {path} is {json_kind(manifest)}, not a JSON object")
    if manifest.get("schema_version") != VERSION_SCHEMA:
        raise RecordError(f"version file {path} has schema {manifest.get('schema_version')!r}, not {VERSION_SCHEMA}")
    if bad := [key for key, kind in _MANIFEST.items() if not _is(manifest.get(key), kind)]:
        raise RecordError(f"version file {path}: field(s) {', '.join(bad)} missing or not as freeze writes them")
    if sorted(manifest["record_digests"]) != sorted(manifest["records"]):
        raise RecordError(f"version file {path}: record_digests must name every record of the version")
    if manifest.get("name") != name:  # a copy under another name would publish as the version it copies
        raise RecordError(f"version file {path} is version {manifest.get('name')!r}: it was copied or renamed "
                          "after it was frozen")
    if problems := seal_problems(manifest):
        raise RecordError(f"version file {path}: {'; '.join(problems)}")
    # each summary list names at least one, at most as many as the records: the file alone tells
    n, listed = len(manifest["records"]), {key: len(manifest[key]) for key in summarize([])}
    if any(not 0 < count <= n for count in listed.values()):
        raise RecordError(f"version file {path}: its {n} record(s) cannot hold the "
                          f"{', '.join(f'{c} {k}' for k, c in listed.items())} it lists: it was changed after it "
                          "was frozen")
    return manifest


def summary_problems(manifest: dict[str, Any], records: list[ResultRecord]) -> list[str]:
    """What a version file says of its records (datasets, suites, metric versions, detectors) that
    the records themselves do not: what a table's header prints is read from the manifest, so an
    edit there would publish a provenance the numbers do not have."""
    said = {**manifest, "datasets": dataset_order(manifest["datasets"])}  # one frozen in text order says the same
    return [f"it lists {key} {said.get(key)!r}, its records {value!r}: changed after it was frozen"
            for key, value in summarize(records).items() if said.get(key) != value]


def version_paths(store: RecordStore, name: str) -> tuple[dict[str, Any], dict[str, Path | None]]:
    """(manifest, record id -> the file holding the record as frozen, None if
    it is in neither records/ nor replaced/ with that content)."""
    manifest = read_manifest(store, name)
    return manifest, {rid: store.find(rid, digest) for rid, digest in manifest["record_digests"].items()}


def unpinned(store: RecordStore, name: str, rid: str, digest: str) -> str:
    """Why version ``name``'s record ``rid``, frozen with content ``digest``, is in neither records/
    nor replaced/ (:meth:`~.store.RecordStore.find` gave None): a file in its place that cannot be
    read (a folder, no permission, not JSON) is named for what it is, never said to be edited or removed."""
    head = f"version {name} froze record {rid} with content {digest[:16]}..., and "
    path = store.records_dir / f"{rid}.json"
    if os.path.lexists(path):
        try:
            read_json_file(path, MAX_RECORD_BYTES, "record", store.root)
        except RecordError as exc:
            return head + str(exc)
    if moved := store.renamed(lambda data: content_digest(data) == digest):  # its content intact, misnamed
        return head + f"{moved[0]} holds it under another file name: name it {rid}.json again"
    return head + "no record in records/ or replaced/ has that content: it was edited or removed"


def load_version(store: RecordStore, name: str) -> Selection:
    """Version ``name``'s records as frozen; one dated after this machine's clock is skipped, as the
    tables skip it (:func:`~diffzoo.harness.records.document.dated_later`), and named in ``skipped``."""
    manifest, paths = version_paths(store, name)
    read = {}
    for rid, rpath in paths.items():
        if rpath is None:
            raise RecordError(f"{unpinned(store, name, rid, manifest['record_digests'][rid])} "
                              "(`diffzoo leaderboard verify` says more)")
        read[rpath] = ResultRecord.read(rpath)
        if read[rpath].id != rid:  # a pin answered by another record's content never publishes as the one frozen
            raise RecordError(f"version {name} froze record {rid}, and {rpath} holds record {read[rpath].id} "
                              "(`diffzoo leaderboard verify` says more)")
    if problems := summary_problems(manifest, list(read.values())):
        raise RecordError(f"version file {store.versions_dir / f'{name}.json'}: {'; '.join(problems)}")
    later = {path: why[0] for path, record in read.items() if (why := dated_later(record))}
    return Selection(name, [r for path, r in read.items() if path not in later], manifest, tuple(later.items()))


def resolve(ref: str | None, store: RecordStore) -> Selection:
    """What ``ref`` names: None = every record in the store; a version name
    in the store; a version JSON file; a folder of records (a run's --out);
    or one record file.  Of the store or a folder, the files that are not
    valid records are skipped and listed in ``skipped``."""
    if ref is None:
        loaded = store.load()
        # its folder's name only: a published page never shows the publisher's local paths
        return Selection(f"working copy of {store.root.resolve().name}", loaded.records, skipped=tuple(loaded.skipped))
    if not ref:  # pathlib reads "" as the current folder: an unset shell variable would compare or publish it
        raise ConfigError("an empty version name or path was given (an unset shell variable?); give a version, "
                          "a folder of records (. for the current one) or a record or version file")
    if NAME_RE.match(ref) and (store.versions_dir / f"{ref}.json").exists():
        return load_version(store, ref)
    path = Path(ref)
    if path.is_file() and path.suffix == ".json":
        data = read_json_file(path, MAX_RECORD_BYTES, "file")
        if isinstance(data, dict) and "records" in data and "schema_version" in data and "name" in data:
            # the version this very file is: its store is the one it lies in, its name its file name
            if path.parent.name != VERSIONS_DIR:
                raise ConfigError(f"version file {path} is not in a store's {VERSIONS_DIR}/ folder, so its "
                                  "records cannot be found; give the version file in its store, or its name with "
                                  "--store STORE")
            return load_version(RecordStore(path.parent.parent), path.stem)
        record = ResultRecord.of_data(data, f"record {path}")
        why = skip_reasons(path, record)  # skipped, as the tables of a store skip it
        return Selection(str(path), [] if why else [record], skipped=tuple((path, w) for w in why))
    if path.is_dir():
        found = read_all(expand_record_paths([path]))
        return Selection(f"records in {path}", found.records, skipped=tuple(found.skipped))
    if store.absent:  # no store to hold a version of that name: "none frozen yet" would be false
        raise ConfigError(f"{ref!r} is not a folder or file of records, and {store.absent} to hold a version of "
                          "that name; pass --store STORE")
    known = [p.stem for p in version_files(store)]
    raise ConfigError(f"{ref!r} is neither a version in {store.root} "
                      f"({', '.join(known) or 'none frozen yet'}) nor a folder or file of records")
