"""Tiny random-weight components shared by every tiny build: tokenizers made in
code, seeded construction, small UNet/VAE/text-encoder configs, random LoRAs.

Each component is constructed right after ``torch.manual_seed(seed)`` inside a
forked RNG, so the same seed gives identical weights in every process and the
caller's global RNG is left untouched.
"""

from __future__ import annotations

import string
from collections.abc import Callable
from typing import Any

import torch

from diffzoo.harness.core.errors import ModelError

TINY_SEED = 0
CLIP_MAX_LENGTH = 77
TINY_TEXT_WIDTH = 32  # hidden size of every tiny text encoder


# -- tokenizers ------------------------------------------------------------------
def byte_chars() -> list[str]:
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

    chars = byte_chars()
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
def seeded(seed: int, make: Callable[[], Any]) -> Any:
    """Build one component right after seeding, without touching global RNG state."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        module = make()
    if isinstance(module, torch.nn.Module):
        module.eval()
    return module


def clip_text_encoder(seed: int, projection_dim: int = TINY_TEXT_WIDTH, *, projection: bool = False) -> Any:
    """A tiny CLIP text encoder (``CLIPTextModelWithProjection`` when ``projection``, else ``CLIPTextModel``)."""
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTextModelWithProjection

    config = CLIPTextConfig(
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
    return seeded(seed, lambda: (CLIPTextModelWithProjection if projection else CLIPTextModel)(config))


def sd_unet(seed: int, in_channels: int, cross_dim: int, sdxl: bool = False) -> Any:
    from diffusers import UNet2DConditionModel

    extra: dict[str, Any] = {}
    if sdxl:
        extra = dict(
            addition_embed_type="text_time",
            addition_time_embed_dim=8,
            transformer_layers_per_block=(1, 2),
            projection_class_embeddings_input_dim=6 * 8 + TINY_TEXT_WIDTH,  # 6 time ids (no aesthetic score)
        )
    return seeded(
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


NO_QUANT = {"use_quant_conv": False, "use_post_quant_conv": False}
SD3_LATENTS = {**NO_QUANT, "shift_factor": 0.0609, "scaling_factor": 1.5035}
"""The latent shift and scale SD3 and Flux.1 decode with, and their VAEs' missing quant convs."""
FLUX_BLOCKS = {"patch_size": 1, "num_layers": 1, "num_single_layers": 1, "attention_head_dim": 16,
               "num_attention_heads": 2}  # fmt: skip
"""The shape of the tiny Flux.1, FLUX.2 and LongCat transformers: one double- and one single-stream
block of two 16-channel heads over unpatched latents."""


def kl_vae(seed: int, blocks: tuple[int, ...], latent: int, groups: int, *, cls: Any = None, **config: Any) -> Any:
    """A tiny KL autoencoder (``cls``, default ``AutoencoderKL``) of RGB images: one down and
    one up block per entry of ``blocks`` (their widths), ``latent`` channels, group norms of
    ``groups`` groups; ``config``: the rest of the real model's config."""
    from diffusers import AutoencoderKL

    n = len(blocks)
    return seeded(seed, lambda: (cls or AutoencoderKL)(
        in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * n,
        up_block_types=("UpDecoderBlock2D",) * n, block_out_channels=blocks, layers_per_block=1,
        latent_channels=latent, norm_num_groups=groups, **config,
    ))  # fmt: skip


def sd_vae(seed: int) -> Any:
    return kl_vae(seed, (32, 64), 4, 32, sample_size=128)


def sdxl_scheduler() -> Any:
    """SDXL's (and Kolors') Euler scheduler config."""
    from diffusers import EulerDiscreteScheduler

    return EulerDiscreteScheduler(beta_start=0.00085, beta_end=0.012, steps_offset=1, beta_schedule="scaled_linear",
                                  timestep_spacing="leading")


def t5_encoder(seed: int) -> Any:
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
    return seeded(seed, lambda: T5EncoderModel(config))


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
