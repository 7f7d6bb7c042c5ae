"""The DiffSeg30k paper's experiment tables, laid out once: Table 2 (the
standard suite: 2a binary, 2b semantic, 2c image-level), 3 (distortions),
4 and 6 (unseen generators), 5 (classification), 7 (LoRA), 8 (slices: the
paper's real vs AI base, and diffzoo's turns, single vs multi-turn, editor
and edit type), then diffzoo's format parity and cross-dataset tables.

Two views of one layout, per :class:`~diffzoo.leaderboard.index.Group`:

- the run summary (:func:`build_summary`: ``summary.md`` and the console
  after ``diffzoo run``): rows for the records there are, the table's fixed
  settings always (Table 3's clean and paper settings, Table 7's variants);
- the paper report (:func:`build_report`: ``paper.md``): the same tables with
  the paper's column: each model row of the paper (a placeholder row naming
  the command that fills it where no detector is that model), the paper's
  own settings for every detector (the baseline rows of Tables 4 and 6, the
  base rows of Table 8), and in every column the paper prints, the paper's
  number beside ours (``paper_values.csv``: data, never code) with the
  difference; why a value of ours is missing is a numbered note.

A cell reads the metric of the record of the table's suite, the row's
detector and the case whose typed facts match: its task, its setting
(``Case.setting``), whether its model held editors out; a slice's value is
the metric ``<metric>@<key>=<value>`` of the slice case.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from typing import NamedTuple

from diffzoo.harness.core.registry import natural_key
from diffzoo.harness.metrics.catalog import SLICE_KEYS, SLICE_SEPARATOR
from diffzoo.harness.metrics.slices import NO_TURNS, missing_metadata_message
from diffzoo.harness.records.document import ResultRecord
from diffzoo.harness.suites.paper import (
    CLASSIFICATION_EDITORS,
    FORMAT_PARITY,
    PAIR_NAMES,
    PAPER_DISTORTIONS,
    PAPER_SETTING_NAMES,
    PARITY_METRICS,
    SWEEPS,
)
from diffzoo.leaderboard.index import Group, GroupKey, RecordIndex, is_cross, place_labels
from diffzoo.leaderboard.paper.values import PaperValue, load_values
from diffzoo.leaderboard.table import ABSENT, DASH, Cell, Column, Notes, Row, Table, column, info_of, renumber

CLEAN = "clean"
"""The distortions suite's undistorted setting: the reference point of every robustness curve."""
PAPER_SETTINGS = tuple(label for label, _, _ in PAPER_DISTORTIONS)
"""The paper's distortion settings (the suite's own list: suites/paper.py)."""
KNOWN_SETTINGS = {label: (distortion, dict(params)) for label, distortion, params in (*PAPER_DISTORTIONS, *SWEEPS)}
PAPER_PAIRS = {name: editors for editors, name in PAIR_NAMES.items()}
"""The paper's held-out pairs, by name, in its order."""
PIXEL = (("aAcc", "Acc"), ("mIoU", "mIoU"), ("bF1", "bF1"))
"""(record metric, the paper's column) of the pixel tables: the paper's Acc is aAcc (docs/metrics.md)."""
ACC_NOTE = "aAcc is the paper's Acc (pixel accuracy, background included)"
ORACLE_NOTES = {
    "F1_oracle": "F1 (oracle thr.) is the pooled pixel F1 at the probability threshold (a multiple of 1/1024) "
                 "that gives the highest F1 on the evaluated images themselves",
    "img_Acc_oracle": "Acc (oracle thr.) is the accuracy at the threshold on each row's image score (its predicted "
                      "edited area, the pixel threshold kept; or its own image score) that gives the highest accuracy "
                      "on the evaluated images themselves, so never below Acc"}
"""What each oracle column computes (docs/metrics.md, "Oracle columns"), said under a table that shows it."""
ORACLE_TAIL = ": an oracle, never comparable with a column whose threshold was fixed or calibrated before evaluation"
OWN_SCORE_NOTE = ("a row marked (own image score) judges images by the detector's own image probability "
                  "(> 0.5 unless calibrated; IMDL-BenCo's pred_label) instead of the predicted area")
SAME_INPUT = "= baseline: same input under the native recipe; --recipe paper for the paper's protocol"
"""Said beside a value whose pass fed the detector the baseline's own input (the paper's resize
1024 on 1024 px data under ``--recipe native``)."""
NOT_PRINTED = "the paper prints no number for this cell"
NOT_A_PAPER_MODEL = "not a model of the paper"
CALIBRATED_NOTE = ("a row marked (calibrated) decided its thresholds on a validation split; the paper's numbers use "
                   "a fixed threshold, so none is set beside it")
NOT_IN_PAPER = "diffzoo's own table, not in the paper"
CROSS_METRICS = (("binary", "mIoU"), ("binary", "F1"), ("image", "img_Acc"), ("image", "img_AP"))
"""Per evaluation dataset: binary mIoU and F1, image-level Acc and AP (OpenSDI's board shows pixel
IoU/F1 and image F1/Acc)."""


# -- what the layout is made of ------------------------------------------------------------------
@dataclass(frozen=True)
class Family:
    """A model row of the paper (as ``paper_values.csv`` names it) and the diffzoo detectors that are it."""

    paper: str
    patterns: tuple[str, ...]

    def matches(self, detector: str) -> bool:
        return any(fnmatchcase(detector, p) for p in self.patterns)

    @property
    def command_name(self) -> str:
        """What ``--detector`` takes to fill the row: the first pattern without its wildcard."""
        return self.patterns[0].rstrip("*").rstrip(".")


FCN8S = Family("FCN-8s", ("fcn8s.*",))
DEEPLAB = Family("Deeplab v3+", ("deeplabv3plus.*", "mmseg.deeplabv3plus-*"))
SEGFORMER = Family("SegFormer", ("segformer.*", "mmseg.segformer-*"))
CNNSPOT = Family("CNNSpot", ("cnnspot.*",))
UNIVFD = Family("UniversalFakeDet", ("universalfakedet.*",))
SEGMENTERS = (FCN8S, DEEPLAB, SEGFORMER)
CLASSIFIERS = (CNNSPOT, UNIVFD)


@dataclass(frozen=True)
class Setting:
    """A row setting of a detector: ``key`` is the records' ``Case.setting`` ("" where the suite has
    one), ``value`` a slice's value, ``paper`` the setting column of ``paper_values.csv``;
    ``elsewhere``: the row is the paper's, but its records are another table's (which, said in
    a note instead of a value of ours)."""

    key: str = ""
    label: str = ""
    paper: str = ""
    value: str = ""
    elsewhere: str = ""
    group: str = ""  # what the row-group column says besides the detector (a slice key)


@dataclass(frozen=True)
class Col:
    """A column: ``metric`` of the case of ``task`` (the table's when "") whose model held editors
    out (``held``; None: any) and, for a column of one case, of setting ``setting``; ``paper`` is
    the metric column of ``paper_values.csv``."""

    key: str
    metric: str
    label: str = ""
    task: str = ""
    paper: str = ""
    held: bool | None = None
    setting: str | None = None
    flag: bool = False


@dataclass
class Spec:
    """One table of the layout: ``settings`` are every detector's rows, ``paper_settings`` are
    added in the paper's view, ``found(row)`` adds the settings a row's records hold."""

    id: str
    title: str
    suite: str
    columns: Sequence[Col]
    task: str = ""
    paper_table: str = ""  # the paper's table number ("" for diffzoo's own)
    settings: Sequence[Setting] = ()
    paper_settings: Sequence[Setting] = ()
    found: Callable[[str], list[Setting]] | None = None
    row_header: str = "detector"
    group_header: str = ""
    families: Sequence[Family] = ()
    remarks: list[str] = field(default_factory=list)
    sliced: bool = False
    name_detector: bool = True  # the row-group column names the detector (else only the setting's group)
    paper_tasks: Sequence[str] = ()  # the paper's view: rows for the detectors with records of these tasks

    @property
    def per_setting(self) -> bool:
        return bool(self.settings or self.paper_settings or self.found)

    @property
    def tasks(self) -> set[str]:
        """The tasks of the cases the table reads."""
        return {c.task or self.task for c in self.columns} - {""} or {"binary", "semantic", "image"}


def setting_label(setting: str) -> str:
    """A row label that says what a distortion setting is and which of the paper's it stands for."""
    distortion, params = KNOWN_SETTINGS.get(setting, ("", {}))
    paper = PAPER_SETTING_NAMES.get(setting)
    if distortion == "rescale":
        what = f"{setting}: {params['scale']:g}x the training resolution"
        return f"{what} (paper: {paper})" if paper else what
    return f"{setting} (paper: {paper})" if paper else setting


class Place(NamedTuple):
    """Where a cell is: its table, its row (group and label) and its column (key and header)."""

    table: str
    group: str
    label: str
    column: str
    header: str


def paper_cells(group: Group | None = None, values: dict | None = None) -> dict[tuple[str, ...], Place]:
    """Where the paper's view of ``group`` (default: one without records) shows each number of
    ``paper_values.csv``: its key (table, model row, task, setting, metric) -> its cell."""
    layout = _Layout(group or Group(GroupKey(DASH, "", "", "", "", ""), {}, []), {} if values is None else values)
    layout.section()
    return layout.where


def not_carried(record: ResultRecord, metric: str) -> str:
    """Why ``record`` has no ``metric`` at all (absent, not undefined on its images)."""
    return (f"record {record.id[:8]} ({record.body.suite.name} v{record.body.suite.version}) does not carry "
            f"{metric}; a newer suite version computes it")


def slice_setting(key: str, value: str) -> Setting:
    """The row of a slice's value; the paper's Table 8 rows are the base's real and AI values."""
    paper = {"real": "Real-base", "ai": "AI-base"}.get(value, "") if key == "base" else ""
    return Setting(key, value, paper, value=value, group=key)


# -- the layout -----------------------------------------------------------------------------------
@dataclass
class Section:
    """The tables of one group (:class:`~diffzoo.leaderboard.index.Group`), one line per detector
    saying how its thresholds were decided, and one FLAG line per detector with a format shortcut."""

    group: Group
    tables: list[Table]
    policies: list[str]
    flags: list[str]
    # the conditions that set this group apart from another of the same dataset and suites
    # (e.g. ``metrics v2``), so that no two sections carry the same title
    distinct: str = ""

    @property
    def dataset(self) -> str:
        return self.group.key.dataset

    @property
    def versions(self) -> dict[str, str]:
        return {s: v.version for s, v in self.group.suites.items()}

    @property
    def title(self) -> str:
        suites = ", ".join(f"{s} v{v}" for s, v in self.versions.items()) or "no records"
        apart = f" · {self.distinct}" if self.distinct else ""
        return f"{self.dataset} (fingerprint {self.group.key.fingerprint[:12]}): {suites}{apart}"

    @property
    def shown(self) -> list[Table]:
        """Every table of the newest versions (an empty one says how to get it); of older
        versions only those with records."""
        return [t for t in self.tables if self.group.newest or not t.empty]


@dataclass
class Summary:
    sections: list[Section]


def build_summary(records: Sequence[ResultRecord]) -> Summary:
    """The run summary: the layout of each group, without the paper's column; with no records at
    all, one section of empty tables (their shapes and how to get them)."""
    return Summary(_sections(records, None))


def build_report(records: Sequence[ResultRecord], values: dict | None = None) -> list[Section]:
    """The paper report: the layout of each group with the paper's column (``values``: the
    paper's numbers, :func:`~diffzoo.leaderboard.paper.values.load_values` by default)."""
    return _sections(records, load_values() if values is None else values)


def _sections(records: Sequence[ResultRecord], values: dict | None) -> list[Section]:
    groups = RecordIndex(records).groups() or [Group(GroupKey(DASH, "", "", "", "", ""), {}, [])]
    sections = [_Layout(g, values).section() for g in groups]
    by_title: dict[str, list[Section]] = {}
    for s in sections:
        by_title.setdefault(s.title, []).append(s)
    for same in (group for group in by_title.values() if len(group) > 1):
        conditions = [s.group.key.conditions for s in same]
        differing = [k for k in conditions[0] if len({c[k] for c in conditions}) > 1]
        for s, c in zip(same, conditions):
            s.distinct = " · ".join(f"{k} {c[k]}" for k in differing)
    return sections


class _Layout:
    """The tables of one group in one view (``values`` None: the summary's)."""

    def __init__(self, group: Group, values: dict | None):
        self.group, self.values = group, values
        self.paper = values is not None
        self.like = {r.body.row_name: r for r in group.records}  # a record of each row
        self.detector = {name: r.body.detector.name for name, r in self.like.items()}
        self.not_held_out = {r.body.row_name for r in group.records if r.body.not_held_out}
        # rows whose thresholds no paper number shares: never compared, and never filling a paper model's row
        self.calibrated = {r.body.row_name for r in group.records if r.body.calibrated}
        self.flags: list[str] = []
        self.where: dict[tuple[str, ...], Place] = {}  # a paper number's key -> the cell showing it

    def section(self) -> Section:
        tables = [*self.table2(), self.table3(), self.unseen("4", "binary"), self.table5(),
                  self.unseen("6", "image"), self.table7(), self.table8(), self.parity(), self.cross()]
        policies = [policy_line(row, [r for r in self.group.records if r.body.row_name == row])
                    for row in self.group.ordered(r.body.row_name for r in self.group.records)]
        return Section(self.group, tables, policies, self.flags)

    # -- rows and cells ---------------------------------------------------------------------------
    def table(self, spec: Spec) -> Table:
        notes = Notes()
        rows = [self.row(spec, row, family, s, notes) for row, family in self.rows(spec)
                for s in self.settings(spec, row)]
        for family in spec.families if self.paper else ():
            if not any(family.matches(self.detector[r]) for r in self.group.rows(spec.suite, {*spec.tasks,
                                                                                          *spec.paper_tasks})
                       if r not in self.calibrated):
                why = notes(f"no record: {self.group.key.run_command(family.command_name, spec.suite)} fills this row")
                name = f"{' or '.join(family.patterns)} (no record)"
                rows += [replace(self.row(spec, None, family, s, notes, name), notes=why)
                         for s in ([*spec.settings, *spec.paper_settings] if spec.per_setting else [Setting()])]
        if self.paper and spec.families:  # the paper's model rows in its order, then the others
            order = {f.paper: i for i, f in enumerate(spec.families)}
            rows.sort(key=lambda r: order.get(r.model, len(order)))
        remarks = list(spec.remarks) + [ORACLE_NOTES[m] + ORACLE_TAIL
                                        for m in dict.fromkeys(c.metric for c in spec.columns) if m in ORACLE_NOTES]
        table = Table(spec.id, spec.title, [self.column(spec, c) for c in spec.columns], rows,
                      self.group.of(spec.suite, spec.tasks), row_header=spec.row_header,
                      group_header=spec.group_header or ("detector" if spec.per_setting else ""),
                      notes=notes.listed(), remarks=remarks, fed=bool(self.group.rows(spec.suite, spec.tasks)),
                      hint="no records: " + (self.group.key.other_version
                                             or f"run diffzoo run with --suite {spec.suite}"), paper=self.paper,
                      group=self.group)
        renumber(table)
        return table

    def rows(self, spec: Spec) -> list[tuple[str, Family | None]]:
        """The detectors (row names) with records of the table's suite and the paper's model each is."""
        names = self.group.rows(spec.suite, spec.tasks)
        if self.paper:  # a row for every detector of the paper's table (split here by task), saying what it lacks
            names = sorted({*names, *(n for n in self.group.rows(spec.suite, spec.paper_tasks)
                                      if spec.task != "semantic" or not self.like[n].body.calibrated)})
        return [(n, next((f for f in spec.families if f.matches(self.detector[n])), None)) for n in names]

    def settings(self, spec: Spec, row: str) -> list[Setting]:
        if not spec.per_setting:
            return [Setting()]
        chosen: dict[tuple[str, str], Setting] = {}
        found = spec.found(row) if spec.found else ()
        for s in (*spec.settings, *(spec.paper_settings if self.paper else ()), *found):
            chosen.setdefault((s.key, s.value), s)  # the first of a key and value
        return list(chosen.values())

    def column(self, spec: Spec, c: Col) -> Column:
        return column(c.key, c.metric, c.label or None, task=c.task or spec.task,
                      paper=c.paper if spec.paper_table else "", flag=c.flag)

    def row(self, spec: Spec, row: str | None, family: Family | None, setting: Setting, notes: Notes,
            name: str = "") -> Row:
        """The row of ``row`` (None: a placeholder named ``name``) and ``setting``."""
        name = row or name
        cells = {c.key: self.cell(spec, row, family, setting, c, notes) for c in spec.columns}
        reasons = {c.notes for c in cells.values()}
        why: tuple[str, ...] = ()
        if self.paper and len(reasons) == 1 and all(c.value is None for c in cells.values()):
            why = reasons.pop()  # one reason for the whole row: said once, after its label
            cells = {k: replace(c, notes=()) for k, c in cells.items()}
        if not spec.per_setting:
            label, group = name, ""
        else:
            label = setting.label
            group = (f"{name}: {setting.group}" if spec.name_detector else setting.group) if setting.group else name
        for c in spec.columns:
            if c.paper and spec.paper_table and family is not None and name not in self.calibrated:
                self.where[(spec.paper_table, family.paper, c.task or spec.task, setting.paper, c.paper)] = Place(
                    spec.id, group, label, c.key, self.column(spec, c).header)
        return Row(label, cells, group=group, detector=self.detector.get(row or "", ""),
                   model=family.paper if family else "", notes=why, not_held_out=row in self.not_held_out)

    def cell(self, spec: Spec, row: str | None, family: Family | None, setting: Setting, c: Col,
             notes: Notes) -> Cell:
        task = c.task or spec.task
        metric = c.metric + (f"{SLICE_SEPARATOR}{setting.key}={setting.value}" if setting.value else "")
        record = None if row is None or setting.elsewhere else self.group.find(
            spec.suite, row, task=task or None, held=c.held, sliced=spec.sliced,
            setting=c.setting if c.setting is not None else (setting.key if spec.per_setting else None))
        cell = Cell.of(record, metric)
        if not self.paper:
            return cell
        why = ""
        if setting.elsewhere:
            why = setting.elsewhere
        elif row is None:
            why = ""
        elif record is None:
            hint = self.group.key.run_command(self.detector[row], spec.suite, self.like[row])
            why = f"no {spec.suite} record of this case: {hint}"
        elif cell.status == ABSENT:
            why = (f"no {setting.key}={setting.value} images in {record.body.dataset.name}" if setting.value else
                   not_carried(record, metric))
        elif cell.value is None:
            why = "undefined on these images"
        elif (record.body.config.get("distortion_params") or {}).get("same_input_as") == "baseline":
            why = SAME_INPUT
        paper, paper_note = self.paper_value(spec, family, setting, c, task, row in self.calibrated)
        return replace(cell, notes=notes(why) if why else (), paper=paper, paper_note=paper_note)

    def paper_value(self, spec: Spec, family: Family | None, setting: Setting, c: Col,
                    task: str, calibrated: bool = False) -> tuple[float | None, str]:
        if not spec.paper_table or not c.paper or (spec.per_setting and not setting.paper):
            return None, ""  # a column or a row (a sweep, a slice value) the paper has no counterpart of
        if calibrated:
            return None, CALIBRATED_NOTE
        if family is None:
            return None, NOT_A_PAPER_MODEL
        key = (spec.paper_table, family.paper, task, setting.paper, c.paper)
        found: PaperValue | None = (self.values or {}).get(key)
        return (found.value, "") if found else (None, NOT_PRINTED)

    # -- the tables -------------------------------------------------------------------------------
    def table2(self) -> list[Table]:
        semantic = [r for r in self.group.of("standard") if r.body.task == "semantic"]
        editors = list(dict.fromkeys([n for r in semantic for n in r.body.label_space[1:]]
                                     + [m[4:] for r in semantic for m in r.metrics if m.startswith("IoU.")]))

        def cols(metrics: Sequence[str]) -> list[Col]:
            paper = dict(PIXEL)
            return [Col(m, m, paper=paper.get(m, "")) for m in metrics]

        image = self.table(Spec("2c", "Table 2c: image-level detection from the binary mask (standard / image)",
                                "standard", cols(("img_Acc", "img_real_Acc", "img_edited_Acc", "img_AP", "img_AUC",
                                                  "img_Acc_oracle")), task="image",
                                remarks=["an image counts as edited when its predicted edited area exceeds 1% of "
                                         "the image (a row marked (calibrated): the area threshold its threshold "
                                         "policy gives)"]))
        if any(r.body.own_score for r in self.group.of("standard")):
            image.remarks.insert(1, OWN_SCORE_NOTE)
        return [
            self.table(Spec("2a", "Table 2a: binary localization (standard / binary)", "standard",
                            cols(("mIoU", "F1", "aAcc", "bF1", "gIoU", "FPR_authentic", "pixel_AUC", "F1_oracle")),
                            task="binary", paper_table="2", families=SEGMENTERS, paper_tasks=("semantic",))),
            self.table(Spec("2b", "Table 2b: editor attribution, semantic segmentation (standard / semantic)",
                            "standard", cols(("mIoU", "aAcc", "bF1", "mAcc", "top1", "top3",
                                              *(f"IoU.{e}" for e in editors))),
                            task="semantic", paper_table="2", families=SEGMENTERS, paper_tasks=("binary",),
                            remarks=["Top-k: an edited image is a hit when one of its editors is among the k "
                                     "editors with most predicted pixels; IoU.<editor>: per-editor IoU"])),
            image,
        ]

    def table3(self) -> Table:
        names = {CLEAN: "baseline", **PAPER_SETTING_NAMES}
        fixed = [Setting(s, setting_label(s), names.get(s, "")) for s in (CLEAN, *PAPER_SETTINGS)]
        found = list(dict.fromkeys(r.body.setting for r in self.group.of("distortions")))
        sweeps = [label for label, _, _ in SWEEPS]
        extra = [Setting(s, setting_label(s)) for s in dict.fromkeys([*(s for s in sweeps if s in found), *found])
                 if s not in names]
        cols = [Col(f"{task}:{m}", m, f"{task} {info_of(m).label}", task, paper)
                for task in ("binary", "semantic") for m, paper in PIXEL] + [Col("image:img_Acc", "img_Acc",
                                                                                  "image Acc", "image")]
        return self.table(Spec(
            "3", "Table 3: robustness per distortion setting (distortions)", "distortions", cols, paper_table="3",
            settings=fixed, found=lambda row: extra, row_header="setting", families=SEGMENTERS,
            remarks=[ACC_NOTE, f"rows: {CLEAN}; the paper's settings ({', '.join(PAPER_SETTINGS)}); sweeps beyond "
                     "the paper and other settings when run",
                     "resize: the detector sees the image with its shorter side at that multiple of its training "
                     "resolution, scored at the label's resolution (the paper's resize 256 / 1024 at its 512-px "
                     "training resolution)"]))

    def unseen(self, tid: str, task: str) -> Table:
        """Tables 4 (binary) and 6 (image): per detector and held-out pair, the model trained without
        the pair's editors (held-out) beside the one trained on every editor (seen)."""
        metrics = (*PIXEL, ("F1", "")) if task == "binary" else (("img_Acc", "Acc"), ("img_AP", "mAP"))
        cols = [Col(f"{where}:{m}", m, f"{where} {info_of(m).label}", held=where == "held-out",
                    paper=paper if where == "held-out" else "")
                for where in ("seen", "held-out") for m, paper in metrics]
        records = [r for r in self.group.of("unseen-generators") if r.body.task == task]
        pairs = list(dict.fromkeys(r.body.setting for r in records))
        pairs = [p for p in PAPER_PAIRS if p in pairs] + [p for p in pairs if p not in PAPER_PAIRS]

        def label(pair: str, row: str | None = None) -> str:
            """The pair and its editors: as the row's records name them, else the paper's."""
            mine = [r for r in records if r.body.setting == pair and (row is None or r.body.row_name == row)]
            editors = next((r.body.editors for r in mine if r.body.editors), ()) if mine else PAPER_PAIRS.get(pair)
            return f"{pair} ({' + '.join(editors)})" if editors else pair

        def found(row: str) -> list[Setting]:
            mine = {r.body.setting for r in records if r.body.row_name == row}
            return [Setting(p, label(p, row), p) for p in pairs if p in mine]

        where = ("2a", "standard") if task == "binary" else ("5", "classification")
        baseline = Setting("baseline", "baseline (all 8 editors)", "baseline", elsewhere=(
            f"the paper's baseline (trained and tested on all 8 editors) is Table {where[0]}'s row: ours there "
            f"(--suite {where[1]})"))
        what = "binary localization" if task == "binary" else "image-level detection"
        return self.table(Spec(
            tid, f"Table {tid}: unseen editors, {what} (unseen-generators)", "unseen-generators", cols, task=task,
            paper_table=tid, paper_settings=(baseline, *(Setting(p, label(p), p) for p in PAPER_PAIRS)),
            found=found, row_header="held-out pair", families=SEGMENTERS + CLASSIFIERS * (task == "image"),
            remarks=[ACC_NOTE] * (task == "binary") + [
                "held-out: model trained without the pair's editors; seen: model trained on every editor; both "
                "scored on the pair's validation images plus the authentic ones"]))

    def table5(self) -> Table:
        found = [s for s in dict.fromkeys(r.body.setting for r in self.group.of("classification")) if s != "all"]
        editors = [*CLASSIFICATION_EDITORS, *(e for e in found if e not in CLASSIFICATION_EDITORS)]
        cols = [Col(f"{e}:{m}", m, f"{e} {info_of(m).label}", setting=e)
                for e in editors for m in ("img_Acc", "img_AP")]
        cols += [*(Col(m, m, setting="all", paper=paper) for m, paper in (("img_Acc", "Acc"), ("img_AP", "mAP"))),
                 Col("mAP", "img_AP", "mAP", setting=""), Col("img_Acc_oracle", "img_Acc_oracle", setting="all")]
        table = self.table(Spec(
            "5", "Table 5: image-level detection, segmenters and classifiers (classification)", "classification",
            cols, task="image", paper_table="5", families=SEGMENTERS + CLASSIFIERS,
            remarks=["per-editor columns: that editor's images plus the authentic ones; Acc and AP: the whole split; "
                     "mAP = mean of the per-editor APs; segmenters: edited if predicted edited area > 1% of the "
                     "image, classifiers: image probability > 0.5"]))
        partial = []
        for row in table.rows:
            aps = [v for e in editors if (v := row.cells[f"{e}:img_AP"].value) is not None]
            row.cells["mAP"] = Cell(sum(aps) / len(aps)) if aps else Cell(status=ABSENT)
            if aps and len(aps) < len(editors):
                partial.append(f"{row.label} ({len(aps)} of {len(editors)})")
        if partial:
            table.remarks.append("mAP over fewer editors (not comparable with full rows): " + ", ".join(partial))
        return table

    def table7(self) -> Table:
        variants = (Setting("sdxl", "SDXL", "SDXL"), Setting("sdxl-lora", "SDXL-LoRA", "SDXL-LoRA"))
        cols = (*(Col(f"{task}:mIoU", "mIoU", f"{task} mIoU", task) for task in ("binary", "semantic")),
                Col("IoU.sdxl", "IoU.sdxl", task="semantic", paper="mIoU_sdxl"), Col("top1", "top1", task="semantic"))
        return self.table(Spec(
            "7", "Table 7: SDXL vs SDXL + Hyper-SD LoRA re-edits (lora)", "lora", cols, paper_table="7",
            settings=variants, row_header="editor", families=SEGMENTERS,
            remarks=["SDXL regions only; LoRA re-edited regions keep the SDXL label, so predicting SDXL for them is "
                     "correct; IoU.sdxl is the paper's mIoU (SDXL): the IoU on SDXL / SDXL-LoRA masks only"]))

    def table8(self) -> Table:
        pairs = [(task, m, paper) for task in ("binary", "semantic") for m, paper in PIXEL]
        pairs += [("binary", "F1", ""), ("binary", "gIoU", ""), ("binary", "img_Acc", ""), ("semantic", "top1", "")]
        cols = [Col(f"{task}:{m}", m, f"{task} {info_of(m).label}", task, paper)
                for task, m, paper in pairs]
        records = self.group.of("slices")
        left_out: dict[str, None] = {}

        def found(row: str) -> list[Setting]:
            mine = [r for r in records if r.body.row_name == row]
            values: dict[tuple[str, str], None] = {}
            for r in mine:
                slices = [m.partition(SLICE_SEPARATOR)[2].partition("=") for m in r.metrics if SLICE_SEPARATOR in m]
                values.update(((key, value), None) for key, _, value in slices if key == r.body.setting)
            for key in dict.fromkeys(r.body.setting for r in mine):
                if not any(k == key for k, _ in values):
                    left_out[f"{key}: {missing_metadata_message(key)}"] = None  # no metadata on any image
            ordered = sorted(values, key=lambda kv: (SLICE_KEYS.index(kv[0]) if kv[0] in SLICE_KEYS
                                                     else len(SLICE_KEYS), kv[0], natural_key(kv[1])))
            return [slice_setting(key, value) for key, value in ordered]

        table = self.table(Spec(
            "8", "Table 8: results by slice (slices)", "slices", cols, paper_table="8",
            paper_settings=[slice_setting("base", v) for v in ("real", "ai")], found=found, row_header="value",
            group_header="slice", families=SEGMENTERS, sliced=True,
            name_detector=len(self.group.rows("slices")) > 1 or self.paper,
            remarks=[ACC_NOTE, "base: real or AI-generated base image; turns: number of edits; multiturn: single "
                     "(1 turn) or multi (2+), none for authentic images; editor and edit type: an image counts in "
                     "every slice its edits name"]))
        table.remarks += [f"left out, {line}" for line in left_out]
        return table

    def parity(self) -> Table:
        records = self.group.of("format-parity")
        found = list(dict.fromkeys(r.body.setting for r in records))
        formats = list(dict.fromkeys([*(c.setting for c in FORMAT_PARITY.cases), *found]))  # the suite's first

        def mine(row: str) -> list[Setting]:
            have = {r.body.setting for r in records if r.body.row_name == row}
            return [Setting(f, f) for f in formats if f in have]

        cols = [Col(m, m, flag=m == "format_shortcut") for m in PARITY_METRICS]
        table = self.table(Spec(
            "parity", "Format parity: verdicts under re-encoding (format-parity)", "format-parity", cols, task="image",
            found=mine, row_header="format",
            remarks=["verdicts moved: fraction of images whose edited/authentic verdict differs from the native "
                     "file's; ΔAcc: Acc minus the native Acc"]))
        for row in self.group.rows("format-parity"):
            hits = [r for r in records if r.body.row_name == row and (r.metrics.get("format_shortcut") or 0) >= 0.5]
            if hits:
                tolerances = sorted({t for r in hits if (t := r.body.case_option("tolerance")) is not None})
                tol = " / ".join(f"{t:.0%}" for t in tolerances) or "the tolerance"
                self.flags.append(f"{row} changes its image-level verdict on more than {tol} of the images when "
                                  f"they are re-encoded as {', '.join(r.body.setting for r in hits)}: a format "
                                  "shortcut, not edit evidence")
        return table

    def cross(self) -> Table:
        """Rows: detectors (trained on this group's data); columns: each evaluation dataset and split
        (``name/split``; with a short fingerprint and label map where two datasets share it:
        :func:`place_labels`) by :data:`CROSS_METRICS`, and per generator where its metadata
        names them."""
        records = [r for r in self.group.records if is_cross(r)]
        label = place_labels(records)
        places = sorted(set(label.values()), key=natural_key)
        per_generator = {where: list(dict.fromkeys(
            m for r in records if r.body.case.get("slice_by") and label[r.id] == where for m in r.metrics
            if m.startswith(f"F1{SLICE_SEPARATOR}editor=") and not m.endswith(f"={NO_TURNS}"))) for where in places}
        cols: list[Column] = []
        for where in places:
            cols += [column(f"{where}:{m}", m, f"{where} {'image ' if task == 'image' else ''}"
                            f"{info_of(m).label}", task=task) for task, m in CROSS_METRICS]
            cols += [column(f"{where}:{m}", "F1", f"{where} {m.partition('=')[2]} F1", task="binary")
                     for m in per_generator[where]]
        rows = []
        for row in self.group.ordered(r.body.row_name for r in records):
            cells: dict[str, Cell] = {}
            for r in (r for r in records if r.body.row_name == row):
                where = label[r.id]
                wanted = per_generator[where] if r.body.case.get("slice_by") else [
                    m for task, m in CROSS_METRICS if task == r.body.task]
                cells.update({f"{where}:{m}": Cell.of(r, m) for m in wanted})
            rows.append(Row(row, {c.key: cells.get(c.key, Cell(status=ABSENT)) for c in cols},
                            detector=self.detector[row], not_held_out=row in self.not_held_out))
        k = self.group.key
        trained = any(r.not_held_out for r in rows)
        # rows scored on their model's training images are no evaluation on other data: the title says so
        where = "evaluated with --eval-dataset (rows marked not held out: on their own training images)" \
            if trained else "evaluated on other datasets"
        remarks = ["columns: evaluation dataset/split (and its generators' F1, where its metadata names them); "
                   "image-level columns judge images by the predicted edited area (1% rule)"] if rows else []
        return Table("X", f"Cross-dataset: trained on {k.dataset} ({k.fingerprint[:12]}), {where} "
                     "(cross-dataset, opensdi)", cols, rows, records, paper=self.paper, group=self.group,
                     remarks=remarks,
                     hint="no records: " + (k.other_version or "run diffzoo run with --suite cross-dataset (or "
                                            "opensdi) --eval-dataset PATH[:SPLIT]"), fed=bool(rows))


def policy_line(row: str, records: Sequence[ResultRecord]) -> str:
    """One line: how ``row``'s thresholds were decided across its records (each record's typed
    :class:`~diffzoo.harness.records.policy.ThresholdPolicy`: its source and rules)."""
    policies = [r.body.policy for r in records]
    sources = dict.fromkeys(p.source for p in policies)
    details = dict.fromkeys(f"{key}: {rule}" for p in policies for key, rule in (("pixel", p.pixel), ("image", p.image))
                            if rule is not None)
    return f"{row}: thresholds {' / '.join(sources)}" + (f" ({'; '.join(details)})" if details else "")


def cross_tables(records: Sequence[ResultRecord]) -> list[Table]:
    """The cross-dataset table of each group with records of it (the published leaderboard's
    overview of the cross-dataset suite; [] without such records)."""
    return [t for g in RecordIndex([r for r in records if is_cross(r)]).groups() for t in [_Layout(g, None).cross()]
            if t.rows]
