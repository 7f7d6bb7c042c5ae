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
        """Raise RecordError listing every way this record breaks the schema."""
        problems = schema_problems(self.data)
        if problems:
            raise RecordError("invalid record: " + "; ".join(problems), problems=problems)

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


# Fields that must be objects, and the keys each must have.
_OBJECTS = {
    "detector": ("name",),
    "suite": ("name", "version"),
    "case": ("name",),
    "dataset": ("name", "fingerprint"),
    "metrics": (),
    "threshold_policy": (),
    "counts": (),
    "config": (),
    "environment": (),
}


def schema_problems(data: Any) -> list[str]:
    """Every way ``data`` breaks the record schema (empty: valid).

    Checks required fields, the schema version, field types, metric values
    against their documented ranges (harness/metrics/catalog.py), 95% CIs,
    and that ``record_id`` is the hash of the content (a record edited after
    it was written no longer matches its id).
    """
    from .metrics.catalog import metric_info

    if not isinstance(data, dict):
        return [f"a record is a JSON object, not {type(data).__name__}"]
    problems = []
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        problems.append(f"missing field(s): {', '.join(missing)}")
    version = data.get("schema_version")
    if "schema_version" in data and version != SCHEMA_VERSION:
        problems.append(f"schema version {version!r} is not {SCHEMA_VERSION} (this diffzoo reads version "
                        f"{SCHEMA_VERSION} only)")
    for name, keys in _OBJECTS.items():
        if name not in data:
            continue
        value = data[name]
        if not isinstance(value, dict):
            problems.append(f"field {name!r} must be an object, got {type(value).__name__}")
            continue
        absent = [k for k in keys if k not in value]
        if absent:
            problems.append(f"field {name!r} lacks {', '.join(absent)}")
    if not isinstance(data.get("label_space", []), list):
        problems.append("field 'label_space' must be a list of class names")
    metrics = data.get("metrics")
    if isinstance(metrics, dict):
        for metric, value in metrics.items():
            info = metric_info(metric)
            why = info.check(value) if info else (
                None if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)
                                          and math.isfinite(value)) else f"is {value!r}, not a number")
            if why:
                problems.append(f"metric {metric} {why}")
    ci95 = data.get("ci95") or {}
    if not isinstance(ci95, dict):
        problems.append("field 'ci95' must be an object of metric -> [low, high]")
        ci95 = {}
    for metric, bounds in ci95.items():
        if bounds is None:
            continue
        ok = isinstance(bounds, list) and len(bounds) == 2 and all(
            b is None or (isinstance(b, (int, float)) and not isinstance(b, bool)) for b in bounds)
        if not ok:
            problems.append(f"ci95 of {metric} must be [low, high], got {bounds!r}")
        elif None not in bounds and bounds[0] > bounds[1]:
            problems.append(f"ci95 of {metric} has low {bounds[0]} > high {bounds[1]}")
        elif None not in bounds and (info := metric_info(metric)) and (
                info.check(bounds[0]) or info.check(bounds[1])):
            problems.append(f"ci95 of {metric} {bounds} lies outside the metric's range [{info.low}, {info.high}]")
    if not problems and data.get("record_id") != content_id(data):
        problems.append(f"record_id {data.get('record_id')!r} does not match the record's content "
                        f"(expected {content_id(data)}): it was changed after it was written")
    return problems


def content_id(body: dict[str, Any]) -> str:
    """Content hash of a record without its id and volatile environment date."""
    stable = {k: v for k, v in body.items() if k != "record_id"}
    env = dict(stable.get("environment", {}))
    env.pop("date", None)
    stable["environment"] = env
    return stable_hash(stable, length=16)
