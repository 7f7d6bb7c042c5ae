"""Rows made under different label maps, splits or evaluator versions are
never ranked in one table without a column saying so: publishing refuses
them unless --allow-mixed, which adds the distinguishing columns."""

from __future__ import annotations

import csv
import io
import json

import pytest

from diffzoo.harness.core.errors import ConfigError
from diffzoo.harness.records.document import ResultRecord
from diffzoo.leaderboard.index import check_mixing, record_conditions
from diffzoo.leaderboard.layouts.cases import build_tables
from diffzoo.leaderboard.render.console import case_tables
from diffzoo.leaderboard.render.text import publish, to_csv, to_markdown
from diffzoo.leaderboard.store import RecordStore
from diffzoo.leaderboard.versions import resolve

from helpers.cli import cli
from helpers.records import make_record

NAMES = ["background", "sd2", "sdxl"]


def under(sha: str, source: str, split: str = "diffzoo-hash-v1-seed0-val20") -> dict:
    """A record's ``dataset`` made under label map ``sha`` (x32) from ``source`` and ``split``."""
    return {"name": "mini", "fingerprint": "fp0001",
            "label_map": {"names": NAMES, "sha256": sha * 32, "source": source, "verified": True},
            "split": {"id": split, "source": "diffzoo"}}


def record(detector: str, dataset: dict, **kw) -> ResultRecord:
    """``make_record`` with its ``dataset`` field replaced (label map and split)."""
    data = json.loads(make_record(detector, **kw).to_json())
    data["dataset"] = dataset
    return ResultRecord.create(**data)


def two_maps(tmp_path):
    store = RecordStore(tmp_path / "store")
    a = record("a", under("11", "a.json"))
    b = record("a", under("22", "b.json"), metrics={**a.metrics, "mIoU": 0.7})
    assert a.id != b.id  # the label map is part of the identity
    store.add(a)
    store.add(b)
    return store, a, b


def test_publish_refuses_rows_differing_only_in_label_map(tmp_path, capsys):
    store, _, _ = two_maps(tmp_path)
    code, _, err = cli(capsys, "leaderboard", "publish", "--store", store.root, "--out", tmp_path / "pub")
    assert code == 2 and err.count("error") == 1
    text = " ".join(err.split())
    assert ("standard v1 / binary on mini: label map 111111111111 (a.json) [a], 222222222222 (b.json) [a]"
            in text)
    assert "--allow-mixed" in text and "split" not in text.split("mini:")[1].split(".")[0]
    assert not (tmp_path / "pub" / "leaderboard.md").exists()
    code, _, err = cli(capsys, "report", "paper", "--store", store.root, "--out", tmp_path / "pub")
    assert code == 2 and "standard v1 / binary on mini: label map 111111111111 (a.json) [a], 222222222222 " \
        "(b.json) [a]" in " ".join(err.split())  # the one mixing check, for every format


def test_allow_mixed_adds_a_label_map_column_with_both(tmp_path, capsys):
    store, a, b = two_maps(tmp_path)
    out = tmp_path / "pub"
    code, text, _ = cli(capsys, "leaderboard", "publish", "--store", store.root, "--out", out,
                        "--format", "md,csv,latex,json,html", "--allow-mixed")
    assert code == 0, text
    md = (out / "leaderboard.md").read_text()
    table = [[c.strip() for c in line.strip("|").split(" | ")] for line in md.splitlines() if line.startswith("|")]
    head = next(cells for cells in table if cells[:2] == ["#", "detector"])
    assert head[-4:] == ["label map", "checkpoint", "git", "date"]
    rows = [cells for cells in table if cells[:2] in (["1", "a"], ["2", "a"])]
    assert [r[-4] for r in rows] == ["222222222222 (b.json)", "111111111111 (a.json)"]  # by mIoU
    assert "**mixed: label map (see the columns)**" in md and "split diffzoo-hash-v1-seed0-val20" in md
    lines = list(csv.DictReader(io.StringIO((out / "leaderboard.csv").read_text())))
    assert {(r["record_id"], r["label_map"]) for r in lines} == {
        (a.id, "111111111111 (a.json)"), (b.id, "222222222222 (b.json)")}
    assert "label map" in (out / "leaderboard.tex").read_text()
    html = (out / "index.html").read_text()
    assert '<th class="condition">label map</th>' in html and "222222222222 (b.json)" in html


def test_agreeing_rows_name_label_map_and_split_in_the_header_line(tmp_path):
    store = RecordStore(tmp_path)
    store.add(record("a", under("11", "a.json")))
    store.add(record("b", checkpoint="cd" * 32, dataset=under("11", "a.json")))
    sel = resolve(None, store)
    [table] = build_tables(sel.records)
    check_mixing([table])  # nothing mixed: no error
    assert table.mixed == [] and table.shared["label map"] == "111111111111 (a.json)"
    md = to_markdown(sel, [table])
    assert "metrics v2 · label map 111111111111 (a.json) · split diffzoo-hash-v1-seed0-val20" in md
    assert "- **label maps**: 111111111111 (a.json)" in md and "- **splits**: diffzoo-hash-v1-seed0-val20" in md
    assert not [line for line in md.splitlines() if line.startswith("|") and "label map" in line]  # no column


def test_splits_differing_are_refused_and_records_before_label_maps_say_unknown(tmp_path):
    old = make_record("old")  # written before records carried a label map and split
    assert record_conditions(old)["label map"] == "unknown" and record_conditions(old)["split"] == "unknown"
    native = record("new", checkpoint="cd" * 32, dataset=under("11", "a.json", split="native"))
    tables = build_tables([old, native])
    with pytest.raises(ConfigError) as exc:
        check_mixing(tables)
    assert ("standard v1 / binary on mini: label map 111111111111 (a.json) [new], unknown [old]; "
            "split native [new], unknown [old]") in str(exc.value)
    check_mixing(tables, allow_mixed=True)
    rows = list(csv.DictReader(io.StringIO(to_csv(resolve(None, _store_of(tmp_path, old, native)), tables))))
    assert {(r["detector"], r["split"]) for r in rows} == {("old", "unknown"), ("new", "native")}


def _store_of(tmp_path, *records) -> RecordStore:
    store = RecordStore(tmp_path / "s")
    for r in records:
        store.add(r)
    return store


def test_publish_api_refuses_and_allows(tmp_path):
    store, _, _ = two_maps(tmp_path)
    sel = resolve(None, store)
    with pytest.raises(ConfigError, match="label map 111111111111"):
        publish(sel, "json", tmp_path / "pub")
    assert publish(sel, "json", tmp_path / "pub", allow_mixed=True).exists()


def test_console_tables_show_the_column_instead_of_refusing(tmp_path):
    from rich.console import Console

    _, a, b = two_maps(tmp_path)
    console = Console(width=300, record=True)
    for t in case_tables([a, b]):
        console.print(t)
    text = console.export_text()
    assert "label map" in text and "111111111111 (a.json)" in text and "222222222222 (b.json)" in text
    console = Console(width=300, record=True)
    for t in case_tables([a]):
        console.print(t)
    title = " ".join(console.export_text().split())
    assert "metrics v2; label map 111111111111 (a.json) · split diffzoo-hash-v1-seed0-val20 · recipe unknown)" in title


def test_evaluator_versions_still_get_their_own_tables(tmp_path):
    """The existing rule: two suite or metric versions never share a table, so
    they never mix inside one (each table names its versions)."""
    tables = build_tables([make_record("a", metrics_version="1"),
                           make_record("a", suite_version="2", metrics_version="1"),
                           make_record("a", metrics_version="2")])
    assert sorted((t.key.suite_version, t.key.metrics_version) for t in tables) == [
        ("1", "1"), ("1", "2"), ("2", "1")]
    check_mixing(tables)


def test_diff_says_when_a_row_moved_to_another_label_map(tmp_path):
    from diffzoo.leaderboard.diff import diff
    from diffzoo.leaderboard.versions import Selection

    _, a, b = two_maps(tmp_path)
    [table] = diff(Selection("A", [a]), Selection("B", [b])).tables
    [row] = table.rows
    assert row.status == "changed"
    assert row.conditions == ["label map 111111111111 (a.json) -> 222222222222 (b.json)"]
    assert [(c.metric, c.before, c.after) for c in row.changes] == [("mIoU", 0.6, 0.7)]


def test_runs_under_a_permuted_label_map_are_kept_apart_end_to_end(tmp_path, capsys, diffseg_folder, caplog):
    """The same images under two label maps (the data's labels.json, then the editors in the other
    order) are two datasets: different fingerprints and record ids, separate tables each naming its
    map, and the paper report gives each its own section, never one table ranking them together."""
    import logging

    from diffzoo.harness.core import runlog

    fast = ["--detector", "segformer.tiny", "--suite", "standard", "--iterations", "3", "--batch-size", "2",
            "--crop-size", "32", "--device", "cpu", "--no-pretrained", "--bootstrap", "0"]
    out = tmp_path / "runs"
    code, _, err = cli(capsys, "run", *fast, "--dataset", diffseg_folder, "--out", out)
    assert code == 0, err
    code, _, err = cli(capsys, "run", *fast, "--dataset", diffseg_folder, "--out", out, "--force",
                       "--labels", "background,sdxl,sd2")
    assert code == 0, err
    recs = [ResultRecord.read(p) for p in sorted((out / "records").glob("*.json"))]
    maps = {r.body.dataset.label_map["sha256"]: r.body.dataset.label_map["names"] for r in recs}
    assert sorted(maps.values()) == [["background", "sd2", "sdxl"], ["background", "sdxl", "sd2"]]
    assert len({r.body.dataset.fingerprint for r in recs}) == 2 and len({r.id for r in recs}) == len(recs) == 6
    code, _, err = cli(capsys, "leaderboard", "publish", "--store", out, "--out", tmp_path / "pub")
    assert code == 0, err
    md = (tmp_path / "pub" / "leaderboard.md").read_text()
    short = {sha[:12] for sha in maps}
    binary = [part.split("\n\n")[1] for part in md.split("## standard v2 / binary on ")[1:]]  # info lines
    assert len(binary) == 2 and {next(s for s in short if f"label map {s}" in line) for line in binary} == short
    code, _, err = cli(capsys, "report", "paper", "--store", out, "--out", tmp_path / "paper")
    assert code == 0, err  # two datasets: a section each, never one table ranking them together
    paper = (tmp_path / "paper" / "paper.md").read_text()
    sections = [part for part in paper.split("\n## ")[1:] if "(fingerprint " in part.splitlines()[0]]
    assert len(sections) == 2 and {next(s for s in short if f"label map {s}" in part) for part in sections} == short

    # without a label map the default order is a guess, and the warning names the fix
    (diffseg_folder / "labels.json").unlink()
    said = runlog._SAID
    runlog._SAID = set()
    try:
        with caplog.at_level(logging.WARNING):
            from diffzoo import open_dataset

            assert open_dataset(str(diffseg_folder)).provenance()["label_map"]["source"] == "default (unverified)"
    finally:
        runlog._SAID = said
    assert "UNVERIFIED" in caplog.text and "--labels FILE" in caplog.text
