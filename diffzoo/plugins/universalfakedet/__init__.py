"""UniversalFakeDetect (Ojha et al. 2023): a linear probe on frozen CLIP features.

An image-level detector: it gives one probability per image and no pixel
output, so suites use it for their image-level cases only.  This module is
plain data (cards and registration) and imports no torch; the model lives in
:mod:`diffzoo.plugins.universalfakedet.model`.
"""

from __future__ import annotations

from functools import partial

from diffzoo.plugin import DetectorCard, RecipeValue, hookimpl, register_cards
from diffzoo.plugins.recipes import NO_EARLY_STOP

PAPER = (
    "Ojha, Li and Lee, Towards Universal Fake Image Detectors that Generalize Across "
    "Generative Models, CVPR 2023, arXiv 2302.10174"
)
REPO = "WisconsinAIVision/UniversalFakeDetect (formerly Yuheng-Li/UniversalFakeDetect)"
BASE_OPTS = f"{REPO} options/base_options.py"
TRAIN_OPTS = f"{REPO} options/train_options.py"
TRAINER = f"{REPO} networks/trainer.py"
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)

RECIPE = {
    "optimizer": RecipeValue("AdamW", f"{TRAINER} (torch.optim.AdamW for --optim adam)"),
    "lr": RecipeValue(1e-4, f"{TRAIN_OPTS} (--lr 0.0001)"),
    "betas": RecipeValue((0.9, 0.999), f"{TRAIN_OPTS} (--beta1 0.9); {TRAINER} (betas=(beta1, 0.999))"),
    "weight_decay": RecipeValue(0.0, f"{BASE_OPTS} (--weight_decay 0.0)"),
    "batch_size": RecipeValue(256, f"{BASE_OPTS} (--batch_size 256)"),
    "frozen_backbone": RecipeValue(
        True, f"{REPO} README (train with --fix_backbone: only the linear layer is trained)"
    ),
    "probe_init_std": RecipeValue(0.02, f"{BASE_OPTS} (--init_gain 0.02); {TRAINER} (normal_ init of fc.weight)"),
    "head_lr_mult": RecipeValue(1.0, f"{TRAINER} (one learning rate; only the probe trains)"),
    "warmup_iters": RecipeValue(0, f"{TRAINER} (no warm-up)"),
    "poly_power": NO_EARLY_STOP,
    "iterations": RecipeValue(
        10_000,
        f"diffzoo choice: fixed budget (about 100 epochs of DiffSeg30k's train split at batch 256; "
        f"{TRAIN_OPTS} --niter 100 epochs with early stopping)",
    ),
    "preprocess": RecipeValue(
        "resize the shorter side to 224 (bicubic, antialiased), centre crop 224, CLIP mean/std",
        "open_clip ViT-L-14 'openai' preprocess config; the official validate.py centre-crops 224 "
        "without resizing, diffzoo resizes so that the whole image (and a local edit) is seen",
    ),
    "augmentation": RecipeValue(
        "none",
        "diffzoo choice: features of the frozen backbone are computed once per image and reused "
        f"every step; the official loader re-draws Blur+JPEG (0.5) per epoch ({BASE_OPTS})",
    ),
    "hflip": RecipeValue(False, "diffzoo choice: one cached view per image (see augmentation)"),
    "view_label": RecipeValue(
        "edited if the centre square the model sees holds an edited pixel",
        "diffzoo choice: the centre crop can cut a local edit off",
    ),
    "amp": RecipeValue(False, "diffzoo choice: float32 features, so that training and prediction agree"),
}


_card = partial(DetectorCard, tasks=("classification",), mean=CLIP_MEAN, std=CLIP_STD, paper=PAPER, recipe=RECIPE,
                licence="UniversalFakeDetect code: MIT; OpenAI CLIP weights: MIT; open_clip: MIT")
CARDS = [
    _card(
        name="universalfakedet.vit-l14",
        description="UniversalFakeDetect: linear probe on frozen OpenAI CLIP ViT-L/14 image features",
        weights="timm/vit_large_patch14_clip_224.openai",
        input_size=224,
        # QuickGELU: the OpenAI weights were trained with it (open_clip's 'openai' tag)
        arch={"open_clip_model": "ViT-L-14", "pretrained_tag": "openai", "quick_gelu": True, "feature_dim": 768},
    ),
    _card(
        name="universalfakedet.tiny",
        description="Tiny random-init UniversalFakeDetect for tests (2-layer ViT from an open_clip config)",
        input_size=32,
        arch={
            "open_clip_config": {
                "embed_dim": 16,
                "quick_gelu": True,
                "vision_cfg": {"image_size": 32, "layers": 2, "width": 32, "patch_size": 8, "head_width": 16},
                "text_cfg": {"context_length": 8, "vocab_size": 64, "width": 16, "heads": 1, "layers": 1},
            },
            "feature_dim": 16,
        },
    ),
]
DEFAULT = "universalfakedet.vit-l14"


@hookimpl
def register_detectors(register):
    register_cards(register, CARDS, "diffzoo.plugins.universalfakedet.model:UniversalFakeDetector", DEFAULT)
