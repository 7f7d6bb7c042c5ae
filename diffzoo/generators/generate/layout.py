"""Writing the DiffSeg30k layout: PNGs, ``labels.json``, ``manifest.jsonl``, per-sample state.

Shared by the ``mini`` builder (``datasets/mini.py``), ``diffzoo generate``
(``pipeline.py``) and ``diffzoo data label-pairs`` (``datasets/pairs.py``), which
build a whole folder at once (:func:`built_in_place_of`).  Files are byte-reproducible: PNGs carry no text chunks or
timestamps, JSON is written with fixed formatting.

:class:`SampleStore` makes a generation resumable.  Each finished sample is
written as image, mask, then its record ``.diffzoo-generate/samples/<id>.json``
(each file atomically: temp file + rename); a sample counts as finished only
when its record exists and the files it names have the recorded sizes and
sha256 digests, so an interrupted run never leaves a half-written sample
counted, nor a file replaced since by other bytes of its size.
``manifest.jsonl`` is rebuilt from the records (sorted by id).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import uuid
from collections.abc import Collection, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from diffzoo.harness.core.errors import ConfigError, name_some
from diffzoo.harness.core.fsutil import atomic_write_bytes, file_kind, read_json, sha256_file, write_leftover, writing
from diffzoo.harness.core.types import LabelSpace
from diffzoo.harness.data.distortions import encode
from diffzoo.harness.data.labelmaps import LABELS_FILE
from diffzoo.harness.data.metadata import MANIFEST_FILE

log = logging.getLogger(__name__)

IMAGE_DIR = "train_copy"
STATE_DIR = ".diffzoo-generate"  # hidden: the DiffSeg30k reader skips it
RECORDS = "samples"


@contextlib.contextmanager
def built_in_place_of(root: Path, writes: Collection[str]) -> Iterator[Path]:
    """A temporary sibling folder to write ``root``'s files into; when the block ends it
    replaces ``root`` (an existing one is moved aside, then removed), and when the block
    raises it is removed: an interrupted build never leaves a half-written folder.

    ``writes``: the names the build puts at the top of ``root``.  An existing ``root``
    holding anything else (a user's folder, the build's own inputs) is refused before any
    work: diffzoo never deletes files it did not make."""
    if os.path.lexists(root):
        if not root.is_dir():
            raise ConfigError(f"{root} is {file_kind(root) or 'a file'}, not a folder this command made; diffzoo "
                              "never deletes files it did not make: choose a new or empty folder")
        if other := sorted(set(os.listdir(root)) - set(writes)):
            raise ConfigError(f"{root} holds {name_some(other, 5)} besides what this command writes "
                              f"({', '.join(sorted(writes))}); diffzoo never deletes files it did not make: choose a "
                              "new or empty folder")
    root.parent.mkdir(parents=True, exist_ok=True)
    tmp = root.parent / f".{root.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        tmp.mkdir()
        yield tmp
        if root.exists():
            old = root.parent / f".{root.name}.old-{uuid.uuid4().hex[:8]}"
            root.rename(old)
            if old.is_dir():
                shutil.rmtree(old, ignore_errors=True)
            else:
                old.unlink()
        tmp.rename(root)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def save(path: Path, data: str | np.ndarray) -> None:
    """Write ``data`` to ``path``, text as UTF-8 and an array as a PNG (into a folder
    :func:`built_in_place_of` makes whole); a full disk names ``path``."""
    blob = data.encode("utf-8") if isinstance(data, str) else encode(data, "PNG")
    with writing(path):
        Path(path).write_bytes(blob)


def labels_text(label_space: LabelSpace) -> str:
    return json.dumps({"names": list(label_space.names), "verified": True}, indent=2) + "\n"


def manifest_text(rows: Iterable[dict[str, Any]]) -> str:
    return "\n".join(json.dumps(r) for r in rows) + "\n"


def sample_paths(root: Path, sample_id: str) -> tuple[Path, Path]:
    """``train_copy/<id>.image.png`` and ``train_copy/<id>.mask.png`` under ``root``."""
    folder = Path(root) / IMAGE_DIR
    return folder / f"{sample_id}.image.png", folder / f"{sample_id}.mask.png"


class SampleStore:
    """Finished samples of a generation at ``root`` (see the module docstring)."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.records_dir = self.root / STATE_DIR / RECORDS
        self._intact: set[str] = set()  # ids whose files this store wrote or found of their record's digests

    def _record_path(self, sample_id: str) -> Path:
        return self.records_dir / f"{sample_id}.json"

    def read(self, sample_id: str) -> dict[str, Any] | None:
        """The record of ``sample_id`` if it finished (files present with the recorded sizes and digests); a
        record not of the shape this store writes for ``sample_id`` (cut short, edited, another
        sample's, not a regular file) is none: the sample is made again."""
        try:
            record = read_json(self._record_path(sample_id))
        except (OSError, ValueError):  # FileRefused too: never a FIFO read
            return None
        # the manifest and the summary read these fields, and list each id once
        if not (isinstance(record, dict) and record.get("id") == sample_id
                and isinstance(row := record.get("row"), dict) and row.get("id") == sample_id):
            return None
        if record.get("status") != "ok":
            return record if record.get("status") == "rejected" and isinstance(record.get("reason"), str) else None
        digests = record.get("sha256", [])  # a record without digests holds sizes alone
        if not (isinstance(sizes := record.get("sizes"), list) and len(sizes) == 2 and isinstance(digests, list)):
            return None
        paths = sample_paths(self.root, sample_id)
        try:  # sizes first: a file missing, cut short or a FIFO is never opened
            if not all(path.stat().st_size == size for path, size in zip(paths, sizes)):
                return None
            other = next((p for p, d in zip(paths, digests) if sample_id not in self._intact and sha256_file(p) != d),
                         None)
        except OSError:
            return None
        if other is not None:
            log.warning("%s: not the file sample %s was written as (its sha256 is not its record's); it counts as "
                        "unfinished, made again by a run whose --n covers its id", other, sample_id)
            return None
        self._intact.add(sample_id)
        return record

    def write_ok(self, sample_id: str, image: np.ndarray, label: np.ndarray, row: dict[str, Any],
                 read: Mapping[str, str]) -> None:
        """Image, mask, then the record (each atomic); ``read``: the sha256 of the files it was made from."""
        paths, blobs = sample_paths(self.root, sample_id), (encode(image, "PNG"), encode(label, "PNG"))
        for path, blob in zip(paths, blobs):
            atomic_write_bytes(path, blob)
        record = {"id": sample_id, "status": "ok", "sizes": [len(b) for b in blobs],
                  "sha256": [hashlib.sha256(b).hexdigest() for b in blobs], "row": row, **read}  # as sha256_file reads
        atomic_write_bytes(self._record_path(sample_id), json.dumps(record, sort_keys=True).encode())
        self._intact.add(sample_id)

    def write_rejected(self, sample_id: str, reason: str, row: dict[str, Any]) -> None:
        """A sample the quality filter rejected: no files, only the record (so a resume skips it)."""
        for path in sample_paths(self.root, sample_id):  # left by an earlier, interrupted attempt
            path.unlink(missing_ok=True)
        record = {"id": sample_id, "status": "rejected", "reason": reason, "row": row}
        atomic_write_bytes(self._record_path(sample_id), json.dumps(record, sort_keys=True).encode())

    def recorded_ids(self) -> list[str]:
        """Ids with a record file (finished or not), sorted."""
        if not self.records_dir.is_dir():
            return []
        return sorted(p.stem for p in self.records_dir.glob("*.json") if not p.name.startswith("."))

    def remove_stale_temp_files(self) -> int:
        """Temp files an interrupted atomic write left behind; returns how many were removed."""
        stale = [p for d in (self.root / IMAGE_DIR, self.records_dir) if d.is_dir() for p in d.iterdir()
                 if write_leftover(p)]
        for p in stale:
            p.unlink(missing_ok=True)
        return len(stale)

    def records(self, ids: Iterable[str]) -> list[dict[str, Any]]:
        """Finished records of ``ids`` in the given order (unfinished ids are left out)."""
        return [r for r in (self.read(i) for i in ids) if r is not None]

    def write_manifest(self, records: Iterable[dict[str, Any]]) -> int:
        """``manifest.jsonl`` from the accepted records, sorted by id; returns the row count."""
        rows = sorted((r["row"] for r in records if r["status"] == "ok"), key=lambda row: row["id"])
        atomic_write_bytes(self.root / MANIFEST_FILE, (manifest_text(rows) if rows else "").encode())
        return len(rows)

    def write_labels(self, label_space: LabelSpace) -> None:
        path = self.root / LABELS_FILE
        data = labels_text(label_space).encode("utf-8")
        if path.is_file() and path.read_bytes() == data:  # bytes: an edit need not decode as text
            return
        if path.is_file():  # the run's settings hold these labels: the file was edited since
            raise ConfigError(f"{path} is not the label map this run wrote ({', '.join(label_space.names)}); "
                              "put it back, or remove it and the run writes it again")
        atomic_write_bytes(path, data)


class BackgroundWriter:
    """Runs write calls in order on one background thread, so that encoding
    and syncing a sample's files overlap the making of the next one.

    A call's error is raised in the caller at a later :meth:`submit` or on
    leaving the ``with`` block, which waits for every write submitted, also
    when the block ends by an exception (Ctrl-C keeps every sample already
    made; that exception, not a write's, then propagates).  A sample counts
    as finished once its record is written, last (:class:`SampleStore`).
    """

    def __init__(self, queued: int = 4):
        from concurrent.futures import ThreadPoolExecutor

        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="diffzoo-writer")
        self._pending: list[Any] = []
        self._queued = queued

    def submit(self, fn: Any, *args: Any) -> None:
        self._settle(self._queued - 1)
        self._pending.append(self._pool.submit(fn, *args))

    def _settle(self, keep: int) -> None:
        """Wait until at most ``keep`` writes are pending; raise the first error."""
        while len(self._pending) > keep:
            self._pending.pop(0).result()

    def __enter__(self) -> BackgroundWriter:
        return self

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        try:
            errors = [exc for future in self._pending if (exc := future.exception()) is not None]
        finally:
            self._pool.shutdown(wait=True)
        # one error reaches the user: the block's own, else the first write's; the rest are one log line each
        for exc in errors[exc_type is None:]:
            log.info("also not written, as the run stopped: %s", exc)
        if errors and exc_type is None:
            raise errors[0]
