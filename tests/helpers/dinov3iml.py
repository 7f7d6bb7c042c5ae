"""DINOv3-IML's reference model in the authors' own naming: what a release file of theirs holds.

A small re-statement of the authors' forward (models/dinov3_forensics_lora.py on the DINOv3 hub
ViT, facebookresearch/dinov3): fused qkv with a key-masked bias, RoPE on the patch tokens only,
layer scale, get_intermediate_layers(n=1, reshape=True, norm=True), the three-conv head.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from diffzoo.plugins.dinov3iml import TINY


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


# -- a release file of the authors' -----------------------------------------------------------------
RELEASE = "cat-lora-r32"
FILE = "cat_vitl_lora_r32.pth"


def released(folder: Path, state: dict | None = None, **extra) -> Path:
    """A file in the release's layout: the authors' state dict under ``model``, beside the
    entries their training script saves (an epoch, the arguments as an argparse Namespace)."""
    import argparse

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / FILE
    torch.save({"model": state if state is not None else reference_model().state_dict(), "epoch": 99,
                "args": argparse.Namespace(lr=3e-4, model="dinov3_vitl16"), **extra}, path)
    return path
