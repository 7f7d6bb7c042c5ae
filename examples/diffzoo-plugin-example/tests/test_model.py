"""The residual detector: shapes, the fixed filter, training, checkpoints."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from diffzoo_plugin_example import CARD
from diffzoo_plugin_example.model import HighPass, ResidualDetector

from diffzoo import DetectionOutput, DetectorBuild, LabelSpace, TrainConfig, TrainData

SEMANTIC = LabelSpace.from_editors(["sd2", "sdxl", "flux1"])
TINY_CARD = dataclasses.replace(CARD, arch={"width": 16, "dilations": [1, 2, 4]})


@pytest.mark.parametrize(("task", "channels"), [("binary", 1), ("semantic", 4)])
def test_predict_gives_one_logit_map_per_output_at_input_size(task, channels):
    torch.manual_seed(0)
    det = ResidualDetector(DetectorBuild(TINY_CARD, task, SEMANTIC))
    images = torch.rand(2, 3, 37, 45)  # not a multiple of the padding stride
    out = det.predict(images)
    assert isinstance(out, DetectionOutput)
    assert out.mask_logits.shape == (2, channels, 37, 45)
    assert torch.isfinite(out.mask_logits).all()


def test_high_pass_ignores_flat_and_linear_shading_but_not_noise():
    hp = HighPass()
    yy, xx = torch.meshgrid(torch.arange(16.0), torch.arange(16.0), indexing="ij")
    ramp = (0.3 + 0.01 * xx + 0.02 * yy).expand(1, 3, 16, 16)
    inner = (slice(None), slice(None), slice(2, -2), slice(2, -2))  # away from the zero padding
    assert hp(ramp)[inner].abs().max() < 1e-5
    noise = torch.rand(1, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    assert hp(noise)[inner].abs().mean() > 0.1


def test_the_filter_is_fixed_and_not_saved():
    det = ResidualDetector(DetectorBuild(TINY_CARD, "binary", SEMANTIC))
    names = [n for n, _ in det.model.named_parameters()]
    assert names and not any("residual" in n for n in names)
    assert not any("residual" in k for k in det.model.net.state_dict())


@pytest.mark.parametrize("task", ["binary", "semantic"])
def test_a_few_training_steps_lower_the_loss(toy, task):
    torch.manual_seed(0)
    det = ResidualDetector(DetectorBuild(TINY_CARD, task, toy.label_space))
    config = TrainConfig(iterations=30, batch_size=4, crop_size=32, lr=1e-2, warmup_iters=0,
                         weight_decay=0.0, pretrained=False)
    steps = []
    log = det.fit(TrainData(toy, toy.ids("train")), config, progress=lambda step, loss: steps.append(step))
    assert steps == list(range(1, 31))
    assert log["final_loss"] < 0.5 * log["first_loss"]


def test_save_and_load_round_trip(tmp_path, toy):
    torch.manual_seed(0)
    det = ResidualDetector(DetectorBuild(TINY_CARD, "binary", toy.label_space))
    det.save(tmp_path / "ckpt")
    images = torch.rand(1, 3, 32, 32)
    torch.manual_seed(1)
    fresh = ResidualDetector(DetectorBuild(TINY_CARD, "binary", toy.label_space))
    assert not torch.equal(fresh.predict(images).mask_logits, det.predict(images).mask_logits)
    fresh.load(tmp_path / "ckpt")
    assert torch.equal(fresh.predict(images).mask_logits, det.predict(images).mask_logits)
