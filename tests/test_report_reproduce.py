"""``diffzoo report reproduce``: every number a detector card's release publishes, beside the
newest record of that detector and release on the dataset that is the benchmark, in the
metric of the same definition; diffzoo's metrics of other definitions on lines of their own,
never with a published value or a Δ; the run to make where no record is."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from diffzoo.harness.core.errors import ConfigError
from diffzoo.harness.core.plugins import get_registry
from diffzoo.leaderboard.paper.published import METRICS_FILE, parse_metrics
from diffzoo.leaderboard.paper.reproduce import (
    HEAD,
    parse_benchmark_names,
    parse_release_metrics,
    release_numbers,
    released_apart,
    reproduce_rows,
)
from diffzoo.leaderboard.paper.values import read_text

from helpers.classic import make_columbia
from helpers.cli import cli
from helpers.dinov3iml import RELEASE, released
from helpers.records import make_record

pytestmark = pytest.mark.isolated_cache

TINY = "dinov3iml.tiny"
RUN = ["run", "--detector", TINY, "--bootstrap", "0", "--device", "cpu", "--weights", f"released:{RELEASE}"]


def table(text: str) -> list[list[str]]:
    """The report's table rows as cells (escaped pipes kept inside their cell)."""
    rows = []
    for line in text.splitlines():
        if line.startswith("| ") and not line.startswith("| detector"):
            rows.append([c.strip().replace("\\_", "_") for c in re.split(r"(?<!\\)\|", line)[1:-1]])
    return rows


def line(rows: list[list[str]], detector: str, benchmark: str, metric: str) -> list[str]:
    hits = [r for r in rows if r[0] == detector and r[2] == benchmark and r[3].startswith(metric)]
    assert len(hits) == 1, (detector, benchmark, metric, hits)
    return hits[0]


@pytest.fixture
def store(capsys, tmp_path) -> Path:
    """Records of the tiny DINOv3-IML release on a tiny Columbia: the cross-dataset suite (which
    carries F1_benco, the published definition) and the standard suite (F1_oracle)."""
    data = make_columbia(tmp_path / "Columbia")
    weights = released(tmp_path / "dl")
    out = tmp_path / "store"
    code, _, err = cli(capsys, *RUN, "--checkpoint", weights, "--suite", "cross-dataset", "--eval-dataset", data,
                       "--out", out)
    assert code == 0, err
    code, _, err = cli(capsys, *RUN, "--checkpoint", weights, "--suite", "standard", "--dataset", data,
                       "--dataset-option", "split=val", "--out", out)
    assert code == 0, err
    return out


def records(out: Path) -> dict[tuple[str, str], dict]:
    docs = [json.loads(p.read_text()) for p in (out / "records").glob("*.json")]
    return {(d["suite"]["name"], d["case"]["name"]): d for d in docs}


def test_the_columbia_number_is_set_beside_ours_in_the_same_definition_and_others_apart(capsys, store):
    code, text, err = cli(capsys, "report", "reproduce", "--store", store)
    assert code == 0, err
    rows = table(text)
    ours = records(store)
    benco = ours[("cross-dataset", "binary")]["metrics"]["F1_benco"]
    main = line(rows, TINY, "Columbia", "dinov3iml_pixel_F1 (= F1_benco)")
    assert main[1] == RELEASE and main[4] == f"{100 * benco:.1f}" and main[5] == "94.1"
    assert main[6] == f"{100 * (benco - 0.941):+.1f}"  # Δ = ours − published, in points
    assert "published on Columbia (CAT protocol test set)" in main[7] and "columbia:test" in main[7]
    assert "same definition as diffzoo's F1_benco" in main[7]
    # this copy is not the published set: the note says so with both counts
    assert "2 tampered and 2 authentic images, the published set 180 and 183" in main[7]
    # the other definitions: ours only, never a published value or a Δ beside them
    pooled = line(rows, TINY, "Columbia", "F1 (diffzoo, another definition)")
    oracle = line(rows, TINY, "Columbia", "F1_oracle (diffzoo, another definition)")
    assert oracle[4] == f"{100 * ours[('standard', 'binary')]['metrics']['F1_oracle']:.1f}"
    assert "columbia:val" in oracle[7] and "never compared" in oracle[7]
    assert pooled[4] != "—" and "pooled over every pixel" in pooled[7]
    for row in rows:
        if "another definition" in row[3]:
            assert row[5] == "—" and row[6] == "—", row
        elif row[5] != "—":
            assert "(diffzoo" not in row[3]  # a published number only ever beside its own definition
    # a benchmark without a record names the run that would give ours
    nist = line(rows, TINY, "NIST16", "dinov3iml_pixel_F1")
    assert nist[4] == "—" and nist[5] == "63.6" and nist[6] == "—"
    assert (f"diffzoo run --detector {TINY} --weights released:{RELEASE} --suite cross-dataset --eval-dataset "
            "PATH/TO/NIST16") in nist[7]
    average = line(rows, TINY, "4-set average", "dinov3iml_pixel_F1")
    assert "no diffzoo dataset is 4-set average" in average[7]
    # the full-size card's numbers are listed too, without records
    assert line(rows, "dinov3iml.l", "Columbia", "dinov3iml_pixel_F1")[4] == "—"
    assert "- dinov3iml\\_pixel\\_F1: " in text and "(diffzoo: F1\\_benco)" in text


def test_mvss_net_image_numbers_have_no_diffzoo_metric_of_their_definition(capsys, tmp_path):
    (tmp_path / "store" / "records").mkdir(parents=True)
    code, text, err = cli(capsys, "report", "reproduce", "--store", tmp_path / "store")
    assert code == 0, err
    rows = table(text)
    auc = line(rows, "benco.mvss-net", "Columbia", "mvss_image_AUC")
    assert auc[4] == "—" and auc[5] == "98" and "no diffzoo metric of that definition" in auc[7]
    assert "maximum of the predicted map" in auc[7]
    # diffzoo's img_AUC ranks by another score: its own line, with the run that gives it
    img = line(rows, "benco.mvss-net", "Columbia", "img_AUC (diffzoo, another definition)")
    assert img[5] == "—" and "--suite cross-dataset --eval-dataset PATH/TO/Columbia" in img[7]
    # CASIAv1+ is not diffzoo's casia1: never matched by its name
    plus = line(rows, "benco.mvss-net", "CASIAv1plus", "mvss_image_AUC")
    assert "no diffzoo dataset is CASIAv1plus" in plus[7] and "COREL" in plus[7]
    # a tiny card without records is left out (its family's full card lists the same release)
    assert not any(r[0] == TINY for r in rows)


def _release_record(metrics: dict, *, date: str, release: str = RELEASE, suite: str = "cross-dataset",
                    case: str = "binary", dataset: str = "columbia", **extra):
    from diffzoo.harness.records.document import ResultRecord

    doc = json.loads(make_record(TINY, suite=suite, case=case, dataset=dataset, metrics=metrics, date=date,
                                 case_fields={"split": "test"}, **extra).to_json())
    doc["detector"].update(checkpoint_source="released", release={"name": release, "files": []})
    return ResultRecord.create(**doc)  # sealed anew: record_id and digests are derived, never copied


def test_only_the_newest_clean_record_of_that_release_on_that_dataset_counts():
    numbers = [n for n in release_numbers([get_registry().get("detector", TINY).card])
               if n.number.benchmark == "Columbia"]
    recs = [_release_record({"F1_benco": 0.30}, date="2026-11-01T00:00:00+00:00"),
            _release_record({"F1_benco": 0.50}, date="2026-11-02T00:00:00+00:00", suite="standard"),
            _release_record({"F1_benco": 0.99}, date="2026-11-03T00:00:00+00:00", release="other-release"),
            _release_record({"F1_benco": 0.98}, date="2026-11-04T00:00:00+00:00", dataset="coverage"),
            _release_record({"F1_benco": 0.97}, date="2026-11-05T00:00:00+00:00", suite="distortions",
                            case="jpeg60.binary"),
            make_record(TINY, suite="cross-dataset", dataset="columbia", metrics={"F1_benco": 0.96},
                        date="2026-11-06T00:00:00+00:00")]  # the model trained here, not the release
    rows = table("\n".join("| " + " | ".join(r) + " |" for r in reproduce_rows(numbers, recs)))
    main = line(rows, TINY, "Columbia", "dinov3iml_pixel_F1")
    assert main[4] == "50.0" and main[6] == "-44.1" and "suite standard" in main[7]
    assert len(HEAD) == len(main)


def test_a_calibrated_record_of_the_release_is_never_set_beside_its_fixed_threshold_number():
    numbers = [n for n in release_numbers([get_registry().get("detector", TINY).card])
               if n.number.benchmark == "Columbia"]
    calibrated = {"mode": "calibrated", "calibrated_on": "calibrated on calib (10 images)",
                  "source": "calibrated on calib (10 images)"}
    newer = _release_record({"F1_benco": 0.95}, date="2026-11-09T00:00:00+00:00", threshold_policy=calibrated)
    fixed = _release_record({"F1_benco": 0.30}, date="2026-11-01T00:00:00+00:00")
    rows = table("\n".join("| " + " | ".join(r) + " |" for r in reproduce_rows(numbers, [fixed, newer])))
    main = line(rows, TINY, "Columbia", "dinov3iml_pixel_F1")
    assert main[4] == "30.0" and fixed.id in main[7]
    # with only the calibrated record: no line reads it, and the report says why and what to run
    assert line(table("\n".join("| " + " | ".join(r) + " |" for r in reproduce_rows(numbers, [newer]))),
                TINY, "Columbia", "dinov3iml_pixel_F1")[4] == "—"
    assert released_apart(numbers, [newer]) == [
        f"- **not compared**: {TINY} \\[released:{RELEASE}\\], 1 record(s): its thresholds are calibrated "
        "(--thresholds calibrated); the published numbers use fixed ones: run it without --thresholds calibrated"]

def test_the_benchmark_and_metric_tables_are_checked_line_by_line():
    names = parse_benchmark_names(read_text(Path(__file__).parents[1] / "diffzoo" / "leaderboard" / "paper"
                                            / "release_benchmarks.csv", "t"))
    assert names["Columbia"].dataset == "columbia" and names["COVER"].dataset == "coverage"
    assert names["IMD"].dataset == names["IMD2020"].dataset == "imd2020" and not names["CASIAv1plus"].dataset
    with pytest.raises(ConfigError, match=r"b\.csv, data line 2: give the dataset"):
        parse_benchmark_names("# t\nbenchmark,dataset,note\nDEFACTO,,\n", "b.csv")
    metrics = parse_metrics(read_text(METRICS_FILE, "t"))
    with pytest.raises(ConfigError, match="not a diffzoo metric of another definition"):
        parse_release_metrics("# t\nsource,metric,published_metric,other_definitions\n"
                              "s,pixel F1,dinov3iml_pixel_F1,F1_benco\n", metrics, "m.csv")
    with pytest.raises(ConfigError, match="'pooled' is not defined"):
        parse_release_metrics("# t\nsource,metric,published_metric,other_definitions\ns,pixel F1,pooled,\n",
                              metrics, "m.csv")


def test_out_writes_the_markdown_and_claims_the_folder(capsys, tmp_path):
    (tmp_path / "store" / "records").mkdir(parents=True)
    code, text, err = cli(capsys, "report", "reproduce", "--store", tmp_path / "store", "--out", tmp_path / "rep")
    assert code == 0, err
    written = (tmp_path / "rep" / "reproduce.md").read_text(encoding="utf-8")
    assert written.startswith("# Released checkpoints, reproduced") and written.strip() in text
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep")
    code, text, err = cli(capsys, "report", "reproduce", "--store", tmp_path / "store", "--out", foreign)
    assert code == 2 and "--force" in err and not (foreign / "reproduce.md").exists()
    assert text == ""  # refused before the table is printed, not after it
    (tmp_path / "afile").write_text("x")
    code, text, err = cli(capsys, "report", "reproduce", "--store", tmp_path / "store", "--out", tmp_path / "afile")
    assert (code, text, err) == (2, "", f"error: --out {tmp_path / 'afile'} exists and is not a folder; choose a "
                                        "folder\n")
    code, _, err = cli(capsys, "report", "reproduce", "--store", tmp_path / "store", "--out", foreign, "--force")
    assert code == 0, err
    assert (foreign / "reproduce.md").is_file() and (foreign / "notes.txt").read_text() == "keep"
