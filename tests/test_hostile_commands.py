"""Odd inputs to ``diffzoo data find`` / ``--eval-dataset catalog:ROOT`` and ``diffzoo report
reproduce``: each gives one clear line or a listing that says what it left out, never a
traceback, never the current folder for an empty ROOT, never a number of another metrics
version beside a published one."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from diffzoo.harness.core.plugins import get_registry
from diffzoo.harness.metrics import METRICS_VERSION
from diffzoo.leaderboard.paper.reproduce import release_numbers, reproduce_rows

from helpers.cli import cli, one_line, one_line_exit_2
from helpers.data import make_tpgt, tpgt_image
from helpers.dinov3iml import RELEASE
from helpers.images import save_image
from helpers.records import make_record

TINY = "dinov3iml.tiny"
FAST = ["--iterations", "2", "--batch-size", "2", "--crop-size", "32", "--bootstrap", "0", "--device", "cpu"]


# -- data find / catalog:ROOT ---------------------------------------------------------------------
def test_an_empty_root_is_refused_not_read_as_the_current_folder(capsys, tmp_path, monkeypatch):
    make_tpgt(tmp_path / "here" / "tpgt")
    monkeypatch.chdir(tmp_path / "here")  # "" would be "." here: a dataset to list by mistake
    one_line_exit_2(*cli(capsys, "data", "find", ""), "no folder given", "catalog:DIR")
    one_line_exit_2(*cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "cross-dataset", "--dataset",
                         "mini", "--eval-dataset", "catalog:", "--plan", *FAST), "no folder given")


def test_a_root_given_with_a_tilde_lists_its_datasets(capsys, tmp_path, monkeypatch):
    make_tpgt(tmp_path / "home" / "data" / "tpgt")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    code, stdout, stderr = cli(capsys, "data", "find", "~/data")  # quoted: the shell leaves ~ to diffzoo
    assert code == 0, stderr
    assert "tpgt" in stdout and "internal error" not in stderr


def _crashing_sniff(monkeypatch, adapter: str, on: str) -> None:
    """Make ``adapter``'s sniffer raise a TypeError (a plugin's bug) on a path named ``on``."""
    target = get_registry().get("dataset", adapter).load()  # a class or a factory with a sniff
    real = target.sniff

    def sniff(path):
        if Path(path).name == on:
            raise TypeError("sniffer bug")
        return real(path)

    monkeypatch.setattr(target, "sniff", staticmethod(sniff) if isinstance(target, type) else sniff)


def test_a_sniffer_that_crashes_on_one_folder_does_not_end_the_listing(capsys, tmp_path, monkeypatch):
    root = tmp_path / "root"
    make_tpgt(root / "good")
    make_tpgt(root / "odd")  # a dataset a later adapter (tpgt) still recognises
    (root / "junk").mkdir()
    _crashing_sniff(monkeypatch, "brgen", "odd")  # brgen: asked first (name order)
    _crashing_sniff(monkeypatch, "casia1", "junk")
    code, stdout, stderr = cli(capsys, "data", "find", root, "--json", "--verbose")
    assert code == 0, stderr
    catalog = json.loads(stdout)
    assert [d["path"] for d in catalog["datasets"]] == [str(root / "good"), str(root / "odd")]
    why = {p["path"]: p["why"] for p in catalog["passed"]}
    assert why[str(root / "junk")].endswith("dataset adapter casia1 failed to look at it (TypeError: sniffer bug)")


def test_a_dataset_whose_adapter_raises_on_opening_is_listed_as_not_opened(capsys, tmp_path, monkeypatch):
    import diffzoo.harness.run.catalog as catalog

    root = tmp_path / "root"
    make_tpgt(root / "a")
    make_tpgt(root / "b")
    real = catalog.open_recognised

    def opening(found, path, options, flag):
        if Path(path).name == "b":
            raise KeyError("labels")  # an adapter's bug on one dataset
        return real(found, path, options, flag)

    monkeypatch.setattr(catalog, "open_recognised", opening)
    code, stdout, stderr = cli(capsys, "data", "find", root, "--json")
    assert code == 0, stderr
    found = json.loads(stdout)
    assert [d["path"] for d in found["datasets"]] == [str(root / "a")]
    assert found["broken"] == [{"path": str(root / "b"), "error": "tpgt: KeyError: 'labels'"}]


def test_a_root_that_cannot_be_listed_is_an_error_not_an_empty_listing(capsys, tmp_path, monkeypatch):
    root = tmp_path / "root"
    root.mkdir()
    real = os.scandir

    def scandir(path="."):
        if Path(path) == root:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)  # as a folder without read permission (tests run as root)
    code, stdout, stderr = cli(capsys, "data", "find", root)
    assert code == 1 and "no dataset found" not in stdout
    assert f"{root}: cannot list the folder (Permission denied)" in one_line(stderr)
    assert "Traceback" not in stderr and "internal error" not in stderr


def test_a_folder_that_cannot_be_listed_is_said_once_however_many_adapters_look(capsys, caplog, tmp_path,
                                                                                 monkeypatch):
    root = tmp_path / "root"
    (root / "locked").mkdir(parents=True)
    make_tpgt(root / "tpgt")
    def refusing(real):
        def locked(path="."):
            if Path(path) == root / "locked":
                raise PermissionError(13, "Permission denied", str(path))
            return real(path)
        return locked

    for lister in ("scandir", "listdir"):  # pathlib's iterdir and os.walk list through one or the other
        monkeypatch.setattr(os, lister, refusing(getattr(os, lister)))  # as a folder without read permission
    code, stdout, stderr = cli(capsys, "data", "find", root)
    assert code == 0 and "tpgt" in stdout, stderr
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert said.count(f"{root / 'locked'}: cannot list the folder ([Errno 13] Permission denied: "
                      f"'{root / 'locked'}')") == 1, said


def test_an_unreadable_data_file_in_a_folder_is_named_not_read_past(capsys, tmp_path):
    """`datasets` passes over an empty .arrow and reads the folder's PNGs as an image folder: the
    error was "rows need columns image, mask", naming no file."""
    root = tmp_path / "root"
    for i in range(2):
        save_image(root / f"{i}.png", tpgt_image())
    (root / "notes.arrow").write_bytes(b"")
    code, stdout, stderr = cli(capsys, "data", "info", root)
    assert (code, one_line(stderr)) == (1, f"error: {root / 'notes.arrow'}: not a readable .arrow file (empty, "
                                           f"truncated or of another format); move it out of {root} or replace it")


def test_a_dataset_not_opened_is_said_once(capsys, caplog, tmp_path):
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "train.zip").write_bytes(b"not a zip at all")
    make_tpgt(root / "tpgt")
    with caplog.at_level(logging.INFO):
        code, stdout, stderr = cli(capsys, "data", "find", root)
    assert code == 0, stderr
    assert "tpgt" in stdout and one_line(stdout).count("not opened:") == 1
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING and "not opened" in r.getMessage()]


def test_a_catalog_with_a_broken_dataset_warns_once_and_evaluates_the_others(capsys, caplog, tmp_path):
    root = tmp_path / "root"
    make_tpgt(root / "tpgt")
    (root / "broken").mkdir()
    (root / "broken" / "train.zip").write_bytes(b"not a zip at all")  # DiffSeg30k's name: recognised, not opened
    with caplog.at_level(logging.INFO):
        code, stdout, stderr = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "cross-dataset",
                                   "--dataset", "mini", "--eval-dataset", f"catalog:{root}", "--plan", *FAST)
    assert code == 0, stderr
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and "broken" in r.getMessage()]
    assert len(said) == 1 and "not opened" in said[0], said


# -- report reproduce ---------------------------------------------------------------------------
def _release_doc(detector: str = TINY, release: str = RELEASE, *, metrics: dict, date: str,
                 dataset: str = "columbia", suite: str = "cross-dataset", case: str = "binary",
                 metrics_version: str = METRICS_VERSION):
    from diffzoo.harness.records.document import ResultRecord

    doc = json.loads(make_record(detector, suite=suite, case=case, dataset=dataset, metrics=metrics, date=date,
                                 case_fields={"split": "test"}).to_json())
    doc["detector"].update(checkpoint_source="released", release={"name": release, "files": []})
    doc["metrics_version"] = metrics_version
    return ResultRecord.create(**doc)  # sealed anew: record_id and digests are derived, never copied


def _store(tmp_path: Path, records) -> Path:
    store = tmp_path / "store"
    (store / "records").mkdir(parents=True)
    for r in records:
        (store / "records" / f"{r.id}.json").write_text(r.to_json(), encoding="utf-8")
    return store


def _columbia(rows: list[list[str]]) -> list[str]:
    cells = [[c.replace("\\_", "_") for c in r] for r in rows]  # Markdown-escaped underscores read back
    (hit,) = [r for r in cells if r[0] == TINY and r[2] == "Columbia" and r[3].startswith("dinov3iml_pixel_F1")]
    return hit


def test_a_record_of_another_metrics_version_is_never_set_beside_a_published_number():
    numbers = [n for n in release_numbers([get_registry().get("detector", TINY).card])
               if n.number.benchmark == "Columbia"]
    current = _release_doc(metrics={"F1_benco": 0.30}, date="2026-11-01T00:00:00+00:00")
    older = _release_doc(metrics={"F1_benco": 0.99}, date="2026-11-05T00:00:00+00:00", metrics_version="0")
    main = _columbia(reproduce_rows(numbers, [current, older]))
    assert main[4] == "30.0" and main[6] == "-64.1"  # the newer record is of another version: not ours
    alone = _columbia(reproduce_rows(numbers, [older]))
    assert alone[4] == "—" and alone[6] == "—"
    assert f"left out: 1 record(s) of metrics version 0 ({older.id})" in alone[7]
    assert f"definitions are version {METRICS_VERSION}" in alone[7]


def test_records_of_released_weights_the_report_cannot_use_are_named(capsys, tmp_path):
    no_numbers = _release_doc("benco.mesorch.tiny", "official", metrics={"F1": 0.5},
                              date="2026-11-01T00:00:00+00:00")  # its release publishes no number
    elsewhere = _release_doc(metrics={"F1_benco": 0.5}, date="2026-11-01T00:00:00+00:00", dataset="mini")
    code, text, err = cli(capsys, "report", "reproduce", "--store", _store(tmp_path, [no_numbers, elsewhere]))
    assert code == 0, err
    flat = " ".join(text.split()).replace("\\_", "_").replace("\\[", "[").replace("\\]", "]")
    assert "(2 record(s), 2 of released weights)" in flat
    assert ("**not compared**: benco.mesorch.tiny [released:official], 1 record(s): its release lists no "
            "published number") in flat
    assert f"**not compared**: {TINY} [released:{RELEASE}], 1 record(s): none is a clean case" in flat
    assert "columbia" in flat and "cross-dataset/binary on mini:test" in flat


def test_a_store_of_trained_rows_only_says_no_record_is_of_released_weights(capsys, tmp_path):
    trained = make_record(TINY, suite="cross-dataset", dataset="columbia", metrics={"F1_benco": 0.9},
                          case_fields={"split": "test"})
    code, text, err = cli(capsys, "report", "reproduce", "--store", _store(tmp_path, [trained]))
    assert code == 0, err
    flat = " ".join(text.split())
    out = tmp_path / ("report" + "-long" * 30)  # a line longer than the console: the path stays on one line
    code, written, err = cli(capsys, "report", "reproduce", "--store", tmp_path / "store", "--out", out)
    assert code == 0 and f"wrote reproduce: {out}" in written.splitlines()[-1], (written, err)
    assert "(1 record(s), 0 of released weights; a published number is only set beside a record made with " \
           "`--weights released:NAME`)" in flat


# -- a record by id: reproduce, leaderboard show ------------------------------------------------
def test_a_record_renamed_in_its_store_is_named_by_reproduce_and_show(capsys, tmp_path):
    """Its content intact under another file name: "no record ID" said nothing of the file holding it."""
    a = make_record(TINY, metrics={"F1": 0.1})
    store = _store(tmp_path, [a])
    renamed = (store / "records" / f"{a.id}.json").rename(store / "records" / "0123456789abcdef.json")
    for command in ("reproduce", "leaderboard show"):
        for given in (a.id, a.id[:8]):
            assert one_line_exit_2(*cli(capsys, *command.split(), given, "--store", store)) == (
                f"error: no record '{given}' in {store / 'records'}: {renamed} holds record {a.id} under another "
                f"file name: name it {a.id}.json again")


def test_a_record_id_is_hex_never_a_file_pattern_and_a_wrong_one_is_a_usage_error(capsys, tmp_path):
    a = make_record(TINY, metrics={"F1": 0.1})
    b = make_record(TINY, metrics={"F1": 0.2}, seed=1)
    store = _store(tmp_path, [a, b])
    (store / "outside.json").write_text(a.to_json(), encoding="utf-8")  # a record file beside records/
    for command in ("reproduce", "leaderboard show"):
        words = command.split()
        for wrong in ("*", "?" * 16, "../outside", a.id + "0", "[0-9a-f]*"):
            one_line_exit_2(*cli(capsys, *words, wrong, "--store", store), "is not a record id")
        one_line_exit_2(*cli(capsys, *words, "0" * 16, "--store", store), "no record '0000000000000000'")
        common = next(i for i in range(16) if a.id[i] != b.id[i])
        if common:
            one_line_exit_2(*cli(capsys, *words, a.id[:common], "--store", store), "is ambiguous")
        one_line_exit_2(*cli(capsys, *words, a.id, "--store", tmp_path / "nope"), "is not a record store")
    code, stdout, stderr = cli(capsys, "leaderboard", "show", a.id[:12], "--store", store)
    assert code == 0 and a.id in stdout + stderr, stderr
    code, stdout, stderr = cli(capsys, "leaderboard", "show", a.id.upper(), "--store", store)  # hex in either case
    assert code == 0 and a.id in stdout + stderr, stderr
    one_line_exit_2(*cli(capsys, "leaderboard", "show", "xyz", "--store", store), "leaderboard list shows them")


def test_report_reproduce_of_a_version_that_is_not_there_is_a_usage_error(capsys, tmp_path):
    store = _store(tmp_path, [make_record(TINY)])
    one_line_exit_2(*cli(capsys, "report", "reproduce", "v9", "--store", store), "'v9' is neither a version",
                    "none frozen yet")
    folder = tmp_path / "records-folder"
    folder.mkdir()
    (folder / "r.json").write_text(make_record(TINY).to_json(), encoding="utf-8")
    one_line_exit_2(*cli(capsys, "report", "reproduce", str(folder), "--store", store), "is not a frozen version")
