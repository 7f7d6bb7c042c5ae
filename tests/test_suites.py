"""Suites are versioned: a definition change without a version bump fails here.

When you change a suite on purpose: bump its ``version``, add a changelog
line, and add the new (name, version) -> hash pair below (keep the old ones).
"""

import dataclasses

import pytest

from diffzoo.harness.errors import ConfigError, UnknownNameError
from diffzoo.harness.plugins import get_registry
from diffzoo.harness.suites import PAPER_PAIRS, STANDARD, Case, Suite, TrainSpec, unseen_generators_suite

PINNED = {
    ("standard", "1"): "fdc6c1e4daf95c7e",
    ("standard", "2"): "467a11c43878b3ba",
    ("distortions", "1"): "4bddaed163d9b8d8",
    ("unseen-generators", "1"): "cfab7aa0d6193ab6",
    ("lora", "1"): "15e0b6194feeead8",
    ("classification", "1"): "3d0d0f31a3f374ae",
    ("slices", "1"): "d7185bae1d2ca5f5",
    ("format-parity", "1"): "e6f62ccf31b71ef6",
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


def test_the_paper_suites_are_registered_and_all_expands_to_every_one():
    registry = get_registry()
    names = {e.name for e in registry.expand("suite", "all")}
    assert names == {"standard", "distortions", "unseen-generators", "lora", "classification", "slices",
                     "format-parity"}
    assert [e.name for e in registry.expand("suite", "dist*")] == ["distortions"]
    assert {e.name for e in registry.expand("suite", "*s")} == {"distortions", "unseen-generators", "slices"}
    with pytest.raises(UnknownNameError, match="zzz"):
        registry.expand("suite", "zzz*")


def test_adding_a_field_with_its_default_keeps_old_hashes():
    # standard v1, rebuilt from its definition: the fields added later must not move its hash
    v1 = dataclasses.replace(
        STANDARD, version="1",
        cases=tuple(dataclasses.replace(c, metrics=tuple(m for m in c.metrics if not m.endswith("_oracle")))
                    for c in STANDARD.cases),
    )
    assert v1.definition_hash() == PINNED[("standard", "1")]


def test_distortions_suite_has_one_case_per_setting_and_task():
    suite = get_registry().get("suite", "distortions").load()
    settings = {}
    for case in suite.cases:
        label, task = case.name.rsplit(".", 1)
        settings.setdefault(label, set()).add(task)
        assert case.train.exclude_editors == ()
    assert all(tasks == {"binary", "semantic", "image"} for tasks in settings.values())
    params = {label: dict(c.distortion_params) for c in suite.cases for label in [c.name.rsplit(".", 1)[0]]}
    assert params["jpeg60"] == {"quality": 60} and params["jpeg80"] == {"quality": 80}
    assert params["resize256"] == {"size": 256} and params["resize1024"] == {"size": 1024}
    assert params["clean"] == {}
    for label in settings:
        distortion = next(c.distortion for c in suite.cases if c.name.startswith(label + "."))
        get_registry().get("distortion", distortion)  # every distortion named is registered


def test_unseen_generator_pairs_are_the_papers_and_any_pair_gives_another_hash():
    suite = get_registry().get("suite", "unseen-generators").load()
    held_out = {c.train.exclude_editors for c in suite.cases if c.train.exclude_editors}
    assert held_out == set(PAPER_PAIRS)
    for case in suite.cases:
        assert case.editors in PAPER_PAIRS  # scored on the pair's images (+ authentic)
    custom = unseen_generators_suite([("sd2", "glide")])
    assert custom.definition_hash() != suite.definition_hash()
    assert {c.name for c in custom.cases} == {"sd2_glide.binary", "sd2_glide.image", "sd2_glide.seen.binary",
                                              "sd2_glide.seen.image"}
    with pytest.raises(ConfigError, match="two different editors"):
        unseen_generators_suite([("sd2", "sd2")])


def test_compare_to_needs_a_case_of_the_same_suite_on_the_same_images():
    base = Case(name="native", task="image", train=TrainSpec("binary"))
    with pytest.raises(ConfigError, match="not a case of this suite"):
        Suite("s", "1", "", (base, Case(name="jpeg", task="image", train=TrainSpec("binary"), compare_to="x")))
    with pytest.raises(ConfigError, match="same model on the same images"):
        Suite("s", "1", "", (base, Case(name="jpeg", task="image", train=TrainSpec("semantic"), compare_to="native")))
    with pytest.raises(ConfigError, match="duplicate case names"):
        Suite("s", "1", "", (base, base))
