"""The overview table's model: one row per detector, one column per headline
figure, grouped by benchmark; what the Markdown, CSV and LaTeX overviews
(:mod:`diffzoo.leaderboard.render.overview_text`) and the site render.
:mod:`.build` fills it from records.

The columns (:data:`HEADLINES`, then the cross-dataset columns each
evaluation place adds, :func:`.build.cross_columns`) are defined in
docs/leaderboard.md, "The overview table"; a change to any definition is a
new :data:`OVERVIEW_VERSION`.  A table (:class:`OverviewTable`) is one group
of records that may be ranked together (:class:`OverviewGroup`); its rows
hold one :class:`OverviewCell` per column: a value (a fraction) with its CI
where the record has one, or *missing* with the ids of the table's notes
saying why and how to get it, or *not applicable*.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

from diffzoo.harness.metrics.catalog import MetricInfo, metric_info
from diffzoo.leaderboard.summary.settings import PAPER_SETTINGS
from diffzoo.leaderboard.tables import Cell, slugify

OVERVIEW_VERSION = "1"
"""The version of the overview's definitions (columns, means, missing rule): bumped on any change."""

STANDARD, DISTORTIONS, UNSEEN = "standard", "distortions", "unseen-generators"
CROSS_SUITES = ("cross-dataset", "opensdi")
SUITES = (STANDARD, DISTORTIONS, UNSEEN, *CROSS_SUITES)
"""The suites the overview reads; records of other suites are left out of it."""
CROSS_METRIC = "mIoU"
"""The cross-dataset figure: binary mIoU, which is the edited class's IoU (docs/metrics.md)
and so a monotone function of its pixel F1 (F1 = 2 IoU / (1 + IoU)): both rank one
evaluation place alike, and mIoU keeps the overview in one unit, so the cross-dataset
columns read directly against the standard, robustness and unseen-editor columns.  F1 (and
IMDL-BenCo's per-image F1) stay in the per-case tables and the summary's cross-dataset table."""


@dataclass(frozen=True)
class OverviewColumn:
    """One headline column: ``key`` is stable (CSV, the site), ``benchmark`` the group it
    is shown under, ``task`` the output it needs (binary, semantic, image), ``metric`` the
    record metric it is made of (its direction and format), ``definition`` one sentence."""

    key: str
    benchmark: str
    task: str
    label: str
    metric: str
    definition: str

    @property
    def info(self) -> MetricInfo:
        return metric_info(self.metric) or MetricInfo(self.metric, self.metric, None, -math.inf, math.inf, False)


NO_CI = "; no CI (see docs/leaderboard.md)"
HEADLINES: tuple[OverviewColumn, ...] = (
    OverviewColumn("standard.binary.mIoU", "standard", "binary", "binary mIoU", "mIoU",
                   "mIoU of the standard suite's binary case, with its 95% CI (the primary column)"),
    OverviewColumn("standard.binary.bF1", "standard", "binary", "binary bF1", "bF1",
                   "boundary F1 of the standard suite's binary case, with its 95% CI"),
    OverviewColumn("standard.semantic.mIoU", "standard", "semantic", "semantic mIoU", "mIoU",
                   "mIoU of the standard suite's semantic case (editor attribution), with its 95% CI"),
    OverviewColumn("standard.image.img_Acc", "standard", "image", "image Acc", "img_Acc",
                   "image-level accuracy of the standard suite's image case, with its 95% CI"),
    OverviewColumn("standard.image.img_AP", "standard", "image", "image AP", "img_AP",
                   "image-level AP of the standard suite's image case, with its 95% CI"),
    OverviewColumn("robustness.binary.mIoU.mean", "robustness", "binary", "mean mIoU", "mIoU",
                   f"mean over the paper's settings ({', '.join(PAPER_SETTINGS)}) of the distortions suite's "
                   f"binary mIoU; missing unless all are present{NO_CI}"),
    OverviewColumn("robustness.binary.mIoU.worst", "robustness", "binary", "worst mIoU", "mIoU",
                   f"the lowest of the same settings' binary mIoU (the cell names the setting){NO_CI}"),
    OverviewColumn("unseen.binary.mIoU.mean", "unseen editors", "binary", "held-out mIoU", "mIoU",
                   "mean over the held-out pairs of the unseen-generators suite (cases <Pair>.binary) of the "
                   f"binary mIoU of the model trained without the pair; missing unless every pair is present{NO_CI}"),
)
"""The fixed headline columns, in order; the cross-dataset columns follow (:func:`.build.cross_columns`)."""
PRIMARY_COLUMN = HEADLINES[0].key
"""Rows are ranked by it (the table's first column when it lacks this one), missing last."""


@dataclass(frozen=True)
class OverviewCell(Cell):
    """``value`` (a fraction) with its 95% CI (``ci``, ``half_width``) where the record has one;
    a missing value holds the ids of the notes saying why (``notes``); ``applicable`` is False
    where the detector cannot have the value; ``detail``: e.g. the setting a worst-of value is."""

    notes: tuple[str, ...] = ()
    applicable: bool = True
    detail: str = ""

    @property
    def missing(self) -> bool:
        return self.applicable and self.value is None


NOT_APPLICABLE = OverviewCell(None, applicable=False)


@dataclass
class OverviewRow:
    label: str  # the records' row name: NAME, or NAME (own image score)
    detector: str  # the registered name (its page)
    cells: dict[str, OverviewCell]  # column key -> cell, one per column
    own_score: bool = False
    rank: int | None = None  # by the primary column; None when it is missing or not applicable


@dataclass(frozen=True)
class OverviewNote:
    id: str
    text: str


@dataclass(frozen=True)
class OverviewGroup:
    """What every number of one overview table was made under."""

    dataset: str
    fingerprint: str
    label_map: str
    split: str
    recipe: str
    metrics_version: str
    suites: tuple[tuple[str, str], ...] = ()  # (suite, "v1 (definition hash)"), in SUITES order

    @property
    def title(self) -> str:
        return f"{self.dataset} ({self.fingerprint[:12]})"

    @property
    def conditions(self) -> dict[str, str]:
        return {"label map": self.label_map, "split": self.split, "recipe": self.recipe,
                "metrics": f"v{self.metrics_version}",
                "suites": ", ".join(f"{s} {v}" for s, v in self.suites)}

    @property
    def name(self) -> str:
        """The title and every condition: ``mini (fp) · label map X · split Y · ...``."""
        return " · ".join([self.title, *(f"{k} {v}" for k, v in self.conditions.items())])

    @property
    def slug(self) -> str:
        """A label for the group (LaTeX, the site), unique per :attr:`name`."""
        digest = hashlib.sha256(self.name.encode()).hexdigest()[:8]
        return slugify(f"overview-{self.dataset}-{self.fingerprint[:8]}-{digest}")


@dataclass
class OverviewTable:
    group: OverviewGroup
    columns: list[OverviewColumn]
    rows: list[OverviewRow]
    notes: list[OverviewNote] = field(default_factory=list)
    primary: str | None = None
    version: str = OVERVIEW_VERSION

    @property
    def benchmarks(self) -> list[tuple[str, list[OverviewColumn]]]:
        """The columns as (benchmark, its columns), in order (a grouped header)."""
        out: list[tuple[str, list[OverviewColumn]]] = []
        for col in self.columns:
            if not out or out[-1][0] != col.benchmark:
                out.append((col.benchmark, []))
            out[-1][1].append(col)
        return out

    def note(self, note_id: str) -> OverviewNote:
        return next(n for n in self.notes if n.id == note_id)
