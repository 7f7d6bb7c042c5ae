"""Tiny random-weight diffusers pipelines, built fully offline.

Every ``tiny`` generator card is the real pipeline class built from small
configs (taken from the shapes diffusers' own fast tests use) with random
weights; SD3.5, Kandinsky 2.2, Kolors and HunyuanDiT are built in
``tiny_extra.py``, the instruction editors (FLUX.2 [klein] and [dev],
Qwen-Image-Edit and its Plus / inpaint variants, LongCat) in ``tiny_instruct.py``.  Nothing is read
from the hub: tokenizers are made in code.  Each component is constructed
right after ``torch.manual_seed(seed)`` inside a forked RNG, so the same seed
gives identical weights in every process and the caller's global RNG is left
untouched.

The outputs are noise-like pictures; they exist to prove that the editing,
labelling and benchmarking code paths work end to end.
"""

from __future__ import annotations

import string
from collections.abc import Callable
from typing import Any

import torch

from ..harness.errors import ModelError

TINY_SEED = 0
CLIP_MAX_LENGTH = 77
TINY_TEXT_WIDTH = 32  # hidden size of every tiny text encoder


# -- tokenizers ------------------------------------------------------------------
def _byte_chars() -> list[str]:
    """GPT-2/CLIP byte-to-unicode table: 256 printable stand-ins for bytes."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, extra = list(keep), 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            chars.append(256 + extra)
            extra += 1
    return [chr(c) for c in chars]


def clip_tokenizer() -> Any:
    """A byte-level CLIP BPE tokenizer with a character vocabulary (514 ids).

    ``<|startoftext|>`` is id 0 and ``<|endoftext|>`` (also padding) id 1; the
    tiny CLIP text configs below use the same ids.
    """
    from transformers import CLIPTokenizer

    chars = _byte_chars()
    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for suffix in ("", "</w>"):
        for c in chars:
            vocab[c + suffix] = len(vocab)
    return CLIPTokenizer(vocab=vocab, merges=[], model_max_length=CLIP_MAX_LENGTH)


def t5_tokenizer() -> Any:
    """A unigram T5 tokenizer over letters, digits and punctuation."""
    from transformers import T5Tokenizer

    symbols = string.ascii_letters + string.digits + string.punctuation
    vocab = [("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("▁", -2.0)]
    vocab += [(c, -3.0) for c in symbols]
    vocab += [("▁" + c, -3.5) for c in string.ascii_letters]
    return T5Tokenizer(vocab=vocab, extra_ids=0)


# -- component builders ----------------------------------------------------------
def _seeded(seed: int, make: Callable[[], Any]) -> Any:
    """Build one component right after seeding, without touching global RNG state."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        module = make()
    if isinstance(module, torch.nn.Module):
        module.eval()
    return module


def _clip_text_config(projection_dim: int) -> Any:
    from transformers import CLIPTextConfig

    return CLIPTextConfig(
        bos_token_id=0,
        eos_token_id=1,
        pad_token_id=1,
        hidden_size=TINY_TEXT_WIDTH,
        intermediate_size=37,
        layer_norm_eps=1e-05,
        num_attention_heads=4,
        num_hidden_layers=5,
        vocab_size=1000,
        max_position_embeddings=CLIP_MAX_LENGTH,
        hidden_act="gelu",
        projection_dim=projection_dim,
    )


def _sd_unet(seed: int, in_channels: int, cross_dim: int, sdxl: bool = False) -> Any:
    from diffusers import UNet2DConditionModel

    extra: dict[str, Any] = {}
    if sdxl:
        extra = dict(
            addition_embed_type="text_time",
            addition_time_embed_dim=8,
            transformer_layers_per_block=(1, 2),
            projection_class_embeddings_input_dim=6 * 8 + TINY_TEXT_WIDTH,  # 6 time ids (no aesthetic score)
        )
    return _seeded(
        seed,
        lambda: UNet2DConditionModel(
            block_out_channels=(32, 64),
            layers_per_block=2,
            sample_size=32,
            in_channels=in_channels,
            out_channels=4,
            down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
            up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
            cross_attention_dim=cross_dim,
            attention_head_dim=(2, 4),
            use_linear_projection=True,
            **extra,
        ),
    )


def _sd_vae(seed: int) -> Any:
    from diffusers import AutoencoderKL

    return _seeded(
        seed,
        lambda: AutoencoderKL(
            block_out_channels=[32, 64],
            in_channels=3,
            out_channels=3,
            down_block_types=["DownEncoderBlock2D", "DownEncoderBlock2D"],
            up_block_types=["UpDecoderBlock2D", "UpDecoderBlock2D"],
            latent_channels=4,
            sample_size=128,
        ),
    )


def _flux_vae(seed: int) -> Any:
    from diffusers import AutoencoderKL

    return _seeded(
        seed,
        lambda: AutoencoderKL(
            sample_size=32,
            in_channels=3,
            out_channels=3,
            block_out_channels=(4,),
            layers_per_block=1,
            latent_channels=2,
            norm_num_groups=1,
            use_quant_conv=False,
            use_post_quant_conv=False,
            shift_factor=0.0609,
            scaling_factor=1.5035,
        ),
    )


def _t5_encoder(seed: int) -> Any:
    from transformers import T5Config, T5EncoderModel

    config = T5Config(
        vocab_size=len(t5_tokenizer()),
        d_model=TINY_TEXT_WIDTH,
        d_kv=8,
        d_ff=37,
        num_layers=2,
        num_heads=4,
        relative_attention_num_buckets=8,
        dropout_rate=0.0,
        pad_token_id=0,
        eos_token_id=1,
        decoder_start_token_id=0,
    )
    return _seeded(seed, lambda: T5EncoderModel(config))


def build_sd(seed: int = TINY_SEED, *, inpaint: bool = True) -> Any:
    """Tiny SD2-style pipeline: 9-channel inpaint UNet, or 4-channel text-to-image."""
    from diffusers import PNDMScheduler, StableDiffusionInpaintPipeline, StableDiffusionPipeline
    from transformers import CLIPTextModel

    cls = StableDiffusionInpaintPipeline if inpaint else StableDiffusionPipeline
    return cls(
        unet=_sd_unet(seed, 9 if inpaint else 4, TINY_TEXT_WIDTH),
        scheduler=PNDMScheduler(skip_prk_steps=True, steps_offset=1),
        vae=_sd_vae(seed),
        text_encoder=_seeded(seed, lambda: CLIPTextModel(_clip_text_config(512))),
        tokenizer=clip_tokenizer(),
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )


def build_sdxl(seed: int = TINY_SEED, *, unet_in_channels: int = 9) -> Any:
    """Tiny SDXL inpaint pipeline (9-channel like the inpainting-0.1 UNet, or 4-channel base)."""
    from diffusers import EulerDiscreteScheduler, StableDiffusionXLInpaintPipeline
    from transformers import CLIPTextModel, CLIPTextModelWithProjection

    config = _clip_text_config(TINY_TEXT_WIDTH)
    return StableDiffusionXLInpaintPipeline(
        unet=_sd_unet(seed, unet_in_channels, 2 * TINY_TEXT_WIDTH, sdxl=True),
        scheduler=EulerDiscreteScheduler(
            beta_start=0.00085,
            beta_end=0.012,
            steps_offset=1,
            beta_schedule="scaled_linear",
            timestep_spacing="leading",
        ),
        vae=_sd_vae(seed),
        text_encoder=_seeded(seed, lambda: CLIPTextModel(config)),
        tokenizer=clip_tokenizer(),
        text_encoder_2=_seeded(seed + 1, lambda: CLIPTextModelWithProjection(config)),
        tokenizer_2=clip_tokenizer(),
        requires_aesthetics_score=False,
        add_watermarker=False,
    )


def build_flux(seed: int = TINY_SEED, *, fill: bool = True) -> Any:
    """Tiny Flux.1 pipeline: FluxFill (20 input channels) or FluxInpaint (8)."""
    from diffusers import (
        FlowMatchEulerDiscreteScheduler,
        FluxFillPipeline,
        FluxInpaintPipeline,
        FluxTransformer2DModel,
    )
    from transformers import CLIPTextModel

    transformer = _seeded(
        seed,
        lambda: FluxTransformer2DModel(
            patch_size=1,
            in_channels=20 if fill else 8,
            out_channels=8,
            num_layers=1,
            num_single_layers=1,
            attention_head_dim=16,
            num_attention_heads=2,
            joint_attention_dim=TINY_TEXT_WIDTH,
            pooled_projection_dim=TINY_TEXT_WIDTH,
            axes_dims_rope=[4, 4, 8],
        ),
    )
    cls = FluxFillPipeline if fill else FluxInpaintPipeline
    return cls(
        scheduler=FlowMatchEulerDiscreteScheduler(),
        vae=_flux_vae(seed),
        text_encoder=_seeded(seed, lambda: CLIPTextModel(_clip_text_config(TINY_TEXT_WIDTH))),
        tokenizer=clip_tokenizer(),
        text_encoder_2=_t5_encoder(seed),
        tokenizer_2=t5_tokenizer(),
        transformer=transformer,
    )


LORA_TARGETS = ("to_q", "to_k", "to_v", "to_out.0")


def tiny_lora_state_dict(pipe: Any, seed: int, rank: int = 4) -> dict[str, Any]:
    """A random LoRA (diffusers/peft layout) for the attention projections of ``pipe``'s denoiser.

    Both factors are random (a trained LoRA's ``B`` is not zero either), scaled
    so the low-rank update is about as large as the layer's input: the edit
    visibly changes, as a real distilled LoRA changes its base model.
    """
    prefix = "unet" if getattr(pipe, "unet", None) is not None else "transformer"
    denoiser = getattr(pipe, prefix)
    generator = torch.Generator().manual_seed(seed)
    state: dict[str, Any] = {}
    for name, module in denoiser.named_modules():
        if isinstance(module, torch.nn.Linear) and name.endswith(LORA_TARGETS):
            a = torch.randn(rank, module.in_features, generator=generator) / module.in_features**0.5
            b = torch.randn(module.out_features, rank, generator=generator) / rank**0.5
            state[f"{prefix}.{name}.lora_A.weight"] = a
            state[f"{prefix}.{name}.lora_B.weight"] = b
    if not state:
        raise ModelError(f"{type(pipe).__name__}: no attention projections to attach a tiny LoRA to")
    return state


TINY_BUILDERS: dict[str, Callable[..., Any]] = {
    "StableDiffusionInpaintPipeline": lambda seed, **o: build_sd(seed, inpaint=True),
    "StableDiffusionPipeline": lambda seed, **o: build_sd(seed, inpaint=False),
    "StableDiffusionXLInpaintPipeline": lambda seed, **o: build_sdxl(
        seed, unet_in_channels=int(o.get("unet_in_channels", 9))
    ),
    "FluxFillPipeline": lambda seed, **o: build_flux(seed, fill=True),
    "FluxInpaintPipeline": lambda seed, **o: build_flux(seed, fill=False),
    "StableDiffusion3InpaintPipeline": lambda seed, **o: _extra().build_sd3(seed),
    "KandinskyV22InpaintCombinedPipeline": lambda seed, **o: _extra().build_kandinsky22(seed),
    "KolorsPipeline": lambda seed, **o: _extra().build_kolors(seed),
    "HunyuanDiTPipeline": lambda seed, **o: _extra().build_hunyuandit(seed),
    "Flux2KleinPipeline": lambda seed, **o: _instruct().build_flux2_klein(seed),
    "Flux2KleinInpaintPipeline": lambda seed, **o: _instruct().build_flux2_klein(seed, inpaint=True),
    "Flux2Pipeline": lambda seed, **o: _instruct().build_flux2_dev(seed),
    "QwenImageEditPipeline": lambda seed, **o: _instruct().build_qwen_edit(seed),
    "QwenImageEditPlusPipeline": lambda seed, **o: _instruct().build_qwen_edit(seed, variant="plus"),
    "QwenImageEditInpaintPipeline": lambda seed, **o: _instruct().build_qwen_edit(seed, variant="inpaint"),
    "LongCatImageEditPipeline": lambda seed, **o: _instruct().build_longcat_edit(seed),
}


def _extra() -> Any:
    """``tiny_extra`` (SD3.5, Kandinsky 2.2, Kolors, HunyuanDiT), imported on use: it imports this module."""
    from . import tiny_extra

    return tiny_extra


def _instruct() -> Any:
    """``tiny_instruct`` (the instruction editors' tiny builds), imported on use."""
    from . import tiny_instruct

    return tiny_instruct


def build_tiny_pipeline(card: Any, seed: int | None = None) -> Any:
    """The tiny pipeline for a ``tiny=True`` GeneratorCard (weights seed from the card)."""
    builder = TINY_BUILDERS.get(card.pipeline)
    if builder is None:
        raise ModelError(
            f"no tiny build for pipeline {card.pipeline!r} (card {card.name!r}); "
            f"tiny builds exist for: {', '.join(sorted(TINY_BUILDERS))}"
        )
    options = dict(card.options)
    weights_seed = int(options.pop("weights_seed", TINY_SEED) if seed is None else seed)
    pipe = builder(weights_seed, **options)
    pipe.set_progress_bar_config(disable=True)
    return pipe
