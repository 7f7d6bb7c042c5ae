"""The paper report: DiffSeg30k Tables 2-8 from stored records, each cell
``ours | paper | Δ`` (Δ = ours - paper, in percentage points), then the other
benchmarks' published numbers (:mod:`.published`).

A part a cell lacks is a dash; why a value of ours is missing (no record:
the command that fills the row, a slice the data lacks, a metric the record
does not carry) is a note under the table, written once and marked where it
applies: after the detector when it holds for the whole row, else in the
cell.  Like every published table, a report table whose records were made
under different datasets, label maps, splits or evaluator versions is
refused unless mixing is allowed, and then a column per differing condition
names each row's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from diffzoo.harness.core.fsutil import atomic_write_text
from diffzoo.harness.metrics.catalog import SLICE_SEPARATOR, MetricInfo, metric_info
from diffzoo.harness.records.document import ResultRecord
from diffzoo.leaderboard.newest import newest
from diffzoo.leaderboard.render.escape import md_cell
from diffzoo.leaderboard.render.layout import LEFT, RIGHT, markdown_table
from diffzoo.leaderboard.tables import (
    RecordConditions,
    conditions_line,
    format_value,
    mixed_conditions,
    mixing_problem,
    record_conditions,
    refuse_mixing,
)
from diffzoo.leaderboard.versions import Selection
from diffzoo.leaderboard.paper.layout import TABLES, Column, Family, PaperTable, Setting
from diffzoo.leaderboard.paper.notes import DASH, Notes, signed, triple
from diffzoo.leaderboard.paper.published import Benchmark, load_benchmarks, render_benchmarks
from diffzoo.leaderboard.paper.values import VALUES_FILE, PaperValue, load_values

REPORT_FILE = "paper.md"
NOT_PRINTED = "the paper prints no number for this cell"
NOT_IN_PAPER = "diffzoo's own table, not in the paper"
NOT_A_PAPER_MODEL = "not a model of the paper"


Conditions = tuple[tuple[str, str], ...]


class RecordIndex:
    """The newest record (:func:`~diffzoo.leaderboard.newest.newest`) per
    (suite, case, detector, conditions): records of one detector made under
    another label map, split, dataset or evaluator version are kept apart
    (their own row), never silently replaced."""

    def __init__(self, records: list[ResultRecord]):
        self._by: dict[tuple[str, str, str, Conditions], ResultRecord] = newest(records, key=lambda r: (
            r.body.suite.name, r.body.case_name, r.body.row_name, tuple(record_conditions(r).items())))

    def get(self, suite: str, case: str, detector: str, conditions: Conditions) -> ResultRecord | None:
        return self._by.get((suite, case, detector, conditions))

    def detectors(self, suite: str, cases: set[str]) -> list[tuple[str, Conditions]]:
        """(detector, conditions) with a record of ``suite`` in ``cases``, sorted."""
        return sorted({(d, c) for (s, case, d, c) in self._by if s == suite and case in cases})


SAME_INPUT = "= baseline: same input under the native recipe; --recipe paper for the paper's protocol"
"""Said beside a value whose pass fed the detector the baseline's own input
(the paper's resize 1024 on 1024 px data under ``--recipe native``)."""


@dataclass
class ReportCell:
    info: MetricInfo
    ours: float | None = None
    why_not_ours: str = ""  # why there is no value of ours, or a caveat beside one (SAME_INPUT)
    paper: float | None = None
    why_not_paper: str = ""

    @property
    def delta(self) -> float | None:
        if self.ours is None or self.paper is None:
            return None
        return self.ours - self.paper

    def text(self, notes: Notes, row_reason: str) -> str:
        """``ours | paper | Δ`` in %, Δ in points; a reason of ours that is not
        the row's gets its mark here."""
        ours = format_value(self.info, self.ours) if self.ours is not None else DASH
        if self.why_not_ours and self.why_not_ours != row_reason:
            ours += notes.mark(self.why_not_ours)
        paper = format_value(self.info, self.paper) if self.paper is not None else DASH
        return triple(ours, paper, signed(self.delta, 100 if self.info.percent else 1))


@dataclass
class ReportRow:
    model: str  # the paper's model row, "" for a detector the paper does not have
    detector: str  # the diffzoo detector; a pattern on a placeholder row
    setting: Setting
    cells: list[ReportCell]
    records: list[ResultRecord] = field(default_factory=list)

    def condition(self, name: str) -> str:
        return " / ".join(dict.fromkeys(record_conditions(r)[name] for r in self.records)) or "-"

    @property
    def reason(self) -> str:
        """The one reason every cell lacks a value of ours for ("" when some
        cell has one or the reasons differ): noted once, after the detector."""
        reasons = {c.why_not_ours for c in self.cells}
        if len(reasons) == 1 and all(c.ours is None for c in self.cells):
            return reasons.pop()
        return ""


@dataclass
class ReportTable(RecordConditions):
    spec: PaperTable
    rows: list[ReportRow]
    records: list[ResultRecord]


def _ours(idx: RecordIndex, spec: PaperTable, detector: tuple[str, Conditions], setting: Setting, col: Column,
          used: list[ResultRecord]) -> tuple[float | None, str]:
    if setting.elsewhere:
        return None, setting.elsewhere
    case, metric = col.case_for(setting), col.metric_for(setting)
    record = idx.get(spec.suite, case, *detector)
    if record is None:
        return None, (f"no {spec.suite} record of this case: diffzoo run --detector {detector[0]} "
                      f"--suite {spec.suite}")
    if record not in used:
        used.append(record)
    if metric not in record.metrics:
        if SLICE_SEPARATOR in metric:
            where = metric.partition(SLICE_SEPARATOR)[2]
            return None, f"no {where} images in {record.body.dataset.name}"
        return None, (f"record {record.id[:8]} ({spec.suite} v{record.body.suite.version}) does not carry "
                      f"{metric}; a newer suite version computes it")
    value = record.metrics[metric]
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None, "undefined on these images"
    if (record.body.config.get("distortion_params") or {}).get("same_input_as") == "baseline":
        return float(value), SAME_INPUT
    return float(value), ""


def _paper(values: dict, spec: PaperTable, family: Family | None, setting: Setting,
           col: Column) -> tuple[float | None, str]:
    if not spec.in_paper:
        return None, NOT_IN_PAPER
    if family is None:
        return None, NOT_A_PAPER_MODEL
    found: PaperValue | None = values.get((spec.id, family.paper, col.task, setting.paper, col.paper))
    return (found.value, "") if found and col.paper else (None, NOT_PRINTED)


def _row(idx: RecordIndex, values: dict, spec: PaperTable, family: Family | None,
         detector: tuple[str, Conditions] | None, setting: Setting) -> ReportRow:
    used: list[ResultRecord] = []
    cells = []
    label = detector[0] if detector is not None else f"{' or '.join(family.patterns) if family else '?'} (no record)"
    for col in spec.columns:
        info = metric_info(col.metric_for(setting)) or MetricInfo(col.metric, col.paper, True)
        if detector is None:
            name = family.command_name if family else "?"
            ours, why = None, f"no record: diffzoo run --detector {name} --suite {spec.suite} fills this row"
        else:
            ours, why = _ours(idx, spec, detector, setting, col, used)
        paper, why_paper = _paper(values, spec, family, setting, col)
        cells.append(ReportCell(info, ours, why, paper, why_paper))
    return ReportRow(family.paper if family else "", label, setting, cells, used)


def build_table(idx: RecordIndex, values: dict, spec: PaperTable) -> ReportTable:
    """One paper table: per model row of the paper, its detectors with records
    (or one placeholder row saying how to get one), then detectors the paper
    does not have; each times the table's settings."""
    cases = {col.case_for(s) for s in spec.settings for col in spec.columns if not s.elsewhere}
    detectors = idx.detectors(spec.suite, cases)
    rows: list[ReportRow] = []
    claimed: set[str] = set()
    for family in spec.families:
        mine = [d for d in detectors if family.matches(d[0])]
        claimed.update(mine)
        for detector in mine or [None]:
            rows += [_row(idx, values, spec, family, detector, s) for s in spec.settings]
    for detector in detectors:
        if detector not in claimed:
            rows += [_row(idx, values, spec, None, detector, s) for s in spec.settings]
    records = list({id(r): r for row in rows for r in row.records}.values())
    return ReportTable(spec, rows, records)


def build_report(records: list[ResultRecord], values: dict | None = None,
                 allow_mixed: bool = False) -> list[ReportTable]:
    """Tables 2-8 (and 8b) from ``records``: the newest record per (suite,
    case, detector, conditions) (:class:`RecordIndex`).  Refuses (:class:`ConfigError`) a table whose records
    differ in dataset, label map, split or evaluator version unless
    ``allow_mixed``."""
    values = load_values() if values is None else values
    idx = RecordIndex(records)
    tables = [build_table(idx, values, spec) for spec in TABLES]
    if not allow_mixed:
        refuse_mixing([mixing_problem(f"paper table {t.spec.id}", mixed_conditions(t.records))
                       for t in tables if t.mixed])
    return tables


def _markdown_table(t: ReportTable) -> list[str]:
    spec = t.spec
    lines = [f"## {spec.title}", ""]
    shared = t.shared
    if shared:
        lines.append(f"records: {md_cell(shared['dataset'])} · suite {md_cell(shared.get('suite', 'mixed'))} · "
                     f"metrics {md_cell(shared.get('metrics', 'mixed'))}"
                     + "".join(f" · {md_cell(part)}" for part in [conditions_line(shared)] if part)
                     + (f" · **mixed: {md_cell(', '.join(t.mixed))} (see the columns)**" if t.mixed else ""))
    else:
        lines.append(f"no records: run `diffzoo run --suite {spec.suite}`")
    lines.append("")
    settings = spec.settings[0].label != ""
    head = ["model (paper)", "detector", *([spec.setting_header] if settings else []),
            *(c.label for c in spec.columns), *t.mixed]
    notes, rows = Notes(), []
    for row in t.rows:
        reason = row.reason
        cells = [md_cell(row.model or DASH), md_cell(row.detector) + (notes.mark(reason) if reason else ""),
                 *([md_cell(row.setting.label)] if settings else [])]
        cells += [cell.text(notes, reason) for cell in row.cells]
        cells += [md_cell(row.condition(name)) for name in t.mixed]
        rows.append(cells)
    align = [LEFT] * (2 + settings) + [RIGHT] * len(spec.columns) + [LEFT] * len(t.mixed)
    paper_gaps = dict.fromkeys(c.why_not_paper for row in t.rows for c in row.cells if c.paper is None)
    tail = notes.lines() + ([f"- paper {DASH}: {'; '.join(paper_gaps)}"] if paper_gaps else [])
    return lines + markdown_table([md_cell(h) for h in head], rows, align) + [""] + tail + [""] * bool(tail)


def render_markdown(selection: Selection, tables: list[ReportTable], values: dict | None = None,
                    benchmarks: list[Benchmark] | None = None) -> str:
    values = load_values() if values is None else values
    benchmarks = load_benchmarks() if benchmarks is None else benchmarks
    lines = ["# DiffSeg30k paper tables, reproduced", "",
             f"- **records**: {md_cell(selection.label)} ({len(selection.records)} record(s))",
             f"- **paper**: Ci et al., DiffSeg30k, arXiv 2511.19111v2; {len(values)} published number(s) in "
             f"`{VALUES_FILE.name}` (diffzoo/leaderboard/paper/)", "",
             "Each cell: ours | paper | Δ (ours − paper, percentage points); values in %. Acc is aAcc for "
             f"pixel tasks (METRICS.md). {DASH} marks a part with nothing to show (a cell with nothing at all is "
             f"one {DASH}); a superscript number points to the note under the table that says why a value of ours "
             "is missing, once per reason: after the detector when it holds for the whole row (a row without a "
             "record names the command that fills it), else in the cell. Layout and the case behind each "
             "column: docs/paper.md.", ""]
    for t in tables:
        lines += _markdown_table(t)
    lines += render_benchmarks(benchmarks, selection.records)
    return "\n".join(lines)


def write_report(selection: Selection, out: Path, allow_mixed: bool = False) -> Path:
    """Write ``out/paper.md``; returns its path."""
    values = load_values()
    tables = build_report(selection.records, values, allow_mixed)
    return atomic_write_text(Path(out) / REPORT_FILE, render_markdown(selection, tables, values))
