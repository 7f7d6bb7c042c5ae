"""SegFormer (Xie et al. 2021) through transformers: cards and registration.

This module is plain data: it imports no torch, so listing stays fast.  The
model itself lives in :mod:`diffzoo.plugins.segformer.model`.
"""

from __future__ import annotations

from diffzoo.plugin import DetectorCard, RecipeValue, hookimpl, register_cards
from diffzoo.plugins.recipes import AMP, CROP_AND_FLIP, tiny_recipe

PAPER = "Xie et al., SegFormer, NeurIPS 2021, arXiv 2105.15203"
MMSEG_CFG = "mmsegmentation configs/segformer/segformer_mit-b0_8xb2-160k_ade20k-512x512.py"
MMSEG_SCHED = "mmsegmentation configs/_base_/schedules/schedule_160k.py"

# The open-source SegFormer ADE20K recipe, shared by every MiT size.
RECIPE = {
    "optimizer": RecipeValue("AdamW", MMSEG_CFG + " (optim_wrapper)"),
    "lr": RecipeValue(6e-5, MMSEG_CFG + " (optim_wrapper.optimizer.lr)"),
    "betas": RecipeValue((0.9, 0.999), MMSEG_CFG + " (optim_wrapper.optimizer.betas)"),
    "weight_decay": RecipeValue(
        0.01,
        MMSEG_CFG + " (optim_wrapper.optimizer.weight_decay; paramwise_cfg norm decay_mult=0., "
        "so norm layers do not decay: SegformerDetector.no_decay_keywords)",
    ),
    "head_lr_mult": RecipeValue(10.0, MMSEG_CFG + " (paramwise_cfg.custom_keys.head.lr_mult)"),
    "warmup_iters": RecipeValue(1500, MMSEG_CFG + " (param_scheduler LinearLR start_factor=1e-6, end=1500)"),
    "poly_power": RecipeValue(1.0, MMSEG_CFG + " (param_scheduler PolyLR power=1.0)"),
    "min_lr": RecipeValue(0.0, MMSEG_CFG + " (param_scheduler PolyLR eta_min=0.0)"),
    "iterations": RecipeValue(160_000, MMSEG_SCHED + " (train_cfg.max_iters)"),
    "batch_size": RecipeValue(16, MMSEG_CFG + " (8 GPUs x 2 images per GPU)"),
    "crop_size": RecipeValue(512, MMSEG_CFG + " (crop_size = (512, 512))"),
    "hflip": RecipeValue(True, MMSEG_CFG + " (RandomFlip prob=0.5)"),
    "augmentation": CROP_AND_FLIP,
    "pretrained": RecipeValue(
        True, MMSEG_CFG + " (model.pretrained='pretrain/mit_b0.pth': the ImageNet-1k MiT encoder)"
    ),
    "amp": AMP,
}

# (depths, hidden sizes, decoder size): transformers SegformerConfig docs /
# the nvidia/mit-b* hub configs; Table 6 of the SegFormer paper.
MIT = {
    "b0": ((2, 2, 2, 2), (32, 64, 160, 256), 256),
    "b1": ((2, 2, 2, 2), (64, 128, 320, 512), 256),
    "b2": ((3, 4, 6, 3), (64, 128, 320, 512), 768),
    "b3": ((3, 4, 18, 3), (64, 128, 320, 512), 768),
    "b4": ((3, 8, 27, 3), (64, 128, 320, 512), 768),
    "b5": ((3, 6, 40, 3), (64, 128, 320, 512), 768),
}


def _card(tag: str, depths, hidden, decoder, weights, description, recipe=RECIPE) -> DetectorCard:
    return DetectorCard(
        name=f"segformer.{tag}",
        description=description,
        tasks=("binary", "semantic"),
        weights=weights,
        licence="NVIDIA Source Code License (SegFormer weights); transformers: Apache-2.0",
        paper=PAPER,
        arch={
            "depths": list(depths),
            "hidden_sizes": list(hidden),
            "decoder_hidden_size": decoder,
            "num_attention_heads": [1, 2, 5, 8] if hidden[0] >= 32 else [1, 1, 1, 1],
        },
        recipe=recipe,
    )


CARDS = [
    _card(
        tag,
        *MIT[tag],
        f"nvidia/mit-{tag}",
        f"SegFormer-{tag.upper()} (MiT-{tag.upper()} encoder, ImageNet-1k pretrained)"
        + (" - the DiffSeg30k paper's model" if tag == "b2" else ""),
    )
    for tag in MIT
]
TINY = _card(
    "tiny",
    (1, 1, 1, 1),
    (8, 16, 24, 32),
    32,
    None,
    "Tiny random-init SegFormer for tests (no pretrained weights)",
    tiny_recipe(RECIPE),
)
CARDS.append(TINY)
DEFAULT = "segformer.b2"


@hookimpl
def register_detectors(register):
    register_cards(register, CARDS, "diffzoo.plugins.segformer.model:SegformerDetector", DEFAULT)
