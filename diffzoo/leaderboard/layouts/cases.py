"""One table per case: the leaderboard's own tables (``leaderboard.md``,
``.csv``, ``.tex``, ``.json``, the site, the run's console).

A table holds the records of one (suite, suite version, definition hash,
case, dataset fingerprint, metrics version): records that differ in any of
these never share a table, so a newer suite version starts a new table (a
new column set) instead of overwriting the old rows.  Its rows may differ in
label map, split or recipe (:func:`~diffzoo.leaderboard.index.check_mixing`).
Rows are detectors, ranked by the task's primary metric, each with its
provenance, then the trivial baselines its records carry; records of one run
(the same id: the store guarantees equal numbers) give one row, the newest.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from diffzoo.harness.metrics.catalog import COUNT_METRICS, MetricInfo, metric_info
from diffzoo.harness.records.document import ResultRecord
from diffzoo.leaderboard.index import TableKey, newest, record_conditions, record_date
from diffzoo.leaderboard.table import Cell, Row, Table, column, slugify, unique_name

SHOWN = {
    "binary": ("aAcc", "mIoU", "bF1", "F1", "pixel_AUC", "gIoU", "FPR_authentic"),
    "semantic": ("aAcc", "mAcc", "mIoU", "bF1", "top1", "top3"),
    "image": ("img_Acc", "img_real_Acc", "img_edited_Acc", "img_AP", "img_AUC"),
}
"""The columns shown per case task, in order (the console shows only these)."""
PRIMARY = {"binary": "mIoU", "semantic": "mIoU", "image": "img_AP"}
"""The metric a task's rows are ranked by."""


def provenance(record: ResultRecord) -> dict[str, Any]:
    b = record.body
    det, env = b.detector, b.environment
    return {"record_id": record.id, "checkpoint_sha256": det.checkpoint_sha256,
            "checkpoint_source": det.checkpoint_source, "pretrained": det.pretrained, "plugin": det.plugin,
            "git": env.git, "date": env.date, "seed": b.seed, "diffzoo": env.packages.get("diffzoo"),
            "device": env.device}


def rank(rows: list[Row], primary: str | None, info: MetricInfo | None) -> None:
    """Sort ``rows`` by the ``primary`` cell, better first (``info``'s direction), rows without a
    value last, ties by label; and number the held-out ones with a primary value, equal values
    sharing the first one's number (1, 1, 3); rows not held out (scored on their model's
    training images) follow them, unranked."""
    sign = 1 if info is not None and info.higher_is_better is False else -1

    def key(row: Row) -> tuple:
        value = row.cells[primary].value if primary and primary in row.cells else None
        return (row.not_held_out, value is None, 0.0 if value is None else sign * value, row.label)

    rows.sort(key=key)
    held = [(r, r.cells[primary].value) for r in rows if primary and r.compared and r.cells[primary].value is not None]
    for n, (row, value) in enumerate(held, 1):
        row.rank = held[n - 2][0].rank if n > 1 and value == held[n - 2][1] else n


def build_tables(records: Iterable[ResultRecord], baselines: bool = True, compact: bool = False) -> list[Table]:
    """The records' per-case tables (module doc).  ``compact``: only the task's usual columns
    (:data:`SHOWN`; the console), else every metric the records carry."""
    groups: dict[TableKey, list[ResultRecord]] = {}
    for record in newest(records, key=lambda r: r.id).values():
        groups.setdefault(TableKey.of(record), []).append(record)
    tables = []
    ids: set[str] = set()  # a key's slug drops punctuation and cuts the definition hash: two keys may share it
    for key, recs in sorted(groups.items(), key=lambda kv: kv[0].order):
        recs.sort(key=lambda r: (r.body.row_name, record_date(r)))
        present = {m for r in recs for m in r.metrics}
        columns = [column(m, m) for m in table_metrics(key.task, recs, compact) if m in present]
        rows = [Row(r.body.row_name, {c.key: Cell.of(r, c.key) for c in columns}, detector=r.body.detector.name,
                    record_id=r.id, provenance=provenance(r), conditions=record_conditions(r),
                    not_held_out=r.body.not_held_out) for r in recs]
        primary = PRIMARY.get(key.task)
        primary = primary if any(c.key == primary for c in columns) else None
        rank(rows, primary, metric_info(primary) if primary else None)
        if baselines:
            seen: dict[str, tuple[dict[str, Any], ResultRecord]] = {}
            for r in recs:
                for name, values in r.body.baselines.items():
                    seen.setdefault(name, (values, r))
            rows += [Row(f"{name} (baseline)", {c.key: Cell.of_values(values, c.key) for c in columns},
                         baseline=True, conditions=record_conditions(r)) for name, (values, r) in sorted(seen.items())]
        tables.append(Table(unique_name(slugify(key.name), ids), key.title, columns, rows, recs, primary=primary,
                            ranked=True, best=True, key=key, case=dict(recs[0].body.case)))
    return tables


def table_metrics(task: str, records: list[ResultRecord], compact: bool = False) -> list[str]:
    """The columns of one table: the task's usual metrics first (:data:`SHOWN`), then the case's
    own (per-class IoU, slice and parity metrics) in record order, oracle columns last; counts
    and the background IoU are left out."""
    shown = list(SHOWN.get(task, ()))
    if compact and shown:
        return shown
    extra = list(dict.fromkeys(m for r in records for m in r.metrics
                               if m not in shown and m not in COUNT_METRICS and m != "IoU.background"))
    oracle = [m for m in extra if (info := metric_info(m)) is not None and info.oracle]
    return shown + [m for m in extra if m not in oracle] + oracle
