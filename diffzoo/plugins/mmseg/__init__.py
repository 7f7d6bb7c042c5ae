"""The optional MMSegmentation backend: the paper's models built by mmseg itself.

``mmseg.segformer-b2``, ``mmseg.deeplabv3plus-r50`` and ``mmseg.fcn-r50`` are
built from the configs that ship inside mmsegmentation 1.2.2 (its wheel's
``mmseg/.mim/configs``), so the DiffSeg30k paper's exact networks can be
compared with diffzoo's native ones.  The cards are always registered, so
``diffzoo list`` shows them; building one without the backend raises a
ModelError that says how to install it (see docs/mmseg.md).

This module is plain data: it imports neither torch nor mmseg.  The model
lives in :mod:`diffzoo.plugins.mmseg.model`.  Each recipe value names the
config file and the key it comes from; ``tests/test_mmseg_backend.py``
checks them against the installed configs (``model.recipe_from_config``).
"""

from __future__ import annotations

from collections.abc import Callable

from diffzoo.plugin import DetectorCard, RecipeValue, hookimpl, register_cards
from diffzoo.plugins.recipes import AMP, CROP_AND_FLIP

MMSEG_VERSION = "1.2.2"
CONFIGS = f"mmsegmentation {MMSEG_VERSION} mmseg/.mim/configs/"


def _source(config: str) -> Callable[[str], str]:
    """The source of a recipe value: ``key`` of ``config`` in the installed configs."""
    return lambda key: f"{CONFIGS}{config} ({key})"


def _sgd_80k(config: str, pretrained: str) -> dict[str, RecipeValue]:
    """mmseg's R50-D8 ADE20K recipe ('4xb4-80k': _base_/schedules/schedule_80k.py)."""
    src = _source(config)
    return {
        "optimizer": RecipeValue("SGD", src("optim_wrapper.optimizer.type")),
        "lr": RecipeValue(0.01, src("optim_wrapper.optimizer.lr")),
        "momentum": RecipeValue(0.9, src("optim_wrapper.optimizer.momentum")),
        "weight_decay": RecipeValue(
            5e-4, src("optim_wrapper.optimizer.weight_decay; no paramwise_cfg, so every parameter decays")
        ),
        "head_lr_mult": RecipeValue(1.0, src("no optim_wrapper.paramwise_cfg: one lr for every parameter")),
        "warmup_iters": RecipeValue(0, src("param_scheduler is PolyLR alone, begin=0")),
        "poly_power": RecipeValue(0.9, src("param_scheduler PolyLR power")),
        "min_lr": RecipeValue(1e-4, src("param_scheduler PolyLR eta_min")),
        "iterations": RecipeValue(80_000, src("train_cfg.max_iters")),
        "batch_size": RecipeValue(16, src("'4xb4': 4 GPUs x train_dataloader.batch_size=4")),
        "crop_size": RecipeValue(512, src("crop_size")),
        "hflip": RecipeValue(True, src("train_pipeline RandomFlip prob=0.5")),
        "augmentation": CROP_AND_FLIP,
        "pretrained": RecipeValue(True, src(f"model.pretrained={pretrained!r}: ImageNet ResNet-50 with a deep stem")),
        "auxiliary_head": RecipeValue(
            True, src("model.auxiliary_head: FCNHead on backbone stage 3 (in_index=2), trained, unused in inference")
        ),
        "auxiliary_loss_weight": RecipeValue(0.4, src("model.auxiliary_head.loss_decode.loss_weight")),
        "amp": AMP,
    }


def _segformer_160k(config: str, pretrained: str) -> dict[str, RecipeValue]:
    """mmseg's SegFormer ADE20K recipe ('8xb2-160k'), shared by every MiT size."""
    src = _source(config)
    return {
        "optimizer": RecipeValue("AdamW", src("optim_wrapper.optimizer.type")),
        "lr": RecipeValue(6e-5, src("optim_wrapper.optimizer.lr")),
        "betas": RecipeValue((0.9, 0.999), src("optim_wrapper.optimizer.betas")),
        "weight_decay": RecipeValue(
            0.01,
            src("optim_wrapper.optimizer.weight_decay; paramwise_cfg custom_keys norm and pos_block "
                "decay_mult=0: card arch no_decay_keywords"),
        ),
        "head_lr_mult": RecipeValue(10.0, src("optim_wrapper.paramwise_cfg.custom_keys.head.lr_mult")),
        "warmup_iters": RecipeValue(1500, src("param_scheduler LinearLR start_factor=1e-6, end")),
        "poly_power": RecipeValue(1.0, src("param_scheduler PolyLR power")),
        "min_lr": RecipeValue(0.0, src("param_scheduler PolyLR eta_min")),
        "iterations": RecipeValue(160_000, src("train_cfg.max_iters")),
        "batch_size": RecipeValue(16, src("'8xb2': 8 GPUs x train_dataloader.batch_size=2")),
        "crop_size": RecipeValue(512, src("crop_size")),
        "hflip": RecipeValue(True, src("train_pipeline RandomFlip prob=0.5")),
        "augmentation": CROP_AND_FLIP,
        "pretrained": RecipeValue(True, src(f"model.backbone.init_cfg.checkpoint={pretrained!r}: ImageNet-1k MiT-B2")),
        "auxiliary_head": RecipeValue(False, "the config has no auxiliary_head"),
        "amp": AMP,
    }


SEGFORMER_CFG = "segformer/segformer_mit-b2_8xb2-160k_ade20k-512x512.py"
DEEPLAB_CFG = "deeplabv3plus/deeplabv3plus_r50-d8_4xb4-80k_ade20k-512x512.py"
FCN_CFG = "fcn/fcn_r50-d8_4xb4-80k_ade20k-512x512.py"
MIT_B2 = "https://download.openmmlab.com/mmsegmentation/v0.5/pretrain/segformer/mit_b2_20220624-66e8bf70.pth"
RESNET50_V1C = "open-mmlab://resnet50_v1c"
LICENCE = "mmsegmentation, mmcv, mmengine: Apache-2.0; pretrained backbones: see the OpenMMLab model zoo"


def _card(tag, config, weights, recipe, description, paper, no_decay=()) -> DetectorCard:
    return DetectorCard(
        name=f"mmseg.{tag}",
        description=description,
        tasks=("binary", "semantic"),
        weights=weights,  # the config's backbone checkpoint; build_network checks they agree
        # the default mean/std = the configs' SegDataPreProcessor mean/std (123.675, 116.28, 103.53) /
        # (58.395, 57.12, 57.375) over 255, RGB (bgr_to_rgb=True); checked on build
        licence=LICENCE,
        paper=paper,
        arch={"config": config, "mmsegmentation": MMSEG_VERSION, "no_decay_keywords": list(no_decay)},
        recipe=recipe,
    )


CARDS = [
    _card(
        "segformer-b2",
        SEGFORMER_CFG,
        MIT_B2,
        _segformer_160k(SEGFORMER_CFG, MIT_B2),
        "SegFormer-B2 built by mmsegmentation (MiT-B2, ImageNet-1k pretrained) - the DiffSeg30k paper's model",
        "Xie et al., SegFormer, NeurIPS 2021, arXiv 2105.15203",
        # paramwise_cfg custom_keys with decay_mult=0, matched as substrings like mmengine does
        no_decay=("norm", "pos_block"),
    ),
    _card(
        "deeplabv3plus-r50",
        DEEPLAB_CFG,
        RESNET50_V1C,
        _sgd_80k(DEEPLAB_CFG, RESNET50_V1C),
        "DeepLabv3+ R50-D8 built by mmsegmentation (ResNet-50-V1c, ImageNet pretrained)",
        "Chen et al., DeepLabv3+, ECCV 2018, arXiv 1802.02611",
    ),
    _card(
        "fcn-r50",
        FCN_CFG,
        RESNET50_V1C,
        _sgd_80k(FCN_CFG, RESNET50_V1C),
        "FCN R50-D8 built by mmsegmentation (ResNet-50-V1c, ImageNet pretrained)",
        "Long, Shelhamer & Darrell, FCN, CVPR 2015, arXiv 1411.4038 (mmseg's dilated R50-D8 variant)",
    ),
]
DEFAULT = "mmseg.segformer-b2"


@hookimpl
def register_detectors(register):
    register_cards(register, CARDS, "diffzoo.plugins.mmseg.model:MMSegDetector", DEFAULT)
