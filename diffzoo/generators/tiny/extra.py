"""Tiny random-weight builds of the mask editors: SD2, SDXL, Flux.1, SD3.5, Kandinsky 2.2, Kolors and HunyuanDiT.

Same rules as ``builders.py`` (tokenizers and seeding helper from ``components.py``):
the real diffusers pipeline classes, component shapes taken from diffusers'
own fast tests, every component built right after ``torch.manual_seed`` in a
forked RNG, nothing read from the hub.  Two text stacks are new here:

- Kolors' ChatGLM tokenizer wraps a sentencepiece model file, so a
  character-level model is trained in memory on a fixed text (a few
  milliseconds, deterministic) and written to a temporary file for loading.
  ChatGLM needs ``original_rope=True``, ``empty_init=False`` and RMSNorm
  weights of one (its init leaves them empty, which gives NaN).
- HunyuanDiT's BERT tokenizer takes a vocabulary dict directly.  HunyuanDiT
  hard-codes ``height // 8`` for its rotary grid, so its tiny VAE downsamples
  8x (four blocks).
"""

from __future__ import annotations

import io
import os
import string
import tempfile
from functools import lru_cache
from typing import Any

import torch

from diffzoo.generators.diffusers_classes import diffusers_class
from diffzoo.generators.tiny.components import (
    FLUX_BLOCKS,
    SD3_LATENTS,
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
from diffzoo.harness.core.errors import ModelError

KOLORS_TEXT = (
    "a photo of a red cup on a wooden table. the quick brown fox jumps over the lazy dog. "
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ abcdefghijklmnopqrstuvwxyz 0123456789 " + string.punctuation
)


# -- SD2, SDXL, Flux.1 ----------------------------------------------------------
def build_sd(seed: int, *, pipeline: str, **_: Any) -> Any:
    """Tiny SD2-style pipeline: 9-channel inpaint UNet, or 4-channel text-to-image."""
    import diffusers
    from diffusers import PNDMScheduler

    return getattr(diffusers, pipeline)(
        unet=sd_unet(seed, 9 if pipeline == "StableDiffusionInpaintPipeline" else 4, TINY_TEXT_WIDTH),
        scheduler=PNDMScheduler(skip_prk_steps=True, steps_offset=1),
        vae=sd_vae(seed),
        text_encoder=clip_text_encoder(seed, 512),
        tokenizer=clip_tokenizer(),
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )


def build_sdxl(seed: int, *, unet_in_channels: int = 9, **_: Any) -> Any:
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


def build_flux(seed: int, *, pipeline: str, **_: Any) -> Any:
    """Tiny Flux.1 pipeline: FluxFill (20 input channels) or FluxInpaint (8)."""
    import diffusers
    from diffusers import FlowMatchEulerDiscreteScheduler, FluxTransformer2DModel

    transformer = seeded(
        seed,
        lambda: FluxTransformer2DModel(
            **FLUX_BLOCKS,
            in_channels=20 if pipeline == "FluxFillPipeline" else 8,
            out_channels=8,
            joint_attention_dim=TINY_TEXT_WIDTH,
            pooled_projection_dim=TINY_TEXT_WIDTH,
            axes_dims_rope=[4, 4, 8],
        ),
    )
    return getattr(diffusers, pipeline)(
        scheduler=FlowMatchEulerDiscreteScheduler(),
        vae=kl_vae(seed, (4,), 2, 1, sample_size=32, **SD3_LATENTS),
        text_encoder=clip_text_encoder(seed),
        tokenizer=clip_tokenizer(),
        text_encoder_2=t5_encoder(seed),
        tokenizer_2=t5_tokenizer(),
        transformer=transformer,
    )


# -- SD3.5 -----------------------------------------------------------------------
def build_sd3(seed: int, **_: Any) -> Any:
    """Tiny StableDiffusion3InpaintPipeline: 2 CLIP + T5 text encoders, 16-channel latents."""
    from diffusers import FlowMatchEulerDiscreteScheduler, SD3Transformer2DModel, StableDiffusion3InpaintPipeline

    transformer = seeded(
        seed,
        lambda: SD3Transformer2DModel(
            sample_size=32,
            patch_size=2,  # diffusers' test uses 1 with a 1x VAE; 2x VAE + patch 2 is 16x fewer tokens
            in_channels=16,
            num_layers=1,
            attention_head_dim=8,
            num_attention_heads=4,
            joint_attention_dim=TINY_TEXT_WIDTH,
            caption_projection_dim=32,
            pooled_projection_dim=2 * TINY_TEXT_WIDTH,
            out_channels=16,
        ),
    )
    return StableDiffusion3InpaintPipeline(
        transformer=transformer,
        scheduler=FlowMatchEulerDiscreteScheduler(),
        vae=kl_vae(seed, (8, 16), 16, 4, **SD3_LATENTS),
        text_encoder=clip_text_encoder(seed, projection=True),
        tokenizer=clip_tokenizer(),
        text_encoder_2=clip_text_encoder(seed + 1, projection=True),
        tokenizer_2=clip_tokenizer(),
        text_encoder_3=t5_encoder(seed),
        tokenizer_3=t5_tokenizer(),
    )


# -- Kandinsky 2.2 -----------------------------------------------------------------
def build_kandinsky22(seed: int, **_: Any) -> Any:
    """Tiny KandinskyV22InpaintCombinedPipeline: CLIP prior + 9-channel MoVQ-latent UNet."""
    from diffusers import (
        DDIMScheduler,
        KandinskyV22InpaintCombinedPipeline,
        PriorTransformer,
        UnCLIPScheduler,
        UNet2DConditionModel,
        VQModel,
    )
    from transformers import CLIPImageProcessor, CLIPVisionConfig, CLIPVisionModelWithProjection

    width = TINY_TEXT_WIDTH  # CLIP image-embedding size shared by prior and decoder

    def prior() -> Any:
        model = PriorTransformer(num_attention_heads=2, attention_head_dim=12, embedding_dim=width, num_layers=1)
        # clip_std starts at 0, which would make every image embedding 0
        model.clip_std = torch.nn.Parameter(torch.ones(model.clip_std.shape))
        return model

    vision = CLIPVisionConfig(
        hidden_size=width,
        image_size=32,  # the prior only encodes a blank image (its zero embedding)
        projection_dim=width,
        intermediate_size=37,
        num_attention_heads=4,
        num_channels=3,
        num_hidden_layers=5,
        patch_size=8,
    )
    unet = seeded(
        seed,
        lambda: UNet2DConditionModel(
            in_channels=9,
            out_channels=8,  # mean and variance
            addition_embed_type="image",
            down_block_types=("ResnetDownsampleBlock2D", "SimpleCrossAttnDownBlock2D"),
            up_block_types=("SimpleCrossAttnUpBlock2D", "ResnetUpsampleBlock2D"),
            mid_block_type="UNetMidBlock2DSimpleCrossAttn",
            block_out_channels=(32, 64),
            layers_per_block=1,
            encoder_hid_dim=width,
            encoder_hid_dim_type="image_proj",
            cross_attention_dim=32,
            attention_head_dim=4,
            resnet_time_scale_shift="scale_shift",
            class_embed_type=None,
        ),
    )
    movq = seeded(
        seed,
        lambda: VQModel(
            block_out_channels=[32, 64],
            down_block_types=["DownEncoderBlock2D", "AttnDownEncoderBlock2D"],
            in_channels=3,
            latent_channels=4,
            layers_per_block=1,
            norm_num_groups=8,
            norm_type="spatial",
            num_vq_embeddings=12,
            out_channels=3,
            up_block_types=["AttnUpDecoderBlock2D", "UpDecoderBlock2D"],
            vq_embed_dim=4,
        ),
    )
    return KandinskyV22InpaintCombinedPipeline(
        unet=unet,
        scheduler=DDIMScheduler(
            num_train_timesteps=1000,
            beta_schedule="linear",
            beta_start=0.00085,
            beta_end=0.012,
            clip_sample=False,
            set_alpha_to_one=False,
            steps_offset=1,
            prediction_type="epsilon",
            thresholding=False,
        ),
        movq=movq,
        prior_prior=seeded(seed, prior),
        prior_image_encoder=seeded(seed, lambda: CLIPVisionModelWithProjection(vision)),
        prior_text_encoder=clip_text_encoder(seed, width, projection=True),
        prior_tokenizer=clip_tokenizer(),
        prior_scheduler=UnCLIPScheduler(
            variance_type="fixed_small_log",
            prediction_type="sample",
            num_train_timesteps=1000,
            clip_sample=True,
            clip_sample_range=10.0,
        ),
        prior_image_processor=CLIPImageProcessor(
            crop_size=32,
            do_center_crop=True,
            do_normalize=True,
            do_resize=True,
            image_mean=[0.48145466, 0.4578275, 0.40821073],
            image_std=[0.26862954, 0.26130258, 0.27577711],
            resample=3,
            size=32,
        ),
    )


# -- Kolors ------------------------------------------------------------------------
@lru_cache(maxsize=1)
def _chatglm_sentencepiece() -> bytes:
    """A character-level sentencepiece model trained on ``KOLORS_TEXT`` (deterministic)."""
    try:
        import sentencepiece as spm
    except ImportError as exc:
        raise ModelError(
            "Kolors' ChatGLM tokenizer needs the `sentencepiece` package: pip install sentencepiece"
        ) from exc
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(KOLORS_TEXT.split(". ")),
        model_writer=buf,
        model_type="char",
        vocab_size=64,
        hard_vocab_limit=False,
        character_coverage=1.0,
        num_threads=1,
        minloglevel=2,
    )
    return buf.getvalue()


def chatglm_tokenizer() -> Any:
    """Kolors' ChatGLMTokenizer over a tiny character vocabulary, built offline."""
    ChatGLMTokenizer = diffusers_class("ChatGLMTokenizer", "diffusers.pipelines.kolors")
    with tempfile.TemporaryDirectory(prefix="diffzoo-chatglm-") as tmp:
        path = os.path.join(tmp, "tokenizer.model")
        with open(path, "wb") as fh:
            fh.write(_chatglm_sentencepiece())
        return ChatGLMTokenizer(path)  # the sentencepiece model is read into memory here


def _chatglm(seed: int, vocab_size: int) -> Any:
    ChatGLMConfig = diffusers_class("ChatGLMConfig", "diffusers.pipelines.kolors.text_encoder")
    ChatGLMModel = diffusers_class("ChatGLMModel", "diffusers.pipelines.kolors")
    config = ChatGLMConfig(
        num_layers=2,
        padded_vocab_size=vocab_size,
        hidden_size=TINY_TEXT_WIDTH,
        ffn_hidden_size=37,
        kv_channels=8,
        num_attention_heads=4,
        seq_length=256,  # rotary cache length: Kolors encodes up to 256 tokens
        original_rope=True,
    )

    def make() -> Any:
        model = ChatGLMModel(config, empty_init=False)
        with torch.no_grad():
            for module in model.modules():
                if type(module).__name__ == "RMSNorm":
                    module.weight.fill_(1.0)
        return model

    return seeded(seed, make)


def build_kolors(seed: int, **_: Any) -> Any:
    """Tiny KolorsPipeline (SDXL-style UNet conditioned on ChatGLM), text to image only."""
    KolorsPipeline = diffusers_class("KolorsPipeline")
    tokenizer = chatglm_tokenizer()
    return KolorsPipeline(
        vae=sd_vae(seed),
        text_encoder=_chatglm(seed, tokenizer.vocab_size),
        tokenizer=tokenizer,
        unet=sd_unet(seed, 4, TINY_TEXT_WIDTH, sdxl=True),
        scheduler=sdxl_scheduler(),
        image_encoder=None,
        feature_extractor=None,
    )


# -- HunyuanDiT --------------------------------------------------------------------
def bert_tokenizer() -> Any:
    """A BERT WordPiece tokenizer with a character vocabulary (HunyuanDiT's first encoder)."""
    from transformers import BertTokenizer

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    chars = string.ascii_lowercase + string.digits + string.punctuation
    tokens = specials + list(chars) + ["##" + c for c in chars]
    return BertTokenizer(vocab={t: i for i, t in enumerate(tokens)})


def build_hunyuandit(seed: int, **_: Any) -> Any:
    """Tiny HunyuanDiTPipeline (BERT + T5 text encoders, 8x VAE), text to image only."""
    from diffusers import DDPMScheduler, HunyuanDiT2DModel, HunyuanDiTPipeline
    from transformers import BertConfig, BertModel

    tokenizer = bert_tokenizer()
    bert = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=TINY_TEXT_WIDTH,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        max_position_embeddings=128,
    )
    transformer = seeded(
        seed,
        lambda: HunyuanDiT2DModel(
            sample_size=16,
            num_layers=2,
            patch_size=2,
            attention_head_dim=8,
            num_attention_heads=3,
            in_channels=4,
            cross_attention_dim=TINY_TEXT_WIDTH,
            cross_attention_dim_t5=TINY_TEXT_WIDTH,
            pooled_projection_dim=16,
            hidden_size=24,
            activation_fn="gelu-approximate",
        ),
    )
    return HunyuanDiTPipeline(
        vae=kl_vae(seed, (8, 8, 16, 16), 4, 4),
        text_encoder=seeded(seed, lambda: BertModel(bert, add_pooling_layer=False)),
        tokenizer=tokenizer,
        transformer=transformer,
        scheduler=DDPMScheduler(),
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
        text_encoder_2=t5_encoder(seed),
        tokenizer_2=t5_tokenizer(),
    )
