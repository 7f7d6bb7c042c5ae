"""Text-to-image generation of AI base images (caption + seed -> RGB uint8).

DiffSeg30k edits real photographs and AI-generated images alike; the ``mini``
dataset makes its AI bases with the tiny random-weight StableDiffusionPipeline
of card ``sd-t2i.tiny``.  Deterministic for a fixed seed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..harness.cards import GeneratorCard
from ..harness.errors import ModelError
from .cards import SD_T2I_TINY


class TextToImage:
    """Generates a square image at the card's resolution from a caption."""

    def __init__(self, card: GeneratorCard = SD_T2I_TINY, device: str = "cpu", dtype: Any = None):
        self.card = card
        self.device = str(device)
        self.dtype = dtype
        self._pipeline: Any = None

    @property
    def pipeline(self) -> Any:
        if self._pipeline is None:
            from .diffusers_editor import load_pipeline

            self._pipeline = load_pipeline(self.card, self.device, self.dtype)
        return self._pipeline

    def generate(self, caption: str, seed: int, size: int | None = None) -> np.ndarray:
        """An H x W x 3 uint8 image for ``caption`` (resized to ``size`` when given)."""
        import torch
        from PIL import Image

        res = self.card.resolution
        with torch.inference_mode():
            out = self.pipeline(
                prompt=caption,
                height=res,
                width=res,
                num_inference_steps=self.card.steps,
                guidance_scale=self.card.guidance_scale,
                generator=torch.Generator(device="cpu").manual_seed(int(seed)),
                output_type="np",
            ).images[0]
        if not np.isfinite(out).all():
            raise ModelError(f"text-to-image {self.card.name!r} produced non-finite pixels")
        image = (np.clip(out, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)
        if size is not None and size != res:
            image = np.asarray(Image.fromarray(image).resize((size, size), Image.Resampling.BICUBIC))
        return np.ascontiguousarray(image)
