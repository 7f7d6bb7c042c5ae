"""The other diffusion-edit benchmarks' published numbers (OpenSDI, DEAL-300K,
SID-Set, TGIF / TGIF2), as data beside the DiffSeg30k paper's, and where they
meet ours.

Each ``<benchmark>_values.csv`` holds one line per published number:
``method,train,eval,metric,value,suite,case,source``; its first comment line
names the benchmark and its paper, the others say where the numbers come
from and what is absent.  ``metric`` is a name of ``benchmark_metrics.csv``,
which gives its definition and the diffzoo metric of the same definition (or
none).  A number is compared with a record only where the protocols match:
the record is of ``suite`` / ``case`` (empty: no diffzoo suite has that
protocol yet), of a diffzoo detector that is the method (:data:`DETECTORS`),
and carries the diffzoo metric of the same definition.  Every other number is
listed under what it would need.

A released checkpoint's number (:mod:`.reproduce`: the detector cards' own
published numbers) is a :class:`Published` with ``release`` set: its
``method`` is the diffzoo detector itself and ``eval`` the diffzoo dataset
that is its ``benchmark``; it meets the records of that detector and
release on that dataset in the clean cases of :data:`RELEASE_CASES`, of any
date, whatever suite ran them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from diffzoo.harness.core.errors import ConfigError
from diffzoo.harness.metrics.catalog import MetricInfo
from diffzoo.harness.records.document import ResultRecord
from diffzoo.harness.suites.cross import CROSS_DATASET
from diffzoo.harness.suites.standard import STANDARD
from diffzoo.leaderboard.index import case_identity, newest
from diffzoo.leaderboard.layouts.paper import Family
from diffzoo.leaderboard.paper.values import comment_lines, fraction, read_rows, read_text
from diffzoo.leaderboard.render.escape import md_cell
from diffzoo.leaderboard.render.markdown import LEFT, RIGHT, markdown_table
from diffzoo.leaderboard.table import DASH, defined, format_delta, format_value

HERE = Path(__file__).parent
BENCHMARK_FILES = ("opensdi_values.csv", "deal300k_values.csv", "sidset_values.csv", "tgif_values.csv")
METRICS_FILE = HERE / "benchmark_metrics.csv"
FIELDS = ("method", "train", "eval", "metric", "value", "suite", "case", "source")
METRIC_FIELDS = ("metric", "diffzoo", "definition", "source")
PERCENT = MetricInfo("published", "published", True)
"""How a published number's difference from ours is shown: in percentage points."""

DETECTORS: dict[str, Family] = {f.paper: f for f in (
    Family("MVSS-Net", ("benco.mvss-net*",)),
    Family("CAT-Net", ("benco.cat-net*",)),
    Family("CAT-Net v2", ("benco.cat-net*",)),  # CAT-Net v2's released weights are benco.cat-net's release v2
    Family("PSCC-Net", ("benco.pscc-net*",)),
    Family("ObjectFormer", ("benco.objectformer*",)),
    Family("TruFor", ("benco.trufor*",)),
    Family("IML-ViT", ("benco.iml-vit*",)),
    Family("ManTra-Net", ("benco.mantra-net*",)),
    Family("SPAN", ("benco.span*",)),
    Family("CNNDet", ("cnnspot.*",)),
    Family("UniFD", ("universalfakedet.*",)),
)}
"""A published method (as its source names it) -> the diffzoo detectors that are
it; a method not here has no diffzoo detector (MaskCLIP, MFPT, SIDA, IFOSN,
MMFusion, ...), a name with a qualifier the source leaves unexplained (SIDA's
``MVSS-Net*``) is not matched, and neither is another model of the same
authors (TGIF's MVSS-Net++ is not IMDL-BenCo's MVSS-Net)."""


@dataclass(frozen=True)
class PublishedMetric:
    name: str
    diffzoo: str  # the diffzoo metric of the same definition; "" for none
    definition: str
    source: str


@dataclass(frozen=True)
class Published:
    method: str
    train: str
    eval: str
    metric: PublishedMetric
    value: float
    digits: int  # decimals as printed, in %
    suite: str
    case: str
    source: str
    release: str = ""
    """A released checkpoint's number: the release's name (``method``: the diffzoo detector)."""
    benchmark: str = ""
    """The benchmark as the number's source names it, where ``eval`` is the diffzoo dataset that is it
    ("" where none is)."""


@dataclass(frozen=True)
class Benchmark:
    name: str  # the file's stem, e.g. opensdi
    title: str  # its first comment line
    numbers: tuple[Published, ...]


def parse_metrics(text: str, source: str = "benchmark metrics") -> dict[str, PublishedMetric]:
    out: dict[str, PublishedMetric] = {}
    for where, row in read_rows(text, source, METRIC_FIELDS):
        if not row["metric"] or not row["definition"] or not row["source"]:
            raise ConfigError(f"{where}: metric, definition and source must not be empty")
        if row["metric"] in out:
            raise ConfigError(f"{where}: metric {row['metric']!r} is defined twice")
        out[row["metric"]] = PublishedMetric(row["metric"], row["diffzoo"], row["definition"], row["source"])
    return out


def parse_benchmark(text: str, name: str, metrics: dict[str, PublishedMetric]) -> Benchmark:
    """One benchmark's numbers; a malformed line is a :class:`ConfigError`
    naming it, and so is a metric ``benchmark_metrics.csv`` does not define."""
    comments = comment_lines(text)
    if not comments:
        raise ConfigError(f"{name}: the first comment line must name the benchmark and its paper")
    numbers, seen = [], set()
    for where, row in read_rows(text, name, FIELDS):
        if not all(row[k] for k in ("method", "train", "eval", "source")):
            raise ConfigError(f"{where}: method, train, eval and source must not be empty")
        if row["metric"] not in metrics:
            raise ConfigError(f"{where}: metric {row['metric']!r} is not defined in {METRICS_FILE.name} "
                              f"({', '.join(metrics)})")
        if bool(row["suite"]) != bool(row["case"]):
            raise ConfigError(f"{where}: suite and case name one record together; give both or neither")
        key = (row["method"], row["train"], row["eval"], row["metric"])
        if key in seen:
            raise ConfigError(f"{where}: a second value for {', '.join(key)}")
        seen.add(key)
        decimals = len(row["value"].partition(".")[2])
        numbers.append(Published(row["method"], row["train"], row["eval"], metrics[row["metric"]],
                                 fraction(row["value"], where), max(decimals - 2, 0), row["suite"], row["case"],
                                 row["source"]))
    return Benchmark(name, comments[0], tuple(numbers))


def load_benchmarks() -> list[Benchmark]:
    """Every other benchmark's numbers, in :data:`BENCHMARK_FILES` order."""
    metrics = parse_metrics(read_text(METRICS_FILE, "the benchmarks' metric definitions"), str(METRICS_FILE))
    return [parse_benchmark(read_text(HERE / f, "published numbers"), f.removesuffix("_values.csv"), metrics)
            for f in BENCHMARK_FILES]


@dataclass(frozen=True)
class Comparison:
    number: Published
    row: str  # the record's table row (detector, or "detector (own image score)")
    ours: float
    record: ResultRecord  # the record that gave ``ours``


RELEASE_CASES = frozenset({("standard", "binary"), ("standard", "image"), ("cross-dataset", "binary"),
                           ("cross-dataset", "image")})
"""The (suite, case) whose records a released checkpoint's number may meet: clean images (no
distortion), every image of the split (no slice), no editor held out of training."""


def release_run(detector: str, release: str, metric: str, benchmark: str) -> str:
    """The run whose records carry ``metric`` for ``detector``'s ``release`` on ``benchmark``: the
    cross-dataset suite where one of its :data:`RELEASE_CASES` carries it (it reads the
    dataset's test split: the whole set, for the classic test sets), else the standard suite
    (which evaluates the val split: the whole set read as one)."""
    for suite in (CROSS_DATASET, STANDARD):
        if any((suite.name, c.name) in RELEASE_CASES and metric in c.metrics for c in suite.cases):
            path = f"PATH/TO/{benchmark.replace(' ', '_')}"
            where = (f"--eval-dataset {path}" if suite is CROSS_DATASET
                     else f"--dataset {path} --dataset-option split=val")
            return f"diffzoo run --detector {detector} --weights released:{release} --suite {suite.name} {where}"
    return f"no diffzoo suite's clean case carries {metric}"


def needs(number: Published) -> str:
    """What a comparison of ``number`` with ours would need (protocol first)."""
    if number.release:
        if not number.eval:
            return f"a diffzoo dataset that is {number.benchmark}: none"
        if not number.metric.diffzoo:
            return f"a diffzoo metric defined as {number.metric.name}: none"
        return f"a record of {release_run(number.method, number.release, number.metric.diffzoo, number.benchmark)}"
    if not number.suite:
        return (f"records with this protocol (training: {number.train}; evaluation: the columns below); "
                f"no diffzoo suite has it yet")
    if number.method not in DETECTORS:
        return f"a diffzoo detector that is {number.method}: none is registered"
    if not number.metric.diffzoo:
        return f"a diffzoo metric defined as {number.metric.name}: none"
    family = DETECTORS[number.method]
    target, _, options = number.eval.partition("?")
    read = f" --eval-dataset-option {' --eval-dataset-option '.join(options.split('&'))}" if options else ""
    return (f"a record of diffzoo run --detector {family.command_name} --suite {number.suite} "
            f"--eval-dataset PATH{read} (case {number.case}, evaluated on {target})")


def evaluated_on(record: ResultRecord, where: str) -> bool:
    """Whether ``record`` evaluated what a number's ``eval`` names: ``DATASET:SPLIT`` (the
    dataset's adapter name and the case's split), then ``?KEY=VALUE&...`` adapter options the
    dataset must have been read with (its description's values, e.g. OpenSDI's
    ``kinds=partial``: pixel metrics on the partially edited fakes only)."""
    target, _, options = where.partition("?")
    name, _, split = target.partition(":")
    b = record.body
    if b.dataset.name != name or (split and b.case.get("split") != split):
        return False
    described = b.dataset.description or {}
    for option in filter(None, options.split("&")):
        key, _, value = option.partition("=")
        have = described.get(key)
        if (",".join(map(str, have)) if isinstance(have, list) else str(have)) != value:
            return False
    return True


def _same_protocol(number: Published, record: ResultRecord) -> bool:
    """Whether ``record`` ran what ``number`` was published on (its metric aside)."""
    b = record.body
    if b.not_held_out or b.calibrated:  # published numbers are held out, at fixed thresholds
        return False
    if number.release:
        return ((b.detector.name, b.detector.release_name) == (number.method, number.release)
                and (b.suite.name, b.case_name) in RELEASE_CASES and bool(number.eval)
                and evaluated_on(record, number.eval))
    family = DETECTORS.get(number.method)
    return (family is not None and bool(number.suite) and (b.suite.name, b.case_name) == (number.suite, number.case)
            and family.matches(b.row_name) and evaluated_on(record, number.eval))


def meeting(number: Published, records: list[ResultRecord], metric: str | None = None) -> list[Comparison]:
    """The records with ``number``'s protocol that carry ``metric`` (default: the diffzoo metric of
    the number's own definition; none without one), each as a :class:`Comparison`; per (suite,
    case, row, dataset, split) the newest record counts."""
    metric = number.metric.diffzoo if metric is None else metric
    if not metric:
        return []
    return [Comparison(number, r.body.row_name, ours, r) for r in newest(records, key=case_identity).values()
            if _same_protocol(number, r) and (ours := defined(r.metrics.get(metric))) is not None]


def compare(benchmark: Benchmark, records: list[ResultRecord]) -> tuple[list[Comparison], list[Published]]:
    """(the numbers a record with the same protocol meets, the rest); per (suite, case, row,
    dataset, split) the newest record counts."""
    met, rest = [], []
    for number in benchmark.numbers:
        found = meeting(number, records)
        met += found
        if not found:
            rest.append(number)
    return met, rest


def _compared_table(met: list[Comparison]) -> list[str]:
    head = ["method", "detector", "train", "eval", "metric", "ours | published | Δ"]
    rows = [[md_cell(c.number.method), md_cell(c.row), md_cell(c.number.train), md_cell(c.number.eval),
             md_cell(f"{c.number.metric.name} (= {c.number.metric.diffzoo})"),
             " \\| ".join((*(format_value(PERCENT, v, c.number.digits) for v in (c.ours, c.number.value)),
                            format_delta(PERCENT, c.ours - c.number.value)))] for c in met]
    return markdown_table([md_cell(h) for h in head], rows, [LEFT] * 5 + [RIGHT])


def _listed_table(numbers: list[Published]) -> list[str]:
    """Rows (method, metric), columns the evaluation splits, cells the published values."""
    evals = list(dict.fromkeys(n.eval for n in numbers))
    cells: dict[tuple[str, str], dict[str, str]] = {}
    for n in numbers:
        cells.setdefault((n.method, n.metric.name), {})[n.eval] = format_value(PERCENT, n.value, n.digits)
    rows = [[md_cell(method), md_cell(metric), *(by.get(e, DASH) for e in evals)]
            for (method, metric), by in cells.items()]
    return markdown_table([md_cell(h) for h in ("method", "metric", *evals)], rows,
                          [LEFT, LEFT] + [RIGHT] * len(evals))


def render_benchmarks(benchmarks: list[Benchmark], records: list[ResultRecord]) -> list[str]:
    """The report's section on the other benchmarks: per benchmark, the numbers
    a record meets (ours | published | Δ), then the rest under what they need,
    then the definitions of the metrics it used."""
    lines = ["## Other benchmarks' published numbers", "",
             "Each number in % as its source prints it, with its metric's definition. It is compared with ours "
             "(ours | published | Δ, Δ in percentage points) only where a record has the same protocol: the suite "
             "and case its data file names, a diffzoo detector that is the method, and a diffzoo metric of the same "
             "definition, at a fixed threshold (a row marked (calibrated) never is); the others are listed under "
             "what a comparison needs. Data: "
             + ", ".join(f"`{f}`" for f in (*BENCHMARK_FILES, METRICS_FILE.name)) + " (diffzoo/leaderboard/paper/).",
             ""]
    for bench in benchmarks:
        met, rest = compare(bench, records)
        lines += [f"### {md_cell(bench.title)}", ""]
        if met:
            lines += _compared_table(met) + [""]
        groups: dict[str, list[Published]] = {}
        for number in rest:
            groups.setdefault(needs(number), []).append(number)
        for need, numbers in groups.items():
            lines += [f"#### Not compared: needs {md_cell(need)}", ""] + _listed_table(numbers) + [""]
        lines += definition_lines(bench.numbers) + [""]
    return lines


def definition_lines(numbers: Iterable[Published]) -> list[str]:
    """A list item per metric ``numbers`` use: its definition and the diffzoo metric of the same one."""
    used = dict.fromkeys(n.metric for n in numbers)
    return [f"- {md_cell(m.name)}: {md_cell(m.definition)} (diffzoo: "
            + (md_cell(m.diffzoo) if m.diffzoo else "no metric of this definition; never compared") + ")"
            for m in used]
