"""The paper report: the paper layout with the paper's column (DiffSeg30k Tables 2-8 from
records), each cell of a column the paper prints ours | paper | delta, a dash for a missing part
and each reason once, as a note under its table; then the other benchmarks' published numbers."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from diffzoo.harness.core.errors import ConfigError
from diffzoo.harness.metrics.catalog import metric_info
from diffzoo.harness.records.document import ResultRecord
from diffzoo.harness.suites import ALL_SUITES
from diffzoo.leaderboard.layouts import paper as layout
from diffzoo.leaderboard.layouts.paper import build_report, paper_cells
from diffzoo.leaderboard.paper import VALUES_FILE, load_values, parse_values
from diffzoo.leaderboard.paper.published import (
    BENCHMARK_FILES,
    compare,
    load_benchmarks,
    parse_benchmark,
    parse_metrics,
    render_benchmarks,
)
from diffzoo.leaderboard.paper.report import paper_markdown
from diffzoo.leaderboard.render.escape import md_cell
from diffzoo.leaderboard.store import RecordStore
from diffzoo.leaderboard.versions import Selection

from helpers.cli import cli
from helpers.records import make_record

PAPER_DIR = Path(VALUES_FILE).parent
HEADER = "table,row,task,setting,metric,value,source\n"
MARKS = "⁰¹²³⁴⁵⁶⁷⁸⁹"
DEFINED = {(s.name, c.name): c.to_dict() for s in ALL_SUITES for c in s.cases}


def rec(detector: str, suite: str = "standard", case: str = "binary", **kw) -> ResultRecord:
    """``make_record`` of a built-in case, with the case's typed facts (setting, editors, training)."""
    r = make_record(detector, suite=suite, case=case, **kw)
    data = {k: v for k, v in r.data.items() if k not in ("schema_version", "record_id")}
    defined = DEFINED.get((suite, case), {})
    data["case"] = {**data["case"], **{k: v for k, v in defined.items() if k in ("setting", "train", "editors",
                                                                                "slice_by")}}
    return ResultRecord.create(**data)


def records() -> list:
    return [
        rec("segformer.b2", case="binary", metrics={"aAcc": 0.95, "mIoU": 0.9, "bF1": 0.5}),
        rec("segformer.b2", suite="distortions", case="resize200.binary",
            metrics={"aAcc": 0.9, "mIoU": 0.85, "bF1": 0.4}),
        rec("segformer.b2", suite="slices", case="base.binary",
            metrics={"aAcc@base=real": 0.9, "mIoU@base=real": 0.7, "bF1@base=real": 0.3}),
        rec("cnnspot.r50", suite="classification", case="all", task="image"),
        rec("mydet", case="binary"),
    ]


def report(recs=None) -> str:
    recs = records() if recs is None else recs
    return paper_markdown(Selection("test", recs))


def section(md: str, tid: str) -> str:
    return md.split(f"### Table {tid}:")[1].split("\n### ")[0].split("\n## ")[0]


def table(md: str, tid: str) -> dict[tuple[str, ...], dict[str, str]]:
    """Rows of report table ``tid``: (detector without its note mark[, setting]) -> header -> cell text;
    the detector cell keeps its mark under "detector" (a slice table names the detector under "slice")."""
    lines = [line for line in section(md, tid).splitlines() if line.startswith("|")]
    head = [h.strip() for h in lines[0].strip("|").split(" | ")]
    settings = head[1] in ("detector", "slice") and head[2] in ("setting", "held-out pair", "editor", "value")
    out = {}
    for line in lines[2:]:
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        row = dict(zip(head, cells))
        row["detector"] = row[head[1]]
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
    for key, (tid, group, label, _, column) in paper_cells().items():
        rows = table(md, tid)
        row = rows[(md_cell(group), md_cell(label))] if group else rows[(md_cell(label),)]
        if key in values:
            assert row[column].split(" \\| ")[1] == f"{100 * values[key].value:.1f}", key
            shown += 1
    assert shown == len(values) == 148


def test_no_paper_number_is_a_literal_in_the_report_code():
    numbers = [(v.value, True) for v in load_values().values()] + [
        (n.value, n.digits > 0) for b in load_benchmarks() for n in b.numbers]
    code = "\n".join(p.read_text() for p in (*PAPER_DIR.glob("*.py"), Path(layout.__file__)))
    for value, fractional in (n for n in numbers if n[0] != 0):  # a printed 0.00 is no number to look for
        # a number printed in whole percent (TGIF's 0.05) is looked for as printed: its 5 (or 0.5 for 0.50) is any
        # digit (or threshold) of the code
        for text in (repr(value), f"{100 * value:.1f}", f"{100 * value:g}") if fractional else (f"{value:.2f}",):
            assert not re.search(rf"(?<![\d.]){re.escape(text)}(?![\d])", code), f"{text} is written in the code"


RESIZE200 = "resize200: 2x the training resolution (paper: resize 1024)"


def test_filled_cell_shows_ours_paper_and_delta_ours_minus_paper():
    md = report()
    t2 = table(md, "2a")
    assert t2[("segformer.b2",)]["mIoU ↑"] == "90.0 \\| 96.1 \\| -6.1"
    assert t2[("segformer.b2",)]["aAcc ↑"] == "95.0 \\| 98.9 \\| -3.9"  # the paper's Acc
    assert t2[("segformer.b2",)]["model (paper)"] == "SegFormer"
    t3 = table(md, "3")
    assert t3[("segformer.b2", RESIZE200)]["binary mIoU ↑"] == "85.0 \\| 89.8 \\| -4.8"
    above = rec("deeplabv3plus.r50", case="binary", metrics={"aAcc": 0.99, "mIoU": 0.98, "bF1": 0.8})
    assert table(report([above]), "2a")[("deeplabv3plus.r50",)]["mIoU ↑"] == "98.0 \\| 97.4 \\| +0.6"
    compared = 0
    for section_ in build_report(records()):
        for t in section_.tables:
            for row in t.rows:
                for cell in row.cells.values():
                    if cell.value is not None and cell.paper is not None:
                        assert cell.delta == cell.value - cell.paper
                        compared += 1
    assert compared == 3 + 3 + 2  # Tables 2a, 3 (one setting) and 5 (the paper's Table 8 is DeepLab's)


def test_a_row_without_a_record_says_why_once_as_a_note_not_per_cell():
    md = report()
    fcn = table(md, "2a")[("fcn8s.\\* (no record)",)]
    assert fcn["model (paper)"] == "FCN-8s" and fcn["detector"].endswith("¹")
    assert fcn["mIoU ↑"] == "— \\| 69.9 \\| —"
    assert table(md, "2b")[("fcn8s.\\* (no record)",)]["bF1 ↑"] == "— \\| 2.4 \\| —"
    # the run fills this section's row: on its dataset (a run on the default one fills another section's)
    assert note_for(md, "2a", "¹") == ("- ¹ no record: diffzoo run --detector fcn8s --suite standard --dataset mini "
                                       "fills this row")
    t3 = section(md, "3")
    assert t3.count("--detector fcn8s --suite distortions") == 1  # five rows, one note
    fcn3 = table(md, "3")[("fcn8s.\\* (no record)", "jpeg60 (paper: JPEG 60)")]
    assert all(fcn3[h] == "—" for h in fcn3 if h.startswith(("binary", "semantic")))  # FCN-8s is not in Table 3
    assert "n/a" not in md and "no paper value" not in md


def test_a_notes_run_fills_the_row_of_its_own_section_its_dataset_and_recipe():
    """A section of DiffSeg30k under the paper recipe said `diffzoo run --detector fcn8s --suite standard`: a run
    on the default dataset (mini) and recipe, whose record fills another section, never this row."""
    recs = [rec(d, case=case, task=task, dataset="diffseg30k", fingerprint="fp30k",
                config={"eval_input": {"recipe": "paper", "short_side": 512}})
            for d, case, task in (("segformer.b2", "binary", "binary"), ("mydet", "semantic", "semantic"))]
    md = report(recs)
    assert note_for(md, "2a", "¹") == ("- ¹ no record: diffzoo run --detector fcn8s --suite standard --dataset "
                                       "diffseg30k --recipe paper fills this row")
    mark = table(md, "2b")[("segformer.b2",)]["detector"][-1]
    assert note_for(md, "2b", mark).endswith("no standard record of this case: diffzoo run --detector segformer.b2 "
                                            "--suite standard --dataset diffseg30k --recipe paper")


def test_a_section_of_an_older_metrics_version_names_no_run_to_fill_it():
    """A metrics v1 section's notes said `diffzoo run ... fills this row`: that run writes metrics v2
    records, another section, and never this one's row."""
    from diffzoo.harness.metrics import METRICS_VERSION

    recs = [rec("segformer.b2", case="binary", metrics_version="1"), rec("mydet", suite="unseen-generators",
                                                                         case="binary", metrics_version="1")]
    md = report(recs)
    older = (f"a run of a diffzoo writing metrics v1 (this one writes metrics v{METRICS_VERSION} records, a group "
             "of their own)")
    assert note_for(md, "2a", "¹") == f"- ¹ no record: {older} fills this row"
    mark = table(md, "2b")[("segformer.b2",)]["detector"][-1]
    assert note_for(md, "2b", mark).endswith(f"no standard record of this case: {older}")
    assert f"no records: {older}" in section(md, "5")
    assert not [t for t in ("2a", "2b", "2c", "3", "4", "5", "6", "7", "8") if "diffzoo run" in section(md, t)]
    assert note_for(report(), "2a", "¹").endswith("--suite standard --dataset mini fills this row")  # v2: the run


def test_a_cell_without_a_value_of_ours_is_marked_and_its_reason_noted_once():
    md = report()
    seg = table(md, "2b")[("segformer.b2",)]  # Table 2's detector, without a semantic record
    mark = seg["detector"][-1]
    assert seg["mIoU ↑"] == "— \\| 82.5 \\| —" and seg["aAcc ↑"].startswith("— ")
    assert note_for(md, "2b", mark).endswith("no standard record of this case: diffzoo run --detector segformer.b2 "
                                            "--suite standard --dataset mini")
    other = table(md, "2a")[("mydet",)]
    assert other["model (paper)"] == "—" and other["mIoU ↑"] == "60.0 \\| — \\| —"
    assert "- paper —: not a model of the paper" in notes(md, "2a")
    t8 = table(md, "8")
    assert t8[("segformer.b2: base", "real")]["binary mIoU ↑"] == "70.0 \\| — \\| —"  # the paper's Table 8 is DeepLab's
    ai = t8[("segformer.b2: base", "ai")]["binary mIoU ↑"]
    assert ai == f"—{ai[1]} \\| — \\| —" and note_for(md, "8", ai[1]).endswith("no base=ai images in mini")
    assert "_diffzoo's own table, not in the paper_" in section(md, "2c")
    assert "no records: run diffzoo run with --suite unseen-generators" in section(md, "6")
    t5 = table(md, "5")
    assert t5[("cnnspot.r50",)]["model (paper)"] == "CNNSpot"
    assert t5[("cnnspot.r50",)]["AP ↑"] == "85.0 \\| 97.9 \\| -12.9"  # the paper's mAP


CALIBRATED = {"mode": "calibrated", "calibrated_on": "calibrated on calib (10 images)",
              "source": "calibrated on calib (10 images)"}


def test_a_calibrated_row_is_never_set_beside_the_papers_fixed_threshold_numbers():
    cal = rec("segformer.b2", case="binary", metrics={"aAcc": 0.95, "mIoU": 0.9, "bF1": 0.5},
              threshold_policy=CALIBRATED)
    md = report([cal])
    t2 = table(md, "2a")
    assert t2[("segformer.b2 (calibrated)",)]["mIoU ↑"] == "90.0 \\| — \\| —"
    assert "- paper —: a row marked (calibrated) decided its thresholds on a validation split; the paper's numbers " \
           "use a fixed threshold, so none is set beside it" in notes(md, "2a")
    # the paper's SegFormer row keeps its numbers, waiting for the fixed-threshold run (Table 2b's too)
    for tid, value in (("2a", "96.1"), ("2b", "82.5")):
        row = table(md, tid)[("segformer.\\* or mmseg.segformer-\\* (no record)",)]
        assert row["mIoU ↑"] == f"— \\| {value} \\| —", tid
        assert note_for(md, tid, row["detector"][-1]).endswith("diffzoo run --detector segformer --suite standard "
                                                               "--dataset mini fills this row")
    # the other benchmarks' numbers: a calibrated record of their protocol is not compared either
    bench = parse_benchmark(BENCH, "test", parse_metrics(METRICS))
    record = opensdi_record("sd2", ["partial"], {"IoU_benco": 0.6, "F1_benco": 0.7})
    data = {k: v for k, v in record.data.items() if k not in ("schema_version", "record_id")}
    assert compare(bench, [ResultRecord.create(**{**data, "threshold_policy": CALIBRATED})])[0] == []
    assert len(compare(bench, [record])[0]) == 2

def test_the_baseline_rows_of_tables_4_and_6_show_the_paper_and_point_to_tables_2_and_5():
    recs = [rec("segformer.b2", suite="unseen-generators", case=f"{p}{s}.{task}", task=task)
            for p in ("Flux_Hunyuan", "SD2_SD3.5", "Glide_Kolors") for s in ("", ".seen")
            for task in ("binary", "image")]
    md = report(recs)
    base = table(md, "4")[("segformer.b2", "baseline (all 8 editors)")]
    assert base["held-out mIoU ↑"] == "— \\| 96.1 \\| —" and base["seen mIoU ↑"] == "—"
    assert "Table 2a's row" in note_for(md, "4", base["detector"][-1])
    flux = table(md, "4")[("segformer.b2", "Flux\\_Hunyuan (flux1 + hunyuandit1.1)")]
    assert flux["held-out mIoU ↑"] == "60.0 \\| 93.0 \\| -33.0" and flux["seen mIoU ↑"] == "60.0"
    assert "Table 5's row" in "".join(notes(md, "6"))


def test_table_7_compares_the_papers_mIoU_on_sdxl_masks_with_the_sdxl_iou():
    lora = rec("deeplabv3plus.r50", suite="lora", case="sdxl-lora.semantic", task="semantic",
               metrics={"aAcc": 0.9, "mIoU": 0.5, "IoU.sdxl": 0.6})
    row = table(report([lora]), "7")[("deeplabv3plus.r50", "SDXL-LoRA")]
    assert row["IoU.sdxl ↑"] == "60.0 \\| 63.0 \\| -3.0" and row["semantic mIoU ↑"] == "50.0"


def test_a_record_without_the_metric_says_which_record():
    old = rec("segformer.b2", suite="distortions", case="jpeg60.semantic", task="semantic", metrics={"mIoU": 0.3})
    md = report([old])
    cell = table(md, "3")[("segformer.b2", "jpeg60 (paper: JPEG 60)")]["semantic bF1 ↑"]
    assert cell == f"—{cell[1]} \\| 19.7 \\| —"
    assert f"record {old.id[:8]} (distortions v1) does not carry bF1; " in note_for(md, "3", cell[1])


def test_a_resize_that_fed_the_baseline_input_is_marked_as_the_baseline():
    """Under --recipe native, the paper's resize 1024 on 1024 px data is the stored image: the run reuses
    the baseline's predictions, and the report says so beside the value instead of passing it off."""
    same = rec("segformer.b2", suite="distortions", case="resize200.binary",
               metrics={"aAcc": 0.95, "mIoU": 0.9, "bF1": 0.5},
               config={"distortion_params": {"scale": 2.0, "input_size": 512, "same_input_as": "baseline"}})
    md = report([same])
    cell = table(md, "3")[("segformer.b2", RESIZE200)]["binary mIoU ↑"]
    assert cell == f"90.0{cell[4]} \\| 89.8 \\| +0.2"
    assert note_for(md, "3", cell[4]).endswith("= baseline: same input under the native recipe; --recipe paper "
                                              "for the paper's protocol")
    assert table(report(), "3")[("segformer.b2", RESIZE200)]["binary mIoU ↑"] == "85.0 \\| 89.8 \\| -4.8"


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
    assert first == second and "### Table 7:" in first and "### Table 8:" in first
    assert "### Format parity:" in first and "### Cross-dataset:" in first  # the layout's every table
    assert "## Other benchmarks' published numbers" in first


def test_paper_report_keeps_metric_versions_apart():
    """Records of two metric versions are never ranked in one table: each version is a section of
    its own, its header line naming it."""
    a = rec("segformer.b2", case="binary", metrics_version="1")
    b = rec("deeplabv3plus.r50", case="binary", metrics_version="2", checkpoint="cd" * 32)
    sections = {s.group.key.metrics_version: s for s in build_report([a, b])}
    assert sorted(sections) == ["1", "2"]
    for version, detector in (("1", "segformer.b2"), ("2", "deeplabv3plus.r50")):
        t2 = next(t for t in sections[version].tables if t.id == "2a")
        assert [r.label for r in t2.rows if r.cells["mIoU"].value is not None] == [detector]
    md = report([a, b])
    heads = [part for part in md.split("\n## ")[1:] if part.startswith("mini (fingerprint")]
    assert [("metrics v1" in h.split("\n\n")[1], "metrics v2" in h.split("\n\n")[1]) for h in heads] == [
        (True, False), (False, True)]


def test_records_of_two_metric_versions_are_two_sections_each_naming_its_version():
    """A metric version is part of the grouping key: rows of two versions are never ranked in
    one table, and the two sections' headings say which version each holds."""
    a = make_record("segformer.b2", case="binary", metrics_version="1")
    b = make_record("deeplabv3plus.r50", case="binary", metrics_version="2", checkpoint="cd" * 32)
    sections = build_report([a, b])
    assert [s.title.rsplit(" · ", 1)[1] for s in sections] == ["metrics v1", "metrics v2"]
    assert [{r.body.detector.name for r in s.group.records} for s in sections] == [{"segformer.b2"},
                                                                                  {"deeplabv3plus.r50"}]
    assert " · " not in build_report([a])[0].title  # a lone group needs no distinction


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
    assert list(benches) == [f.removesuffix("_values.csv") for f in BENCHMARK_FILES] == ["opensdi", "deal300k", "sidset",
                                                                                             "tgif"]
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
    evil = rec("evil|det\n# heading", suite="distortions", case="jpeg60.binary")  # a record's name is outside text
    md = report([evil])
    lines = [line for line in section(md, "3").splitlines() if line.startswith("|")]
    pipes = len(re.findall(r"(?<!\\)\|", lines[0]))
    assert all(len(re.findall(r"(?<!\\)\|", line)) == pipes for line in lines)  # no cell added or lost
    assert not any(line.startswith("# heading") for line in md.splitlines())
    # its missing clean record, noted
    assert any("--detector 'evil\\|det\\\\n# heading' --suite" in line for line in notes(md, "3"))
