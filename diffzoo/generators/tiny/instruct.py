"""Tiny random-weight builds of the instruction editors, offline (same rules as ``builders.py``).

* FLUX.2 [klein] (``Flux2KleinPipeline``: reference-image editing, and
  ``Flux2KleinInpaintPipeline``): a 3-layer Qwen3 text encoder with the
  byte-level tokenizer of ``qwen.py``; the cards pass
  ``text_encoder_out_layers=(1, 2, 3)`` (the real model reads 9, 18, 27).
* FLUX.2 [dev] (``Flux2Pipeline``): a 3-layer ``Mistral3ForConditionalGeneration``
  and the ``PixtralProcessor`` of :func:`mistral_processor` (a byte-level BPE
  ``TokenizersBackend`` with Mistral's control tokens and a chat template,
  made in code; the real one loads ``tokenizer.json`` the same way when
  ``mistral-common`` is not installed).  Read at layers 1, 2, 3 (real: 10, 20, 30).
* Qwen-Image-Edit (``QwenImageEditPipeline``), its Plus / 2509 pipeline
  (``QwenImageEditPlusPipeline``, also FireRed's) and its inpainting
  pipeline, and LongCat-Image-Edit (``LongCatImageEditPipeline``): the tiny
  Qwen2.5-VL of ``qwen.py``, an 8x VAE (like the real ones) and a small
  transformer.  These pipelines resize the input to about one megapixel
  before the VAE whatever size is asked (LongCat also returns that size), so
  a tiny call encodes a 1024 x 1024 picture: about 3 s on one CPU core.

FLUX.2 shapes follow diffusers' fast tests (a 1-block VAE with one latent
channel, a 1+1-layer transformer); the Qwen shapes too, with one more VAE
level.
"""

from __future__ import annotations

from typing import Any

from diffzoo.generators.tiny.components import FLUX_BLOCKS, NO_QUANT, byte_chars, kl_vae, seeded
from diffzoo.generators.tiny.qwen import QWEN_VL_TOKENS, qwen_tokenizer, qwen_vl_encoder, qwen_vl_processor

TINY_TEXT_WIDTH = 16  # hidden size of the tiny Qwen3 and Mistral text models
TINY_TEXT_LAYERS = 3  # both are read at layers (1, 2, 3) and stacked: joint width 48
TEXT_MODEL = {"hidden_size": TINY_TEXT_WIDTH, "intermediate_size": 16, "num_hidden_layers": TINY_TEXT_LAYERS,
              "num_attention_heads": 2, "num_key_value_heads": 2, "head_dim": 8, "max_position_embeddings": 512}
"""The shape the tiny Qwen3 and Mistral text models share."""
MISTRAL_SPECIAL = (
    "<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]",
    "[IMG]", "[IMG_BREAK]", "[IMG_END]", "<pad>",
)  # fmt: skip
"""Mistral's control tokens, ids 0-10; the 256 byte symbols follow."""
MISTRAL_CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}"
    "{% if m['role'] == 'system' %}[SYSTEM_PROMPT]{% elif m['role'] == 'user' %}[INST]{% endif %}"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
    "{% if c['type'] == 'text' %}{{ c['text'] }}{% else %}[IMG]{% endif %}{% endfor %}{% endif %}"
    "{% if m['role'] == 'system' %}[/SYSTEM_PROMPT]{% elif m['role'] == 'user' %}[/INST]"
    "{% else %}{{ eos_token }}{% endif %}{% endfor %}"
)
"""Mistral-Small-3.1's conversation layout (text and image parts), without its tool and date handling."""


# -- FLUX.2 --------------------------------------------------------------------------
def mistral_processor() -> Any:
    """FLUX.2 [dev]'s tokenizer: a ``PixtralProcessor`` over a byte-level BPE tokenizer made in code."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PixtralImageProcessor, PixtralProcessor, TokenizersBackend

    vocab = {token: i for i, token in enumerate(MISTRAL_SPECIAL)}
    vocab.update({c: len(MISTRAL_SPECIAL) + i for i, c in enumerate(byte_chars())})
    bpe = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    bpe.decoder = decoders.ByteLevel()
    tokenizer = TokenizersBackend(
        tokenizer_object=bpe,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
        additional_special_tokens=list(MISTRAL_SPECIAL[3:10]),
    )
    return PixtralProcessor(
        image_processor=PixtralImageProcessor(),
        tokenizer=tokenizer,
        patch_size=16,
        spatial_merge_size=2,
        chat_template=MISTRAL_CHAT_TEMPLATE,
    )


def _mistral_encoder(seed: int, tokenizer: Any) -> Any:
    from transformers import Mistral3Config, Mistral3ForConditionalGeneration

    ids = tokenizer.convert_tokens_to_ids
    config = Mistral3Config(
        text_config={
            "model_type": "mistral",
            "vocab_size": len(tokenizer),
            **TEXT_MODEL,
            "rope_theta": 1000000000.0,
            "sliding_window": None,
            "bos_token_id": ids("<s>"),
            "eos_token_id": ids("</s>"),
            "pad_token_id": ids("<pad>"),
        },
        vision_config={
            "model_type": "pixtral",
            "hidden_size": 16,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "head_dim": 8,
            "intermediate_size": 16,
            "image_size": 32,
            "patch_size": 16,
            "num_channels": 3,
        },
        image_token_index=ids("[IMG]"),
        spatial_merge_size=2,
        vision_feature_layer=-1,
    )
    return seeded(seed, lambda: Mistral3ForConditionalGeneration(config))


def _flow_pipeline(cls: Any, transformer: Any, vae: Any, text_encoder: Any, tokenizer: Any, **more: Any) -> Any:
    """Pipeline class ``cls`` over these modules (``more``: its further ones) and a default
    ``FlowMatchEulerDiscreteScheduler``, as every tiny instruction editor is assembled."""
    from diffusers import FlowMatchEulerDiscreteScheduler

    return cls(scheduler=FlowMatchEulerDiscreteScheduler(), vae=vae, text_encoder=text_encoder, tokenizer=tokenizer,
               transformer=transformer, **more)  # fmt: skip


def _flux2_denoiser_and_vae(seed: int, *, guidance_embeds: bool) -> tuple[Any, Any]:
    """The tiny FLUX.2 transformer (text width: the stacked hidden states) and its 1-channel VAE."""
    from diffusers import AutoencoderKLFlux2, Flux2Transformer2DModel

    transformer = seeded(
        seed,
        lambda: Flux2Transformer2DModel(
            **FLUX_BLOCKS,
            in_channels=4,  # 1 latent channel, 2x2-patchified
            joint_attention_dim=TINY_TEXT_LAYERS * TINY_TEXT_WIDTH,
            timestep_guidance_channels=256,
            axes_dims_rope=[4, 4, 4, 4],
            guidance_embeds=guidance_embeds,
        ),
    )
    return transformer, kl_vae(seed, (4,), 1, 1, cls=AutoencoderKLFlux2, sample_size=32, **NO_QUANT)


def build_flux2_klein(seed: int, *, pipeline: str, **_: Any) -> Any:
    """Tiny ``Flux2KleinPipeline`` (or ``Flux2KleinInpaintPipeline``) with a Qwen3 text encoder."""
    import diffusers
    from transformers import Qwen3Config, Qwen3ForCausalLM

    tokenizer = qwen_tokenizer()
    text_config = Qwen3Config(vocab_size=len(tokenizer), **TEXT_MODEL)
    return _flow_pipeline(getattr(diffusers, pipeline), *_flux2_denoiser_and_vae(seed, guidance_embeds=False),
                          seeded(seed, lambda: Qwen3ForCausalLM(text_config)), tokenizer)  # fmt: skip


def build_flux2_dev(seed: int, **_: Any) -> Any:
    """Tiny ``Flux2Pipeline`` (FLUX.2 [dev]: guidance-embedded transformer, Mistral-3 text encoder)."""
    from diffusers import Flux2Pipeline

    processor = mistral_processor()
    return _flow_pipeline(Flux2Pipeline, *_flux2_denoiser_and_vae(seed, guidance_embeds=True),
                          _mistral_encoder(seed, processor.tokenizer), processor)  # fmt: skip


# -- Qwen2.5-VL conditioned editors ----------------------------------------------------
def build_qwen_edit(seed: int, *, pipeline: str, **_: Any) -> Any:
    """Tiny Qwen-Image-Edit: ``pipeline`` its edit, Plus (2509, FireRed) or mask-inpaint class."""
    import diffusers
    from diffusers import AutoencoderKLQwenImage, QwenImageTransformer2DModel

    z_dim = 4
    transformer = seeded(
        seed,
        lambda: QwenImageTransformer2DModel(
            patch_size=2,
            in_channels=4 * z_dim,
            out_channels=z_dim,
            num_layers=2,
            attention_head_dim=16,
            num_attention_heads=3,
            joint_attention_dim=16,
            guidance_embeds=False,
            axes_dims_rope=(8, 4, 4),
        ),
    )
    vae = seeded(
        seed,
        lambda: AutoencoderKLQwenImage(
            base_dim=4,
            z_dim=z_dim,
            dim_mult=[1, 1, 1, 1],
            num_res_blocks=1,
            temperal_downsample=[False, True, True],  # 3 levels: 8x, as the real VAE
            latents_mean=[0.0] * z_dim,
            latents_std=[1.0] * z_dim,
        ),
    )
    tokenizer = qwen_tokenizer(*QWEN_VL_TOKENS)
    return _flow_pipeline(getattr(diffusers, pipeline), transformer, vae,
                          qwen_vl_encoder(seed, tokenizer), tokenizer, processor=qwen_vl_processor(tokenizer))


def build_longcat_edit(seed: int, **_: Any) -> Any:
    """Tiny ``LongCatImageEditPipeline``: 16-channel 8x VAE (the pipeline hard-codes 16 latent channels)."""
    from diffusers import LongCatImageEditPipeline, LongCatImageTransformer2DModel

    transformer = seeded(
        seed,
        lambda: LongCatImageTransformer2DModel(
            **FLUX_BLOCKS,
            in_channels=64,  # 16 latent channels, 2x2-packed
            joint_attention_dim=16,
            pooled_projection_dim=16,
            axes_dims_rope=[4, 6, 6],  # (modality, row, column); sums to the head width
        ),
    )
    vae = kl_vae(seed, (4, 4, 4, 4), 16, 1, **NO_QUANT, shift_factor=0.0, scaling_factor=1.0)  # read both; None fails
    tokenizer = qwen_tokenizer(*QWEN_VL_TOKENS)
    return _flow_pipeline(LongCatImageEditPipeline, transformer, vae, qwen_vl_encoder(seed, tokenizer), tokenizer,
                          text_processor=qwen_vl_processor(tokenizer))
