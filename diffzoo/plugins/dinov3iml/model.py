"""The DINOv3-IML network: transformers' DINOv3 ViT, PEFT LoRA on q/k/v, a three-conv head.

The authors put one LoRA on DINOv3's fused ``qkv`` projection: a down matrix
A (r x d) shared by q, k and v, and an up matrix B (3d x r).  transformers
splits that projection into ``q_proj``, ``k_proj`` and ``v_proj``; here each
of the three gets a PEFT LoRA whose up matrix is its third of B and whose
down matrix is the one A held by ``q_proj`` (k and v read it, they do not
own a copy).  That is the same function with the same trainable parameters
and the same gradients as the fused adapter, and a released file maps onto
it exactly (:mod:`diffzoo.plugins.dinov3iml.release`).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import torch
from torch import nn

from diffzoo.plugin import NO_PRETRAINED, DetectorCard, SegmentationDetector, hub_pretrained

ADAPTER = "default"
"""PEFT's adapter name, as ``inject_adapter_in_model`` gives it (and the released files hold)."""


class SharedDown(nn.Module):
    """k's or v's LoRA down-projection: the q projection's, read through, not owned.

    The target is kept in a tuple so that it is no submodule here: the shared
    matrix has one key in the state dict and one entry among the parameters."""

    def __init__(self, owner: nn.Linear):
        super().__init__()
        self._owner = (owner,)

    @property
    def weight(self) -> torch.Tensor:  # PEFT casts the input to the adapter's dtype through this
        return self._owner[0].weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._owner[0](x)


def add_lora(backbone: Any, rank: int, alpha: int) -> Any:
    """PEFT LoRA (rank, alpha, no dropout, no bias) on every block's q/k/v, one down matrix
    per block; every other backbone weight frozen."""
    from peft import LoraConfig, inject_adapter_in_model

    config = LoraConfig(r=rank, lora_alpha=alpha, target_modules=["q_proj", "k_proj", "v_proj"],
                        lora_dropout=0.0, bias="none")
    backbone = inject_adapter_in_model(config, backbone, adapter_name=ADAPTER)
    for layer in backbone.model.layer:
        attention = layer.attention
        down = attention.q_proj.lora_A[ADAPTER]
        for proj in (attention.k_proj, attention.v_proj):
            proj.lora_A[ADAPTER] = SharedDown(down)
    for name, param in backbone.named_parameters():
        param.requires_grad = "lora_" in name
    return backbone


def seg_head(width: int, num_outputs: int) -> nn.Sequential:
    """Conv3x3 (d -> d/2) + BN + ReLU, Conv3x3 (d/2 -> d/4) + BN + ReLU, Conv1x1 (d/4 -> outputs),
    initialised as the authors do (Kaiming-normal fan_out, zero biases, BN 1/0)."""
    head = nn.Sequential(
        nn.Conv2d(width, width // 2, 3, padding=1),
        nn.BatchNorm2d(width // 2),
        nn.ReLU(inplace=True),
        nn.Conv2d(width // 2, width // 4, 3, padding=1),
        nn.BatchNorm2d(width // 4),
        nn.ReLU(inplace=True),
        nn.Conv2d(width // 4, num_outputs, 1),
    )
    for m in head.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out")
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.ones_(m.weight)
        if isinstance(m, (nn.Conv2d, nn.BatchNorm2d)) and m.bias is not None:
            nn.init.zeros_(m.bias)
    return head


class Dinov3Iml(nn.Module):
    """Normalised images (sides a multiple of the patch) -> logits at 1/16 resolution."""

    def __init__(self, backbone: Any, num_outputs: int):
        super().__init__()
        config = backbone.config
        self.backbone = backbone
        self.seg_head = seg_head(config.hidden_size, num_outputs)
        self.patch = int(config.patch_size)
        self.prefix = 1 + int(config.num_register_tokens)  # class token + registers precede the patches

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        b, _, h, w = images.shape
        # last block's output through the final LayerNorm: the reference's
        # get_intermediate_layers(n=1, norm=True) on a model whose cls and patch norms are tied
        tokens = self.backbone(pixel_values=images).last_hidden_state[:, self.prefix:]
        grid = tokens.transpose(1, 2).reshape(b, -1, h // self.patch, w // self.patch)
        return self.seg_head(grid)


def backbone_config(card: DetectorCard) -> Any:
    from transformers import DINOv3ViTConfig

    keys = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "num_register_tokens",
            "layerscale_value", "layer_norm_eps", "rope_theta", "pos_embed_rescale", "patch_size")
    return DINOv3ViTConfig(
        **{k: card.arch[k] for k in keys},
        query_bias=True, key_bias=False, value_bias=True,  # DINOv3 masks the key third of the qkv bias to 0
    )


class Dinov3ImlDetector(SegmentationDetector):
    head_prefixes = ("seg_head",)
    # 1-D weights and biases: the head's BatchNorms (seg_head.1, seg_head.4) and its conv biases
    no_decay_keywords = ("bias", "seg_head.1.", "seg_head.4.")

    def build_network(self, num_outputs: int, pretrained: bool) -> nn.Module:
        from transformers import DINOv3ViTModel

        card = self.card
        if pretrained:
            detail = f"a gated repository: accept the DINOv3 License on its hub page and log in first; {NO_PRETRAINED}"
            # the card's config over the hub's config.json (which no hash checks): the model a checkpoint loads
            # into; a backbone of another width or depth is refused as tensors missing or of other shapes
            load = partial(DINOv3ViTModel.from_pretrained, config=backbone_config(card), ignore_mismatched_sizes=True)
            backbone: Any = hub_pretrained(card, load, ("model.safetensors",), detail=detail)
        else:
            backbone = DINOv3ViTModel(backbone_config(card))
        backbone = add_lora(backbone, card.arch["lora_rank"], card.arch["lora_alpha"])
        return Dinov3Iml(backbone, num_outputs)
