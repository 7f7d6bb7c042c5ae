"""Cards of the instruction-editor families: Qwen-Image-Edit, FLUX.2, LongCat, FireRed.

Instruction editors (``options["instruct"]``) take an image and a prompt, no
mask; ``instruct.InstructionEditor`` derives their label from pixel
differences.  The families' inpainting pipelines (``qwen.edit-inpaint``,
``flux2.klein-inpaint``) take a mask and run as ordinary mask editors
(``DiffusersEditor``, composited).  Plain data, no torch.

Settings are each model card's recommendation; ``resolution`` is the side of
the square whose area the editor targets (aspect ratio kept; see
``instruct.run_size``).  Every real card has a tiny stand-in (``TINY_OF``:
same pipeline class, random weights built by ``tiny/instruct.py``).
"""

from __future__ import annotations

import dataclasses

from diffzoo.harness.core.cards import GeneratorCard

TINY_NOTE = "random weights: outputs are noise-like and prove only that the pipeline runs"
TINY_LICENCE = "Apache-2.0 (diffzoo code; no weights)"
QWEN_IMAGE_PAPER = "Wu et al., Qwen-Image Technical Report, arXiv:2508.02324"
FLUX2_PAPER = "Black Forest Labs, FLUX.2 (2025; no paper; https://bfl.ai/blog/flux-2)"
LONGCAT_PAPER = "Meituan LongCat Team, LongCat-Image (2025 technical report; see the model card)"
FIRERED_PAPER = "FireRed Team, FireRed-Image-Edit, arXiv:2602.13344"
FLUX_NC = "FLUX Non-Commercial License (gated: accept it on the hub page)"
QWEN_CALL = {"negative_prompt": " "}  # the model cards pass " ": classifier-free guidance needs a negative
QWEN_OPTIONS = {"torch_dtype": "bfloat16", "guidance_kwarg": "true_cfg_scale", "call_kwargs": QWEN_CALL}


def _instruct(**options: object) -> dict[str, object]:
    return {"instruct": True, **options}


QWEN_EDIT = GeneratorCard(
    name="qwen.edit",
    description="Qwen-Image-Edit (20B MMDiT; Qwen2.5-VL reads the input image and the instruction)",
    pipeline="QwenImageEditPipeline",
    weights="Qwen/Qwen-Image-Edit",
    native_inpaint=False,
    resolution=1024,
    steps=50,
    guidance_scale=4.0,
    licence="Apache-2.0",
    paper=QWEN_IMAGE_PAPER,
    options=_instruct(**QWEN_OPTIONS),
)

QWEN_EDIT_2509 = dataclasses.replace(
    QWEN_EDIT,
    name="qwen.edit-2509",
    description="Qwen-Image-Edit-2509 (multi-image edit pipeline, QwenImageEditPlusPipeline)",
    pipeline="QwenImageEditPlusPipeline",
    weights="Qwen/Qwen-Image-Edit-2509",
    steps=40,
)

QWEN_EDIT_INPAINT = dataclasses.replace(
    QWEN_EDIT,
    name="qwen.edit-inpaint",
    description="Qwen-Image-Edit weights with diffusers' mask-inpainting edit pipeline (composited)",
    pipeline="QwenImageEditInpaintPipeline",
    native_inpaint=True,
    options=dict(QWEN_OPTIONS),
)

FLUX2_DEV = dataclasses.replace(
    QWEN_EDIT,
    name="flux2.dev",
    description="FLUX.2 [dev] (32B rectified-flow transformer, Mistral-3 text encoder), reference-image editing",
    pipeline="Flux2Pipeline",
    weights="black-forest-labs/FLUX.2-dev",
    licence=FLUX_NC,
    paper=FLUX2_PAPER,
    options=_instruct(torch_dtype="bfloat16"),
)

FLUX2_KLEIN_4B = dataclasses.replace(
    FLUX2_DEV,
    name="flux2.klein-4b",
    description="FLUX.2 [klein] 4B (step- and guidance-distilled, Qwen3 text encoder), reference-image editing",
    pipeline="Flux2KleinPipeline",
    weights="black-forest-labs/FLUX.2-klein-4B",
    steps=4,
    guidance_scale=1.0,
    licence="Apache-2.0",
)

FLUX2_KLEIN_INPAINT = dataclasses.replace(
    FLUX2_DEV,
    name="flux2.klein-inpaint",
    description="FLUX.2 [klein] Base 9B with diffusers' mask-inpainting pipeline (composited)",
    pipeline="Flux2KleinInpaintPipeline",
    weights="black-forest-labs/FLUX.2-klein-base-9B",
    native_inpaint=True,
    options={"torch_dtype": "bfloat16", "notes": "hub id and settings from diffusers' pipeline example"},
)

LONGCAT_EDIT = dataclasses.replace(
    FLUX2_DEV,
    name="longcat.edit",
    description="LongCat-Image-Edit (Meituan; Qwen2.5-VL conditioned DiT); sizes itself to about 1 megapixel",
    pipeline="LongCatImageEditPipeline",
    weights="meituan-longcat/LongCat-Image-Edit",
    guidance_scale=4.5,
    licence="see the hub page (model card)",
    paper=LONGCAT_PAPER,
)

FIRERED_NOTE = "settings of Qwen-Image-Edit-2509, whose pipeline class FireRed's diffusers weights use"
FIRERED_EDIT = dataclasses.replace(
    QWEN_EDIT_2509,
    name="firered.edit",
    description="FireRed-Image-Edit 1.1 (diffusers format: QwenImageEditPlusPipeline)",
    weights="FireRedTeam/FireRed-Image-Edit-1.1",
    paper=FIRERED_PAPER,
    options=_instruct(**QWEN_OPTIONS, notes=FIRERED_NOTE),
)

FIRERED_EDIT_10 = dataclasses.replace(
    FIRERED_EDIT,
    name="firered.edit-1.0",
    description="FireRed-Image-Edit 1.0 (diffusers format: QwenImageEditPlusPipeline)",
    weights="FireRedTeam/FireRed-Image-Edit-1.0",
)

# Tiny builds (tiny/instruct.py): 64 px, 2 steps, guidance 5.0 (classifier-free guidance runs); the real
# card's pipeline class and instruction/guidance options.  FLUX.2 text encoders have 3 layers (the real ones
# are read at 9, 18, 27 (klein) and 10, 20, 30 (dev)).
_FLUX2_TINY_OPTIONS = {"max_sequence_length": 64, "call_kwargs": {"text_encoder_out_layers": (1, 2, 3)}}
_REAL_ONLY = ("torch_dtype", "notes")


def tiny_card(name: str, real: GeneratorCard, **options: object) -> GeneratorCard:
    """The tiny stand-in of ``real``: its pipeline class built from tiny random-weight configs
    offline (``diffzoo.generators.tiny``), at 64 px with 2 steps and guidance 5, with ``options``."""
    return GeneratorCard(
        name=name,
        description=f"tiny random-weight {real.pipeline} built offline (stand-in for {real.name})",
        pipeline=real.pipeline,
        weights=None,
        native_inpaint=real.native_inpaint,
        tiny=True,
        resolution=64,
        steps=2,
        guidance_scale=5.0,
        licence=TINY_LICENCE,
        paper=real.paper,
        options={"notes": TINY_NOTE, **options},
    )


def _tiny(name: str, real: GeneratorCard, **options: object) -> GeneratorCard:
    """An instruction family's tiny card keeps the real card's instruction and guidance options."""
    return tiny_card(name, real, **{**{k: v for k, v in real.options.items() if k not in _REAL_ONLY}, **options})


_REAL_CARDS = (QWEN_EDIT, QWEN_EDIT_2509, QWEN_EDIT_INPAINT, FLUX2_DEV, FLUX2_KLEIN_4B, FLUX2_KLEIN_INPAINT,
               LONGCAT_EDIT, FIRERED_EDIT, FIRERED_EDIT_10)  # fmt: skip
# Qwen-Image-Edit and LongCat size their input to about 1 megapixel internally (about 3 s per tiny call)
_TINY_CARDS = {
    QWEN_EDIT.name: _tiny("qwen.tiny-edit", QWEN_EDIT),
    QWEN_EDIT_2509.name: _tiny("qwen.tiny-edit-2509", QWEN_EDIT_2509),
    QWEN_EDIT_INPAINT.name: _tiny("qwen.tiny-edit-inpaint", QWEN_EDIT_INPAINT),
    FLUX2_DEV.name: _tiny("flux2.tiny-dev", FLUX2_DEV, **_FLUX2_TINY_OPTIONS),
    FLUX2_KLEIN_4B.name: _tiny("flux2.tiny-klein", FLUX2_KLEIN_4B, **_FLUX2_TINY_OPTIONS),
    FLUX2_KLEIN_INPAINT.name: _tiny("flux2.tiny-klein-inpaint", FLUX2_KLEIN_INPAINT, **_FLUX2_TINY_OPTIONS),
    LONGCAT_EDIT.name: _tiny("longcat.tiny-edit", LONGCAT_EDIT),
    FIRERED_EDIT.name: _tiny("firered.tiny-edit", FIRERED_EDIT),
}

TINY_OF: dict[str, str] = {
    **{real: card.name for real, card in _TINY_CARDS.items()},
    FIRERED_EDIT_10.name: _TINY_CARDS[FIRERED_EDIT.name].name,  # FireRed 1.0 and 1.1 share the pipeline
}
"""Each real instruction-family card -> its tiny stand-in (same pipeline class, random weights)."""

INSTRUCT_CARDS: tuple[GeneratorCard, ...] = (*_REAL_CARDS, *_TINY_CARDS.values())
"""Cards of the instruction-editor families (with their inpainting variants); registered by the plugin."""

INSTRUCT_DEFAULTS = ("qwen.edit", "flux2.dev", "longcat.edit", "firered.edit")
"""The default card of each instruction-editor family (the bare family name resolves to it)."""
