"""The paper-style run summary (the paper layout without the paper's column,
leaderboard/layouts/paper.py): table shapes, cell placement, mAP, the
format-shortcut FLAG, oracle columns, escaping, plots."""

from __future__ import annotations

import re

import pytest
from PIL import Image
from rich.console import Console

from diffzoo.harness.records.document import ResultRecord
from diffzoo.harness.suites import ALL_SUITES
from diffzoo.leaderboard.layouts.paper import build_summary
from diffzoo.leaderboard.render.console import summary_console
from diffzoo.leaderboard.render.markdown import summary_markdown
from diffzoo.leaderboard.render.text import write_summary
from diffzoo.leaderboard.robustness import robustness_series

from helpers.records import make_record

TITLES = ("Table 2a", "Table 2b", "Table 2c", "Table 3", "Table 4", "Table 5",
          "Table 6", "Table 7", "Table 8", "Format parity")
EDITORS = ("sd2", "sd3.5", "sdxl", "flux1", "glide", "kolors", "hunyuandit1.1", "kandinsky2.2")


DEFINED = {(s.name, c.name): c.to_dict() for s in ALL_SUITES for c in s.cases}
"""Every built-in case's definition: a record of it carries its typed facts (setting, training)."""


def rec(detector: str, suite: str, case: str, task: str, metrics: dict, *, version: str = "1",
        ci95: dict | None = None, policy: dict | None = None, dataset: str = "mini",
        fingerprint: str = "fp0001", **case_fields) -> ResultRecord:
    """A record of ``suite``/``case`` as the built-in suite defines the case (its setting, its
    model's training); ``case_fields`` are added to its case dict (a case no suite defines names
    its setting there)."""
    extra = {"threshold_policy": policy} if policy else {}
    r = make_record(detector, suite=suite, suite_version=version, case=case, task=task, metrics=metrics,
                    ci95=ci95, dataset=dataset, fingerprint=fingerprint, **extra)
    defined = {k: v for k, v in DEFINED.get((suite, case), {}).items() if k in ("setting", "train", "slice_by")}
    data = {k: v for k, v in r.data.items() if k not in ("schema_version", "record_id")}
    data["case"] = {**data["case"], **defined, **case_fields}
    return ResultRecord.create(**data)


def md_tables(md: str) -> dict[str, tuple[list[str], list[dict[str, str]]]]:
    """Markdown tables by their '### ' title: (headers, rows as header -> cell text)."""
    tables: dict[str, tuple[list[str], list[dict[str, str]]]] = {}
    title = None
    for line in md.splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip() if line.startswith("### ") else None
        elif line.startswith("|") and title:
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            if title not in tables:
                tables[title] = (cells, [])
            elif not set(line) <= set("|:- "):
                assert len(cells) == len(tables[title][0]), line
                tables[title][1].append(dict(zip(tables[title][0], cells)))
    return tables


def table(md: str, prefix: str) -> tuple[list[str], list[dict[str, str]]]:
    (found,) = [v for k, v in md_tables(md).items() if k.startswith(prefix)]
    return found


def md_of(records) -> str:
    return summary_markdown(build_summary(records), title="run summary", notes=[])


def console_text(summary) -> str:
    console = Console(record=True, width=400)
    for item in summary_console(summary):
        console.print(item)
    return console.export_text()


@pytest.mark.parametrize("records", [[], [make_record("seg", suite="standard", case="binary")]],
                         ids=["no-records", "standard-binary-only"])
def test_every_table_keeps_its_shape_and_says_how_to_get_it(records):
    summary = build_summary(records)
    md = summary_markdown(summary, title="run summary", notes=["a note"])
    tables = md_tables(md)
    for prefix in TITLES:
        assert sum(title.startswith(prefix) for title in tables) == 1, prefix
    headers, rows = table(md, "Table 5")
    assert rows == [] and headers[0] == "detector"
    assert [f"{e} {m} ↑" for e in EDITORS for m in ("Acc", "AP")] == headers[1:17]
    assert headers[17:20] == ["Acc ↑", "AP ↑", "mAP ↑"]
    assert table(md, "Table 7")[0] == ["detector", "editor", "binary mIoU ↑", "semantic mIoU ↑", "IoU.sdxl ↑",
                                       "Top-1 ↑"]
    paper_columns = [f"{task} {m} ↑" for task in ("binary", "semantic") for m in ("aAcc", "mIoU", "bF1")]
    assert table(md, "Table 3")[0] == ["detector", "setting", *paper_columns, "image Acc ↑"]
    assert table(md, "Table 4")[0][2:] == [f"{w} {m} ↑" for w in ("seen", "held-out")
                                           for m in ("aAcc", "mIoU", "bF1", "F1")]
    assert table(md, "Table 8")[0][2:8] == paper_columns
    for suite in ("distortions", "unseen-generators", "lora", "classification", "slices", "format-parity"):
        assert f"run diffzoo run with --suite {suite}" in md
    assert md.count("run diffzoo run with --suite standard") == (2 if records else 3)  # 2a has a row
    if records:
        assert table(md, "Table 2a")[1][0]["mIoU ↑"] == "60.0"
        assert table(md, "Table 2b")[1] == []
    text = console_text(summary)
    assert all(prefix in text for prefix in TITLES)  # empty ones named on the "not run here" line
    not_run = next(line for line in text.splitlines() if line.startswith("not run here"))
    assert "Table 7" in not_run and ("Table 2a" in not_run) == (not records)
    assert "run diffzoo run with --suite lora" not in text  # the console shows no empty table


def test_values_land_in_their_cells():
    ci = {"mIoU": [0.597, 0.627]}
    records = [
        rec("seg", "standard", "binary", "binary", {"mIoU": 0.612, "F1": 0.7, "FPR_authentic": 0.05}, version="2",
            ci95=ci),
        rec("seg", "standard", "semantic", "semantic", {"mIoU": 0.4, "top1": 0.66, "IoU.sd2": 0.51,
                                                        "IoU.sdxl": 0.32}, version="2"),
        rec("seg", "distortions", "clean.binary", "binary", {"mIoU": 0.7, "aAcc": 0.91, "bF1": 0.33}),
        rec("seg", "distortions", "resize50.semantic", "semantic", {"bF1": 0.12}),
        rec("seg", "distortions", "jpeg80.binary", "binary", {"mIoU": 0.55}),
        rec("seg", "distortions", "crop50.binary", "binary", {"mIoU": None}),
        rec("seg", "distortions", "jpeg60.image", "image", {"img_Acc": 0.81}),
        rec("seg", "unseen-generators", "Flux_Hunyuan.binary", "binary", {"mIoU": 0.3, "F1": 0.4, "bF1": 0.21,
                                                                          "aAcc": 0.93},
            editors=["flux1", "hunyuandit1.1"]),
        rec("seg", "unseen-generators", "Flux_Hunyuan.seen.binary", "binary", {"mIoU": 0.5, "F1": 0.6},
            editors=["flux1", "hunyuandit1.1"]),
        rec("seg", "unseen-generators", "SD2_SD3.5.image", "image", {"img_Acc": 0.71, "img_AP": 0.72}),
        rec("seg", "lora", "sdxl-lora.binary", "binary", {"mIoU": 0.44}),
        rec("seg", "lora", "sdxl-lora.semantic", "semantic", {"mIoU": 0.33, "IoU.sdxl": 0.22, "top1": 0.11}),
        rec("seg", "lora", "sdxl.semantic", "semantic", {"mIoU": 0.38, "IoU.sdxl": 0.27, "top1": 0.16}),
        rec("seg", "slices", "turns.binary", "binary", {"mIoU@turns=1": 0.61, "mIoU@turns=10": 0.41,
                                                        "mIoU@turns=2": 0.51, "F1@turns=2": 0.52}),
        rec("seg", "slices", "turns.semantic", "semantic", {"top1@turns=2": 0.25}),
        rec("seg", "slices", "base.binary", "binary", {"gIoU@base=real": 0.35}),
        rec("seg", "slices", "multiturn.binary", "binary", {"aAcc@multiturn=single": 0.95, "bF1@multiturn=multi": 0.2,
                                                            "mIoU@multiturn=multi": 0.45}),
        rec("seg", "slices", "multiturn.semantic", "semantic", {"bF1@multiturn=multi": 0.15}),
        rec("seg", "format-parity", "jpeg75", "image", {"img_Acc": 0.8, "verdict_flip_rate": 0.02,
                                                        "delta_img_Acc": -0.031, "format_shortcut": 0}),
    ]
    md = md_of(records)
    (row,) = table(md, "Table 2a")[1]
    assert (row["mIoU ↑"], row["F1 ↑"], row["FPR auth. ↓"], row["bF1 ↑"]) == (
        "61.2 ± 1.5", "70.0", "5.0", "—")
    (row,) = table(md, "Table 2b")[1]
    assert (row["IoU.sd2 ↑"], row["IoU.sdxl ↑"], row["Top-1 ↑"], row["bF1 ↑"]) == (
        "51.0", "32.0", "66.0", "—")
    rows = {r["setting"]: r for r in table(md, "Table 3")[1]}
    assert list(rows) == ["clean", "jpeg80 (paper: JPEG 80)", "jpeg60 (paper: JPEG 60)",
                          "resize50: 0.5x the training resolution (paper: resize 256)",
                          "resize200: 2x the training resolution (paper: resize 1024)", "crop50"]
    assert (rows["clean"]["binary mIoU ↑"], rows["clean"]["binary aAcc ↑"], rows["clean"]["binary bF1 ↑"]) == (
        "70.0", "91.0", "33.0")
    assert rows["jpeg60 (paper: JPEG 60)"]["image Acc ↑"] == "81.0"
    assert rows["jpeg60 (paper: JPEG 60)"]["binary mIoU ↑"] == "—" and rows["crop50"]["binary mIoU ↑"] == "-"
    assert rows["resize50: 0.5x the training resolution (paper: resize 256)"]["semantic bF1 ↑"] == "12.0"
    (row,) = table(md, "Table 4")[1]
    assert row["held-out pair"] == "Flux\\_Hunyuan (flux1 + hunyuandit1.1)"
    assert (row["seen mIoU ↑"], row["held-out mIoU ↑"], row["held-out F1 ↑"]) == ("50.0", "30.0", "40.0")
    assert (row["held-out bF1 ↑"], row["held-out aAcc ↑"], row["seen bF1 ↑"]) == ("21.0", "93.0", "—")
    (row,) = table(md, "Table 6")[1]
    assert (row["held-out pair"], row["held-out Acc ↑"], row["held-out AP ↑"], row["seen Acc ↑"]) == (
        "SD2\\_SD3.5", "71.0", "72.0", "—")
    sdxl, lora = table(md, "Table 7")[1]
    assert (sdxl["editor"], sdxl["binary mIoU ↑"], sdxl["IoU.sdxl ↑"]) == ("SDXL", "—", "27.0")
    assert (lora["editor"], lora["binary mIoU ↑"], lora["semantic mIoU ↑"], lora["Top-1 ↑"]) == (
        "SDXL-LoRA", "44.0", "33.0", "11.0")
    rows = table(md, "Table 8")[1]
    assert [(r["slice"], r["value"]) for r in rows] == [("base", "real"), ("turns", "1"), ("turns", "2"),
                                                        ("turns", "10"), ("multiturn", "multi"),
                                                        ("multiturn", "single")]
    multi, single = rows[4:]
    assert (multi["binary mIoU ↑"], multi["binary bF1 ↑"], multi["semantic bF1 ↑"], multi["binary aAcc ↑"]) == (
        "45.0", "20.0", "15.0", "—")
    assert single["binary aAcc ↑"] == "95.0"
    assert md.count("aAcc is the paper's Acc") == 3  # Tables 3, 4 and 8
    assert rows[0]["binary gIoU ↑"] == "35.0" and rows[0]["binary mIoU ↑"] == "—"
    assert (rows[2]["binary mIoU ↑"], rows[2]["binary F1 ↑"], rows[2]["semantic Top-1 ↑"]) == (
        "51.0", "52.0", "25.0")
    (row,) = table(md, "Format parity")[1]
    assert (row["format"], row["verdicts moved ↓"], row["ΔAcc"], row["format shortcut ↓"]) == (
        "jpeg75", "2.0", "-3.1", "no")


def test_map_is_the_mean_of_the_per_editor_aps():
    aps = {"sd2": 0.9, "sdxl": 0.6, "glide": 0.75, "kolors": 0.52}
    records = [rec("seg", "classification", "all", "image", {"img_Acc": 0.8, "img_AP": 0.85})]
    records += [rec("seg", "classification", e, "image", {"img_Acc": 0.5, "img_AP": ap}) for e, ap in aps.items()]
    records += [rec("cnnspot", "classification", e, "image", {"img_Acc": 0.55, "img_AP": 0.6}) for e in EDITORS]
    summary = build_summary(records)
    (t5,) = [t for t in summary.sections[0].tables if t.id == "5"]
    mean = sum(aps.values()) / len(aps)
    assert [r.label for r in t5.rows] == ["seg", "cnnspot"]
    assert t5.rows[0].cells["mAP"].value == pytest.approx(mean)
    assert t5.rows[1].cells["mAP"].value == pytest.approx(0.6)
    md = summary_markdown(summary, title="t", notes=[])
    seg, cnnspot = table(md, "Table 5")[1]
    assert seg["mAP ↑"] == f"{100 * mean:.1f}" and seg["AP ↑"] == "85.0" and seg["glide AP ↑"] == "75.0"
    assert seg["sd3.5 AP ↑"] == "—" and cnnspot["kandinsky2.2 Acc ↑"] == "55.0" and cnnspot["Acc ↑"] == "—"
    assert "mAP = mean of the per-editor APs" in md
    assert "seg (4 of 8)" in md and "cnnspot (" not in md


@pytest.mark.parametrize("shortcut", [0, 1])
def test_flag_line_iff_format_shortcut(shortcut):
    records = [rec("seg", "format-parity", "native", "image", {"img_Acc": 0.8, "img_AP": 0.9}),
               rec("seg", "format-parity", "png", "image", {"img_Acc": 0.8, "format_shortcut": 0},
                   compare_to="native", options={"tolerance": 0.05}),
               rec("seg", "format-parity", "jpeg75", "image", {"img_Acc": 0.6, "verdict_flip_rate": 0.3,
                                                               "format_shortcut": shortcut},
                   compare_to="native", options={"tolerance": 0.05}),
               rec("other", "format-parity", "jpeg75", "image", {"img_Acc": 0.8, "format_shortcut": 0})]
    summary = build_summary(records)
    md = summary_markdown(summary, title="t", notes=[])
    text = console_text(summary)
    assert ("FLAG" in md) == bool(shortcut) and ("FLAG" in text) == bool(shortcut)
    flags = [line for line in md.splitlines() if "FLAG" in line]
    assert len(flags) == shortcut
    if shortcut:
        assert "seg" in flags[0] and "jpeg75" in flags[0] and "5%" in flags[0] and "png" not in flags[0]
    shortcut_cells = [r["format shortcut ↓"] for r in table(md, "Format parity")[1]]
    assert shortcut_cells == ["—", "no", "yes" if shortcut else "no", "no"]


def test_oracle_metrics_only_in_oracle_columns():
    records = [rec("seg", "standard", "binary", "binary", {"F1": 0.7, "F1_oracle": 0.777}),
               rec("seg", "standard", "image", "image", {"img_Acc": 0.8, "img_Acc_oracle": 0.888}),
               rec("seg", "classification", "all", "image", {"img_Acc": 0.81, "img_Acc_oracle": 0.889})]
    md = md_of(records)
    found = set()
    for headers, rows in md_tables(md).values():
        for row in rows:
            for header, text in row.items():
                oracle_value = text.split(" ")[0] in ("77.7", "88.8", "88.9")
                assert oracle_value == ("oracle" in header), (header, text)
                found |= {text} if oracle_value else set()
        oracle = [i for i, h in enumerate(headers) if "oracle" in h]
        assert oracle == list(range(len(headers) - len(oracle), len(headers)))  # last, apart
    assert found == {"77.7", "88.8", "88.9"}
    assert table(md, "Table 2a")[1][0]["F1 ↑"] == "70.0"
    # each table says what its own oracle column computes (docs/metrics.md): 2c's is an area (or score) threshold
    tail = ": an oracle, never comparable with a column whose threshold was fixed or calibrated before evaluation"
    f1 = ("- F1 (oracle thr.) is the pooled pixel F1 at the probability threshold (a multiple of 1/1024) that gives "
          "the highest F1 on the evaluated images themselves" + tail)
    acc = ("- Acc (oracle thr.) is the accuracy at the threshold on each row's image score (its predicted edited area, "
           "the pixel threshold kept; or its own image score) that gives the highest accuracy on the evaluated images "
           "themselves, so never below Acc" + tail)
    sections = {part.split("\n")[0]: part for part in md.split("### ")}
    said = {title.split(":")[0]: [line for line in part.splitlines() if "(oracle thr.) is" in line]
            for title, part in sections.items() if title.startswith("Table")}
    assert (said["Table 2a"], said["Table 2c"], said["Table 5"]) == ([f1], [acc], [acc]), said


def test_record_text_is_escaped_in_markdown_and_console():
    name = "a|b<script>[red]"
    records = [make_record(name, suite="standard", case="binary"),
               rec(name, "unseen-generators", "x_y.binary", "binary", {"mIoU": 0.3}, editors=["x", "y"], setting="x_y",
                   train={"task": "binary", "split": "train", "exclude_editors": ["x", "y"]})]
    summary = build_summary(records)
    md = summary_markdown(summary, title="t <b>", notes=["n|o"])
    assert "<script>" not in md and "<b>" not in md
    assert "a\\|b&lt;script&gt;\\[red\\]" in md
    assert table(md, "Table 2a")[1][0]["detector"] == "a\\|b&lt;script&gt;\\[red\\]"
    assert table(md, "Table 4")[1][0]["detector"] == "a\\|b&lt;script&gt;\\[red\\]"
    assert name in console_text(summary)


def test_threshold_policy_line_per_detector():
    records = [rec("seg", "standard", "binary", "binary", {"mIoU": 0.5},
                   policy={"pixel": "fixed: probability > 0.5", "calibrated_on": None}),
               rec("cal", "standard", "binary", "binary", {"mIoU": 0.5},
                   policy={"pixel": "calibrated on val: probability > 0.42", "calibrated_on": "val"})]
    summary = build_summary(records)
    assert summary.sections[0].policies == [
        "seg: thresholds fixed (pixel: fixed: probability > 0.5)",
        "cal (calibrated): thresholds calibrated on val (pixel: calibrated on val: probability > 0.42)"]
    assert "cal (calibrated): thresholds calibrated on val" in summary_markdown(summary, title="t", notes=[])


def test_the_image_table_note_states_the_area_rule_of_fixed_and_calibrated_rows_alike():
    """Table 2c's note holds for a calibrated row too, whose area threshold is its own (0.1846 here,
    in its threshold policy line), never a 1% it did not apply."""
    from diffzoo.harness.metrics.verdict import EDITED_AREA
    from diffzoo.harness.records.policy import ThresholdPolicy, Thresholds

    values = Thresholds(0.5, 0.1846, 0.5, "calibrated on calib (10 images)")
    records = [rec("seg", "standard", "image", "image", {"img_Acc": 0.8},
                   policy=ThresholdPolicy.decided("binary", values, EDITED_AREA).to_dict())]
    md = summary_markdown(build_summary(records), title="t", notes=[])
    assert "edited if predicted edited area &gt; 0.1846 of the image" in md
    assert ("- an image counts as edited when its predicted edited area exceeds 1% of the image (a row marked "
            "(calibrated): the area threshold its threshold policy gives)\n") in md


def test_datasets_and_suite_versions_never_share_a_table():
    records = [make_record("seg", suite="standard", suite_version="2", metrics={"mIoU": 0.61}),
               make_record("seg", suite="standard", suite_version="1", metrics={"mIoU": 0.41}),
               make_record("seg", suite="lora", case="sdxl.binary", metrics={"mIoU": 0.33}),
               make_record("seg", suite="standard", suite_version="2", dataset="other", fingerprint="fp9",
                           metrics={"mIoU": 0.21})]
    summary = build_summary(records)
    assert [(g.dataset, g.versions) for g in summary.sections] == [
        ("mini", {"lora": "1", "standard": "2"}), ("mini", {"standard": "1"}), ("other", {"standard": "2"})]
    values = [[t.rows[0].cells["mIoU"].value for t in g.tables if t.id == "2a"] for g in summary.sections]
    assert values == [[0.61], [0.41], [0.21]]
    assert [t.id for t in summary.sections[1].shown] == ["2a"]  # older versions: only tables with rows
    md = summary_markdown(summary, title="t", notes=[])
    assert md.count("## mini (fingerprint fp0001)") == 2 and "## other (fingerprint fp9)" in md
    assert "standard v1" in md and "lora v1, standard v2" in md


def test_write_summary_writes_markdown_and_robustness_pngs(tmp_path):
    settings = {"clean": ("none", {}, 0.7), "jpeg80": ("jpeg", {"quality": 80}, 0.6),
                "jpeg60": ("jpeg", {"quality": 60}, 0.5), "blur1": ("blur", {"sigma": 1.0}, 0.65),
                "blur2": ("blur", {"sigma": 2.0}, 0.45)}
    records = [rec("seg|x", "distortions", f"{s}.binary", "binary", {"mIoU": v}, distortion=d,
                   distortion_params=p) for s, (d, p, v) in settings.items()]
    records.append(rec("seg|x", "distortions", "jpeg60.semantic", "semantic", {"mIoU": 0.3}))
    records.append(make_record("cnnspot", suite="classification", case="all", task="image"))
    series, clean = robustness_series(records, "binary", "mIoU")
    assert clean == 0.7
    assert series == {"blur (sigma 1, 2)": [(1.0, 0.65), (2.0, 0.45)],
                      "jpeg (quality 80, 60)": [(1.0, 0.6), (2.0, 0.5)]}
    paths = write_summary(build_summary(records), tmp_path / "out", title="seg|x on mini", notes=["2 detectors"])
    assert set(paths) == {"summary.md", "plots/seg-x-robustness-binary-mIoU.png",
                          "plots/seg-x-robustness-semantic-mIoU.png"}
    assert paths["summary.md"] == tmp_path / "out" / "summary.md"
    md = paths["summary.md"].read_text()
    assert md.startswith("# seg\\|x on mini")
    assert {r["setting"]: r for r in table(md, "Table 3")[1]}["blur2"]["binary mIoU ↑"] == "45.0"
    for key, path in paths.items():
        assert path.is_file()
        if key.endswith(".png"):
            with Image.open(path) as im:
                assert im.format == "PNG" and im.size[0] > 100


def test_robustness_pngs_of_names_differing_only_in_case_are_distinct_files_on_any_filesystem(tmp_path):
    """Detectors ``A`` and ``a`` wrote ``A-robustness-...png`` and ``a-robustness-...png``: one file
    on a case-insensitive filesystem (macOS, Windows), where the second plot replaced the first."""
    records = [rec(name, "distortions", f"{s}.binary", "binary", {"mIoU": v}, distortion=d, distortion_params=p)
               for name in ("A", "a") for s, d, p, v in (("clean", "none", {}, 0.7),
                                                          ("jpeg60", "jpeg", {"quality": 60}, 0.5))]
    paths = write_summary(build_summary(records), tmp_path, title="t")
    assert sorted(paths) == ["plots/A-robustness-binary-mIoU.png", "plots/a-robustness-binary-mIoU-2.png",
                             "summary.md"]

def test_a_slice_without_metadata_is_left_out_of_table_8_with_the_fix():
    # what a run on data without base / turn metadata records: the slice cases carry no slice metric
    records = [rec("seg", "slices", "base.binary", "binary", {"num_images": 40}),
               rec("seg", "slices", "base.semantic", "semantic", {"num_images": 40}),
               rec("seg", "slices", "multiturn.binary", "binary", {"num_images": 40}),
               rec("seg", "slices", "editor.binary", "binary", {"mIoU@editor=sd2": 0.5, "num_images": 40})]
    summary = build_summary(records)
    md = summary_markdown(summary, title="t", notes=[])
    assert [(r["slice"], r["value"]) for r in table(md, "Table 8")[1]] == [("editor", "sd2")]
    fix = "pass --dataset-option metadata=FILE (id -&gt; base, editors per turn)"  # '>' escaped in Markdown
    assert f"- left out, base: dataset carries no base metadata; {fix}" in md
    assert f"- left out, multiturn: dataset carries no turn metadata; {fix}" in md
    assert "left out, editor" not in md and md.count("left out, base") == 1
    assert "left out, base: dataset carries no base metadata; pass --dataset-option metadata=FILE (id -> base" in (
        " ".join(console_text(summary).split()))
    # every slice left out: the table is shown (with the reasons), not called "not run"
    only = build_summary(records[:3])
    md = summary_markdown(only, title="t", notes=[])
    assert table(md, "Table 8")[1] == [] and "run diffzoo run with --suite slices" not in md
    text = " ".join(console_text(only).split())
    assert "Table 8: results by slice" in text and "left out, base" in text
    assert "Table 8" not in next(line for line in console_text(only).splitlines() if line.startswith("not run"))


def test_rescale_settings_rank_by_their_distance_from_the_training_resolution():
    records = [rec("seg", "distortions", f"{s}.binary", "binary", {"mIoU": v}, distortion="rescale",
                   distortion_params={"scale": scale}) for s, scale, v in (("resize200", 2.0, 0.4),
                                                                          ("x125", 1.25, 0.6),
                                                                          ("resize50", 0.5, 0.5))]
    series, _ = robustness_series(records, "binary", "mIoU")
    assert series == {"rescale (scale 1.25, 0.5, 2)": [(1.0, 0.6), (2.0, 0.5), (3.0, 0.4)]}


def test_two_evaluated_datasets_of_one_name_are_two_column_groups_never_one():
    """Two folders a catalog found, both called ``tpgt`` (other fingerprints): each keeps its numbers."""
    def cross(fingerprint, miou):
        return make_record("seg", suite="cross-dataset", dataset="tpgt", fingerprint=fingerprint,
                           metrics={"mIoU": miou, "F1": 0.5},
                           case_fields={"split": "test", "options": {"eval_dataset": "other"}},
                           config={"train_dataset": {"name": "mini", "fingerprint": "fp0001"}})

    summary = build_summary([cross("aaaaaaaa1111", 0.11), cross("bbbbbbbb2222", 0.22),
                             make_record("seg", suite="standard", metrics={"mIoU": 0.6})])
    tables = [t for g in summary.sections for t in g.tables if t.id == "X" and t.rows]
    assert len(tables) == 1
    cells = tables[0].rows[0].cells
    assert cells["tpgt/test (aaaaaaaa, unknown):mIoU"].value == 0.11
    assert cells["tpgt/test (bbbbbbbb, unknown):mIoU"].value == 0.22
