"""GLIDE's text-conditional inpainting UNet (Nichol et al. 2021), written for diffzoo.

One class, :class:`GlideUNet`, covers both released inpainting models: the
64 px base (``InpaintText2ImUNet`` upstream) and the 256 px upsampler
(``SuperResInpaintText2ImUnet``, ``super_res=True``).  The input is the noisy
image concatenated with the masked source image, the keep-mask (1 = known
pixel) and, for the upsampler, the bilinearly upsampled low-res sample.  A
16-layer text transformer encodes 128 GPT-2 BPE tokens; its last token is
added to the timestep embedding and all tokens serve as extra keys/values in
every attention block.

Parameter names and shapes mirror openai/glide-text2im exactly
(``input_blocks.0.0.weight``, ``transformer.resblocks.0.attn.c_qkv.weight``,
``padding_embedding``, ...) so the official ``base_inpaint.pt`` /
``upsample_inpaint.pt`` state dicts load with ``strict=True``.  The code is
inference-only: no dropout, no zero-init of output layers (that only matters
for training; random tiny weights stay non-degenerate), and attention runs
through ``F.scaled_dot_product_attention`` (equal to the reference einsum
formulation up to float rounding).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from diffzoo.harness.core.errors import ConfigError


@dataclass(frozen=True)
class GlideConfig:
    """Architecture of one GLIDE inpainting model; defaults are the official 64 px base."""

    image_size: int = 64
    super_res: bool = False  # True: the upsampler (takes the low-res sample as 3 more channels)
    model_channels: int = 192
    num_res_blocks: int = 3
    channel_mult: tuple[int, ...] = (1, 2, 3, 4)
    attention_resolutions: tuple[int, ...] = (32, 16, 8)  # feature-map sizes with attention
    num_head_channels: int = 64
    text_ctx: int = 128
    xf_width: int = 512
    xf_layers: int = 16
    xf_heads: int = 8
    n_vocab: int = 50257  # GPT-2 BPE

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GlideConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"GLIDE model config has unknown key(s) {', '.join(unknown)}")
        tuples = {k: tuple(v) for k, v in data.items() if k in ("channel_mult", "attention_resolutions")}
        return cls(**{**data, **tuples})

    @property
    def in_channels(self) -> int:
        """noisy image + masked image + keep-mask (+ low-res image for the upsampler)."""
        return 3 + 3 + 1 + (3 if self.super_res else 0)

    @property
    def attention_ds(self) -> set[int]:
        return {self.image_size // r for r in self.attention_resolutions}


def timestep_embedding(t: torch.Tensor, dim: int) -> torch.Tensor:
    """Sinusoidal embedding [cos | sin] with periods up to 10000 (as in the reference)."""
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
    args = t.float()[:, None] * freqs[None]
    emb = torch.cat([torch.cos(args), torch.sin(args)], dim=-1)
    return F.pad(emb, (0, dim % 2))


class GroupNorm32(nn.GroupNorm):
    """32-group norm computed in float32, with an optional fused SiLU."""

    def __init__(self, channels: int, silu: bool):
        super().__init__(32, channels)
        self.silu = silu

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = super().forward(x.float()).to(x.dtype)
        return F.silu(y) if self.silu else y


class LayerNorm(nn.LayerNorm):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x.float()).to(x.dtype)


class ResBlock(nn.Module):
    """Residual block with scale-shift (FiLM) timestep conditioning; optionally resamples by 2."""

    def __init__(self, channels: int, emb_channels: int, out_channels: int, resample: str | None = None):
        super().__init__()
        self.resample = resample  # None, "up" or "down"
        # index 1 / 2 are parameter-free slots (Identity / dropout upstream): kept so the keys match
        self.in_layers = nn.Sequential(
            GroupNorm32(channels, True), nn.Identity(), nn.Conv2d(channels, out_channels, 3, padding=1)
        )
        self.emb_layers = nn.Sequential(nn.SiLU(), nn.Linear(emb_channels, 2 * out_channels))
        self.out_layers = nn.Sequential(
            GroupNorm32(out_channels, False), nn.SiLU(), nn.Identity(),
            nn.Conv2d(out_channels, out_channels, 3, padding=1),
        )
        self.skip_connection = (
            nn.Identity() if out_channels == channels else nn.Conv2d(channels, out_channels, 1)
        )

    def _resample(self, x: torch.Tensor) -> torch.Tensor:
        if self.resample == "up":
            return F.interpolate(x, scale_factor=2, mode="nearest")
        if self.resample == "down":
            return F.avg_pool2d(x, 2)
        return x

    def forward(self, x: torch.Tensor, emb: torch.Tensor) -> torch.Tensor:
        norm, _, conv = self.in_layers
        h = conv(self._resample(norm(x)))
        x = self._resample(x)
        scale, shift = self.emb_layers(emb).to(h.dtype)[..., None, None].chunk(2, dim=1)
        h = self.out_layers[0](h) * (1 + scale) + shift
        return self.skip_connection(x) + self.out_layers[1:](h)


class AttentionBlock(nn.Module):
    """Self-attention over pixels whose keys/values also include the projected text tokens."""

    def __init__(self, channels: int, head_channels: int, text_channels: int):
        super().__init__()
        if channels % head_channels:
            raise ConfigError(f"{channels} attention channels are not a multiple of {head_channels}")
        self.heads, self.head_channels = channels // head_channels, head_channels
        self.norm = GroupNorm32(channels, False)
        self.qkv = nn.Conv1d(channels, 3 * channels, 1)
        self.encoder_kv = nn.Conv1d(text_channels, 2 * channels, 1)
        self.proj_out = nn.Conv1d(channels, channels, 1)

    def forward(self, x: torch.Tensor, text: torch.Tensor) -> torch.Tensor:
        b, c, height, width = x.shape
        n, hc = b * self.heads, self.head_channels
        # per head the channels are laid out [q | k | v] (and [k | v] for the text), as upstream
        q, k, v = self.qkv(self.norm(x).reshape(b, c, -1)).reshape(n, 3 * hc, -1).split(hc, dim=1)
        tk, tv = self.encoder_kv(text).reshape(n, 2 * hc, -1).split(hc, dim=1)
        k, v = torch.cat([tk, k], dim=-1), torch.cat([tv, v], dim=-1)
        a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        h = self.proj_out(a.transpose(1, 2).reshape(b, c, -1))
        return x + h.reshape(b, c, height, width)


class Blocks(nn.Sequential):
    """A sequence of layers; each gets what it needs (timestep embedding, text tokens)."""

    def forward(  # type: ignore[override]
        self, x: torch.Tensor, emb: torch.Tensor, text: torch.Tensor
    ) -> torch.Tensor:
        for layer in self:
            if isinstance(layer, ResBlock):
                x = layer(x, emb)
            elif isinstance(layer, AttentionBlock):
                x = layer(x, text)
            else:
                x = layer(x)
        return x


# -- the text transformer (CLIP-style pre-norm blocks, no causal mask) ----------------
class XfAttention(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.c_qkv = nn.Linear(width, 3 * width)
        self.c_proj = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, w = x.shape
        # upstream views qkv as (b, n, heads, 3 * head_width) and splits the last axis
        q, k, v = self.c_qkv(x).view(b, n, self.heads, -1).transpose(1, 2).chunk(3, dim=-1)
        a = F.scaled_dot_product_attention(q, k, v)
        return self.c_proj(a.transpose(1, 2).reshape(b, n, w))


class XfMLP(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.c_fc = nn.Linear(width, 4 * width)
        self.c_proj = nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(F.gelu(self.c_fc(x)))


class XfBlock(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.attn, self.ln_1 = XfAttention(width, heads), LayerNorm(width)
        self.mlp, self.ln_2 = XfMLP(width), LayerNorm(width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class TextTransformer(nn.Module):
    def __init__(self, width: int, layers: int, heads: int):
        super().__init__()
        self.resblocks = nn.Sequential(*(XfBlock(width, heads) for _ in range(layers)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.resblocks(x)


class GlideUNet(nn.Module):
    """GLIDE inpainting UNet (base or upsampler) with its text encoder; predicts [eps | variance]."""

    def __init__(self, cfg: GlideConfig):
        super().__init__()
        self.cfg = cfg
        mc, emb_ch, text_ch = cfg.model_channels, 4 * cfg.model_channels, cfg.xf_width
        self.time_embed = nn.Sequential(nn.Linear(mc, emb_ch), nn.SiLU(), nn.Linear(emb_ch, emb_ch))

        def res(cin: int, cout: int, resample: str | None = None) -> ResBlock:
            return ResBlock(cin, emb_ch, cout, resample)

        def attn(c: int) -> AttentionBlock:
            return AttentionBlock(c, cfg.num_head_channels, text_ch)

        ch = mc * cfg.channel_mult[0]
        self.input_blocks = nn.ModuleList([Blocks(nn.Conv2d(cfg.in_channels, ch, 3, padding=1))])
        skips, ds, last = [ch], 1, len(cfg.channel_mult) - 1
        for level, mult in enumerate(cfg.channel_mult):
            for _ in range(cfg.num_res_blocks):
                layers: list[nn.Module] = [res(ch, mc * mult)]
                ch = mc * mult
                if ds in cfg.attention_ds:
                    layers.append(attn(ch))
                self.input_blocks.append(Blocks(*layers))
                skips.append(ch)
            if level != last:
                self.input_blocks.append(Blocks(res(ch, ch, "down")))
                skips.append(ch)
                ds *= 2
        self.middle_block = Blocks(res(ch, ch), attn(ch), res(ch, ch))
        self.output_blocks = nn.ModuleList()
        for level, mult in reversed(list(enumerate(cfg.channel_mult))):
            for i in range(cfg.num_res_blocks + 1):
                layers = [res(ch + skips.pop(), mc * mult)]
                ch = mc * mult
                if ds in cfg.attention_ds:
                    layers.append(attn(ch))
                if level and i == cfg.num_res_blocks:
                    layers.append(res(ch, ch, "up"))
                    ds //= 2
                self.output_blocks.append(Blocks(*layers))
        self.out = nn.Sequential(GroupNorm32(ch, True), nn.Identity(), nn.Conv2d(ch, 6, 3, padding=1))

        self.transformer = TextTransformer(text_ch, cfg.xf_layers, cfg.xf_heads)
        self.final_ln = LayerNorm(text_ch)
        self.token_embedding = nn.Embedding(cfg.n_vocab, text_ch)
        self.positional_embedding = nn.Parameter(torch.empty(cfg.text_ctx, text_ch))
        self.padding_embedding = nn.Parameter(torch.empty(cfg.text_ctx, text_ch))
        self.transformer_proj = nn.Linear(text_ch, emb_ch)
        nn.init.normal_(self.positional_embedding, std=0.01)  # upstream leaves these uninitialised
        nn.init.normal_(self.padding_embedding, std=0.01)

    @property
    def dtype(self) -> torch.dtype:
        return self.token_embedding.weight.dtype

    def encode_text(self, tokens: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Tokens B x ctx (padded), mask B x ctx (True = real token) -> (pooled B x 4C, tokens B x W x ctx).

        Padded positions take the learned ``padding_embedding``; the last position's
        output (usually padding) is the pooled vector, exactly as upstream.
        """
        x = self.token_embedding(tokens.long()) + self.positional_embedding[None]
        x = torch.where(mask[..., None], x, self.padding_embedding[None].to(x.dtype))
        x = self.final_ln(self.transformer(x))
        return self.transformer_proj(x[:, -1]), x.permute(0, 2, 1)

    def forward(
        self,
        x: torch.Tensor,
        t: torch.Tensor,
        text: tuple[torch.Tensor, torch.Tensor],
        inpaint_image: torch.Tensor,
        keep: torch.Tensor,
        low_res: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Predict [eps | variance interpolation] (B x 6 x H x W) for noisy ``x`` at original step ``t``.

        ``keep`` is 1 where the source pixel is known (kept) and 0 where it is to be
        generated; ``inpaint_image`` is the source image (it is multiplied by ``keep`` here).
        ``text`` is :meth:`encode_text` of the batch's tokens.
        """
        b = x.shape[0]  # image, keep (and low_res) may have batch 1: they are shared
        parts = [x, (inpaint_image * keep).expand(b, -1, -1, -1), keep.expand(b, -1, -1, -1)]
        if self.cfg.super_res:
            if low_res is None:
                raise ConfigError("the GLIDE upsampler needs low_res")
            up = F.interpolate(low_res, x.shape[-2:], mode="bilinear", align_corners=False)
            parts.append(up.expand(b, -1, -1, -1))
        h = torch.cat(parts, dim=1).to(self.dtype)
        pooled, tokens = text
        emb = self.time_embed(timestep_embedding(t, self.cfg.model_channels).to(self.dtype)) + pooled
        skips = []
        for block in self.input_blocks:
            h = block(h, emb, tokens)
            skips.append(h)
        h = self.middle_block(h, emb, tokens)
        for block in self.output_blocks:
            h = block(torch.cat([h, skips.pop()], dim=1), emb, tokens)
        return self.out(h).float()
