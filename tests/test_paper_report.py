"""The paper report: DiffSeg30k Tables 2-8 from records, each cell
ours | paper | delta, a dash for a missing part and each reason once, as a
note under its table; then the other benchmarks' published numbers."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from conftest import cli, make_record

from diffzoo.harness.core.errors import ConfigError
from diffzoo.harness.metrics.catalog import metric_info
from diffzoo.leaderboard.paper import VALUES_FILE, build_report, load_values, parse_values, render_markdown
from diffzoo.leaderboard.paper.layout import TABLES, paper_cells
from diffzoo.leaderboard.paper.published import (
    BENCHMARK_FILES,
    compare,
    load_benchmarks,
    parse_benchmark,
    parse_metrics,
    render_benchmarks,
)
from diffzoo.leaderboard.store import RecordStore
from diffzoo.leaderboard.versions import Selection

PAPER_DIR = Path(VALUES_FILE).parent
HEADER = "table,row,task,setting,metric,value,source\n"
MARKS = "⁰¹²³⁴⁵⁶⁷⁸⁹"


def records() -> list:
    return [
        make_record("segformer.b2", case="binary", metrics={"aAcc": 0.95, "mIoU": 0.9, "bF1": 0.5}),
        make_record("segformer.b2", suite="distortions", case="resize200.binary",
                    metrics={"aAcc": 0.9, "mIoU": 0.85, "bF1": 0.4}),
        make_record("segformer.b2", suite="slices", case="base.binary",
                    metrics={"aAcc@base=real": 0.9, "mIoU@base=real": 0.7, "bF1@base=real": 0.3}),
        make_record("cnnspot.r50", suite="classification", case="all", task="image"),
        make_record("mydet", case="binary"),
    ]


def report(recs=None) -> str:
    recs = records() if recs is None else recs
    return render_markdown(Selection("test", recs), build_report(recs))


def section(md: str, tid: str) -> str:
    return md.split(f"## Table {tid}:")[1].split("\n## ")[0]


def table(md: str, tid: str) -> dict[tuple[str, ...], dict[str, str]]:
    """Rows of report table ``tid``: (detector without its note mark[, setting]) -> header -> cell text;
    the detector cell keeps its mark under "detector"."""
    lines = [line for line in section(md, tid).splitlines() if line.startswith("|")]
    head = [h.strip() for h in lines[0].strip("|").split(" | ")]
    settings = head[2] in ("distortion", "generalize to", "images", "edit model (in val)", "base", "turns")
    out = {}
    for line in lines[2:]:
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        row = dict(zip(head, cells))
        out[(row["detector"].rstrip(MARKS), *([cells[2]] if settings else []))] = row
    return out


def notes(md: str, tid: str) -> list[str]:
    return [line for line in section(md, tid).splitlines() if line.startswith("- ")]


def note_for(md: str, tid: str, mark: str) -> str:
    return next(line for line in notes(md, tid) if line.startswith(f"- {mark} "))


def test_all_148_published_cells_are_loaded_each_with_its_source_and_cell():
    values = load_values()
    assert len(values) == 148
    assert Counter(v.table for v in values.values()) == {"2": 18, "3": 60, "4": 24, "5": 8, "6": 24, "7": 2, "8": 12}
    cells = paper_cells()
    for key, v in values.items():
        assert key in cells, f"{key} names no cell of the report's layout"
        assert f"Table {v.table} " in v.source and "arXiv 2511.19111" in v.source
    assert values[("3", "SegFormer", "binary", "resize 1024", "mIoU")].value == 0.898
    assert values[("7", "Deeplab v3+", "semantic", "SDXL-LoRA", "mIoU_sdxl")].value == 0.630
    assert "arXiv 2511.19111v2" in VALUES_FILE.read_text().split(HEADER)[0]  # the source, in the header comment


def test_every_published_cell_shows_its_paper_value_in_the_report():
    """Without a single record, each of the 148 numbers stands in its cell (a placeholder row per paper model)."""
    md = report([])
    values = load_values()
    shown = 0
    for spec in TABLES:
        if not spec.in_paper:
            continue
        rows = table(md, spec.id)
        for family in spec.families:
            for setting in spec.settings:
                row = next(r for r in rows.values() if r["model (paper)"] == family.paper
                           and (not setting.label or setting.label in r.values()))
                for col in spec.columns:
                    v = values.get((spec.id, family.paper, col.task, setting.paper, col.paper))
                    if v is not None:
                        assert row[col.label].split(" \\| ")[1] == f"{100 * v.value:.1f}", (spec.id, family, col)
                        shown += 1
    assert shown == len(values) == 148


def test_no_paper_number_is_a_literal_in_the_report_code():
    numbers = [v.value for v in load_values().values()] + [n.value for b in load_benchmarks() for n in b.numbers]
    code = "\n".join(p.read_text() for p in PAPER_DIR.glob("*.py"))
    for value in numbers:
        for text in (repr(value), f"{100 * value:.1f}", f"{100 * value:g}"):
            assert not re.search(rf"(?<![\d.]){re.escape(text)}(?![\d])", code), f"{text} is written in the code"


def test_filled_cell_shows_ours_paper_and_delta_ours_minus_paper():
    md = report()
    t2 = table(md, "2")
    assert t2[("segformer.b2",)]["binary mIoU"] == "90.0 \\| 96.1 \\| -6.1"
    assert t2[("segformer.b2",)]["binary Acc"] == "95.0 \\| 98.9 \\| -3.9"
    assert t2[("segformer.b2",)]["model (paper)"] == "SegFormer"
    t3 = table(md, "3")
    assert t3[("segformer.b2", "resize 1024 (2x)")]["binary mIoU"] == "85.0 \\| 89.8 \\| -4.8"
    above = make_record("deeplabv3plus.r50", case="binary", metrics={"aAcc": 0.99, "mIoU": 0.98, "bF1": 0.8})
    assert table(report([above]), "2")[("deeplabv3plus.r50",)]["binary mIoU"] == "98.0 \\| 97.4 \\| +0.6"
    for t in build_report(records()):
        for row in t.rows:
            for cell in row.cells:
                if cell.ours is not None and cell.paper is not None:
                    assert cell.delta == cell.ours - cell.paper


def test_a_row_without_a_record_says_why_once_as_a_note_not_per_cell():
    md = report()
    fcn = table(md, "2")[("fcn8s.\\* (no record)",)]
    assert fcn["model (paper)"] == "FCN-8s" and fcn["detector"].endswith("¹")
    assert fcn["binary mIoU"] == "— \\| 69.9 \\| —" and fcn["semantic bF1"] == "— \\| 2.4 \\| —"
    assert note_for(md, "2", "¹") == "- ¹ no record: diffzoo run --detector fcn8s --suite standard fills this row"
    t3 = section(md, "3")
    assert t3.count("--detector fcn8s --suite distortions") == 1  # five rows, one note
    fcn3 = table(md, "3")[("fcn8s.\\* (no record)", "JPEG 60")]
    assert all(fcn3[h] == "—" for h in fcn3 if h.startswith(("binary", "semantic")))  # FCN-8s is not in Table 3
    assert "n/a" not in md and "no paper value" not in md


def test_a_cell_without_a_value_of_ours_is_marked_and_its_reason_noted_once():
    md = report()
    seg = table(md, "2")[("segformer.b2",)]
    mark = seg["semantic mIoU"][1]
    assert seg["semantic mIoU"] == f"—{mark} \\| 82.5 \\| —" and seg["semantic Acc"].startswith(f"—{mark} ")
    assert note_for(md, "2", mark).endswith("no standard record of this case: diffzoo run --detector segformer.b2 "
                                           "--suite standard")
    other = table(md, "2")[("mydet",)]
    assert other["model (paper)"] == "—" and other["binary mIoU"] == "60.0 \\| — \\| —"
    assert "- paper —: not a model of the paper" in notes(md, "2")
    t8 = table(md, "8")
    assert t8[("segformer.b2", "real base")]["binary mIoU"] == "70.0 \\| — \\| —"  # the paper's Table 8 is DeepLab's
    ai = t8[("segformer.b2", "AI base")]["binary mIoU"]
    assert ai == f"—{ai[1]} \\| — \\| —" and note_for(md, "8", ai[1]).endswith("no base=ai images in mini")
    assert "- paper —: diffzoo's own table, not in the paper" in notes(md, "8b")
    assert "no records: run `diffzoo run --suite unseen-generators`" in section(md, "6")
    t5 = table(md, "5")
    assert t5[("cnnspot.r50", "all")]["model (paper)"] == "CNNSpot"
    assert t5[("cnnspot.r50", "all")]["AP"] == "85.0 \\| 97.9 \\| -12.9"  # the paper's mAP


def test_the_baseline_rows_of_tables_4_and_6_show_the_paper_and_point_to_tables_2_and_5():
    recs = [make_record("segformer.b2", suite="unseen-generators", case=f"{p}{s}.{task}", task=task)
            for p in ("Flux_Hunyuan", "SD2_SD3.5", "Glide_Kolors") for s in ("", ".seen") for task in ("binary", "image")]
    md = report(recs)
    base = table(md, "4")[("segformer.b2", "baseline (all 8 editors)")]
    assert base["unseen binary mIoU"] == "— \\| 96.1 \\| —" and base["seen binary mIoU"] == "—"
    assert "Table 2's row" in note_for(md, "4", base["detector"][-1])
    flux = table(md, "4")[("segformer.b2", "Flux + Hunyuan")]
    assert flux["unseen binary mIoU"] == "60.0 \\| 93.0 \\| -33.0" and flux["seen binary mIoU"] == "60.0 \\| — \\| —"
    assert "Table 5's row" in "".join(notes(md, "6"))


def test_table_7_compares_the_papers_mIoU_on_sdxl_masks_with_the_sdxl_iou():
    lora = make_record("deeplabv3plus.r50", suite="lora", case="sdxl-lora.semantic", task="semantic",
                       metrics={"aAcc": 0.9, "mIoU": 0.5, "IoU.sdxl": 0.6})
    row = table(report([lora]), "7")[("deeplabv3plus.r50", "SDXL-LoRA")]
    assert row["semantic mIoU (SDXL)"] == "60.0 \\| 63.0 \\| -3.0" and row["semantic mIoU"] == "50.0 \\| — \\| —"


def test_a_record_without_the_metric_says_which_record():
    old = make_record("segformer.b2", suite="distortions", case="jpeg60.semantic", task="semantic",
                      metrics={"mIoU": 0.3})
    md = report([old])
    cell = table(md, "3")[("segformer.b2", "JPEG 60")]["semantic bF1"]
    assert cell == f"—{cell[1]} \\| 19.7 \\| —"
    assert f"record {old.id[:8]} (distortions v1) does not carry bF1; " in note_for(md, "3", cell[1])


def test_a_resize_that_fed_the_baseline_input_is_marked_as_the_baseline():
    """Under --recipe native, the paper's resize 1024 on 1024 px data is the stored image: the run reuses
    the baseline's predictions, and the report says so beside the value instead of passing it off."""
    same = make_record("segformer.b2", suite="distortions", case="resize200.binary",
                       metrics={"aAcc": 0.95, "mIoU": 0.9, "bF1": 0.5},
                       config={"distortion_params": {"scale": 2.0, "input_size": 512, "same_input_as": "baseline"}})
    md = report([same])
    cell = table(md, "3")[("segformer.b2", "resize 1024 (2x)")]["binary mIoU"]
    assert cell == f"90.0{cell[4]} \\| 89.8 \\| +0.2"
    assert note_for(md, "3", cell[4]).endswith("= baseline: same input under the native recipe; --recipe paper "
                                              "for the paper's protocol")
    assert table(report(), "3")[("segformer.b2", "resize 1024 (2x)")]["binary mIoU"] == "85.0 \\| 89.8 \\| -4.8"


def test_report_cli_and_publish_format_paper_write_the_same(tmp_path, capsys):
    store = RecordStore(tmp_path / "store")
    for r in records():
        store.add(r)
    code, out, _ = cli(capsys, "report", "paper", "--store", store.root, "--out", tmp_path / "a")
    assert code == 0 and "wrote paper" in out
    code, out, _ = cli(capsys, "leaderboard", "publish", "--store", store.root, "--out", tmp_path / "b",
                       "--format", "paper")
    assert code == 0
    first, second = (tmp_path / "a" / "paper.md").read_text(), (tmp_path / "b" / "paper.md").read_text()
    assert first == second and "## Table 7:" in first and "## Table 8b:" in first
    assert "## Other benchmarks' published numbers" in first


def test_paper_report_refuses_mixed_metric_versions_unless_allowed():
    a = make_record("segformer.b2", case="binary", metrics_version="1")
    b = make_record("deeplabv3plus.r50", case="binary", metrics_version="2", checkpoint="cd" * 32)
    with pytest.raises(ConfigError) as exc:
        build_report([a, b])
    assert "paper table 2: metrics v1 [segformer.b2], v2 [deeplabv3plus.r50]" in str(exc.value)
    md = render_markdown(Selection("t", [a, b]), build_report([a, b], allow_mixed=True))
    t2 = table(md, "2")
    assert t2[("segformer.b2",)]["metrics"] == "v1" and t2[("deeplabv3plus.r50",)]["metrics"] == "v2"


@pytest.mark.parametrize("line, error", [
    ("9,SegFormer,binary,,mIoU,0.9,x", "data line 2: table '9' is not one of the paper's tables"),
    ("2,SegFormer,binary,,mIoU,96.1,x", "value 96.1 must be a fraction in [0, 1] (write 50% as 0.5)"),
    ("2,SegFormer,video,,mIoU,0.9,x", "task 'video' must be one of binary, semantic, image"),
    ("2,SegFormer,binary,,mIoU,0.9,", "row, metric and source must not be empty"),
])
def test_malformed_values_are_refused_naming_the_line(line, error):
    with pytest.raises(ConfigError) as exc:
        parse_values("# source\n" + HEADER + line + "\n", "v.csv")
    assert error in str(exc.value) and str(exc.value).startswith("v.csv, data line 2")


# the other benchmarks' published numbers

def test_the_other_benchmarks_numbers_are_data_with_sources_and_named_metrics():
    benches = {b.name: b for b in load_benchmarks()}
    assert list(benches) == [f.removesuffix("_values.csv") for f in BENCHMARK_FILES] == ["opensdi", "deal300k", "sidset"]
    opensdi = {(n.method, n.eval, n.metric.name): n.value for n in benches["opensdi"].numbers}
    for method in ("MaskCLIP", "CAT-Net", "TruFor"):
        for split in ("sd15", "sd2", "sd3", "flux", "sdxl"):
            for metric in ("benco_pixel_IoU", "benco_pixel_F1"):  # on the partial fakes: kinds=partial
                assert (method, f"opensdi:{split}?kinds=partial", metric) in opensdi
            for metric in ("benco_image_F1", "benco_image_Acc"):
                assert (method, f"opensdi:{split}", metric) in opensdi
    assert opensdi[("CAT-Net", "opensdi:sd2?kinds=partial", "benco_pixel_IoU")] == 0.5458
    deal = {(n.method, n.eval): n for n in benches["deal300k"].numbers}
    assert deal[("MFPT", "deal300k:test")].value == 0.8256 and deal[("MFPT", "cocoglide")].value == 0.8097
    assert deal[("MFPT", "cocoglide")].metric.name == "pixel_F1_unstated"
    for bench in benches.values():
        assert "arXiv" in bench.title
        for n in bench.numbers:
            assert n.source and n.metric.definition and n.metric.source
            # a published metric is named as itself, never as a diffzoo metric (no pooled-F1 column can take it)
            assert metric_info(n.metric.name) is None
    # IMDL-BenCo's per-image pixel F1 only ever meets diffzoo's F1_benco, its image F1 nothing
    assert {n.metric.name: n.metric.diffzoo for n in benches["opensdi"].numbers if n.metric.name.endswith("_F1")} == {
        "benco_pixel_F1": "F1_benco", "benco_image_F1": ""}


def test_other_benchmarks_are_listed_under_the_protocol_they_need_until_a_record_matches():
    md = report()
    part = md.split("## Other benchmarks' published numbers")[1]
    assert "### OpenSDI" in part and "### DEAL-300K" in part and "### SID-Set" in part
    assert "#### Not compared: needs a record of diffzoo run --detector benco.cat-net --suite opensdi" in part.replace(
        "\\", "")
    assert re.search(r"\| MFPT +\| pixel\\_F1\\_unstated +\| +82\.56 \| +80\.97 \|", part)
    assert "ours \\| published" not in part  # no record has an OpenSDI, DEAL-300K or SID-Set protocol


METRICS = """# test metrics
metric,diffzoo,definition,source
benco_pixel_IoU,IoU_benco,per-image IoU,t
benco_pixel_F1,F1_benco,per-image F1,t
benco_image_F1,,image F1 on the model's own score,t
"""
BENCH = """# TestBench (arXiv 0000.00000)
method,train,eval,metric,value,suite,case,source
CAT-Net,opensdi:sd15 (train),opensdi:sd2?kinds=partial,benco_pixel_IoU,0.5458,opensdi,binary,t
CAT-Net,opensdi:sd15 (train),opensdi:sd2?kinds=partial,benco_pixel_F1,0.6232,opensdi,binary,t
CAT-Net,opensdi:sd15 (train),opensdi:sd2,benco_image_F1,0.7000,,,t
MaskCLIP,opensdi:sd15 (train),opensdi:sd2?kinds=partial,benco_pixel_IoU,0.5550,opensdi,binary,t
"""


def opensdi_record(split: str, kinds: list[str], metrics: dict, detector: str = "benco.cat-net"):
    return make_record(detector, suite="opensdi", metrics=metrics, dataset="opensdi",
                       fingerprint=f"fp-{'-'.join(kinds)}", dataset_fields={"description": {"kinds": kinds}},
                       case_fields={"split": split, "options": {"eval_dataset": "other",
                                                               "eval_splits": "sd15,sd2,sd3,flux,sdxl"}})


def test_a_record_with_the_same_protocol_is_compared_and_only_by_a_metric_of_the_same_definition():
    bench = parse_benchmark(BENCH, "test", parse_metrics(METRICS))
    recs = [opensdi_record("sd2", ["partial"], {"IoU_benco": 0.6, "F1_benco": 0.7, "F1": 0.9, "gIoU": 0.8}),
            opensdi_record("sd2", ["real", "full", "partial"], {"IoU_benco": 0.1, "F1_benco": 0.2}),  # other pixels
            opensdi_record("sd15", ["partial"], {"IoU_benco": 0.3, "F1_benco": 0.4}),  # another generator
            make_record("benco.cat-net", suite="standard", case="binary", metrics={"gIoU": 0.9})]
    met, _ = compare(bench, recs)
    assert sorted((c.number.metric.name, c.ours) for c in met) == [("benco_pixel_F1", 0.7), ("benco_pixel_IoU", 0.6)]
    md = "\n".join(render_benchmarks([bench], recs))
    assert re.search(r"\| CAT-Net +\| benco\.cat-net +\| .*\| benco\\_pixel\\_IoU \(= IoU\\_benco\) +\| +"
                     r"60\.00 \\\| 54\.58 \\\| \+5\.4 \|", md)
    # an image number judged by the model's own score has no diffzoo metric: never compared
    assert "benco\\_image\\_F1: image F1 on the model's own score (diffzoo: no metric of this definition; never " \
           "compared)" in md
    assert "needs a diffzoo detector that is MaskCLIP: none is registered" in md


def test_what_a_comparison_needs_names_the_eval_dataset_option():
    bench = parse_benchmark(BENCH, "test", parse_metrics(METRICS))
    md = "\n".join(render_benchmarks([bench], [])).replace("\\", "")
    assert ("--suite opensdi --eval-dataset PATH --eval-dataset-option kinds=partial (case binary, evaluated on "
            "opensdi:sd2)") in md


@pytest.mark.parametrize("line, error", [
    ("CAT-Net,t,e,pooled_F1,0.5,,,s", "metric 'pooled_F1' is not defined"),
    ("CAT-Net,t,e,benco_pixel_F1,0.5,opensdi,,s", "give both or neither"),
    ("CAT-Net,t,e,benco_pixel_F1,55.4,,,s", "must be a fraction in [0, 1]"),
    ("CAT-Net,t,e,benco_pixel_F1,0.5,,,", "must not be empty"),
])
def test_malformed_benchmark_numbers_are_refused_naming_the_line(line, error):
    with pytest.raises(ConfigError) as exc:
        parse_benchmark("# Bench\nmethod,train,eval,metric,value,suite,case,source\n" + line + "\n", "b.csv",
                        parse_metrics(METRICS))
    assert error in str(exc.value) and str(exc.value).startswith("b.csv, data line 2")


def test_names_from_records_are_escaped_in_cells_and_notes():
    evil = make_record("evil|det\n# heading", case="binary")  # a record's detector name is outside text
    md = report([evil])
    lines = [line for line in section(md, "2").splitlines() if line.startswith("|")]
    pipes = len(re.findall(r"(?<!\\)\|", lines[0]))
    assert all(len(re.findall(r"(?<!\\)\|", line)) == pipes for line in lines)  # no cell added or lost
    assert not any(line.startswith("# heading") for line in md.splitlines())
    assert any("--detector evil\\|det\\\\n# heading --suite" in line for line in notes(md, "2"))  # its missing semantic record, noted
