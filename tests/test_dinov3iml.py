"""DINOv3-IML (``dinov3iml.*``): the tiny card trains and scores on `mini`, passes `plugins check`;
an authors'-layout release file loads through ``from_release`` and gives the reference's logits;
a file with a key missing or renamed is refused naming it; a full card offline names its hub id."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from diffzoo import create_detector
from diffzoo.harness.core.errors import ModelError, WeightsUnavailableError
from diffzoo.harness.core.plugins import get_registry
from diffzoo.plugins.dinov3iml import TINY
from diffzoo.plugins.dinov3iml.release import from_release, unwrap

from helpers.cli import cli

FAST = ["--iterations", "3", "--batch-size", "2", "--crop-size", "32", "--bootstrap", "0", "--device", "cpu"]


# -- the reference, in DINOv3's own naming --------------------------------------------------------
# A small re-statement of the authors' forward (models/dinov3_forensics_lora.py on the DINOv3 hub
# ViT, facebookresearch/dinov3): fused qkv with a key-masked bias, RoPE on the patch tokens only,
# layer scale, get_intermediate_layers(n=1, reshape=True, norm=True), the three-conv head.

class KeyMaskedQKV(nn.Linear):
    bias_mask: torch.Tensor

    def __init__(self, dim):
        super().__init__(dim, 3 * dim)
        mask = torch.ones(3 * dim)
        mask[dim:2 * dim] = 0
        self.register_buffer("bias_mask", mask)

    def forward(self, x):
        return F.linear(x, self.weight, self.bias * self.bias_mask)


class Attn(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = KeyMaskedQKV(dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, sin, cos):
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).unbind(2)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        prefix = n - sin.shape[0]

        def rope(t):
            rest = t[:, :, prefix:]
            half = torch.cat([-rest[..., rest.shape[-1] // 2:], rest[..., :rest.shape[-1] // 2]], -1)
            return torch.cat([t[:, :, :prefix], rest * cos + half * sin], 2)

        out = F.scaled_dot_product_attention(rope(q), rope(k), v)
        return self.proj(out.transpose(1, 2).reshape(b, n, c))


class Scale(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * self.gamma


class Mlp(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(dim, hidden), nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, dim, heads, hidden):
        super().__init__()
        self.norm1, self.attn, self.ls1 = nn.LayerNorm(dim, eps=1e-5), Attn(dim, heads), Scale(dim)
        self.norm2, self.mlp, self.ls2 = nn.LayerNorm(dim, eps=1e-5), Mlp(dim, hidden), Scale(dim)

    def forward(self, x, sin, cos):
        x = x + self.ls1(self.attn(self.norm1(x), sin, cos))
        return x + self.ls2(self.mlp(self.norm2(x)))


class PatchEmbed(nn.Module):
    def __init__(self, dim, patch):
        super().__init__()
        self.proj = nn.Conv2d(3, dim, patch, patch)


class Rope(nn.Module):
    periods: torch.Tensor

    def __init__(self, head_dim, base):
        super().__init__()
        self.register_buffer("periods", base ** (2 * torch.arange(head_dim // 4) / (head_dim // 2)))

    def forward(self, h, w):
        ch, cw = torch.arange(0.5, h) / h, torch.arange(0.5, w) / w
        coords = 2 * torch.stack(torch.meshgrid(ch, cw, indexing="ij"), -1).flatten(0, 1) - 1
        angles = (2 * math.pi * coords[:, :, None] / self.periods[None, None]).flatten(1, 2).tile(2)
        return angles.sin(), angles.cos()


class RefViT(nn.Module):
    def __init__(self, arch):
        super().__init__()
        d, p = arch["hidden_size"], arch["patch_size"]
        self.patch = p
        self.cls_token = nn.Parameter(torch.zeros(1, 1, d))
        self.storage_tokens = nn.Parameter(torch.zeros(1, arch["num_register_tokens"], d))
        self.mask_token = nn.Parameter(torch.zeros(1, d))
        self.patch_embed = PatchEmbed(d, p)
        self.rope_embed = Rope(d // arch["num_attention_heads"], arch["rope_theta"])
        self.blocks = nn.ModuleList(Block(d, arch["num_attention_heads"], arch["intermediate_size"])
                                    for _ in range(arch["num_hidden_layers"]))
        self.norm = nn.LayerNorm(d, eps=1e-5)

    def get_intermediate_layers(self, x, n=1, reshape=True, norm=True):
        assert (n, reshape, norm) == (1, True, True)
        b, _, h, w = x.shape
        tokens = self.patch_embed.proj(x).flatten(2).transpose(1, 2)
        tokens = torch.cat([self.cls_token.expand(b, -1, -1), self.storage_tokens.expand(b, -1, -1), tokens], 1)
        sin, cos = self.rope_embed(h // self.patch, w // self.patch)
        for block in self.blocks:
            tokens = block(tokens, sin, cos)
        patches = self.norm(tokens)[:, 1 + self.storage_tokens.shape[1]:]
        return (patches.reshape(b, h // self.patch, w // self.patch, -1).permute(0, 3, 1, 2),)


class Reference(nn.Module):
    def __init__(self, arch):
        from peft import LoraConfig, inject_adapter_in_model

        super().__init__()
        d = arch["hidden_size"]
        lora = LoraConfig(r=arch["lora_rank"], lora_alpha=arch["lora_alpha"], target_modules=["qkv"],
                          lora_dropout=0.0, bias="none")
        self.backbone: Any = inject_adapter_in_model(lora, RefViT(arch))
        self.seg_head = nn.Sequential(
            nn.Conv2d(d, d // 2, 3, padding=1), nn.BatchNorm2d(d // 2), nn.ReLU(),
            nn.Conv2d(d // 2, d // 4, 3, padding=1), nn.BatchNorm2d(d // 4), nn.ReLU(),
            nn.Conv2d(d // 4, 1, 1))

    def forward(self, x):
        features = self.backbone.get_intermediate_layers(x, n=1, reshape=True, norm=True)[0]
        return F.interpolate(self.seg_head(features), size=x.shape[-2:], mode="bilinear", align_corners=False)


def reference_model(seed=0):
    """The reference at the tiny card's size, every weight random (LoRA B and BN statistics too)."""
    torch.manual_seed(seed)
    ref = Reference(TINY.arch)
    with torch.no_grad():
        for name, t in ref.state_dict().items():
            if name.endswith("bias_mask") or name.endswith("periods") or name.endswith("num_batches_tracked"):
                continue
            if name.endswith("running_var"):
                t.copy_(torch.rand_like(t) + 0.5)
            else:
                t.copy_(torch.randn_like(t) * (0.2 if t.dim() > 1 else 0.5))
    return ref.eval()


def released_file(tmp_path, ref):
    """The reference saved as IMDL-BenCo saves a checkpoint: the state dict under ``model``."""
    path = tmp_path / "cat_vit_tiny_lora_r4.pth"
    torch.save({"model": ref.state_dict(), "epoch": 99}, path)
    return path


def load(path):
    return unwrap(torch.load(path, map_location="cpu", weights_only=True))


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


def test_the_wrapper_is_taken_off_whether_or_not_the_caller_did(tmp_path):
    ref = reference_model()
    raw = torch.load(released_file(tmp_path, ref), map_location="cpu", weights_only=True)
    a, b = from_release(raw, TINY), from_release(raw["model"], TINY)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


# -- (3) a key missing or renamed --------------------------------------------------------------------

def test_a_missing_key_is_named(tmp_path):
    state = load(released_file(tmp_path, reference_model()))
    del state["backbone.blocks.1.attn.qkv.lora_B.default.weight"]
    with pytest.raises(ModelError, match=r"missing 1 key\(s\): backbone\.blocks\.1\.attn\.qkv\.lora_B"):
        from_release(state, TINY)


def test_a_renamed_key_is_named_both_ways(tmp_path):
    state = load(released_file(tmp_path, reference_model()))
    state["backbone.blocks.0.ls1.scale"] = state.pop("backbone.blocks.0.ls1.gamma")
    with pytest.raises(ModelError) as exc:
        from_release(state, TINY)
    assert "missing 1 key(s): backbone.blocks.0.ls1.gamma" in str(exc.value)
    assert "unexpected 1 key(s): backbone.blocks.0.ls1.scale" in str(exc.value)


def test_a_release_of_another_rank_is_named_with_its_shape(tmp_path):
    state = load(released_file(tmp_path, reference_model()))
    key = "backbone.blocks.0.attn.qkv.lora_A.default.weight"
    state[key] = torch.zeros(8, TINY.arch["hidden_size"])
    with pytest.raises(ModelError, match=rf"{key} is \(8, 64\), not \(4, 64\)"):
        from_release(state, TINY)


def test_an_unmasked_key_bias_is_refused(tmp_path):
    state = load(released_file(tmp_path, reference_model()))
    state["backbone.blocks.0.attn.qkv.base_layer.bias_mask"] = torch.ones(3 * TINY.arch["hidden_size"])
    with pytest.raises(ModelError, match="bias_mask"):
        from_release(state, TINY)


# -- (4) offline ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["dinov3iml.s", "dinov3iml.b", "dinov3iml.l"])
def test_a_full_card_offline_names_its_hub_id(name, offline_empty_hub):
    card = get_registry().get("detector", name).card
    with pytest.raises(WeightsUnavailableError) as exc:
        create_detector(name, "binary", pretrained=True)
    message = str(exc.value)
    assert card.weights and card.weights in message and name in message
    assert "--no-pretrained" in message and "DINOv3 License" in message
    assert offline_empty_hub == []
