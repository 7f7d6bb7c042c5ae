"""Suites are versioned: a definition change without a version bump fails here.

When you change a suite on purpose: bump its ``version``, add a changelog
line, and add the new (name, version) -> hash pair below (keep the old ones).
"""

import dataclasses
import logging
import math

import numpy as np
import pytest

from diffzoo.harness.core.errors import ConfigError, UnknownNameError
from diffzoo.harness.core.plugins import get_registry
from diffzoo.harness.core.types import BINARY, EditRecord, SampleMeta
from diffzoo.harness.metrics import EvalState
from diffzoo.harness.metrics.slices import SliceMetadataMissing
from diffzoo.harness.records.case_summary import case_metrics, summarize
from diffzoo.harness.suites import (
    DISTORTIONS,
    LORA,
    PAPER_PAIRS,
    SLICES,
    STANDARD,
    UNSEEN_GENERATORS,
    Case,
    Suite,
    TrainSpec,
    unseen_generators_suite,
)

PINNED = {
    ("standard", "1"): "fdc6c1e4daf95c7e",
    ("standard", "2"): "467a11c43878b3ba",
    ("distortions", "1"): "4bddaed163d9b8d8",
    ("distortions", "2"): "8afe107542af2253",
    ("unseen-generators", "1"): "cfab7aa0d6193ab6",
    ("unseen-generators", "2"): "222c837e843ed05a",
    ("lora", "1"): "15e0b6194feeead8",
    ("classification", "1"): "3d0d0f31a3f374ae",
    ("slices", "1"): "d7185bae1d2ca5f5",
    ("slices", "2"): "f5ef3929963a6ee5",
    ("format-parity", "1"): "e6f62ccf31b71ef6",
    ("cross-dataset", "1"): "a162fc8d3f99be6f",
    ("opensdi", "1"): "9f5e5773c8724d6a",
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
    with pytest.raises(ConfigError, match="task must be binary, semantic or image"):
        Case(name="x", task="pixels", train=TrainSpec("binary"))
    with pytest.raises(ConfigError, match="training task"):
        Case(name="x", task="binary", train=TrainSpec("regression"))


def test_a_case_naming_a_parameter_or_option_twice_is_refused():
    """Read as a dict, the second value would win unsaid: jpeg at 60 where the case reads 80 first."""
    with pytest.raises(ConfigError) as info:
        Case(name="jpeg80", task="binary", train=TrainSpec("binary"), distortion="jpeg",
             distortion_params=(("quality", 80), ("quality", 60)))
    assert str(info.value) == "case 'jpeg80' gives distortion parameter quality twice (80 and 60); give it once"
    with pytest.raises(ConfigError) as info:
        Case(name="x", task="binary", train=TrainSpec("binary"), options=(("image_score", "detector"),) * 2)
    assert str(info.value) == "case 'x' gives option image_score twice ('detector' and 'detector'); give it once"


def test_the_paper_suites_are_registered_and_all_expands_to_every_one():
    registry = get_registry()
    names = {e.name for e in registry.expand("suite", "all")}
    assert names == {"standard", "distortions", "unseen-generators", "lora", "classification", "slices",
                     "format-parity", "cross-dataset", "opensdi"}
    assert [e.name for e in registry.expand("suite", "dist*")] == ["distortions"]
    assert {e.name for e in registry.expand("suite", "*s")} == {"distortions", "unseen-generators", "slices"}
    with pytest.raises(UnknownNameError, match="zzz"):
        registry.expand("suite", "zzz*")


def test_every_name_a_suite_gives_the_registry_resolves():
    """Suites name distortions, generators and reference detectors; each must be
    registered (a renamed card would otherwise drop a reference silently)."""
    registry = get_registry()
    asked = set()
    for entry in registry.expand("suite", "all"):
        for kind, name in entry.load().registry_names():
            found = registry.get(kind, name).name  # a family name resolves to its default variant
            assert found == name or found.startswith(name + "."), (entry.name, kind, name, found)
            asked.add((kind, name))
    assert {("detector", "cnnspot"), ("detector", "universalfakedet"), ("generator", "sdxl.hyper-sd-8step"),
            ("distortion", "reedit"), ("distortion", "rescale"), ("distortion", "none")} <= asked
    with pytest.raises(UnknownNameError, match="no-such-detector"):
        registry.get("detector", "no-such-detector")


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
    assert params["resize50"] == {"scale": 0.5} and params["resize200"] == {"scale": 2.0}
    assert {c.distortion for c in suite.cases if c.name.startswith("resize")} == {"rescale"}
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


# -- the paper's columns (Acc = aAcc, mIoU, bF1) are in the records ---------------------------------

PAPER_COLUMNS = {"aAcc", "mIoU", "bF1"}


def test_every_pixel_case_of_tables_3_4_and_8_reports_the_papers_columns():
    for suite in (DISTORTIONS, SLICES):
        pixel = [c for c in suite.cases if c.task in ("binary", "semantic")]
        assert pixel and all(PAPER_COLUMNS <= set(c.metrics) for c in pixel), suite.name
    unseen = [c for c in UNSEEN_GENERATORS.cases if c.task == "binary"]
    assert len(unseen) == 6 and all(PAPER_COLUMNS <= set(c.metrics) for c in unseen)
    # what the cases reported before is kept
    assert set(DISTORTIONS.case("clean.binary").metrics) >= {"F1", "pixel_AUC", "gIoU"}
    assert set(DISTORTIONS.case("jpeg60.semantic").metrics) >= {"mAcc", "top1"}
    assert DISTORTIONS.case("resize200.image").metrics == ("img_Acc", "img_AP", "img_AUC")
    assert set(SLICES.case("base.binary").metrics) >= {"F1", "gIoU", "img_Acc"}
    assert all("mIoU" in c.metrics for c in LORA.cases)  # Table 7
    assert {c.name for c in SLICES.cases if c.slice_by == "multiturn"} == {"multiturn.binary",
                                                                           "multiturn.semantic"}


# -- slices: single vs multi-turn; no slice without metadata --------------------------------------

def block(rows: slice, cols: slice) -> np.ndarray:
    m = np.zeros((4, 4), np.uint8)
    m[rows, cols] = 1
    return m


def binary_state(with_metadata: bool = True) -> EvalState:
    """Four 4 x 4 images: authentic (0 turns), single turn (perfect), two turns (missed: 8 GT pixels,
    none predicted) and three turns (a 2 x 2 GT block, the top row predicted: 2 hits, 2 misses, 2 false)."""
    edit = EditRecord("sd2", edit_type="inpaint")
    images = [("a", "real", 0, block(slice(0), slice(0)), block(slice(0), slice(0))),
              ("b", "ai", 1, block(slice(0, 2), slice(0, 2)), block(slice(0, 2), slice(0, 2))),
              ("c", "ai", 2, block(slice(None), slice(0, 2)), block(slice(0), slice(0))),
              ("d", "real", 3, block(slice(0, 2), slice(0, 2)), block(slice(0, 1), slice(None)))]
    state = EvalState(BINARY, "binary")
    for sid, base, turns, gt, pred in images:
        meta = SampleMeta(sid, base=base, turns=(edit,) * turns) if with_metadata else SampleMeta(sid)
        state.update(meta, gt, pred, None)
    return state


def test_multiturn_slice_values_and_exact_metrics():
    summary = summarize(binary_state())
    assert summary.missing == {}
    metrics, ci = case_metrics(SLICES.case("multiturn.binary"), summary, BINARY.names, lambda name: None)
    case = SLICES.case("multiturn.binary")
    assert set(metrics) == {f"{m}@multiturn={v}" for m in case.metrics for v in ("none", "single", "multi")} | {
        "num_images"} and ci == {}
    # multi = images c + d: confusion [[8 + 10, 2], [8 + 2, 2]] over 32 pixels
    assert metrics["aAcc@multiturn=multi"] == 20 / 32
    assert metrics["mIoU@multiturn=multi"] == pytest.approx(2 / 14)
    assert metrics["bF1@multiturn=multi"] == 0.25  # c: nothing predicted, 0; d: half the boundary, 0.5
    assert (metrics["aAcc@multiturn=single"], metrics["mIoU@multiturn=single"],
            metrics["bF1@multiturn=single"]) == (1.0, 1.0, 1.0)
    assert metrics["aAcc@multiturn=none"] == 1.0 and math.isnan(metrics["mIoU@multiturn=none"])
    assert summary.slices["multiturn"]["multi"]["num_images"] == 2
    assert summary.slices["turns"]["3"]["num_images"] == 1  # turns keeps its exact counts
    assert metrics["num_images"] == 4


def test_an_edited_image_without_turns_is_unknown_not_none_in_multiturn():
    state = binary_state()
    state.update(SampleMeta("e", base="ai"), block(slice(0, 1), slice(0, 1)), block(slice(0, 1), slice(0, 1)),
                 None)
    assert list(state.slices("multiturn")) == ["multi", "none", "single", "unknown"]
    assert state.slices("multiturn")["unknown"]["num_images"] == 1


def test_a_slice_no_image_has_metadata_for_gives_no_metrics_and_names_the_fix(caplog):
    state = binary_state(with_metadata=False)  # what real DiffSeg30k gives: base unknown, no turns
    with pytest.raises(SliceMetadataMissing, match="no base metadata"):
        state.slices("base")
    summary = summarize(state)
    assert set(summary.missing) == {"base", "turns", "multiturn", "editor", "edit_type"}
    assert all(summary.slices[key] == {} for key in summary.missing)
    with caplog.at_level(logging.WARNING):
        metrics, _ = case_metrics(SLICES.case("base.binary"), summary,
                                  BINARY.names, lambda name: None)
    assert metrics == {"num_images": 4}
    assert ("dataset carries no base metadata; pass --dataset-option metadata=FILE "
            "(id -> base, editors per turn)") in caplog.text and "base.binary" in caplog.text
    metrics, _ = case_metrics(SLICES.case("multiturn.binary"), summary, BINARY.names, lambda name: None)
    assert metrics == {"num_images": 4} and "no turn metadata" in caplog.text
    # the other slice keys still report when only some metadata is known
    partial = EvalState(BINARY, "binary")
    partial.update(SampleMeta("x", base="real"), block(slice(0), slice(0)), block(slice(0), slice(0)), None)
    partial.update(SampleMeta("y"), block(slice(0, 1), slice(0, 1)), block(slice(0, 1), slice(0, 1)), None)
    summary = summarize(partial)
    assert list(summary.slices["base"]) == ["real", "unknown"] and "base" not in summary.missing
    assert "turns" in summary.missing  # an edited image without any turn anywhere


def test_authentic_images_without_turns_are_a_truthful_turns_slice():
    state = EvalState(BINARY, "binary")
    state.update(SampleMeta("a", base="real"), block(slice(0), slice(0)), block(slice(0), slice(0)), None)
    assert list(state.slices("multiturn")) == ["none"] and list(state.slices("turns")) == ["0"]
    assert list(state.slices("editor")) == ["(none)"] and list(state.slices("base")) == ["real"]
