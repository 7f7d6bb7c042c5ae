"""The resize protocol (docs/distortions.md): ``rescale`` sizes, the recipes'
training and evaluation scales, and a pass that feeds the detector the
baseline's very input being reported as the baseline instead of re-run."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from PIL import Image

from diffzoo import hookimpl
from diffzoo.harness.core.errors import ConfigError
from diffzoo.harness.core.plugins import get_plugin_system, get_registry
from diffzoo.harness.core.train_config import PAPER_RATIO, TrainConfig
from diffzoo.harness.data import distortions as D
from diffzoo.harness.models.train_data import paper_rescale, random_crop
from diffzoo.harness.run.loading import detector_input, same_input
from diffzoo.harness.run.plan import eval_input, make_plan
from diffzoo.harness.run.prediction import checkpoint_short_side
from diffzoo.harness.run.request import RunRequest
from diffzoo.harness.run.runner import Runner
from diffzoo.harness.suites import Case, Suite, TrainSpec

from helpers.cli import cli


def image_of(h: int, w: int) -> np.ndarray:
    yy, xx = np.mgrid[0:h, 0:w]
    return np.stack([xx * 7 % 256, yy * 5 % 256, (xx + yy) % 256], -1).astype(np.uint8)


# -- rescale's sizes -------------------------------------------------------------------------
@pytest.mark.parametrize(("shape", "scale", "input_size", "expected"), [
    ((48, 64), 0.5, 64, (32, 43)),      # shorter side 32, longer round(64 * 32 / 48) = 43
    ((48, 64), 2.0, 64, (128, 171)),    # 170.67 -> 171
    ((64, 48), 2.0, 64, (171, 128)),    # portrait: the shorter side is the width
    ((7, 20), 1.0, 10, (10, 29)),       # odd aspect, under the cap: 28.57 -> 29
    ((7, 100), 1.0, 10, (3, 40)),       # over 4:1: the longer side capped at 4 x 10 (mmseg's keep-ratio rule)
    ((1, 1), 2.0, 8, (16, 16)),         # a 1 px image
    ((1, 5), 3.0, 1, (2, 12)),          # capped: 5 x 2.4 = 12, 1 x 2.4 -> 2
    ((3, 90), 0.01, 8, (1, 4)),         # round(0.08) = 0 -> 1 px target; longer side capped at 4
    ((1, 8192), 1.0, 512, (1, 2048)),   # a sliver is never blown up to 512 x 4 million pixels
])
def test_rescale_brings_the_shorter_side_to_scale_times_input_size(shape, scale, input_size, expected):
    image, label = image_of(*shape), np.ones(shape, np.uint8)
    out, out_label = D.rescale(image, label, scale=scale, input_size=input_size)
    assert out.shape == (*expected, 3) and out.dtype == np.uint8
    assert out_label is label  # scored at the label's resolution: logits go back to it
    assert D.rescale.output_size(*shape, scale=scale, input_size=input_size) == expected
    pillow = np.array(Image.fromarray(image).resize(expected[::-1], Image.Resampling.BICUBIC))
    assert np.array_equal(out, pillow)


def test_rescale_at_the_images_own_size_returns_them_untouched():
    image, label = image_of(64, 96), np.zeros((64, 96), np.uint8)
    out, out_label = D.rescale(image, label, scale=1.0, input_size=64)
    assert out is image and out_label is label


def test_rescale_is_registered_and_resize_keeps_its_absolute_meaning():
    entry = get_registry().get("distortion", "rescale")
    assert entry.load() is D.rescale
    assert D.resize(image_of(48, 64), np.zeros((48, 64), np.uint8), size=32)[0].shape == (24, 32, 3)


# -- which passes feed the baseline's input ----------------------------------------------------
def test_same_input_rule_for_each_recipe():
    sizes = {(64, 64)}
    assert same_input(D.rescale, {"scale": 1.0, "input_size": 64}, sizes, None)  # native, 64 px crops
    assert not same_input(D.rescale, {"scale": 2.0, "input_size": 64}, sizes, None)
    assert same_input(D.resize, {"size": 64}, sizes, None)  # a no-op
    assert not same_input(D.resize, {"size": 32}, sizes, None)
    assert not same_input(D.jpeg, {"quality": 100}, sizes, None)  # changes pixels: never
    big = {(1024, 1024), (1024, 768)}  # paper recipe: evaluated at shorter side 512
    assert same_input(D.rescale, {"scale": 1.0, "input_size": 512}, big, 512)
    assert not same_input(D.rescale, {"scale": 2.0, "input_size": 512}, big, 512)
    assert same_input(D.resize, {"size": 1024}, {(1024, 1024)}, 512)  # no-op, then the same rule
    assert not same_input(D.resize, {"size": 512}, {(1024, 1024)}, 512)  # blurred, though 512 again


def test_paper_evaluation_input_is_the_shorter_side_at_the_crop_size():
    assert detector_input(image_of(96, 128), 32).shape == (32, 43, 3)
    image = image_of(20, 30)
    assert detector_input(image, None) is image


# -- training scale ----------------------------------------------------------------------------
def test_paper_training_rescale_stays_in_ratio_range_and_is_seeded():
    cfg = TrainConfig(crop_size=32, recipe="paper")
    image, label = image_of(48, 80), np.zeros((48, 80), np.uint8)
    label[10:20, 10:30] = 1
    shorts = []
    for seed in range(40):
        out, out_label = paper_rescale(image, label, cfg, np.random.default_rng(seed))
        again, again_label = paper_rescale(image, label, cfg, np.random.default_rng(seed))
        assert np.array_equal(out, again) and np.array_equal(out_label, again_label)
        assert out.shape[:2] == out_label.shape
        assert set(np.unique(out_label)) <= {0, 1}  # nearest neighbour: no new label values
        short = min(out.shape[:2])
        assert PAPER_RATIO[0] * 32 <= short <= PAPER_RATIO[1] * 32
        assert abs(max(out.shape[:2]) / short - 80 / 48) < 0.05  # aspect kept
        crop, crop_label = random_crop(out, out_label, 32, np.random.default_rng(seed))
        assert crop.shape == (32, 32, 3) and crop_label.shape == (32, 32)
        shorts.append(short)
    assert min(shorts) < 24 and max(shorts) > 48  # the range is used, not one size
    native = TrainConfig(crop_size=32, recipe="native")
    same = paper_rescale(image, label, native, np.random.default_rng(0))
    assert same[0] is image and same[1] is label


def test_recipe_is_checked_and_in_the_cache_key(diffseg_folder):
    from diffzoo.harness.run.factories import open_dataset

    with pytest.raises(ConfigError, match="--recipe 'bogus'.*native, paper"):
        TrainConfig().with_overrides(recipe="bogus")
    for bad, said in (({"recipe": "bogus"}, "--recipe 'bogus'"), ({"iterations": -1}, "--iterations -1: must be"),
                      ({"optimizer": "Adam"}, "optimizer 'Adam' is not one of AdamW, SGD")):
        with pytest.raises(ConfigError, match=said):  # a config made directly (the API) is checked too
            TrainConfig(**bad)
    assert TrainConfig(betas=[0.8, 0.9]).betas == (0.8, 0.9)
    assert TrainConfig().recipe == "native"  # the paper's protocol when asked: --recipe paper
    native = TrainConfig(crop_size=32, recipe="native")
    paper = native.with_overrides(recipe="paper")
    assert native.to_dict()["recipe"] == "native" and paper.to_dict()["recipe"] == "paper"
    card = get_registry().get("detector", "segformer.tiny").card
    dataset = open_dataset(str(diffseg_folder))
    suites = [get_registry().get("suite", "standard").load()]
    keys = [make_plan(card, suites, dataset, c, dataset.fingerprint()).jobs[0].key for c in (native, paper)]
    assert keys[0] != keys[1]
    assert eval_input(card, native) == {"recipe": "native"}
    assert eval_input(card, paper, 5) == {"recipe": "paper", "short_side": 32, "extra_negatives": 5}


def test_a_paper_checkpoint_is_predicted_at_its_training_scale():
    assert checkpoint_short_side({"train_config": {"recipe": "paper", "crop_size": 48}}, "binary") == 48
    assert checkpoint_short_side({"train_config": {"crop_size": 48}}, "binary") is None
    assert checkpoint_short_side({"train_config": {"recipe": "paper", "crop_size": 48}}, "classification") is None


def test_unknown_recipe_is_a_one_line_cli_error(capsys):
    code, out, err = cli(capsys, "run", "--detector", "segformer.tiny", "--recipe", "bogus")
    assert code == 2 and not out
    assert err.strip().count("\n") == 0 and "--recipe 'bogus'" in err and "native, paper" in err


# -- end to end: the baseline's input is reported, not re-run ----------------------------------
SCALES = Suite("resize-protocol", "1", "clean and rescaled binary cases", tuple(
    Case(name=name, task="binary", train=TrainSpec("binary"), distortion=dist, distortion_params=params,
         metrics=("aAcc", "mIoU", "bF1", "pixel_AUC"))
    for name, dist, params in (
        ("clean", "none", ()),
        ("resize100", "rescale", (("scale", 1.0),)),
        ("resize200", "rescale", (("scale", 2.0),)),
    )
))


class ScalesPlugin:
    @hookimpl
    def register_suites(self, register):
        register(SCALES.name, SCALES, description=SCALES.description)


def run_scales(dataset: str, **kw):
    from diffzoo.harness.run import evaluate as evaluation

    get_plugin_system().pm.register(ScalesPlugin(), name="resize-protocol-test")
    runner = Runner(RunRequest(detector="segformer.tiny", suite=SCALES.name, dataset=dataset, device="cpu",
                               bootstrap=0, **kw))
    calls = []
    real = evaluation.evaluate
    evaluation.evaluate = lambda *a, **k: calls.append(a[4]) or real(*a, **k)  # the passes that ran
    try:
        output = runner.run()
    finally:
        evaluation.evaluate = real
    return {r.data["case"]["name"]: r.data for r in output.records}, output.notes, calls


def test_native_rescale_at_the_crop_size_of_same_size_images_is_the_baseline(diffseg_folder):
    records, notes, calls = run_scales(str(diffseg_folder), iterations=5, batch_size=4, crop_size=32,
                                       recipe="native")  # 32 px images and crops
    clean, same, double = records["clean"], records["resize100"], records["resize200"]
    assert clean["config"]["eval_input"] == {"recipe": "native"} and clean["config"]["train"]["recipe"] == "native"
    assert same["metrics"] == clean["metrics"] and double["metrics"] != clean["metrics"]
    assert same["config"]["distortion_params"]["same_input_as"] == "baseline"
    assert calls == [{}, {"scale": 2.0, "input_size": 32}] and len(notes) == 1


@pytest.mark.slow  # builds mini (about 15-35 s on 2 shared cores)
def test_on_mini_rescale_at_the_training_resolution_is_the_baseline_and_2x_differs():
    records, notes, calls = run_scales("mini", dataset_option={"n_images": 6}, iterations=10)
    clean, same, double = records["clean"], records["resize100"], records["resize200"]
    assert clean["config"]["train"]["crop_size"] == 64  # mini: 64 px images, 64 px crops
    assert same["config"]["distortion_params"] == {"scale": 1.0, "input_size": 64, "same_input_as": "baseline"}
    assert double["config"]["distortion_params"] == {"scale": 2.0, "input_size": 64}
    assert same["metrics"] == clean["metrics"] and same["state_file"] == clean["state_file"]
    assert double["metrics"] != clean["metrics"]
    assert calls == [{}, {"scale": 2.0, "input_size": 64}]  # the 1.0 pass never ran
    [note] = notes
    assert note.startswith("resize-protocol/resize100: rescale (scale=1.0, input_size=64) feeds segformer.tiny "
                           "the same input as the undistorted pass on val (images 64x64")
    assert "not re-run" in note


def test_paper_recipe_is_recorded_evaluates_at_the_crop_and_says_negatives_are_missing(diffseg_folder, caplog,
                                                                                        monkeypatch):
    from diffzoo.harness.core import runlog

    monkeypatch.setattr(runlog, "_SAID", set())  # said once per process and dataset
    with caplog.at_level(logging.WARNING):
        records, notes, calls = run_scales(str(diffseg_folder), iterations=5, batch_size=4, crop_size=16,
                                           recipe="paper")
    said = [r.getMessage() for r in caplog.records if "COCO" in r.getMessage()]
    assert said == ["--recipe paper: no COCO negatives given (--dataset-option extra_authentic=DIR); training "
                    "without the paper's 5k unedited images"]
    clean = records["clean"]
    assert clean["config"]["train"]["recipe"] == "paper"
    assert clean["config"]["eval_input"] == {"recipe": "paper", "short_side": 16, "extra_negatives": 0}
    # 32 px images are evaluated at 16 px under paper, so 1.0 x 16 is the baseline's input
    assert records["resize100"]["metrics"] == clean["metrics"]
    assert records["resize100"]["config"]["distortion_params"]["same_input_as"] == "baseline"
    assert calls == [{}, {"scale": 2.0, "input_size": 16}] and len(notes) == 1
