"""Generator cards: one flat card per editor variant (plain data, no torch).

Family names (``sd2``, ``sd35``, ``sdxl``, ``flux1``, ``kolors``,
``hunyuandit``, ``kandinsky22``) are also the class names of the editors in
label maps.  Each family has one real default card (hub weights, the settings
its model card recommends) and ``tiny`` cards: the same pipeline class built
from tiny random-weight configs offline (``tiny/extra.py``), at
64 px with 2 steps, used by tests and the embedded ``mini`` dataset.

``native_inpaint=False`` cards (Kolors, HunyuanDiT: diffusers has no inpaint
pipeline for them) name a text-to-image pipeline that the editor drives with
mask-blended latent inpainting (``latent_blend.py``).

``options`` keys used by the editor: ``torch_dtype`` (dtype on accelerators;
CPU always runs float32), ``variant`` (hub weight variant), ``max_sequence_length``
(T5 / ChatGLM prompt length), ``call_kwargs`` (extra keyword arguments of the
pipeline call), ``extra_weights`` (further hub ids the pipeline loads, named
when weights are missing), ``unet_in_channels`` (tiny SDXL: 9 = inpainting
UNet, 4 = base UNet with latent blending), ``loras`` and ``scheduler`` (LoRA
adapters and a scheduler swap, ``lora.py``), ``guidance_kwarg`` (the call
argument guidance goes to, e.g. Qwen-Image's ``true_cfg_scale``), ``instruct``
(an instruction editor: no mask in, label from pixel differences), ``notes``.

The instruction-editor families (Qwen-Image-Edit, FLUX.2, LongCat, FireRed)
are in ``instruct_cards.py``: ``INSTRUCT_CARDS``.
"""

from __future__ import annotations

import dataclasses

from diffzoo.generators.editors.glide.cards import GLIDE_CARDS
from diffzoo.generators.editors.instruct_cards import INSTRUCT_CARDS, INSTRUCT_DEFAULTS, tiny_card
from diffzoo.harness.core.cards import GeneratorCard

LDM_PAPER = "Rombach et al., High-Resolution Image Synthesis with Latent Diffusion Models, CVPR 2022, arXiv:2112.10752"
SDXL_PAPER = (
    "Podell et al., SDXL: Improving Latent Diffusion Models for High-Resolution Image Synthesis, arXiv:2307.01952"
)
FLUX_PAPER = (
    "Black Forest Labs, FLUX.1 (2024; no paper of its own; architecture described in "
    "FLUX.1 Kontext, arXiv:2506.15742)"
)
SD3_PAPER = (
    "Esser et al., Scaling Rectified Flow Transformers for High-Resolution Image Synthesis, "
    "ICML 2024, arXiv:2403.03206"
)
KANDINSKY_PAPER = (
    "Razzhigaev et al., Kandinsky: an Improved Text-to-Image Synthesis with Image Prior and "
    "Latent Diffusion, EMNLP 2023 (demo track), arXiv:2310.03502"
)
KOLORS_PAPER = (
    "Kolors Team (Kuaishou), Kolors: Effective Training of Diffusion Model for Photorealistic "
    "Text-to-Image Synthesis, technical report, 2024"
)
HUNYUANDIT_PAPER = (
    "Li et al., Hunyuan-DiT: A Powerful Multi-Resolution Diffusion Transformer with "
    "Fine-Grained Chinese Understanding, arXiv:2405.08748"
)
HYPER_SD_PAPER = (
    "Ren et al., Hyper-SD: Trajectory Segmented Consistency Model for Efficient Image Synthesis, "
    "NeurIPS 2024, arXiv:2404.13686"
)
OPENRAIL_PP = "CreativeML Open RAIL++-M"
SAI_COMMUNITY = "Stability AI Community License (gated: accept it on the hub page)"
KOLORS_LICENCE = "Kolors weights licence (academic use free; commercial use after registration)"
HUNYUAN_LICENCE = "Tencent Hunyuan Community License"
BLEND_NOTE = (
    "diffusers has no inpaint pipeline for this model: text-to-image pipeline with "
    "mask-blended latent inpainting (known latents re-noised and pasted back every step)"
)
FLUX_DEV_LICENCE = "FLUX.1 [dev] Non-Commercial License (gated: accept it on the hub page)"
FP16 = {"torch_dtype": "float16", "variant": "fp16"}  # half precision, from the repository's fp16 weight files

SD2_INPAINT = GeneratorCard(
    name="sd2.inpaint",
    description="Stable Diffusion 2 inpainting (9-channel UNet conditioned on mask and masked image)",
    pipeline="StableDiffusionInpaintPipeline",
    weights="stabilityai/stable-diffusion-2-inpainting",
    resolution=512,
    steps=50,
    guidance_scale=7.5,
    licence=OPENRAIL_PP,
    paper=LDM_PAPER,
    options={"torch_dtype": "float16"},
)

SDXL_INPAINT = GeneratorCard(
    name="sdxl.inpaint",
    description=(
        "SDXL 1.0 inpainting-0.1: a 9-channel UNet fine-tuned for inpainting from SDXL base "
        "(chosen as default over the base model, whose 4-channel latent blending ignores the "
        "masked context and leaves seams)"
    ),
    pipeline="StableDiffusionXLInpaintPipeline",
    weights="diffusers/stable-diffusion-xl-1.0-inpainting-0.1",
    resolution=1024,
    steps=30,
    guidance_scale=8.0,
    licence=OPENRAIL_PP,
    paper=SDXL_PAPER,
    options={**FP16, "notes": "its model card suggests strength 0.99; diffzoo uses 1.0 so every step runs"},
)

SDXL_BASE = dataclasses.replace(
    SDXL_INPAINT,
    name="sdxl.base",
    description="SDXL 1.0 base used for inpainting by latent blending (4-channel UNet)",
    weights="stabilityai/stable-diffusion-xl-base-1.0",
    guidance_scale=7.5,
    options=dict(FP16),
)

SDXL_HYPER_SD_8STEP = dataclasses.replace(
    SDXL_INPAINT,
    name="sdxl.hyper-sd-8step",
    description=(
        "SDXL inpainting-0.1 with the Hyper-SD 8-step LoRA fused in: DDIM with trailing "
        "timesteps, 8 steps, no classifier-free guidance"
    ),
    steps=8,
    guidance_scale=0.0,  # Hyper-SD's model card: guidance_scale=0 for the (non-CFG) SDXL LoRAs
    licence=f"{OPENRAIL_PP} (base and Hyper-SD LoRA)",
    paper=HYPER_SD_PAPER,
    options={
        **FP16,
        "loras": (
            {"source": "ByteDance/Hyper-SD", "weight_name": "Hyper-SDXL-8steps-lora.safetensors", "fuse": True},
        ),
        "scheduler": {"class": "DDIMScheduler", "timestep_spacing": "trailing"},
        "extra_weights": ("ByteDance/Hyper-SD",),
        "notes": (
            "Hyper-SD distilled its LoRA on SDXL base; diffzoo fuses it into the inpainting UNet "
            "(the sdxl default), whose attention layers it shares"
        ),
    },
)

FLUX1_FILL = GeneratorCard(
    name="flux1.fill",
    description="FLUX.1 Fill [dev]: rectified-flow transformer trained for inpainting (mask + masked image input)",
    pipeline="FluxFillPipeline",
    weights="black-forest-labs/FLUX.1-Fill-dev",
    resolution=1024,
    steps=50,
    guidance_scale=30.0,
    licence=FLUX_DEV_LICENCE,
    paper=FLUX_PAPER,
    options={"torch_dtype": "bfloat16", "max_sequence_length": 512},
)

FLUX1_INPAINT = dataclasses.replace(
    FLUX1_FILL,
    name="flux1.inpaint",
    description="FLUX.1 [dev] text-to-image model used for inpainting by latent blending",
    pipeline="FluxInpaintPipeline",
    weights="black-forest-labs/FLUX.1-dev",
    steps=28,
    guidance_scale=3.5,
)


SD35_MEDIUM = GeneratorCard(
    name="sd35.medium",
    description="Stable Diffusion 3.5 Medium (MMDiT-X, rectified flow) with its native inpaint pipeline",
    pipeline="StableDiffusion3InpaintPipeline",
    weights="stabilityai/stable-diffusion-3.5-medium",
    resolution=1024,
    steps=40,
    guidance_scale=4.5,
    licence=SAI_COMMUNITY,
    paper=SD3_PAPER,
    options={"torch_dtype": "bfloat16"},
)

SD35_LARGE = dataclasses.replace(
    SD35_MEDIUM,
    name="sd35.large",
    description="Stable Diffusion 3.5 Large (8B MMDiT, rectified flow) with its native inpaint pipeline",
    weights="stabilityai/stable-diffusion-3.5-large",
    steps=28,
    guidance_scale=3.5,
)

KANDINSKY22_INPAINT = GeneratorCard(
    name="kandinsky22.inpaint",
    description=(
        "Kandinsky 2.2: CLIP image prior + 9-channel inpainting decoder UNet on MoVQ latents "
        "(prior and decoder run as one combined pipeline)"
    ),
    pipeline="KandinskyV22InpaintCombinedPipeline",
    weights="kandinsky-community/kandinsky-2-2-decoder-inpaint",
    resolution=768,
    steps=100,
    guidance_scale=4.0,
    licence="Apache-2.0",
    paper=KANDINSKY_PAPER,
    options={
        "torch_dtype": "float16",
        "extra_weights": ("kandinsky-community/kandinsky-2-2-prior",),
        "call_kwargs": {"prior_num_inference_steps": 25, "prior_guidance_scale": 4.0},
        "notes": "the pipeline has no strength: it always starts from pure noise (= strength 1.0)",
    },
)

KOLORS_BLEND = GeneratorCard(
    name="kolors.blend",
    description="Kolors (SDXL-style UNet with a ChatGLM3 text encoder) inpainting by latent blending",
    pipeline="KolorsPipeline",
    weights="Kwai-Kolors/Kolors-diffusers",
    native_inpaint=False,
    resolution=1024,
    steps=50,
    guidance_scale=5.0,
    licence=KOLORS_LICENCE,
    paper=KOLORS_PAPER,
    options={**FP16, "notes": BLEND_NOTE},
)

HUNYUANDIT_BLEND = dataclasses.replace(
    KOLORS_BLEND,
    name="hunyuandit.blend",
    description="HunyuanDiT v1.1 (DiT with bilingual CLIP-BERT + mT5 encoders) inpainting by latent blending",
    pipeline="HunyuanDiTPipeline",
    weights="Tencent-Hunyuan/HunyuanDiT-v1.1-Diffusers",
    licence=HUNYUAN_LICENCE,
    paper=HUNYUANDIT_PAPER,
    options={
        "torch_dtype": "float16",
        "call_kwargs": {"use_resolution_binning": False},  # the editor already picks the square size
        "notes": BLEND_NOTE,
    },
)


SD2_TINY = tiny_card("sd2.tiny", SD2_INPAINT)
SDXL_TINY = tiny_card("sdxl.tiny", SDXL_INPAINT, unet_in_channels=9)
SDXL_TINY_BASE = tiny_card("sdxl.tiny-base", SDXL_BASE, unet_in_channels=4)
SDXL_TINY_LORA = dataclasses.replace(
    tiny_card(
        "sdxl.tiny-lora",
        SDXL_HYPER_SD_8STEP,
        unet_in_channels=9,
        loras=({"tiny_seed": 1, "fuse": True},),  # a random LoRA made offline (tiny.components.tiny_lora_state_dict)
        scheduler=SDXL_HYPER_SD_8STEP.options["scheduler"],
    ),
    guidance_scale=0.0,  # as the real card: no classifier-free guidance
)
FLUX1_TINY = tiny_card("flux1.tiny", FLUX1_FILL, max_sequence_length=64)
FLUX1_TINY_INPAINT = tiny_card("flux1.tiny-inpaint", FLUX1_INPAINT, max_sequence_length=64)
SD35_TINY = tiny_card("sd35.tiny", SD35_MEDIUM, max_sequence_length=64)
KANDINSKY22_TINY = tiny_card("kandinsky22.tiny", KANDINSKY22_INPAINT, call_kwargs={"prior_num_inference_steps": 2})
KOLORS_TINY = tiny_card("kolors.tiny", KOLORS_BLEND, max_sequence_length=64)
HUNYUANDIT_TINY = tiny_card("hunyuandit.tiny", HUNYUANDIT_BLEND, call_kwargs={"use_resolution_binning": False})

GENERATOR_CARDS: tuple[GeneratorCard, ...] = (
    SD2_INPAINT,
    SD2_TINY,
    SD35_MEDIUM,
    SD35_LARGE,
    SD35_TINY,
    SDXL_INPAINT,
    SDXL_BASE,
    SDXL_HYPER_SD_8STEP,
    SDXL_TINY,
    SDXL_TINY_BASE,
    SDXL_TINY_LORA,
    FLUX1_FILL,
    FLUX1_INPAINT,
    FLUX1_TINY,
    FLUX1_TINY_INPAINT,
    KOLORS_BLEND,
    KOLORS_TINY,
    HUNYUANDIT_BLEND,
    HUNYUANDIT_TINY,
    KANDINSKY22_INPAINT,
    KANDINSKY22_TINY,
)
"""Every mask-editor card of the DiffSeg30k families; registered by ``generators/plugin.py``."""

DEFAULT_CARDS: frozenset[str] = frozenset(
    {
        "sd2.inpaint",
        "sd35.medium",
        "sdxl.inpaint",
        "flux1.fill",
        "kolors.blend",
        "hunyuandit.blend",
        "kandinsky22.inpaint",
        "glide.inpaint",
        *INSTRUCT_DEFAULTS,
    }
)
"""The default tag of each family: the bare family name resolves to it."""

TINY_EDITORS: dict[str, str] = {
    "sd2": SD2_TINY.name,
    "sd3.5": SD35_TINY.name,
    "sdxl": SDXL_TINY.name,
    "flux1": FLUX1_TINY.name,
    "glide": "glide.tiny",
    "kolors": KOLORS_TINY.name,
    "hunyuandit1.1": HUNYUANDIT_TINY.name,
    "kandinsky2.2": KANDINSKY22_TINY.name,
}
"""DiffSeg30k label name -> the tiny card the ``mini`` dataset edits with for that editor."""

SD_T2I_TINY = dataclasses.replace(
    tiny_card("sd-t2i.tiny", SD2_INPAINT, weights_seed=1),  # other weights than the sd2 editor
    description="tiny random-weight StableDiffusionPipeline (text to image) for AI base images",
    pipeline="StableDiffusionPipeline",
    native_inpaint=False,
)
"""Text-to-image card (not an editor, so not registered as a generator)."""

CARDS_BY_NAME: dict[str, GeneratorCard] = {
    c.name: c for c in (*GENERATOR_CARDS, *GLIDE_CARDS, *INSTRUCT_CARDS, SD_T2I_TINY)
}


def get_card(name: str) -> GeneratorCard:
    """Card by full name (the text-to-image card too, which is not registered) or bare family:
    its default tag, as the registry resolves it."""
    from diffzoo.harness.core.plugins import get_registry

    return CARDS_BY_NAME[name] if name in CARDS_BY_NAME else get_registry().get("generator", name).card
