"""Released checkpoints' published numbers beside ours (``diffzoo report reproduce``).

Every number a detector card's release publishes (``cards.Release.published``) becomes a
:class:`~.published.Published` with its ``release`` set, and meets records through
:func:`~.published.meeting`: the newest record of that detector and release, evaluated on the
diffzoo dataset that is the number's benchmark, in a clean case, carrying the diffzoo metric of
the number's own definition.  Two tables, data and never guesses, say what is what:

- ``release_benchmarks.csv``: a benchmark as the source names it -> the diffzoo dataset that
  is it (or none, and why);
- ``release_metrics.csv``: a card's (source, metric) -> its ``benchmark_metrics.csv`` name
  (definition, and the diffzoo metric of the same definition or none), and the diffzoo metrics
  of other definitions shown beside it, each on a line of its own with no published value and
  no Δ: a number is never compared with a number of another definition.

One table, ``detector | release | benchmark | metric | ours | published | Δ | note``: one line
per published number, then one per other-definition metric; each note names the protocol
difference, or the run that would give the missing value.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from diffzoo.harness.core.errors import ConfigError
from diffzoo.harness.core.fsutil import atomic_write_text, writing
from diffzoo.harness.metrics import METRICS_VERSION
from diffzoo.harness.metrics.verdict import OWN_SCORE_ROW
from diffzoo.harness.records.document import ResultRecord
from diffzoo.leaderboard.index import newest, record_date
from diffzoo.leaderboard.paper.published import (
    METRICS_FILE,
    PERCENT,
    Comparison,
    Published,
    PublishedMetric,
    definition_lines,
    meeting,
    needs,
    parse_metrics,
    release_run,
)
from diffzoo.leaderboard.paper.values import read_rows, read_text
from diffzoo.leaderboard.render.escape import md_cell
from diffzoo.leaderboard.render.markdown import LEFT, RIGHT, markdown_table
from diffzoo.leaderboard.table import DASH, format_delta, format_value

if TYPE_CHECKING:
    from diffzoo.harness.core.cards import DetectorCard
    from diffzoo.leaderboard.versions import Selection

HERE = Path(__file__).parent
BENCHMARKS_FILE = HERE / "release_benchmarks.csv"
RELEASE_METRICS_FILE = HERE / "release_metrics.csv"
BENCHMARK_FIELDS = ("benchmark", "dataset", "note")
RELEASE_METRIC_FIELDS = ("source", "metric", "published_metric", "other_definitions")
REPORT_FILE = "reproduce.md"
HEAD = ("detector", "release", "benchmark", "metric", "ours", "published", "Δ", "note")

DIFFZOO_DEFINITIONS = {
    "F1_benco": "IMDL-BenCo's per-image pixel F1 at 0.5, averaged over the evaluated images, an image without "
                "edited pixels scoring 0",
    "F1": "pixel F1 at the fixed threshold pooled over every pixel of the split (one confusion matrix), not "
          "averaged per image",
    "F1_oracle": "pooled pixel F1 at the best threshold chosen on the evaluated split itself (an upper bound)",
    "img_AUC": "image AUC, images ranked by the predicted edited-area fraction (by the detector's own image score "
               "in its own-score row)",
}
"""The diffzoo metrics a release's number is shown beside, as docs/metrics.md defines them."""


@dataclass(frozen=True)
class BenchmarkName:
    benchmark: str
    dataset: str  # the diffzoo dataset's adapter name; "" where none is the benchmark
    note: str  # why none is


@dataclass(frozen=True)
class ReleaseMetric:
    published: PublishedMetric
    others: tuple[str, ...]  # diffzoo metrics of other definitions, shown apart


@dataclass(frozen=True)
class ReleaseNumber:
    number: Published
    split: str  # the split the card says the number is on
    others: tuple[str, ...]
    why: str  # why no dataset or no definition is on file; "" where both are


def parse_benchmark_names(text: str, source: str = "release benchmarks") -> dict[str, BenchmarkName]:
    out: dict[str, BenchmarkName] = {}
    for where, row in read_rows(text, source, BENCHMARK_FIELDS):
        if not row["benchmark"]:
            raise ConfigError(f"{where}: benchmark must not be empty")
        if bool(row["dataset"]) == bool(row["note"]):
            raise ConfigError(f"{where}: give the dataset that is {row['benchmark']!r}, or a note saying why none is")
        if row["benchmark"] in out:
            raise ConfigError(f"{where}: benchmark {row['benchmark']!r} is listed twice")
        out[row["benchmark"]] = BenchmarkName(row["benchmark"], row["dataset"], row["note"])
    return out


def parse_release_metrics(text: str, metrics: dict[str, PublishedMetric],
                          source: str = "release metrics") -> dict[tuple[str, str], ReleaseMetric]:
    out: dict[tuple[str, str], ReleaseMetric] = {}
    for where, row in read_rows(text, source, RELEASE_METRIC_FIELDS):
        key = (row["source"], row["metric"])
        if not all(key):
            raise ConfigError(f"{where}: source and metric must not be empty")
        if row["published_metric"] not in metrics:
            raise ConfigError(f"{where}: metric {row['published_metric']!r} is not defined in {METRICS_FILE.name}")
        others = tuple(m.strip() for m in row["other_definitions"].split(";") if m.strip())
        published = metrics[row["published_metric"]]
        for m in others:
            if m not in DIFFZOO_DEFINITIONS or m == published.diffzoo:
                raise ConfigError(f"{where}: {m!r} is not a diffzoo metric of another definition "
                                  f"({', '.join(DIFFZOO_DEFINITIONS)})")
        if key in out:
            raise ConfigError(f"{where}: {key[1]!r} of {key[0]!r} is listed twice")
        out[key] = ReleaseMetric(published, others)
    return out


def released_cards(records: list[ResultRecord]) -> list[DetectorCard]:
    """Every registered card with published release numbers; a tiny card (a test-size model that
    lists its family's releases) only where a record of it scored one of them."""
    from diffzoo.harness.core.plugins import get_registry

    scored = {(r.body.detector.name, r.body.detector.release_name) for r in records}
    cards = [entry.card for entry in get_registry().list("detector") if entry.card is not None]
    return [card for card in cards if any(r.published for r in card.releases)
            and (card.tag != "tiny" or any((card.name, r.name) in scored for r in card.releases))]


def release_numbers(cards: list[DetectorCard]) -> list[ReleaseNumber]:
    """Each card's published release numbers as :class:`~.published.Published`, in card order."""
    names = parse_benchmark_names(read_text(BENCHMARKS_FILE, "the release benchmarks"), str(BENCHMARKS_FILE))
    metrics = parse_metrics(read_text(METRICS_FILE, "the benchmarks' metric definitions"), str(METRICS_FILE))
    release_metrics = parse_release_metrics(read_text(RELEASE_METRICS_FILE, "the release metrics"), metrics,
                                            str(RELEASE_METRICS_FILE))
    out = []
    for card in cards:
        for release in card.releases:
            for p in release.published:
                known = release_metrics.get((p.source, p.metric))
                metric = known.published if known else PublishedMetric(p.metric, "", p.definition, p.source)
                name = names.get(p.benchmark)
                why = "" if name and name.dataset else (
                    f"no diffzoo dataset is {p.benchmark}: " + (name.note if name else
                                                               f"it is not in {BENCHMARKS_FILE.name}"))
                if known is None:
                    why = (why + "; " if why else "") + (f"its definition ({p.definition}) is not in "
                                                         f"{RELEASE_METRICS_FILE.name}: never compared")
                decimals = len(repr(p.value).partition(".")[2])
                number = Published(card.name, release.trained_on, name.dataset if name else "", metric, p.value,
                                   max(decimals - 2, 0), "", "", p.source, release=release.name,
                                   benchmark=p.benchmark)
                out.append(ReleaseNumber(number, p.split, known.others if known else (), why))
    return out


def _newest(found: list[Comparison]) -> Comparison | None:
    return newest(found, key=lambda _: None, date=lambda c: record_date(c.record)).get(None)


def _count(description: dict[str, Any], key: str) -> int | None:
    value = description.get(key)
    if key == "tampered" and value is None and isinstance(description.get("edit_types"), dict):
        value = sum(v for v in description["edit_types"].values() if isinstance(v, int))
    return value if isinstance(value, int) else None


def protocol_note(item: ReleaseNumber, record: ResultRecord) -> str:
    """Where the number was published and where ours was measured: the split, the record, and
    this copy's image counts beside the published set's (where the adapter knows them)."""
    b = record.body
    split = str(b.case.get("split", "")) or "?"
    text = (f"published on {item.number.benchmark} ({item.split}); ours on every image of {b.dataset.name}:{split} "
            f"({b.counts.evaluated} evaluated; suite {b.suite.name}, case {b.case_name}, record {record.id})")
    described = b.dataset.description or {}
    expected = described.get("expected")
    have = {k: _count(described, k) for k in ("tampered", "authentic")}
    if isinstance(expected, dict) and all(v is not None for v in have.values()):
        if any(have[k] != expected.get(k) for k in have):
            text += (f"; this copy holds {have['tampered']} tampered and {have['authentic']} authentic images, the "
                     f"published set {expected.get('tampered')} and {expected.get('authentic')}")
    return text


def _line(item: ReleaseNumber, metric: str, ours: str, published: str, delta: str, note: str) -> list[str]:
    n = item.number
    return [md_cell(n.method), md_cell(n.release), md_cell(n.benchmark), md_cell(metric), ours, published, delta,
            md_cell(note)]


def _current(records: list[ResultRecord]) -> tuple[list[ResultRecord], list[ResultRecord]]:
    """(the records of this diffzoo's metrics version, the others): a number of another metrics
    version may have another definition than :data:`DIFFZOO_DEFINITIONS` states, so it is never
    set beside a published number."""
    current = [r for r in records if r.body.metrics_version == METRICS_VERSION]
    return current, [r for r in records if r.body.metrics_version != METRICS_VERSION]


def _stale(n: Published, stale: list[ResultRecord], metric: str | None = None) -> str:
    """What the note adds where only records of another metrics version have ``n``'s protocol."""
    found = [c.record for c in meeting(n, stale, metric)]
    if not found:
        return ""
    versions = ", ".join(sorted({r.body.metrics_version for r in found}))
    return (f"; left out: {len(found)} record(s) of metrics version {versions} ({', '.join(r.id for r in found)}), "
            f"this diffzoo's definitions are version {METRICS_VERSION}: run it again")


def reproduce_rows(numbers: list[ReleaseNumber], records: list[ResultRecord]) -> list[list[str]]:
    """The table's rows: per published number its line, then a line per diffzoo metric of
    another definition (ours only; its published and Δ cells stay empty).  Only records of
    this diffzoo's metrics version count; a line whose only records are of another says so."""
    records, stale = _current(records)
    rows = []
    for item in numbers:
        n = item.number
        same = n.metric.diffzoo
        label = f"{n.metric.name} (= {same})" if same else n.metric.name
        published = format_value(PERCENT, n.value, n.digits)
        best = _newest(meeting(n, records))
        where = f"published on {n.benchmark} ({item.split})"
        if item.why or not same or best is None:
            why = item.why or (f"no record: needs {needs(n)}{_stale(n, stale)}" if same
                               else f"no diffzoo metric of that definition: {n.metric.definition}")
            rows.append(_line(item, label, DASH, published, DASH, f"{where}; {why}"))
        else:
            rows.append(_line(item, label + _own(best), format_value(PERCENT, best.ours, n.digits), published,
                              format_delta(PERCENT, best.ours - n.value),
                              f"same definition as diffzoo's {same}; {protocol_note(item, best.record)}"))
        if not n.eval:
            continue
        for other in item.others:
            found = meeting(n, records, other)
            for row in dict.fromkeys(c.row for c in found) or [None]:
                hit = _newest([c for c in found if c.row == row])
                head = f"{other} (diffzoo, another definition)"
                why = f"{other}: {DIFFZOO_DEFINITIONS[other]}; not {n.metric.name}, never compared with it"
                if hit is None:
                    rows.append(_line(item, head, DASH, DASH, DASH, f"{why}; {where}; no record: needs a record "
                                      f"of {release_run(n.method, n.release, other, n.benchmark)}"
                                      f"{_stale(n, stale, other)}"))
                else:
                    rows.append(_line(item, head + _own(hit), format_value(PERCENT, hit.ours, n.digits), DASH, DASH,
                                      f"{why}; {protocol_note(item, hit.record)}"))
    return rows


def _own(c: Comparison) -> str:
    """The row's image score where it is the detector's own (a second row of the same release)."""
    return ", own image score" if c.row.endswith(OWN_SCORE_ROW.format("")) else ""


def released_apart(numbers: list[ReleaseNumber], records: list[ResultRecord]) -> list[str]:
    """A line per detector and release of released weights that ``records`` hold but no line of
    the table reads a record of, saying why: its release lists no published number; its records
    are of another metrics version, or of calibrated thresholds; or none is a clean case on a
    dataset its numbers are on."""
    current, _ = _current(records)
    met: set[tuple[str, str]] = set()
    benchmarks: dict[tuple[str, str], dict[str, None]] = {}
    for item in numbers:
        n = item.number
        if any(meeting(n, current, metric) for metric in filter(None, (n.metric.diffzoo, *item.others))):
            met.add((n.method, n.release))
        where = n.eval.partition(":")[0]
        benchmarks.setdefault((n.method, n.release), {}).update({where: None} if where else {})
    held: dict[tuple[str, str], list[ResultRecord]] = {}
    for r in records:
        if release := r.body.detector.release_name:
            held.setdefault((r.body.detector.name, release), []).append(r)
    lines = []
    for (detector, release), recs in held.items():
        if (detector, release) in met:
            continue
        if (detector, release) not in benchmarks:
            why = "its release lists no published number (`diffzoo list detectors --released`): nothing to compare"
        elif not any(r.body.metrics_version == METRICS_VERSION for r in recs):
            versions = ", ".join(sorted({r.body.metrics_version for r in recs}))
            why = (f"of metrics version {md_cell(versions)}; this diffzoo's definitions are version "
                   f"{METRICS_VERSION}: run it again")
        elif all(r.body.calibrated for r in recs):
            why = ("its thresholds are calibrated (--thresholds calibrated); the published numbers use fixed ones: "
                   "run it without --thresholds calibrated")
        else:
            ran = ", ".join(dict.fromkeys(md_cell(f"{r.body.suite.name}/{r.body.case_name} on {r.body.dataset.name}:"
                                                  f"{r.body.case.get('split', '')}") for r in recs))
            why = (f"none is a clean case (standard or cross-dataset, binary or image) on a dataset its numbers "
                   f"are on ({', '.join(benchmarks[detector, release]) or 'none is a diffzoo dataset'}); "
                   f"its records: {ran}")
        # record fields are escaped (a name may hold Markdown); the sentence's own markup is kept
        lines.append(f"- **not compared**: {md_cell(detector)} {md_cell(f'[released:{release}]')}, {len(recs)} "
                     f"record(s): {why}")
    return lines


def reproduce_markdown(selection: Selection) -> str:
    records = selection.records
    numbers = release_numbers(released_cards(records))
    released = sum(1 for r in records if r.body.detector.release_name)
    lines = ["# Released checkpoints, reproduced", "",
             f"- **records**: {md_cell(selection.label)} ({len(records)} record(s), {released} of released weights"
             + ("; a published number is only set beside a record made with `--weights released:NAME`"
                if records and not released else "") + ")",
             *released_apart(numbers, records),
             f"- **published**: {len(numbers)} number(s) the detector cards' releases list "
             "(`diffzoo list detectors --released`)", "",
             "One line per published number, in % as its source prints it: ours is the newest record of the "
             "detector and release evaluated on the diffzoo dataset that is the benchmark "
             f"(`{BENCHMARKS_FILE.name}`), in the metric of the same definition (`{RELEASE_METRICS_FILE.name}`, "
             f"`{METRICS_FILE.name}`); Δ = ours − published, in percentage points. The lines under it give "
             "diffzoo's metrics of other definitions, with no published value and no Δ. Each note names the "
             "protocol difference, or the run that would give the missing value. Layout: docs/paper.md.", ""]
    if not numbers:
        return "\n".join(lines + ["No registered detector lists a release with published numbers.", ""])
    lines += markdown_table([md_cell(h) for h in HEAD], reproduce_rows(numbers, records),
                            [LEFT] * 4 + [RIGHT] * 3 + [LEFT]) + [""]
    lines += ["Definitions:", ""] + definition_lines(n.number for n in numbers)
    used = dict.fromkeys(m for item in numbers for m in item.others)
    lines += [f"- {md_cell(m)} (diffzoo): {md_cell(DIFFZOO_DEFINITIONS[m])}" for m in used] + [""]
    return "\n".join(lines)


def write_reproduce(selection: Selection, out: Path, force: bool = False, text: str | None = None) -> Path:
    """Write ``out/reproduce.md``, ``out`` claimed as ``report paper --out`` claims it (a
    non-empty folder diffzoo did not make is refused unless ``force``); returns its path."""
    from diffzoo.leaderboard.outdir import claim_output_dir

    out = Path(out)
    claim_output_dir(out, force, writes=[REPORT_FILE])  # a foreign file (with --force) stops it, nothing marked
    with writing(out):  # a disk-full error that names no file names this folder
        return atomic_write_text(out / REPORT_FILE, reproduce_markdown(selection) if text is None else text)
