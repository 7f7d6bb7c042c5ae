"""Suites are versioned: a definition change without a version bump fails here.

When you change a suite on purpose: bump its ``version``, add a changelog
line, and add the new (name, version) -> hash pair below (keep the old ones).
"""

import dataclasses

import pytest

from diffzoo.harness.plugins import get_registry
from diffzoo.harness.suites import STANDARD, Case, TrainSpec

PINNED = {
    ("standard", "1"): "fdc6c1e4daf95c7e",
}


def registered_suites():
    return [e.load() for e in get_registry().list("suite")]


def test_every_suite_definition_matches_its_pinned_version():
    suites = registered_suites()
    assert suites
    for suite in suites:
        key = (suite.name, suite.version)
        assert key in PINNED, f"suite {suite.name} v{suite.version} is not pinned in tests/test_suites.py"
        assert suite.definition_hash() == PINNED[key], (
            f"suite {suite.name!r} changed without a version bump: bump its version, "
            "add a changelog line, and pin the new hash"
        )
        assert suite.changelog and suite.changelog[-1].startswith(f"{suite.version}:")


def test_a_definition_change_moves_the_hash_but_the_description_does_not():
    changed = dataclasses.replace(
        STANDARD, cases=STANDARD.cases[:1] + (dataclasses.replace(STANDARD.cases[1], split="test"),)
    )
    assert changed.definition_hash() != STANDARD.definition_hash()
    reworded = dataclasses.replace(STANDARD, description="other words")
    assert reworded.definition_hash() == STANDARD.definition_hash()


def test_cases_validate_their_tasks():
    with pytest.raises(Exception, match="task must be binary, semantic or image"):
        Case(name="x", task="pixels", train=TrainSpec("binary"))
    with pytest.raises(Exception, match="training task"):
        Case(name="x", task="binary", train=TrainSpec("regression"))
