"""Tiny random-weight diffusers pipelines, built fully offline: the build for a card's pipeline class.

Every ``tiny`` generator card is the real pipeline class built from small
configs (taken from the shapes diffusers' own fast tests use) with random
weights, by the modules the package docstring lists, seeded as
``components.py`` says.  The outputs are noise-like pictures; they exist to
prove that the editing, labelling and benchmarking code paths work end to end.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from diffzoo.generators.tiny import extra, instruct
from diffzoo.generators.tiny.components import TINY_SEED
from diffzoo.harness.core.errors import ModelError

TINY_BUILDERS: dict[str, Callable[..., Any]] = {
    "StableDiffusionInpaintPipeline": lambda seed, **o: extra.build_sd(seed, inpaint=True),
    "StableDiffusionPipeline": lambda seed, **o: extra.build_sd(seed, inpaint=False),
    "StableDiffusionXLInpaintPipeline": lambda seed, **o: extra.build_sdxl(
        seed, unet_in_channels=int(o.get("unet_in_channels", 9))
    ),
    "FluxFillPipeline": lambda seed, **o: extra.build_flux(seed, fill=True),
    "FluxInpaintPipeline": lambda seed, **o: extra.build_flux(seed, fill=False),
    "StableDiffusion3InpaintPipeline": lambda seed, **o: extra.build_sd3(seed),
    "KandinskyV22InpaintCombinedPipeline": lambda seed, **o: extra.build_kandinsky22(seed),
    "KolorsPipeline": lambda seed, **o: extra.build_kolors(seed),
    "HunyuanDiTPipeline": lambda seed, **o: extra.build_hunyuandit(seed),
    "Flux2KleinPipeline": lambda seed, **o: instruct.build_flux2_klein(seed),
    "Flux2KleinInpaintPipeline": lambda seed, **o: instruct.build_flux2_klein(seed, inpaint=True),
    "Flux2Pipeline": lambda seed, **o: instruct.build_flux2_dev(seed),
    "QwenImageEditPipeline": lambda seed, **o: instruct.build_qwen_edit(seed),
    "QwenImageEditPlusPipeline": lambda seed, **o: instruct.build_qwen_edit(seed, variant="plus"),
    "QwenImageEditInpaintPipeline": lambda seed, **o: instruct.build_qwen_edit(seed, variant="inpaint"),
    "LongCatImageEditPipeline": lambda seed, **o: instruct.build_longcat_edit(seed),
}


def build_tiny_pipeline(card: Any) -> Any:
    """The tiny pipeline for a ``tiny=True`` GeneratorCard (weights seed from the card)."""
    builder = TINY_BUILDERS.get(card.pipeline)
    if builder is None:
        raise ModelError(
            f"no tiny build for pipeline {card.pipeline!r} (card {card.name!r}); "
            f"tiny builds exist for: {', '.join(sorted(TINY_BUILDERS))}"
        )
    pipe = builder(int(card.options.get("weights_seed", TINY_SEED)), **card.options)
    pipe.set_progress_bar_config(disable=True)
    return pipe
