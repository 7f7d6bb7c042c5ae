"""What ``diffzoo generate`` takes and its defaults, as plain data: the CLI builds its options
from :class:`GenerateConfig` (the fields declared with ``option``, as :class:`RunRequest`'s are)
and shows the defaults in ``--help`` without importing the model code (numpy, transformers)
behind them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from diffzoo.harness.run.request import option

DEFAULT_DETECTOR = "IDEA-Research/grounding-dino-base"  # or IDEA-Research/grounding-dino-tiny
DEFAULT_SAM = "facebook/sam-vit-huge"  # or facebook/sam-vit-base
DEFAULT_VLM = "Qwen/Qwen2.5-VL-7B-Instruct"
AREA_BINS: tuple[float, ...] = (0.05, 0.15)
"""Edges (fractions of the image) of the small / medium / large area bins."""


@dataclass(frozen=True)
class GenerateConfig:
    """Everything ``diffzoo generate`` takes (see docs/generate.md)."""

    out: Path
    editors: tuple[str, ...]
    bases: str | None = None  # folder, or coco:ANN.json:IMGDIR; None only when ai_fraction == 1
    n: int = 100
    regions: str | None = None  # masks:DIR | coco | open-vocab | random (default: coco for COCO bases)
    turns: tuple[int, ...] = (1, 4, 5)
    ai_fraction: float = 0.5
    seed: int = 0
    size: int | None = option(None, "Longer side of the bases in px (default: keep).")
    t2i: str | None = option(
        None, "Text-to-image card for AI bases (default: sd-t2i.tiny if all editors are tiny, else sdxl-t2i.base).")
    captions: Path | None = option(
        None, "COCO captions JSON for AI bases (default: captions_* beside COCO instances, else templates).")
    prompts: str = option("templates", "templates or vlm.")
    objects: str = option("vocabulary", "Object names for open-vocab: vocabulary (COCO classes) or vlm.")
    vlm: str = option(DEFAULT_VLM, "Vision-language model (hub id) for --prompts/--objects vlm and --vlm-score.")
    vlm_score: bool = option(False, "Reject edits the VLM scores below --min-score (0-5).")
    min_score: float = option(3.0)
    detector: str = option(DEFAULT_DETECTOR, "Grounding DINO hub id (open-vocab).")
    sam: str = option(DEFAULT_SAM, "SAM hub id (open-vocab).")
    min_area: float = option(0.01, "Smallest region, as a fraction of the image.")
    max_area: float = option(0.5, "Largest region, as a fraction of the image.")
    min_changed: float = option(0.1, "No-op filter: least fraction of the region an edit must change.")
    tries: int = option(3, "Tries per turn (new region, prompt, seed) before a sample is rejected.")
    area_bins: tuple[float, ...] = AREA_BINS
    loras: tuple[tuple[str, str], ...] = ()  # (editor as in `editors`, LoRA .safetensors file)
    lora_scale: float = 1.0
    device: str = "auto"
    threads: int | None = 1  # torch CPU threads (fixed, so results do not depend on the core count)
    workers: int | None = 0  # processes that read and resize real bases ahead of the editors (same samples for any
    # number); None: parallel.default_workers for the device and threads
