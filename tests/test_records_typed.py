"""Records are read through the typed model: outside the
modules that parse and store the JSON document, no code reads a record's raw
``data`` by string paths; readers use ``ResultRecord.body`` (RecordBody)."""

from __future__ import annotations

import re
from pathlib import Path

import diffzoo

from helpers.records import make_record

PACKAGE = Path(diffzoo.__file__).parent
# the modules that own the JSON document: the model, its field parser and checks, the record file, the store
ALLOWED = "harness/records/"  # the record package: its model, fields, document and check
# record.data["case"], r.data.get("ci95"), and an alias taken for such reads (d = record.data)
RAW_PATH = re.compile(r"""\.data(\[\s*['"]|\.get\()|=\s*[\w.]+\.data\s*(#.*)?$""")


def raw_record_paths(root: Path) -> list[str]:
    """``file:line: text`` of every ``.data["..."]`` / ``.data.get(`` / ``= x.data`` outside ALLOWED."""
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(ALLOWED):
            continue
        for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if RAW_PATH.search(line):
                found.append(f"{rel}:{no}: {line.strip()}")
    return found


def test_no_raw_record_string_paths_outside_the_record_model():
    found = raw_record_paths(PACKAGE)
    assert not found, ("read records through ResultRecord.body (diffzoo/harness/records/model.py), not raw "
                       "string paths:\n" + "\n".join(found))


def test_the_source_check_finds_a_raw_string_path(tmp_path):
    (tmp_path / "reader.py").write_text('name = record.data["detector"]["name"]\ndate = r.data.get("environment")\n'
                                        "d = record.data\nok = record.body.detector.name\nimport skimage.data\n")
    assert raw_record_paths(tmp_path) == ['reader.py:1: name = record.data["detector"]["name"]',
                                          'reader.py:2: date = r.data.get("environment")',
                                          "reader.py:3: d = record.data"]


def test_typed_case_and_threshold_policy_parts():
    record = make_record(case="jpeg-q90.binary",
                         threshold_policy={"calibrated_on": "val", "pixel": "fixed: p > 0.5", "image": 3})
    body = record.body
    assert (body.distortion, body.distortion_params, body.editors, body.case_option("tolerance", 0.05)) == (
        "none", {}, (), 0.05)
    assert (body.policy.source, body.policy.pixel, body.policy.image) == ("calibrated on val", "fixed: p > 0.5", None)
    data = {k: v for k, v in record.data.items() if k not in ("schema_version", "record_id", "digests")}
    data["case"] = {**data["case"], "distortion": "jpeg", "distortion_params": {"quality": 90},
                    "editors": ["sd2", "sdxl"], "options": {"tolerance": 0.1}}
    data["threshold_policy"] = {"source": "calibrated on val", "pixel": "calibrated: p > 0.4"}
    body = type(record).create(**data).body
    assert (body.distortion, body.distortion_params, body.editors, body.case_option("tolerance")) == (
        "jpeg", {"quality": 90}, ("sd2", "sdxl"), 0.1)
    assert (body.policy.source, body.policy.pixel, body.policy.image) == ("calibrated on val", "calibrated: p > 0.4",
                                                                          None)
