"""Segmentation detector plugins (SegFormer, DeepLabv3+, FCN-8s) on their tiny cards:
output size, training, checkpoints, offline weights, and a CLI run."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from diffzoo import create_detector, open_dataset
from diffzoo.harness.core.errors import WeightsUnavailableError
from diffzoo.harness.core.plugins import get_registry
from diffzoo.harness.core.train_config import TrainConfig
from diffzoo.harness.core.types import LabelSpace
from diffzoo.plugin import TrainData

TINY = ["deeplabv3plus.tiny", "fcn8s.tiny", "segformer.tiny"]
FAMILIES = ["deeplabv3plus", "fcn8s", "segformer"]
# The cards' recipes are for full-size runs (long warm-up, lrs for pretrained
# encoders); a dozen steps from random weights need a larger, constant lr.
FAST_LR = {"SGD": 1e-2, "AdamW": 1e-3}


def card(name):
    return get_registry().get("detector", name).card


def fast_config(name, iterations=12):
    recipe = card(name).recipe_values()
    return TrainConfig.from_recipe(
        recipe, iterations=iterations, batch_size=4, crop_size=32, warmup_iters=0,
        lr=FAST_LR[recipe["optimizer"]], seed=0,
    )


@pytest.mark.parametrize("name", TINY)
@pytest.mark.parametrize("task", ["binary", "semantic"])
def test_predictions_have_the_input_size(name, task):
    ls = LabelSpace.from_editors(["a", "b", "c"])
    det = create_detector(name, task, ls)
    for h, w in [(50, 70), (33, 31), (64, 64), (1, 1), (1, 300), (300, 1), (3, 5)]:  # odd sizes too
        logits = det.predict(torch.rand(2, 3, h, w)).mask_logits
        channels = 1 if task == "binary" else ls.num_classes
        assert logits.shape == (2, channels, h, w)
        assert torch.isfinite(logits).all()


@pytest.mark.parametrize("name", TINY)
def test_cards_record_every_trainer_setting_with_a_source(name):
    c = card(name)
    for key in ("optimizer", "lr", "weight_decay", "iterations", "batch_size", "crop_size", "warmup_iters",
                "poly_power", "min_lr", "hflip", "augmentation", "pretrained", "head_lr_mult"):
        assert key in c.recipe and c.recipe[key].source.strip(), key
    config = TrainConfig.from_recipe(c.recipe_values())
    assert config.optimizer == c.recipe["optimizer"].value and config.lr == c.recipe["lr"].value
    if config.optimizer == "SGD":
        assert c.recipe["momentum"].source
    assert config.pretrained is False  # tiny cards have no weights
    real = card(get_registry().resolve("detector", c.family))
    assert real.weights and real.recipe["pretrained"].value is True


@pytest.mark.parametrize("name", TINY)
@pytest.mark.parametrize("task", ["binary", "semantic"])
def test_a_few_training_steps_lower_the_loss(name, task, diffseg_folder):
    ds = open_dataset(str(diffseg_folder))
    torch.manual_seed(0)
    det = create_detector(name, task, ds.label_space if task == "semantic" else None)
    log = det.fit(TrainData(ds, ds.ids("train")), fast_config(name))
    losses = log["losses"]
    assert len(losses) == 12 and all(np.isfinite(losses))
    assert np.mean(losses[-3:]) < 0.9 * np.mean(losses[:3]), losses


@pytest.mark.parametrize("name", TINY)
def test_save_then_load_gives_identical_predictions(name, diffseg_folder, tmp_path):
    ds = open_dataset(str(diffseg_folder))
    torch.manual_seed(0)
    det = create_detector(name, "semantic", ds.label_space)
    det.fit(TrainData(ds, ds.ids("train")), fast_config(name, iterations=2))  # moves weights and BN stats
    images = torch.rand(2, 3, 40, 56)
    expected = det.predict(images).mask_logits
    det.save(tmp_path / "ckpt")
    torch.manual_seed(1)
    fresh = create_detector(name, "semantic", ds.label_space)
    assert not torch.equal(fresh.predict(images).mask_logits, expected)
    fresh.load(tmp_path / "ckpt")
    assert torch.equal(fresh.predict(images).mask_logits, expected)


@pytest.mark.parametrize("family", FAMILIES)
def test_pretrained_offline_names_the_weights(family, tmp_path, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf"))
    name = get_registry().resolve("detector", family)
    with pytest.raises(WeightsUnavailableError) as exc:
        create_detector(name, "binary", pretrained=True)
    message = str(exc.value)
    assert card(name).weights in message and name in message
    if family != "segformer":
        assert "--no-pretrained" in message


def test_fcn8s_biases_get_the_reference_lr_and_no_decay():
    det = create_detector("fcn8s.tiny", "binary")
    biases = {id(p) for n, p in det.model.named_parameters() if n.endswith(".bias")}
    groups = det.param_groups()
    assert sum(len(g["params"]) for g in groups) == len([p for p in det.model.parameters() if p.requires_grad])
    for g in groups:
        is_bias = {id(p) in biases for p in g["params"]}
        assert len(is_bias) == 1
        if is_bias.pop():
            assert g["lr_mult"] == 2.0 and g["weight_decay"] == 0.0
        else:
            assert g["lr_mult"] == 1.0 and "weight_decay" not in g


def test_fcn8s_upsampling_starts_bilinear():
    """The 2x and 8x transposed convs start as bilinear interpolation (half-pixel centres)."""
    import torch.nn.functional as F

    from diffzoo.plugins.fcn8s.model import bilinear_kernel

    x = torch.rand(1, 2, 6, 6)
    for factor in (2, 8):
        up = F.conv_transpose2d(x, bilinear_kernel(2, 2 * factor), stride=factor, padding=factor // 2)
        ref = F.interpolate(x, scale_factor=factor, mode="bilinear", align_corners=False)
        inner = (slice(None), slice(None), slice(factor, -factor), slice(factor, -factor))
        assert up.shape == ref.shape and torch.allclose(up[inner], ref[inner], atol=1e-6)


@pytest.mark.parametrize("name", TINY)
def test_cli_run_writes_a_record_per_standard_case(name, diffseg_folder, tmp_path, capsys):
    from diffzoo.cli import main

    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exc:
        main(["run", "--detector", name, "--suite", "standard", "--dataset", str(diffseg_folder),
              "--out", str(out), "--iterations", "3", "--batch-size", "2", "--crop-size", "32",
              "--bootstrap", "0", "--device", "cpu"])
        raise SystemExit(0)
    assert (exc.value.code or 0) == 0, capsys.readouterr().err
    records = [json.loads(p.read_text()) for p in (out / "records").glob("*.json")]
    cases = {c.name for c in get_registry().get("suite", "standard").load().cases}
    assert sorted(r["case"]["name"] for r in records) == sorted(cases)
    assert {r["detector"]["name"] for r in records} == {name}
    assert all(r["config"]["train"]["optimizer"] == card(name).recipe["optimizer"].value for r in records)


def test_fcn8s_convolutionalises_the_vgg_classifier():
    """fc6 loaded from a VGG classifier computes the Linear layer on each 7x7 window."""
    from diffzoo.plugins.fcn8s import TINY_ARCH
    from diffzoo.plugins.fcn8s.model import FCN8s

    torch.manual_seed(0)
    net = FCN8s(2, **TINY_ARCH)
    c5, fc = net.fc6.in_channels, net.fc6.out_channels
    fc6, fc7 = torch.nn.Linear(c5 * 49, fc), torch.nn.Linear(fc, fc)
    state = {f"features.{k}": torch.randn_like(v) for k, v in net.features.state_dict().items()}
    state |= {"classifier.0.weight": fc6.weight, "classifier.0.bias": fc6.bias,
              "classifier.3.weight": fc7.weight, "classifier.3.bias": fc7.bias}
    net.load_state_dict(net.vgg_state(state), strict=False)
    assert torch.equal(net.features.state_dict()["0.weight"], state["features.0.weight"])
    window = torch.randn(1, c5, 7, 7)
    with torch.no_grad():
        assert torch.allclose(net.fc6(window)[0, :, 3, 3], fc6(window.flatten(1))[0], atol=1e-5)
        x = torch.randn(1, fc, 1, 1)
        assert torch.allclose(net.fc7(x)[0, :, 0, 0], fc7(x.flatten(1))[0], atol=1e-5)


def test_trainer_builds_the_recipe_optimizer_and_poly_floor():
    from diffzoo.harness.core.errors import ConfigError
    from diffzoo.harness.models.trainer import make_optimizer, poly_lr_lambda

    param = torch.nn.Parameter(torch.zeros(1))
    sgd = TrainConfig.from_recipe(card("deeplabv3plus.r50").recipe_values())
    opt = make_optimizer([{"params": [param], "lr": sgd.lr}], sgd)
    assert isinstance(opt, torch.optim.SGD)
    assert opt.defaults["momentum"] == sgd.momentum and opt.defaults["weight_decay"] == sgd.weight_decay
    factor = poly_lr_lambda(sgd, sgd.min_lr / sgd.lr)
    t = sgd.iterations // 3
    # mmengine PolyLR: eta_min + (lr - eta_min) * (1 - t / T) ** power
    expected = sgd.min_lr + (sgd.lr - sgd.min_lr) * (1 - t / sgd.iterations) ** sgd.poly_power
    assert factor(0) == 1.0 and sgd.lr * factor(t) == pytest.approx(expected)
    assert sgd.lr * factor(sgd.iterations) == pytest.approx(sgd.min_lr)
    adamw = TrainConfig.from_recipe(card("segformer.b2").recipe_values())
    assert isinstance(make_optimizer([{"params": [param], "lr": adamw.lr}], adamw), torch.optim.AdamW)
    assert poly_lr_lambda(adamw)(adamw.iterations) == 0.0
    with pytest.raises(ConfigError, match="optimizer 'Adam' is not one of"):
        adamw.with_overrides(optimizer="Adam")


def test_deeplabv3plus_encoder_runs_at_output_stride_8():
    det = create_detector("deeplabv3plus.tiny", "binary")
    assert card("deeplabv3plus.r50").arch["encoder_output_stride"] == 8
    with torch.no_grad():
        features = det.model.net.encoder(torch.rand(1, 3, 64, 96))
    assert features[-1].shape[-2:] == (8, 12)


@pytest.mark.parametrize("family", FAMILIES)
def test_docs_recipe_tables_match_the_cards(family):
    """docs/detectors.md shows each default card's recipe row by row, value and source."""
    from pathlib import Path

    doc = (Path(__file__).parents[1] / "docs" / "detectors.md").read_text()
    c = card(get_registry().resolve("detector", family))
    for key, rv in c.recipe.items():
        assert f"| `{key}` | {rv.value} | {rv.source} |" in doc, key
