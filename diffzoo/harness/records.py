"""Result records: one immutable, self-describing JSON document per
(detector, suite, case) with full provenance.

Schema (version 1) - every field is required unless marked optional:

- ``schema_version`` (int), ``record_id`` (sha256 prefix of the content)
- ``detector``: ``name``, ``card`` (the full card), ``checkpoint_sha256``,
  ``task`` (the model's task), ``pretrained`` (bool)
- ``suite``: ``name``, ``version``, ``definition_hash``
- ``case``: the case definition (name, task, split, distortion, ...)
- ``dataset``: ``name``, ``fingerprint``, ``description`` (adapter details)
- ``label_space``: ordered class names of the metrics' task
- ``metrics``: name -> float (NaN written as null); ``ci95``: name -> [lo, hi]
- ``metrics_version``, ``threshold_policy`` (what decided every threshold)
- ``baselines`` (optional): trivial predictors' metrics on the same data
- ``slices`` (optional): key -> value -> metrics
- ``counts``: ``evaluated``, ``skipped_corrupt``
- ``seed``, ``config`` (training config and run options), ``training`` (log)
- ``environment``: ``packages`` (name -> version), ``git`` (hash or null),
  ``date`` (ISO 8601 UTC), ``host``, ``device``, ``python``
- ``state_file`` (optional): per-image metric state saved beside the record,
  for slicing and bootstrapping without re-running inference.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import platform
import socket
import subprocess
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from .cards import stable_hash
from .errors import RecordError
from .fsutil import atomic_write_text

SCHEMA_VERSION = 1
REQUIRED = (
    "schema_version", "record_id", "detector", "suite", "case", "dataset", "label_space",
    "metrics", "metrics_version", "threshold_policy", "counts", "seed", "config", "environment",
)
PACKAGES = ("diffzoo", "torch", "transformers", "diffusers", "numpy", "datasets", "safetensors")


def _clean(value: Any) -> Any:
    """JSON-safe: NaN/inf -> None, tuples -> lists, numpy scalars -> python."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def git_hash(cwd: Path | None = None) -> str | None:
    """The commit of the diffzoo source tree, if it is a git checkout."""
    here = cwd or Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"], cwd=here, capture_output=True, text=True
    ).stdout.strip()
    return out.stdout.strip() + ("-dirty" if dirty else "")


def environment(device: str) -> dict[str, Any]:
    packages = {}
    for name in PACKAGES:
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            packages[name] = None
    return {
        "packages": packages,
        "git": git_hash(),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "host": socket.gethostname(),
        "device": device,
        "python": platform.python_version(),
    }


@dataclass(frozen=True)
class ResultRecord:
    """An immutable result; ``data`` is the JSON document (see module doc)."""

    data: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def create(cls, **fields: Any) -> ResultRecord:
        body = _clean({"schema_version": SCHEMA_VERSION, **fields})
        body["record_id"] = content_id(body)
        record = cls(body)
        record.validate()
        return record

    @property
    def id(self) -> str:
        return self.data["record_id"]

    @property
    def metrics(self) -> dict[str, float | None]:
        return self.data["metrics"]

    def validate(self) -> None:
        missing = [k for k in REQUIRED if k not in self.data]
        if missing:
            raise RecordError(f"record is missing field(s): {', '.join(missing)}")
        if self.data["schema_version"] != SCHEMA_VERSION:
            raise RecordError(
                f"record schema version {self.data['schema_version']} is not {SCHEMA_VERSION}"
            )

    def to_json(self) -> str:
        return json.dumps(self.data, indent=2, sort_keys=True, allow_nan=False)

    def write(self, directory: Path) -> Path:
        """Write ``<directory>/<record_id>.json`` atomically; never overwrite."""
        path = Path(directory) / f"{self.id}.json"
        if path.exists():
            return path  # content-addressed: same id, same content
        return atomic_write_text(path, self.to_json())

    @classmethod
    def read(cls, path: Path) -> ResultRecord:
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise RecordError(f"cannot read record {path}: {exc}") from exc
        record = cls(data)
        record.validate()
        return record


def content_id(body: dict[str, Any]) -> str:
    """Content hash of a record without its id and volatile environment date."""
    stable = {k: v for k, v in body.items() if k != "record_id"}
    env = dict(stable.get("environment", {}))
    env.pop("date", None)
    stable["environment"] = env
    return stable_hash(stable, length=16)
