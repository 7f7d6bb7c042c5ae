"""Tiny random-weight builds of the instruction editors, offline (same rules as ``tiny.py``).

FLUX.2 [klein] (``Flux2KleinPipeline``: reference-image editing, and
``Flux2KleinInpaintPipeline``) is built here: its text encoder is a plain
Qwen3 causal LM, so a tiny one needs only a byte-level ``Qwen2Tokenizer``
with a chat template, made in code.  Shapes follow diffusers' fast tests
(a 1-block VAE with one latent channel, a 1+1-layer transformer).  The tiny
Qwen3 has 3 layers; the cards pass ``text_encoder_out_layers=(1, 2, 3)``
(the real model reads layers 9, 18, 27).

Not built (see docs/generators.md): Qwen-Image-Edit and LongCat (their
pipelines resize every input to about one megapixel and run a Qwen2.5-VL
vision tower on it, seconds per tiny call) and FLUX.2 [dev] (its Mistral-3
processor has no offline constructor short of writing a tekken tokenizer).
"""

from __future__ import annotations

from typing import Any

from .tiny import _byte_chars, _seeded

QWEN_CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
TINY_QWEN3_WIDTH = 16
TINY_QWEN3_LAYERS = 3


def qwen_tokenizer() -> Any:
    """A byte-level ``Qwen2Tokenizer`` (256 byte symbols, no merges) with the chat markers."""
    from transformers import Qwen2Tokenizer

    tokenizer = Qwen2Tokenizer(vocab={c: i for i, c in enumerate(_byte_chars())}, merges=[])
    tokenizer.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    tokenizer.chat_template = QWEN_CHAT_TEMPLATE
    return tokenizer


def build_flux2_klein(seed: int, *, inpaint: bool = False) -> Any:
    """Tiny ``Flux2KleinPipeline`` (or ``Flux2KleinInpaintPipeline``) with a Qwen3 text encoder."""
    from diffusers import (
        AutoencoderKLFlux2,
        FlowMatchEulerDiscreteScheduler,
        Flux2KleinInpaintPipeline,
        Flux2KleinPipeline,
        Flux2Transformer2DModel,
    )
    from transformers import Qwen3Config, Qwen3ForCausalLM

    tokenizer = qwen_tokenizer()
    text_config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=TINY_QWEN3_WIDTH,
        intermediate_size=16,
        num_hidden_layers=TINY_QWEN3_LAYERS,
        num_attention_heads=2,
        num_key_value_heads=2,
        head_dim=8,
        max_position_embeddings=512,
    )
    transformer = _seeded(
        seed,
        lambda: Flux2Transformer2DModel(
            patch_size=1,
            in_channels=4,  # 1 latent channel, 2x2-patchified
            num_layers=1,
            num_single_layers=1,
            attention_head_dim=16,
            num_attention_heads=2,
            joint_attention_dim=TINY_QWEN3_LAYERS * TINY_QWEN3_WIDTH,  # the stacked hidden states
            timestep_guidance_channels=256,
            axes_dims_rope=[4, 4, 4, 4],
            guidance_embeds=False,
        ),
    )
    vae = _seeded(
        seed,
        lambda: AutoencoderKLFlux2(
            sample_size=32,
            in_channels=3,
            out_channels=3,
            down_block_types=("DownEncoderBlock2D",),
            up_block_types=("UpDecoderBlock2D",),
            block_out_channels=(4,),
            layers_per_block=1,
            latent_channels=1,
            norm_num_groups=1,
            use_quant_conv=False,
            use_post_quant_conv=False,
        ),
    )
    cls = Flux2KleinInpaintPipeline if inpaint else Flux2KleinPipeline
    return cls(
        scheduler=FlowMatchEulerDiscreteScheduler(),
        vae=vae,
        text_encoder=_seeded(seed, lambda: Qwen3ForCausalLM(text_config)),
        tokenizer=tokenizer,
        transformer=transformer,
    )
