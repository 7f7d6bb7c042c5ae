"""The summary's groups: records of one dataset and one version of each
suite, so numbers of two versions of one suite never share a table.  One
group holds the newest version of every suite seen for a dataset, the next
group the next-older versions, and so on.  Within a group each (suite, case,
detector) gives one row, from its newest record; each detector gets one
line saying how its thresholds were decided.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from diffzoo.harness.records.document import ResultRecord
from diffzoo.leaderboard.summary.model import ABSENT, RecordIndex, SummaryTable
from diffzoo.leaderboard.summary.tables import (
    PAPER_PIXEL_METRICS,
    cross_table,
    parity_table,
    table2,
    table3,
    table5,
    table7,
    table8,
    unseen_table,
)
from diffzoo.leaderboard.tables import version_order


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
    detector_order = list(dict.fromkeys(r.body.row_name for r in records))
    by_dataset: dict[tuple[str, str], dict[str, dict[str, list[ResultRecord]]]] = {}
    for r in records:
        b = r.body
        trained = b.config.get("train_dataset") or {}  # a cross-dataset record joins its training dataset's group
        key = (trained["name"], trained["fingerprint"]) if trained else (b.dataset.name, b.dataset.fingerprint)
        ds = by_dataset.setdefault(key, {})
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
              unseen_table(idx, "6", "image", ("img_Acc", "img_AP")), table7(idx), table8(idx), parity,
              cross_table(records, detector_order)]
    by_detector: dict[str, list[ResultRecord]] = {}
    for r in records:
        by_detector.setdefault(r.body.row_name, []).append(r)
    policies = [policy_line(det, by_detector[det]) for det in sorted(
        by_detector, key=lambda n: (detector_order.index(n), n))]
    return SummaryGroup(dataset, fingerprint, dict(sorted(versions.items())), tables, policies, flags,
                        records, newest)


def policy_line(detector: str, records: Sequence[ResultRecord]) -> str:
    """One line: how ``detector``'s thresholds were decided across its records (each
    record's typed :class:`~diffzoo.harness.records.policy.ThresholdPolicy`: its source and rules)."""
    sources: dict[str, None] = {}
    details: dict[str, None] = {}
    for r in records:
        policy = r.body.policy
        sources[policy.source] = None
        for key, rule in (("pixel", policy.pixel), ("image", policy.image)):
            if rule is not None:
                details[f"{key}: {rule}"] = None
    return f"{detector}: thresholds {' / '.join(sources)}" + (f" ({'; '.join(details)})" if details else "")
