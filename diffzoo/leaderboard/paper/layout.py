"""The layout of the paper's Tables 2-8: which record fills which cell.

A report table is one suite; its rows are detectors (grouped under the
paper's model rows) times the table's settings, its columns metrics.  A cell
is the metric ``Column.metric`` (``{setting}`` filled in) of the record of
case ``Column.case`` (likewise), and the paper's number for it is the line
(table, model row, ``Column.task``, setting [+ variant], ``Column.paper``) of
``paper_values.csv``.  The mapping is data; no number is.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase

from diffzoo.harness.data.labelmaps import DIFFSEG30K_EDITORS
from diffzoo.harness.metrics.catalog import SLICE_SEPARATOR
from diffzoo.harness.suites.paper import PAIR_NAMES


@dataclass(frozen=True)
class Family:
    """A model row of the paper and the diffzoo detectors that are it."""

    paper: str
    patterns: tuple[str, ...]

    def matches(self, detector: str) -> bool:
        return any(fnmatchcase(detector, p) for p in self.patterns)


FCN8S = Family("FCN-8s", ("fcn8s.*",))
DEEPLAB = Family("DeepLabv3+", ("deeplabv3plus.*", "mmseg.deeplabv3plus-*"))
SEGFORMER = Family("SegFormer", ("segformer.*", "mmseg.segformer-*"))
CNNSPOT = Family("CNNSpot", ("cnnspot.*",))
UNIVFD = Family("UniversalFakeDetect", ("universalfakedet.*",))
SEGMENTERS = (FCN8S, DEEPLAB, SEGFORMER)
CLASSIFIERS = (CNNSPOT, UNIVFD)


@dataclass(frozen=True)
class Setting:
    """A row setting: ``case`` fills ``{setting}`` in case and metric names,
    ``paper`` is the CSV's setting column, ``label`` what the report shows."""

    case: str
    paper: str
    label: str


NO_SETTING = (Setting("", "", ""),)


@dataclass(frozen=True)
class Column:
    label: str
    task: str  # the CSV's task column
    paper: str  # the CSV's metric column (Acc, mIoU, bF1, AP)
    case: str  # the record's case, may hold {setting}
    metric: str  # the record's metric, may hold {setting}
    variant: str = ""  # appended to the CSV's setting (seen / unseen, sdxl / sdxl-lora)

    def case_for(self, setting: Setting) -> str:
        return self.case.format(setting=setting.case)

    def metric_for(self, setting: Setting) -> str:
        return self.metric.format(setting=setting.case)

    def paper_setting(self, setting: Setting) -> str:
        return " ".join(part for part in (setting.paper, self.variant) if part)


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
                  variant: str = "", prefix: str = "") -> tuple[Column, ...]:
    """Acc, mIoU and bF1 per task; ``case`` and ``metric`` may use ``{task}``
    and ``{m}`` (the record metric) besides ``{setting}``."""
    return tuple(Column(f"{prefix}{task} {paper}", task, paper,
                        case.replace("{task}", task), metric.replace("{m}", m), variant)
                 for task in tasks for paper, m in PIXEL)


def _slice(key: str) -> str:
    return "{m}" + SLICE_SEPARATOR + key + "={setting}"


DISTORTION_SETTINGS = (
    Setting("clean", "clean", "clean"),
    Setting("jpeg80", "jpeg80", "JPEG 80"),
    Setting("jpeg60", "jpeg60", "JPEG 60"),
    Setting("resize50", "resize256", "resize 256 (0.5x)"),
    Setting("resize200", "resize1024", "resize 1024 (2x)"),
)
"""The paper's resize 256 / 1024 on 512-px-trained models are diffzoo's
resize50 / resize200: the input the detector sees at 0.5x / 2x its training
resolution (docs/suites.md)."""
PAIRS = tuple(Setting(name, name, name.replace("_", " + ")) for name in PAIR_NAMES.values())
IMAGE = (("Acc", "img_Acc"), ("AP", "img_AP"))

TABLES: tuple[PaperTable, ...] = (
    PaperTable("2", "Table 2: binary and semantic segmentation", "standard", pixel_columns("{task}")),
    PaperTable("3", "Table 3: robustness to JPEG and resizing", "distortions",
               pixel_columns("{setting}.{task}"), settings=DISTORTION_SETTINGS, setting_header="distortion"),
    PaperTable("4", "Table 4: unseen generators (leave two out), binary", "unseen-generators",
               pixel_columns("{setting}.binary", ("binary",), variant="unseen", prefix="unseen ")
               + pixel_columns("{setting}.seen.binary", ("binary",), variant="seen", prefix="seen "),
               settings=PAIRS, setting_header="held-out pair"),
    PaperTable("5", "Table 5: image-level detection (segmenters thresholded at 1% area, classifiers)",
               "classification",
               tuple(Column(paper, "image", paper, "{setting}", m) for paper, m in IMAGE),
               families=SEGMENTERS + CLASSIFIERS, setting_header="images",
               settings=(Setting("all", "all", "all"),
                         *(Setting(e, e, e) for e in DIFFSEG30K_EDITORS))),
    PaperTable("6", "Table 6: image-level detection of unseen generators", "unseen-generators",
               tuple(Column(f"{v} {paper}", "image", paper, case, m, v)
                     for v, case in (("unseen", "{setting}.image"), ("seen", "{setting}.seen.image"))
                     for paper, m in IMAGE),
               families=SEGMENTERS + CLASSIFIERS, settings=PAIRS, setting_header="held-out pair"),
    PaperTable("7", "Table 7: LoRA (SDXL vs SDXL + Hyper-SD LoRA regions), mIoU", "lora",
               tuple(Column(f"{task} mIoU {label}", task, "mIoU", f"{variant}.{task}", "mIoU", variant)
                     for task in ("binary", "semantic")
                     for variant, label in (("sdxl", "SDXL"), ("sdxl-lora", "SDXL-LoRA")))),
    PaperTable("8", "Table 8: real base vs AI base", "slices", pixel_columns("base.{task}", metric=_slice("base")),
               settings=(Setting("real", "real", "real base"), Setting("ai", "ai", "AI base")),
               setting_header="base"),
    PaperTable("8b", "Table 8b: single-turn vs multi-turn edits (diffzoo; not in the paper)", "slices",
               pixel_columns("multiturn.{task}", metric=_slice("multiturn")),
               settings=(Setting("single", "single", "single turn"), Setting("multi", "multi", "multi-turn")),
               setting_header="turns", in_paper=False),
)
