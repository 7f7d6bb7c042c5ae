"""MaskCLIP of the SPM framework (OpenSDI, CVPR 2025) as a diffzoo detector (``opensdi.maskclip``).

MaskCLIP localises diffusion edits with two pretrained towers: a frozen OpenAI
CLIP ViT-L/14, whose class tokens of seven layers give the image-level verdict
(scored against two learned text prompts, "real" and "fake") and whose patch
tokens are fused into a trainable MAE ViT-B/16 that feeds a mask decoder
queried by the "fake" prompt.  The authors publish no trained weights, so the
card is trained by diffzoo's own loop on OpenSDI's recipe; ``release.py`` maps
a checkpoint trained with OpenSDI's own code onto this model.

This module is plain data (cards and registration) and imports no torch; the
network lives in :mod:`diffzoo.plugins.opensdi.model`.
"""

from __future__ import annotations

from functools import partial

from diffzoo.plugin import DetectorCard, RecipeValue, hookimpl, register_cards
from diffzoo.plugins.recipes import tiny_recipe
from diffzoo.plugins.universalfakedet import CLIP_MEAN, CLIP_STD

PAPER = (
    "Wang, Huang and Hong, OpenSDI: Spotting Diffusion-Generated Images in the Open World, CVPR 2025, "
    "arXiv 2503.19653 (MaskCLIP, of the Synergizing Pretrained Models framework)"
)
REPO = "iamwangyabin/OpenSDI@b1cf3c5"
TRAIN_SH = f"{REPO} train.sh"
TRAIN_PY = f"{REPO} train.py"
MODEL_PY = f"{REPO} model/MaskCLIP.py"
SAN_PY = f"{REPO} model/clip_utils.py"
CLIP_HUB = "timm/vit_large_patch14_clip_224.openai"
"""The hub file open_clip reads for ``ViT-L-14`` / ``openai``: OpenAI's ViT-L/14 in open_clip's layout."""
MAE_HUB = "timm/vit_base_patch16_224.mae"
"""timm's copy of MAE's ``mae_pretrain_vit_base.pth`` (its pretrained cfg names that file as its url)."""

RECIPE = {
    "optimizer": RecipeValue("AdamW", f"{TRAIN_PY}:213 (args.opt = 'AdamW', built by timm create_optimizer, "
                                      "line 216)"),
    "lr": RecipeValue(1e-4, f"{TRAIN_SH}:19 (--lr 1e-4)"),
    "betas": RecipeValue((0.9, 0.999), f"{TRAIN_PY}:214 (args.betas = (0.9, 0.999))"),
    "weight_decay": RecipeValue(0.05, f"{TRAIN_SH}:23 (--weight_decay 0.05); timm's create_optimizer leaves "
                                      "1-D parameters and biases undecayed, as diffzoo does"),
    "head_lr_mult": RecipeValue(1.0, f"{TRAIN_PY}:216 (one lr for every trained parameter)"),
    "min_lr": RecipeValue(0.0, f"{TRAIN_SH}:22 (--min_lr 0)"),
    "warmup_iters": RecipeValue(0, f"{TRAIN_SH}:28 (--warmup_epochs 0)"),
    "poly_power": RecipeValue(1.0, "diffzoo's schedule: linear decay to min_lr; OpenSDI's loop (IMDL-BenCo "
                                   "train_one_epoch, train.py:262) decays by a half-cosine per iteration"),
    "batch_size": RecipeValue(16, f"{TRAIN_SH}:16 (--batch_size 16; --accum_iter 1 at line 31, one process "
                                  "at line 10)"),
    "iterations": RecipeValue(160_000, "diffzoo choice: the budget of every localizer in the zoo (the DiffSeg30k "
                                       f"paper's schedule); OpenSDI trains 50 epochs ({TRAIN_SH}:18 --epochs 50) "
                                       "of OpenSDID's SD1.5 training split (README: 100K real + 100K fake), about "
                                       "625,000 steps at batch 16"),
    "crop_size": RecipeValue(512, f"{TRAIN_SH}:20 (--image_size 512)"),
    "input_rule": RecipeValue("resize", f"{TRAIN_SH}:21 (--if_resizing: albu.Resize to 512 x 512, "
                                        f"{TRAIN_PY}:86-91), in training and evaluation"),
    "hflip": RecipeValue(True, f"{TRAIN_PY}:67 (HorizontalFlip(p=0.5))"),
    "augmentation": RecipeValue(
        "random crop + horizontal flip",
        f"diffzoo choice, as for every detector: {TRAIN_PY}:65-73 also rescales by 0.8-1.2, flips vertically, "
        "rotates by 90 degrees, changes brightness and contrast, JPEG-compresses (quality 70-100, p=0.2) and "
        "blurs (p=0.2), which change the pixel statistics edit localizers rely on"),
    "pretrained": RecipeValue(
        True, f"{MODEL_PY}:86 (clip.load('ViT-L/14'): OpenAI's weights, frozen at lines 89-90); {SAN_PY}:229-232 "
              "(MAE ViT-B/16 weights mae_pretrain_vit_base.pth, from dl.fbaipublicfiles.com per the README). "
              "diffzoo reads the same weights: open_clip's pretrained cfg of ('ViT-L-14', 'openai') has as url "
              "OpenAI's ViT-L-14.pt (sha256 b8cca3fd...), the file clip.load('ViT-L/14') downloads (openai/CLIP "
              f"clip/clip.py _MODELS), read from its hub copy {CLIP_HUB}, and builds the same network (QuickGELU, "
              f"OpenAI's parameter names); timm's pretrained cfg of {MAE_HUB.split('/')[1]} has as url "
              "dl.fbaipublicfiles.com/mae/pretrain/mae_pretrain_vit_base.pth, read from its hub copy "
              f"{MAE_HUB}"),
    "amp": RecipeValue(False, f"{TRAIN_SH}:26 (--if_not_amp, a store_false flag in utils/argparser.py:72: "
                              "autocast off)"),
    "edge_mask_width": RecipeValue(7, f"{TRAIN_SH}:24 (--edge_mask_width 7)"),
    "edge_lambda": RecipeValue(20.0, f"{MODEL_PY}:116 (self.edge_lambda = 20)"),
}

FULL_ARCH = {
    # OpenAI's ViT-L/14 as open_clip names it; QuickGELU, as those weights were trained
    "open_clip_model": "ViT-L-14",
    "pretrained_tag": "openai",
    "quick_gelu": True,
    "clip_hub": CLIP_HUB,
    "mae_hub": MAE_HUB,
    "clip_size": 224,  # MaskCLIP.py:128
    "clip_layers": [2, 4, 8, 12, 16, 20, 23],  # MaskCLIP.py:71
    "prompt_context": 10,  # MaskCLIP.py:68 (language_ctx)
    "prompt_text": "an image",  # MaskCLIP.py:142
    "side": {  # clip_utils.py:215-228
        "patch": 16, "dim": 768, "depth": 12, "heads": 12, "window": 14,
        "windowed": [0, 1, 3, 4, 6, 7, 9, 10], "drop_path": 0.1, "pretrain_size": 224,
    },
    "fusion_map": [[1, 0], [2, 1], [3, 2], [4, 3], [5, 4], [6, 5], [7, 6]],  # MaskCLIP.py:72 (block, layer)
    "fusion_heads": 8,  # clip_utils.py:138
    "decoder_width": 256,  # clip_utils.py:31, 233
    "decoder_heads": 8,  # clip_utils.py:33
    "image_head_heads": 8,  # MaskCLIP.py:106-107
    "dropout": 0.1,  # MaskCLIP.py:107, clip_utils.py:87
}

TINY_ARCH = {
    "open_clip_config": {
        "embed_dim": 16,
        "quick_gelu": True,
        "vision_cfg": {"image_size": 32, "layers": 3, "width": 32, "patch_size": 16, "head_width": 16},
        "text_cfg": {"context_length": 8, "vocab_size": 64, "width": 16, "heads": 2, "layers": 1},
    },
    "clip_size": 32,
    "clip_layers": [0, 2],
    "prompt_context": 2,
    "prompt_text": "an image",
    # a 4 x 4 grid: 3 x 3 windows are padded, the 3 x 3 pretraining positions and the 2 x 2 CLIP
    # maps are resized, as the full card's 14 x 14 windows, positions and 16 x 16 maps on its 32 x 32 grid
    "side": {"patch": 16, "dim": 32, "depth": 3, "heads": 2, "window": 3, "windowed": [0],
             "drop_path": 0.1, "pretrain_size": 48},
    "fusion_map": [[1, 0], [2, 1]],
    "fusion_heads": 8,
    "decoder_width": 16,
    "decoder_heads": 8,
    "image_head_heads": 8,
    "dropout": 0.1,
}

LICENCE = ("OpenSDI code: no licence file (all rights reserved by default); OpenAI CLIP weights: MIT; "
           "MAE weights: CC-BY-NC-4.0 (timm's model card), NON-COMMERCIAL; open_clip, timm: MIT / Apache-2.0")


_card = partial(DetectorCard, tasks=("binary",), mean=CLIP_MEAN, std=CLIP_STD, licence=LICENCE, paper=PAPER,
                gives_image_score=True)
CARDS = [
    _card("opensdi.maskclip",
          "MaskCLIP (OpenSDI, CVPR 2025): frozen OpenAI CLIP ViT-L/14 fused into an MAE ViT-B/16 with a mask "
          "decoder and prompt-learned image head; resize to 512 px. No released weights: diffzoo trains it",
          weights=f"{CLIP_HUB} + {MAE_HUB}", input_size=512, arch=FULL_ARCH, recipe=RECIPE),
    _card("opensdi.maskclip.tiny",
          "Tiny random-init MaskCLIP for tests (3-layer CLIP and 3-block side ViT; no pretrained weights)",
          input_size=64, arch=TINY_ARCH, recipe=tiny_recipe(RECIPE)),
]
DEFAULT = "opensdi.maskclip"


@hookimpl
def register_detectors(register):
    register_cards(register, CARDS, "diffzoo.plugins.opensdi.model:MaskClipDetector", DEFAULT)
