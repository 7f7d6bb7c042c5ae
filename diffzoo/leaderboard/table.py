"""The one table model every leaderboard output renders: :class:`Table` of
:class:`Column` s and :class:`Row` s of :class:`Cell` s.

The layouts fill it (``layouts/``: one table per case, the paper's Tables
2-8, the overview); the renderers draw it (``render/``: Markdown, CSV,
LaTeX, JSON, the console, the HTML site) and format every number with the
functions here, so one value reads the same in every output.

A cell holds a value (a fraction, shown in %) with its 95% CI, or says why
it has none: ``absent`` (no record of the case, or the record lacks the
metric: shown ``—``), ``undefined`` (the record says the metric is undefined
on its images: ``-``) or ``n/a`` (the detector cannot have it: no pixel
output, no semantic maps).  Its ``notes`` are ids of the table's numbered
notes (why a value is missing and how to get it, or a caveat beside one);
in the paper's view it also holds the paper's published number.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from diffzoo.harness.metrics.catalog import MetricInfo, metric_info
from diffzoo.harness.records.document import ResultRecord
from diffzoo.leaderboard.index import CONDITIONS, Group, TableKey, mixed_conditions, record_conditions
from diffzoo.leaderboard.versions import NAME_RE

VALUE, ABSENT, UNDEFINED, NOT_APPLICABLE = "value", "absent", "undefined", "n/a"
"""A cell's status (module doc)."""
DASH = "—"
"""The text of an absent value (and of a missing part of a paper cell)."""
UNDEFINED_TEXT = "-"
NOT_HELD_OUT_NOTE = ("a row marked (not held out) scored images its model was trained on (--allow-train-overlap; "
                     "its records' config.train_overlap counts them): not a held-out result, never ranked")
"""Said under every table with such a row (after its other remarks)."""


def defined(value: Any) -> float | None:
    """A metric value as a number; None where it is undefined (None, NaN, infinite, not a number)."""
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def info_of(metric: str) -> MetricInfo:
    """The catalog's description of ``metric``; a metric it does not know is shown as given."""
    return metric_info(metric) or MetricInfo(metric, metric, None, -math.inf, math.inf, False)


@dataclass(frozen=True)
class Column:
    """One value column: ``key`` is unique in its table and stable (CSV, the site); ``info``
    formats its cells; ``group`` is shown over it and its neighbours of the same group (the
    overview's benchmarks); ``task`` is the output it needs; ``paper`` the paper's name of
    the column ("" where the paper prints no such column); ``flag``: a 0/1 shown as yes/no."""

    key: str
    label: str
    info: MetricInfo
    group: str = ""
    task: str = ""
    definition: str = ""
    paper: str = ""
    flag: bool = False

    @property
    def header(self) -> str:
        return f"{self.label} {self.info.arrow}".strip()


def column(key: str, metric: str, label: str | None = None, **kw: Any) -> Column:
    info = info_of(metric)
    return Column(key, label or info.label, info, **kw)


@dataclass(frozen=True)
class Cell:
    value: float | None = None
    ci: tuple[float, float] | None = None
    status: str = VALUE
    notes: tuple[str, ...] = ()
    detail: str = ""  # e.g. the setting a worst-of value is
    paper: float | None = None  # the paper's published number (the paper's view)
    paper_note: str = ""  # why the paper part is a dash (the paper's view)

    @classmethod
    def of(cls, record: ResultRecord | None, metric: str) -> Cell:
        """``metric`` of ``record`` with its CI (:meth:`of_values`); absent without a record."""
        if record is None:
            return cls(status=ABSENT)
        return cls.of_values(record.metrics, metric, record.body.ci95.get(metric))

    @classmethod
    def of_values(cls, values: Mapping[str, Any], metric: str, ci: Any = None) -> Cell:
        """``metric`` of ``values`` with its CI (a record's ``ci95`` entry, as read); absent
        without the metric, undefined when the value is None or NaN."""
        if metric not in values:
            return cls(status=ABSENT)
        value = defined(values[metric])
        if value is None:
            return cls(status=UNDEFINED)
        return cls(value, tuple(ci) if ci and None not in ci else None)

    @property
    def half_width(self) -> float | None:
        if self.ci is None or None in self.ci:
            return None
        return (self.ci[1] - self.ci[0]) / 2

    @property
    def applicable(self) -> bool:
        return self.status != NOT_APPLICABLE

    @property
    def missing(self) -> bool:
        """No value where the detector could have one."""
        return self.status in (ABSENT, UNDEFINED)

    @property
    def delta(self) -> float | None:
        """Ours minus the paper's."""
        return None if self.value is None or self.paper is None else self.value - self.paper


NA = Cell(status=NOT_APPLICABLE)


@dataclass
class Row:
    """``label`` names the row; ``group`` is its text in the row-group column (a detector in a
    per-detector block, a slice); ``detector`` the registered detector (its page; "" for a
    baseline or a placeholder); ``model`` the paper's model row it is (the paper's view);
    ``notes``: the one reason the whole row lacks values (marked once, after its label);
    ``not_held_out``: its records scored images its model was trained on (its label says so:
    ``NAME (not held out)``); it is never ranked nor marked best."""

    label: str
    cells: dict[str, Cell]
    group: str = ""
    detector: str = ""
    model: str = ""
    rank: int | None = None
    baseline: bool = False
    own_score: bool = False
    notes: tuple[str, ...] = ()
    record_id: str | None = None
    provenance: dict[str, Any] = field(default_factory=dict)
    conditions: dict[str, str] = field(default_factory=dict)
    not_held_out: bool = False

    @property
    def compared(self) -> bool:
        """A detector row whose values compete for rank and best: not a baseline, and held out."""
        return not self.baseline and not self.not_held_out


@dataclass(frozen=True)
class Note:
    id: str
    text: str


@dataclass
class Table:
    """A titled table (module doc).  ``records``: what it shows, for its conditions (named once
    in its header line when shared, a column each where rows differ); ``notes``: the numbered
    notes its cells and rows point to; ``remarks``: said under it always (:data:`NOT_HELD_OUT_NOTE`
    last where a row is not held out); ``hint``: how to get it, shown when no record fed it.
    ``ranked``: a rank column; ``best``: the best detector value per column is marked; ``paper``:
    the paper's view (a model column, and ours | paper | Δ in the columns the paper prints)."""

    id: str
    title: str
    columns: list[Column]
    rows: list[Row]
    records: list[ResultRecord] = field(default_factory=list)
    row_header: str = "detector"
    group_header: str = ""
    notes: list[Note] = field(default_factory=list)
    remarks: list[str] = field(default_factory=list)
    hint: str = ""
    fed: bool = True
    primary: str | None = None
    ranked: bool = False
    best: bool = False
    paper: bool = False
    key: TableKey | None = None  # a per-case table's identity
    case: dict[str, Any] = field(default_factory=dict)  # a per-case table's case definition
    group: Group | None = None  # what every number of a group's table was made under
    version: str = ""  # the version of the layout's definitions (the overview's)

    def __post_init__(self) -> None:
        self.remarks += [NOT_HELD_OUT_NOTE] * any(r.not_held_out for r in self.rows)

    @property
    def empty(self) -> bool:
        return not self.rows and not self.fed

    @property
    def paper_columns(self) -> bool:
        """The paper's view of a table the paper prints columns of."""
        return self.paper and any(c.paper for c in self.columns)

    @cached_property
    def mixed(self) -> list[str]:
        """The conditions a per-case table's rows differ in: one column each (a group's tables
        never mix: :class:`~diffzoo.leaderboard.index.Group`)."""
        return list(mixed_conditions(self.records)) if self.key is not None else []

    @property
    def shared(self) -> dict[str, str]:
        """The conditions every row shares ({} without records), for the header line."""
        if not self.records:
            return {}
        return {k: v for k, v in record_conditions(self.records[0]).items() if k not in self.mixed}

    def note(self, note_id: str) -> Note:
        return next(n for n in self.notes if n.id == note_id)

    @cached_property
    def bests(self) -> dict[str, float | None]:
        """Per column, the best held-out detector value; None when fewer than two detectors have
        one (nothing to compare) or the metric has no better direction."""
        out: dict[str, float | None] = {}
        for col in self.columns:
            values = [v for r in self.rows if r.compared and col.key in r.cells
                      and (v := r.cells[col.key].value) is not None]
            better = col.info.higher_is_better
            out[col.key] = None if len(values) < 2 or better is None else (max(values) if better else min(values))
        return out

    def is_best(self, row: Row, key: str) -> bool:
        """True for a held-out detector row holding its column's best value (tables that mark it)."""
        cell = row.cells.get(key)
        best = self.bests.get(key) if self.best else None
        return row.compared and cell is not None and best is not None and cell.value == best


class Notes:
    """A table's numbered notes: one id per distinct text, numbered as first used."""

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}

    def __call__(self, text: str) -> tuple[str, ...]:
        """The note id of ``text`` (as a cell's or row's ``notes``)."""
        return (self.ids.setdefault(text, str(len(self.ids) + 1)),)

    def listed(self) -> list[Note]:
        return [Note(i, text) for text, i in self.ids.items()]


def renumber(table: Table) -> None:
    """Number ``table``'s notes in reading order (each row's notes, then its cells left to
    right), the rows' and cells' ids changed to match; notes no row or cell uses are dropped."""
    ids: dict[str, str] = {}
    for row in table.rows:
        for n in (*row.notes, *(n for c in table.columns for n in row.cells[c.key].notes if c.key in row.cells)):
            ids.setdefault(n, str(len(ids) + 1))
    for row in table.rows:
        row.notes = tuple(ids[n] for n in row.notes)
        row.cells = {k: c if not c.notes else replace(c, notes=tuple(ids[n] for n in c.notes))
                     for k, c in row.cells.items()}
    table.notes = sorted((Note(ids[n.id], n.text) for n in table.notes if n.id in ids), key=lambda n: int(n.id))


# -- text ---------------------------------------------------------------------------------------
def format_value(info: MetricInfo, value: float | None, digits: int = 1) -> str:
    """Percent for fractions, plain for counts; '-' when undefined."""
    if (value := defined(value)) is None:
        return UNDEFINED_TEXT
    if info.percent:
        return f"{100 * value:.{digits}f}"
    return f"{value:g}"


def format_ci(col: Column, cell: Cell) -> str:
    """Half the CI's width in the value's unit ('' without a CI, a value, or for a yes/no flag)."""
    half = cell.half_width if cell.value is not None and not col.flag else None
    return "" if half is None else (f"{100 * half:.1f}" if col.info.percent else f"{half:g}")


def format_delta(info: MetricInfo, delta: float | None) -> str:
    """Ours minus the paper's in the value's unit (percentage points for fractions), or a dash."""
    return DASH if delta is None else f"{(100 if info.percent else 1) * delta:+.1f}"


def value_text(col: Column, cell: Cell) -> str:
    """The value alone: in %, yes/no for a flag, ``—`` absent, ``-`` undefined, ``n/a``."""
    if cell.status == NOT_APPLICABLE:
        return NOT_APPLICABLE
    if cell.status == ABSENT:
        return DASH
    if cell.value is None:
        return UNDEFINED_TEXT
    if col.flag:
        return "yes" if cell.value >= 0.5 else "no"
    return format_value(col.info, cell.value)


def cell_text(col: Column, cell: Cell, *, ci: Callable[[str, str], str] | None = None,
              mark: Callable[[str], str] | None = None, detail: Callable[[str], str] | None = None) -> str:
    """A cell as text in some markup: ``ci(value, half)`` adds the CI (None: left out),
    ``mark(note_id)`` each note's mark (None: no marks), ``detail(text)`` the detail."""
    text = value_text(col, cell)
    if (half := format_ci(col, cell)) and ci is not None:
        text = ci(text, half)
    if cell.detail and detail is not None:
        text += detail(cell.detail)
    if mark is not None:
        text += "".join(mark(n) for n in cell.notes)
    return text


def slugify(text: str, digits: int = 0) -> str:
    """A slug of ASCII letters, digits, '-', '.', '_', a file name on every system (a version name's
    rule, :data:`~diffzoo.leaderboard.versions.NAME_RE`, on its first 64 characters): one starting
    other than with a letter or digit (``-..-etc``, an option to shell tools) or a device name of
    Windows (``con``, ``nul.x``) gets 8 hex digits of the text's hash appended (``digits``, if given,
    to any slug), and ``x-`` before if it still starts so."""
    out = "".join(ch if (ch.isascii() and ch.isalnum()) or ch in "-._" else "-" for ch in text)
    out = "-".join(part for part in out.split("-") if part).strip(".")[:120] or "x"
    if digits or not NAME_RE.match(out[:64]):
        out = f"{out[:100]}-{hashlib.sha256(text.encode()).hexdigest()[:digits or 8]}"
        out = out if NAME_RE.match(out[:64]) else f"x-{out}"
    return out


def unique_name(name: str, used: set[str]) -> str:
    """``name``, or ``name-2``, ``name-3``... if taken (compared case-insensitively)."""
    out, i = name, 2
    while out.lower() in used:
        out, i = f"{name}-{i}", i + 1
    used.add(out.lower())
    return out


def conditions_line(shared: dict[str, str], skip: tuple[str, ...] = ("dataset", "suite", "metrics")) -> str:
    """``label map X · split Y`` for a header line (``skip``: what the line names already)."""
    return " · ".join(f"{k} {v}" for k, v in shared.items() if k not in skip and k in CONDITIONS)
