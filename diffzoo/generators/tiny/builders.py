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
    "StableDiffusionInpaintPipeline": extra.build_sd,
    "StableDiffusionPipeline": extra.build_sd,
    "StableDiffusionXLInpaintPipeline": extra.build_sdxl,
    "FluxFillPipeline": extra.build_flux,
    "FluxInpaintPipeline": extra.build_flux,
    "StableDiffusion3InpaintPipeline": extra.build_sd3,
    "KandinskyV22InpaintCombinedPipeline": extra.build_kandinsky22,
    "KolorsPipeline": extra.build_kolors,
    "HunyuanDiTPipeline": extra.build_hunyuandit,
    "Flux2KleinPipeline": instruct.build_flux2_klein,
    "Flux2KleinInpaintPipeline": instruct.build_flux2_klein,
    "Flux2Pipeline": instruct.build_flux2_dev,
    "QwenImageEditPipeline": instruct.build_qwen_edit,
    "QwenImageEditPlusPipeline": instruct.build_qwen_edit,
    "QwenImageEditInpaintPipeline": instruct.build_qwen_edit,
    "LongCatImageEditPipeline": instruct.build_longcat_edit,
}
"""Pipeline class name -> its tiny build, ``builder(seed, pipeline=name, **card.options)``: each reads
the options it knows (the class name where one build makes several)."""


def build_tiny_pipeline(card: Any) -> Any:
    """The tiny pipeline for a ``tiny=True`` GeneratorCard (weights seed from the card)."""
    builder = TINY_BUILDERS.get(card.pipeline)
    if builder is None:
        raise ModelError(
            f"no tiny build for pipeline {card.pipeline!r} (card {card.name!r}); "
            f"tiny builds exist for: {', '.join(sorted(TINY_BUILDERS))}"
        )
    pipe = builder(int(card.options.get("weights_seed", TINY_SEED)), pipeline=card.pipeline, **card.options)
    pipe.set_progress_bar_config(disable=True)
    return pipe
