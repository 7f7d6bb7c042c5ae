"""Training curves: what the shared training loop logged, as one PNG.

Two sources give a :class:`TrainingCurves`:

- a model's ``log.jsonl`` (:func:`read_log`, then :func:`curves_from_log`): ``train``
  rows (``step``, ``loss``, ``loss_mean``, ``lr`` per parameter group, ...) and ``val``
  rows (``step``, ``split``, ``metrics``); other events are ignored;
- a result record's ``training`` dict (:func:`curves_from_training`): its ``curve``
  (``step``, ``loss``, ``lr`` of the first parameter group) and ``validation`` points;
  a record made before curves were kept has only ``losses`` (every ``iterations // 100``-th
  step's loss), drawn at the steps that sampling implies.

:func:`training_png` draws the loss (raw, thin, and an exponential moving average, bold),
the learning rate per group and, when there are any, the validation metrics, all against
the step.  Undefined values (None, NaN, text) are left out of the lines, never an error.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from diffzoo.harness.core.fsutil import parse_json
from diffzoo.leaderboard.render.escape import plot_text as _text
from diffzoo.leaderboard.render.plots import _pyplot, _save, _title, integer_ticks, short_legend

NAN = float("nan")
LOG_DECADES = 1.0
"""A loss whose finite positive values span more than this many decades gets a log y axis."""


@dataclass
class TrainingCurves:
    """One training run's curves.  ``loss``, ``loss_mean`` (None: not logged) and every
    ``lr[group]`` hold one value per entry of ``steps`` (NaN where undefined);
    ``validation``: (step, {metric: value}) in step order; ``approximate_steps``: the steps
    were inferred (a record's sampled ``losses``), not logged."""

    steps: list[float] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)
    loss_mean: list[float] | None = None
    lr: dict[str, list[float]] = field(default_factory=dict)
    validation: list[tuple[float, dict[str, float]]] = field(default_factory=list)
    approximate_steps: bool = False

    @property
    def empty(self) -> bool:
        """Nothing to draw: no step with a finite loss and no validation point."""
        return not any(math.isfinite(v) for v in self.loss) and not self.validation


def _num(value: Any) -> float:
    """A finite or NaN float from a JSON value (None, bools, text and junk: NaN)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return NAN
    try:
        return float(value)
    except (OverflowError, ValueError):
        return NAN


def _step(value: Any) -> float | None:
    step = _num(value)
    return step if math.isfinite(step) else None


def _validation(points: Iterable[Any]) -> list[tuple[float, dict[str, float]]]:
    """The validation points (objects with ``step``, ``split``, ``metrics``) with a finite step
    and any metric, in step order, as (step, {metric: value}); a split other than ``val`` is
    named in the metric's key; points at one step are merged."""
    merged: dict[float, dict[str, float]] = {}
    for point in points:
        if isinstance(point, Mapping) and (step := _step(point.get("step"))) is not None:
            obj, split = point.get("metrics"), point.get("split")
            suffix = "" if split in (None, "", "val") else f" ({split})"
            if isinstance(obj, Mapping) and obj:
                merged.setdefault(step, {}).update({f"{name}{suffix}": _num(v) for name, v in obj.items()})
    return sorted(merged.items(), key=lambda p: p[0])


def read_log(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a ``log.jsonl``, one a line; blank, broken (a run killed
    mid-write), too deeply nested (:func:`~diffzoo.harness.core.fsutil.parse_json`) and
    non-object lines are skipped."""
    rows = []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            try:  # a blank line is no JSON either; FileRefused is a ValueError
                row = parse_json(line, str(path))
            except ValueError:
                continue
            if isinstance(row, dict):
                rows.append(row)
    return rows


def curves_from_log(rows: list[dict[str, Any]]) -> TrainingCurves:
    """The curves of ``log.jsonl`` rows (:func:`read_log`).  A step logged twice (a run
    resumed from a save before its last logged row) keeps its last row; ``lr`` given as one
    number is the group ``lr``."""
    train = {step: row for row in rows if isinstance(row, Mapping) and row.get("event") == "train"
             and (step := _step(row.get("step"))) is not None}
    steps = sorted(train)
    groups: dict[str, None] = {}
    for step in steps:
        lr = train[step].get("lr")
        if isinstance(lr, Mapping):
            groups.update(dict.fromkeys(map(str, lr)))
        elif lr is not None:
            groups["lr"] = None

    def lr_of(row: Mapping[str, Any], group: str) -> float:
        lr = row.get("lr")
        if isinstance(lr, Mapping):
            return _num(next((v for k, v in lr.items() if str(k) == group), None))
        return _num(lr) if group == "lr" else NAN

    loss = [_num(train[s].get("loss")) for s in steps]
    mean = [_num(train[s].get("loss_mean")) for s in steps]
    # logged every step, the mean since the previous row is the loss itself: drawn once
    has_mean = any("loss_mean" in train[s] for s in steps) and any(
        a != b and not (math.isnan(a) and math.isnan(b)) for a, b in zip(loss, mean))
    return TrainingCurves(
        steps=steps, loss=loss, loss_mean=mean if has_mean else None,
        lr={g: [lr_of(train[s], g) for s in steps] for g in groups},
        validation=_validation(row for row in rows if isinstance(row, Mapping) and row.get("event") == "val"))


def _legacy_steps(n: int, iterations: Any) -> tuple[list[float], bool]:
    """Steps of a record's ``losses`` (the trainer kept every ``len // 100``-th step's loss,
    first step 1); without a usable ``iterations``: 1..n, marked approximate."""
    total = _step(iterations)
    if total is not None and total >= n > 0:
        stride = max(1, int(total) // 100)
        if (n - 1) * stride + 1 <= total:
            return [float(1 + i * stride) for i in range(n)], stride > 1
        return [1 + i * (total - 1) / max(n - 1, 1) for i in range(n)], True
    return [float(i + 1) for i in range(n)], True


def curves_from_training(training: Any) -> TrainingCurves | None:
    """The curves of a record's ``training`` dict: its ``curve`` and ``validation``, or
    (older records) its sampled ``losses``.  None when it holds nothing to draw."""
    if not isinstance(training, Mapping):
        return None
    curve = training.get("curve")
    steps: list[float] = []
    loss: list[float] = []
    lr: dict[str, list[float]] = {}
    approximate = False
    if isinstance(curve, Mapping) and isinstance(curve.get("step"), list) and isinstance(curve.get("loss"), list):
        pairs = [(_step(s), _num(v)) for s, v in zip(curve["step"], curve["loss"])]
        keep = [i for i, (s, _) in enumerate(pairs) if s is not None]
        steps, loss = [s for s, _ in pairs if s is not None], [pairs[i][1] for i in keep]
        raw_lr = curve.get("lr")
        named = raw_lr if isinstance(raw_lr, Mapping) else {"lr": raw_lr}
        for group, values in named.items():
            if isinstance(values, list):
                lr[str(group)] = [_num(values[i]) if i < len(values) else NAN for i in keep]
    elif isinstance(training.get("losses"), list) and training["losses"]:
        loss = [_num(v) for v in training["losses"]]
        steps, approximate = _legacy_steps(len(loss), training.get("iterations"))
    curves = TrainingCurves(steps=steps, loss=loss, lr=lr, validation=_validation(training.get("validation") or ()),
                            approximate_steps=approximate)
    return None if curves.empty else curves


def ema(values: list[float], weight: float) -> list[float]:
    """Exponential moving average (bias-corrected, as TensorBoard's smoothing): NaN values
    are skipped (the average carries on), NaN before the first finite value."""
    out, avg, norm = [], 0.0, 0.0
    for v in values:
        if math.isfinite(v):
            avg, norm = weight * avg + (1 - weight) * v, weight * norm + (1 - weight)
        out.append(avg / norm if norm > 0 else NAN)
    return out


def _smoothing(n: int) -> float:
    """EMA weight for ``n`` points: about a tenth of the run (at most ten points), 0 (no
    smoothing) for ten points or fewer."""
    return min(0.9, max(0.0, 1.0 - 10.0 / n)) if n else 0.0


def _finite(xs: list[float], ys: list[float]) -> tuple[list[float], list[float]]:
    pts = [(x, y) for x, y in zip(xs, ys) if math.isfinite(x) and math.isfinite(y)]
    return [p[0] for p in pts], [p[1] for p in pts]


def _spans_decade(values: Iterable[float]) -> bool:
    pos = [v for v in values if math.isfinite(v) and v > 0]
    return bool(pos) and math.log10(max(pos) / min(pos)) > LOG_DECADES


def _note(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", color="grey", fontsize=9)


def _line(ax, xs: list[float], ys: list[float], **style) -> bool:
    """Draw the finite points of (xs, ys); a lone point gets a marker.  True if any was drawn."""
    xs, ys = _finite(xs, ys)
    if not xs:
        return False
    if len(xs) < 3:
        style.setdefault("marker", "o")
    ax.plot(xs, ys, **style)
    return True


def _loss_panel(ax, curves: TrainingCurves) -> None:
    steps = curves.steps
    drawn = _line(ax, steps, curves.loss, color="#1f77b4", alpha=0.35, linewidth=0.8, label="loss")
    if curves.loss_mean is not None:
        drawn |= _line(ax, steps, curves.loss_mean, color="#ff7f0e", alpha=0.7, linewidth=1.0, linestyle="--",
                       label="mean since previous row")
    weight = _smoothing(sum(math.isfinite(v) for v in curves.loss))
    if weight > 0:
        _line(ax, steps, ema(curves.loss, weight), color="#1f77b4", linewidth=2.2,
              label=f"loss, smoothed (EMA {weight:.2f})")
    if not drawn:
        _note(ax, "no finite loss logged")
    elif _spans_decade([*curves.loss, *(curves.loss_mean or [])]):
        ax.set_yscale("log")
    ax.set_ylabel("loss")


def _lr_panel(ax, curves: TrainingCurves) -> None:
    drawn = False
    for group, values in curves.lr.items():
        drawn |= _line(ax, curves.steps, values, linewidth=1.4, label=_text(group))
    every = [v for values in curves.lr.values() for v in values if math.isfinite(v)]
    if not drawn:
        _note(ax, "no learning rate logged")
    elif any(v > 0 for v in every):
        ax.set_yscale("log", nonpositive="mask")
    ax.set_ylabel("learning rate")


def _validation_panel(ax, curves: TrainingCurves) -> None:
    names = list(dict.fromkeys(name for _, metrics in curves.validation for name in metrics))
    drawn = False
    for name in names:
        xs = [step for step, metrics in curves.validation if name in metrics]
        ys = [metrics[name] for _, metrics in curves.validation if name in metrics]
        drawn |= _line(ax, xs, ys, marker="o", markersize=4, linewidth=1.4, label=_text(name))
    if not drawn:
        _note(ax, "no defined validation metric")
    ax.set_ylabel("validation metric")


def training_png(curves: TrainingCurves, path: Path, title: str = "") -> Path:
    """The loss, learning rate and (when any) validation panels of ``curves`` as one PNG,
    written atomically to ``path``; returns ``path``."""
    plt = _pyplot()
    panels = [_loss_panel, _lr_panel] + ([_validation_panel] if curves.validation else [])
    fig, axes = plt.subplots(len(panels), 1, figsize=(8.0, 0.6 + 2.5 * len(panels)), squeeze=False,
                             layout="constrained")
    xs = [s for s in curves.steps if math.isfinite(s)] + [s for s, _ in curves.validation]
    for ax, panel in zip(axes[:, 0], panels):
        panel(ax, curves)
        ax.xaxis.set_major_locator(integer_ticks())
        ax.set_xlabel("step (inferred from sampled losses)" if curves.approximate_steps else "step")
        ax.grid(True, alpha=0.3)
        if xs:
            pad = 1.0 if min(xs) == max(xs) else 0.02 * (max(xs) - min(xs))
            ax.set_xlim(min(xs) - pad, max(xs) + pad)
        short_legend(ax, fontsize=8)
    _title(fig, title or "training", fig)
    return _save(fig, path, dpi=110, bbox_inches="tight")
