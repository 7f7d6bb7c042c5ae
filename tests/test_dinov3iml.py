"""DINOv3-IML (``dinov3iml.*``): the tiny card trains and scores on `mini`, passes `plugins check`;
an authors'-layout release file loads through ``from_release`` and gives the reference's logits;
a file with a key missing or renamed is refused naming it; a full card offline names its hub id."""

from __future__ import annotations

import json
import math

import pytest
import torch

from diffzoo import create_detector
from diffzoo.harness.core.errors import ModelError, WeightsUnavailableError
from diffzoo.harness.core.plugins import get_registry
from diffzoo.harness.models.releases import read_release
from diffzoo.harness.models.weights import built_from
from diffzoo.plugins.dinov3iml import TINY
from diffzoo.plugins.dinov3iml.release import from_release

from helpers.cli import cli
from helpers.dinov3iml import reference_model

FAST = ["--iterations", "3", "--batch-size", "2", "--crop-size", "32", "--bootstrap", "0", "--device", "cpu"]


def released_file(tmp_path, ref):
    """The reference saved as IMDL-BenCo saves a checkpoint: the state dict under ``model``."""
    path = tmp_path / "cat_vit_tiny_lora_r4.pth"
    torch.save({"model": ref.state_dict(), "epoch": 99}, path)
    return path


def load(path):
    return torch.load(path, map_location="cpu", weights_only=True)["model"]


# -- (1) the tiny card on mini, and plugins check ----------------------------------------------------

def test_tiny_card_trains_and_scores_on_mini(capsys, tmp_path):
    out = tmp_path / "out"
    code, stdout, stderr = cli(capsys, "run", "--detector", "dinov3iml.tiny", "--suite", "standard", "--out", out,
                               *FAST)
    assert code == 0, stderr
    records = [json.loads(p.read_text()) for p in (out / "records").glob("*.json")]
    assert sorted(r["case"]["name"] for r in records) == ["binary", "image", "semantic"]
    for r in records:
        assert r["detector"]["name"] == "dinov3iml.tiny"
        assert math.isfinite(r["training"]["final_loss"]), r["training"]


def test_tiny_card_passes_plugins_check(capsys):
    code, stdout, _ = cli(capsys, "plugins", "check", "dinov3iml.tiny")
    assert code == 0 and "0 failed" in stdout, stdout


def test_only_the_lora_and_the_head_train_and_q_k_v_share_one_down_matrix():
    det = create_detector("dinov3iml.tiny", "binary", pretrained=False)
    trained = {n for n, p in det.saved_module().named_parameters() if p.requires_grad}
    assert trained and all("lora_" in n or n.startswith("seg_head.") for n in trained)
    attention = det.saved_module().backbone.model.layer[0].attention
    down = attention.q_proj.lora_A["default"].weight
    assert attention.k_proj.lora_A["default"].weight is down and attention.v_proj.lora_A["default"].weight is down
    assert not any(".k_proj.lora_A" in k or ".v_proj.lora_A" in k for k in det.saved_module().state_dict())


# -- (2) parity with the authors' layout -------------------------------------------------------------

def test_a_release_file_gives_the_reference_logits(tmp_path):
    ref = reference_model()
    path = released_file(tmp_path, ref)
    det = create_detector("dinov3iml.tiny", "binary", pretrained=False)
    det.saved_module().load_state_dict(from_release(load(path), det.card), strict=True)
    torch.manual_seed(1)
    images = torch.rand(2, 3, 64, 96)
    mean, std = torch.tensor(TINY.mean).view(1, 3, 1, 1), torch.tensor(TINY.std).view(1, 3, 1, 1)
    with torch.no_grad():
        expected = ref((images - mean) / std)
    got = det.predict(images).mask_logits
    assert got.shape == expected.shape == (2, 1, 64, 96)
    assert expected.abs().max() > 0.1  # the weights matter: not a near-constant output
    assert torch.allclose(got, expected, rtol=1e-4, atol=1e-5), (got - expected).abs().max()


@pytest.mark.isolated_cache
def test_the_release_reader_takes_the_wrapper_off_whether_or_not_the_file_has_one(tmp_path):
    ref = reference_model()
    wrapped, bare = released_file(tmp_path, ref), tmp_path / "bare.pth"
    torch.save(ref.state_dict(), bare)
    with built_from():  # two files of one release read before the first use is recorded
        a, b = (read_release(TINY, TINY.releases[0], [path])[0] for path in (wrapped, bare))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


# -- (3) a key missing or renamed --------------------------------------------------------------------

def test_a_missing_key_is_named(tmp_path):
    state = load(released_file(tmp_path, reference_model()))
    del state["backbone.blocks.1.attn.qkv.lora_B.default.weight"]
    with pytest.raises(ModelError, match=r"1 tensor\(s\) missing from the checkpoint: backbone\.blocks\.1\.attn\.qkv\.lora_B"):
        from_release(state, TINY)


def test_a_renamed_key_is_named_both_ways(tmp_path):
    state = load(released_file(tmp_path, reference_model()))
    state["backbone.blocks.0.ls1.scale"] = state.pop("backbone.blocks.0.ls1.gamma")
    with pytest.raises(ModelError) as exc:
        from_release(state, TINY)
    assert "1 tensor(s) missing from the checkpoint: backbone.blocks.0.ls1.gamma" in str(exc.value)
    assert "1 unexpected tensor(s): backbone.blocks.0.ls1.scale" in str(exc.value)


def test_a_release_of_another_rank_is_named_with_its_shape(tmp_path):
    state = load(released_file(tmp_path, reference_model()))
    key = "backbone.blocks.0.attn.qkv.lora_A.default.weight"
    state[key] = torch.zeros(8, TINY.arch["hidden_size"])
    with pytest.raises(ModelError, match=rf"{key} is \[8, 64\] in the checkpoint, \[4, 64\] in the model"):
        from_release(state, TINY)


def test_an_unmasked_key_bias_is_refused(tmp_path):
    state = load(released_file(tmp_path, reference_model()))
    state["backbone.blocks.0.attn.qkv.base_layer.bias_mask"] = torch.ones(3 * TINY.arch["hidden_size"])
    with pytest.raises(ModelError, match="bias_mask"):
        from_release(state, TINY)


# -- (4) offline ---------------------------------------------------------------------------------------

def test_a_hub_backbone_builds_the_cards_config_and_one_of_another_width_is_refused(offline_empty_hub, tmp_path):
    """config.json, which no hash checks, set another layer-norm eps: the model trained with it was loaded
    from its checkpoint with the card's. A backbone of another width is one line, not a Python error."""
    import dataclasses

    from transformers import DINOv3ViTModel

    from diffzoo.harness.core.errors import WeightsFileError
    from diffzoo.harness.core.protocols import DetectorBuild
    from diffzoo.plugins.dinov3iml.model import Dinov3ImlDetector, backbone_config

    card = dataclasses.replace(TINY, name="dinov3iml.hub", weights="diffzoo-test/tiny-dinov3")
    snapshot = tmp_path / "hf" / "hub" / "models--diffzoo-test--tiny-dinov3" / "snapshots" / ("0" * 40)
    (snapshot.parents[1] / "refs").mkdir(parents=True)
    (snapshot.parents[1] / "refs" / "main").write_text("0" * 40)
    for width, eps in ((TINY.arch["hidden_size"], 1e-3), (32, 1e-5)):
        config = backbone_config(dataclasses.replace(card, arch={**card.arch, "hidden_size": width}))
        config.layer_norm_eps = eps
        DINOv3ViTModel(config).save_pretrained(snapshot)
        build = DetectorBuild(dataclasses.replace(card, name=f"dinov3iml.hub{width}"), "binary", pretrained=True)
        if width == TINY.arch["hidden_size"]:
            assert Dinov3ImlDetector(build).saved_module().backbone.model.config.layer_norm_eps == 1e-5
        else:
            with pytest.raises(WeightsFileError, match=r"tensor\(s\) of the model are missing from it or of another"):
                Dinov3ImlDetector(build)


@pytest.mark.parametrize("name", ["dinov3iml.s", "dinov3iml.b", "dinov3iml.l"])
def test_a_full_card_offline_names_its_hub_id(name, offline_empty_hub):
    card = get_registry().get("detector", name).card
    with pytest.raises(WeightsUnavailableError) as exc:
        create_detector(name, "binary", pretrained=True)
    message = str(exc.value)
    assert card.weights and card.weights in message and name in message
    assert "--no-pretrained" in message and "DINOv3 License" in message
    assert offline_empty_hub == []
