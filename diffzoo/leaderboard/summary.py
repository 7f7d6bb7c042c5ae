"""A run's paper-style summary: the DiffSeg30k paper's experiment tables
(Tables 2-8, plus format parity) built from result records, as Markdown, as
rich console tables, and robustness curves as PNGs.

Records are grouped by dataset (name and fingerprint) and suite version:
one group holds the newest version of every suite seen for a dataset, the
next group the next-older versions, and so on, so numbers of two versions
of one suite never share a table.  Within a group each (suite, case,
detector) gives one row, from its newest record.  The tables themselves are
in :mod:`.summary_tables`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.rule import Rule
from rich.table import Table as RichTable
from rich.text import Text

from ..harness.fsutil import atomic_write_text
from ..harness.records import ResultRecord
from . import plots
from .escape import md_cell, printable, term_text
from .summary_tables import (
    ABSENT,
    CLEAN,
    PAPER_PIXEL_METRICS,
    ROBUSTNESS_CURVES,
    RecordIndex,
    SummaryTable,
    distortion_of,
    parity_table,
    setting_of,
    table2,
    table3,
    table5,
    table7,
    table8,
    unseen_table,
)
from .tables import slugify, version_order

log = logging.getLogger(__name__)

LEGEND = (f"Values in %; ± is half the 95% bootstrap CI over images; ↑ higher is better, ↓ lower is better; "
          f"{ABSENT} = not run (no record for that case), - = undefined on these images.")
MILDER_WHEN_HIGHER = ("quality", "size", "fraction")
"""Distortion parameters whose higher values distort less (others, e.g. sigma: more)."""
RATIO_PARAMETERS = ("scale",)
"""Distortion parameters that distort more the farther they are from 1 (by ratio: 0.5 and 2 alike)."""


@dataclass
class SummaryGroup:
    """The tables of one dataset and one version of each suite."""

    dataset: str
    fingerprint: str
    versions: dict[str, str]  # suite name -> version
    tables: list[SummaryTable]
    policies: list[str]  # one line per detector: its threshold policy
    flags: list[str]  # one line per detector with a format shortcut
    records: list[ResultRecord] = field(default_factory=list, repr=False)
    newest: bool = True  # False: a group of older suite versions (only tables with rows are shown)

    @property
    def title(self) -> str:
        suites = ", ".join(f"{s} v{v}" for s, v in self.versions.items()) or "no records"
        return f"{self.dataset} (fingerprint {self.fingerprint[:12]}): {suites}"

    @property
    def shown(self) -> list[SummaryTable]:
        return [t for t in self.tables if self.newest or not t.empty]


@dataclass
class Summary:
    groups: list[SummaryGroup]


def build_summary(records: Iterable[ResultRecord]) -> Summary:
    """The summary's tables per (dataset, suite versions); with no records at
    all, one group of empty tables (their shapes and how to get them)."""
    records = list(records)
    detector_order = list(dict.fromkeys(r.body.detector.name for r in records))
    by_dataset: dict[tuple[str, str], dict[str, dict[str, list[ResultRecord]]]] = {}
    for r in records:
        b = r.body
        ds = by_dataset.setdefault((b.dataset.name, b.dataset.fingerprint), {})
        ds.setdefault(b.suite.name, {}).setdefault(b.suite.version, []).append(r)
    groups = []
    for (name, fingerprint), suites in by_dataset.items():
        newest_first = {s: sorted(v, key=version_order, reverse=True) for s, v in suites.items()}
        for depth in range(max(len(v) for v in newest_first.values())):
            versions = {s: v[depth] for s, v in newest_first.items() if len(v) > depth}
            recs = [r for s, v in versions.items() for r in suites[s][v]]
            groups.append(_group(name, fingerprint, versions, recs, detector_order, newest=depth == 0))
    if not groups:
        groups.append(_group(ABSENT, "", {}, [], [], newest=True))
    return Summary(groups)


def _group(dataset: str, fingerprint: str, versions: dict[str, str], records: list[ResultRecord],
           detector_order: list[str], newest: bool) -> SummaryGroup:
    idx = RecordIndex(records, detector_order)
    parity, flags = parity_table(idx)
    tables = [*table2(idx), table3(idx), unseen_table(idx, "4", "binary", (*PAPER_PIXEL_METRICS, "F1")), table5(idx),
              unseen_table(idx, "6", "image", ("img_Acc", "img_AP")), table7(idx), table8(idx), parity]
    by_detector: dict[str, list[ResultRecord]] = {}
    for r in records:
        by_detector.setdefault(r.body.detector.name, []).append(r)
    policies = [policy_line(det, by_detector[det]) for det in sorted(
        by_detector, key=lambda n: (detector_order.index(n), n))]
    return SummaryGroup(dataset, fingerprint, dict(sorted(versions.items())), tables, policies, flags,
                        records, newest)


def policy_line(detector: str, records: Sequence[ResultRecord]) -> str:
    """One line: how ``detector``'s thresholds were decided across its records."""
    sources: dict[str, None] = {}
    details: dict[str, None] = {}
    for r in records:
        policy = r.body.policy
        sources[policy.source] = None
        for key, rule in (("pixel", policy.pixel), ("image", policy.image)):
            if rule is not None:
                details[f"{key}: {rule}"] = None
    return f"{detector}: thresholds {' / '.join(sources)}" + (f" ({'; '.join(details)})" if details else "")


# -- Markdown -----------------------------------------------------------------------------
def summary_markdown(summary: Summary, *, title: str, notes: Sequence[str] = ()) -> str:
    """The summary as Markdown; ``title`` and ``notes`` are escaped like record text."""
    lines = [f"# {md_cell(title)}", "", md_cell(LEGEND), ""]
    lines += [f"- {md_cell(n)}" for n in notes]
    for group in summary.groups:
        lines += ["", f"## {md_cell(group.title)}", ""]
        lines += [f"**FLAG**: {md_cell(f)}" + "  " for f in group.flags]
        if group.flags:
            lines.append("")
        if group.policies:
            lines += ["Threshold policy:", "", *(f"- {md_cell(p)}" for p in group.policies)]
        if not group.newest:
            lines += ["", "Older suite versions: only tables with records are shown."]
        for t in group.shown:
            lines += ["", *_md_table(t)]
    return "\n".join(lines).rstrip() + "\n"


def _md_table(t: SummaryTable) -> list[str]:
    heads = ([t.group_header] if t.group_header else []) + [t.row_header] + [c.header for c in t.columns]
    align = [":--"] * (len(heads) - len(t.columns)) + ["--:"] * len(t.columns)
    lines = [f"### {md_cell(t.title)}", "", "| " + " | ".join(md_cell(h) for h in heads) + " |",
             "|" + "|".join(align) + "|"]
    for row in t.rows:
        first = ([md_cell(row.group)] if t.group_header else []) + [md_cell(row.label)]
        lines.append("| " + " | ".join(first + [c.text(row.cells.get(c.key)) for c in t.columns]) + " |")
    lines.append("")
    if t.empty:
        lines.append(f"_{md_cell(t.hint)}_")
        lines.append("")
    lines += [f"- {md_cell(n)}" for n in t.notes]
    return lines


# -- console (rich) ----------------------------------------------------------------------------
def summary_console(summary: Summary) -> list[Any]:
    """Rich renderables: per group a rule, its FLAG and threshold lines, its
    tables with rows, and one line naming the tables no record filled (their
    shapes are in summary.md).  Record text is shown with
    :func:`~.escape.term_text`: control characters escaped, no markup."""
    out: list[Any] = [Text(LEGEND, style="dim")]
    for group in summary.groups:
        out.append(Rule(term_text(group.title)))
        out += [Text.assemble(("FLAG ", "bold red"), (printable(f), "red")) for f in group.flags]
        out += [Text.assemble(("threshold policy ", "bold"), printable(p)) for p in group.policies]
        out += [part for t in group.shown if not t.empty for part in _rich_tables(t)]
        empty = [t.title.split(":")[0] for t in group.shown if t.empty]
        if empty:
            out.append(term_text(f"not run here (shapes in summary.md; add the suite to fill them): "
                                 f"{', '.join(empty)}", style="dim"))
    return out


CONSOLE_COLUMNS = 10
"""A wider table (Table 5: two columns per editor) is printed in parts of at most
this many value columns, each repeating the row labels; summary.md keeps it whole."""


def _rich_tables(t: SummaryTable) -> list[RichTable]:
    chunks = [t.columns[i:i + CONSOLE_COLUMNS] for i in range(0, len(t.columns), CONSOLE_COLUMNS)] or [[]]
    return [_rich_table(t, cols, part=(i + 1, len(chunks)), last=i == len(chunks) - 1)
            for i, cols in enumerate(chunks)]


def _rich_table(t: SummaryTable, columns: list, part: tuple[int, int] = (1, 1), last: bool = True) -> RichTable:
    caption = "; ".join([t.hint] * t.empty + t.notes) if last else ""
    title = t.title + (f" (part {part[0]} of {part[1]})" if part[1] > 1 else "")
    table = RichTable(title=term_text(title), title_justify="left",
                      caption=term_text(caption) if caption else None, caption_justify="left")
    if t.group_header:
        table.add_column(term_text(t.group_header), style="bold")
    table.add_column(term_text(t.row_header), style="bold" if not t.group_header else None)
    for c in columns:
        table.add_column(term_text(c.header), justify="right", style="italic" if c.oracle else None)
    previous = None
    for row in t.rows:
        group = [term_text(row.group) if row.group != previous else ""] if t.group_header else []
        previous = row.group
        table.add_row(*group, term_text(row.label),
                      *(term_text(c.text(row.cells.get(c.key), ci=lambda v, h: f"{v} ±{h}")) for c in columns))
    return table


# -- files -------------------------------------------------------------------------------------------
def robustness_series(records: Iterable[ResultRecord], task: str,
                      metric: str) -> tuple[dict[str, list[tuple[float, float | None]]], float | None]:
    """Per distortion family, (strength rank, value) points, 1 = mildest
    setting; and the clean value.  Families differ in units (quality, px,
    sigma), so the x axis is the rank of a setting's strength within its family."""
    families: dict[str, list[tuple[float, str, Any, float | None]]] = {}
    clean = None
    for r in records:
        setting, case_task = setting_of(r.body.case_name)
        if case_task != task or metric not in r.metrics:
            continue
        if setting == CLEAN:
            clean = r.metrics[metric]
            continue
        distortion, params = distortion_of(r)
        numeric = [(k, v) for k, v in params.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
        key, value = numeric[0] if numeric else ("", 0)
        harsh = (-value if key in MILDER_WHEN_HIGHER
                 else abs(math.log(value)) if key in RATIO_PARAMETERS and value > 0 else value)
        families.setdefault(distortion, []).append((harsh, key, value, r.metrics[metric]))
    series = {}
    for distortion, points in sorted(families.items()):
        points.sort(key=lambda p: (p[0], p[2]))
        key = points[0][1]
        label = f"{distortion} ({key} {', '.join(f'{p[2]:g}' for p in points)})" if key else distortion
        series[label] = [(float(i), p[3]) for i, p in enumerate(points, 1)]
    return series, clean


def write_summary(summary: Summary, out_dir: Path, *, title: str,
                  notes: Sequence[str] = ()) -> dict[str, Path]:
    """Write ``out_dir/summary.md`` and ``out_dir/plots/<detector>-robustness-<metric>.png``
    (one per detector and robustness metric with distorted results) for a
    :func:`build_summary` result; returns relative path -> path of every file written."""
    out_dir = Path(out_dir)
    written = {"summary.md": atomic_write_text(out_dir / "summary.md",
                                               summary_markdown(summary, title=title, notes=notes))}
    used: set[str] = set()
    for group in summary.groups:
        suffix = f"-{group.dataset}-{group.fingerprint[:8]}" if len(summary.groups) > 1 else ""
        idx = RecordIndex(group.records, [])
        for det in idx.detectors("distortions"):
            recs = [r for r in idx.records("distortions") if r.body.detector.name == det]
            for task, metric, label in ROBUSTNESS_CURVES:
                series, clean = robustness_series(recs, task, metric)
                if not any(y is not None for points in series.values() for _, y in points):
                    continue
                stem = slugify(f"{det}-robustness-{task}-{metric}{suffix}")
                name = stem
                while name in used:
                    name = f"{stem}-{len(used)}"
                used.add(name)
                path = plots.robustness_png(
                    series, out_dir / "plots" / f"{name}.png", xlabel="strength (1 = mildest setting)",
                    ylabel=label, title=f"{det}: {label} under distortions on {group.dataset}",
                    reference=clean, reference_label="clean", integer_x=True)
                written[f"plots/{name}.png"] = path
    log.info("wrote the summary and %d plot(s) to %s", len(written) - 1, out_dir)
    return written
