"""Leaderboard tables: the one model every output format renders.

A table holds the records of one (suite, suite version, suite definition
hash, case, dataset fingerprint, metric-definition version): records that
differ in any of these never share a table, so a newer suite version starts
a new table (a new column set) instead of overwriting the old rows.  Rows are
detectors (plus the trivial baselines a record carries), ranked by the
table's primary metric; each row keeps its provenance.

Rows of one table must also share the label map and split their numbers
were made under (:data:`CONDITIONS`; not in the key, so that a mix is seen
rather than silently split): :func:`check_mixing` refuses a table whose rows
differ, unless mixing is allowed, and then the renderers add a column per
condition that differs (``Table.mixed``); a condition all rows share is named
once, in the table's header line (``Table.shared``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from diffzoo.harness.core.errors import ConfigError
from diffzoo.harness.metrics.catalog import COUNT_METRICS, MetricInfo, metric_info
from diffzoo.harness.records.document import ResultRecord
from diffzoo.leaderboard.newest import newest, record_date

# Columns shown per case task, in order (others stay in the JSON/CSV output).
SHOWN = {
    "binary": ("aAcc", "mIoU", "bF1", "F1", "pixel_AUC", "gIoU", "FPR_authentic"),
    "semantic": ("aAcc", "mAcc", "mIoU", "bF1", "top1", "top3"),
    "image": ("img_Acc", "img_real_Acc", "img_edited_Acc", "img_AP", "img_AUC"),
}
PRIMARY = {"binary": "mIoU", "semantic": "mIoU", "image": "img_AP"}


@dataclass(frozen=True)
class TableKey:
    suite: str
    suite_version: str
    definition_hash: str
    case: str
    task: str
    dataset: str
    fingerprint: str
    metrics_version: str

    @classmethod
    def of(cls, record: ResultRecord) -> TableKey:
        b = record.body
        cross = (b.case.get("options") or {}).get("eval_dataset")  # one table per evaluated split
        return cls(
            suite=b.suite.name, suite_version=b.suite.version, definition_hash=b.suite.definition_hash,
            case=f"{b.case_name} ({b.case.get('split')})" if cross else b.case_name, task=b.task,
            dataset=b.dataset.name, fingerprint=b.dataset.fingerprint,
            metrics_version=b.metrics_version,
        )

    @property
    def title(self) -> str:
        return f"{self.suite} v{self.suite_version} / {self.case} on {self.dataset}"

    @property
    def slug(self) -> str:
        return slugify(f"{self.suite}-v{self.suite_version}-{self.case}-{self.dataset}-{self.fingerprint[:8]}"
                       f"-m{self.metrics_version}-{self.definition_hash[:8]}")


@dataclass(frozen=True)
class Cell:
    value: float | None
    ci: tuple[float, float] | None = None

    @property
    def half_width(self) -> float | None:
        if self.ci is None or None in self.ci:
            return None
        return (self.ci[1] - self.ci[0]) / 2


@dataclass
class Row:
    detector: str
    cells: dict[str, Cell]
    baseline: bool = False
    record_id: str | None = None
    provenance: dict[str, Any] = field(default_factory=dict)
    rank: int | None = None
    conditions: dict[str, str] = field(default_factory=dict)  # see record_conditions
    name: str = ""
    """The detector's registered name (its page); ``detector`` is the row's label, which adds
    "(own image score)" to a detector's second image row (ResultBody.row_name)."""

    @property
    def page(self) -> str:
        return self.name or self.detector


class RecordConditions:
    """What a table of ``records`` shows of their :data:`CONDITIONS` (the
    leaderboard's tables and the paper report's)."""

    records: list[ResultRecord]

    @cached_property
    def mixed(self) -> list[str]:
        """The conditions its rows differ in: one column each."""
        return list(mixed_conditions(self.records))

    @property
    def shared(self) -> dict[str, str]:
        """The conditions every row shares ({} without records), for the table's header line."""
        if not self.records:
            return {}
        return {k: v for k, v in record_conditions(self.records[0]).items() if k not in self.mixed}


@dataclass
class Table(RecordConditions):
    key: TableKey
    columns: list[MetricInfo]
    rows: list[Row]
    case: dict[str, Any]
    records: list[ResultRecord]

    @property
    def primary(self) -> str | None:
        name = PRIMARY.get(self.key.task)
        return name if any(c.name == name for c in self.columns) else None

    @cached_property
    def bests(self) -> dict[str, float | None]:
        """Per column, the best non-baseline value (for bold marks); None when
        fewer than two detectors have a value (nothing to compare) or the
        metric has no better direction."""
        out: dict[str, float | None] = {}
        for info in self.columns:
            values = [r.cells[info.name].value for r in self.rows
                      if not r.baseline and r.cells.get(info.name) and r.cells[info.name].value is not None]
            if len(values) < 2 or info.higher_is_better is None:
                out[info.name] = None
            else:
                out[info.name] = max(values) if info.higher_is_better else min(values)
        return out

    def is_best(self, row: Row, metric: str) -> bool:
        """True for a detector row holding its column's best value."""
        cell = row.cells.get(metric)
        best = self.bests.get(metric)
        return not row.baseline and cell is not None and best is not None and cell.value == best


def render_cell(table: Table, row: Row, col: MetricInfo, *, ci: Callable[[str, str], str],
                best: Callable[[str], str] = lambda text: text) -> str:
    """A cell as text in some markup: ``ci(value, half_width)`` adds the CI,
    ``best(text)`` marks the column's best detector value."""
    cell = row.cells.get(col.name)
    if cell is None:
        return "-"
    text = format_value(col, cell.value)
    half = format_ci(col, cell)
    if half:
        text = ci(text, half)
    if table.is_best(row, col.name):
        text = best(text)
    return text


def slugify(text: str) -> str:
    """A file-name-safe slug (ASCII letters, digits, '-', '.', '_')."""
    out = "".join(ch if (ch.isascii() and ch.isalnum()) or ch in "-._" else "-" for ch in text)
    out = "-".join(part for part in out.split("-") if part)
    return out.strip(".")[:120] or "x"


def provenance(record: ResultRecord) -> dict[str, Any]:
    b = record.body
    det, env = b.detector, b.environment
    return {
        "record_id": record.id,
        "checkpoint_sha256": det.checkpoint_sha256,
        "checkpoint_source": det.checkpoint_source,
        "pretrained": det.pretrained,
        "plugin": det.plugin,
        "git": env.git,
        "date": env.date,
        "seed": b.seed,
        "diffzoo": env.packages.get("diffzoo"),
        "device": env.device,
    }


def record_cell(record: ResultRecord, metric: str) -> Cell:
    ci = record.body.ci95.get(metric)
    return Cell(record.metrics.get(metric), tuple(ci) if ci and None not in ci else None)


def rank_key(primary: str | None, info: MetricInfo | None, name: Callable[[Any], str] = lambda row: row.detector):
    """The sort key of a ranked table's rows: by the ``primary`` cell, better first (``info``'s
    direction), rows without a value last; ties by ``name(row)``."""
    def key(row):
        value = row.cells[primary].value if primary and primary in row.cells else None
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return (1, 0.0, name(row))
        sign = -1 if (info is None or info.higher_is_better is not False) else 1
        return (0, sign * value, name(row))
    return key


def build_tables(records: Iterable[ResultRecord], baselines: bool = True, compact: bool = False) -> list[Table]:
    """Group records into tables (see module doc), ranked by primary metric.

    ``compact``: only the task's usual columns (``SHOWN``; the console),
    else every metric the records carry (published formats).

    Records of the same run (same detector, checkpoint, suite version, case,
    dataset, metric version and seed; the store guarantees equal numbers)
    give one row, the newest."""
    groups: dict[TableKey, list[ResultRecord]] = {}
    # re-runs of one run (same numbers, e.g. another git hash): one row
    for record in newest(records, key=lambda r: r.id).values():
        groups.setdefault(TableKey.of(record), []).append(record)
    tables = []
    for key, recs in groups.items():
        recs.sort(key=lambda r: (r.body.row_name, record_date(r)))
        present = {m for r in recs for m in r.metrics}
        wanted = table_metrics(key.task, recs, compact)
        columns = [metric_info(m) or MetricInfo(m, m, None, -math.inf, math.inf, False)
                   for m in wanted if m in present]
        names = [c.name for c in columns]
        rows = [Row(r.body.row_name, {m: record_cell(r, m) for m in names}, record_id=r.id,
                    provenance=provenance(r), conditions=record_conditions(r), name=r.body.detector.name)
                for r in recs]
        primary = PRIMARY.get(key.task)
        rows.sort(key=rank_key(primary, metric_info(primary) if primary else None))
        for rank, row in enumerate(rows, 1):
            row.rank = rank
        if baselines:
            seen: dict[str, tuple[dict[str, Any], ResultRecord]] = {}
            for r in recs:
                for bname, values in r.body.baselines.items():
                    seen.setdefault(bname, (values, r))
            rows.extend(Row(f"{bname} (baseline)", {m: Cell(v.get(m)) for m in names}, baseline=True,
                            conditions=record_conditions(r))
                        for bname, (v, r) in sorted(seen.items()))
        tables.append(Table(key, columns, rows, dict(recs[0].body.case), recs))
    tables.sort(key=lambda t: (t.key.suite, version_order(t.key.suite_version), t.key.case, t.key.dataset,
                               t.key.fingerprint, t.key.metrics_version))
    return tables


CONDITIONS = ("dataset", "label map", "split", "recipe", "suite", "metrics")
"""What a number was made under besides the detector: rows that differ in
any of these are never ranked together without a column saying so.  The
table key already keeps datasets, suite versions and metric versions apart;
label map, split and recipe (the scale a model trained and was evaluated
at, docs/detectors.md) are checked by :func:`check_mixing`."""


def record_conditions(record: ResultRecord) -> dict[str, str]:
    """The record's :data:`CONDITIONS` as short texts.  ``label map`` is the
    map's short sha256 and source, ``split`` the split scheme's id; both
    ``unknown`` for records written before they were recorded."""
    b = record.body
    ds = b.dataset
    return {
        "dataset": f"{ds.name} ({ds.fingerprint[:12]})",
        "label map": getattr(ds, "label_map_id", None) or "unknown",
        "split": getattr(ds, "split_id", None) or "unknown",
        "recipe": str((b.config.get("eval_input") or {}).get("recipe") or "unknown"),
        "suite": f"{b.suite.name} v{b.suite.version}"
                 + (f" ({b.suite.definition_hash[:8]})" if b.suite.definition_hash else ""),
        "metrics": f"v{b.metrics_version}",
    }


def mixed_conditions(records: Iterable[ResultRecord]) -> dict[str, dict[str, list[str]]]:
    """Condition -> {value: detectors} for each condition the records differ in."""
    seen: dict[str, dict[str, list[str]]] = {}
    for r in records:
        for name, value in record_conditions(r).items():
            dets = seen.setdefault(name, {}).setdefault(value, [])
            if r.body.row_name not in dets:
                dets.append(r.body.row_name)
    return {name: dict(sorted(values.items())) for name, values in seen.items() if len(values) > 1}


def mixing_problem(title: str, mixed: dict[str, dict[str, list[str]]]) -> str:
    """``title: label map A [det1], B [det2]; split ...``."""
    parts = [f"{name} " + ", ".join(f"{value} [{', '.join(dets)}]" for value, dets in values.items())
             for name, values in mixed.items()]
    return f"{title}: " + "; ".join(parts)


def refuse_mixing(problems: list[str]) -> None:
    """Raise the :class:`ConfigError` for mixed tables (``problems`` from :func:`mixing_problem`)."""
    if problems:
        raise ConfigError("refusing to rank rows made under different label maps, splits or evaluator "
                          "versions in one table: " + " | ".join(problems)
                          + ". Publish one kind (freeze a version of the records you mean to compare: "
                          "`diffzoo leaderboard freeze NAME --detector/--suite/--dataset ...`), or pass "
                          "--allow-mixed to publish them with a column naming each")


def check_mixing(tables: Iterable[Table], allow_mixed: bool = False) -> None:
    """Refuse tables whose rows differ in a condition, unless ``allow_mixed``."""
    if not allow_mixed:
        refuse_mixing([mixing_problem(t.key.title, mixed_conditions(t.records)) for t in tables if t.mixed])


def conditions_line(shared: dict[str, str], skip: Iterable[str] = ("dataset", "suite", "metrics")) -> str:
    """``label map X · split Y`` for a header line (``skip``: what the line names already)."""
    return " · ".join(f"{k} {v}" for k, v in shared.items() if k not in set(skip))


def table_metrics(task: str, records: list[ResultRecord], compact: bool = False) -> list[str]:
    """The columns of one table: the task's usual metrics first (``SHOWN``),
    then the case's own (per-class IoU, slice and parity metrics) in record
    order, oracle columns last; counts and the background IoU are left out."""
    shown = list(SHOWN.get(task, ()))
    if compact and shown:
        return shown
    extra: dict[str, None] = {}
    for record in records:
        for m in record.metrics:
            if m not in shown and m not in COUNT_METRICS and m != "IoU.background":
                extra[m] = None
    names = shown + [m for m in extra if not _is_oracle(m)]
    return names + [m for m in extra if _is_oracle(m)]


def _is_oracle(name: str) -> bool:
    info = metric_info(name)
    return bool(info and info.oracle)


def version_order(version: str) -> tuple:
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in version.replace("-", ".").split("."))


def format_value(info: MetricInfo, value: float | None, digits: int = 1) -> str:
    """Percent for fractions, plain for counts; '-' when undefined."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if info.percent:
        return f"{100 * value:.{digits}f}"
    return f"{value:g}"


def format_ci(info: MetricInfo, cell: Cell, digits: int = 1) -> str:
    half = cell.half_width
    if half is None:
        return ""
    return f"{100 * half:.{digits}f}" if info.percent else f"{half:g}"
