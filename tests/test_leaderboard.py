"""The leaderboard: store, validation, versions, diff and the text formats."""

from __future__ import annotations

import csv
import io
import json
import shutil
import signal
import subprocess
import sys

import pytest

from diffzoo.harness.core.errors import ConfigError
from diffzoo.harness.core.registry import natural_key
from diffzoo.harness.metrics import METRICS_VERSION
from diffzoo.harness.records.document import ResultRecord, record_problems
from diffzoo.leaderboard.diff import diff
from diffzoo.leaderboard.layouts.cases import build_tables
from diffzoo.leaderboard.render.text import publish, to_csv, to_latex, to_markdown
from diffzoo.leaderboard.store import RecordStore
from diffzoo.leaderboard.versions import Selection, freeze, load_version, resolve

from helpers.cli import cli, one_line, one_line_exit_2
from helpers.records import make_record, make_state


def edited(record: ResultRecord, change) -> dict:
    """The record's JSON changed by ``change`` (id left as it was)."""
    data = json.loads(record.to_json())
    change(data)
    return data


# -- validation -------------------------------------------------------------------
def test_record_problems_name_field_and_reason():
    good = make_record()
    assert record_problems(good.data) == []
    no_seed = edited(good, lambda d: d.pop("seed"))
    assert any("missing field(s): seed" in p for p in record_problems(no_seed))
    wrong_schema = edited(good, lambda d: d.update(schema_version=7))
    assert any("schema version 7 is not 2" in p for p in record_problems(wrong_schema))
    out_of_range = edited(good, lambda d: d["metrics"].update(mIoU=1.7))
    assert any("field metrics.mIoU is 1.7, outside its range [0.0, 1.0]" in p
               for p in record_problems(out_of_range))
    bad_ci = edited(good, lambda d: d["ci95"].update(mIoU=[0.7, 0.5]))
    assert any("low 0.7 > high 0.5" in p for p in record_problems(bad_ci))
    tampered = edited(good, lambda d: d["metrics"].update(mIoU=0.99))
    said = "field metrics.mIoU, or its digest, was changed after the record was written"
    assert record_problems(tampered) == [said]
    # a digest alone edited reads as its field edited: the message names both
    assert record_problems(edited(good, lambda d: d["digests"].update({"metrics.mIoU": "0" * 16}))) == [said]
    renamed = edited(good, lambda d: d["detector"].update(name="other"))
    assert any("field detector.name, or its digest, was changed" in p for p in record_problems(renamed))
    assert record_problems(edited(good, lambda d: d["digests"].pop("seed"))) == [
        "field seed was added after the record was written, or its digest removed"]
    # a record file is JSON: its types are named as JSON names them, never as Python does (NoneType, str)
    assert [record_problems(v) for v in ([1, 2], "x", None, True, 1.5)] == [
        [f"a record is a JSON object, not {kind}"] for kind in ("an array", "a string", "null", "a boolean", "a number")]
    assert record_problems(edited(good, lambda d: d.update(detector="x")))[0] == (
        "field detector must be an object, got a string")
    assert "field threshold_policy must be an object, got null" in record_problems(
        edited(good, lambda d: d.update(threshold_policy=None)))


def test_validate_cli_rejects_each_bad_record_saying_why(tmp_path, capsys):
    good = make_record(state=make_state())
    folder = tmp_path / "in"
    folder.mkdir()
    good.write(folder)
    (folder / "missing.json").write_text(json.dumps(edited(good, lambda d: d.pop("dataset"))))
    (folder / "schema.json").write_text(json.dumps(edited(good, lambda d: d.update(schema_version=1))))
    (folder / "range.json").write_text(json.dumps(edited(good, lambda d: d["metrics"].update(aAcc=-0.1))))
    (folder / "notjson.json").write_text("{oops")
    code, out, _ = cli(capsys, "leaderboard", "validate", str(folder))
    assert code == 1
    lines = {line.split(":")[0].split("/")[-1]: line for line in out.replace("\n ", " ").splitlines()
             if line.startswith("invalid")}
    assert "missing field(s): dataset" in lines["missing.json"]
    assert "schema version 2 is not 2" not in out and "schema version 1 is not 2" in lines["schema.json"]
    assert "field metrics.aAcc is -0.1, outside its range" in lines["range.json"]
    assert "not JSON" in lines["notjson.json"]
    assert "1 valid, 4 invalid" in out and "0 temp file(s)" in out
    code, out, _ = cli(capsys, "leaderboard", "validate", str(folder / f"{good.id}.json"))
    assert code == 0 and "1 valid, 0 invalid" in out


def test_validate_names_a_metric_state_file_as_no_record(tmp_path, capsys):
    """A store's states/ folder, one state file or a version's manifest given to validate or add is
    said to be what it is, and what to give instead; never a record missing 13 fields."""
    store = RecordStore(tmp_path / "s")
    store.add(make_record(state=make_state()))
    [state] = (store.root / "states").glob("*.json")
    said = ("a metric-state file, not a record: give the records that name it (the store, or its records/ "
            "folder); each record is checked against its state")
    for args in (("validate", state.parent), ("validate", state), ("add", state, "--store", tmp_path / "t")):
        code, out, _ = cli(capsys, "leaderboard", *args)
        assert code == 1 and f"{state}: {said}" in one_line(out), out
    freeze(store, "v1")
    code, out, _ = cli(capsys, "leaderboard", "validate", store.versions_dir / "v1.json")
    assert code == 1 and (f"{store.versions_dir / 'v1.json'}: a frozen version's manifest, not a record: check it "
                          "with `diffzoo leaderboard verify VERSION --store STORE`") in one_line(out), out


def test_a_hostile_records_reason_is_one_line_of_bounded_length(tmp_path, capsys):
    """20,000 unknown fields printed a reason of 200 KB: validate and add cut it, saying how much is left out."""
    path = tmp_path / "r.json"
    path.write_text(json.dumps(edited(make_record(), lambda d: d.update({f"x{i}": 1 for i in range(20000)}))))
    for args in (("validate", path), ("add", path, "--store", tmp_path / "s")):
        code, out, _ = cli(capsys, "leaderboard", *args)
        [line] = [line for line in out.splitlines() if line.startswith(("invalid", "rejected"))]
        assert code == 1 and len(line) < 2000 + len(str(path)) + 60, len(line)
        assert line.split(": ", 1)[1].startswith("unknown field(s): x0, x1, ") and line.endswith(" more characters)")


# -- the store --------------------------------------------------------------------------
def test_add_is_idempotent_and_reports_a_rerun_that_differs(tmp_path):
    store = RecordStore(tmp_path)
    a = make_record(state=make_state())
    first = store.add(a)
    assert first.status == "added" and first.path == store.records_dir / f"{a.id}.json"
    again = store.add(a)
    assert (again.status, again.reason, again.differs) == ("present", f"already recorded: {a.id}", ())
    rerun = make_record(state=make_state(), date="2027-01-01T00:00:00+00:00")  # same run, later
    assert rerun.id == a.id and store.add(rerun).status == "present" and len(store) == 1
    noisy = make_record(state=make_state(seed=1))  # same run, other predictions: nondeterminism
    outcome = store.add(noisy)
    assert outcome.status == "present" and "mIoU" in outcome.differs and "predictions_digest" in outcome.differs
    assert store.get(a.id).content_digest == a.content_digest  # the stored record is kept
    store.add(make_record(seed=1, state=make_state(seed=1)))  # another seed is another run
    assert len(store) == 2 and store.load().skipped == []
    first.path.write_text(json.dumps(edited(a, lambda d: d["metrics"].update(mIoU=0.01))))
    outcome = store.add(a)
    assert outcome.status == "present" and outcome.stored_invalid and "stored file is invalid" in outcome.reason
    assert store.add(a, replace=True).status == "replaced" and store.load().skipped == []


def test_a_folder_holding_no_record_is_named_never_read_as_zero_records(tmp_path, capsys):
    """A wrong folder handed to add, validate or diff is never "0 added" / "0 valid", exit 0: it is
    the user's to fix, exit 2, as a folder that is no store given to list or publish."""
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "a.png").write_bytes(b"png")
    RecordStore(tmp_path / "empty-store").records_dir.mkdir(parents=True)  # a store of no record is no mistake
    for args in (["add", tmp_path / "photos", "--store", tmp_path / "s"], ["validate", tmp_path / "photos"],
                 ["diff", tmp_path / "empty-store", tmp_path / "photos"]):
        code, out, err = cli(capsys, "leaderboard", *args)
        assert code == 2 and err.startswith(f"error: {tmp_path / 'photos'} holds no record"), (out, err)
    assert not (tmp_path / "s").exists()
    code, out, _ = cli(capsys, "leaderboard", "validate", tmp_path / "empty-store")
    assert code == 0 and "0 valid, 0 invalid" in out


def test_import_reports_each_outcome(tmp_path, capsys):
    remote = RecordStore(tmp_path / "remote")
    for det in ("a", "b"):
        remote.add(make_record(det, state=make_state()))
    conflicting = make_record("a", state=make_state(seed=1))
    conflicting.write(remote.records_dir.parent / "loose")
    (remote.records_dir / "broken.json").write_text(
        json.dumps(edited(make_record("c", state=make_state()), lambda d: d["metrics"].update(F1=2.0))))
    unverified = make_record("d")
    (remote.records_dir / f"{unverified.id}.json").write_text(unverified.to_json())
    # a copy under another name, as list skips it and verify fails it
    copied = make_record("b", state=make_state()).id
    (remote.records_dir / "copy.json").write_bytes((remote.records_dir / f"{copied}.json").read_bytes())
    local = tmp_path / "local"
    code, out, _ = cli(capsys, "leaderboard", "add", str(tmp_path / "remote"),
                       str(remote.root / "loose" / f"{conflicting.id}.json"), "--store", str(local))
    out = out.replace("\n", "")
    assert code == 1
    assert "2 added, 0 already present, 4 rejected" in out
    assert "broken.json: field metrics.F1 is 2.0, outside its range" in out
    assert f"{unverified.id}.json: record has no metric state" in out
    assert f"copy.json: file name copy.json does not match its record_id {copied}" in out
    assert (f"conflicts with stored record {conflicting.id}: same run (identity) but different F1, aAcc, bF1, gIoU, "
            "mIoU and 1 more") in out  # the sixth (predictions_digest) was left unsaid
    code, out, _ = cli(capsys, "leaderboard", "add", str(remote.records_dir / f"{make_record('a', state=make_state()).id}.json"),
                       "--store", str(local))
    assert code == 0 and "0 added, 1 already present, 0 rejected" in out
    # the same per-image rows, but each detector's state is bound to its own run: one file each
    assert len(RecordStore(local)) == 2 and len(list((local / "states").glob("*.json"))) == 2


APPENDER = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from helpers.records import make_record
from diffzoo.leaderboard.store import RecordStore
store, worker = RecordStore(Path(sys.argv[1])), int(sys.argv[2])
sys.stdin.read()  # the start line: every worker waits here until the parent closes its stdin
for i in range(25):
    store.add(make_record(f"w{worker}", seed=i, metrics={"mIoU": i / 100, "aAcc": worker / 10}))
    store.add(make_record("shared", seed=i))  # every worker also adds the same records
"""


def test_eight_concurrent_appenders_lose_nothing(tmp_path):
    tests_dir = str(__import__("pathlib").Path(__file__).parent)
    procs = [subprocess.Popen([sys.executable, "-c", APPENDER, str(tmp_path), str(w), tests_dir],
                              stdin=subprocess.PIPE) for w in range(8)]
    for p in procs:  # all started (importing in parallel); now let them go
        p.stdin.close()
    assert [p.wait(timeout=300) for p in procs] == [0] * 8
    store = RecordStore(tmp_path)
    records = store.load().records
    assert len(records) == 8 * 25 + 25
    assert store.load().skipped == []
    by_worker = {}
    for r in records:
        by_worker.setdefault(r.data["detector"]["name"], set()).add(r.data["seed"])
    assert all(by_worker[f"w{w}"] == set(range(25)) for w in range(8))
    assert not list(store.records_dir.glob("*.tmp")) and not list(store.records_dir.glob(".*"))


SLOW_WRITER = """
import os, sys, threading
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from helpers.records import make_record
from diffzoo.leaderboard.store import RecordStore
real_fsync = os.fsync
def slow_fsync(fd):
    print("writing", flush=True)
    threading.Event().wait()  # hangs mid-write until the parent kills it
os.fsync = slow_fsync
RecordStore(Path(sys.argv[1])).add(make_record("killed"))
"""


def test_writer_killed_mid_write_leaves_no_partial_record(tmp_path):
    tests_dir = str(__import__("pathlib").Path(__file__).parent)
    store = RecordStore(tmp_path)
    store.add(make_record("before"))
    proc = subprocess.Popen([sys.executable, "-c", SLOW_WRITER, str(tmp_path), tests_dir], stdout=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"writing"  # inside the record write, holding the lock
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert [r.data["detector"]["name"] for r in store.load().records] == ["before"]
    assert store.load().skipped == []
    store.add(make_record("after"))  # the dead writer's lock is gone
    assert sorted(r.data["detector"]["name"] for r in store.load().records) == ["after", "before"]


# -- versions and tables ------------------------------------------------------------------
def test_freeze_is_immutable_and_versions_never_share_a_table(tmp_path):
    store = RecordStore(tmp_path)
    store.add(make_record("a"))
    store.add(make_record("b", metrics={"mIoU": 0.8, "aAcc": 0.95}))
    path = freeze(store, "v1", note="first")
    manifest = json.loads(path.read_text())
    assert manifest["suites"] == [{"name": "standard", "version": "1", "definition_hash": "hstandard1"}]
    assert manifest["datasets"] == [{"name": "mini", "fingerprint": "fp0001"}]
    assert manifest["metrics_versions"] == [METRICS_VERSION] and len(manifest["records"]) == 2
    assert manifest["record_digests"] == {r.id: r.content_digest for r in store.load().records}
    with pytest.raises(ConfigError, match="already exists"):
        freeze(store, "v1")
    with pytest.raises(ConfigError, match="version 'v1' exists, and 'V1' differs from it only in case"):
        freeze(store, "V1")  # one file on macOS or Windows
    assert [p.name for p in store.versions_dir.iterdir()] == ["v1.json"]
    # a newer suite version and a rerun on changed data arrive later
    store.add(make_record("a", suite_version="2", metrics={"mIoU": 0.7, "aAcc": 0.9}))
    store.add(make_record("a", fingerprint="fp0002"))
    assert len(load_version(store, "v1").records) == 2  # the frozen version does not move
    tables = build_tables(store.load().records)
    keys = [(t.key.suite_version, t.key.fingerprint) for t in tables]
    assert sorted(keys) == [("1", "fp0001"), ("1", "fp0002"), ("2", "fp0001")]
    v1 = next(t for t in tables if t.key.suite_version == "1" and t.key.fingerprint == "fp0001")
    assert [r.label for r in v1.rows if not r.baseline] == ["b", "a"]  # ranked by mIoU
    assert [r.rank for r in v1.rows] == [1, 2]
    with pytest.raises(ConfigError, match="version name"):
        freeze(store, "../evil")
    with pytest.raises(ConfigError) as refused:  # a letter, but not one a name may hold: said so
        freeze(store, "été")
    rule = ("must be ASCII letters (A-Z, a-z), digits, '.', '_' or '-' (at most 64, starting with a letter or "
            "digit, no device name of Windows: con, prn, aux, nul, com1-9, lpt1-9): it is a file name on every system")
    assert str(refused.value) == f"version name 'été' {rule}"
    for device in ("con", "NUL", "com1.v2", "Lpt9"):  # versions/con.json is no file on Windows: never written
        with pytest.raises(ConfigError) as refused:
            freeze(store, device)
        assert str(refused.value) == f"version name {device!r} {rule}"
    assert freeze(store, "console").name == "console.json"
    for file_name in ("v1.json", "v1.JSON"):  # never versions/v1.json.json, a version named "v1.json"
        with pytest.raises(ConfigError) as refused:
            freeze(store, file_name)
        assert str(refused.value) == f"version name {file_name!r} ends in .json: give the name, not the file ('v1')"
    assert not (store.versions_dir / "v1.json.json").exists()


def test_publish_into_the_store_folder_is_refused_in_one_line_and_a_folder_in_it_is_not(tmp_path, capsys):
    """Published files never lie beside the store's records/ (a run's own files are there); a new
    folder in the store, where `diffzoo sweep` publishes its board, is fine."""
    store = tmp_path / "store"
    RecordStore(store).add(make_record("a"))
    before = sorted(p.name for p in store.iterdir())
    code, _, err = cli(capsys, "leaderboard", "publish", "--store", str(store), "--out", str(store))
    one_line_exit_2(code, "", err, f"--out {store} is the record store {store}: choose another folder (a new one in "
                                   f"it, such as {store / 'board'}, is fine)")
    assert sorted(p.name for p in store.iterdir()) == before
    code, out, err = cli(capsys, "leaderboard", "publish", "--store", str(store), "--out", str(store / "board"))
    assert code == 0 and (store / "board" / "leaderboard.md").is_file(), err


def test_two_freezes_of_names_differing_only_in_case_never_both_win(tmp_path, monkeypatch):
    """A freeze of ``V1`` that finishes while ``v1`` reads the store is seen under the store's lock:
    never two files a case-insensitive filesystem makes one."""
    store = RecordStore(tmp_path)
    store.add(make_record("a"))
    load = RecordStore.load

    def racing(self):
        monkeypatch.setattr(RecordStore, "load", load)
        freeze(self, "V1")  # the other freeze, done while this one reads the records
        return load(self)

    monkeypatch.setattr(RecordStore, "load", racing)
    with pytest.raises(ConfigError, match="version 'V1' exists, and 'v1' differs from it only in case"):
        freeze(store, "v1")
    assert [p.name for p in store.versions_dir.iterdir()] == ["V1.json"]


def test_an_empty_answer_says_why_a_filter_kept_no_record_or_no_version_is_frozen(tmp_path, capsys):
    store = tmp_path / "store"
    RecordStore(store).add(make_record("segformer.b0", suite="standard"))
    RecordStore(store).add(make_record("fcn8s", suite="distortions"))
    code, text, err = cli(capsys, "leaderboard", "list", "--store", store, "--suite", "standrad")
    assert code == 0 and "0 record(s)" in text
    assert err.split() == ("no record matches: --suite standrad matches none of distortions, standard. "
                           "Did you mean 'standard'?").split()
    code, text, err = cli(capsys, "leaderboard", "list", "--store", store, "--suite", "dist*", "--detector", "seg*")
    assert code == 0 and " ".join(err.split()) == "no record matches: no record matches every filter at once"
    code, text, err = cli(capsys, "leaderboard", "list", "--store", store, "--detector", "seg*")
    assert code == 0 and "1 record(s)" in text and not err
    with pytest.raises(ConfigError, match="^nothing to freeze: --detector nope matches none of fcn8s, segformer.b0"):
        freeze(RecordStore(store), "v1", detectors=["nope"])
    code, text, _ = cli(capsys, "leaderboard", "versions", "--store", store)
    assert code == 0 and " ".join(text.split()) == (f"no frozen versions in {store} (`diffzoo leaderboard freeze "
                                                    "NAME` makes one)")


def test_versions_are_listed_in_version_order_everywhere(tmp_path, capsys):
    """v2 before v10 (they were sorted as text: v10, v2), in `versions`, in the names a wrong
    version name lists, and in the order `verify` checks them."""
    store = RecordStore(tmp_path / "s")
    store.add(make_record("a"))
    names = ["v10", "v2", "v1.10", "v1.9", "2026-11", "2026-2", "v1", "v1.2", "v2-rc1", "v2.1", "2026-12-01"]
    for name in names:
        freeze(store, name)
    ordered = ["2026-2", "2026-11", "2026-12-01", "v1", "v1.2", "v1.9", "v1.10", "v2", "v2.1", "v2-rc1", "v10"]
    # the registry's natural sort of names keeps '-' before '.' as text: it would list v2-rc1 before v2.1,
    # so the two sorts stay apart
    assert sorted(names, key=natural_key) == [*ordered[:8], "v2-rc1", "v2.1", "v10"]
    code, out, _ = cli(capsys, "leaderboard", "versions", "--store", store.root)
    listed = [line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│")]
    assert code == 0 and listed == ordered, out
    code, _, err = cli(capsys, "leaderboard", "publish", "v3", "--store", store.root, "--out", tmp_path / "pub")
    assert code == 2 and f"({', '.join(ordered)})" in " ".join(err.split()), err
    for name in names:
        (store.versions_dir / f"{name}.json").write_text("{}")
    code, out = cli(capsys, "leaderboard", "verify", "--store", store.root)[:2]
    assert code == 1 and [line.split()[2] for line in out.splitlines() if line.startswith("bad version")] == ordered


def test_a_frozen_version_lists_its_datasets_in_the_sites_natural_order_and_one_frozen_in_text_order_verifies(
        tmp_path, capsys):
    """ds9 before ds10 in the version file, as the site and `versions` list them (it was text order,
    ds10 first); a version frozen in text order says the same datasets and still verifies."""
    from diffzoo.leaderboard.versions import sealed

    store = RecordStore(tmp_path / "s")
    for name in ("ds10", "ds9"):
        store.add(make_record(dataset=name, fingerprint=f"fp-{name}", state=make_state()))
    path = freeze(store, "v1")
    manifest = json.loads(path.read_text())
    assert [d["name"] for d in manifest["datasets"]] == ["ds9", "ds10"]
    manifest = {k: v for k, v in manifest.items() if k not in ("digests", "content_hash")}
    manifest["datasets"].reverse()  # as a freeze sorting names as text wrote it
    path.write_text(json.dumps(sealed(manifest)))
    code, out, _ = cli(capsys, "leaderboard", "verify", "v1", "--store", store.root)
    assert code == 0 and "2 good, 0 bad record(s)" in one_line(out), out
    code, out, _ = cli(capsys, "leaderboard", "versions", "--store", store.root)
    assert code == 0 and "ds9, ds10" in out, out


def test_a_version_file_that_is_no_json_object_is_named_for_what_it_is(tmp_path, capsys):
    """A version file holding an array, a string or null was said to have "schema None"."""
    store = RecordStore(tmp_path)
    store.add(make_record("a"))
    freeze(store, "v1")
    for name, text in (("arr", "[1]"), ("text", '"v1"'), ("none", "null")):
        (tmp_path / "versions" / f"{name}.json").write_text(text)
    code, _, err = cli(capsys, "leaderboard", "versions", "--store", tmp_path)
    assert code == 1 and [line for line in err.splitlines() if line.startswith("error")] == [
        f"error: version file {tmp_path / 'versions' / name}.json is {kind}, not a JSON object"
        for name, kind in (("arr", "an array"), ("none", "null"), ("text", "a string"))], err
    code, _, err = cli(capsys, "leaderboard", "diff", "arr", "v1", "--store", tmp_path)
    assert code == 1 and err.strip() == f"error: version file {tmp_path / 'versions' / 'arr.json'} is an array, not a JSON object"


def test_the_newest_record_is_the_latest_in_time_whatever_offset_its_date_is_written_with():
    """Dates were compared as text: 10:00 at +05:00 (05:00 UTC) read as later than 06:00 UTC."""
    from diffzoo.leaderboard.index import newest_record

    east = make_record("a", metrics={"mIoU": 0.1}, date="2026-11-01T10:00:00+05:00")
    utc = make_record("a", metrics={"mIoU": 0.2}, date="2026-11-01T06:00:00+00:00")
    assert east.id == utc.id
    assert newest_record([east, utc]) is utc and newest_record([utc, east]) is utc
    [table] = build_tables([utc, east])
    assert [r.cells["mIoU"].value for r in table.rows if not r.baseline] == [0.2]
    # a re-run under a new id is paired with its detector's newest row, by the same clock
    rerun = [make_record("a", checkpoint=c * 32, metrics={"mIoU": m}, date=d) for c, m, d in (
        ("cd", 0.3, "2026-11-01T10:00:00+05:00"), ("ef", 0.4, "2026-11-01T06:00:00+00:00"))]
    [table] = diff(Selection("A", [utc]), Selection("B", rerun)).tables
    assert [(r.status, r.checkpoint[1], [(c.before, c.after) for c in r.changes]) for r in table.rows
            if r.status != "added"] == [("checkpoint changed", "ef" * 32, [(0.2, 0.4)])]


def test_a_store_names_the_folders_it_reads_and_nothing_else(tmp_path):
    store = RecordStore(tmp_path)
    assert (store.records_dir, store.versions_dir, store.replaced_dir) == (
        tmp_path / "records", tmp_path / "versions", tmp_path / "replaced")
    assert not hasattr(store, "states_dir")  # states are found through state_source


@pytest.mark.parametrize("args, said", [
    (["leaderboard", "publish", "--out", "OUT"], "nothing to publish: working copy of {store} has no records"),
    (["report", "paper", "--out", "OUT"], "nothing to publish: working copy of {store} has no records"),
    (["leaderboard", "freeze", "v1"], "nothing to freeze: the store holds no records"),
])
def test_an_empty_store_is_one_error_line_exit_1_for_publish_report_and_freeze(tmp_path, capsys, args, said):
    store = tmp_path / "store"
    (store / "records").mkdir(parents=True)
    code, text, err = cli(capsys, *[tmp_path / "out" if a == "OUT" else a for a in args], "--store", store)
    assert code == 1 and " ".join(err.split()) == "error: " + said.format(store=store.name), (text, err)
    assert not (store / "versions").exists() and not (tmp_path / "out").exists()


def test_a_rerun_of_the_same_run_is_one_row(tmp_path):
    first = make_record("a")
    rerun = make_record("a", date="2026-12-02T00:00:00+00:00",
                        environment={"date": "2026-12-02T00:00:00+00:00", "git": "fedcba9876543210"})
    assert rerun.id == first.id  # another code version, same identity: one record id
    [table] = build_tables([first, rerun])
    [row] = [r for r in table.rows if not r.baseline]
    assert row.record_id == rerun.id and row.provenance["git"] == "fedcba9876543210"


RETRAINED = {"checkpoint": "ef" * 32, "metrics": {**make_record().metrics, "mIoU": 0.65},
             "date": "2026-12-01T00:00:00+00:00"}


def _two_versions(tmp_path) -> RecordStore:
    """v1: detectors a and gone; v2: a retrained (mIoU 0.65) beside its v1 row, gone dropped, new
    added, and a on suite version 2 (a table v1 lacks)."""
    store = RecordStore(tmp_path)
    store.add(make_record("a"))
    store.add(make_record("gone", checkpoint="cd" * 32))
    freeze(store, "v1")
    store.add(make_record("a", **RETRAINED))  # another record: a second row of "a" in v2's table
    store.add(make_record("new", checkpoint="12" * 32))
    store.add(make_record("a", suite_version="2"))
    freeze(store, "v2", detectors=["a", "new"])
    return store


def test_diff_shows_moved_metrics_rows_and_new_suite_versions(tmp_path, capsys):
    store = _two_versions(tmp_path)
    result = diff(resolve("v1", store), resolve("v2", store))
    by_status = {(t.key.suite_version, t.status): t for t in result.tables}
    assert "not comparable: suite_version 1 -> 2" in by_status[("2", "added")].note
    back = {(t.key.suite_version, t.status): t for t in diff(resolve("v2", store), resolve("v1", store)).tables}
    assert back[("2", "removed")].note.startswith("not comparable: suite_version 2 -> 1")  # from A to B
    # the published v2 table shows both rows of a: the v1 one is the same, the retrained one added
    old, new = f"a (record {make_record('a').id[:12]})", f"a (record {make_record('a', **RETRAINED).id[:12]})"
    assert [(r.detector, r.status) for r in by_status[("1", "matched")].rows] == sorted(
        [(old, "same"), (new, "added"), ("gone", "removed"), ("new", "added")])
    assert result.moved
    code, out, _ = cli(capsys, "leaderboard", "diff", "v1", "v2", "--store", str(tmp_path))
    assert code == 0 and new in out and old not in out and "table added" in out, out
    assert not diff(resolve("v1", store), resolve("v1", store)).moved


def test_diff_json_is_the_same_diff_and_each_row_names_its_checkpoints(tmp_path, capsys):
    _two_versions(tmp_path)
    code, out, _ = cli(capsys, "leaderboard", "diff", "v1", "v2", "--store", str(tmp_path), "--json")
    assert code == 0
    result = json.loads(out)
    assert (result["a"], result["b"]) == ("v1", "v2")
    [table, added] = result["tables"]
    assert table["status"] == "matched" and table["key"]["dataset"] == "mini"
    assert added["status"] == "added" and added["rows"] == []
    assert added["note"].startswith("not comparable: suite_version 1 -> 2")
    rows = {r["detector"]: r for r in table["rows"]}
    old, new = make_record("a").id, make_record("a", **RETRAINED).id
    assert rows[f"a (record {old[:12]})"]["records"] == [old, old]
    assert rows[f"a (record {new[:12]})"]["records"] == [None, new]
    assert rows[f"a (record {new[:12]})"]["checkpoint"] == [None, "ef" * 32]
    assert rows["gone"]["status"] == "removed" and rows["gone"]["checkpoint"] == ["cd" * 32, None]  # A's only
    assert rows["new"]["status"] == "added" and rows["new"]["checkpoint"] == [None, "12" * 32]  # B's only


def test_diff_pairs_rows_by_record_id_then_each_detectors_newest_and_names_them_by_seed(tmp_path, capsys):
    """A diff row is a record, as in the published table: a record replaced with equal numbers (its id
    kept, a newer date) is no change, though another seed's record is newer (it was "checkpoint
    changed"); a re-run under a new id is paired with its detector's newest row left on the other side."""
    seed0, seed1 = ({"seed": s, "checkpoint": f"{s}{s}" * 32, "metrics": {"mIoU": 0.5 + s / 5}} for s in (0, 1))
    store = RecordStore(tmp_path / "s")
    store.add(make_record("a", **seed0, date="2026-11-01T00:00:00+00:00"))
    store.add(make_record("a", **seed1, date="2026-11-02T00:00:00+00:00"))
    freeze(store, "v1")
    store.add(make_record("a", **seed0, date="2026-11-03T00:00:00+00:00"), replace=True)
    freeze(store, "v2")
    code, out, _ = cli(capsys, "leaderboard", "diff", "v1", "v2", "--store", store.root)
    assert (code, out.splitlines()[2:]) == (0, ["unchanged standard v1 / binary on mini", "no differences"]), out
    retrained = make_record("a", seed=1, checkpoint="22" * 32, metrics={"mIoU": 0.8}, date="2026-11-04T00:00:00+00:00")
    seed2 = make_record("a", seed=2, checkpoint="33" * 32, metrics={"mIoU": 0.1}, date="2026-11-03T00:00:00+00:00")
    for side, records in (("A", store.load().records), ("B", [*(r for r in store.load().records if r.body.seed == 0), retrained, seed2])):
        (tmp_path / side).mkdir()
        for record in records:
            record.write(tmp_path / side)
    [table] = diff(resolve(str(tmp_path / "A"), store), resolve(str(tmp_path / "B"), store)).tables
    assert [(r.detector, r.status, [(c.metric, c.before, c.after) for c in r.changes]) for r in table.rows] == [
        ("a (seed 0)", "same", []), ("a (seed 1)", "checkpoint changed", [("mIoU", 0.7, 0.8)]),
        ("a (seed 2)", "added", [])]
    code, out, _ = cli(capsys, "leaderboard", "diff", tmp_path / "A", tmp_path / "B", "--store", store.root)
    assert code == 0 and "a (seed 1)" in out and "+10.0" in out and "a (seed 0)" not in out, out
    code, out, _ = cli(capsys, "leaderboard", "diff", tmp_path / "A", tmp_path / "B", "--store", store.root, "--json")
    [change] = [c for r in json.loads(out)["tables"][0]["rows"] for c in r["changes"]]
    assert change == {"metric": "mIoU", "before": 0.7, "after": 0.8, "delta": 0.1,  # 0.8 - 0.7: 0.10000000000000009
                      "states": ["value", "value"]}


def test_diff_of_a_version_name_in_a_folder_that_is_no_store_says_so(tmp_path, capsys):
    code, _, err = cli(capsys, "leaderboard", "diff", "v1", "v2", "--store", tmp_path / "nope")
    assert (code, err.strip()) == (2, f"error: 'v1' is not a folder or file of records, and {tmp_path / 'nope'} is "
                                      f"not a record store (no {tmp_path / 'nope' / 'records'}) to hold a version of "
                                      "that name; pass --store STORE")


def test_diff_names_a_metric_no_record_of_b_carries_any_more():
    a = [make_record("a", metrics={"mIoU": 0.5, "F1_oracle": 0.7}), make_record("b", metrics={"mIoU": 0.4})]
    b = [make_record("a", metrics={"mIoU": 0.5}), make_record("b", metrics={"mIoU": 0.4})]
    [table] = diff(Selection("A", a), Selection("B", b)).tables
    assert [(r.detector, r.status, [(c.metric, c.before, c.after) for c in r.changes]) for r in table.rows] == [
        ("a", "changed", [("F1_oracle", 0.7, None)]), ("b", "same", [])]
    assert diff(Selection("B", b), Selection("A", a)).tables[0].rows[0].changes[0].after == 0.7


def test_diff_tells_a_metric_absent_from_one_undefined_in_the_other(capsys, tmp_path):
    """Absent (the record lacks the metric) and undefined (it says the metric has no value on
    its images) are different facts: going from one to the other is a change, in both directions."""
    a = [make_record("a", metrics={"mIoU": 0.5})]
    b = [make_record("a", metrics={"mIoU": 0.5, "F1_oracle": None})]
    [table] = diff(Selection("A", a), Selection("B", b)).tables
    [row] = table.rows
    assert (row.status, [(c.metric, c.states) for c in row.changes]) == (
        "changed", [("F1_oracle", ("absent", "undefined"))])
    assert [c.states for c in diff(Selection("B", b), Selection("A", a)).tables[0].rows[0].changes] == [
        ("undefined", "absent")]
    assert not diff(Selection("B", b), Selection("B", b)).moved
    for side, records in (("A", a), ("B", b)):
        (tmp_path / side).mkdir()
        records[0].write(tmp_path / side)
    code, out, _ = cli(capsys, "leaderboard", "diff", tmp_path / "A", tmp_path / "B", "--store", tmp_path, "--json")
    [change] = json.loads(out)["tables"][0]["rows"][0]["changes"]
    assert change == {"metric": "F1_oracle", "before": None, "after": None, "delta": None,
                      "states": ["absent", "undefined"]}
    code, out, _ = cli(capsys, "leaderboard", "diff", tmp_path / "A", tmp_path / "B", "--store", tmp_path)
    assert code == 0 and "no differences" not in out and "F1_oracle" in out and "—" in out, out


def test_diff_names_a_checkpoint_that_changed_even_where_the_numbers_did_not(tmp_path, capsys):
    """Another checkpoint is another model: the row says so in the console and in the JSON, and the
    diff never says "no differences" or "same" with the checkpoints only in the JSON."""
    for side, checkpoint in (("a", "ab" * 32), ("b", "cd" * 32)):
        (tmp_path / side).mkdir()
        make_record("x", checkpoint=checkpoint).write(tmp_path / side)
    [table] = diff(resolve(str(tmp_path / "a"), RecordStore(tmp_path)),
                   resolve(str(tmp_path / "b"), RecordStore(tmp_path))).tables
    assert [(r.status, r.changes) for r in table.rows] == [("checkpoint changed", [])]
    code, out, _ = cli(capsys, "leaderboard", "diff", tmp_path / "a", tmp_path / "b", "--store", tmp_path)
    assert code == 0 and "no differences" not in out and "unchanged" not in out
    assert "checkpoint changed" in out and "abababababab" in out and "cdcdcdcdcdcd" in out, out
    code, out, _ = cli(capsys, "leaderboard", "diff", tmp_path / "a", tmp_path / "b", "--store", tmp_path, "--json")
    [row] = json.loads(out)["tables"][0]["rows"]
    assert (row["status"], row["checkpoint"]) == ("checkpoint changed", ["ab" * 32, "cd" * 32])


# -- publishing ------------------------------------------------------------------------------
def test_text_formats_carry_values_cis_provenance_and_escape_names(tmp_path):
    store = RecordStore(tmp_path)
    store.add(make_record("good", ci95={"mIoU": [0.5, 0.7]},
                          baselines={"all-edited": {"mIoU": 0.2, "aAcc": 0.3, "bF1": 0.0, "F1": 0.33}}))
    store.add(make_record("x|<b>evil_&%$#{}</b>", checkpoint="cd" * 32, metrics={"mIoU": 0.3, "aAcc": 0.6}))
    freeze(store, "v1")
    sel = resolve("v1", store)
    tables = build_tables(sel.records)
    md = to_markdown(sel, tables)
    assert "- **version**: v1" in md and "standard v1 / binary on mini" in md
    row = next(line for line in md.splitlines() if [c.strip() for c in line.split("|")[1:3]] == ["1", "good"])
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[2] == "**90.0**" and cells[3] == "**60.0 ± 10.0**"  # aAcc, mIoU with its CI; both best
    assert cells[-3] == "ab" * 6 and cells[-2] == "0123456789" and cells[-1] == "2026-11-29"
    assert "x\\|&lt;b&gt;evil\\_&amp;%\\$#{}&lt;/b&gt;" in md and "<b>" not in md  # `$` starts no math
    assert "*all-edited (baseline)*" in md.replace("\\", "")
    assert "mIoU ↑" in md and "FPR auth. ↓" in md
    rows = list(csv.DictReader(io.StringIO(to_csv(sel, tables))))
    miou = next(r for r in rows if r["detector"] == "good" and r["metric"] == "mIoU")
    assert (float(miou["value"]), float(miou["ci95_low"]), float(miou["ci95_high"])) == (0.6, 0.5, 0.7)
    assert miou["checkpoint_sha256"] == "ab" * 32 and miou["version"] == "v1" and miou["higher_is_better"] == "1"
    assert any(r["detector"] == "x|<b>evil_&%$#{}</b>" for r in rows)  # CSV quotes, it does not mangle
    tex = to_latex(sel, tables)
    assert r"x\textbar{}\textless{}b\textgreater{}evil\_\&\%\$\#\{\}" in tex
    assert r"\textbf{60.0 {\scriptsize$\pm$10.0}}" in tex and r"\toprule" in tex
    out = publish(sel, "json", tmp_path / "pub")
    doc = json.loads(out.read_text())
    assert doc["version"]["name"] == "v1"
    good = next(r for r in doc["tables"][0]["rows"] if r["detector"] == "good")
    assert good["values"]["mIoU"] == {"value": 0.6, "ci95": [0.5, 0.7]} and good["rank"] == 1


def test_a_name_of_10000_characters_lengthens_its_own_markdown_line_only():
    """tabulate padded every row of a table to its widest cell: each line was 10,000 characters."""
    from diffzoo.leaderboard.render.markdown import MAX_PAD

    long = "L" * 10_000
    records = [make_record(long), make_record("b", metrics={"mIoU": 0.3, "aAcc": 0.6}),
               make_record("c" * MAX_PAD, metrics={"mIoU": 0.2, "aAcc": 0.5})]
    lines = [line for line in to_markdown(Selection("x", records), build_tables(records)).splitlines()
             if line.startswith("|")]
    assert [line for line in lines if len(line) > 500] == [next(line for line in lines if long in line)]
    named = {line.split("|")[2].strip(): line for line in lines if line.split("|")[2].strip() in (long, "b")}
    assert named[long].split("|")[2] == f" {long} " and named["b"].split("|")[2] == " " + "b".ljust(MAX_PAD) + " "
    assert len({len(line) for line in lines if long not in line}) == 1  # the other lines still line up


def test_a_filter_typed_decomposed_matches_the_composed_name(tmp_path, capsys):
    """`--detector mu\u0308ller` (a name pasted from a macOS file name) matched no record of `müller`."""
    store = tmp_path / "store"
    RecordStore(store).add(make_record("m\xfcller"))
    RecordStore(store).add(make_record("b"))
    for pattern in ("mu\u0308ller", "mu\u0308l*"):
        code, out, _ = cli(capsys, "leaderboard", "list", "--store", str(store), "--detector", pattern)
        assert code == 0 and "1 record(s)" in out and "m\xfcller" in out


def test_a_cross_dataset_record_naming_its_training_data_decomposed_is_in_its_runs_group():
    """A record's dataset name is written in NFC, its config.train_dataset's as the run gave it: a
    run on `mu\u0308ller` put its cross-dataset tables in a group of their own, apart from its others."""
    from diffzoo.leaderboard.index import GroupKey

    own = make_record("a", dataset="mu\u0308ller", fingerprint="fp1")
    cross = make_record("a", suite="cross-dataset", dataset="other", fingerprint="fp2",
                        case_fields={"split": "test", "options": {"eval_dataset": "other"}},
                        config={"train_dataset": {"name": "mu\u0308ller", "fingerprint": "fp1"}})
    assert GroupKey.of(cross) == GroupKey.of(own) and GroupKey.of(own).dataset == "m\xfcller"


def test_publish_cli_all_text_formats_and_errors(tmp_path, capsys):
    store = tmp_path / "store"
    RecordStore(store).add(make_record("a"))
    out = tmp_path / ("pub" + "-long" * 30)  # a line longer than the console: still one line per file
    code, text, _ = cli(capsys, "leaderboard", "publish", "--store", str(store), "--format", "md,csv",
                        "--format", "latex", "--format", "json", "--out", str(out))
    assert code == 0, text
    assert sorted(p.name for p in out.iterdir()) == [".diffzoo-out.json", ".diffzoo-site.json", "leaderboard.csv",
                                                     "leaderboard.json",
                                                     "leaderboard.md",
                                                     "leaderboard.tex", "overview.csv", "overview.md",
                                                     "overview.tex"]
    written = (("md", ("leaderboard.md", "overview.md")), ("csv", ("leaderboard.csv", "overview.csv")),
               ("latex", ("leaderboard.tex", "overview.tex")), ("json", ("leaderboard.json",)))
    assert text.splitlines() == [f"wrote {f}: {out / name}" for f, names in written for name in names], text
    assert "not frozen" in (out / "leaderboard.md").read_text()
    code, _, err = cli(capsys, "leaderboard", "publish", "--store", str(store), "--format", "pdf")
    assert code != 0 and "unknown format(s) pdf" in err
    code, _, err = cli(capsys, "leaderboard", "publish", "--store", str(store), "--format", "", "--out", out)
    assert code == 2 and "--format is empty" in err
    code, text, _ = cli(capsys, "leaderboard", "publish", "--store", str(store), "--format", "md,md", "--format",
                        "md", "--out", out, "--force")
    assert code == 0 and text.count("leaderboard.md") == 1, text
    code, _, err = cli(capsys, "leaderboard", "publish", "nope", "--store", str(store))
    assert code != 0 and err.count("error:") == 1 and "'nope'" in err
    code, _, err = cli(capsys, "leaderboard", "list", "--store", str(tmp_path / "empty"))
    assert code != 0 and "is not a record store" in err
    # the store's own records/ given for the store: the fix named is the store, not `pass --store` (it was)
    code, _, err = cli(capsys, "leaderboard", "list", "--store", store / "records")
    assert (code, err.strip()) == (2, f"error: {store / 'records'} is not a record store (no "
                                      f"{store / 'records' / 'records'}); give the store it is part of: --store {store}")
    code, text, _ = cli(capsys, "leaderboard", "list", "--store", str(store))
    assert code == 0 and "1 record(s)" in text
    rid = make_record("a").id
    code, text, _ = cli(capsys, "leaderboard", "show", rid[:6], "--store", str(store))
    assert code == 0 and rid in text and "mIoU" in text and "ab" * 32 in text


def test_add_refuses_a_record_dated_after_now_and_its_slack_in_one_line(tmp_path, capsys):
    from datetime import UTC, datetime

    from diffzoo.harness.records.document import FUTURE_SLACK

    remote = RecordStore(tmp_path / "remote")
    soon = (datetime.now(UTC) + FUTURE_SLACK / 2).isoformat(timespec="seconds")  # a clock a little ahead: taken
    for det, date in (("ahead", "2999-01-01T00:00:00+00:00"), ("skewed", soon)):
        remote.add(make_record(det, state=make_state(), date=date))
    code, out, _ = cli(capsys, "leaderboard", "add", str(remote.root), "--store", str(tmp_path / "local"))
    ahead = make_record("ahead", state=make_state(), date="2999-01-01T00:00:00+00:00")
    assert code == 1 and "1 added, 0 already present, 1 rejected" in one_line(out)
    assert (f"record {ahead.id} is dated 2999-01-01T00:00:00+00:00, more than 1 hour after this machine's clock: "
            "the newest record wins every table it is in, so it would win them for good; fix its date (or the "
            "clock of the machine that made it)") in one_line(out)
    assert [r.body.detector.name for r in RecordStore(tmp_path / "local").load().records] == ["skewed"]


def test_a_record_dated_after_now_copied_into_a_store_fails_verify_and_validate_and_no_table_shows_it(tmp_path, capsys):
    """The one rule of ``leaderboard add`` holds for a file put into records/ by hand: checked, never a winner."""
    store = RecordStore(tmp_path / "s")
    store.add(now := make_record("now", state=make_state()))
    ahead = make_record("ahead", state=make_state(), date="2999-01-01T00:00:00+00:00")
    store.add(ahead)  # the writer's clock is its own; what it wrote is checked when read
    said = (f"record {ahead.id} is dated 2999-01-01T00:00:00+00:00, more than 1 hour after this machine's clock: "
            "the newest record wins every table it is in, so it would win them for good; fix its date (or the "
            "clock of the machine that made it)")
    for args in (("verify", "--store", store.root), ("validate", store.root)):
        code, out, _ = cli(capsys, "leaderboard", *args)
        assert code == 1 and said in one_line(out), out
    loaded = store.load()
    assert [r.body.detector.name for r in loaded.records] == ["now"]
    assert loaded.skipped == [(store.records_dir / f"{ahead.id}.json", said)]
    for shown in (ahead.id, ahead.id[:6]):  # `show` skips what `list` skips, by its id or a prefix
        code, _, err = cli(capsys, "leaderboard", "show", shown, "--store", store.root)
        assert (code, one_line(err)) == (1, f"error: {store.records_dir / f'{ahead.id}.json'} is not a valid "
                                            f"record, so no table shows it: {said}"), err
    files = [store.records_dir / f"{r.id}.json" for r in (now, ahead)]  # `diff` of the record files: skipped too
    code, out, err = cli(capsys, "leaderboard", "diff", *files, "--store", store.root)
    assert code == 0 and f"skipped {files[1]}: {said}" in one_line(err) and "ahead" not in out, out + err
    copy = store.records_dir / ("f" * 16 + ".json")  # a record under another id's name: one row twice
    copy.write_text((store.records_dir / f"{now.id}.json").read_text())
    code, _, err = cli(capsys, "leaderboard", "show", "f" * 16, "--store", store.root)
    assert (code, one_line(err)) == (1, f"error: {copy} is not a valid record, so no table shows it: file name "
                                        f"{copy.name} does not match its record_id {now.id}"), err


def test_freeze_and_versions_show_a_lookalike_suite_dataset_and_note_as_the_tables_do(tmp_path, capsys):
    """A suite ``stаndard``, a dataset ``mіni`` (each with one Cyrillic letter) and a note naming
    ``dеt`` are shown escaped by ``freeze`` and ``versions``, as ``list`` shows them: never as the Latin names."""
    store = RecordStore(tmp_path / ("s" + "-long" * 30))  # a line longer than the console: still one line
    store.add(make_record(suite="st\u0430ndard", dataset="m\u0456ni", state=make_state()))
    code, out, _ = cli(capsys, "leaderboard", "freeze", "v1", "--note", "d\u0435t retrained", "--store", store.root)
    assert code == 0 and len(out.splitlines()) == 1 and out.rstrip().endswith(str(store.root / "versions" / "v1.json"))
    assert "suites st\\u0430ndard v1;" in out and "st\u0430ndard" not in out
    code, out, _ = cli(capsys, "leaderboard", "versions", "--store", store.root)
    assert code == 0, out
    for shown, raw in (("st\\u0430ndard v1", "st\u0430ndard"), ("m\\u0456ni", "m\u0456ni"), ("d\\u0435t", "d\u0435t")):
        assert shown in out and raw not in out, out


def test_a_store_folder_linked_out_of_the_store_is_refused_before_any_write(tmp_path, capsys):
    """``versions/`` or ``records/`` made a link to a folder outside the store: freeze and add wrote
    there, then every reader refused what they wrote (a link out of the store), freeze with an error after it wrote."""
    store = RecordStore(tmp_path / "s")
    store.add(make_record(state=make_state()))
    remote = RecordStore(tmp_path / "remote")
    remote.add(make_record("b", state=make_state()))
    for name, args in (("versions", ("freeze", "v1")), ("records", ("add", remote.root))):
        (tmp_path / name).mkdir()
        if (store.root / name).is_dir():
            shutil.move(store.root / name, tmp_path / name / "kept")
        (store.root / name).symlink_to(tmp_path / name)
        code, out, err = cli(capsys, "leaderboard", *args, "--store", store.root)
        said = (f"{store.root / name} leads to {tmp_path / name}, outside {store.root} (a symbolic link); diffzoo "
                "reads only files inside the store, so it writes none there: replace the link by the folder")
        assert code == 1 and said in one_line(out + err), out + err  # add: its file rejected, saying why
        assert sorted(p.name for p in (tmp_path / name).iterdir()) == (["kept"] if name == "records" else [])


def test_verify_version_names_a_pin_whose_file_holds_another_record(tmp_path, capsys):
    """A version's pin of record A answered by record B's content (a kept file under A's name, the
    manifest sealed again to B's digest) is a bad row of A naming B, never B's checks passing for A."""
    from diffzoo.leaderboard.versions import sealed

    store = RecordStore(tmp_path / "s")
    a, b = (make_record(checkpoint=c * 32, state=make_state()) for c in ("ab", "cd"))
    for r in (a, b):
        store.add(r)
    path = freeze(store, "v1")
    manifest = {k: v for k, v in json.loads(path.read_text()).items() if k not in ("digests", "content_hash")}
    manifest["record_digests"][a.id] = b.content_digest
    path.write_text(json.dumps(sealed(manifest)))
    store.replaced_dir.mkdir()
    (store.replaced_dir / f"{a.id}.{b.content_digest[:16]}.json").write_text(b.to_json())
    code, out, _ = cli(capsys, "leaderboard", "verify", "v1", "--store", str(store.root))
    assert code == 1 and f"bad {b.id} ({store.replaced_dir / f'{a.id}.{b.content_digest[:16]}.json'}): holds record " \
        f"{b.id}, not {a.id}" in one_line(out), out
    code, out, err = cli(capsys, "leaderboard", "publish", "v1", "--store", str(store.root), "--out",
                         str(tmp_path / "site"))
    kept = store.replaced_dir / f"{a.id}.{b.content_digest[:16]}.json"
    assert (code, one_line(err)) == (1, f"error: version v1 froze record {a.id}, and {kept} holds record {b.id} "
                                        "(`diffzoo leaderboard verify` says more)"), err


def test_verify_says_which_states_no_record_names_once_records_are_removed(tmp_path, capsys):
    """A store whose records/ was emptied, its states left, is said by verify: a warning, not a
    failure, since a run stopped between keeping a state and writing its record leaves one too."""
    store = RecordStore(tmp_path / "s")
    store.add(a := make_record(state=make_state()))
    code, out, _ = cli(capsys, "leaderboard", "verify", "--store", store.root)
    assert code == 0 and "warning" not in out, out
    (store.records_dir / f"{a.id}.json").unlink()
    code, out, _ = cli(capsys, "leaderboard", "verify", "--store", store.root)
    assert code == 0 and (f"warning: 1 state file(s) named by no record of records/ or replaced/ (first: "
                          f"{store.root / a.body.state.file}): their records were removed, or a run stopped before "
                          "writing them") in one_line(out), out


def test_verify_fails_a_file_of_replaced_not_named_by_its_content(tmp_path, capsys):
    """A file of replaced/ is kept as ``ID.DIGEST.json`` (its content's digest), the one name a
    version's pin finds it by: one under another name is a bad row of verify, as a misnamed record is."""
    store = RecordStore(tmp_path / "s")
    store.add(a := make_record(state=make_state()))
    store.add(make_record(state=make_state(seed=1)), replace=True)  # the same run: a is kept in replaced/
    code, out, _ = cli(capsys, "leaderboard", "verify", "--store", store.root)
    assert code == 0 and "1 good, 0 bad record(s)" in one_line(out), out  # a kept record is none of the store's
    moved = store.replaced_dir / f"{a.id}.json"
    (store.replaced_dir / f"{a.id}.{a.content_digest[:16]}.json").rename(moved)
    code, out, _ = cli(capsys, "leaderboard", "verify", "--store", store.root)
    assert code == 1 and (f"bad {moved}: file name {a.id}.json is not ID.{a.content_digest[:16]}.json (ID a record "
                          "id), the name replaced/ keeps its content under: no version finds it there") in one_line(out), out
    assert "1 good, 1 bad record(s)" in out


def test_a_record_dated_after_now_frozen_into_a_version_is_skipped_by_its_publish_naming_it(tmp_path, capsys,
                                                                                           monkeypatch):
    """A version frozen where the rule did not hold (a record dated 2999) publishes as the tables of
    the store do: without that record, saying which it skipped and why; verify VERSION fails it."""
    from datetime import timedelta

    from diffzoo.harness.records import document

    store = RecordStore(tmp_path / "s")
    store.add(make_record("now", state=make_state()))
    ahead = make_record("ahead", state=make_state(), date="2999-01-01T00:00:00+00:00")
    store.add(ahead)
    with monkeypatch.context() as m:
        m.setattr(document, "FUTURE_SLACK", timedelta(days=400_000))
        freeze(store, "v1")
    said = (f"record {ahead.id} is dated 2999-01-01T00:00:00+00:00, more than 1 hour after this machine's clock: "
            "the newest record wins every table it is in, so it would win them for good; fix its date (or the "
            "clock of the machine that made it)")
    selection = load_version(store, "v1")
    assert [r.body.detector.name for r in selection.records] == ["now"]
    assert selection.skipped == ((store.records_dir / f"{ahead.id}.json", said),)
    code, out, err = cli(capsys, "leaderboard", "publish", "v1", "--store", str(store.root), "--out",
                         str(tmp_path / "site"))
    assert code == 0 and f"skipped {store.records_dir / f'{ahead.id}.json'}: {said}" in one_line(err), err
    assert "ahead" not in (tmp_path / "site" / "leaderboard.md").read_text()
    assert cli(capsys, "leaderboard", "verify", "v1", "--store", str(store.root))[0] == 1


def test_diff_of_a_case_run_with_released_weights_in_b_says_what_differs(tmp_path):
    """A table kept apart only by its weights (released, zero-shot, beside trained here) says so
    as the reason it has no partner: never an empty "not comparable: "."""
    from helpers.records import resealed

    a = make_record("det")
    b = resealed(a, lambda d: d["detector"].update(checkpoint_source="released", release={"name": "r1", "files": []}))
    notes = [(t.status, t.note) for t in diff(Selection("A", [a]), Selection("B", [b])).tables]
    assert notes == [("removed", "not comparable: weights none -> released weights, zero-shot"),
                     ("added", "not comparable: weights none -> released weights, zero-shot")]  # trained here first


def test_diff_of_a_record_file_misnamed_in_records_skips_it_as_the_store_does(tmp_path, capsys):
    """A copy of a record under another name in ``records/``, given to ``diff`` by its path, was read
    as a record, though the store's tables skip it (one row twice)."""
    store = RecordStore(tmp_path / "s")
    store.add(record := make_record(state=make_state()))
    copy = store.records_dir / "0000000000000000.json"
    shutil.copy(store.records_dir / f"{record.id}.json", copy)
    code, out, err = cli(capsys, "leaderboard", "diff", str(copy), str(store.records_dir / f"{record.id}.json"),
                         "--store", str(store.root), "--json")
    assert code == 0 and f"{copy}: file name 0000000000000000.json does not match its record_id {record.id}" in (
        one_line(err)), err
    assert [t["status"] for t in json.loads(out)["tables"]] == ["added"]


def test_diff_names_a_file_both_sides_skip_once(tmp_path, capsys):
    """A bad file of a folder both sides read (or a record two versions froze) is one file skipped, said once."""
    store = RecordStore(tmp_path / "s")
    store.add(make_record(state=make_state()))
    (store.records_dir / "bad.json").write_text("{oops")
    code, _, err = cli(capsys, "leaderboard", "diff", str(store.root), str(store.root), "--store", str(store.root))
    assert code == 0 and "skipped 1 file(s)" in one_line(err) and one_line(err).count("bad.json") == 1, err
