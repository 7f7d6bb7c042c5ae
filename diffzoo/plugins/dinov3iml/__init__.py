"""DINOv3-IML (2026): a frozen DINOv3 ViT with LoRA on its attention and a three-conv head.

The authors' model (GitHub Irennnne/DINOv3-IML, MIT) localises image
manipulations with a DINOv3 ViT/16 backbone whose weights stay frozen; LoRA
adapters on the fused q/k/v projection of every attention block and a small
convolutional head on the last layer's normalised patch tokens are the only
trained weights.  Here the backbone is transformers' ``DINOv3ViTModel`` and
the adapters are PEFT's; ``release.py`` maps the authors' released files
onto this model.

This module is plain data: it imports no torch, so listing stays fast.  The
network lives in :mod:`diffzoo.plugins.dinov3iml.model`.
"""

from __future__ import annotations

from diffzoo.plugin import DetectorCard, Published, RecipeValue, Release, hookimpl, register_cards
from diffzoo.plugins.recipes import AMP, tiny_recipe

REPO = "Irennnne/DINOv3-IML@ba45b0a"
PAPER = "DINOv3 Beats Specialized Detectors: A Simple Foundation Model Baseline for Image Forensics, arXiv 2604.16083"
MODEL = f"{REPO} models/dinov3_forensics_lora.py"
COMMON = f"{REPO} configs/_base/lora_common.yaml"
TRAIN = "IMDL-BenCo training_scripts/train.py, which the repository's train.py runs"
LICENCE = "MIT (DINOv3-IML code); DINOv3 backbone weights: DINOv3 License (gated on the Hugging Face hub)"
TARGET = "diffzoo.plugins.dinov3iml.model:Dinov3ImlDetector"
DEFAULT = "dinov3iml.l"

# (hub id, hidden size, layers, heads, MLP size): the DINOv3 hub builders
# (facebookresearch/dinov3 dinov3/hub/backbones.py, dinov3_vit{s,b,l}16 with
# vit_small/base/large in dinov3/models/vision_transformer.py: ffn_ratio 4).
BACKBONES = {
    "s": ("facebook/dinov3-vits16-pretrain-lvd1689m", 384, 12, 6, 1536),
    "b": ("facebook/dinov3-vitb16-pretrain-lvd1689m", 768, 12, 12, 3072),
    "l": ("facebook/dinov3-vitl16-pretrain-lvd1689m", 1024, 24, 16, 4096),
}
# The released LoRA configuration with the best CAT-protocol average for each
# size (README "Pretrained Weights": S r64 .712, B r64 .780, L r32 .847), and its
# per-GPU batch (configs/lora_vit{s,b,l}_r{rank}.yaml batch_size).
LORA = {"s": (64, 48), "b": (64, 24), "l": (32, 24)}
ACCUM_ITER = 10
"""configs/_base/lora_common.yaml accum_iter: gradients of ten batches per step."""


def recipe(tag: str, rank: int, batch: int) -> dict[str, RecipeValue]:
    """The authors' LoRA training recipe where diffzoo's trainer can follow it, each deviation said."""
    config = f"{REPO} configs/lora_vit{tag}_r{rank}.yaml"
    return {
        "optimizer": RecipeValue("AdamW", f"{TRAIN} (AdamW through timm's create_optimizer)"),
        "lr": RecipeValue(3e-4, f"{COMMON} (lr: 3.0e-4)"),
        "weight_decay": RecipeValue(
            0.05, f"{COMMON} (weight_decay: 0.05); timm's create_optimizer leaves biases and 1-D weights "
            "undecayed, as Dinov3ImlDetector.no_decay_keywords does"),
        "betas": RecipeValue((0.9, 0.999), "timm's AdamW defaults (no betas in the configs)"),
        "head_lr_mult": RecipeValue(1.0, f"{TRAIN} (one learning rate for the LoRA weights and the head)"),
        "batch_size": RecipeValue(
            batch * ACCUM_ITER, f"{config} (batch_size: {batch}) x {COMMON} (accum_iter: {ACCUM_ITER}), one process "
            f"(scripts/train.sh NPROC defaults to 1)"),
        "iterations": RecipeValue(
            160_000, f"diffzoo choice: the same budget as every localizer of the zoo; the authors train "
            f"{COMMON} (epochs: 100)"),
        "warmup_iters": RecipeValue(1500, f"diffzoo choice: the zoo's warm-up; the authors warm up 5 epochs "
                                    f"({COMMON} warmup_epochs: 5)"),
        "poly_power": RecipeValue(1.0, "diffzoo's schedule: linear decay after the warm-up; the authors decay by a "
                                  "half-cosine (IMDL-BenCo's cos_lr_schedular)"),
        "crop_size": RecipeValue(
            512, f"{COMMON} (image_size: 512); the authors resize every image to 512 x 512 (if_resizing: true), "
            "diffzoo crops 512 px at the image's own scale and predicts at full resolution"),
        "hflip": RecipeValue(True, "IMDL-BenCo train.py (HorizontalFlip(p=0.5))"),
        "augmentation": RecipeValue(
            "random crop + horizontal flip",
            "diffzoo choice, as for every detector: IMDL-BenCo's train.py adds flips, rotations, rescaling, "
            "copy-move, inpainting, colour, JPEG and blur, which change the pixel statistics edit localizers use"),
        "loss": RecipeValue(
            "BCE", f"{MODEL} (BCEWithLogits on the logits upsampled to the input); its edge-weighted BCE x 20 "
            f"({COMMON} edge_lambda: 20, edge_mask_width: 7) is left out: diffzoo's shared trainer has no edge "
            "masks"),
        "frozen_backbone": RecipeValue(
            True, f"{MODEL} (every backbone parameter but the LoRA matrices has requires_grad False)"),
        "lora_rank": RecipeValue(rank, f"{config} (lora_rank: {rank})"),
        "lora_alpha": RecipeValue(2 * rank, f"{config} (lora_alpha: {2 * rank})"),
        "pretrained": RecipeValue(True, f"{REPO} configs (dinov3_weights_path: the LVD-1689M DINOv3 "
                                  "checkpoint, here through its transformers hub copy)"),
        "amp": AMP,
    }


CAT_TRAIN = "CASIA-v2, FantasticReality, IMD2020, tampCOCO (the CAT-Net protocol's training sets; DINOv3-IML README)"
README = "Irennnne/DINOv3-IML README.md (CAT-Net Protocol table)"
F1_DEFINITION = ("pixel F1 at 0.5, per image and averaged over each test set, as IMDL-BenCo's evaluator computes it "
                 "(the models are trained and tested through IMDL-BenCo); the README does not name the evaluator")
DRIVE = {  # the README's Google Drive folder per released configuration
    ("s", 64): "https://drive.google.com/drive/folders/1z--C_sdNFi4z7MTOnkT-Rjv7Bx99kwcT",
    ("b", 64): "https://drive.google.com/drive/folders/16c87obUh0VG0wzQP5lOWuEkjyLwo6toP",
    ("l", 32): "https://drive.google.com/drive/folders/125leLub_M-lICa1ILTOL-FCz4ZY6eutj",
}
CAT_F1 = {  # README, CAT-Net Protocol table: CASIAv1, Columbia, NIST16, Coverage, average
    ("s", 64): (0.803, 0.918, 0.457, 0.671, 0.712),
    ("b", 64): (0.863, 0.904, 0.570, 0.784, 0.780),
    ("l", 32): (0.907, 0.941, 0.636, 0.905, 0.847),
}


def _release(tag: str, rank: int) -> Release:
    """The released CAT-protocol LoRA checkpoint of ViT-``tag`` at ``rank``: the file the README's
    example names (the Drive folder's listing could not be read), its tensors under ``model``
    or bare (models/dinov3_forensics_lora.py from_pretrained), in the authors' DINOv3 naming."""
    numbers = tuple(Published(benchmark, "CAT protocol test set", "pixel F1", F1_DEFINITION, value, README)
                    for benchmark, value in zip(("CASIAv1", "Columbia", "NIST16", "Coverage", "4-set average"),
                                                CAT_F1[(tag, rank)]))
    return Release(f"cat-lora-r{rank}", (f"cat_vit{tag}_lora_r{rank}.pth",), f"Google Drive {DRIVE[(tag, rank)]}",
                   CAT_TRAIN, "CAT-Net protocol", "MIT (DINOv3-IML LICENSE; the DINOv3 backbone's own licence applies "
                   "to its weights)", unwrap=("model",), strip=(),
                   allow=("argparse.Namespace",),  # IMDL-BenCo's train.py, which trains it, saves its arguments too
                   train_datasets=("casia2", "imd2020"),  # the CAT protocol's sets diffzoo reads
                   convert="diffzoo.plugins.dinov3iml.release:from_release", published=numbers,
                   citation="Irennnne/DINOv3-IML README.md (weights table) and models/dinov3_forensics_lora.py "
                            "from_pretrained(); the file name follows the README's example")


def _card(tag: str, hub: str | None, hidden: int, layers: int, heads: int, mlp: int, rank: int,
          description: str, recipe_values: dict[str, RecipeValue], releases: tuple[Release, ...] = ()) -> DetectorCard:
    return DetectorCard(
        name=f"dinov3iml.{tag}",
        description=description,
        tasks=("binary", "semantic"),
        weights=hub,  # the default mean/std: inference.py _MEAN / _STD, ImageNet statistics
        licence=LICENCE,
        paper=PAPER,
        arch={
            "hidden_size": hidden,
            "num_hidden_layers": layers,
            "num_attention_heads": heads,
            "intermediate_size": mlp,
            # dinov3/hub/backbones.py: 4 storage (register) tokens, layer scale 1e-5,
            # LayerNorm eps 1e-5 ("layernormbf16"), RoPE base 100, coordinate rescale 2
            # in training, patch 16
            "num_register_tokens": 4,
            "layerscale_value": 1e-5,
            "layer_norm_eps": 1e-5,
            "rope_theta": 100.0,
            "pos_embed_rescale": 2.0,
            "patch_size": 16,
            # models/dinov3_forensics_lora.py: LoraConfig(target_modules=["qkv"], lora_dropout=0.0, bias="none")
            "lora_rank": rank,
            "lora_alpha": 2 * rank,
        },
        recipe=recipe_values,
        releases=releases,
    )


CARDS = [
    _card(tag, hub, hidden, layers, heads, mlp, LORA[tag][0],
          f"DINOv3-IML ViT-{tag.upper()}/16: frozen DINOv3 (LVD-1689M) with LoRA r={LORA[tag][0]} on q/k/v and a "
          f"three-conv head" + (" - 0.847 average pixel-F1 on the CAT-Net protocol" if tag == "l" else ""),
          recipe(tag, *LORA[tag]), (_release(tag, LORA[tag][0]),))
    for tag, (hub, hidden, layers, heads, mlp) in BACKBONES.items()
]
TINY = _card(
    "tiny", None, 64, 2, 4, 256, 4,
    "Tiny random-init DINOv3-IML for tests (2 layers, width 64, LoRA r=4; no pretrained weights)",
    tiny_recipe({**recipe("s", *LORA["s"]),
                 "lora_rank": RecipeValue(4, "tiny test card: the smallest rank worth testing"),
                 "lora_alpha": RecipeValue(8, "tiny test card: 2 x rank, as every released configuration")}),
    (_release("l", 32),),  # a file of the released layout, at the tiny size, loads as that release does
)
CARDS.append(TINY)


@hookimpl
def register_detectors(register):
    register_cards(register, CARDS, TARGET, DEFAULT)
