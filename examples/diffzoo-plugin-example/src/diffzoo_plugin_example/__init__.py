"""diffzoo-plugin-example: registers the ``example.residual`` detector.

This module is what the ``diffzoo`` entry point loads, so it stays plain
data: it imports no torch.  The model is named by a lazy ``"module:attr"``
target and only imported when someone builds the detector.
"""

from __future__ import annotations

from diffzoo import DetectorCard, RecipeValue, hookimpl

MODEL = "diffzoo_plugin_example.model:ResidualDetector"
CHOICE = "diffzoo-plugin-example choice (a small from-scratch CNN; not tuned)"

CARD = DetectorCard(
    name="example.residual",
    description="example plugin: a small dilated CNN on a fixed SRM high-pass residual (from scratch)",
    tasks=("binary", "semantic"),
    weights=None,  # trained from scratch: nothing is ever downloaded
    input_size=512,
    mean=(0.5, 0.5, 0.5),
    std=(0.5, 0.5, 0.5),
    licence="Apache-2.0",
    paper=(
        "residual filter: Fridrich & Kodovsky, Rich Models for Steganalysis of Digital Images, "
        "IEEE TIFS 2012 (the 5x5 'KV' kernel, as in the noise stream of Zhou et al., RGB-N, CVPR 2018)"
    ),
    arch={"width": 32, "dilations": [1, 2, 4, 8]},
    recipe={
        "optimizer": RecipeValue("AdamW", CHOICE),
        "lr": RecipeValue(1e-3, CHOICE),
        "weight_decay": RecipeValue(1e-4, CHOICE),
        "head_lr_mult": RecipeValue(1.0, CHOICE),
        "warmup_iters": RecipeValue(200, CHOICE),
        "poly_power": RecipeValue(1.0, CHOICE),
        "iterations": RecipeValue(20_000, CHOICE),
        "batch_size": RecipeValue(16, CHOICE),
        "crop_size": RecipeValue(256, CHOICE),
        "hflip": RecipeValue(True, CHOICE),
    },
)


@hookimpl
def register_detectors(register):
    register(CARD.name, MODEL, card=CARD, default=True, description=CARD.description)
