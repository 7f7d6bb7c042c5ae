"""Text-to-image generation of AI base images (caption + seed -> RGB uint8).

DiffSeg30k edits real photographs and AI-generated images alike; the ``mini``
dataset makes its AI bases with the tiny random-weight StableDiffusionPipeline
of card ``sd-t2i.tiny``, ``diffzoo generate`` with the card ``--t2i`` names
(:data:`T2I_CARDS`; default ``sdxl-t2i.base``, SDXL 1.0 base, when its
editors are real, ``sd-t2i.tiny`` when they are all tiny).  Which model made
DiffSeg30k's AI bases is not stated in what we have read; SDXL base is our
documented default, not the paper's.  Deterministic for a fixed seed.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from diffzoo.generators.editors.cards import SD_T2I_TINY, SDXL_BASE
from diffzoo.generators.editors.diffusers_editor import CardPipeline, call_kwargs
from diffzoo.harness.core.cards import GeneratorCard
from diffzoo.harness.core.errors import ConfigError
from diffzoo.harness.data.distortions import resize_image

SDXL_T2I = dataclasses.replace(  # the same weights and settings as the sdxl.base editor
    SDXL_BASE,
    name="sdxl-t2i.base",
    description="SDXL 1.0 base, text to image (AI base images for diffzoo generate)",
    pipeline="StableDiffusionXLPipeline",
    native_inpaint=False,
    options=dict(SDXL_BASE.options),
)
T2I_CARDS: dict[str, GeneratorCard] = {c.name: c for c in (SDXL_T2I, SD_T2I_TINY)}
"""Text-to-image cards (not editors, so not registered as generators)."""


def get_t2i_card(name: str) -> GeneratorCard:
    if name not in T2I_CARDS:
        raise ConfigError(f"unknown text-to-image card {name!r}; choose from {', '.join(T2I_CARDS)}")
    return T2I_CARDS[name]


class TextToImage(CardPipeline):
    """Generates a square image at the card's resolution from a caption."""

    what = "text-to-image"

    def __init__(self, card: GeneratorCard = SD_T2I_TINY, device: str = "cpu"):
        super().__init__(card, device)

    def generate(self, caption: str, seed: int, size: int | None = None) -> np.ndarray:
        """An H x W x 3 uint8 image for ``caption`` (resized to ``size`` when given)."""
        res = self.card.resolution
        image = self._run(call_kwargs(self.card, caption, seed, {"height": res, "width": res}))
        return np.ascontiguousarray(image if size is None else resize_image(image, (size, size)))
