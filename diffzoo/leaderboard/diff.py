"""What moved between two leaderboard versions or runs.

Tables are matched by their key minus nothing: a table only in A or only in
B is reported as such (a new suite version therefore shows up as a table
removed plus a table added, never as moved numbers).  Within a matched table
a row is a record, as in the published table, and rows are paired by record
id (a replaced record keeps its id); the rows left are paired by detector,
each side's newest (a re-run under a new id, a new checkpoint), and the
rest are added or removed.  Where a detector has several rows, each row's
name adds its seed, or its short record id where seeds do not tell them
apart.  Every metric whose value changed is listed with both values and the
difference.  :func:`diff_console` renders a :class:`Diff` for the terminal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rich.table import Table as RichTable
from rich.text import Text

from diffzoo.harness.records.model import utc_date
from diffzoo.leaderboard.index import newest
from diffzoo.leaderboard.layouts.cases import TableKey, build_tables
from diffzoo.leaderboard.render.escape import printable, shown_name, term_text
from diffzoo.leaderboard.table import ABSENT, Cell, Row, Table, column, format_delta, value_text
from diffzoo.leaderboard.versions import Selection


@dataclass
class MetricChange:
    metric: str
    cells: tuple[Cell, Cell]  # A's and B's: a value, absent (no such metric) or undefined (no value)

    @property
    def before(self) -> float | None:
        return self.cells[0].value

    @property
    def after(self) -> float | None:
        return self.cells[1].value

    @property
    def states(self) -> tuple[str, str]:
        return self.cells[0].status, self.cells[1].status

    @property
    def delta(self) -> float | None:
        """``after - before`` to 12 significant digits: the difference the two stored values
        show, without the binary rounding of their subtraction (0.7 - 0.6 is 0.1, not 0.09999999999999998)."""
        if self.before is None or self.after is None:
            return None
        return float(f"{self.after - self.before:.12g}")


@dataclass
class RowChange:
    detector: str
    status: str  # added | removed | checkpoint changed | changed | same
    changes: list[MetricChange] = field(default_factory=list)
    checkpoint: tuple[str | None, str | None] = (None, None)
    conditions: list[str] = field(default_factory=list)  # "label map A -> B": the numbers are not comparable
    records: tuple[str | None, str | None] = (None, None)  # the row's record id in A and in B


@dataclass
class TableChange:
    key: TableKey
    status: str  # added | removed | matched
    rows: list[RowChange] = field(default_factory=list)
    note: str = ""


@dataclass
class Diff:
    a: str
    b: str
    tables: list[TableChange]

    @property
    def moved(self) -> bool:
        return any(t.status != "matched" or any(r.status != "same" for r in t.rows) for t in self.tables)

    def to_dict(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "tables": [{
            "key": vars(t.key), "status": t.status, "note": t.note,
            "rows": [{"detector": r.detector, "status": r.status, "checkpoint": list(r.checkpoint),
                      "records": list(r.records),
                      "changes": [{"metric": c.metric, "before": c.before, "after": c.after, "delta": c.delta,
                                   "states": list(c.states)} for c in r.changes],
                      "conditions": r.conditions} for r in t.rows],
        } for t in self.tables]}


def _pairs(ta: Table, tb: Table) -> list[tuple[Row | None, Row | None]]:
    """A's and B's detector rows paired (module doc): by record id, then each detector's newest
    row left on each side (:func:`~.index.newest`); a row without a partner is alone."""
    ra, rb = ({r.record_id: r for r in t.rows if not r.baseline} for t in (ta, tb))
    pairs: list[tuple[Row | None, Row | None]] = [(ra.pop(i), rb.pop(i)) for i in list(ra) if i in rb]
    la, lb = (newest(rows.values(), key=lambda row: row.label,
                     date=lambda row: utc_date(row.provenance.get("date"))) for rows in (ra, rb))
    pairs += [(ra.pop(la[n].record_id), rb.pop(lb[n].record_id)) for n in la if n in lb]
    return pairs + [(r, None) for r in ra.values()] + [(None, r) for r in rb.values()]


def _names(pairs: list[tuple[Row | None, Row | None]]) -> list[str]:
    """Each pair's row name: the label, with the seed (or else the short record id) of each side
    where its detector has several rows on a side; ``(seed 0 -> seed 1)`` where the sides differ."""
    sides = [[row for pair in pairs if (row := pair[side]) is not None] for side in (0, 1)]
    names = []
    for pair in pairs:
        label = next(r for r in pair if r is not None).label
        rows = [[r for r in side if r.label == label] for side in sides]
        by_seed = all(len({r.provenance.get("seed") for r in side}) == len(side) for side in rows)
        tags = [f"seed {r.provenance.get('seed')}" if by_seed else f"record {(r.record_id or '')[:12]}"
                for r in pair if r is not None] if max(map(len, rows)) > 1 else []
        names.append(f"{label} ({' -> '.join(dict.fromkeys(tags))})" if tags else label)
    return names


def _note(key: TableKey, others: list[TableKey], *, removed: bool) -> str:
    """Why an unmatched table has no partner: the nearest key that differs, said from A to B (a
    ``removed`` table is A's, its nearest partner B's; an added one the other way round)."""
    for other in others:
        if (other.suite, other.case, other.dataset) == (key.suite, key.case, key.dataset):
            a, b = (key, other) if removed else (other, key)
            diffs = [f"{name} {getattr(a, name) or 'none'} -> {getattr(b, name) or 'none'}" for name in (
                "suite_version", "definition_hash", "task", "fingerprint", "metrics_version", "weights")
                     if getattr(a, name) != getattr(b, name)]
            return "not comparable: " + ", ".join(diffs)
    return ""


def diff(a: Selection, b: Selection) -> Diff:
    ta, tb = ({t.key: t for t in build_tables(s.records, baselines=False) if t.key is not None} for s in (a, b))
    out: list[TableChange] = []
    for key in sorted(set(ta) | set(tb), key=lambda k: k.order):
        if key not in ta or key not in tb:  # its nearest partner is on the other side
            removed = key not in tb
            out.append(TableChange(key, "removed" if removed else "added",
                                   note=_note(key, list(tb if removed else ta), removed=removed)))
            continue
        pairs = _pairs(ta[key], tb[key])
        # a metric of either side: one no record of B carries any more is a change too
        metrics = list(dict.fromkeys(c.key for t in (ta[key], tb[key]) for c in t.columns))
        rows = []
        for name, (ra, rb) in zip(_names(pairs), pairs):
            ids = (ra.record_id if ra else None, rb.record_id if rb else None)
            ckpt = (ra.provenance.get("checkpoint_sha256") if ra else None,
                    rb.provenance.get("checkpoint_sha256") if rb else None)
            if rb is None or ra is None:  # a row on one side names that side's checkpoint
                rows.append(RowChange(name, "removed" if rb is None else "added", checkpoint=ckpt, records=ids))
                continue
            cells = [tuple(row.cells.get(m, Cell(status=ABSENT)) for row in (ra, rb)) for m in metrics]
            changes = [MetricChange(m, (x, y)) for m, (x, y) in zip(metrics, cells)
                       if (x.status, x.value) != (y.status, y.value)]
            moved = [f"{cond} {ra.conditions.get(cond)} -> {value}"
                     for cond, value in rb.conditions.items() if ra.conditions.get(cond) != value]
            # another checkpoint is another model, whether or not its numbers moved
            status = "checkpoint changed" if ckpt[0] != ckpt[1] else "changed" if changes or moved else "same"
            rows.append(RowChange(name, status, changes, ckpt, moved, ids))
        rows.sort(key=lambda r: r.detector)
        out.append(TableChange(key, "matched", rows))
    return Diff(a.label, b.label, out)


def diff_console(result: Diff) -> list[Any]:
    """Rich renderables for ``result``: the two sides, then per table
    'added'/'removed' (with why it has no partner), 'unchanged', or a table
    of the rows that moved: both checkpoints where they differ, and the
    metrics that moved (A, B and B - A, in % for fractions).  Names
    from records are shown with :func:`~.escape.term_text`."""
    out: list[Any] = [Text.assemble(("A", "bold"), " ", printable(result.a)),
                      Text.assemble(("B", "bold"), " ", printable(result.b))]
    for t in result.tables:
        title = shown_name(printable(t.key.title))
        if t.status != "matched":
            note = f" ({printable(t.note)})" if t.note else ""
            out.append(Text.assemble((f"table {t.status}", "yellow"), " ", title, note))
            continue
        moved = [r for r in t.rows if r.status != "same"]
        if not moved:
            out.append(Text.assemble(("unchanged", "green"), " ", title))
            continue
        table = RichTable(title=Text(title), title_justify="left")
        for col in ("detector", "status", "metric", "A", "B", "B - A"):
            table.add_column(col, justify="right" if col in ("A", "B", "B - A") else "left")
        for r in moved:
            name = term_text(shown_name(r.detector))
            for text in r.conditions:  # another label map or split: B - A is no like-for-like change
                table.add_row(name, "not comparable", term_text(text), "", "", "")
            if r.status == "checkpoint changed":
                table.add_row(name, r.status, "checkpoint", *(sha[:12] if sha else "none" for sha in r.checkpoint), "")
            elif not r.changes and not r.conditions:
                table.add_row(name, r.status, "", "", "", "")
            for c in r.changes:
                metric = column(c.metric, c.metric)
                table.add_row(name, r.status, term_text(c.metric),
                              *(value_text(metric, cell) for cell in c.cells),
                              "" if c.delta is None else format_delta(metric.info, c.delta))
        out.append(table)
    if not result.moved:
        out.append(Text("no differences"))
    return out
