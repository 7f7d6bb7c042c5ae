"""Robustness curves: a metric over distortion strength, the one
computation behind the run summary's PNGs (:mod:`.summary.write`) and the
site's detector pages (:mod:`.render.site_figures`).

Records become :class:`Point` s (a line, the strength parameter and its
value, the metric) and :func:`curve_series` turns points into the lines a
plot draws, on one of two x axes:

- strength ranks (:func:`robustness_series`, the summary): one line per
  distortion family of the distortions suite, x = the rank of a setting's
  strength in its family, 1 = mildest (families differ in units: quality,
  px, sigma); the ``clean`` case is the reference;
- parameter values (:func:`distortion_curves`, the site): one figure per
  (task, dataset, distortion) evaluated at two or more strengths, one line
  per suite version (and the other parameters), x = the parameter that
  varies, the newest record per value; the newest undistorted record
  (of the same suite when there is one) is the reference.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from diffzoo.harness.records.document import ResultRecord
from diffzoo.leaderboard.newest import newest, record_date
from diffzoo.leaderboard.summary.settings import CLEAN, distortion_of, setting_of
from diffzoo.leaderboard.tables import PRIMARY

MILDER_WHEN_HIGHER = ("quality", "size", "fraction")
"""Distortion parameters whose higher values distort less (others, e.g. sigma: more)."""
RATIO_PARAMETERS = ("scale",)
"""Distortion parameters that distort more the farther they are from 1 (by ratio: 0.5 and 2 alike)."""

Series = dict[str, list[tuple[float, float | None]]]
"""Legend label -> (x, y) points; y None where the metric is undefined."""


@dataclass(frozen=True)
class Point:
    """One record on a curve: its ``line``, its strength (``parameter`` =
    ``value``; "" and 0 for a distortion without a numeric parameter), the
    metric ``y`` and the record's ``date``."""

    line: str
    parameter: str
    value: float
    y: float | None
    date: str = ""


@dataclass(frozen=True)
class DistortionCurve:
    """One figure of :func:`distortion_curves`: ``metric`` of ``task`` under
    ``distortion`` on ``dataset``, over ``parameter``; ``reference`` is the
    undistorted record drawn as a horizontal line (None when there is none)."""

    task: str
    dataset: str
    distortion: str
    metric: str
    parameter: str
    series: Series
    reference: ResultRecord | None


def harshness(parameter: str, value: float) -> float:
    """How strongly a setting distorts, comparable within one parameter (higher: harsher)."""
    if parameter in MILDER_WHEN_HIGHER:
        return -value
    return abs(math.log(value)) if parameter in RATIO_PARAMETERS and value > 0 else value


def curve_series(points: Iterable[Point], ranks: bool) -> Series:
    """The lines of ``points``.  ``ranks``: per line (sorted by name) its
    points from mildest to harshest at x = 1, 2, ..., labelled with the
    parameter values (``jpeg (quality 80, 60)``); else per line (in order of
    appearance) x = the parameter's value, the newest point per value."""
    lines: dict[str, list[Point]] = {}
    for p in points:
        lines.setdefault(p.line, []).append(p)
    if not ranks:
        return {line: [(x, p.y) for x, p in newest(pts, key=lambda p: p.value, date=lambda p: p.date).items()]
                for line, pts in lines.items()}
    series: Series = {}
    for line, pts in sorted(lines.items(), key=lambda kv: kv[0]):
        pts.sort(key=lambda p: (harshness(p.parameter, p.value), p.value))
        parameter = pts[0].parameter
        label = f"{line} ({parameter} {', '.join(f'{p.value:g}' for p in pts)})" if parameter else line
        series[label] = [(float(i), p.y) for i, p in enumerate(pts, 1)]
    return series


def robustness_series(records: Iterable[ResultRecord], task: str, metric: str) -> tuple[Series, float | None]:
    """The summary's curves of distortions-suite records (cases named
    ``<setting>.<task>``): per distortion family, (strength rank, value)
    points, 1 = mildest setting; and the clean value."""
    points: list[Point] = []
    clean = None
    for r in records:
        setting, case_task = setting_of(r.body.case_name)
        if case_task != task or metric not in r.metrics:
            continue
        if setting == CLEAN:
            clean = r.metrics[metric]
            continue
        distortion, params = distortion_of(r)
        numeric = [(k, v) for k, v in params.items() if _is_number(v)]
        parameter, value = numeric[0] if numeric else ("", 0)
        points.append(Point(distortion, parameter, value, r.metrics[metric]))
    return curve_series(points, ranks=True), clean


def distortion_curves(records: Iterable[ResultRecord],
                      line_of: Callable[[ResultRecord, str], str] | None = None) -> list[DistortionCurve]:
    """The site's curves of one detector's records: the task's primary
    metric per (task, dataset, distortion) evaluated at two or more values
    of a numeric parameter, sorted by that key.  ``line_of(record, line)``:
    the line a record is drawn on, given its default (suite version and the
    other parameters), e.g. per detector for records of several."""
    groups: dict[tuple[str, str, str, str], list[ResultRecord]] = {}
    for r in records:
        b = r.body
        groups.setdefault((b.task, b.dataset.name, b.dataset.fingerprint, b.distortion), []).append(r)
    curves = []
    for (task, dataset, fingerprint, distortion), recs in sorted(groups.items(), key=lambda kv: str(kv[0])):
        metric = PRIMARY.get(task)
        if distortion == "none" or metric is None:
            continue
        params = [r.body.distortion_params for r in recs]
        varying = sorted(k for k in {k for p in params for k in p}
                         if all(_finite(p.get(k)) for p in params) and len({p.get(k) for p in params}) > 1)
        if not varying:
            continue
        x = varying[0]
        points = []
        for r, p in zip(recs, params):
            rest = ", ".join(f"{k}={v}" for k, v in sorted(p.items()) if k != x)
            line = f"{r.body.suite.name} v{r.body.suite.version}" + (f" ({rest})" if rest else "")
            line = line if line_of is None else line_of(r, line)
            points.append(Point(line, x, p[x], r.metrics.get(metric), record_date(r)))
        suites = {r.body.suite.name for r in recs}
        undistorted = newest(groups.get((task, dataset, fingerprint, "none"), []),
                             key=lambda r: r.body.suite.name in suites)
        reference = undistorted[True] if True in undistorted else undistorted.get(False)
        curves.append(DistortionCurve(task, dataset, distortion, metric, x, curve_series(points, ranks=False),
                                      reference))
    return curves


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _finite(value: Any) -> bool:
    return _is_number(value) and math.isfinite(value)
