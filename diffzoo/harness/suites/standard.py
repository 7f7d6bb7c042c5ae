"""The ``standard`` suite and the metric lists every suite draws from."""

from __future__ import annotations

from diffzoo.harness.suites.model import Case, Suite, TrainSpec

PIXEL_METRICS = ("aAcc", "mAcc", "mIoU", "bF1", "bF1_image_mean", "precision", "recall", "F1", "pixel_AUC")
LOCALIZATION_METRICS = ("gIoU", "cIoU", "FPR_authentic")
IMAGE_METRICS = ("img_Acc", "img_real_Acc", "img_edited_Acc", "img_AP", "img_AUC")
SEMANTIC_METRICS = ("aAcc", "mAcc", "mIoU", "bF1", "bF1_image_mean", "top1", "top3")
ORACLE_PIXEL = ("F1_oracle",)
ORACLE_IMAGE = ("img_Acc_oracle",)
"""Best threshold chosen on the evaluated split itself: reported only in these
separately named columns, never as the headline number (docs/metrics.md)."""

BINARY_TRAIN = TrainSpec("binary")
SEMANTIC_TRAIN = TrainSpec("semantic")

STANDARD = Suite(
    name="standard",
    version="2",
    description=(
        "DiffSeg30k-style evaluation on the validation split (paper Table 2): binary "
        "localization, per-editor semantic segmentation (per-class IoU, confusion matrix, "
        "Top-1/Top-3 attribution), and image-level detection from the binary segmentation "
        "(edited if predicted edited area > 1%)."
    ),
    cases=(
        Case(
            name="binary",
            task="binary",
            train=BINARY_TRAIN,
            metrics=PIXEL_METRICS + LOCALIZATION_METRICS + ORACLE_PIXEL,
            description="edited vs unedited pixels",
        ),
        Case(
            name="semantic",
            task="semantic",
            train=SEMANTIC_TRAIN,
            metrics=SEMANTIC_METRICS,
            description="which editor made each pixel (background + one class per editor)",
        ),
        Case(
            name="image",
            task="image",
            train=BINARY_TRAIN,
            metrics=IMAGE_METRICS + ORACLE_IMAGE,
            description="image-level detection from the binary segmentation (1% area rule)",
        ),
    ),
    changelog=(
        "1: binary, semantic and image-level cases (spine).",
        "2: oracle columns F1_oracle and img_Acc_oracle (best threshold on the evaluated split, "
        "named apart from the fixed-threshold numbers).",
    ),
)
