"""The layout of the paper's Tables 2-8: which record fills which cell.

A report table is one suite; its rows are detectors (grouped under the
paper's model rows) times the table's settings, its columns metrics.  A cell
is the metric ``Column.metric`` (``{setting}`` filled in) of the record of
case ``Column.case`` (likewise), and the paper's number for it is the line
(table, model row, ``Column.task``, ``Setting.paper``, ``Column.paper``) of
``paper_values.csv``.  The mapping is data; no number is.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase

from diffzoo.harness.data.labelmaps import DIFFSEG30K_EDITORS
from diffzoo.harness.metrics.catalog import SLICE_SEPARATOR
from diffzoo.harness.suites.paper import PAIR_NAMES, PAPER_SETTING_NAMES


@dataclass(frozen=True)
class Family:
    """A model row of the paper (as ``paper_values.csv`` names it) and the
    diffzoo detectors that are it."""

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
    """A row setting: ``case`` fills ``{setting}`` in case and metric names,
    ``paper`` is the CSV's setting column, ``label`` what the report shows.
    ``elsewhere``: the row is the paper's, but its records belong to another
    table (which, said in the report instead of a value of ours)."""

    case: str
    paper: str
    label: str
    elsewhere: str = ""


NO_SETTING = (Setting("", "", ""),)


@dataclass(frozen=True)
class Column:
    label: str
    task: str  # the CSV's task column
    paper: str  # the CSV's metric column (Acc, mIoU, bF1, mAP, mIoU_sdxl); "" where the paper has no such column
    case: str  # the record's case, may hold {setting}
    metric: str  # the record's metric, may hold {setting}

    def case_for(self, setting: Setting) -> str:
        return self.case.format(setting=setting.case)

    def metric_for(self, setting: Setting) -> str:
        return self.metric.format(setting=setting.case)


@dataclass(frozen=True)
class PaperTable:
    id: str
    title: str
    suite: str
    columns: tuple[Column, ...]
    families: tuple[Family, ...] = SEGMENTERS
    settings: tuple[Setting, ...] = NO_SETTING
    setting_header: str = ""
    in_paper: bool = True  # False: diffzoo's own table, no paper values


PIXEL = (("Acc", "aAcc"), ("mIoU", "mIoU"), ("bF1", "bF1"))
"""(paper column, record metric) of the pixel tables; the paper's Acc is aAcc (METRICS.md)."""


def pixel_columns(case: str, tasks: tuple[str, ...] = ("binary", "semantic"), metric: str = "{m}",
                  prefix: str = "", in_paper: bool = True) -> tuple[Column, ...]:
    """Acc, mIoU and bF1 per task; ``case`` and ``metric`` may use ``{task}``
    and ``{m}`` (the record metric) besides ``{setting}``; ``in_paper=False``:
    diffzoo's columns, which the paper does not print."""
    return tuple(Column(f"{prefix}{task} {paper}", task, paper if in_paper else "",
                        case.replace("{task}", task), metric.replace("{m}", m))
                 for task in tasks for paper, m in PIXEL)


def _slice(key: str) -> str:
    return "{m}" + SLICE_SEPARATOR + key + "={setting}"


DISTORTION_SETTINGS = (
    Setting("clean", "baseline", "clean"),
    Setting("jpeg80", PAPER_SETTING_NAMES["jpeg80"], "JPEG 80"),
    Setting("jpeg60", PAPER_SETTING_NAMES["jpeg60"], "JPEG 60"),
    Setting("resize50", PAPER_SETTING_NAMES["resize50"], "resize 256 (0.5x)"),
    Setting("resize200", PAPER_SETTING_NAMES["resize200"], "resize 1024 (2x)"),
)
"""The paper's resize 256 / 1024 on 512-px-trained models are diffzoo's
resize50 / resize200: the input the detector sees at 0.5x / 2x its training
resolution (docs/suites.md)."""
PAIRS = tuple(Setting(name, name, name.replace("_", " + ")) for name in PAIR_NAMES.values())


def _baseline(table: str, suite: str) -> Setting:
    """The paper's "Baseline" row of Tables 4 and 6: the model trained and
    scored on all 8 editors, which is another table's row in diffzoo."""
    return Setting("baseline", "baseline", "baseline (all 8 editors)",
                   elsewhere=f"the paper's baseline (trained and tested on all 8 editors) is Table {table}'s row: "
                             f"ours there (--suite {suite})")


IMAGE = (Column("Acc", "image", "Acc", "{setting}", "img_Acc"), Column("AP", "image", "mAP", "{setting}", "img_AP"))
"""Table 5's columns; the paper's mAP is compared with the case's AP (docs/paper.md)."""

TABLES: tuple[PaperTable, ...] = (
    PaperTable("2", "Table 2: binary and semantic segmentation", "standard", pixel_columns("{task}")),
    PaperTable("3", "Table 3: robustness to JPEG and resizing", "distortions",
               pixel_columns("{setting}.{task}"), settings=DISTORTION_SETTINGS, setting_header="distortion"),
    PaperTable("4", "Table 4: unseen generators (leave two out), binary", "unseen-generators",
               pixel_columns("{setting}.binary", ("binary",), prefix="unseen ")
               + pixel_columns("{setting}.seen.binary", ("binary",), prefix="seen ", in_paper=False),
               settings=(_baseline("2", "standard"), *PAIRS), setting_header="generalize to"),
    PaperTable("5", "Table 5: image-level detection (segmenters thresholded at 1% area, classifiers)",
               "classification", IMAGE, families=SEGMENTERS + CLASSIFIERS, setting_header="images",
               settings=(Setting("all", "", "all"), *(Setting(e, e, e) for e in DIFFSEG30K_EDITORS))),
    PaperTable("6", "Table 6: image-level detection of unseen generators", "unseen-generators",
               tuple(Column(f"{v} {c.label}", c.task, c.paper if v == "unseen" else "", case, c.metric)
                     for v, case in (("unseen", "{setting}.image"), ("seen", "{setting}.seen.image"))
                     for c in IMAGE),
               families=SEGMENTERS + CLASSIFIERS, settings=(_baseline("5", "classification"), *PAIRS),
               setting_header="generalize to"),
    PaperTable("7", "Table 7: LoRA (SDXL vs SDXL + Hyper-SD LoRA regions)", "lora",
               (Column("binary mIoU", "binary", "", "{setting}.binary", "mIoU"),
                Column("semantic mIoU", "semantic", "", "{setting}.semantic", "mIoU"),
                Column("semantic mIoU (SDXL)", "semantic", "mIoU_sdxl", "{setting}.semantic", "IoU.sdxl")),
               settings=(Setting("sdxl", "SDXL", "SDXL"), Setting("sdxl-lora", "SDXL-LoRA", "SDXL-LoRA")),
               setting_header="edit model (in val)"),
    PaperTable("8", "Table 8: real base vs AI base", "slices", pixel_columns("base.{task}", metric=_slice("base")),
               settings=(Setting("real", "Real-base", "real base"), Setting("ai", "AI-base", "AI base")),
               setting_header="base"),
    PaperTable("8b", "Table 8b: single-turn vs multi-turn edits (diffzoo; not in the paper)", "slices",
               pixel_columns("multiturn.{task}", metric=_slice("multiturn")),
               settings=(Setting("single", "single", "single turn"), Setting("multi", "multi", "multi-turn")),
               setting_header="turns", in_paper=False),
)


def paper_cells() -> set[tuple[str, str, str, str, str]]:
    """Every (table, row, task, setting, metric) of ``paper_values.csv`` the layout can show."""
    return {(t.id, f.paper, c.task, s.paper, c.paper) for t in TABLES if t.in_paper
            for f in t.families for s in t.settings for c in t.columns if c.paper}
