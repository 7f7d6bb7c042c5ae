"""TGIF / TGIF2's published localization numbers (tgif_values.csv, from the authors' sheet
benchmark-results/ifl_test_summary.xlsx of IDLabMedia/tgif-dataset): every line parses with a
metric benchmark_metrics.csv defines, known cells are as the sheet prints them, the method names
meet diffzoo's detectors where one is the method, and the paper report lists them, never compared."""

from __future__ import annotations

import re

from diffzoo.harness.metrics.catalog import metric_info
from diffzoo.leaderboard.paper.published import (
    BENCHMARK_FILES,
    DETECTORS,
    HERE,
    METRICS_FILE,
    load_benchmarks,
    meeting,
    parse_benchmark,
    parse_metrics,
)
from diffzoo.leaderboard.paper.report import paper_markdown
from diffzoo.leaderboard.paper.values import read_text
from diffzoo.leaderboard.store import RecordStore
from diffzoo.leaderboard.versions import Selection

from helpers.cli import cli
from helpers.records import make_record

METHODS = ("PSCC-Net", "SPAN", "ManTra-Net", "IFOSN", "MVSS-Net++", "CAT-Net v2", "TruFor", "MMFusion")
COMPRESSED = ("ManTra-Net", "CAT-Net v2", "TruFor", "MMFusion")  # the sheet's column-R methods
SETS = ("SD2-sp", "PS-sp", "SD2-fr", "SDXL-fr")
CODECS = ("JPEG q80", "JPEG q60", "WebP q80", "WebP q60")
TGIF_METRICS = ("tgif_pixel_F1", "tgif_pixel_AUC", "tgif_pixel_precision", "tgif_pixel_recall")


def tgif():
    benches = {b.name: b for b in load_benchmarks()}
    return benches["tgif"]


def cells() -> dict[tuple[str, str, str], float]:
    return {(n.method, n.eval, n.metric.name): n.value for n in tgif().numbers}


def test_tgif_is_a_benchmark_file_whose_every_line_parses_with_a_defined_metric():
    assert "tgif_values.csv" in BENCHMARK_FILES
    metrics = parse_metrics(read_text(METRICS_FILE, "metrics"))
    bench = parse_benchmark(read_text(HERE / "tgif_values.csv", "tgif"), "tgif", metrics)  # a bad line raises
    assert bench.title.startswith("TGIF / TGIF2") and "arXiv 2407.11566" in bench.title
    assert len(bench.numbers) == len(METHODS) * 4 * len(SETS) + len(COMPRESSED) * 4 * 2 * len(CODECS) == 256
    for n in bench.numbers:
        assert n.metric.name in TGIF_METRICS and n.metric.definition and n.metric.source
        # a TGIF metric is named as itself, never as a diffzoo metric, and has no diffzoo metric of its
        # definition (its threshold is unstated): never put in, nor compared with, a diffzoo column
        assert metric_info(n.metric.name) is None and n.metric.diffzoo == ""
        assert not n.suite and not n.case  # no diffzoo suite has TGIF's protocol
        assert n.train == "not stated in the sheet"
        assert n.digits == 0  # every cell of the sheet is printed with 2 decimals: whole percent
        assert re.fullmatch(r"ifl_test_summary\.xlsx \(commit 0d479bb\), sheet test_all_methods_summary, cell "
                            r"[A-Z]{1,2}\d+ \(row \w+, column [\w -]+ / fake\): stored \d\.\d{6}", n.source), n.source
        # the printed value is the stored one at 2 decimals
        assert abs(n.value - float(n.source.rpartition("stored ")[2])) <= 0.005 + 1e-9
    grid = cells()
    for method in METHODS:
        for metric in TGIF_METRICS:
            for s in SETS:
                assert (method, f"tgif:test {s} fakes", metric) in grid
            for s in ("SD2-sp", "PS-sp"):
                for codec in CODECS:
                    assert ((method, f"tgif:test {s} fakes, {codec}", metric) in grid) == (method in COMPRESSED)


def test_known_cells_are_as_the_sheet_prints_them():
    grid = cells()
    f1 = {(m, e): v for (m, e, metric), v in grid.items() if metric == "tgif_pixel_F1"}
    # spliced SD2 edits are localized, fully regenerated ones hardly (cells C17, C18, L17, L18, O17, O18)
    assert f1[("CAT-Net v2", "tgif:test SD2-sp fakes")] == 0.87 and f1[("TruFor", "tgif:test SD2-sp fakes")] == 0.83
    assert f1[("CAT-Net v2", "tgif:test SD2-fr fakes")] == 0.04 and f1[("TruFor", "tgif:test SD2-fr fakes")] == 0.19
    assert f1[("CAT-Net v2", "tgif:test SDXL-fr fakes")] == 0.03 and f1[("TruFor", "tgif:test SDXL-fr fakes")] == 0.18
    # TruFor after JPEG / WebP (cells T18, W18, Z18, AC18, AF18, AI18, AL18, AO18)
    assert [f1[("TruFor", f"tgif:test {s} fakes, {c}")] for c in CODECS for s in ("SD2-sp", "PS-sp")] == [
        0.32, 0.44, 0.25, 0.32, 0.24, 0.29, 0.20, 0.23]
    assert grid[("TruFor", "tgif:test SD2-sp fakes", "tgif_pixel_AUC")] == 0.98  # C9: 0.984305
    assert grid[("MMFusion", "tgif:test SDXL-fr fakes", "tgif_pixel_precision")] == 0.32  # O28: 0.323299
    assert grid[("ManTra-Net", "tgif:test PS-sp fakes, WebP q60", "tgif_pixel_recall")] == 0.14  # AO32: 0.144420
    sources = {(n.method, n.eval, n.metric.name): n.source for n in tgif().numbers}
    assert sources[("CAT-Net v2", "tgif:test SD2-sp fakes", "tgif_pixel_F1")].endswith(
        "cell C17 (row catnetv2_f1, column sd2 / fake): stored 0.873323")
    # the hidden SDXL-sp columns of the sheet are not published numbers
    assert not any("SDXL-sp" in e for (_, e, _) in grid)


def test_tgif_methods_meet_the_diffzoo_detectors_that_are_them_and_no_others():
    for method, detector in (("CAT-Net v2", "benco.cat-net"), ("TruFor", "benco.trufor"),
                             ("PSCC-Net", "benco.pscc-net"), ("ManTra-Net", "benco.mantra-net"),
                             ("SPAN", "benco.span")):
        assert DETECTORS[method].matches(detector)
    # no diffzoo detector is IFOSN or MMFusion, and IMDL-BenCo's MVSS-Net is not MVSS-Net++
    assert not {"IFOSN", "MMFusion", "MVSS-Net++"} & set(DETECTORS)


def tgif_section(md: str) -> str:
    part = md.split("## Other benchmarks' published numbers")[1]
    return part.split("### TGIF / TGIF2")[1].split("\n### ")[0]


def test_the_paper_report_lists_tgif_numbers_with_their_definitions_never_compared():
    md = paper_markdown(Selection("test", []))
    assert "`tgif_values.csv`" in md.split("## Other benchmarks' published numbers")[1]
    part = tgif_section(md)
    assert "#### Not compared: needs records with this protocol (training: not stated in the sheet;" in part
    header = next(line for line in part.splitlines() if line.startswith("| method"))
    assert [c.strip() for c in header.strip("|").split("|")][:4] == [
        "method", "metric", "tgif:test SD2-sp fakes", "tgif:test PS-sp fakes"]
    # the row of CAT-Net v2's F1: the four uncompressed sets, then SD2-sp / PS-sp after each codec
    assert re.search(r"\| CAT-Net v2 +\| tgif\\_pixel\\_F1 +\| +87 \| +85 \| +4 \| +3 \| +5 \| +7 \| +9 \| +8 \| +13 "
                     r"\| +13 \| +7 \| +7 \|", part)
    # a method without the compressed sets has a dash there
    assert re.search(r"\| IFOSN +\| tgif\\_pixel\\_F1 +\| +23 \| +36 \| +20 \| +18 \|( +— \|){8}", part)
    assert "- tgif\\_pixel\\_F1: TGIF's localization F1" in part
    assert "(diffzoo: no metric of this definition; never compared)" in part


def test_a_record_of_the_same_detector_on_tgif_is_still_not_compared(tmp_path, capsys):
    """A benco.cat-net record evaluated on TGIF carries F1_benco, the per-image F1 at 0.5: TGIF's
    threshold is unstated, so no TGIF number meets it, and the report still lists them."""
    record = make_record("benco.cat-net", suite="cross-dataset", case="binary", dataset="tgif",
                         metrics={"F1_benco": 0.5, "F1": 0.5, "pixel_AUC": 0.9},
                         case_fields={"split": "test"})
    for n in tgif().numbers:
        assert meeting(n, [record]) == [] and meeting(n, [record], "F1_benco") == []
    store = RecordStore(tmp_path / "store")
    store.add(record)
    code, out, _ = cli(capsys, "report", "paper", "--store", store.root, "--out", tmp_path / "out")
    assert code == 0 and "wrote paper" in out
    part = tgif_section((tmp_path / "out" / "paper.md").read_text())
    assert "ours \\| published" not in part
    assert re.search(r"\| TruFor +\| tgif\\_pixel\\_F1 +\| +83 \|", part)
