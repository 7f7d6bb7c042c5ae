import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

from diffzoo.harness.core.errors import RecordError
from diffzoo.harness.core.fsutil import atomic_write_text
from diffzoo.harness.records.document import ResultRecord


def minimal(**over):
    fields = dict(detector={"name": "d", "checkpoint_sha256": "0" * 64}, suite={"name": "s", "version": "1"},
                  case={"name": "c"},
                  dataset={"name": "x", "fingerprint": "f"}, label_space=["background", "edited"],
                  metrics={"mIoU": float("nan"), "aAcc": 0.5}, metrics_version="1",
                  threshold_policy={}, counts={"evaluated": 1}, seed=0, config={},
                  environment={"date": "2026-01-01"})
    fields.update(over)
    return ResultRecord.create(**fields)


def test_record_id_is_the_identity_and_nan_is_null(tmp_path):
    a, b = minimal(), minimal(environment={"date": "2027-01-01", "host": "elsewhere", "git": "f00"})
    assert a.id == b.id  # when and where it ran is not part of the identity
    assert minimal(metrics={"mIoU": 0.1, "aAcc": 0.2}).id == a.id  # nor are the numbers
    assert minimal(dataset={"name": "/other/path", "fingerprint": "f"}).id == a.id  # nor the dataset's name
    assert minimal(seed=1).id != a.id
    assert minimal(dataset={"name": "x", "fingerprint": "g"}).id != a.id
    assert minimal(config={"train": {"lr": 0.1}}).id != minimal(config={"train": {"lr": 0.2}}).id
    assert minimal(config={"device": "cuda:1"}).id == minimal(config={"device": "cpu"}).id
    path = a.write(tmp_path)
    data = json.loads(path.read_text())
    assert data["metrics"]["mIoU"] is None and data["record_id"] == a.id
    assert ResultRecord.read(path).data == a.data


@pytest.mark.parametrize("value", [float("inf"), -float("inf"), np.array(-np.inf)])
def test_an_infinite_metric_is_refused_naming_it_and_nan_stays_undefined(value):
    """NaN is a metric with no value (null); an infinity is no metric value, and was stored as null unsaid
    (one in a 0-d numpy array too, which python's float() reads)."""
    with pytest.raises(RecordError) as info:
        minimal(metrics={"mIoU": 0.5, "aAcc": value})
    assert str(info.value) == f"invalid record: field metrics.aAcc is {value}, not finite (undefined values are " \
        "written as null)"
    with pytest.raises(RecordError, match=r"^invalid record: field metrics.my_score is -?inf, not a number$"):
        minimal(metrics={"my_score": value})  # a metric the catalog does not know
    assert minimal(metrics={"aAcc": float("nan")}).metrics == {"aAcc": None}


def test_validate_names_missing_field_and_schema(tmp_path):
    data = dict(minimal().data)
    del data["seed"]
    with pytest.raises(RecordError, match="missing field.*seed"):
        ResultRecord(data).validate()
    data = dict(minimal().data, schema_version=99)
    with pytest.raises(RecordError, match="schema version 99"):
        ResultRecord(data).validate()
    data = dict(minimal().data, schema_version=2.0)  # the right number, but not an integer
    with pytest.raises(RecordError, match="schema version 2.0 is not 2"):
        ResultRecord(data).validate()
    data = dict(minimal().data, extra=1)
    with pytest.raises(RecordError, match="unknown field.*extra"):
        ResultRecord(data).validate()


def test_a_detector_name_with_outer_whitespace_is_refused_where_a_record_is_made_or_added(tmp_path):
    """`" a"` made a valid record, shown as "a" beside the real a's rows.  A stored one stays readable:
    its id hashes the name, so no edit could repair it without breaking the versions that pin it."""
    from diffzoo.harness.records.document import record_problems
    from diffzoo.leaderboard.store import RecordStore

    from helpers.records import sealed_by_hand

    said = ("invalid record: field detector.name ' a' has leading or trailing whitespace: it would read as 'a', "
            "another detector's name (a registered detector's name has none)")
    for name in (" a", "a\t"):
        with pytest.raises(RecordError) as exc:
            minimal(detector={"name": name, "checkpoint_sha256": "0" * 64})
        assert str(exc.value) == said.replace("' a'", repr(name))
    data = sealed_by_hand(minimal(), " a").data  # a record another tool wrote
    store = RecordStore(tmp_path / "s")
    with pytest.raises(RecordError, match="has leading or trailing whitespace"):
        store.add(ResultRecord(data))
    assert record_problems(data) == [] and not list(store.records_dir.glob("*.json"))
    atomic_write_text(store.records_dir / f"{data['record_id']}.json", json.dumps(data))
    assert [r.body.detector.name for r in store.load().records] == [" a"]


def test_names_are_written_in_nfc_and_a_record_holding_another_form_is_refused_where_a_store_adds_it(tmp_path):
    """`u` + U+0308 and `ü` print alike in every output, yet were two rows (or groups, or columns)."""
    from diffzoo.harness.records.document import record_problems
    from diffzoo.leaderboard.store import RecordStore

    from helpers.records import resealed

    nfd, composed = "mu\u0308ller", "m\xfcller"
    made = minimal(detector={"name": nfd, "checkpoint_sha256": "0" * 64}, suite={"name": nfd, "version": "1"},
                   case={"name": nfd}, dataset={"name": nfd, "fingerprint": "f"})
    assert [made.data[part]["name"] for part in ("detector", "suite", "case", "dataset")] == [composed] * 4
    assert made.id == minimal(detector={"name": composed, "checkpoint_sha256": "0" * 64}, suite={"name": composed,
                              "version": "1"}, case={"name": composed}, dataset={"name": composed,
                                                                                "fingerprint": "f"}).id
    data = resealed(minimal(), lambda d: d["dataset"].update(name=nfd)).data  # a record another tool wrote
    with pytest.raises(RecordError) as exc:
        RecordStore(tmp_path / "s").add(ResultRecord(data))
    assert str(exc.value) == ("invalid record: field dataset.name 'mu\\u0308ller' is not in Unicode NFC: it prints "
                              "as 'm\\xfcller', another name that looks the same (diffzoo writes names in NFC)")
    assert record_problems(data) == []  # a stored one is read: its id hashes the name


def test_failed_write_leaves_no_partial_file(tmp_path, monkeypatch):
    target = tmp_path / "r.json"

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        atomic_write_text(target, "{}")
    assert not target.exists() and not list(tmp_path.iterdir())


WRITER = """
import sys
from pathlib import Path
from diffzoo.harness.core.fsutil import atomic_write_text
out = Path(sys.argv[1])
i = 0
print("ready", flush=True)
while True:
    atomic_write_text(out / f"{i % 50}.json", '{"payload": "' + "x" * 2_000_000 + '"}')
    i += 1
    print("wrote", i, flush=True)
"""


def test_killed_writer_leaves_only_complete_files(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path)], stdout=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"ready"
    for _ in range(3):  # kill it while it is writing its fourth file
        assert proc.stdout.readline().startswith(b"wrote")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    files = list(tmp_path.glob("*.json"))
    assert files
    for f in files:
        assert len(json.loads(f.read_text())["payload"]) == 2_000_000
