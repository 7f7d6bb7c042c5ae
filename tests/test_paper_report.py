"""The paper report: DiffSeg30k Tables 2-8 from records, each cell
ours | paper | delta, and n/a with a reason where nothing fills it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import cli, make_record

from diffzoo.harness.core.errors import ConfigError
from diffzoo.leaderboard.paper import VALUES_FILE, build_report, load_values, parse_values, render_markdown
from diffzoo.leaderboard.paper.layout import TABLES
from diffzoo.leaderboard.store import RecordStore
from diffzoo.leaderboard.versions import Selection

PAPER_DIR = Path(VALUES_FILE).parent
HEADER = "table,row,task,setting,metric,value,note\n"


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


def table(md: str, tid: str) -> dict[tuple[str, ...], dict[str, str]]:
    """Rows of report table ``tid``: (detector[, setting]) -> header -> cell text."""
    part = md.split(f"## Table {tid}:")[1].split("\n## ")[0]
    lines = [line for line in part.splitlines() if line.startswith("|")]
    head = [h.strip() for h in lines[0].strip("|").split(" | ")]
    out = {}
    for line in lines[2:]:
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        row = dict(zip(head, cells))
        key = (row["detector"], *([cells[2]] if head[2] not in ("binary Acc", "Acc", "unseen binary Acc",
                                                               "binary mIoU SDXL", "unseen Acc") else []))
        out[key] = row
    return out


def test_values_parse_and_every_value_is_a_cell_of_tables_2_to_8():
    values = load_values()
    assert values, "the paper's numbers are data"
    cells = {(t.id, f.paper, c.task, c.paper_setting(s), c.paper)
             for t in TABLES if t.in_paper for f in t.families for s in t.settings for c in t.columns}
    for key, v in values.items():
        assert v.table in {"2", "3", "4", "5", "6", "7", "8"} and 0 <= v.value <= 1
        assert key in cells, f"{key} names no cell of the report's layout"
        assert v.note, f"{key} has no source note"
    assert values[("3", "SegFormer", "binary", "resize1024", "mIoU")].value == 0.898
    text = VALUES_FILE.read_text()
    assert "arXiv 2511.19111v2" in text.split(HEADER)[0]  # the source, in the header comment


def test_no_paper_number_is_a_literal_in_the_report_code():
    values = load_values()
    code = "\n".join(p.read_text() for p in PAPER_DIR.glob("*.py"))
    for v in values.values():
        for text in (repr(v.value), f"{100 * v.value:.1f}", f"{100 * v.value:g}"):
            assert text not in code, f"the paper's {text} is written in the code"


def test_filled_cell_shows_ours_paper_and_delta():
    md = report()
    t2 = table(md, "2")
    assert t2[("segformer.b2",)]["binary mIoU"] == "90.0 \\| 96.1 \\| -6.1"
    assert t2[("segformer.b2",)]["model (paper)"] == "SegFormer"
    t3 = table(md, "3")
    assert t3[("segformer.b2", "resize 1024 (2x)")]["binary mIoU"] == "85.0 \\| 89.8 \\| -4.8"


def test_empty_cells_say_why():
    md = report()
    t2 = table(md, "2")
    seg = t2[("segformer.b2",)]
    assert seg["binary Acc"] == "95.0 \\| n/a (no paper value on file) \\| –"
    assert seg["semantic mIoU"].startswith("n/a (no standard/semantic record: --suite standard) \\| ")
    fcn = t2[("fcn8s.\\* (no record)",)]
    assert fcn["model (paper)"] == "FCN-8s" and fcn["binary mIoU"].startswith("n/a (no record: --detector fcn8s --suite standard)")
    other = t2[("mydet",)]
    assert other["model (paper)"] == "—" and other["binary mIoU"] == "60.0 \\| n/a (not a model of the paper) \\| –"
    t8 = table(md, "8")
    assert t8[("segformer.b2", "real base")]["binary mIoU"].startswith("70.0 \\| n/a (no paper value")
    assert t8[("segformer.b2", "AI base")]["binary mIoU"].startswith("n/a (no base=ai images in mini) \\| ")
    t8b = table(md, "8b")
    assert t8b[("segformer.\\* or mmseg.segformer-\\* (no record)", "single turn")]["binary mIoU"] == \
        "n/a (no record: --detector segformer --suite slices) \\| n/a (not in the paper) \\| –"
    assert "## Table 6:" in md and "no records: run `diffzoo run --suite unseen-generators`" in md
    t5 = table(md, "5")
    assert t5[("cnnspot.r50", "all")]["model (paper)"] == "CNNSpot"
    assert t5[("cnnspot.r50", "all")]["AP"].startswith("85.0 \\| ")


def test_a_record_without_the_metric_says_which_record():
    old = make_record("segformer.b2", suite="distortions", case="jpeg60.semantic", task="semantic",
                      metrics={"mIoU": 0.3})
    t3 = table(report([old]), "3")
    cell = t3[("segformer.b2", "JPEG 60")]["semantic bF1"]
    assert cell.startswith(f"n/a (record {old.id[:8]} (distortions v1) does not carry bF1; ")


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
])
def test_malformed_values_are_refused_naming_the_line(line, error):
    with pytest.raises(ConfigError) as exc:
        parse_values("# source\n" + HEADER + line + "\n", "v.csv")
    assert error in str(exc.value) and str(exc.value).startswith("v.csv, data line 2")



def test_a_resize_that_fed_the_baseline_input_is_marked_as_the_baseline():
    """Under --recipe native, the paper's resize 1024 on 1024 px data is the stored image: the run reuses
    the baseline's predictions, and the report says so beside the value instead of passing it off."""
    same = make_record("segformer.b2", suite="distortions", case="resize200.binary",
                       metrics={"aAcc": 0.95, "mIoU": 0.9, "bF1": 0.5},
                       config={"distortion_params": {"scale": 2.0, "input_size": 512, "same_input_as": "baseline"}})
    cell = table(report([same]), "3")[("segformer.b2", "resize 1024 (2x)")]["binary mIoU"]
    assert cell == ("90.0 (= baseline: same input under the native recipe; --recipe paper for the paper's "
                    "protocol) \\| 89.8 \\| +0.2")
    assert table(report(), "3")[("segformer.b2", "resize 1024 (2x)")]["binary mIoU"] == "85.0 \\| 89.8 \\| -4.8"
