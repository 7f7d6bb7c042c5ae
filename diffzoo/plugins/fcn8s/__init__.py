"""FCN-8s (Long, Shelhamer & Darrell 2015) on a torchvision VGG-16: cards and registration.

This module is plain data: it imports no torch, so listing stays fast.  The
model itself lives in :mod:`diffzoo.plugins.fcn8s.model`.
"""

from __future__ import annotations

from functools import partial

from diffzoo.plugin import DetectorCard, RecipeValue, hookimpl, register_cards
from diffzoo.plugins.recipes import AMP, tiny_recipe

PAPER = (
    "Long, Shelhamer & Darrell, Fully Convolutional Networks for Semantic Segmentation, "
    "CVPR 2015, arXiv 1411.4038 (journal version: Shelhamer et al., PAMI 2016, arXiv 1605.06211)"
)
REF = "fcn.berkeleyvision.org "  # the authors' reference code (github.com/shelhamer/fcn.berkeleyvision.org)
SOLVER = REF + "voc-fcn8s-atonce/solver.prototxt"
NET = REF + "voc-fcn8s-atonce/net.py"
DATA = REF + "voc_layers.py SBDDSegDataLayer"

# The reference "at-once" FCN-8s recipe: SGD with high momentum on a summed
# (unnormalised) loss, one whole image per step.  diffzoo's loss is the mean
# over the pixels of a crop, so the reference lr is scaled by one crop's pixels.
CROP = 512
LR_UNNORMALISED = 1e-10
RECIPE = {
    "optimizer": RecipeValue("SGD", SOLVER + " (caffe SGDSolver)"),
    "lr": RecipeValue(
        LR_UNNORMALISED * CROP * CROP,
        SOLVER + f" (base_lr=1e-10 'for unnormalized softmax', i.e. a loss summed over pixels; "
        f"diffzoo averages over pixels, so 1e-10 x {CROP} x {CROP} pixels per crop)",
    ),
    "momentum": RecipeValue(0.99, SOLVER + " (momentum: 0.99, 'high momentum')"),
    "weight_decay": RecipeValue(5e-4, SOLVER + " (weight_decay: 0.0005)"),
    "bias_lr_mult": RecipeValue(2.0, NET + " (biases: param lr_mult=2)"),
    "bias_decay_mult": RecipeValue(0.0, NET + " (biases: param decay_mult=0)"),
    "head_lr_mult": RecipeValue(1.0, NET + " (score layers: lr_mult=1 like the backbone)"),
    "warmup_iters": RecipeValue(0, SOLVER + " (lr_policy: fixed, no warm-up)"),
    "poly_power": RecipeValue(0.0, SOLVER + " (lr_policy: fixed; poly power 0 keeps the lr constant)"),
    "min_lr": RecipeValue(0.0, SOLVER + " (lr_policy: fixed; no floor needed)"),
    "iterations": RecipeValue(300_000, SOLVER + " (max_iter: 300000)"),
    "batch_size": RecipeValue(1, SOLVER + " (iter_size: 1); " + DATA + " (one image per step)"),
    "crop_size": RecipeValue(
        CROP,
        "diffzoo choice: the reference trains on whole images (" + DATA + "); the shared "
        "trainer needs a fixed crop, 512 like the other detectors' recipes",
    ),
    "hflip": RecipeValue(False, DATA + " (load_image only subtracts the mean: no mirroring)"),
    "augmentation": RecipeValue("random crop only", DATA + " (no augmentation) + the diffzoo crop above"),
    "pretrained": RecipeValue(
        True,
        REF + "README (FCN fine-tuned from the ILSVRC VGG-16); diffzoo loads torchvision's "
        "VGG16_Weights.IMAGENET1K_V1",
    ),
    "amp": AMP,
}

# Architecture (see model.py): "features" is torchvision's VGG layer list (ints are
# 3x3 conv widths, "M" a 2x2 max-pool); fc6/fc7 are the convolutionalised classifier.
# Skip scales: voc-fcn8s-atonce/net.py (scale_pool4 0.01, scale_pool3 0.0001, fixed).
# Upsampling: bilinear-initialised transposed convs, learned, as in the original
# experiments (README FAQ: the reference release fixes them; no significant difference).
VGG16_ARCH = {
    "features": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
    "fc_channels": 4096,
    "dropout": 0.5,
    "pool4_scale": 0.01,
    "pool3_scale": 1e-4,
    "learn_upsampling": True,
}
TINY_ARCH = {
    **VGG16_ARCH,
    "features": [8, 8, "M", 16, 16, "M", 32, 32, 32, "M", 64, 64, 64, "M", 64, 64, 64, "M"],
    "fc_channels": 64,
}

LICENCE = "torchvision VGG-16 ImageNet weights: BSD-3-Clause (torchvision); FCN reference code: BSD-2-Clause"

_card = partial(DetectorCard, tasks=("binary", "semantic"), licence=LICENCE, paper=PAPER)
CARDS = [
    _card("fcn8s.vgg16", "FCN-8s (VGG-16, skips from pool3/pool4, ImageNet-1k pretrained)",
          weights="VGG16_Weights.IMAGENET1K_V1", arch=VGG16_ARCH, recipe=RECIPE),
    _card("fcn8s.tiny", "Tiny random-init FCN-8s for tests (narrow VGG-16 topology, no pretrained weights)",
          arch=TINY_ARCH, recipe=tiny_recipe(RECIPE)),
]
DEFAULT = "fcn8s.vgg16"


@hookimpl
def register_detectors(register):
    register_cards(register, CARDS, "diffzoo.plugins.fcn8s.model:FCN8sDetector", DEFAULT)
