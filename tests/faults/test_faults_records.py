"""Fault suite: records and the leaderboard store: identity, typed and verifiable
records, terminal output of the leaderboard commands, output folders and killed
writes.

Records are made by ``helpers.records.make_record(state=make_state())``: every
number comes from a real metric state, which the record carries.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from diffzoo.harness.core.errors import ConfigError, RecordError
from diffzoo.harness.records.document import ResultRecord
from diffzoo.leaderboard.store import RecordStore

from helpers.cli import cli, one_line
from helpers.records import make_record, make_state

pytestmark = pytest.mark.isolated_cache  # fault tests start from an empty cache

def verified(detector: str = "det", seed: int = 0, task: str = "binary", **kw) -> ResultRecord:
    """A record whose numbers its state reproduces."""
    return make_record(detector, task=task, case=task, state=make_state(task, seed=seed), **kw)


def stored(tmp_path: Path, record: ResultRecord | None = None) -> tuple[Path, ResultRecord, Path]:
    """(store folder, the record, its file) of a store holding one record."""
    root = tmp_path / "store"
    record = record or verified()
    RecordStore(root).add(record)
    return root, record, root / "records" / f"{record.id}.json"


def reseal(data: dict) -> dict:
    """Recompute every hash a record carries, as an editor with diffzoo's
    source can: only the state and its binding then tell the edit."""
    from diffzoo.harness.records import document as records

    data["digests"] = records.field_digests(data)
    data["record_id"] = records.record_id_of(data)
    return data


def edit(path: Path, change, *, sealed: bool = False) -> Path:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(reseal(data) if sealed else data))
    return path


def verify(capsys, root: Path, *args) -> tuple[int, str]:
    code, out, _ = cli(capsys, "leaderboard", "verify", *args, "--store", root)
    return code, one_line(out)


def add_into_new_store(capsys, tmp_path: Path, path: Path) -> tuple[int, str]:
    code, out, _ = cli(capsys, "leaderboard", "add", path, "--store", tmp_path / "other")
    return code, one_line(out)


# -- editing any number is caught and named (section 4, acceptance) ----------------------------
@pytest.mark.parametrize("field, change", [
    ("metrics.mIoU", lambda d: d["metrics"].update(mIoU=0.99)),
    ("ci95.aAcc", lambda d: d["ci95"].update(aAcc=[0.1, 0.2])),
    ("counts.evaluated", lambda d: d["counts"].update(evaluated=99)),
    ("baselines.all_edited", lambda d: d["baselines"]["all_edited"].update(mIoU=0.5)),
    ("config.train", lambda d: d["config"]["train"].update(lr=1.0)),
    ("seed", lambda d: d.update(seed=7)),
    ("threshold_policy.pixel", lambda d: d["threshold_policy"].update(pixel="fixed 0.1")),
    ("slices.base", lambda d: d["slices"]["base"]["ai"].update(mIoU=0.0)),
])
def test_editing_any_number_fails_verify_and_add_naming_the_field(tmp_path, capsys, field, change):
    record = verified(ci95={"aAcc": [0.5, 0.99]}, config={"train": {"lr": 0.01}},
                      baselines={"all_edited": {"mIoU": 0.2, "aAcc": 0.3}})
    root, _, path = stored(tmp_path, record)
    edit(path, change)
    code, out = verify(capsys, root)
    assert code == 1 and f"field {field}" in out and "1 bad record(s)" in out
    code, out = add_into_new_store(capsys, tmp_path, path)
    assert code == 1 and f"field {field}" in out and "1 rejected" in out


def test_a_lone_surrogate_in_a_record_is_named_never_an_internal_error(tmp_path, capsys):
    """`\\ud800` alone is valid JSON but no UTF-8 text, so no digest of it can be made: verify, list and
    add stopped with an internal UnicodeEncodeError; the file is now bad like any text that is not UTF-8."""
    root, record, path = stored(tmp_path)
    path.write_text(path.read_text().replace(f'"{record.body.detector.name}"', '"x\\ud800"', 1))
    said = f"{path}: is not UTF-8 text (it holds a lone surrogate, \\ud800)"
    code, out = verify(capsys, root)
    assert code == 1 and out.startswith(f"bad {said}"), out
    code, out, err = cli(capsys, "leaderboard", "list", "--store", root)
    assert code == 0 and f"skipped {said}" in one_line(out + err), out + err
    code, out = add_into_new_store(capsys, tmp_path, path)
    assert code == 1 and said in one_line(out) and "1 rejected" in out, out


def test_a_number_shadowed_by_a_key_given_twice_is_caught(tmp_path, capsys):
    """`"mIoU": 0.99` put before the record's own mIoU: json keeps the last (the true one), so the
    record verified, while the file read top down (a person, grep, a parser keeping the first) says 0.99."""
    root, record, path = stored(tmp_path)
    text = path.read_text()
    path.write_text(text.replace('"metrics": {', '"metrics": {"mIoU": 0.99, ', 1))
    code, out = verify(capsys, root)
    assert code == 1 and out.startswith(f"bad {path}: gives 'mIoU' twice in one object; keep one") and \
        out.endswith(f"0 good, 1 bad record(s); 0 temp file(s) left (store {root})"), out
    code, out = add_into_new_store(capsys, tmp_path, path)
    assert code == 1 and "gives 'mIoU' twice in one object" in out and "1 rejected" in out


@pytest.mark.parametrize("field, change", [
    ("metrics.mIoU", lambda d: d["metrics"].update(mIoU=0.99)),
    ("counts.evaluated", lambda d: d["counts"].update(evaluated=99)),
    ("slices.base.ai.mIoU", lambda d: d["slices"]["base"]["ai"].update(mIoU=0.0)),
    ("predictions_digest", lambda d: d.update(predictions_digest="0" * 64)),
])
def test_forged_number_with_every_hash_recomputed_is_caught_by_the_state(tmp_path, capsys, field, change):
    root, _, path = stored(tmp_path)
    edit(path, change, sealed=True)
    code, out = verify(capsys, root)
    assert code == 1 and f"field {field}" in out
    code, out = add_into_new_store(capsys, tmp_path, path)
    assert code == 1 and f"field {field}" in out


def test_forged_confusion_count_of_a_semantic_record_is_named(tmp_path, capsys):
    root, _, path = stored(tmp_path, verified(task="semantic"))
    edit(path, lambda d: d["confusion"][1].__setitem__(2, d["confusion"][1][2] + 5), sealed=True)
    code, out = verify(capsys, root)
    assert code == 1 and "field confusion[1][2]" in out


# -- refusals of add and validate (section 4) ---------------------------------------------------
@pytest.mark.parametrize("field, change, why", [
    ("detector.checkpoint_sha256", lambda d: d["detector"].update(checkpoint_sha256="AB" * 32), "64 lowercase hex"),
    ("detector.checkpoint_sha256", lambda d: d["detector"].update(checkpoint_sha256="ab" * 31), "64 lowercase hex"),
    ("seed", lambda d: d.update(seed=-1), "outside [0, 9223372036854775808)"),
    ("seed", lambda d: d.update(seed=2**63), "outside [0, 9223372036854775808)"),
    ("seed", lambda d: d.update(seed=True), "must be an integer"),
    ("seed", lambda d: d.update(seed=1.5), "must be an integer"),
    ("detector.name", lambda d: d["detector"].update(name=""), "must not be empty"),
    ("suite.version", lambda d: d["suite"].update(version="  "), "must not be empty"),
    ("dataset.fingerprint", lambda d: d["dataset"].update(fingerprint=""), "must not be empty"),
    ("baselines.all_edited.mIoU", lambda d: d["baselines"]["all_edited"].update(mIoU=1.5), "outside its range"),
    ("slices.base.ai.mIoU", lambda d: d["slices"]["base"]["ai"].update(mIoU=-0.5), "outside its range"),
    # the newest record of a run is the one of the latest date: text that is no date would always win
    ("environment.date", lambda d: d["environment"].update(date="zzz"),
     "must be an ISO 8601 date and time (2026-11-29T12:00:00+00:00), got 'zzz'"),
    # a time at the calendar's edge whose UTC time is out of it: every reader's UTC comparison failed
    ("environment.date", lambda d: d["environment"].update(date="0001-01-01T00:00:00+01:00"),
     "is '0001-01-01T00:00:00+01:00', outside the years 1 to 9999 in UTC"),
    ("environment.date", lambda d: d["environment"].update(date="9999-12-31T23:59:59-12:00"),
     "is '9999-12-31T23:59:59-12:00', outside the years 1 to 9999 in UTC"),
])
def test_add_and_validate_refuse_a_bad_value_naming_the_field(tmp_path, capsys, field, change, why):
    root, _, path = stored(tmp_path, verified(baselines={"all_edited": {"mIoU": 0.2}}))
    edit(path, change, sealed=True)
    code, out = add_into_new_store(capsys, tmp_path, path)
    assert code == 1 and f"field {field}" in out and why in out
    code, out, _ = cli(capsys, "leaderboard", "validate", path)
    assert code == 1 and f"field {field}" in one_line(out)



def test_a_stored_record_dated_outside_the_utc_calendar_is_skipped_never_an_internal_error(tmp_path, capsys):
    """A date that reads as ISO 8601 but whose UTC time is before year 1 stopped `list`, `publish` and
    `diff` with an internal error (OverflowError); the store's one bad file is skipped and named."""
    root, _, path = stored(tmp_path)
    edit(path, lambda d: d["environment"].update(date="0001-01-01T00:00:00+01:00"), sealed=True)
    for args in (("list",), ("publish", "--out", tmp_path / "pub")):
        code, _, err = cli(capsys, "leaderboard", *args, "--store", root)
        assert "skipped 1 file(s)" in one_line(err) and "outside the years 1 to 9999 in UTC" in one_line(err), err

def test_create_refuses_a_checkpoint_hash_that_is_not_a_sha256():
    with pytest.raises(RecordError, match="detector.checkpoint_sha256 must be 64 lowercase hex"):
        make_record(checkpoint="not-a-hash")


@pytest.mark.parametrize("version", [True, 1.0])
def test_unknown_schema_versions_are_refused(tmp_path, capsys, version):
    root, _, path = stored(tmp_path)
    edit(path, lambda d: d.update(schema_version=version), sealed=True)
    code, out = add_into_new_store(capsys, tmp_path, path)
    assert code == 1 and f"schema version {version!r} is not 2" in out


# -- the state travels with the record and is never trusted blindly ----------------------------
def test_record_whose_state_file_is_missing_fails_verify_and_add(tmp_path, capsys):
    root, record, path = stored(tmp_path)
    for state in (root / "states").glob("*.json"):
        state.unlink()
    code, out = verify(capsys, root)
    assert code == 1 and "state file states/" in out and "is missing" in out
    code, out = add_into_new_store(capsys, tmp_path, path)
    assert code == 1 and "is missing" in out


def test_state_file_with_other_content_fails_verify(tmp_path, capsys):
    root, record, _ = stored(tmp_path)
    [state] = (root / "states").glob("*.json")
    body = json.loads(state.read_text())
    body["rows"]["conf"][0][0] += 1
    state.write_text(json.dumps(body))
    code, out = verify(capsys, root)
    assert code == 1 and "sha256" in out and "was changed or replaced" in out


def test_foreign_state_file_in_the_output_folder_is_never_trusted_or_overwritten(tmp_path):
    record = verified()
    root = tmp_path / "out"
    foreign = b'{"not": "a state"}'
    names = list(record.attachments) or [f"states/{n}.json" for n in ("a" * 64,)]
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(foreign)
    with pytest.raises(RecordError, match="not the metric state it is named for"):
        RecordStore(root).add(record)
    assert all((root / name).read_bytes() == foreign for name in names)
    assert not (root / "records" / f"{record.id}.json").exists()


def test_import_of_a_record_without_a_state_is_refused(tmp_path, capsys):
    loose = tmp_path / "loose"
    loose.mkdir()
    (loose / "r.json").write_text(make_record("nostate").to_json())
    code, out = add_into_new_store(capsys, tmp_path, loose / "r.json")
    assert code == 1 and "has no metric state" in out


# -- one identity per run (section 3) ---------------------------------------------------------
def test_the_same_run_recorded_twice_is_one_row_and_says_already_recorded(tmp_path):
    store = RecordStore(tmp_path / "store")
    first = verified()
    store.add(first)
    again = verified(environment={"date": "2027-01-01T00:00:00+00:00", "git": "fedcba9876543210", "host": "b"})
    outcome = store.add(again)
    assert len(store) == 1
    assert (outcome.status, outcome.reason, outcome.differs) == ("present", f"already recorded: {first.id}", ())
    assert store.get(first.id).content_digest == first.content_digest  # the stored record is kept


def test_a_rerun_with_other_numbers_is_reported_and_replaced_only_when_asked(tmp_path):
    store = RecordStore(tmp_path / "store")
    first = verified()
    store.add(first)
    noisy = verified(seed=3)  # same identity, other predictions: nondeterminism
    outcome = store.add(noisy)
    assert outcome.status == "present" and "mIoU" in outcome.differs and "predictions_digest" in outcome.differs
    assert store.get(first.id).metrics == first.metrics
    outcome = store.add(noisy, replace=True)
    assert outcome.status == "replaced" and "mIoU" in outcome.differs
    assert store.get(first.id).metrics == noisy.metrics and len(store) == 1
    assert store.find(first.id, first.content_digest) is not None  # the replaced record is kept


def test_a_rerun_over_a_stored_record_edited_by_hand_names_the_stored_record_not_nondeterminism(tmp_path, capsys):
    record = verified()
    root, _, path = stored(tmp_path, record)
    edit(path, lambda d: d["metrics"].update(mIoU=0.99), sealed=True)
    code, out = verify(capsys, root)
    assert code == 1 and "field metrics.mIoU" in out
    outcome = RecordStore(root).add(record)
    assert outcome.status == "present" and outcome.stored_invalid and outcome.differs == ("mIoU",)
    assert outcome.reason.startswith(f"already recorded: {record.id}, but the stored record fails verification "
                                     "(field metrics.mIoU")
    assert outcome.reason.endswith("; --rerun replaces it") and "nondeterminism" not in outcome.reason
    source = tmp_path / "elsewhere"
    RecordStore(source).add(record)
    code, out, _ = cli(capsys, "leaderboard", "add", source, "--store", root)
    assert code == 1 and "the stored record fails verification (field metrics.mIoU" in one_line(out)


def test_a_frozen_version_stays_verifiable_after_a_rerun_replaced_its_record(tmp_path, capsys):
    from diffzoo.leaderboard.versions import freeze, load_version

    root, first, _ = stored(tmp_path)
    store = RecordStore(root)
    freeze(store, "v1")
    store.add(verified(seed=3), replace=True)
    assert [r.metrics for r in load_version(store, "v1").records] == [first.metrics]
    code, out = verify(capsys, root, "v1")
    assert code == 0 and "1 good, 0 bad record(s)" in out
    code, out = verify(capsys, root)
    assert code == 0


def test_verify_of_a_version_names_a_record_edited_after_freezing(tmp_path, capsys):
    from diffzoo.leaderboard.versions import freeze

    root, record, path = stored(tmp_path, verified(ci95={"aAcc": [0.5, 0.99]}))
    freeze(RecordStore(root), "v1")
    edit(path, lambda d: d["ci95"].update(aAcc=[0.9, 0.99]), sealed=True)  # CIs are not recomputed
    code, out = verify(capsys, root, "v1")
    assert code == 1 and f"bad {record.id}" in out and "version v1 froze record" in out
    assert "it was edited or removed" in out


def test_verify_of_a_version_names_the_file_a_frozen_record_was_renamed_to_never_an_edit(tmp_path, capsys):
    """Its content is intact under another file name: verify said it "was edited or removed"."""
    from diffzoo.leaderboard.versions import freeze

    root, record, path = stored(tmp_path)
    freeze(RecordStore(root), "v1")
    renamed = path.rename(path.with_name("0123456789abcdef.json"))
    code, out = verify(capsys, root, "v1")
    assert code == 1 and out.startswith(f"bad {record.id}: version v1 froze record {record.id} with content "
                                        f"{record.content_digest[:16]}..., and {renamed} holds it under another file "
                                        f"name: name it {record.id}.json again0 good, 1 bad record(s)"), out


def test_a_frozen_record_that_cannot_be_read_is_named_for_what_it_is_never_an_edit(tmp_path, capsys):
    """A folder (or a file that cannot be read) where a frozen record's file is: verify and publish
    name the file and what it is, never that the record was edited or removed."""
    from diffzoo.leaderboard.versions import freeze

    root, record, path = stored(tmp_path)
    freeze(RecordStore(root), "v1")
    path.unlink()
    path.mkdir()
    said = (f"version v1 froze record {record.id} with content {record.content_digest[:16]}..., and record "
            f"{path} is a folder, not a regular file")
    code, out = verify(capsys, root, "v1")
    assert code == 1 and said in one_line(out) and "edited or removed" not in out, out
    code, _, err = cli(capsys, "leaderboard", "publish", "v1", "--store", root, "--out", tmp_path / "pub")
    assert code == 1 and said in one_line(err) and "edited or removed" not in err, err


def test_verify_of_a_version_reads_each_of_its_records_once(tmp_path, capsys, monkeypatch):
    """The version's summary and each record's own checks are made from one read of its file."""
    from diffzoo.harness.records import document
    from diffzoo.leaderboard.versions import freeze

    root, _, _ = stored(tmp_path)
    RecordStore(root).add(verified("other"))
    freeze(RecordStore(root), "v1")
    reads: list[Path] = []
    read_json = document.read_json_file  # what every read of a record file goes through
    monkeypatch.setattr(document, "read_json_file", lambda path, *a: reads.append(path) or read_json(path, *a))
    code, out = verify(capsys, root, "v1")
    assert code == 0 and "2 good, 0 bad record(s)" in out
    assert sorted(reads) == sorted((root / "records").glob("*.json"))


@pytest.mark.parametrize("edit_manifest, said", [
    (lambda m: m.update(datasets=[{"name": "DiffSeg30k", "fingerprint": "0123456789abcdef"}]), "it lists datasets"),
    (lambda m: m["suites"][0].update(version="9"), "it lists suites"),
    (lambda m: m.update(metrics_versions=["7"]), "it lists metrics_versions"),
    (lambda m: m.update(detectors=["the-best"]), "it lists detectors"),
])
def test_a_version_file_whose_summary_is_not_its_records_is_refused(tmp_path, capsys, edit_manifest, said):
    """What a published header prints (datasets, suites, metric versions) comes from the version file:
    one edited there, its digests and content hash made again to match, is named by verify and never
    published as the records' provenance."""
    from diffzoo.leaderboard.versions import freeze, sealed

    root, _, _ = stored(tmp_path)
    path = freeze(RecordStore(root), "v1")
    manifest = json.loads(path.read_text())
    edit_manifest(manifest)
    path.write_text(json.dumps(sealed({k: v for k, v in manifest.items() if k not in ("digests", "content_hash")})))
    for args in ((), ("v1",)):
        code, out = verify(capsys, root, *args)
        assert code == 1 and said in one_line(out) and "changed after it was frozen" in one_line(out), out
    code, out, err = cli(capsys, "leaderboard", "publish", "v1", "--store", root, "--out", tmp_path / "pub")
    assert code == 1 and said in one_line(err) and not (tmp_path / "pub" / "leaderboard.md").exists(), err


@pytest.mark.parametrize("edit_manifest, field", [
    (lambda m: m.update(created="2020-01-01T00:00:00+00:00"), "created"),
    (lambda m: m.update(note="the official numbers"), "note"),
    (lambda m: m["digests"].update(note="0" * 16), "note"),  # its digest alone: said the same way
    (lambda m: m["filters"].update(detectors=["a*"]), "filters.detectors"),
    (lambda m: m.update(extra="anything"), "extra"),
    (lambda m: m.update(extra=float("nan")), None),  # no field digest: the hash alone tells
])
def test_any_field_of_a_version_file_edited_after_freezing_is_named(tmp_path, capsys, edit_manifest, field):
    """A version is immutable: its content hash covers every field but itself, and its field digests
    name the one edited (the hash covered the record digests only: an edited date, note or filter
    verified)."""
    from diffzoo.leaderboard.versions import freeze

    root, _, _ = stored(tmp_path)
    path = freeze(RecordStore(root), "v1", note="the first")
    manifest = json.loads(path.read_text())
    edit_manifest(manifest)
    path.write_text(json.dumps(manifest))
    what = f"field {field} was added after it was frozen, or its digest removed" if field == "extra" else \
        f"field {field}, or its digest, was changed after it was frozen"
    said = f"version file {path}: " + (what if field else "its content_hash does not match its content")
    for args in ((), ("v1",)):
        code, out = verify(capsys, root, *args)
        assert code == 1 and said in one_line(out), out
    code, out, err = cli(capsys, "leaderboard", "publish", "v1", "--store", root, "--out", tmp_path / "pub")
    assert code == 1 and said in one_line(err) and not (tmp_path / "pub" / "leaderboard.md").exists(), err


@pytest.mark.parametrize("edit_manifest, field", [
    (lambda m: m["record_digests"].update({m["records"][0]: 5}), "record_digests"),
    (lambda m: m.update(records=["../../x"], record_digests={"../../x": "0" * 64}), "records"),
    (lambda m: m.update(suites="standard"), "suites"),
    (lambda m: m["datasets"][0].pop("fingerprint"), "datasets"),
    (lambda m: m.update(created=5, note=["a"]), "created, note"),
])
def test_a_version_file_of_another_shape_is_named_never_an_internal_error(tmp_path, capsys, edit_manifest, field):
    """A version file edited, its digests and hash made again (nothing signs them), with a value of
    another type or shape: every command names the field (verify, publish and diff stopped with an
    internal TypeError, `versions` too; a created date or note of another type verified)."""
    from diffzoo.leaderboard.versions import freeze, sealed

    root, _, _ = stored(tmp_path)
    path = freeze(RecordStore(root), "v1")
    manifest = json.loads(path.read_text())
    edit_manifest(manifest)
    path.write_text(json.dumps(sealed({k: v for k, v in manifest.items() if k not in ("digests", "content_hash")})))
    said = f"version file {path}: field(s) {field} missing or not as freeze writes them"
    for args in (("verify",), ("verify", "v1"), ("versions",), ("publish", "v1", "--out", tmp_path / "pub"),
                 ("diff", "v1", root)):
        code, out, err = cli(capsys, "leaderboard", *args, "--store", root)
        assert code == 1 and said in one_line(out + err) and "internal error" not in out + err, (args, out + err)


def test_a_version_resealed_with_fewer_records_than_its_summary_names_is_bad_in_versions(tmp_path, capsys):
    """A version re-sealed with `records: []` was listed by `versions` with 0 records (loading and
    verify named it); each summary list names at least one and at most as many as the records,
    which the version file alone tells."""
    from diffzoo.leaderboard.versions import freeze, sealed

    root, _, _ = stored(tmp_path)
    path = freeze(RecordStore(root), "v1")
    manifest = {k: v for k, v in json.loads(path.read_text()).items() if k not in ("digests", "content_hash")}
    path.write_text(json.dumps(sealed({**manifest, "records": [], "record_digests": {}})))
    said = (f"error: version file {path}: its 0 record(s) cannot hold the 1 datasets, 1 suites, 1 metrics_versions, "
            "1 detectors it lists: it was changed after it was frozen")
    code, out, err = cli(capsys, "leaderboard", "versions", "--store", root)
    assert code == 1 and one_line(err) == said and "v1" not in out, out + err
    for args in (("verify",), ("verify", "v1"), ("publish", "v1", "--out", tmp_path / "pub")):
        code, out, err = cli(capsys, "leaderboard", *args, "--store", root)
        assert code == 1 and said.removeprefix("error: ") in one_line(out + err), (args, out + err)


def test_a_note_or_filter_of_bytes_that_are_no_text_is_refused_by_freeze(tmp_path, capsys):
    """An argument of bytes that are not UTF-8 (Python's surrogate escapes) cannot be written to
    a version file: one line, exit 2, no version (it was an internal UnicodeEncodeError)."""
    root, _, _ = stored(tmp_path)
    code, _, err = cli(capsys, "leaderboard", "freeze", "v1", "--store", root, "--note", "a\udcffb")
    assert code == 2 and one_line(err) == ("error: --note, --suite, --dataset and --detector must be UTF-8 text: "
                                           "one holds bytes that are not"), err
    assert not (root / "versions").exists()


def test_a_record_whose_numbers_are_not_its_states_is_never_frozen(tmp_path, capsys):
    """A version pins its records for good: a record re-sealed after an edit of its numbers (which
    only the state tells) is refused by freeze, as `add` refuses it."""
    root, record, path = stored(tmp_path)
    edit(path, lambda d: d["metrics"].update(mIoU=0.99), sealed=True)
    edited = ResultRecord.read(path)
    path.rename(path.with_name(f"{edited.id}.json"))
    code, out, err = cli(capsys, "leaderboard", "freeze", "v1", "--store", root)
    assert code == 1 and "cannot freeze 'v1': 1 record(s) whose numbers their state does not confirm" in one_line(err)
    assert "metrics.mIoU is 0.99, but recomputed from the state" in one_line(err) and not (root / "versions").exists()


def test_a_record_whose_state_file_is_gone_is_never_frozen_and_freeze_says_why(tmp_path, capsys):
    """The state is missing, not at odds with the record: freeze said its numbers "are not those of their state"."""
    root, record, _ = stored(tmp_path)
    state = root / record.data["state_file"]
    state.unlink()
    code, out, err = cli(capsys, "leaderboard", "freeze", "v1", "--store", root)
    assert code == 1 and one_line(err) == (
        f"error: cannot freeze 'v1': 1 record(s) whose numbers their state does not confirm (first: {record.id}: "
        f"state file {record.data['state_file']} that the record names is missing (looked in {root / 'states'}); its "
        "numbers cannot be checked: copy the store's states/ folder with its records/); `diffzoo leaderboard verify` "
        "lists them")
    assert not (root / "versions").exists()


def test_a_record_copied_under_another_name_in_a_store_is_skipped_and_said(tmp_path, capsys):
    """`leaderboard list` showed the copy as a second row (and counted it) without a word."""
    root, record, path = stored(tmp_path)
    shutil.copy(path, path.with_name(f"copy-of-{record.id}.json"))
    code, out, err = cli(capsys, "leaderboard", "list", "--store", root)
    assert code == 0 and "1 record(s)" in one_line(out) and out.count(record.id[:8]) == 1, out + err
    assert f"copy-of-{record.id}.json" in one_line(out + err) and "does not match its record_id" in one_line(out + err)


def test_a_version_file_copied_under_another_name_is_refused(tmp_path, capsys):
    from diffzoo.leaderboard.versions import freeze

    root, _, _ = stored(tmp_path)
    path = freeze(RecordStore(root), "v1")
    shutil.copy(path, path.with_name("v4.json"))
    code, out = verify(capsys, root)
    assert code == 1 and "version file" in out and "v4.json is version 'v1': it was copied or renamed" in one_line(out)
    code, out, err = cli(capsys, "leaderboard", "publish", "v4", "--store", root, "--out", tmp_path / "pub")
    assert code == 1 and "is version 'v1'" in one_line(err), err
    # given by its path, the copy is the file read, never the version it names
    code, out, err = cli(capsys, "leaderboard", "diff", path.with_name("v4.json"), "v1", "--store", root)
    assert code == 1 and one_line(err) == f"error: version file {path.with_name('v4.json')} is version 'v1': it was " \
        "copied or renamed after it was frozen", err


@pytest.mark.parametrize("command", ["verify", "publish"])
def test_a_version_name_that_is_a_path_is_no_version_and_no_file_outside_versions_is_read(tmp_path, capsys, command):
    """``verify ../x`` read STORE/x.json as a version file and reported a bad version, exit 1."""
    from diffzoo.leaderboard.versions import freeze

    root, _, _ = stored(tmp_path)
    freeze(RecordStore(root), "v1")
    (root / "x.json").write_text("{}")
    for name in ("../x", "../versions/v1"):
        extra = ["--out", tmp_path / "pub"] if command == "publish" else []
        code, out, err = cli(capsys, "leaderboard", command, name, "--store", root, *extra)
        assert code == 2 and one_line(err) in (
            f"error: no version {name!r} in {root / 'versions'} (versions: v1)",
            f"error: {name!r} is neither a version in {root} (v1) nor a folder or file of records"), err
    assert not (tmp_path / "pub").exists()


def test_a_version_file_outside_a_store_is_named_never_read_as_another_store(tmp_path, capsys):
    from diffzoo.leaderboard.versions import freeze

    root, _, _ = stored(tmp_path)
    copy = shutil.copy(freeze(RecordStore(root), "v1"), tmp_path / "v1.json")
    code, out, err = cli(capsys, "leaderboard", "diff", copy, "v1", "--store", root)
    assert code == 2 and one_line(err) == (
        f"error: version file {copy} is not in a store's versions/ folder, so its records cannot be found; give "
        "the version file in its store, or its name with --store STORE"), err


def test_a_freeze_killed_while_writing_leaves_no_version_and_the_same_freeze_then_works(tmp_path, capsys,
                                                                                         monkeypatch):
    """A version is whole or absent: a freeze that dies at the moment the version would be
    written (here: os.fsync raising, as a kill or a full disk would stop it) leaves no file a
    reader parses, only a temp file; the same freeze then succeeds."""
    import os

    from diffzoo.leaderboard.versions import freeze, list_versions

    root, _, _ = stored(tmp_path)
    store = RecordStore(root)

    def dies(fd):
        raise KeyboardInterrupt  # a BaseException, as a signal's would be

    monkeypatch.setattr(os, "fsync", dies)
    with pytest.raises(KeyboardInterrupt):
        freeze(store, "v1")
    monkeypatch.undo()
    assert list(store.versions_dir.glob("*.json")) == [] and list_versions(store) == ([], [])
    code, out, _ = cli(capsys, "leaderboard", "versions", "--store", root)
    assert code == 0
    freeze(store, "v1")
    assert [v["name"] for v in list_versions(store)[0]] == ["v1"]
    with pytest.raises(ConfigError, match="already exists"):
        freeze(store, "v1")


def test_versions_lists_the_readable_versions_and_names_each_file_that_is_none(tmp_path, capsys):
    """One version file that cannot be read (hand-edited, a folder named like one) stopped
    `leaderboard versions` at it: no version was listed."""
    from diffzoo.leaderboard.versions import freeze

    root, _, _ = stored(tmp_path)
    freeze(RecordStore(root), "v1")
    (root / "versions" / "a.json").write_text('{"schema_version": 2}')
    (root / "versions" / "b.json").mkdir()
    code, out, err = cli(capsys, "leaderboard", "versions", "--store", root)
    assert code == 1 and "│ v1 " in out
    assert err.splitlines() == [
        f"error: version file {root / 'versions' / 'a.json'}: field(s) name, created, note, content_hash, digests, "
        "filters, datasets, suites, metrics_versions, detectors, records, record_digests missing or not as freeze "
        "writes them",
        f"error: version file {root / 'versions' / 'b.json'} is a folder, not a regular file; diffzoo reads only "
        "regular files"]

def test_a_freeze_on_a_filesystem_without_hard_links_still_writes_one_whole_version(tmp_path, monkeypatch):
    import errno
    import os

    from diffzoo.leaderboard.versions import freeze, read_manifest

    def no_links(src, dst):
        raise OSError(errno.EPERM, "hard links are not supported here")

    monkeypatch.setattr(os, "link", no_links)
    root, record, _ = stored(tmp_path)
    store = RecordStore(root)
    freeze(store, "v1")
    assert read_manifest(store, "v1")["records"] == [record.id] and store.temp_files() == []
    with pytest.raises(ConfigError, match="already exists"):
        freeze(store, "v1")


def test_an_empty_version_file_is_named_and_verify_clean_repairs_it(tmp_path, capsys):
    """A store copied from elsewhere can hold an empty version file (a name reserved by a freeze
    that never wrote it): every command names it and says how to repair it, `verify --clean`
    removes it, and the name can then be frozen."""
    from diffzoo.leaderboard.versions import freeze

    root, _, _ = stored(tmp_path)
    empty = root / "versions" / "v1.json"
    empty.parent.mkdir()
    empty.touch()
    code, _, err = cli(capsys, "leaderboard", "versions", "--store", root)
    assert code == 1 and "is empty: a freeze that did not finish" in one_line(err) and "verify --clean" in one_line(err)
    code, out = verify(capsys, root)
    assert code == 1 and "is empty: a freeze that did not finish" in out
    assert "left by a killed write" not in out and "0 temp file(s) left" in out, out  # said once, as a version
    with pytest.raises(RecordError, match="is empty: a freeze that did not finish"):
        freeze(RecordStore(root), "v1")
    code, out = verify(capsys, root, "--clean")
    assert code == 0 and "v1.json" in out and not empty.exists()
    freeze(RecordStore(root), "v1")
    code, out = verify(capsys, root, "v1")
    assert code == 0 and "1 good, 0 bad record(s)" in out


# -- killed writes (section 6) -------------------------------------------------------------------
def test_temp_files_of_killed_writes_are_reported_and_cleaned(tmp_path, capsys):
    root, record, _ = stored(tmp_path)
    leftovers = [root / "records" / f".{record.id}.json.k1l2m3n4.tmp", root / "states" / ".x.json.zz_9ab01.tmp",
                 root / ".summary.md.abcdefgh.tmp"]  # mkstemp's names, of files diffzoo writes there
    for p in leftovers:
        p.write_text('{"half": ')
    code, out, _ = cli(capsys, "leaderboard", "validate", "--store", root)
    assert code == 1 and all(p.name in one_line(out) for p in leftovers) and "3 temp file(s) left" in out
    code, out = verify(capsys, root)
    assert code == 1 and "left by a killed write" in out
    code, out = verify(capsys, root, "--clean")
    assert code == 0 and "removed temp file" in out and not any(p.exists() for p in leftovers)


def test_clean_removes_no_file_of_the_users(tmp_path, capsys):
    """Only the temp files of diffzoo's own writes are leftovers: a user's `.draft.tmp`, a temp-named file
    at the top that diffzoo never writes or that the marker lists as the user's, and anything beside a
    record given to `validate` outside a store, are never reported nor removed."""
    from diffzoo.leaderboard.outdir import MARKER

    root, record, _ = stored(tmp_path)
    theirs = [root / ".draft.tmp", root / "records" / ".notes.tmp", root / ".thesis.tex.abcdefgh.tmp",
              root / ".notes.md.abcdefgh.tmp"]
    marker = json.loads((root / MARKER).read_text()) if (root / MARKER).exists() else {"diffzoo_output": 1}
    (root / MARKER).write_text(json.dumps({**marker, "foreign": [*marker.get("foreign", []), "notes.md"]}))
    loose = tmp_path / "userdir"
    shutil.copytree(root / "states", loose / "states")  # a record beside its states, in a folder of the user's
    (loose / f"{record.id}.json").write_bytes((root / "records" / f"{record.id}.json").read_bytes())
    theirs += [loose / ".thesis.tex.tmp", loose / ".thesis.tex.abcdefgh.tmp"]
    for p in theirs:
        p.write_text("mine")
    code, out = verify(capsys, root, "--clean")
    assert code == 0 and "0 temp file(s) left" in out and "removed" not in out, out
    before = sorted(p.name for p in loose.iterdir())
    code, out, _ = cli(capsys, "leaderboard", "validate", "--clean", loose / f"{record.id}.json")
    assert code == 0 and "0 temp file(s) left" in out and "removed" not in out, out
    assert all(p.read_text() == "mine" for p in theirs)
    assert sorted(p.name for p in loose.iterdir()) == before  # nothing to clean: no lock file left there either


# -- output folders (section 6) ------------------------------------------------------------------
def test_a_non_empty_folder_diffzoo_did_not_make_is_refused_as_out(tmp_path):
    from diffzoo.leaderboard.outdir import MARKER, claim_output_dir

    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "thesis.tex").write_text("mine")
    with pytest.raises(ConfigError, match=r"not empty \(thesis.tex\) and was not made by diffzoo.*--force"):
        claim_output_dir(theirs)
    assert not (theirs / MARKER).exists()
    fresh = claim_output_dir(tmp_path / "new")
    assert (tmp_path / "new" / MARKER).exists() and fresh.check_writable("summary.md")
    (tmp_path / "new" / "summary.md").write_text("diffzoo's")
    assert claim_output_dir(tmp_path / "new").foreign == frozenset()  # marked: ours on the next run


def test_force_never_overwrites_foreign_files(tmp_path):
    from diffzoo.leaderboard.outdir import claim_output_dir

    theirs = tmp_path / "theirs"
    (theirs / "plots").mkdir(parents=True)
    (theirs / "summary.md").write_text("mine")
    out = claim_output_dir(theirs, force=True)
    for rel in ("summary.md", "plots/x.png"):
        with pytest.raises(ConfigError, match="never overwrites files it did not make"):
            out.write_text(rel, "diffzoo")
    assert (theirs / "summary.md").read_text() == "mine"
    assert claim_output_dir(theirs).foreign == {"plots", "summary.md"}  # remembered by the marker
    RecordStore(theirs).add(verified())  # the store's own folders are usable
    assert out.write_text("notes.md", "ok").read_text() == "ok"
    with pytest.raises(ConfigError, match="not a path inside"):
        out.check_writable("../escape.md")


@pytest.mark.parametrize("fmt, theirs", [("md", "leaderboard.md"), ("html", "index.html"), ("paper", "paper.md"),
                                         ("md,csv", "leaderboard.csv"), ("csv,html,paper", "paper.md")])
def test_a_forced_publish_refused_by_a_users_file_leaves_the_folder_unclaimed(tmp_path, capsys, fmt, theirs):
    """Refused, it writes nothing, not even the marker: else the next publish there would need no
    --force, and the folder would read as diffzoo's.  A file refusing a later format stops the
    earlier ones too."""
    root, _, _ = stored(tmp_path)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / theirs).write_text("mine")
    code, _, err = cli(capsys, "leaderboard", "publish", "--store", root, "-f", fmt, "--out", mine, "--force")
    assert code == 2 and "before diffzoo claimed it with --force" in one_line(err), err
    assert sorted(os.listdir(mine)) == [theirs] and (mine / theirs).read_text() == "mine"


@pytest.mark.parametrize("inner", ["records", "versions"])
def test_a_forced_publish_into_a_folder_of_a_store_without_a_marker_is_refused(tmp_path, capsys, inner):
    """A store an older diffzoo made (no marker) is a store all the same: its records/ or versions/ is
    never an --out, with --force too, since a leaderboard.json there would be read as a record or version."""
    from diffzoo.leaderboard.versions import freeze

    root, _, _ = stored(tmp_path)
    freeze(RecordStore(root), "v1")
    before = sorted(os.listdir(root / inner))
    code, _, err = cli(capsys, "leaderboard", "publish", "--store", root, "-f", "json", "--out", root / inner, "--force")
    assert (code, one_line(err).strip()) == (2, f"error: --out {root / inner} is inside {root / inner}, a record "
                                                f"store's own {inner}/ folder, where diffzoo reads every file as the "
                                                "store's; choose a folder outside it")
    assert sorted(os.listdir(root / inner)) == before


def test_leaderboard_add_refuses_to_make_a_store_in_a_foreign_folder(tmp_path, capsys):
    root, record, path = stored(tmp_path)
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("mine")
    code, _, err = cli(capsys, "leaderboard", "add", path, "--store", theirs)
    assert code == 2 and "was not made by diffzoo" in one_line(err) and not (theirs / "records").exists()


def test_a_publish_meeting_the_marker_another_is_writing_claims_the_folder(tmp_path, capsys):
    """Two publishes at once into one new folder: the second finds the first's marker still in its
    temp file, which is diffzoo's, never a user's file making the folder foreign."""
    from diffzoo.leaderboard.outdir import MARKER, claim_output_dir

    root, _, _ = stored(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / f".{MARKER}.k3x9_q2z.tmp").write_text("{")
    code, text, err = cli(capsys, "leaderboard", "publish", "--store", root, "--out", out)
    assert (code, err) == (0, ""), err
    assert "wrote md:" in text and claim_output_dir(out).foreign == frozenset()


# -- counts and terminal output ------------------------------------------------------------------
def test_skipped_samples_are_counted_by_kind():
    from diffzoo.harness.records.model import Counts

    skipped = [{"id": f"s{i}", "kind": kind, "reason": f"file s{i} is {kind}"}
               for i, kind in enumerate(["corrupt", "too-large", "corrupt"] + ["mask-size"] * 30)]
    counts = Counts.of(10, skipped)
    assert counts.skipped_total == 33 and counts.skipped_by_reason == {"corrupt": 2, "mask-size": 30, "too-large": 1}
    assert len(counts.skipped) == 20 and counts.skipped[0] == skipped[0]
    record = verified(counts=counts.to_dict())
    assert record.body.counts == counts
    bad = dict(counts.to_dict(), skipped_total=32)
    with pytest.raises(RecordError, match="counts.skipped_by_reason sums to 33, but skipped_total is 32"):
        verified(counts=bad)


def test_leaderboard_commands_show_escape_sequences_in_records_visibly(tmp_path, capsys):
    evil = "evil\x1b[2J\x1b]0;pwn\x07\u202ename"
    root, record, path = stored(tmp_path, verified(evil))
    outputs = [cli(capsys, "leaderboard", *args, "--store", root)[1]
               for args in (("list",), ("show", record.id), ("verify",))]
    edit(path, lambda d: d["detector"].update(name=evil + "\x1b[31m"))
    outputs.append(cli(capsys, "leaderboard", "validate", "--store", root)[1])
    outputs.append(cli(capsys, "leaderboard", "add", path, "--store", tmp_path / "other")[1])
    for out in outputs:
        assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert "evil\\x1b[2J" in one_line(outputs[1]) and "\\u202e" in one_line(outputs[1])
