"""The overview tables of a set of records (model: :mod:`.model`).

The cells read records the run summary's way (:class:`~diffzoo.leaderboard.summary.model.RecordIndex`:
a detector's newest record per suite and case; the paper's distortion
settings, the held-out pairs and the cross-dataset evaluation places of
:mod:`diffzoo.leaderboard.summary`), so an overview number is the number
the run summary and the per-case tables show.

Rows are never ranked across datasets, label maps, splits, recipes or
evaluator versions: records are grouped by (dataset and fingerprint, label
map, split scheme, recipe, metrics version) -- a cross-dataset record by its
*training* dataset -- and, within that, by one version (and definition hash)
of each suite, newest first (the summary's rule); each group is one table.
A value the records do not give is *missing*: the cell holds no value and
the id of a note saying why and how to get it (each note listed once per
table, numbered in reading order).  A value the detector cannot have (no
pixel output; semantic maps of a binary-only model; the pixel columns of a
``NAME (own image score)`` row) is *not applicable*, without a note.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from diffzoo.harness.records.document import ResultRecord
from diffzoo.harness.records.model import DatasetInfo
from diffzoo.leaderboard.newest import newest, record_date
from diffzoo.leaderboard.overview.model import (
    CROSS_METRIC,
    CROSS_SUITES,
    DISTORTIONS,
    HEADLINES,
    NO_CI,
    NOT_APPLICABLE,
    PRIMARY_COLUMN,
    STANDARD,
    SUITES,
    UNSEEN,
    OverviewCell,
    OverviewColumn,
    OverviewGroup,
    OverviewNote,
    OverviewRow,
    OverviewTable,
)
from diffzoo.leaderboard.summary.model import RecordIndex
from diffzoo.leaderboard.summary.settings import PAPER_SETTINGS
from diffzoo.leaderboard.summary.tables import eval_place, is_cross_record, unseen_pairs
from diffzoo.leaderboard.tables import rank_key, record_cell, record_conditions, version_order


# -- grouping -----------------------------------------------------------------------------------
def group_key(record: ResultRecord) -> tuple[str, str, str, str, str, str]:
    """(dataset, fingerprint, label map, split, recipe, metrics version) a record ranks under;
    a cross-dataset record's dataset, label map and split are its training data's."""
    b = record.body
    cond = record_conditions(record)
    trained = b.config.get("train_dataset")
    if trained:  # the summary's rule: it joins the group of the data its model was trained on
        ds = DatasetInfo(str(trained.get("name", "")), str(trained.get("fingerprint", "")),
                         label_map=trained.get("label_map"), split=trained.get("split"))
        return ds.name, ds.fingerprint, ds.label_map_id, ds.split_id, cond["recipe"], b.metrics_version
    return b.dataset.name, b.dataset.fingerprint, cond["label map"], cond["split"], cond["recipe"], b.metrics_version


def build_overview(records: Iterable[ResultRecord]) -> list[OverviewTable]:
    """One :class:`OverviewTable` per group (module doc): the newest version of each suite
    first, then the next-older versions, and so on."""
    groups: dict[tuple, dict[str, dict[tuple[str, str], list[ResultRecord]]]] = {}
    for r in records:
        s = r.body.suite
        if s.name in SUITES:
            groups.setdefault(group_key(r), {}).setdefault(s.name, {}).setdefault(
                (s.version, s.definition_hash), []).append(r)
    tables = []
    for key, suites in sorted(groups.items(), key=lambda kv: kv[0]):
        newest_first = {name: sorted(versions, reverse=True, key=lambda v, vs=versions: (
            version_order(v[0]), max(record_date(r) for r in vs[v]))) for name, versions in suites.items()}
        for depth in range(max(len(v) for v in newest_first.values())):
            chosen = {s: v[depth] for s, v in newest_first.items() if len(v) > depth}
            group = OverviewGroup(*key, suites=tuple(
                (s, f"v{chosen[s][0]}" + (f" ({chosen[s][1][:8]})" if chosen[s][1] else ""))
                for s in SUITES if s in chosen))
            tables.append(_table(group, [r for s, v in chosen.items() for r in suites[s][v]]))
    return tables


# -- one table --------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Place:
    """Where a cross-dataset record was evaluated: the dataset, its split, and what its
    numbers were made under there (a column ranks only records that agree on all)."""

    suite: str
    where: str  # name/split
    fingerprint: str
    conditions: tuple[str, str]  # the evaluated data's label map and split scheme

    @classmethod
    def of(cls, record: ResultRecord) -> _Place:
        cond = record_conditions(record)
        return cls(record.body.suite.name, eval_place(record), record.body.dataset.fingerprint,
                   (cond["label map"], cond["split"]))


def cross_columns(suite: str, places: list[_Place]) -> tuple[list[OverviewColumn], dict[str, _Place]]:
    """Per evaluation place of ``suite`` its :data:`CROSS_METRIC` column, then their mean when there are two or
    more; and each place column's place.  A label two places share gets their fingerprints."""
    clash = {p.where for p in places if sum(q.where == p.where for q in places) > 1}
    cols, where = [], {}
    for p in places:
        label = f"{p.where} ({p.fingerprint[:8]}, {p.conditions[0]})" if p.where in clash else p.where
        key = f"{suite}.binary.{CROSS_METRIC}.{label}"
        cols.append(OverviewColumn(key, suite, "binary", f"{label} {CROSS_METRIC}", CROSS_METRIC,
                                   f"binary {CROSS_METRIC} of the {suite} suite's binary case on {label}, of the "
                                   "model trained on this group's dataset, with its 95% CI"))
        where[key] = p
    if len(places) > 1:
        cols.append(OverviewColumn(f"{suite}.binary.{CROSS_METRIC}.mean", suite, "binary", f"mean {CROSS_METRIC}",
                                   CROSS_METRIC, f"mean of the {suite} suite's place columns; missing unless all "
                                   f"are present{NO_CI}"))
    return cols, where


class _Notes:
    """A table's notes: one id per distinct text, numbered as first used."""

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}

    def missing(self, text: str) -> OverviewCell:
        return OverviewCell(None, notes=(self.ids.setdefault(text, str(len(self.ids) + 1)),))

    def listed(self) -> list[OverviewNote]:
        return [OverviewNote(i, text) for text, i in self.ids.items()]


def _number(record: ResultRecord, metric: str) -> float | None:
    value = record.metrics.get(metric)
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def _applicable(tasks: Iterable[str], task: str) -> bool:
    """Whether a detector whose card lists ``tasks`` can have a ``task`` value (the
    planner's rule: a pixel case needs that task; an image case any model)."""
    tasks = tuple(tasks)
    return task == "image" or not tasks or task in tasks


def _table(group: OverviewGroup, records: list[ResultRecord]) -> OverviewTable:
    b = _Builder(group, records)
    rows = [OverviewRow(n, b.detector[n].name, {c.key: b.cell(n, c) for c in b.columns}, own_score=n in b.own)
            for n in b.labels if n not in b.own or b.idx.get(STANDARD, "image", n)]  # own score: standard image
    keys = [c.key for c in b.columns]
    primary = PRIMARY_COLUMN if PRIMARY_COLUMN in keys else (keys[0] if keys else None)
    _rank(rows, next((c for c in b.columns if c.key == primary), None))
    return OverviewTable(group, b.columns, rows, _renumbered(rows, b.notes.listed()), primary)


def _renumbered(rows: list[OverviewRow], notes: list[OverviewNote]) -> list[OverviewNote]:
    """``notes`` numbered in reading order of the ranked rows (each row's cells, left to right),
    the cells' note ids changed to match."""
    ids: dict[str, str] = {}
    for row in rows:
        for cell in row.cells.values():
            for n in cell.notes:
                ids.setdefault(n, str(len(ids) + 1))
    for row in rows:
        row.cells = {k: replace(c, notes=tuple(ids[n] for n in c.notes)) if c.notes else c
                     for k, c in row.cells.items()}
    return sorted((OverviewNote(ids[n.id], n.text) for n in notes if n.id in ids), key=lambda n: int(n.id))


class _Builder:
    """The columns of one group's records and each row's cells (module doc)."""

    def __init__(self, group: OverviewGroup, records: list[ResultRecord]):
        self.dataset = group.dataset
        self.labels = list(dict.fromkeys(r.body.row_name for r in records))
        self.idx = idx = RecordIndex(records, self.labels)
        self.has = {(r.body.row_name, r.body.suite.name) for r in records}
        self.detector = {r.body.row_name: r.body.detector for r in records}
        self.own = {r.body.row_name for r in records if r.body.own_score}
        self.settings = {s: f"{s}.binary" for s in PAPER_SETTINGS}
        self.pairs = {p: f"{p}.binary" for p in unseen_pairs(idx) if idx.records(UNSEEN, [f"{p}.binary"])}
        fed = {"standard": lambda c: bool(idx.records(STANDARD, [c.task])),
               "robustness": lambda c: bool(idx.records(DISTORTIONS, self.settings.values())),
               "unseen editors": lambda c: bool(self.pairs)}
        self.columns = [c for c in HEADLINES if fed[c.benchmark](c)]
        self.cross = newest((r for r in records if r.body.suite.name in CROSS_SUITES and is_cross_record(r)
                             and r.body.case_name == "binary"), key=lambda r: (r.body.row_name, _Place.of(r)))
        self.places: dict[str, _Place] = {}
        for suite in CROSS_SUITES:
            cols, where = cross_columns(suite, sorted({p for (_, p) in self.cross if p.suite == suite},
                                                      key=lambda p: (p.where, p.fingerprint, p.conditions)))
            self.columns += cols
            self.places |= where
        self.notes = _Notes()

    def cell(self, row: str, col: OverviewColumn) -> OverviewCell:
        if (row in self.own and col.task != "image") or not _applicable(
                self.detector[row].card.get("tasks") or (), col.task):
            return NOT_APPLICABLE
        if col.benchmark == "standard":
            return self.one(row, self.idx.get(STANDARD, col.task, row), STANDARD, col.metric, f"of case {col.task}")
        if col.key in self.places:
            p = self.places[col.key]
            return self.one(row, self.cross.get((row, p)), p.suite, col.metric, f"on {p.where}",
                            f" --eval-dataset PATH:{p.where.rpartition('/')[2]}")
        if col.benchmark in CROSS_SUITES:  # the mean of the suite's place columns, all present
            parts = [self.cell(row, c) for c in self.columns
                     if c.key in self.places and self.places[c.key].suite == col.benchmark]
            return _mean({}, parts)
        if col.benchmark == "robustness":
            values = self.over(row, DISTORTIONS, self.settings, col.metric)
            if col.key.endswith(".worst") and isinstance(values, dict):
                worst = min(values, key=lambda s: (values[s], s))
                return OverviewCell(values[worst], detail=worst)
            return _mean(values)
        return _mean(self.over(row, UNSEEN, self.pairs, col.metric))

    def absent(self, row: str, suite: str, what: str, extra: str = "") -> OverviewCell:
        hint = f"diffzoo run --detector {self.detector[row].name} --suite {suite} --dataset {self.dataset}{extra}"
        if (row, suite) not in self.has:
            return self.notes.missing(f"no {suite} records for {row}: {hint}")
        return self.notes.missing(f"{row} has no {suite} record {what}: {hint}")

    def one(self, row: str, rec: ResultRecord | None, suite: str, metric: str, what: str,
            extra: str = "") -> OverviewCell:
        """``metric`` of ``rec``, or the missing cell saying why (``what``: the case or place)."""
        if rec is None:
            return self.absent(row, suite, what, extra)
        if _number(rec, metric) is None:
            return self.notes.missing(f"{row}: {metric} undefined in {suite} {what} (record {rec.id[:12]})")
        return _cell(rec, metric)

    def over(self, row: str, suite: str, cases: dict[str, str], metric: str) -> dict[str, float] | OverviewCell:
        """``metric`` of each of ``cases`` (name -> case), or the missing cell saying what lacks."""
        recs = {name: self.idx.get(suite, case, row) for name, case in cases.items()}
        lacking = [cases[n] for n, r in recs.items() if r is None]
        if lacking:
            return self.absent(row, suite, "of " + ", ".join(lacking))
        values = {n: _number(r, metric) for n, r in recs.items() if r is not None}
        undefined = [cases[n] for n, v in values.items() if v is None]
        if undefined:
            return self.notes.missing(f"{row}: {metric} undefined in {suite} {', '.join(undefined)}")
        return {n: v for n, v in values.items() if v is not None}


def _mean(values: dict[str, float] | OverviewCell, parts: Sequence[OverviewCell] = ()) -> OverviewCell:
    """The mean of ``values`` (or of the ``parts`` cells): no CI; missing when any part is
    (with their notes), or ``values`` when it is the missing cell."""
    if isinstance(values, OverviewCell):
        return values
    missing = sorted({n for c in parts for n in c.notes}, key=int)
    if missing:
        return OverviewCell(None, notes=tuple(missing))
    numbers = list(values.values()) or [c.value for c in parts]
    return OverviewCell(sum(numbers) / len(numbers))


def _cell(record: ResultRecord, metric: str) -> OverviewCell:
    """``metric`` of ``record`` with its CI (the per-case tables' cell)."""
    cell = record_cell(record, metric)
    return OverviewCell(cell.value, cell.ci)


def _rank(rows: list[OverviewRow], primary: OverviewColumn | None) -> None:
    """Sort ``rows`` by the primary column (better first, missing and not applicable last,
    then by label) and number those with a value."""
    rows.sort(key=rank_key(primary.key if primary else None, primary.info if primary else None,
                           name=lambda row: row.label))
    for n, row in enumerate((r for r in rows if primary and r.cells[primary.key].value is not None), 1):
        row.rank = n
