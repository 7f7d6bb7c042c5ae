"""The format-neutral model of the summary's tables (:mod:`.tables` fills
it, :mod:`.render` draws it): columns that format their cells, rows, tables,
and the index of the records a table reads.

Every table keeps its shape when records are missing: absent cells are
:data:`ABSENT`, a table without any record has no rows and a ``hint`` on
how to get it.  Oracle metrics (best threshold chosen on the evaluated
split) only ever fill their own columns, labelled as such, placed last.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from diffzoo.harness.metrics.catalog import MetricInfo, metric_info
from diffzoo.harness.records.document import ResultRecord
from diffzoo.leaderboard.newest import newest
from diffzoo.leaderboard.tables import Cell, format_ci, format_value, record_cell

ABSENT = "—"
"""A cell whose case was not run (no record, or the record lacks the metric)."""
ORACLE_NOTE = ("columns marked 'oracle thr.' use the best threshold chosen on the evaluated split itself: "
               "an upper bound, not comparable with the fixed-threshold columns")


@dataclass(frozen=True)
class Column:
    """One column: ``key`` is unique in its table, ``info`` formats the cells."""

    key: str
    label: str
    info: MetricInfo
    flag: bool = False  # a 0/1 metric shown as yes/no

    @property
    def oracle(self) -> bool:
        return self.info.oracle

    @property
    def header(self) -> str:
        return f"{self.label} {self.info.arrow}".strip()

    def text(self, cell: Cell | None, ci: Callable[[str, str], str] = lambda v, h: f"{v} ± {h}") -> str:
        """The cell in %: ABSENT when not run, '-' when undefined; ``ci`` adds the half CI."""
        if cell is None:
            return ABSENT
        if self.flag:
            return "-" if cell.value is None else ("yes" if cell.value >= 0.5 else "no")
        text = format_value(self.info, cell.value)
        half = format_ci(self.info, cell) if cell.value is not None else ""
        return ci(text, half) if half else text


@dataclass
class Row:
    label: str
    cells: dict[str, Cell]  # column key -> cell; a missing key is ABSENT
    group: str = ""  # e.g. the detector of a row in a per-detector block


@dataclass
class SummaryTable:
    id: str  # "2a", "3b", ..., "parity"
    title: str
    row_header: str
    columns: list[Column]
    rows: list[Row] = field(default_factory=list)
    group_header: str = ""  # header of the row-group column; "" = no such column
    notes: list[str] = field(default_factory=list)
    hint: str = ""  # how to get this table, shown when no record fed it
    fed: bool = False  # some record fed it (it may still have no rows: every slice left out)

    @property
    def empty(self) -> bool:
        return not self.rows and not self.fed


class RecordIndex:
    """The newest record (:func:`~diffzoo.leaderboard.newest.newest`) per
    (suite, case, detector), and detectors in the order given."""

    def __init__(self, records: Iterable[ResultRecord], detector_order: list[str]):
        self._by: dict[tuple[str, str, str], ResultRecord] = newest(
            records, key=lambda r: (r.body.suite.name, r.body.case_name, r.body.row_name))
        self.order = {name: i for i, name in enumerate(detector_order)}

    def get(self, suite: str, case: str, detector: str) -> ResultRecord | None:
        return self._by.get((suite, case, detector))

    def records(self, suite: str, cases: Iterable[str] | None = None) -> list[ResultRecord]:
        wanted = None if cases is None else set(cases)
        return [r for (s, c, _), r in self._by.items() if s == suite and (wanted is None or c in wanted)]

    def detectors(self, suite: str, cases: Iterable[str] | None = None) -> list[str]:
        names = {r.body.row_name for r in self.records(suite, cases)}
        return sorted(names, key=lambda n: (self.order.get(n, len(self.order)), n))

    def cases(self, suite: str) -> list[str]:
        return list(dict.fromkeys(c for (s, c, _) in self._by if s == suite))


def column(key: str, metric: str, label: str | None = None, flag: bool = False) -> Column:
    info = metric_info(metric) or MetricInfo(metric, metric, None, -math.inf, math.inf, False)
    return Column(key, label or info.label, info, flag)


def prefixed_columns(pairs: Iterable[tuple[str, str]]) -> list[Column]:
    """Columns keyed ``<prefix>:<metric>``, labelled ``<prefix> <metric label>`` (prefix: a task, editor...)."""
    return [column(f"{p}:{m}", m, f"{p} {metric_info(m).label}") for p, m in pairs]


def metric_columns(metrics: Iterable[str], prefix: str = "") -> list[Column]:
    """Columns keyed by metric name, fixed-threshold ones first, oracle ones last."""
    cols = [column(m, m, f"{prefix}{(metric_info(m) or MetricInfo(m, m, None)).label}") for m in metrics]
    return [c for c in cols if not c.oracle] + [c for c in cols if c.oracle]


def cells(record: ResultRecord | None, mapping: dict[str, str]) -> dict[str, Cell]:
    """Column key -> cell of ``record``'s metric; metrics the record lacks stay absent."""
    if record is None:
        return {}
    return {key: record_cell(record, metric) for key, metric in mapping.items() if metric in record.metrics}


def summary_table(idx: RecordIndex, suite: str, cases: Iterable[str] | None, tid: str, title: str,
                  row_header: str, columns: list[Column], rows: Callable[[str], list[Row]], group_header: str = "",
                  notes: Iterable[str] = ()) -> SummaryTable:
    """A table whose rows come per detector from ``rows(detector)``."""
    detectors = idx.detectors(suite, cases)
    notes = list(notes)
    if any(c.oracle for c in columns):
        notes.append(ORACLE_NOTE)
    return SummaryTable(tid, title, row_header, columns, [row for d in detectors for row in rows(d)],
                        group_header, notes, hint=f"no records: run diffzoo run with --suite {suite}",
                        fed=bool(detectors))


def per_detector(idx: RecordIndex, suite: str, case: str, columns: list[Column]) -> Callable[[str], list[Row]]:
    """Rows for :func:`summary_table`: one per detector, its record of ``suite``/``case``."""
    mapping = {c.key: c.key for c in columns}
    return lambda det: [Row(det, cells(idx.get(suite, case, det), mapping))]
