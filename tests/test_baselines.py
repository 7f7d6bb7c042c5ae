"""Constant baselines (all background, all edited): computed once per dataset
and image list, reused by every pass whose distortion keeps the labels."""

import json

import pytest

from diffzoo import create_detector
from diffzoo.harness.core.plugins import get_registry
from diffzoo.harness.run import baselines as constant_baselines
from diffzoo.harness.run.baselines import BaselineCache
from diffzoo.harness.run.evaluate import evaluate
from diffzoo.harness.run.factories import open_dataset

from helpers.data import make_diffseg_folder


@pytest.fixture
def counted(monkeypatch):
    calls = []
    real = constant_baselines.update
    monkeypatch.setattr(constant_baselines, "update", lambda *a: (calls.append(a[1].id), real(*a)))
    return calls


def _metrics(states) -> str:
    """The states' metrics as JSON text (NaN compares equal to NaN)."""
    return json.dumps({name: state.compute() for name, state in states.items()}, sort_keys=True)


def test_a_second_pass_reuses_the_baselines_and_a_crop_recomputes_them(tmp_path, counted):
    folder = make_diffseg_folder(tmp_path / "ds", n=12)
    ds = open_dataset(str(folder))
    det = create_detector("segformer.tiny", "binary", pretrained=False)
    dist = lambda name: get_registry().get("distortion", name).load()  # noqa: E731
    cache = BaselineCache()
    first = evaluate(det, ds, "val", dist("none"), {}, baselines=True, cache=cache)
    n = first.evaluated
    assert n > 0 and counted == ds.ids("val")  # both constant predictors, once per image
    jpeg = evaluate(det, ds, "val", dist("jpeg"), {"quality": 75}, baselines=True, cache=cache)
    assert len(counted) == n  # nothing recomputed: the labels came through as stored
    fresh = evaluate(det, ds, "val", dist("jpeg"), {"quality": 75}, baselines=True)
    assert _metrics(jpeg.baselines) == _metrics(fresh.baselines) == _metrics(first.baselines)
    for name in first.baselines:
        assert jpeg.baselines[name].state_dict() == first.baselines[name].state_dict()

    counted.clear()
    crop = evaluate(det, ds, "val", dist("crop"), {"fraction": 0.5}, baselines=True, cache=cache)
    assert counted == ds.ids("val")  # its own labels, scored once while the pass runs
    uncached = evaluate(det, ds, "val", dist("crop"), {"fraction": 0.5}, baselines=True)
    assert _metrics(crop.baselines) == _metrics(uncached.baselines) != _metrics(first.baselines)


def test_an_image_unreadable_since_the_baselines_were_cached_is_left_out(tmp_path):
    folder = make_diffseg_folder(tmp_path / "ds", n=12)
    ds = open_dataset(str(folder))
    det = create_detector("segformer.tiny", "binary", pretrained=False)
    none = get_registry().get("distortion", "none").load()
    cache = BaselineCache()
    evaluate(det, ds, "val", none, {}, baselines=True, cache=cache)
    bad = folder / "train_copy" / f"{ds.ids('val')[0]}.image.png"
    bad.write_bytes(b"broken")
    again = evaluate(det, ds, "val", none, {}, baselines=True, cache=cache)
    fresh = evaluate(det, ds, "val", none, {}, baselines=True)
    assert again.skipped and _metrics(again.baselines) == _metrics(fresh.baselines)
    assert again.baselines["all_edited"].state_dict() == fresh.baselines["all_edited"].state_dict()
