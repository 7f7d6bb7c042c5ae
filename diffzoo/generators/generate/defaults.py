"""What ``diffzoo generate`` takes and its defaults, as plain data: the CLI builds its options
from :class:`GenerateConfig` and shows the defaults in ``--help`` without importing the model
code (numpy, transformers) behind them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

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
    size: int | None = None  # longer side of the bases in px; None keeps it
    t2i: str | None = None  # text-to-image card; None: sd-t2i.tiny when all editors are tiny
    captions: Path | None = None  # COCO captions file for AI bases
    prompts: str = "templates"  # | vlm
    objects: str = "vocabulary"  # | vlm (object names for open-vocab detection)
    vlm: str = DEFAULT_VLM
    vlm_score: bool = False
    min_score: float = 3.0
    detector: str = DEFAULT_DETECTOR
    sam: str = DEFAULT_SAM
    min_area: float = 0.01
    max_area: float = 0.5
    min_changed: float = 0.1
    tries: int = 3
    area_bins: tuple[float, ...] = AREA_BINS
    loras: tuple[tuple[str, str], ...] = ()  # (editor as in `editors`, LoRA .safetensors file)
    lora_scale: float = 1.0
    device: str = "auto"
    threads: int | None = 1  # torch CPU threads (fixed, so results do not depend on the core count)
    workers: int | None = 0  # processes that read and resize real bases ahead of the editors (same samples for any
    # number); None: parallel.default_workers for the device and threads
