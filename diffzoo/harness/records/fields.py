"""Reading record fields from JSON with validation: every problem is noted
with the field's dotted path (``detector.checkpoint_sha256``,
``baselines.all_edited.mIoU``) and what was expected, so that one message
lists all that is wrong with a hand-edited record.  Used by
:mod:`.model`; metric ranges come from the catalog.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection
from typing import Any, Literal, overload

from diffzoo.harness.core.fsutil import json_kind
from diffzoo.harness.metrics.catalog import metric_info

HEX64 = re.compile(r"^[0-9a-f]{64}$")


class FieldReader:
    """Reads one JSON object into typed values, noting every problem with the
    field's dotted path."""

    def __init__(self, problems: list[str], obj: Any, where: str, known: Collection[str] | None = None):
        """``known``: the keys the object may have; any other is noted."""
        self.problems, self.where = problems, where
        self.obj = obj if isinstance(obj, dict) else {}
        if not isinstance(obj, dict):
            self.fail("", f"must be an object, got {json_kind(obj)}")
        if known is not None and (extra := sorted(set(self.obj) - set(known))):
            self.fail("", f"has unknown key(s) {', '.join(extra)} (known: {', '.join(known)})")

    def fail(self, key: str, why: str) -> None:
        path = f"{self.where}.{key}" if key and self.where else (key or self.where)
        self.problems.append(f"field {path} {why}")

    def get(self, key: str, default: Any = None, *, required: bool = False) -> Any:
        if key not in self.obj:
            if required:
                self.fail(key, "is missing")
            return default
        return self.obj[key]

    @overload
    def text(self, key: str, *, required: bool = True, optional: Literal[False] = False) -> str: ...
    @overload
    def text(self, key: str, *, required: bool = True, optional: bool) -> str | None: ...

    def text(self, key: str, *, required: bool = True, optional: bool = False) -> str | None:
        """A string; non-empty when ``required``; None allowed when ``optional``."""
        if required and key not in self.obj:
            self.fail(key, "is missing")
            return ""
        value = self.get(key, None if optional else "")
        if value is None and optional:
            return None
        if not isinstance(value, str):
            self.fail(key, f"must be a string, got {value!r}")
            return ""
        if required and not value.strip():
            self.fail(key, "must not be empty")
        return value

    def integer(self, key: str, low: int = 0, high: int | None = None, required: bool = True) -> int:
        """An integer in [low, high); 0 when absent (noted when ``required``) or not an integer."""
        value = self.get(key, 0, required=required)
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(key, f"must be an integer, got {value!r}")
            return 0
        if value < low or (high is not None and value >= high):
            self.fail(key, f"is {value}, outside [{low}, {high if high is not None else 'inf'})")
        return value

    @overload
    def mapping(self, key: str, *, nullable: Literal[False] = False) -> dict[str, Any]: ...
    @overload
    def mapping(self, key: str, *, nullable: bool) -> dict[str, Any] | None: ...

    def mapping(self, key: str, *, nullable: bool = False) -> dict[str, Any] | None:
        value = self.get(key, None if nullable else {})
        if value is None and nullable:
            return None
        if not isinstance(value, dict):
            self.fail(key, f"must be an object, got {json_kind(value)}")
            return {}
        return value

    def hex64(self, key: str, *, required: bool = True) -> str | None:
        value = self.get(key, None, required=required)
        if value is None and (not required or key not in self.obj):  # null is no sha256 where one is required
            return None
        if not isinstance(value, str) or not HEX64.match(value):
            self.fail(key, f"must be 64 lowercase hex digits (a sha256), got {value!r}")
        return value if isinstance(value, str) else None


def is_number(value: Any) -> bool:
    """A JSON number: an int or a float, never a boolean (which Python counts as an int)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_finite(value: Any) -> bool:
    """A JSON number that is finite (no NaN, no infinity)."""
    return is_number(value) and math.isfinite(value)


def _metric_problem(name: str, value: Any) -> str | None:
    """Why ``value`` is not a valid value of metric ``name`` (None: valid)."""
    if (info := metric_info(name)) is not None:
        return info.check(value)
    if value is None or is_finite(value):
        return None
    return f"is {value!r}, not a number"


def metric_table(reader: FieldReader, key: str, values: dict | None) -> dict[str, Any]:
    """A metric name -> value mapping, every value checked against the catalog."""
    for name, value in (values or {}).items():
        if why := _metric_problem(name, value):
            reader.fail(f"{key}.{name}", why)
    return dict(values or {})


def ci_table(r: FieldReader) -> dict[str, Any]:
    """``ci95``: metric -> [low, high] (or null), low <= high, both in the metric's range."""
    out = {}
    for metric, bounds in (r.mapping("ci95") or {}).items():
        out[metric] = bounds
        if bounds is None:
            continue
        where = f"ci95.{metric}"
        ok = isinstance(bounds, list) and len(bounds) == 2 and all(b is None or is_finite(b) for b in bounds)
        info = metric_info(metric)
        if not ok:
            r.fail(where, f"must be [low, high], got {bounds!r}")
        elif None not in bounds and bounds[0] > bounds[1]:
            r.fail(where, f"has low {bounds[0]} > high {bounds[1]}")
        elif None not in bounds and info and (info.check(bounds[0]) or info.check(bounds[1])):
            r.fail(where, f"{bounds} lies outside the metric's range [{info.low}, {info.high}]")
    return out


def confusion_matrix(r: FieldReader, classes: int) -> list[list[int]] | None:
    """``confusion``: null or a classes x classes matrix of counts."""
    value = r.get("confusion")
    if value is None:
        return None
    ok = isinstance(value, list) and len(value) == classes and all(
        isinstance(row, list) and len(row) == classes
        and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in row) for row in value)
    if not ok:
        r.fail("confusion", f"must be a {classes} x {classes} matrix of counts (integers >= 0)")
    return value


def nested_metrics(r: FieldReader, key: str, depth: int) -> dict[str, Any] | None:
    """An object whose values, ``depth`` levels down, are metric tables:
    ``baselines`` (name -> metrics, depth 1), ``slices`` (key -> value ->
    metrics, depth 2); None when the field is null."""
    value = r.mapping(key, nullable=True)

    def walk(where: str, obj: Any, level: int) -> None:
        if not isinstance(obj, dict):
            r.fail(where, "must be an object")
        elif level == 0:
            metric_table(r, where, obj)
        else:
            for name, inner in obj.items():
                walk(f"{where}.{name}", inner, level - 1)

    if value is not None:
        walk(key, value, depth)
    return value
