"""Robustness curves: a metric over distortion strength, the one computation
behind the run summary's PNGs (:func:`diffzoo.leaderboard.render.text.write_summary`)
and the site's (:mod:`.render.site_figures`, :mod:`.render.comparison_plots`).

Every curve starts at its clean point, the undistorted value, drawn at the
left end of a categorical x axis (``clean``, then the settings from the
mildest to the harshest), so a drop reads against where it started:

- strength ranks (:func:`robustness_series`, the summary): one line per
  distortion family of the distortions suite, x = the rank of a setting's
  strength in its family, 1 = mildest (families differ in units: quality,
  px, sigma); the ``clean`` case is every line's clean point;
- parameter values (:func:`distortion_curves`, the site): one figure per
  (task, dataset, distortion) evaluated at two or more strengths, one line
  per suite version (and the other parameters) or per detector, the newest
  record per value; a line's clean point is its detector's newest
  undistorted record of the task (of the same suite when there is one).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from diffzoo.harness.core.registry import natural_key
from diffzoo.harness.records.document import ResultRecord
from diffzoo.harness.records.fields import is_finite, is_number
from diffzoo.leaderboard.index import newest, record_date
from diffzoo.leaderboard.layouts.cases import PRIMARY
from diffzoo.leaderboard.table import defined

MILDER_WHEN_HIGHER = ("quality", "size", "fraction")
"""Distortion parameters whose higher values distort less (others, e.g. sigma: more)."""
RATIO_PARAMETERS = ("scale",)
"""Distortion parameters that distort more the farther they are from 1 (by ratio: 0.5 and 2 alike)."""

Series = dict[str, list[tuple[float, float | None]]]
"""Legend label -> (x, y) points, x = 1, 2, ... from the mildest setting; y None where undefined."""


@dataclass(frozen=True)
class Point:
    """One record on a curve: its ``line``, its strength (``parameter`` = ``value``; "" and 0 for a
    distortion without a numeric parameter), the metric ``y`` and the record's ``date``."""

    line: str
    parameter: str
    value: float
    y: float | None
    date: str = ""


@dataclass(frozen=True)
class DistortionCurve:
    """One figure of :func:`distortion_curves`: ``metric`` of ``task`` under ``distortion`` on
    ``dataset`` over ``parameter``, whose values label the x axis (``ticks``, mildest first);
    ``clean``: each line's clean point (None where its detector has no undistorted record)."""

    task: str
    dataset: str
    distortion: str
    metric: str
    parameter: str
    series: Series
    ticks: list[str]
    clean: dict[str, float | None] = field(default_factory=dict)


def harshness(parameter: str, value: float) -> float:
    """How strongly a setting distorts, comparable within one parameter (higher: harsher)."""
    if parameter in MILDER_WHEN_HIGHER:
        return -value
    return abs(math.log(value)) if parameter in RATIO_PARAMETERS and value > 0 else value


def robustness_series(records: Iterable[ResultRecord], task: str, metric: str,
                      clean: str = "clean") -> tuple[Series, float | None]:
    """The summary's curves of distortions-suite records: per distortion family, its settings
    from the mildest (x = 1, 2, ...; labelled with the parameter values, ``jpeg (quality 80,
    60)``), and the value of the setting ``clean``."""
    lines: dict[str, list[Point]] = {}
    clean_value = None
    for r in records:
        b = r.body
        if b.task != task or metric not in r.metrics:
            continue
        if b.setting == clean:
            clean_value = r.metrics[metric]
            continue
        parameter, value = next(((k, v) for k, v in b.distortion_params.items() if is_number(v)), ("", 0))
        lines.setdefault(b.distortion, []).append(Point(b.distortion, parameter, value, r.metrics[metric]))
    series: Series = {}
    for line, pts in sorted(lines.items()):
        pts.sort(key=lambda p: (harshness(p.parameter, p.value), p.value))
        parameter = pts[0].parameter
        label = f"{line} ({parameter} {', '.join(f'{p.value:g}' for p in pts)})" if parameter else line
        series[label] = [(float(i), p.y) for i, p in enumerate(pts, 1)]
    return series, clean_value


def distortion_curves(records: Iterable[ResultRecord],
                      line_of: Callable[[ResultRecord, str], str] | None = None) -> list[DistortionCurve]:
    """The site's curves: the task's primary metric per (task, dataset, distortion) evaluated at
    two or more values of a numeric parameter, sorted by that key.  ``line_of(record, line)``:
    the line a record is drawn on, given its default (suite version and the other parameters,
    after its row name where that is not the detector's: a calibrated, released or own-score
    row is a line of its own), e.g. per detector for records of several."""
    groups: dict[tuple[str, str, str, str], list[ResultRecord]] = {}
    for r in records:
        b = r.body
        groups.setdefault((b.task, b.dataset.name, b.dataset.fingerprint, b.distortion), []).append(r)
    curves = []
    for (task, dataset, fingerprint, distortion), recs in sorted(
            groups.items(), key=lambda kv: (kv[0][0], natural_key(kv[0][1]), str(kv[0]))):
        metric = PRIMARY.get(task)
        params = [r.body.distortion_params for r in recs]
        varying = sorted(k for k in {k for p in params for k in p}
                         if all(is_finite(p.get(k)) for p in params) and len({p.get(k) for p in params}) > 1)
        if distortion == "none" or metric is None or not varying:
            continue
        x = varying[0]
        values = sorted({p[x] for p in params}, key=lambda v: (harshness(x, v), v))
        undistorted = groups.get((task, dataset, fingerprint, "none"), [])
        lines: dict[str, list[Point]] = {}
        clean: dict[str, float | None] = {}
        for r, p in zip(recs, params):
            rest = ", ".join(f"{k}={v}" for k, v in sorted(p.items()) if k != x)
            line = f"{r.body.suite.name} v{r.body.suite.version}" + (f" ({rest})" if rest else "")
            line = line if r.body.row_name == r.body.detector.name else f"{r.body.row_name}: {line}"
            line = line if line_of is None else line_of(r, line)
            lines.setdefault(line, []).append(Point(line, x, p[x], defined(r.metrics.get(metric)), record_date(r)))
            clean.setdefault(line, _clean(r, undistorted, metric))
        series = {line: [(float(values.index(v) + 1), p.y) for v, p in
                         newest(pts, key=lambda p: p.value, date=lambda p: p.date).items()]
                  for line, pts in lines.items()}
        if all(y is None for pts in series.values() for _, y in pts):
            continue  # no strength has a value: nothing to draw
        curves.append(DistortionCurve(task, dataset, distortion, metric, x, series,
                                      ["clean", *(f"{v:g}" for v in values)], clean))
    return curves


def _clean(record: ResultRecord, undistorted: list[ResultRecord], metric: str) -> float | None:
    """The clean point of ``record``'s line: its detector's newest undistorted record (of the same
    suite when there is one)."""
    mine = [r for r in undistorted if r.body.row_name == record.body.row_name]
    found = newest(mine, key=lambda r: r.body.suite.name == record.body.suite.name)
    reference = found.get(True) or found.get(False)
    return defined(reference.metrics.get(metric)) if reference is not None else None
