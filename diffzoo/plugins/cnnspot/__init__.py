"""CNNSpot (Wang et al. 2020): a ResNet-50 real/edited image classifier.

An image-level detector: it gives one probability per image and no pixel
output, so suites use it for their image-level cases only.  This module is
plain data (cards and registration) and imports no torch; the model lives in
:mod:`diffzoo.plugins.cnnspot.model`.
"""

from __future__ import annotations

from functools import partial

from diffzoo.plugin import DetectorCard, RecipeValue, hookimpl, register_cards
from diffzoo.plugins.recipes import AMP, NO_EARLY_STOP

PAPER = (
    "Wang et al., CNN-generated images are surprisingly easy to spot... for now, "
    "CVPR 2020, arXiv 1912.11035"
)
REPO = "PeterWang512/CNNDetection"
BASE_OPTS = f"{REPO} options/base_options.py"
TRAIN_OPTS = f"{REPO} options/train_options.py"
TRAINER = f"{REPO} networks/trainer.py"
DATA = f"{REPO} data/datasets.py"
BLUR_JPEG = (
    f"{REPO} README, 'Train Blur+JPEG(0.5)': --blur_prob 0.5 --blur_sig 0.0,3.0 --jpg_prob 0.5 "
    "--jpg_method cv2,pil --jpg_qual 30,100; paper Sec. 4 ('Blur+JPEG (0.5)')"
)
WEIGHTS = "torchvision ResNet50_Weights.IMAGENET1K_V1"

RECIPE = {
    "optimizer": RecipeValue(
        "AdamW", f"{TRAINER} (torch.optim.Adam; AdamW with weight_decay 0 is the same update)"
    ),
    "lr": RecipeValue(1e-4, f"{TRAIN_OPTS} (--lr 0.0001)"),
    "betas": RecipeValue((0.9, 0.999), f"{TRAIN_OPTS} (--beta1 0.9); {TRAINER} (betas=(beta1, 0.999))"),
    "weight_decay": RecipeValue(0.0, f"{TRAINER} (Adam without weight decay)"),
    "batch_size": RecipeValue(64, f"{BASE_OPTS} (--batch_size 64)"),
    "crop_size": RecipeValue(224, f"{BASE_OPTS} (--cropSize 224); {DATA} (transforms.RandomCrop)"),
    "hflip": RecipeValue(True, f"{DATA} (RandomHorizontalFlip unless --no_flip)"),
    "blur_prob": RecipeValue(0.5, BLUR_JPEG),
    "blur_sigma": RecipeValue((0.0, 3.0), BLUR_JPEG + "; sigma ~ U[0, 3], scipy gaussian_filter per channel"),
    "jpeg_prob": RecipeValue(0.5, BLUR_JPEG),
    "jpeg_quality": RecipeValue((30, 100), BLUR_JPEG + "; integer quality, uniform, both ends included"),
    "jpeg_methods": RecipeValue(("cv2", "pil"), BLUR_JPEG + "; encoder chosen uniformly per image"),
    "fc_init_std": RecipeValue(0.02, f"{BASE_OPTS} (--init_gain 0.02); {TRAINER} (normal_ init of the new fc)"),
    "head_lr_mult": RecipeValue(1.0, f"{TRAINER} (one learning rate for every parameter)"),
    "warmup_iters": RecipeValue(0, f"{TRAINER} (no warm-up)"),
    "poly_power": NO_EARLY_STOP,
    "iterations": RecipeValue(
        20_000, "diffzoo choice: fixed budget (about 50 epochs of DiffSeg30k's train split at batch 64) "
        "in place of the official early stopping",
    ),
    "resize": RecipeValue(
        "none",
        f"diffzoo choice: native-resolution crops. {BASE_OPTS} resizes to --loadSize 256, a no-op on "
        f"the 256 px ProGAN training images; {REPO} eval.py tests without resizing (no_resize=True), "
        "and resizing would erase the traces of a local edit",
    ),
    "view_label": RecipeValue(
        "edited if the training crop holds an edited pixel",
        "diffzoo choice: DiffSeg30k edits are local, so an image label would call crops that miss "
        "the edit 'edited'",
    ),
    "prediction": RecipeValue(
        "whole image at native resolution",
        f"{REPO} demo.py (no crop by default) and eval.py (no_resize=True); ResNet pools globally",
    ),
    "amp": AMP,
}


_card = partial(
    DetectorCard, tasks=("classification",),
    input_size=224,  # the default mean/std: ImageNet statistics, as data/datasets.py Normalize
    licence="CNNDetection code: CC BY-NC-SA 4.0; torchvision ResNet-50 weights: BSD-3-Clause",
    paper=PAPER, recipe=RECIPE)
CARDS = [
    _card(name="cnnspot.r50", description="CNNSpot Blur+JPEG (0.5): ResNet-50 (ImageNet-pretrained) image classifier",
          weights=WEIGHTS, arch={"backbone": "torchvision.resnet50"}),
    _card(name="cnnspot.tiny",
          description="Tiny random-init CNNSpot for tests (timm ResNet, one basic block per stage, 8..64 channels)",
          arch={"backbone": "timm.ResNet", "block": "BasicBlock", "layers": [1, 1, 1, 1],
                "channels": [8, 16, 32, 64], "stem_width": 8}),
]
DEFAULT = "cnnspot.r50"


@hookimpl
def register_detectors(register):
    register_cards(register, CARDS, "diffzoo.plugins.cnnspot.model:CNNSpotDetector", DEFAULT)
