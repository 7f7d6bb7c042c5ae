"""The overview: the leaderboard at a glance, one row per detector and one
column per headline figure, grouped by benchmark (docs/leaderboard.md, "The
overview table").

One table per :class:`~diffzoo.leaderboard.index.Group` holding records of
the suites it reads (:data:`SUITES`), so rows are never ranked across
datasets, label maps, splits, recipes or evaluator versions.  A cell reads a
detector's newest record of the case (the group's, as the run summary and
the per-case tables do), so an overview number is the number they show.  A
value the records do not give is *missing*: the cell holds no value and a
note saying why and how to get it (each note listed once, numbered in
reading order).  A value the detector cannot have (no pixel output;
semantic maps of a binary-only model; the pixel columns of a ``NAME (own
image score)`` row; the semantic column of a ``NAME (calibrated)`` row: a
semantic record's rule is always the fixed one) is *not applicable*,
without a note.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from diffzoo.harness.core.registry import natural_key
from diffzoo.harness.metrics.catalog import SLICE_SEPARATOR
from diffzoo.harness.metrics.slices import NO_TURNS
from diffzoo.harness.records.document import ResultRecord
from diffzoo.harness.suites.paper import DISTORTIONS as DISTORTIONS_SUITE
from diffzoo.leaderboard.index import (
    Group,
    GroupKey,
    RecordIndex,
    eval_place,
    held_out,
    is_cross,
    place_label,
    record_conditions,
)
from diffzoo.leaderboard.layouts.cases import rank
from diffzoo.leaderboard.layouts.paper import PAPER_SETTINGS, not_carried
from diffzoo.leaderboard.table import ABSENT, NA, Cell, Column, Notes, Row, Table, column, info_of, renumber, slugify

OVERVIEW_VERSION = "2"
"""The version of the overview's definitions (columns, means, missing rule): bumped on any change."""
STANDARD, DISTORTIONS, UNSEEN = "standard", "distortions", "unseen-generators"
CROSS_SUITES = ("cross-dataset", "opensdi")
SUITES = (STANDARD, DISTORTIONS, UNSEEN, *CROSS_SUITES)
"""The suites the overview reads; records of other suites are left out of it."""
CROSS_METRIC = "mIoU"
"""The cross-dataset figure that ranks and is averaged: binary mIoU, which is the edited class's IoU
(docs/metrics.md) and so a monotone function of its pixel F1 (F1 = 2 IoU / (1 + IoU)): both rank
one evaluation place alike, and mIoU keeps the means in the unit of the standard, robustness and
unseen-editor columns."""
PLACE_COLUMNS = (("binary", "mIoU", "mIoU"), ("binary", "F1", "F1"), ("image", "img_Acc", "image Acc"))
"""(task, metric, label) of each benchmark's column group: binary IoU and F1, image-level accuracy
(OpenSDI's board shows pixel IoU/F1 and image accuracy); its generators' F1 follow where the
benchmark's metadata names them (the per-generator case of the suite)."""
GENERATOR_METRIC = "F1"
"""Each generator's column: binary F1 of the images its metadata names (the published per-generator
boards, OpenSDI's and TGIF's, print F1)."""
NO_CI = "; no CI (see docs/leaderboard.md)"
HEADLINES: tuple[Column, ...] = (
    *(column(f"standard.{task}.{metric}", metric, f"{task} {info_of(metric).label}", group="standard", task=task,
             definition=f"{what} of the standard suite's {task} case{aside}, with its 95% CI{primary}")
      for task, metric, what, aside, primary in (
          ("binary", "mIoU", "mIoU", "", " (the primary column)"), ("binary", "bF1", "boundary F1", "", ""),
          ("semantic", "mIoU", "mIoU", " (editor attribution)", ""),
          ("image", "img_Acc", "image-level accuracy", "", ""), ("image", "img_AP", "image-level AP", "", ""))),
    column("robustness.binary.mIoU.mean", "mIoU", "mean mIoU", group="robustness", task="binary",
           definition=f"mean over the paper's settings ({', '.join(PAPER_SETTINGS)}) of the distortions suite's "
                      f"binary mIoU; missing unless all are present{NO_CI}"),
    column("robustness.binary.mIoU.worst", "mIoU", "worst mIoU", group="robustness", task="binary",
           definition=f"the lowest of the same settings' binary mIoU (the cell names the setting){NO_CI}"),
    column("unseen.binary.mIoU.mean", "mIoU", "held-out mIoU", group="unseen editors", task="binary",
           definition="mean over the held-out pairs of the unseen-generators suite (cases <Pair>.binary) of the "
                      "binary mIoU of the model trained without the pair; missing unless every pair is present"
                      + NO_CI),
)
"""The fixed headline columns, in order; the cross-dataset columns follow (:func:`cross_columns`)."""
PRIMARY_COLUMN = HEADLINES[0].key
"""Rows are ranked by it (the table's first column when it lacks this one), missing last."""
OVERVIEW_NOTE = (f"Overview definition v{OVERVIEW_VERSION} (docs/leaderboard.md, \"The overview table\"). Values in "
                 "%; ↑ higher is better; ± is half the 95% bootstrap CI over images, where the record has one "
                 "(means and worst-of columns have none); — [n] = missing, note n says why and how to get it; "
                 "n/a = the detector has no such output. Rows are ranked by the standard binary mIoU, missing "
                 "last; one table per dataset, label map, split, recipe and evaluator version.")


def build_overview(records: Sequence[ResultRecord]) -> list[Table]:
    """One overview table per group with records of :data:`SUITES` (module doc).  It ranks
    held-out numbers only: records scored on their model's training images are left out, and
    each table says how many of its group's were."""
    wanted = [r for r in records if r.body.suite.name in SUITES]
    left_out = Counter(GroupKey.of(r) for r in wanted if r.body.not_held_out)
    tables = [_Overview(g).table() for g in RecordIndex([r for r in wanted if not r.body.not_held_out]).groups()]
    for t in tables:
        if t.group is not None and (n := left_out[t.group.key]):
            t.remarks.append(f"{n} record(s) of this group scored images their model was trained on "
                             "(--allow-train-overlap) and are left out; the per-case tables show them as "
                             "(not held out)")
    return tables


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


@dataclass(frozen=True)
class PlaceColumn:
    """What a benchmark column reads: the place, the task of its case, the metric (a generator's
    column: its slice of the per-generator case)."""

    place: _Place
    task: str
    metric: str

    @property
    def sliced(self) -> bool:
        return SLICE_SEPARATOR in self.metric


def place_key(suite: str, task: str, metric: str, label: str) -> str:
    """The key of a benchmark column: ``suite.task.metric.place label``."""
    return f"{suite}.{task}.{metric}.{label}"


def benchmark_columns(table: Table) -> list[Column]:
    """The binary :data:`CROSS_METRIC` column of each benchmark (evaluation place) of an overview
    table, in order; [] for a table without ``--eval-dataset`` records."""
    return [c for c in table.columns if c.key == place_key(c.key.partition(".")[0], "binary", CROSS_METRIC, c.group)]


def generator_metric(generator: str) -> str:
    """The per-generator case's metric of ``generator``'s images."""
    return f"{GENERATOR_METRIC}{SLICE_SEPARATOR}editor={generator}"


def cross_columns(suite: str, places: list[_Place], generators: Mapping[_Place, Sequence[str]] | None = None,
                  ) -> tuple[list[Column], dict[str, PlaceColumn]]:
    """Per evaluation place of ``suite`` its column group (:data:`PLACE_COLUMNS`, then the F1 of
    each of its ``generators``), then the mean of the places' :data:`CROSS_METRIC` when there are
    two or more; and what each place column reads.  A label two places share gets their
    fingerprints."""
    clash = {p.where for p in places if sum(q.where == p.where for q in places) > 1}
    cols, where = [], {}
    trained = "of the model trained on this group's dataset (released weights: zero-shot)"
    for p in places:
        label = place_label(p.where, p.fingerprint, p.conditions[0], p.where in clash)
        for task, metric, name in PLACE_COLUMNS:
            key = place_key(suite, task, metric, label)
            cols.append(column(key, metric, name, group=label, task=task,
                               definition=f"{info_of(metric).label} of the {suite} suite's {task} case on {label}, "
                                          f"{trained}, with its 95% CI"))
            where[key] = PlaceColumn(p, task, metric)
        for generator in (generators or {}).get(p, ()):
            metric = generator_metric(generator)
            key = place_key(suite, "binary", metric, label)
            cols.append(column(key, GENERATOR_METRIC, f"{generator} {GENERATOR_METRIC}", group=label, task="binary",
                               definition=f"binary {GENERATOR_METRIC} on the images of {label} whose metadata names "
                                          f"the generator {generator} (the {suite} suite's per-generator case), "
                                          f"{trained}, with its 95% CI"))
            where[key] = PlaceColumn(p, "binary", metric)
    if len(places) > 1:
        cols.append(column(f"{suite}.binary.{CROSS_METRIC}.mean", CROSS_METRIC, f"mean {CROSS_METRIC}", group=suite,
                           task="binary", definition=f"mean of the {suite} suite's binary {CROSS_METRIC} over its "
                                                     f"places; missing unless all are present{NO_CI}"))
    return cols, where


def _applicable(tasks: Sequence[str], task: str) -> bool:
    """Whether a detector whose card lists ``tasks`` can have a ``task`` value (the planner's
    rule: a pixel case needs that task; an image case any model)."""
    return task == "image" or not tasks or task in tasks


class _Overview:
    """The columns of one group's records and each row's cells (module doc)."""

    def __init__(self, group: Group):
        self.group = group
        self.rows = list(dict.fromkeys(r.body.row_name for r in group.records))
        self.has = {(r.body.row_name, r.body.suite.name) for r in group.records}
        self.like = {r.body.row_name: r for r in group.records}  # a record of each row
        self.detector = {name: r.body.detector for name, r in self.like.items()}
        self.own = {r.body.row_name for r in group.records if r.body.own_score}
        self.pairs = list(dict.fromkeys(r.body.setting for r in group.of(UNSEEN, ["binary"]) if held_out(r)))
        fed = {"standard": lambda c: bool(group.of(STANDARD, [c.task])),
               "robustness": lambda c: any(r.body.setting in PAPER_SETTINGS for r in group.of(DISTORTIONS, ["binary"])),
               "unseen editors": lambda c: bool(self.pairs)}
        self.columns = [c for c in HEADLINES if fed[c.group](c)]
        self.cross = {(r.body.row_name, _Place.of(r), r.body.task, bool(r.body.case.get("slice_by"))): r
                      for r in group.records if r.body.suite.name in CROSS_SUITES and is_cross(r)
                      and r.body.task in ("binary", "image")}
        generators: dict[_Place, list[str]] = {}
        prefix = generator_metric("")
        for (_, place, _, sliced), r in self.cross.items():
            if sliced:
                names = generators.setdefault(place, [])
                names += [g for m in r.metrics if m.startswith(prefix)
                          and (g := m[len(prefix):]) != NO_TURNS and g not in names]
        self.places: dict[str, PlaceColumn] = {}
        for suite in CROSS_SUITES:
            cols, where = cross_columns(suite, sorted({k[1] for k in self.cross if k[1].suite == suite},
                                                      key=lambda p: (natural_key(p.where), p.fingerprint,
                                                                     p.conditions)),
                                        {p: sorted(g, key=natural_key) for p, g in generators.items()})
            self.columns += cols
            self.places |= where
        self.notes = Notes()

    def table(self) -> Table:
        rows = [Row(n, {c.key: self.cell(n, c) for c in self.columns}, detector=self.detector[n].name,
                    own_score=n in self.own)
                for n in self.rows if n not in self.own or self.group.find(STANDARD, n, task="image")]
        keys = [c.key for c in self.columns]
        primary = PRIMARY_COLUMN if PRIMARY_COLUMN in keys else (keys[0] if keys else None)
        rank(rows, primary, next((c.info for c in self.columns if c.key == primary), None))
        name = self.group.name
        table = Table(slugify(f"overview-{self.group.key.dataset}-{self.group.key.fingerprint[:8]}-"
                              + hashlib.sha256(name.encode()).hexdigest()[:8]),
                      f"Overview: {self.group.title}", self.columns, rows, self.group.records,
                      notes=self.notes.listed(), primary=primary, ranked=True, group=self.group,
                      version=OVERVIEW_VERSION)
        renumber(table)
        return table

    def cell(self, row: str, col: Column) -> Cell:
        if ((row in self.own and col.task != "image") or (col.task == "semantic" and self.like[row].body.calibrated)
                or not _applicable(self.detector[row].card.get("tasks") or (), col.task)):
            return NA
        if col.group == "standard":
            record = self.group.find(STANDARD, row, task=col.task)
            return self.one(row, record, STANDARD, col.info.name, f"of case {self.case_name(STANDARD, task=col.task)}")
        if col.key in self.places:
            c = self.places[col.key]
            p = c.place
            return self.one(row, self.cross.get((row, p, c.task, c.sliced)), p.suite, c.metric, f"on {p.where}",
                            f" --eval-dataset PATH:{p.where.rpartition('/')[2]}")
        if col.group in CROSS_SUITES:  # the mean column of the suite: its places' mIoU, all present
            return _mean({}, [self.cell(row, c) for c in self.columns if (pc := self.places.get(c.key)) is not None
                              and pc.place.suite == col.group and pc.metric == CROSS_METRIC and pc.task == "binary"])
        if col.group == "robustness":
            values = self.over(row, DISTORTIONS, PAPER_SETTINGS, col.info.name)
            if col.key.endswith(".worst") and isinstance(values, dict):
                worst = min(values, key=lambda s: (values[s], s))
                return Cell(values[worst], detail=worst)
            return _mean(values)
        return _mean(self.over(row, UNSEEN, self.pairs, col.info.name, held=True))

    def case_name(self, suite: str, setting: str | None = None, task: str = "binary", held: bool | None = None) -> str:
        """The name of the case of ``suite`` with these facts: a record's of this group, else the
        built-in suite's (the name a missing record would have)."""
        for r in self.group.of(suite, [task]):
            if (setting is None or r.body.setting == setting) and (held is None or held_out(r) == held):
                return r.body.case_name
        if suite == DISTORTIONS:
            return next((c.name for c in DISTORTIONS_SUITE.cases if c.setting == setting and c.task == task), "")
        return task if setting is None else f"{setting} ({task})"

    def absent(self, row: str, suite: str, what: str, extra: str = "") -> Cell:
        hint = self.group.key.run_command(self.detector[row].name, suite, self.like[row])
        why = f"no {suite} records for {row}" if (row, suite) not in self.has else f"{row} has no {suite} record {what}"
        return Cell(status=ABSENT, notes=self.notes(f"{why}: {hint}{extra}"))

    def one(self, row: str, record: ResultRecord | None, suite: str, metric: str, what: str, extra: str = "") -> Cell:
        """``metric`` of ``record`` with its CI, or the missing cell saying why (``what``: the case or place)."""
        if record is None:
            return self.absent(row, suite, what, extra)
        cell = Cell.of(record, metric)
        if cell.value is None:
            why = not_carried(record, metric) if cell.status == ABSENT else (
                f"{metric} undefined in {suite} {what} (record {record.id[:12]})")
            return Cell(status=cell.status, notes=self.notes(f"{row}: {why}"))
        return cell

    def over(self, row: str, suite: str, settings: Sequence[str], metric: str,
             held: bool | None = None) -> dict[str, float] | Cell:
        """``metric`` of each setting's binary case, or the missing cell saying what lacks."""
        records = {s: self.group.find(suite, row, task="binary", setting=s, held=held) for s in settings}
        names = {s: self.case_name(suite, s, held=held) for s in settings}
        lacking = [names[s] for s, r in records.items() if r is None]
        if lacking:
            return self.absent(row, suite, "of " + ", ".join(lacking))
        cells = {s: Cell.of(r, metric) for s, r in records.items()}
        empty = [s for s, c in cells.items() if c.value is None]
        if empty:
            absent = [r for s in empty if cells[s].status == ABSENT and (r := records[s]) is not None]
            why = not_carried(absent[0], metric) if absent else (
                f"{metric} undefined in {suite} {', '.join(names[s] for s in empty)}")
            return Cell(status=ABSENT, notes=self.notes(f"{row}: {why}"))
        return {s: c.value for s, c in cells.items() if c.value is not None}


def _mean(values: dict[str, float] | Cell, parts: Sequence[Cell] = ()) -> Cell:
    """The mean of ``values`` (or of the ``parts`` cells): no CI; missing when any part is (with
    their notes), or ``values`` when it is the missing cell."""
    if isinstance(values, Cell):
        return values
    missing = tuple(sorted({n for c in parts for n in c.notes}, key=int))
    if missing:
        return Cell(status=ABSENT, notes=missing)
    numbers = list(values.values()) or [c.value for c in parts if c.value is not None]
    return Cell(sum(numbers) / len(numbers))
