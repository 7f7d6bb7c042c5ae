"""Recipe values several in-tree detectors share, written once so that their
cards (whose hashes are cache keys) say the same thing in the same words."""

from __future__ import annotations

from diffzoo.plugin import RecipeValue

AMP = RecipeValue(True, "diffzoo choice: bf16 autocast on CUDA only")
"""The shared trainer's mixed precision, as most recipes take it."""

CROP_AND_FLIP = RecipeValue(
    "random crop + horizontal flip",
    "diffzoo choice: mmseg's RandomResize and PhotoMetricDistortion are left out "
    "because they alter the pixel statistics that edit detectors rely on",
)
"""The augmentation of the recipes taken from mmsegmentation's configs."""

NO_EARLY_STOP = RecipeValue(
    0.0,
    "diffzoo choice: constant lr (poly power 0). The official loop divides the lr by 10 when "
    "validation accuracy stops improving (--earlystop_epoch 5); diffzoo trains a fixed budget "
    "and never reads evaluation data while training",
)
"""The ``poly_power`` of the image classifiers whose official loops stop early."""


def tiny_recipe(recipe: dict[str, RecipeValue]) -> dict[str, RecipeValue]:
    """``recipe`` for a tiny random-weight test card, which has no pretrained weights."""
    return {**recipe, "pretrained": RecipeValue(False, "tiny test card: no pretrained weights exist")}
