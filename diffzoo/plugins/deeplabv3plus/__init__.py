"""DeepLabv3+ (Chen et al. 2018) through segmentation-models-pytorch: cards and registration.

This module is plain data: it imports no torch, so listing stays fast.  The
model itself lives in :mod:`diffzoo.plugins.deeplabv3plus.model`.
"""

from __future__ import annotations

from functools import partial

from diffzoo.plugin import DetectorCard, RecipeValue, hookimpl, register_cards
from diffzoo.plugins.recipes import AMP, CROP_AND_FLIP, tiny_recipe

PAPER = (
    "Chen et al., Encoder-Decoder with Atrous Separable Convolution for Semantic Image "
    "Segmentation (DeepLabv3+), ECCV 2018, arXiv 1802.02611"
)
MMSEG = "mmsegmentation configs/"
MMSEG_CFG = MMSEG + "deeplabv3plus/deeplabv3plus_r50-d8_4xb4-80k_ade20k-512x512.py"
MMSEG_MODEL = MMSEG + "_base_/models/deeplabv3plus_r50-d8.py"
MMSEG_SCHED = MMSEG + "_base_/schedules/schedule_80k.py"
MMSEG_DATA = MMSEG + "_base_/datasets/ade20k.py"

# mmsegmentation's DeepLabv3+ R50-D8 ADE20K recipe (SGD, poly, 80k iterations).
RECIPE = {
    "optimizer": RecipeValue("SGD", MMSEG_SCHED + " (optimizer type='SGD')"),
    "lr": RecipeValue(0.01, MMSEG_SCHED + " (optimizer.lr=0.01)"),
    "momentum": RecipeValue(0.9, MMSEG_SCHED + " (optimizer.momentum=0.9)"),
    "weight_decay": RecipeValue(
        5e-4, MMSEG_SCHED + " (optimizer.weight_decay=0.0005; no paramwise_cfg, so every parameter decays)"
    ),
    "head_lr_mult": RecipeValue(1.0, MMSEG_SCHED + " (no paramwise_cfg: one lr for every parameter)"),
    "warmup_iters": RecipeValue(0, MMSEG_SCHED + " (param_scheduler is PolyLR alone, begin=0)"),
    "poly_power": RecipeValue(0.9, MMSEG_SCHED + " (PolyLR power=0.9)"),
    "min_lr": RecipeValue(1e-4, MMSEG_SCHED + " (PolyLR eta_min=1e-4)"),
    "iterations": RecipeValue(80_000, MMSEG_SCHED + " (train_cfg.max_iters=80000)"),
    "batch_size": RecipeValue(16, MMSEG_CFG + " ('4xb4': 4 GPUs x batch_size=4 of " + MMSEG_DATA + ")"),
    "crop_size": RecipeValue(512, MMSEG_CFG + " (crop_size = (512, 512))"),
    "hflip": RecipeValue(True, MMSEG_DATA + " (RandomFlip prob=0.5)"),
    "augmentation": CROP_AND_FLIP,
    "pretrained": RecipeValue(
        True,
        MMSEG_MODEL + " (pretrained='open-mmlab://resnet50_v1c': ImageNet ResNet-50 with a deep stem); "
        "diffzoo loads smp's plain ResNet-50 'imagenet' weights (hub smp-hub/resnet50.imagenet)",
    ),
    "amp": AMP,
}

# Architecture (keys are smp.DeepLabV3Plus arguments, see model.py):
# - encoder_output_stride 8: mmseg R50-D8 (backbone strides (1, 2, 1, 1), dilations
#   (1, 1, 2, 4)); smp dilates the last two ResNet stages the same way.
# - ASPP rates (12, 24, 36): DeepLabv3 (arXiv 1706.05587) doubles its 6/12/18 at output
#   stride 8; = mmseg decode_head dilations (1, 12, 24, 36).
# - decoder_channels 256: the DeepLabv3/v3+ ASPP and decoder width (mmseg uses 512).
# - ASPP dropout 0.1: mmseg decode_head dropout_ratio=0.1.
R50_ARCH = {
    "encoder": "resnet50",
    "encoder_output_stride": 8,
    "decoder_channels": 256,
    "decoder_atrous_rates": [12, 24, 36],
    "decoder_aspp_dropout": 0.1,
    "encoder_kwargs": {},
}
# The same decoder on a narrow timm ResNet-18 (8..64 channels, about 0.2 M parameters).
TINY_ARCH = {
    **R50_ARCH,
    "encoder": "tu-resnet18",
    "decoder_channels": 16,
    "encoder_kwargs": {"channels": [8, 16, 32, 64], "stem_width": 8},
}

LICENCE = (
    "segmentation-models-pytorch: MIT; ResNet-50 ImageNet encoder weights (torchvision's, "
    "re-hosted by smp): BSD-3-Clause"
)

_card = partial(DetectorCard, tasks=("binary", "semantic"), licence=LICENCE, paper=PAPER)
CARDS = [
    _card("deeplabv3plus.r50", "DeepLabv3+ R50-D8 (ResNet-50 encoder at output stride 8, ImageNet-1k pretrained)",
          weights="smp-hub/resnet50.imagenet", arch=R50_ARCH, recipe=RECIPE),
    _card("deeplabv3plus.tiny", "Tiny random-init DeepLabv3+ for tests (narrow ResNet-18, no pretrained weights)",
          arch=TINY_ARCH, recipe=tiny_recipe(RECIPE)),
]
DEFAULT = "deeplabv3plus.r50"


@hookimpl
def register_detectors(register):
    register_cards(register, CARDS, "diffzoo.plugins.deeplabv3plus.model:DeepLabV3PlusDetector", DEFAULT)
