"""Tiny SD2, SDXL and Flux.1 pipelines (the diffusers classes, random weights)."""

from __future__ import annotations

from typing import Any

from diffzoo.generators.tiny.components import (
    FLUX_BLOCKS,
    SD3_LATENTS,
    TINY_SEED,
    TINY_TEXT_WIDTH,
    clip_text_encoder,
    clip_tokenizer,
    kl_vae,
    sd_unet,
    sd_vae,
    sdxl_scheduler,
    seeded,
    t5_encoder,
    t5_tokenizer,
)


def build_sd(seed: int = TINY_SEED, *, inpaint: bool = True) -> Any:
    """Tiny SD2-style pipeline: 9-channel inpaint UNet, or 4-channel text-to-image."""
    from diffusers import PNDMScheduler, StableDiffusionInpaintPipeline, StableDiffusionPipeline

    cls = StableDiffusionInpaintPipeline if inpaint else StableDiffusionPipeline
    return cls(
        unet=sd_unet(seed, 9 if inpaint else 4, TINY_TEXT_WIDTH),
        scheduler=PNDMScheduler(skip_prk_steps=True, steps_offset=1),
        vae=sd_vae(seed),
        text_encoder=clip_text_encoder(seed, 512),
        tokenizer=clip_tokenizer(),
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )


def build_sdxl(seed: int = TINY_SEED, *, unet_in_channels: int = 9) -> Any:
    """Tiny SDXL inpaint pipeline (9-channel like the inpainting-0.1 UNet, or 4-channel base)."""
    from diffusers import StableDiffusionXLInpaintPipeline

    return StableDiffusionXLInpaintPipeline(
        unet=sd_unet(seed, unet_in_channels, 2 * TINY_TEXT_WIDTH, sdxl=True),
        scheduler=sdxl_scheduler(),
        vae=sd_vae(seed),
        text_encoder=clip_text_encoder(seed),
        tokenizer=clip_tokenizer(),
        text_encoder_2=clip_text_encoder(seed + 1, projection=True),
        tokenizer_2=clip_tokenizer(),
        requires_aesthetics_score=False,
        add_watermarker=False,
    )


def build_flux(seed: int = TINY_SEED, *, fill: bool = True) -> Any:
    """Tiny Flux.1 pipeline: FluxFill (20 input channels) or FluxInpaint (8)."""
    from diffusers import FlowMatchEulerDiscreteScheduler, FluxFillPipeline, FluxInpaintPipeline, FluxTransformer2DModel

    transformer = seeded(
        seed,
        lambda: FluxTransformer2DModel(
            **FLUX_BLOCKS,
            in_channels=20 if fill else 8,
            out_channels=8,
            joint_attention_dim=TINY_TEXT_WIDTH,
            pooled_projection_dim=TINY_TEXT_WIDTH,
            axes_dims_rope=[4, 4, 8],
        ),
    )
    cls = FluxFillPipeline if fill else FluxInpaintPipeline
    return cls(
        scheduler=FlowMatchEulerDiscreteScheduler(),
        vae=kl_vae(seed, (4,), 2, 1, sample_size=32, **SD3_LATENTS),
        text_encoder=clip_text_encoder(seed),
        tokenizer=clip_tokenizer(),
        text_encoder_2=t5_encoder(seed),
        tokenizer_2=t5_tokenizer(),
        transformer=transformer,
    )
