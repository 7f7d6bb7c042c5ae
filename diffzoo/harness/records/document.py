"""Result records: one immutable, self-describing, verifiable JSON document
per (detector, suite, case), with its metric state beside it.

Schema (version 2; the typed model is :class:`.model.RecordBody`):

- ``schema_version`` (2), ``record_id`` (the record's identity, below)
- ``detector``: ``name``, ``checkpoint_sha256`` (64 lowercase hex digits),
  ``task``, ``card`` (the full card), ``pretrained``, ``plugin``,
  ``plugin_version``, ``checkpoint_source``
- ``suite``: ``name``, ``version``, ``definition_hash``; ``case``: the case
  definition (name, task, split, distortion, ...)
- ``dataset``: ``name``, ``fingerprint``, ``description`` (adapter details),
  ``label_map`` (``names``, ``sha256``, ``source``, ``verified``: the mask
  value -> class map) and ``split`` (``id``, ``source``: the split scheme)
- ``label_space``: class names of the metrics' task
- ``metrics``: name -> number (NaN written as null); ``ci95``: name -> [lo, hi]
- ``metrics_version``, ``threshold_policy`` (what decided every threshold)
- ``baselines``: trivial predictors' metrics; ``confusion`` (semantic cases);
  ``slices``: key -> value -> metrics
- ``counts``: ``evaluated``, ``skipped_total``, ``skipped_by_reason`` (kind ->
  n), ``skipped`` (the first few: id, kind, reason)
- ``seed`` (0 <= seed < 2**63), ``config`` (training config, run options,
  bootstrap), ``training`` (log)
- ``environment``: ``packages``, ``git``, ``date``, ``host``, ``device``, ``python``
- ``predictions_digest``: sha256 over (image id, prediction digest) of every
  evaluated image, so that two rows claiming one run can be compared
- ``state_file`` / ``state_sha256``: the per-image metric state every number
  is recomputed from (``states/<sha256>.json`` beside ``records/``);
  ``compared_state_*``: the other case's state of a format-parity case
- ``digests``: field (and ``field.key``) -> hash of its value, so an edit to
  any number is named by the field it changed
- ``request``: the run's options, flag name -> value (what ``diffzoo
  reproduce`` runs again; not part of the identity, since it holds paths)

Identity: ``record_id`` hashes what determines the numbers (:func:`identity`):
detector name, card, task, pretrained, plugin and its version, checkpoint
sha256; dataset fingerprint, label map sha256 and split id; label space;
suite name, version and definition hash; the case; metrics version;
threshold policy; seed; config without ``device``, ``strict`` and
``cache_key``.  Not the request, paths, the dataset's name or description,
the date, host, git hash, device or package versions: a re-run of the same
thing has the same id on any machine, and numbers that then differ are
nondeterminism, reported when the store is asked to add it.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import os
import platform
import socket
import subprocess
from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from functools import cached_property
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from diffzoo.harness.core.cards import canonical_json, stable_hash
from diffzoo.harness.core.errors import RecordError
from diffzoo.harness.core.fsutil import (
    FileRefused,
    atomic_write_bytes,
    atomic_write_text,
    exclusive_lock,
    parse_json,
    read_regular,
)
from diffzoo.harness.core.types import nfc
from diffzoo.harness.records.binding import binding_of, made_by
from diffzoo.harness.records.model import (
    FIELDS,
    LOCK_FILE,
    RECORDS_DIR,
    REQUIRED,
    SCHEMA_VERSION,
    STATE_DIR,
    RecordBody,
    StateRef,
    state_file_name,
    utc_date,
)

if TYPE_CHECKING:
    from diffzoo.harness.metrics import EvalState

__all__ = ["SCHEMA_VERSION", "REQUIRED", "FIELDS", "ResultRecord", "RecordBody", "record_problems", "identity",
           "environment"]

PACKAGES = ("diffzoo", "torch", "transformers", "diffusers", "numpy", "datasets", "safetensors")
NOT_IDENTITY_CONFIG = ("device", "strict", "cache_key")
"""Config keys that do not determine the numbers: where it ran, whether a run
would have stopped at a corrupt sample, and a hash derived from the rest."""
_DERIVED = ("schema_version", "record_id", "digests")

REPLACED_DIR, VERSIONS_DIR = "replaced", "versions"
STORE_DIRS = (RECORDS_DIR, STATE_DIR, REPLACED_DIR, VERSIONS_DIR)
"""A record store's folders (:mod:`diffzoo.leaderboard.store`; the states' folder is the record
model's, which names it in every record)."""
MAX_RECORD_BYTES = 64 << 20
"""The largest record file (and frozen version) diffzoo reads: records are tens of KB; a bound
keeps a file copied in from elsewhere from filling the memory."""
MAX_STATE_BYTES = 1 << 30
"""The largest metric state file diffzoo reads (per-image rows: a few hundred bytes an image)."""
FUTURE_SLACK = _dt.timedelta(hours=1)
"""How far a record's date may lie after this machine's clock (another clock running a little
ahead); a later one is refused by ``add``, failed by ``verify`` and ``validate`` and skipped by the
tables, since the newest record wins every table it is in."""
NAMED = ("detector", "suite", "case", "dataset")
"""The fields whose ``name`` a table shows as a row, group or column: written in Unicode NFC
(:func:`~diffzoo.harness.core.types.nfc`), so that ``ü`` composed and decomposed, which print
alike, are never two rows."""


def store_root_of(path: Path | str) -> Path | None:
    """The store that the file at ``path`` lies in (``ROOT/records/ID.json`` -> ``ROOT``), None
    for a file outside a store's folders: what a link in the store must not lead out of."""
    path = Path(path)
    return path.parent.parent if path.parent.name in STORE_DIRS else None


def read_json_file(path: Path | str, limit: int, what: str, within: Path | str | None = None) -> Any:
    """The JSON of the file at ``path``, read by :func:`~diffzoo.harness.core.fsutil.read_regular`
    (a regular file of at most ``limit`` bytes, no link out of ``within``) and parsed with the
    depth bound of :func:`~diffzoo.harness.core.fsutil.parse_json`.  RecordError ``"WHAT PATH
    WHY"`` otherwise, its one problem the why alone."""
    try:  # a key given twice is never diffzoo's writing: json keeps the last, a reader may see the first
        value = parse_json(read_regular(path, limit, within=within), f"{what} {path}", unique_keys=True)
        # a lone surrogate escape (\ud800) is valid JSON but no UTF-8 text: no digest of it can be made
        json.dumps(value, ensure_ascii=False).encode("utf-8")
        return value
    except FileRefused as exc:
        why = exc.reason
    except UnicodeEncodeError as exc:
        why = f"is not UTF-8 text (it holds a lone surrogate, {ascii(exc.object[exc.start:exc.end])[1:-1]})"
    except UnicodeDecodeError:
        why = "is not UTF-8 text"
    except json.JSONDecodeError as exc:
        why = f"is not JSON ({exc.msg} at line {exc.lineno})"
    except OSError as exc:
        why = f"cannot be read ({exc.strerror or exc})"
    raise RecordError(f"{what} {path} {why}", problems=[why])


def clean_json(value: Any, keep_inf: bool = False) -> Any:
    """JSON-safe: NaN (and inf, unless ``keep_inf``: for a check to refuse) -> None, tuples -> lists,
    numpy scalars -> python."""
    if isinstance(value, dict):
        return {str(k): clean_json(v, keep_inf) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean_json(v, keep_inf) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    return None if isinstance(value, float) and (math.isnan(value) or math.isinf(value) and not keep_inf) else value


def git_hash() -> str | None:
    """The commit of the diffzoo source tree, if it is a git checkout."""
    here = Path(__file__).resolve().parent
    try:  # each git command bounded in time, and either failing is no commit known
        head, status = [subprocess.run(["git", *args], cwd=here, capture_output=True, text=True, timeout=5)
                        for args in (("rev-parse", "HEAD"), ("status", "--porcelain", "--untracked-files=no"))]
    except (OSError, subprocess.SubprocessError):
        return None
    if head.returncode != 0:
        return None
    return head.stdout.strip() + ("-dirty" if status.stdout.strip() else "")


def environment(device: str) -> dict[str, Any]:
    packages: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            packages[name] = None
    return {
        "packages": packages,
        "git": git_hash(),
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "device": device,
        "python": platform.python_version(),
    }


# -- identity and integrity -----------------------------------------------------------
def identity(data: dict[str, Any]) -> dict[str, Any]:
    """What determines a record's numbers (see the module doc); its hash is the id."""
    return {**made_by(data, NOT_IDENTITY_CONFIG), "label_space": data["label_space"],
            "suite": {k: data["suite"].get(k) for k in ("name", "version", "definition_hash")},
            "case": data["case"], "metrics_version": data["metrics_version"],
            "threshold_policy": data["threshold_policy"]}


def record_id_of(data: dict[str, Any]) -> str:
    return stable_hash(identity(data), length=16)


def field_digests(data: dict[str, Any]) -> dict[str, str]:
    """A digest per top-level field and per key of each object field
    (``metrics.mIoU``, ``counts.evaluated``), so a change is named precisely."""
    out = {}
    for name in sorted(data):
        if name in ("record_id", "digests"):
            continue
        value = data[name]
        out[name] = content_digest(value)[:16]
        if isinstance(value, dict):
            out.update({f"{name}.{key}": content_digest(v)[:16] for key, v in value.items()})
    return out


def digest_problems(data: dict[str, Any], written: str = "the record was written") -> list[str]:
    """Every field whose value no longer matches the digest written with it (``written``: when).
    A field edited and its digest edited read the same to this check, so each message names both."""
    stored, expected = data.get("digests") or {}, field_digests(data)
    return [f"field {key} was added after {written}, or its digest removed" if key not in stored else
            f"field {key} was removed after {written}, or a digest added for it" if key not in expected else
            f"field {key}, or its digest, was changed after {written}" for key in changed_fields(stored, expected)]


def changed_fields(a: dict[str, str], b: dict[str, str]) -> list[str]:
    """The keys whose digests differ between two :func:`field_digests`, the most specific of each
    (``metrics.mIoU``, not ``metrics`` beside it)."""
    changed = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
    return [k for k in changed if not any(c.startswith(k + ".") for c in changed)]


def content_digest(data: Any) -> str:
    """sha256 of the whole record (digests included): what a frozen version pins."""
    return hashlib.sha256(canonical_json(data, utf8=True)).hexdigest()


def record_problems(data: Any) -> list[str]:
    """Every way ``data`` is not a valid, unedited record (empty: it is).

    The schema and ranges (:class:`RecordBody`), then the digests (naming
    each changed field), then the id against the identity fields.  Numbers
    against the metric state are checked by :mod:`.check`.
    """
    _, problems = RecordBody.parse(data)
    if problems:
        return problems
    if problems := digest_problems(data):
        return problems
    expected = record_id_of(data)
    if data["record_id"] != expected:
        return [f"record_id {data['record_id']!r} does not match the record's identity fields (expected "
                f"{expected}): the detector, data, suite, case, seed or config was changed"]
    return []


def store_lock(root: Path) -> AbstractContextManager[None]:
    """Hold ``root/.lock`` (:func:`exclusive_lock`): every write of records and
    states under ``root`` happens inside it, so cleaning leftover temp files
    under it never removes one being written.  RecordError first where a folder of the store leads
    out of it (a link): every reader refuses a file there, so nothing is written through it."""
    real = Path(os.path.realpath(root))
    for folder in (Path(root) / name for name in STORE_DIRS):
        if real not in (target := Path(os.path.realpath(folder))).parents:
            raise RecordError(f"{folder} leads to {target}, outside {root} (a symbolic link); diffzoo reads only "
                              "files inside the store, so it writes none there: replace the link by the folder")
    return exclusive_lock(Path(root) / LOCK_FILE)


# -- metric states -----------------------------------------------------------------------
def state_blob(state: EvalState) -> tuple[StateRef, bytes]:
    """A state's canonical file content and where it goes (named by its sha256)."""
    blob = canonical_json(state.state_dict(), utf8=True)  # JSON-able by contract (NaN already None)
    sha = hashlib.sha256(blob).hexdigest()
    return StateRef(state_file_name(sha), sha), blob


def write_state_file(root: Path, relpath: str, blob: bytes) -> Path:
    """Write a state at ``root/relpath`` (``states/<sha256>.json``), atomically.
    A file already there is kept only if it holds these very bytes (same
    sha256): anything else is not this state, and diffzoo neither trusts nor
    overwrites it."""
    path = Path(root) / relpath
    if path.is_symlink():
        raise RecordError(f"{path} is a symbolic link; diffzoo writes metric states only as plain files "
                          "(remove the link)")
    if path.exists():
        if read_state_bytes(path, None)[1] == hashlib.sha256(blob).hexdigest():
            return path
        raise RecordError(f"{path} exists but is not the metric state it is named for (its sha256 differs); "
                          "it was not written by diffzoo or was changed: move it away (diffzoo never "
                          "overwrites it)")
    return atomic_write_bytes(path, blob)


def keep_state(root: Path, state: EvalState) -> Path:
    """Write ``state`` into the store at ``root`` (``states/<sha256>.json``), under the store's
    lock: what a run hands its recorder to keep each state as soon as it is summarised."""
    ref, blob = state_blob(state)
    with store_lock(Path(root)):
        return write_state_file(Path(root), ref.file, blob)


def read_state_bytes(path: Path, sha256: str | None, within: Path | str | None = None) -> tuple[bytes, str]:
    """(content, sha256) of a state file (a regular file of at most :data:`MAX_STATE_BYTES`, no
    link out of ``within``: default, the store it lies in); RecordError if missing, unreadable or
    not ``sha256``."""
    try:
        blob = read_regular(path, MAX_STATE_BYTES, within=within if within is not None else store_root_of(path))
    except FileNotFoundError:
        raise RecordError(f"state file {path} is missing; the record's numbers cannot be checked "
                          "(copy the store's states/ folder with its records/)") from None
    except FileRefused as exc:
        raise RecordError(f"state file {exc}") from None
    except OSError as exc:
        raise RecordError(f"cannot read state file {path}: {exc.strerror or exc}") from exc
    actual = hashlib.sha256(blob).hexdigest()
    if sha256 is not None and actual != sha256:
        raise RecordError(f"state file {path} has sha256 {actual[:16]}..., not {sha256[:16]}... that the "
                          "record names: it was changed or replaced")
    return blob, actual


# -- the record ------------------------------------------------------------------------------
def _valid_body(data: Any) -> RecordBody:
    """``data`` parsed by :meth:`RecordBody.parse`; RecordError listing every problem if it is not a record."""
    body, problems = RecordBody.parse(data)
    if problems or body is None:  # None exactly when there are problems
        raise RecordError("invalid record: " + "; ".join(problems), problems=problems)
    return body


@dataclass(frozen=True)
class ResultRecord:
    """An immutable record.  ``data`` is the JSON document, ``body`` its typed
    view (:class:`RecordBody`); ``attachments`` are the state files (path
    relative to the store -> bytes) a new record brings, written by the store."""

    data: dict[str, Any] = field(default_factory=dict)
    attachments: dict[str, bytes] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def create(cls, *, state: EvalState | None = None, compared_state: EvalState | None = None,
               **fields: Any) -> ResultRecord:
        """A sealed record (id and digests computed) from its fields; with
        ``state`` (and ``compared_state`` for a parity case) the record names
        the state files and carries them until stored."""
        fields = {k: v for k, v in fields.items() if k not in _DERIVED}
        for part in NAMED:
            if isinstance(named := fields.get(part), dict) and isinstance(named.get("name"), str):
                fields[part] = {**named, "name": nfc(named["name"])}
        attachments = {}
        if state is not None:  # the state says what made it; verify holds every record naming it to that
            state.bind(binding_of(cls._parsed(fields)))  # the fields as stored (defaults filled in)
        for prefix, st in (("state", state), ("compared_state", compared_state)):
            if st is not None:
                ref, blob = state_blob(st)
                fields[f"{prefix}_file"], fields[f"{prefix}_sha256"] = ref.file, ref.sha256
                attachments[ref.file] = blob
        if state is not None:
            fields["predictions_digest"] = state.predictions_digest()
        data = cls._parsed(fields)
        data["record_id"] = record_id_of(data)
        data["digests"] = field_digests(data)
        record = cls(data, attachments)
        record.validate()
        return record

    @staticmethod
    def _parsed(fields: dict[str, Any]) -> dict[str, Any]:
        """``fields`` as the typed model writes them (validated, defaults filled in); RecordError if invalid."""
        data = clean_json({"schema_version": SCHEMA_VERSION, "record_id": "0" * 16, "digests": {}, **fields})
        if isinstance(metrics := fields.get("metrics"), dict):  # NaN is an undefined metric (null); an infinity is
            data["metrics"] = clean_json(metrics, keep_inf=True)  # none: the metric check refuses it
        return clean_json(_valid_body(data).to_dict())

    @cached_property
    def body(self) -> RecordBody:
        """The typed record; RecordError if ``data`` is not a valid record."""
        return _valid_body(self.data)

    @property
    def id(self) -> str:
        return self.data["record_id"]

    @property
    def metrics(self) -> dict[str, float | None]:
        return self.data["metrics"]

    @cached_property
    def content_digest(self) -> str:
        return content_digest(self.data)

    def validate(self) -> None:
        """Raise RecordError listing every way this record breaks the schema or was edited; also
        for a detector name with outer whitespace or a :data:`NAMED` name not in NFC, which a
        record is refused where it is made and where a store adds it, never where a stored one is
        read (its id hashes the name: no edit could repair it without breaking the versions that
        pin it)."""
        problems = record_problems(self.data)
        if not problems and (name := self.body.detector.name) != name.strip():
            problems = [f"field detector.name {name!r} has leading or trailing whitespace: it would read as "
                        f"{name.strip()!r}, another detector's name (a registered detector's name has none)"]
        if not problems:
            problems = [f"field {part}.name {ascii(name)} is not in Unicode NFC: it prints as {ascii(nfc(name))}, "
                        "another name that looks the same (diffzoo writes names in NFC)"
                        for part in NAMED if (name := str(self.data[part].get("name"))) != nfc(name)]
        if problems:
            raise RecordError("invalid record: " + "; ".join(problems), problems=problems)

    def to_json(self) -> str:
        return json.dumps(self.data, indent=2, sort_keys=True, allow_nan=False)

    def write(self, directory: Path) -> Path:
        """Write ``<directory>/<record_id>.json`` and the states it carries
        (``<directory>/states/``), atomically; an existing record file is
        kept when it holds this record, else RecordError."""
        path = Path(directory) / f"{self.id}.json"
        for name, blob in self.attachments.items():
            write_state_file(Path(directory), name, blob)
        if path.exists():
            if ResultRecord.read(path).content_digest != self.content_digest:
                raise RecordError(f"{path} holds another version of record {self.id}")
            return path
        return atomic_write_text(path, self.to_json())

    @classmethod
    def of_data(cls, data: Any, source: str = "record") -> ResultRecord:
        """A validated record from a parsed JSON value; RecordError naming ``source`` and every problem."""
        if problems := record_problems(data):
            raise RecordError(f"{source} is invalid: " + "; ".join(problems), problems=problems)
        return cls(data)

    @classmethod
    def read(cls, path: Path) -> ResultRecord:
        """The record in the file at ``path`` (:func:`read_json_file`: a regular file of at most
        :data:`MAX_RECORD_BYTES`, no link out of the store it lies in)."""
        return cls.of_data(read_json_file(path, MAX_RECORD_BYTES, "record", store_root_of(path)), f"record {path}")


@dataclass(frozen=True)
class Loaded:
    """The records of a store that could be read, and every file of ``records/`` that could not
    (path, why): what a read-only command shows and skips, saying so."""

    records: list[ResultRecord]
    skipped: list[tuple[Path, str]]


def read_record_file(path: Path) -> tuple[ResultRecord | None, list[str]]:
    """(the record, []) if the file at ``path`` is a valid, unedited record, named by its id in a
    ``records/`` folder and dated no later than :data:`FUTURE_SLACK` after this machine's clock,
    else (None, why).  It is read by :meth:`ResultRecord.read`: a regular file of bounded size and
    depth, no link out of the store it lies in."""
    try:
        record = ResultRecord.read(path)
    except RecordError as exc:
        return None, exc.problems
    return (None, why) if (why := skip_reasons(path, record)) else (record, [])


def skip_reasons(path: Path, record: ResultRecord) -> list[str]:
    """Why ``record``, valid, read from ``path``, is no row of a table ([] if it is one): a copy under
    another name in a ``records/`` folder, or dated later than this machine's clock (:func:`dated_later`)."""
    if path.parent.name == RECORDS_DIR and path.stem != record.id:  # a copy under another name: one row twice
        return [f"file name {path.name} does not match its record_id {record.id}"]
    return dated_later(record)


def dated_later(record: ResultRecord) -> list[str]:
    """Why ``record`` is dated more than :data:`FUTURE_SLACK` after this machine's clock ([] if it is not)."""
    date = record.body.environment.date
    if date and _dt.datetime.fromisoformat(utc_date(date)) > _dt.datetime.now(_dt.UTC) + FUTURE_SLACK:
        return [f"record {record.id} is dated {date}, more than 1 hour after this machine's clock: the newest "
                "record wins every table it is in, so it would win them for good; fix its date (or the clock "
                "of the machine that made it)"]
    return []


def read_all(paths: Iterable[Path]) -> Loaded:
    """The records of the files at ``paths`` that are valid, and every other file with why
    (:func:`read_record_file`)."""
    read = [(path, *read_record_file(path)) for path in paths]
    return Loaded([r for _, r, _ in read if r is not None],
                  [(path, "; ".join(why)) for path, r, why in read if r is None])
