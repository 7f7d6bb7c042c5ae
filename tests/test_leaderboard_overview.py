"""The overview table (docs/leaderboard.md, "The overview table"): one row per detector,
its numbers equal to the records' (recomputed here from the records themselves), a
missing value a mark with one note, never a mix of label maps or evaluator versions, and
``leaderboard publish`` writing it as Markdown, CSV and LaTeX with every name escaped."""

from __future__ import annotations

import csv
import io
import json
import re
from statistics import fmean

import pytest

from diffzoo.harness.records.document import ResultRecord
from diffzoo.leaderboard.layouts.overview import OVERVIEW_NOTE, OVERVIEW_VERSION, build_overview
from diffzoo.leaderboard.render.markdown import overview_markdown
from diffzoo.leaderboard.store import RecordStore
from diffzoo.leaderboard.table import Table

from helpers.cli import cli
from helpers.records import make_record

SETTINGS = ("jpeg80", "jpeg60", "resize50", "resize200")  # the paper's, written out on purpose
PAIRS = ("Flux_Hunyuan", "SD2_SD3.5", "Glide_Kolors")
PLACES = ("casia", "cocoglide")


def conditions(sha: str = "11") -> dict:
    """A record's label map (``sha`` x32, from labels.json) and split scheme."""
    return {"label_map": {"names": ["background", "sd2", "sdxl"], "sha256": sha * 32, "source": "labels.json",
                          "verified": True},
            "split": {"id": "diffzoo-hash-v1-seed0-val20", "source": "diffzoo"}}


def unseen(pair: str, held: bool) -> dict:
    """The case facts of an unseen-generators case: its pair, and whether its model held the pair out."""
    return {"setting": pair, "train": {"task": "binary", "split": "train",
                                       "exclude_editors": pair.split("_") if held else []}}


def board(names=("alpha", "beta", "gamma"), sha: str = "11") -> list[ResultRecord]:
    """Three detectors on mini: standard (gamma without semantic), the distortions suite's
    clean and paper settings (gamma none), unseen-generators (beta without Glide_Kolors) and
    cross-dataset on casia/test and cocoglide/test (gamma only casia)."""
    recs = []

    def add(det, **kw):
        kw.setdefault("dataset_fields", conditions(sha))
        recs.append(make_record(det, **kw))

    for i, det in enumerate(names):
        miou = 0.5 + 0.1 * i
        add(det, metrics={"aAcc": 0.9, "mIoU": miou, "bF1": 0.3 + 0.03 * i, "F1": 0.6},
            ci95={"mIoU": [miou - 0.02, miou + 0.04], "bF1": [0.2, 0.5]})
        if i != 2:
            add(det, case="semantic", task="semantic",
                metrics={"aAcc": 0.8, "mIoU": 0.2 + 0.05 * i, "bF1": 0.1, "top1": 0.5})
        add(det, case="image", task="image", metrics={"img_Acc": 0.7 + 0.02 * i, "img_AP": 0.8 - 0.01 * i},
            ci95={"img_AP": [0.7, 0.9]})
        if i != 2:
            for j, s in enumerate(("clean", *SETTINGS)):
                add(det, suite="distortions", suite_version="2", case=f"{s}.binary", case_fields={"setting": s},
                    metrics={"mIoU": 0.7 - 0.07 * j + 0.02 * i * j, "bF1": 0.2})
        for j, pair in enumerate(PAIRS):
            if (i, pair) != (1, "Glide_Kolors"):
                add(det, suite="unseen-generators", case=f"{pair}.binary", case_fields=unseen(pair, held=True),
                    metrics={"mIoU": 0.3 + 0.04 * j + 0.01 * i})
                add(det, suite="unseen-generators", case=f"{pair}.seen.binary", case_fields=unseen(pair, held=False),
                    metrics={"mIoU": 0.9})
        for j, place in enumerate(PLACES[:1] if i == 2 else PLACES):
            cross = {"suite": "cross-dataset", "dataset": place, "fingerprint": f"fp-{place}", "dataset_fields": {},
                     "case_fields": {"split": "test", "options": {"eval_dataset": "other"}},
                     "config": {"train_dataset": {"name": "mini", "fingerprint": "fp0001", **conditions(sha)}}}
            add(det, case="binary", metrics={"mIoU": 0.25 + 0.1 * j + 0.05 * i, "F1": 0.55 - 0.01 * i},
                ci95={"mIoU": [0.2, 0.4]}, **cross)
            add(det, case="image", task="image", metrics={"img_Acc": 0.6 + 0.01 * i + 0.1 * j, "img_AP": 0.7}, **cross)
            if place == "cocoglide":  # a benchmark whose metadata names generators (one of them unnamed)
                cross["case_fields"] = {**cross["case_fields"], "slice_by": "editor"}
                add(det, case="binary.editor", metrics={"mIoU": 0.3, "F1@editor=sdxl": 0.4 + 0.1 * i,
                                                        "F1@editor=glide": 0.2, "F1@editor=(none)": 0.1}, **cross)
    return recs


def of(records, det, suite, case, metric, dataset=None):
    """The one record's ``metric`` (looked up here, not through the overview's code)."""
    [r] = [r for r in records if r.body.detector.name == det and r.body.suite.name == suite
           and r.body.case_name == case and not r.body.own_score and (dataset is None or r.body.dataset.name == dataset)]
    return r.metrics[metric], r.body.ci95.get(metric)


def only(records) -> Table:
    [table] = build_overview(records)
    return table


def test_one_row_per_detector_and_each_number_equals_the_records():
    recs = board()
    t = only(recs)
    assert t.version == OVERVIEW_VERSION == "2"
    key = t.group.key
    assert key.dataset == "mini" and key.fingerprint == "fp0001"  # the cross records joined it
    assert key.label_map == "111111111111 (labels.json)" and key.split == "diffzoo-hash-v1-seed0-val20"
    assert {s: str(v) for s, v in t.group.suites.items()} == {
        "standard": "v1 (hstandar)", "distortions": "v2 (hdistort)", "unseen-generators": "v1 (hunseen-)",
        "cross-dataset": "v1 (hcross-d)"}
    assert [c.key for c in t.columns] == [
        "standard.binary.mIoU", "standard.binary.bF1", "standard.semantic.mIoU", "standard.image.img_Acc",
        "standard.image.img_AP", "robustness.binary.mIoU.mean", "robustness.binary.mIoU.worst",
        "unseen.binary.mIoU.mean",
        "cross-dataset.binary.mIoU.casia/test", "cross-dataset.binary.F1.casia/test",
        "cross-dataset.image.img_Acc.casia/test",
        "cross-dataset.binary.mIoU.cocoglide/test", "cross-dataset.binary.F1.cocoglide/test",
        "cross-dataset.image.img_Acc.cocoglide/test", "cross-dataset.binary.F1@editor=glide.cocoglide/test",
        "cross-dataset.binary.F1@editor=sdxl.cocoglide/test",
        "cross-dataset.binary.mIoU.mean"]
    assert [c.group for c in t.columns[5:]] == ["robustness", "robustness", "unseen editors", *["casia/test"] * 3,
                                                *["cocoglide/test"] * 5, "cross-dataset"]
    assert [c.label for c in t.columns[-3:]] == ["glide F1", "sdxl F1", "mean mIoU"]  # the unnamed one has none
    assert [(r.label, r.rank) for r in t.rows] == [("gamma", 1), ("beta", 2), ("alpha", 3)]  # by binary mIoU
    for row in t.rows:
        det, cells = row.label, row.cells
        for key, (case, metric) in {"standard.binary.mIoU": ("binary", "mIoU"), "standard.binary.bF1": ("binary", "bF1"),
                                    "standard.image.img_Acc": ("image", "img_Acc"),
                                    "standard.image.img_AP": ("image", "img_AP")}.items():
            value, ci = of(recs, det, "standard", case, metric)
            assert cells[key].value == value
            assert cells[key].half_width == (None if ci is None else pytest.approx((ci[1] - ci[0]) / 2))
        if det != "gamma":
            assert cells["standard.semantic.mIoU"].value == of(recs, det, "standard", "semantic", "mIoU")[0]
            settings = [of(recs, det, "distortions", f"{s}.binary", "mIoU")[0] for s in SETTINGS]
            assert cells["robustness.binary.mIoU.mean"].value == pytest.approx(fmean(settings))
            assert cells["robustness.binary.mIoU.mean"].ci is None  # a mean over settings has no CI
            assert cells["robustness.binary.mIoU.worst"].value == min(settings)
            assert cells["robustness.binary.mIoU.worst"].detail == SETTINGS[settings.index(min(settings))]
        if det != "beta":
            held = [of(recs, det, "unseen-generators", f"{p}.binary", "mIoU")[0] for p in PAIRS]
            assert cells["unseen.binary.mIoU.mean"].value == pytest.approx(fmean(held))
        places = PLACES[:1] if det == "gamma" else PLACES
        cross = [of(recs, det, "cross-dataset", "binary", "mIoU", dataset=p) for p in places]
        for place, (value, ci) in zip(places, cross):
            cell = cells[f"cross-dataset.binary.mIoU.{place}/test"]
            assert (cell.value, cell.half_width) == (value, pytest.approx((ci[1] - ci[0]) / 2))
            assert cells[f"cross-dataset.binary.F1.{place}/test"].value == of(recs, det, "cross-dataset", "binary",
                                                                              "F1", dataset=place)[0]
            assert cells[f"cross-dataset.image.img_Acc.{place}/test"].value == of(
                recs, det, "cross-dataset", "image", "img_Acc", dataset=place)[0]
        if det != "gamma":
            assert cells["cross-dataset.binary.mIoU.mean"].value == pytest.approx(fmean(v for v, _ in cross))
            assert cells["cross-dataset.binary.F1@editor=sdxl.cocoglide/test"].value == of(
                recs, det, "cross-dataset", "binary.editor", "F1@editor=sdxl", dataset="cocoglide")[0]
        else:  # evaluated on casia only: its cocoglide group is missing, with the note saying how to get it
            assert cells["cross-dataset.binary.F1@editor=sdxl.cocoglide/test"].missing
    md = overview_markdown([], [t], OVERVIEW_NOTE)
    beta = next(line for line in md.splitlines() if line.startswith("|") and "| beta " in line)
    assert f"{100 * of(recs, 'beta', 'standard', 'binary', 'mIoU')[0]:.1f} ± 3.0" in beta


def test_a_missing_value_is_a_mark_and_one_note():
    t = only(board())
    gamma, beta = (next(r for r in t.rows if r.label == name) for name in ("gamma", "beta"))
    mean, worst = gamma.cells["robustness.binary.mIoU.mean"], gamma.cells["robustness.binary.mIoU.worst"]
    assert mean.missing and worst.missing and mean.value is None and mean.notes == worst.notes
    [note] = mean.notes
    assert t.note(note).text == ("no distortions records for gamma: diffzoo run --detector gamma --suite distortions "
                                 "--dataset mini")
    assert "gamma has no standard record of case semantic" in t.note(gamma.cells["standard.semantic.mIoU"].notes[0]).text
    unseen = beta.cells["unseen.binary.mIoU.mean"]
    assert unseen.missing and "beta has no unseen-generators record of Glide_Kolors.binary" in t.note(unseen.notes[0]).text
    cross_mean = gamma.cells["cross-dataset.binary.mIoU.mean"]
    assert cross_mean.notes == gamma.cells["cross-dataset.binary.mIoU.cocoglide/test"].notes
    assert "--eval-dataset PATH:test" in t.note(cross_mean.notes[0]).text
    used = [n for r in t.rows for c in r.cells.values() for n in c.notes]
    assert [n.id for n in t.notes] == [str(i) for i in range(1, len(t.notes) + 1)] == list(dict.fromkeys(used))
    assert len({n.text for n in t.notes}) == len(t.notes) == 4  # each listed once
    md = overview_markdown([], [t], OVERVIEW_NOTE)
    row = next(line for line in md.splitlines() if line.startswith("|") and "| gamma " in line)
    assert row.count(f"— [{note}]") == 2 and md.count(f"- [{note}] no distortions records for gamma") == 1


def test_a_metric_a_record_does_not_carry_is_not_said_to_be_undefined():
    """A record without bF1 (its suite version predates it) read "bF1 undefined in standard of case
    binary", as if bF1 had been computed and were undefined on its images; the fix differs."""
    a, b = make_record("a", metrics={"mIoU": 0.5}), make_record("b", metrics={"mIoU": 0.4, "bF1": None})
    [t] = build_overview([a, b])
    said = {r.label: t.note(r.cells["standard.binary.bF1"].notes[0]).text for r in t.rows}
    assert said == {"a": f"a: record {a.id[:8]} (standard v1) does not carry bF1; a newer suite version computes it",
                    "b": f"b: bF1 undefined in standard of case binary (record {b.id[:12]})"}

def test_an_overview_of_no_table_ends_its_last_line_as_one_with_tables_does():
    """"No overview: ..." was the file's last line without a line break (``cat`` ran the prompt on)."""
    assert overview_markdown([], [], OVERVIEW_NOTE).endswith("or opensdi.\n")

def test_own_score_and_classifier_rows_have_no_pixel_values():
    recs = board()
    recs.append(make_record("alpha", case="image", task="image", dataset_fields=conditions(),
                            case_fields={"options": {"image_score": "detector"}},
                            metrics={"img_Acc": 0.61, "img_AP": 0.62}))
    classifier = json.loads(make_record("cls", case="image", task="image", dataset_fields=conditions(),
                                        metrics={"img_Acc": 0.9, "img_AP": 0.95}).to_json())
    classifier["detector"]["card"] = {"tasks": ["classification"]}  # no pixel output
    recs.append(ResultRecord.create(**classifier))
    t = only(recs)
    assert [r.label for r in t.rows][3:] == ["alpha (own image score)", "cls"] and t.rows[3].rank is None
    own, cls = t.rows[3], t.rows[4]
    assert own.own_score and own.detector == "alpha" and not cls.own_score
    assert own.cells["standard.image.img_AP"].value == 0.62 and cls.cells["standard.image.img_AP"].value == 0.95
    for row in (own, cls):
        for col in t.columns:
            cell = row.cells[col.key]
            assert (not cell.applicable and not cell.notes) == (col.task != "image"), (row.label, col.key)
    # no note for a value the detector cannot have; the benchmarks' image columns, which both could have, say
    # how to get them (one note per row: no cross-dataset records)
    assert len(t.notes) == 6
    assert {t.note(own.cells["cross-dataset.image.img_Acc.casia/test"].notes[0]).text,
            t.note(cls.cells["cross-dataset.image.img_Acc.casia/test"].notes[0]).text} == {
        f"no cross-dataset records for {name}: diffzoo run --detector {det} --suite cross-dataset --dataset mini "
        "--eval-dataset PATH:test" for name, det in (("alpha (own image score)", "alpha"), ("cls", "cls"))}


def test_label_maps_and_suite_versions_are_never_mixed():
    recs = board(("alpha",), sha="11") + board(("beta",), sha="22")
    recs.append(make_record("alpha", suite="distortions", suite_version="1", case="jpeg80.binary",
                            case_fields={"setting": "jpeg80"}, dataset_fields=conditions("11"), metrics={"mIoU": 0.1}))
    tables = build_overview(recs)
    by = {(t.group.key.label_map[:2], tuple(t.group.suites.items())): [r.label for r in t.rows] for t in tables}
    assert len(tables) == 3 and sorted(by.values()) == [["alpha"], ["alpha"], ["beta"]]
    older = next(t for t in tables if {s: str(v) for s, v in t.group.suites.items()} == {"distortions": "v1 (hdistort)"})
    assert older.group.key.label_map.startswith("11") and [c.key for c in older.columns] == [
        "robustness.binary.mIoU.mean", "robustness.binary.mIoU.worst"]
    assert "alpha has no distortions record of jpeg60.binary" in older.notes[0].text  # v1 is not averaged with v2
    newer = {t.group.key.label_map[:2]: t for t in tables if t is not older}
    assert newer["22"].rows[0].cells["standard.binary.mIoU"].value == 0.5  # beta's own, under its own map
    assert newer["22"].rows[0].cells["cross-dataset.binary.mIoU.casia/test"].value == 0.25  # trained under map 22
    assert newer["11"].group.name != newer["22"].group.name and newer["11"].id != newer["22"].id


def test_an_overview_of_older_suite_versions_names_them_in_its_title(tmp_path, capsys):
    """The tables of standard v2 and of v1 on one dataset were both titled "Overview: mini (fp)":
    two headings alike over other numbers of the same detector."""
    store = RecordStore(tmp_path / "s")
    for version, miou in (("1", 0.5), ("2", 0.55)):
        store.add(make_record("a", suite_version=version, metrics={"mIoU": miou}))
    [newer, older] = build_overview(store.load().records)
    assert newer.title.endswith(")") and older.title == f"{newer.title}, standard v1"
    code, text, _ = cli(capsys, "leaderboard", "publish", "--store", store.root, "--format", "md,html",
                        "--out", tmp_path / "out")
    assert code == 0, text
    index = (tmp_path / "out" / "index.html").read_text()
    assert re.findall(r"<h2><bdi>(Overview: .*?)</bdi>", index) == [newer.title, older.title]
    assert re.findall(r"^## (.*)", (tmp_path / "out" / "overview.md").read_text(), re.M) == [
        newer.title.removeprefix("Overview: "), older.title.removeprefix("Overview: ")]


def test_publish_writes_the_overview_in_md_csv_latex_escaping_names(tmp_path, capsys):
    evil = "x|y\n# z & 50% $"
    store = RecordStore(tmp_path / "store")
    for r in board(("alpha", "beta", evil)):
        store.add(r)
    out = tmp_path / "pub"
    code, text, _ = cli(capsys, "leaderboard", "publish", "--store", store.root, "--format", "md,csv,latex",
                        "--out", out)
    assert code == 0, text
    assert {"overview.md", "overview.csv", "overview.tex", "leaderboard.md"} <= {p.name for p in out.iterdir()}
    md = (out / "overview.md").read_text()
    assert "## mini (fp0001)" in md and "x\\|y\\\\n# z &amp; 50% \\$" in md
    assert not any(line.startswith("# z") for line in md.splitlines())
    table = [line for line in md.splitlines() if line.startswith("|")]
    assert len(table) == 2 + 3
    assert len({len(re.split(r"(?<!\\)\|", line)) for line in table}) == 1  # no cell break from the name
    assert "[1] x\\|y\\\\n# z &amp; 50% \\$ has no standard record of case semantic" in md
    lines = (out / "overview.csv").read_text().splitlines()
    rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    assert len(lines) == 1 + len(rows) == 1 + 3 * 17  # one line per row and column, none broken
    assert {r["detector"] for r in rows} == {"alpha", "beta", "x|y\\n# z & 50% $"}
    cell = next(r for r in rows if r["detector"] == "beta" and r["column"] == "standard.binary.mIoU")
    assert (float(cell["value"]), cell["status"], cell["overview_version"]) == (0.6, "value", "2")
    sdxl = next(r for r in rows if r["detector"] == "beta" and r["column"].endswith("F1@editor=sdxl.cocoglide/test"))
    assert (sdxl["benchmark"], sdxl["label"], float(sdxl["value"])) == ("cocoglide/test", "sdxl F1", 0.5)
    assert float(cell["ci_half"]) == pytest.approx(0.03)
    missing = next(r for r in rows if r["detector"] == "beta" and r["column"] == "unseen.binary.mIoU.mean")
    assert (missing["value"], missing["status"]) == ("", "missing") and "Glide_Kolors.binary" in missing["note"]
    tex = (out / "overview.tex").read_text()
    assert r"x\textbar{}y\textbackslash{}n\# z \& 50\% \$" in tex and "& 50%" not in tex
    assert r"\multicolumn{5}{c}{standard}" in tex and r"--- {[}1{]}" in tex and r"\toprule" in tex


def test_fixed_and_calibrated_rows_of_one_model_stand_apart_in_every_output(tmp_path, capsys):
    calibrated = {"mode": "calibrated", "calibrated_on": "calibrated on calib (10 images)",
                  "source": "calibrated on calib (10 images)"}
    store = RecordStore(tmp_path / "store")
    for r in (make_record("alpha", dataset_fields=conditions(), metrics={"mIoU": 0.5}),
              make_record("alpha", case="semantic", task="semantic", dataset_fields=conditions(),
                          metrics={"mIoU": 0.3}),
              make_record("alpha", case="image", task="image", dataset_fields=conditions(), metrics={"img_Acc": 0.7}),
              make_record("alpha", dataset_fields=conditions(), metrics={"mIoU": 0.6}, threshold_policy=calibrated,
                          date="2026-12-01T00:00:00+00:00")):  # the newer record: never taken for the fixed row
        store.add(r)
    out = tmp_path / "pub"
    code, text, _ = cli(capsys, "leaderboard", "publish", "--store", store.root, "--format", "md,csv,latex,json,paper",
                        "--out", out)
    assert code == 0, text
    t = only(store.load().records)
    assert [(r.label, r.cells["standard.binary.mIoU"].value) for r in t.rows] == [
        ("alpha (calibrated)", 0.6), ("alpha", 0.5)]
    assert t.note(t.rows[0].cells["standard.image.img_Acc"].notes[0]).text == (
        "alpha (calibrated) has no standard record of case image: diffzoo run --detector alpha --suite standard "
        "--dataset mini --thresholds calibrated")
    # a semantic model decides by argmax under the fixed image rule: its number is the fixed row's
    assert not t.rows[0].cells["standard.semantic.mIoU"].applicable and t.rows[1].cells["standard.semantic.mIoU"].value
    for name, more in (("leaderboard.md", ["alpha"] * 2), ("overview.md", [])):  # the image and semantic tables
        rows = [line.split("|")[2].strip() for line in (out / name).read_text().splitlines()
                if line.startswith("|") and "alpha" in line]
        assert rows == ["alpha (calibrated)", "alpha", *more], name
    for name in ("leaderboard.csv", "overview.csv"):
        assert {r["detector"] for r in csv.DictReader(io.StringIO((out / name).read_text()))} == {
            "alpha", "alpha (calibrated)"}, name
    for name in ("leaderboard.tex", "overview.tex"):
        assert "& alpha (calibrated) &" in (out / name).read_text() and "& alpha &" in (out / name).read_text()
    [table] = [t for t in json.loads((out / "leaderboard.json").read_text())["tables"] if t["case"]["name"] == "binary"]
    assert [r["detector"] for r in table["rows"]] == ["alpha (calibrated)", "alpha"]
    paper = (out / "paper.md").read_text().splitlines()
    assert "- alpha (calibrated): thresholds calibrated on calib (10 images)" in paper
    assert [line.split("|")[2].strip() for line in paper if line.startswith("| —") and "| alpha" in line][:3] == [
        "alpha", "alpha (calibrated)", "alpha"]  # Table 2a: each rule's own row; 2b: the fixed one's alone


def test_tied_rows_share_a_rank_in_every_output(tmp_path, capsys):
    """Standard competition ranking: equal primary values share the first rank, the next row skips (1, 1, 3)."""
    store = RecordStore(tmp_path / "store")
    for det, miou in (("gamma", 0.5), ("beta", 0.6), ("alpha", 0.6)):
        store.add(make_record(det, dataset_fields=conditions(), metrics={"mIoU": miou}))
    out = tmp_path / "pub"
    code, text, _ = cli(capsys, "leaderboard", "publish", "--store", store.root, "--format", "md,csv,latex,json,html",
                        "--out", out)
    assert code == 0, text
    ranks = [("1", "alpha"), ("1", "beta"), ("3", "gamma")]
    for name in ("leaderboard.md", "overview.md"):
        assert [tuple(c.strip() for c in line.split("|")[1:3]) for line in (out / name).read_text().splitlines()
                if line.startswith("| ") and line.split("|")[2].strip() in ("alpha", "beta", "gamma")] == ranks, name
    for name in ("leaderboard.csv", "overview.csv"):
        assert sorted({(r["rank"], r["detector"]) for r in csv.DictReader(io.StringIO((out / name).read_text()))
                       if r["detector"] in ("alpha", "beta", "gamma")}) == ranks, name
    for name in ("leaderboard.tex", "overview.tex"):
        assert [tuple(c.strip() for c in line.split("&")[:2]) for line in (out / name).read_text().splitlines()
                if line.split("&")[1:2] and line.split("&")[1].strip() in ("alpha", "beta", "gamma")] == ranks, name
    [table] = json.loads((out / "leaderboard.json").read_text())["tables"]
    assert [(str(r["rank"]), r["detector"]) for r in table["rows"]] == ranks
    site = (out / "index.html").read_text()
    assert re.findall(r'data-detector="(\w+)" data-rank="(\d)"', site) == [(d, r) for r, d in ranks]
    assert [(r.rank, r.label) for r in only(store.load().records).rows] == [(1, "alpha"), (1, "beta"), (3, "gamma")]

def test_a_missing_value_of_released_weights_says_the_run_of_that_release():
    def released(**kw) -> ResultRecord:
        data = json.loads(make_record("dinov3iml.tiny", dataset_fields=conditions(), **kw).to_json())
        data["detector"].update(checkpoint_source="released", release={
            "name": "cat-lora", "source": "https://example.org", "trained_on": "CAT-Net",
            "files": [{"name": "w.pth", "sha256": "cd" * 32}]})
        return ResultRecord.create(**data)

    t = only([released(), released(suite="distortions", case="jpeg80.binary", case_fields={"setting": "jpeg80"})])
    [row] = t.rows
    assert row.label == "dinov3iml.tiny [released:cat-lora]"
    assert t.note(row.cells["robustness.binary.mIoU.mean"].notes[0]).text.endswith(
        ": diffzoo run --detector dinov3iml.tiny --weights released:cat-lora --suite distortions --dataset mini")


def test_a_case_whose_train_is_null_reads_as_trained_on_every_editor():
    """``case.train: null`` (a record another tool wrote) is a case whose model held no editor out,
    as every other reader takes it (:func:`~diffzoo.leaderboard.index.held_out`): never an internal error."""
    records = [make_record("det", suite="unseen-generators", case=f"{pair}-{held}",
                           case_fields={"setting": pair, "train": None if held == "seen" else
                                        {"exclude_editors": ["sd2"]}}) for pair in ("p1",) for held in ("seen", "held")]
    [table] = build_overview(records)
    assert [c.key for c in table.columns if c.group == "unseen editors"] and table.rows[0].label == "det"


def test_a_case_whose_options_are_not_a_mapping_publishes(tmp_path, capsys):
    """``case.options`` of another JSON type (a list, from another tool) is a case with no options, as
    :meth:`RecordBody.case_option` reads it: the row is the detector's, never an internal error."""
    store = RecordStore(tmp_path / "store")
    store.add(make_record("segformer.b0", case_fields={"options": ["x"]}))
    code, _, err = cli(capsys, "leaderboard", "publish", "--store", tmp_path / "store", "--out", tmp_path / "site")
    assert code == 0, err
    assert "| segformer.b0 |" in (tmp_path / "site" / "leaderboard.md").read_text()
