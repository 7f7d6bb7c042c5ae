"""The MaskCLIP network (open_clip CLIP + a timm windowed ViT) and its detector.

Data flow, for a batch of [0, 1] images of any size:

1. resize to the card's input size (bilinear), normalise with CLIP's mean/std;
2. the frozen CLIP image tower sees that input resized again to its own size
   (bilinear, corners aligned); the outputs of ``ln_2`` of the selected blocks
   are kept: their class tokens (B x L x C) and patch-token maps (B x C x g x g);
3. two learned prompt contexts ("real", "fake") replace the ``X`` tokens of
   ``"X ... X an image."`` and go through the frozen CLIP text tower: two unit
   text embeddings;
4. the side network, a windowed ViT (MAE-initialised), takes the normalised
   input; after each block of the fusion map, a cross-attention whose queries
   are a CLIP patch map adds its answer to the tokens;
5. a feature pyramid (x4, x2, x1, x0.5) of the last tokens, fused, is queried once by
   the projected "fake" embedding, and a 1x1 conv gives the mask logits at a quarter
   of the input, upsampled to the input size;
6. one self-attention layer over the class tokens, averaged and projected,
   scored against the two text embeddings: the image's (real, fake) logits.

Training follows OpenSDI: image cross-entropy + pixel BCE + edge-weighted BCE
x ``edge_lambda``, only the side network, the image head and the prompts learn.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from diffzoo.plugin import (
    BINARY,
    IGNORE_INDEX,
    NO_PRETRAINED,
    ConfigError,
    DetectionOutput,
    DetectorBuild,
    DetectorCard,
    ModelError,
    Report,
    TorchDetector,
    TrainConfig,
    TrainData,
    WeightsUnavailableError,
    built_from,
    describe_mismatch,
    hub_fetch,
    hub_weights,
    load_weights,
)
from diffzoo.plugins.benco.model import edge_mask, fit_own_loss
from diffzoo.plugins.universalfakedet.model import open_clip_model, open_clip_weights

log = logging.getLogger(__name__)

# -- pieces -----------------------------------------------------------------------------------
class ChannelNorm(nn.Module):
    """LayerNorm over the channels of a B x C x H x W map (eps 1e-6)."""

    def __init__(self, channels: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.layer_norm(x.permute(0, 2, 3, 1), self.weight.shape, self.weight, self.bias, 1e-6)
        return y.permute(0, 3, 1, 2)


def heads_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, heads: int) -> torch.Tensor:
    """Scaled dot-product attention of B x Nq x C queries over B x N x C keys/values, split
    into ``heads`` heads; B x Nq x C."""
    b, nq, c = q.shape

    def split(t: torch.Tensor) -> torch.Tensor:
        return t.reshape(b, t.shape[1], heads, c // heads).transpose(1, 2)

    out = F.scaled_dot_product_attention(split(q), split(k), split(v))
    return out.transpose(1, 2).reshape(b, nq, c)


class SideViT(nn.Module):
    """The side network's encoder: a ViT-B/16 with windowed and global blocks and decomposed
    relative positions (timm's SAM blocks), absolute positions interpolated from the
    pretraining grid.  Its tokens stay B x H x W x C."""

    def __init__(self, size: int, patch: int, dim: int, depth: int, heads: int, window: int,
                 windowed: list[int], drop_path: float, pretrain_size: int):
        super().__init__()
        from timm.models.vision_transformer_sam import Block

        grid = size // patch
        self.patch_embed = nn.Conv2d(3, dim, patch, stride=patch)
        self.pos_embed = nn.Parameter(torch.zeros(1, (pretrain_size // patch) ** 2 + 1, dim))  # +1: MAE's class slot
        rates = torch.linspace(0, drop_path, depth).tolist()
        norm: Any = partial(nn.LayerNorm, eps=1e-6)
        self.blocks = nn.ModuleList(
            Block(dim, heads, mlp_ratio=4.0, qkv_bias=True, drop_path=rates[i], norm_layer=norm, use_rel_pos=True,
                  window_size=window if i in windowed else 0, input_size=(grid, grid))
            for i in range(depth))
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        self.apply(_vit_init)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """Patch tokens (B x H x W x C) with absolute positions."""
        t = self.patch_embed(x).permute(0, 2, 3, 1)
        h, w = t.shape[1:3]
        pos = self.pos_embed[:, 1:]  # the class token's position is not used
        side = math.isqrt(pos.shape[1])
        pos = pos.reshape(1, side, side, -1)
        if (side, side) != (h, w):
            pos = F.interpolate(pos.permute(0, 3, 1, 2), size=(h, w), mode="bicubic",
                                align_corners=False).permute(0, 2, 3, 1)
        return t + pos

    def load_mae(self, state: dict[str, torch.Tensor], source: str) -> None:
        """Initialise from MAE's encoder weights in timm's layout (``source`` names the file):
        every tensor but the relative positions (which MAE lacks: they stay zero) must be there."""
        mine = self.state_dict()
        renamed = {("patch_embed." + k[len("patch_embed.proj."):] if k.startswith("patch_embed.proj.") else k): v
                   for k, v in state.items()}
        wanted = [k for k in mine if ".rel_pos_" not in k]
        missing = [k for k in wanted if k not in renamed]
        if missing:
            raise ModelError(f"MAE weights {source} lack {len(missing)} tensor(s) of the side ViT, e.g. "
                             f"{', '.join(missing[:3])}; delete the file and fetch it again")
        problem = describe_mismatch({k: mine[k] for k in wanted}, {k: renamed[k] for k in wanted})
        if problem:
            raise ModelError(f"MAE weights {source} do not fit the side ViT: {problem}")
        self.load_state_dict({k: renamed[k] for k in wanted}, strict=False)


def _vit_init(m: nn.Module) -> None:
    """The ViT's own initialisation: truncated-normal linear weights, zero biases, unit norms."""
    if isinstance(m, nn.Linear):
        nn.init.trunc_normal_(m.weight, std=0.02)
        if m.bias is not None:
            nn.init.zeros_(m.bias)
    elif isinstance(m, nn.LayerNorm):
        nn.init.ones_(m.weight)
        nn.init.zeros_(m.bias)


class ClipFusion(nn.Module):
    """A CLIP patch map, resized to the ViT grid and projected to its width, queries the ViT
    tokens; the answer (linear + LayerNorm) is added to the tokens."""

    def __init__(self, clip_dim: int, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.clip_in = nn.Conv2d(clip_dim, dim, 1)
        self.clip_norm = ChannelNorm(dim)
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, dim)
        self.out_norm = nn.LayerNorm(dim)

    def forward(self, tokens: torch.Tensor, clip_map: torch.Tensor) -> torch.Tensor:
        b, h, w, c = tokens.shape
        clip_map = F.interpolate(clip_map, size=(h, w), mode="bilinear", align_corners=False)
        query = self.clip_norm(self.clip_in(clip_map)).flatten(2).transpose(1, 2)
        flat = tokens.reshape(b, h * w, c)
        answer = heads_attention(self.q(query), self.k(flat), self.v(flat), self.heads)
        return tokens + self.out_norm(self.out(answer)).reshape(b, h, w, c)


class PyramidLevel(nn.Module):
    """One level of the feature pyramid: ``up`` changes the scale, ``reduce`` maps to the decoder width."""

    def __init__(self, scale: float, dim: int, width: int):
        super().__init__()
        if scale == 4.0:
            self.up: nn.Module = nn.Sequential(nn.ConvTranspose2d(dim, dim // 2, 2, stride=2), ChannelNorm(dim // 2),
                                               nn.GELU(), nn.ConvTranspose2d(dim // 2, dim // 4, 2, stride=2))
            channels = dim // 4
        elif scale == 2.0:
            self.up, channels = nn.Sequential(nn.ConvTranspose2d(dim, dim // 2, 2, stride=2)), dim // 2
        elif scale == 1.0:
            self.up, channels = nn.Identity(), dim
        else:
            self.up, channels = nn.MaxPool2d(2, stride=2), dim
        self.reduce = nn.Sequential(nn.Conv2d(channels, width, 1), ChannelNorm(width),
                                    nn.Conv2d(width, width, 3, padding=1), ChannelNorm(width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.reduce(self.up(x))


PYRAMID = (4.0, 2.0, 1.0, 0.5)


class MaskDecoder(nn.Module):
    """Pyramid of the ViT map, fused at the finest level; one text query attends over it and
    its answer is added at every position; norm, dropout, 1x1 conv to one logit."""

    def __init__(self, dim: int, width: int, heads: int, dropout: float):
        super().__init__()
        self.heads = heads
        self.levels = nn.ModuleList(PyramidLevel(s, dim, width) for s in PYRAMID)
        self.fuse = nn.Conv2d(width * len(PYRAMID), width, 1)
        self.query = nn.Linear(width, width)
        self.kv = nn.Linear(width, 2 * width)
        self.answer = nn.Linear(width, width)
        self.norm = ChannelNorm(width)
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Conv2d(width, 1, 1)

    def forward(self, x: torch.Tensor, text: torch.Tensor) -> torch.Tensor:
        maps = [level(x) for level in self.levels]
        size = maps[0].shape[-2:]
        fused = self.fuse(torch.cat(
            [F.interpolate(m, size=size, mode="bilinear", align_corners=False) for m in maps], dim=1))
        b, c = fused.shape[:2]
        k, v = self.kv(fused.flatten(2).transpose(1, 2)).chunk(2, dim=-1)
        answer = self.answer(heads_attention(self.query(text)[:, None], k, v, self.heads))
        fused = fused + answer.reshape(b, c, 1, 1)
        return self.head(self.dropout(self.norm(fused)))


class SideNet(nn.Module):
    """The trainable localisation branch: side ViT + CLIP fusions + mask decoder."""

    def __init__(self, arch: dict[str, Any], size: int, clip_dim: int, text_dim: int):
        super().__init__()
        side = arch["side"]
        self.vit = SideViT(size, side["patch"], side["dim"], side["depth"], side["heads"], side["window"],
                           side["windowed"], side["drop_path"], side["pretrain_size"])
        self.fusion_map = {int(block): int(layer) for block, layer in arch["fusion_map"]}
        self.fusions = nn.ModuleDict({str(block): ClipFusion(clip_dim, side["dim"], arch["fusion_heads"])
                                      for block in self.fusion_map})
        self.text_in = nn.Linear(text_dim, arch["decoder_width"])
        self.decoder = MaskDecoder(side["dim"], arch["decoder_width"], arch["decoder_heads"], arch["dropout"])

    def forward(self, x: torch.Tensor, clip_maps: list[torch.Tensor], fake_text: torch.Tensor) -> torch.Tensor:
        tokens = self.vit.embed(x)
        for i, block in enumerate(self.vit.blocks):
            tokens = block(tokens)
            if i in self.fusion_map:
                tokens = self.fusions[str(i)](tokens, clip_maps[self.fusion_map[i]])
        query = self.text_in(fake_text).expand(x.shape[0], -1)
        return self.decoder(tokens.permute(0, 3, 1, 2), query)


class ClassTokenHead(nn.Module):
    """Self-attention over the selected layers' class tokens, LayerNorm, dropout, mean, and a
    bias-free projection into the text embedding space."""

    def __init__(self, clip_dim: int, text_dim: int, heads: int, dropout: float):
        super().__init__()
        self.attn = nn.MultiheadAttention(clip_dim, heads, batch_first=True)
        self.norm = nn.LayerNorm(clip_dim)
        self.dropout = nn.Dropout(dropout)
        self.proj = nn.Linear(clip_dim, text_dim, bias=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        answer, _ = self.attn(tokens, tokens, tokens, need_weights=False)
        return self.proj(self.dropout(self.norm(answer + tokens)).mean(dim=1))


class PromptContext(nn.Module):
    """The learned context vectors of the two class prompts."""

    def __init__(self, n: int, width: int):
        super().__init__()
        self.real = nn.Parameter(torch.empty(1, n, width).normal_(std=0.02))
        self.fake = nn.Parameter(torch.empty(1, n, width).normal_(std=0.02))


class Learned(nn.Module):
    """Everything MaskCLIP trains (CLIP stays frozen)."""

    def __init__(self, arch: dict[str, Any], size: int, clip_dim: int, text_width: int):
        super().__init__()
        self.prompts = PromptContext(arch["prompt_context"], text_width)
        self.side = SideNet(arch, size, clip_dim, text_width)
        self.image_head = ClassTokenHead(clip_dim, text_width, arch["image_head_heads"], arch["dropout"])


def prompt_tokens(arch: dict[str, Any]) -> torch.Tensor:
    """The token ids (1 x context length) of ``"X ... X <prompt_text>."`` by CLIP's tokenizer.
    A tiny test CLIP's vocabulary is folded onto: start and end become its two last ids (the
    end stays the largest id, which is how the end token is found) and the rest wrap."""
    import open_clip

    text = " ".join(["X"] * arch["prompt_context"]) + " " + arch["prompt_text"] + "."
    config = arch.get("open_clip_config")
    if config is None:
        return open_clip.tokenize([text]).long()
    from open_clip.tokenizer import SimpleTokenizer

    tokenizer = SimpleTokenizer()
    vocab, length = config["text_cfg"]["vocab_size"], config["text_cfg"]["context_length"]
    ids = [vocab - 2] + [t % (vocab - 2) for t in tokenizer.encode(text)] + [vocab - 1]
    if len(ids) > length:
        raise ModelError(f"the prompt {text!r} has {len(ids)} tokens; the tiny CLIP's context is {length}")
    out = torch.zeros(1, length, dtype=torch.long)
    out[0, : len(ids)] = torch.tensor(ids)
    return out


# -- the network --------------------------------------------------------------------------------
class MaskClipNet(nn.Module):
    """[0, 1] images -> {"mask": B x 1 x S x S logits, "image": B x 2 (real, fake) logits} at the
    input size S; with ``targets`` (B x H x W label maps) also ``loss`` and its ``terms``."""

    clip: Any  # an open_clip CLIP, whose towers are reached by attribute
    mean: torch.Tensor
    std: torch.Tensor
    tokens: torch.Tensor

    def __init__(self, clip: nn.Module, arch: dict[str, Any], size: int, mean, std,
                 edge_width: int = 7, edge_lambda: float = 20.0):
        super().__init__()
        self.clip = clip.float().requires_grad_(False).eval()
        self.size, self.clip_size, self.layers = size, arch["clip_size"], list(arch["clip_layers"])
        self.edge_width, self.edge_lambda = edge_width, edge_lambda
        visual = self.clip.visual
        clip_dim = visual.conv1.out_channels
        text_width = self.clip.ln_final.weight.shape[0]
        self.learned = Learned(arch, size, clip_dim, text_width)
        self.register_buffer("tokens", prompt_tokens(arch), persistent=False)
        self.register_buffer("mean", torch.tensor(mean).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(std).view(1, 3, 1, 1), persistent=False)

    def train(self, mode: bool = True) -> MaskClipNet:
        super().train(mode)
        self.clip.eval()  # frozen: never in training mode
        return self

    def prepare(self, images: torch.Tensor) -> torch.Tensor:
        """[0, 1] images of any size -> the normalised S x S input (bilinear, as albu.Resize)."""
        if images.shape[-2:] != (self.size, self.size):
            images = F.interpolate(images, size=(self.size, self.size), mode="bilinear", align_corners=False)
        return (images - self.mean) / self.std

    @torch.no_grad()
    def clip_features(self, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """(class tokens B x L x C, patch maps [B x C x g x g] * L) of the selected CLIP blocks:
        the outputs of their ``ln_2``, on ``x`` resized to CLIP's input size."""
        small = F.interpolate(x, size=(self.clip_size, self.clip_size), mode="bilinear", align_corners=True)
        seen: dict[int, torch.Tensor] = {}
        with self._ln2_outputs(seen):
            self.clip.visual(small)
        batch_first = getattr(self.clip.visual.transformer, "batch_first", True)
        tokens = [seen[i] if batch_first else seen[i].transpose(0, 1) for i in self.layers]
        b, n, c = tokens[0].shape
        g = math.isqrt(n - 1)
        cls = torch.stack([t[:, 0] for t in tokens], dim=1)
        maps = [t[:, 1:].transpose(1, 2).reshape(b, c, g, g) for t in tokens]
        return cls, maps

    @contextlib.contextmanager
    def _ln2_outputs(self, seen: dict[int, torch.Tensor]) -> Iterator[None]:
        blocks = self.clip.visual.transformer.resblocks
        handles = [blocks[i].ln_2.register_forward_hook(partial(_keep, seen, i)) for i in self.layers]
        try:
            yield
        finally:
            for handle in handles:
                handle.remove()

    def class_text(self) -> torch.Tensor:
        """The unit (real, fake) text embeddings (2 x E) of the two learned prompts."""
        clip, ctx = self.clip, self.learned.prompts
        n = ctx.real.shape[1]
        with torch.no_grad():
            words = clip.token_embedding(self.tokens)
        prompts = torch.cat([torch.cat([words[:, :1], c, words[:, 1 + n:]], dim=1) for c in (ctx.real, ctx.fake)])
        x = prompts + clip.positional_embedding
        if getattr(clip.transformer, "batch_first", True):
            x = clip.transformer(x, attn_mask=clip.attn_mask)
        else:
            x = clip.transformer(x.transpose(0, 1), attn_mask=clip.attn_mask).transpose(0, 1)
        x = clip.ln_final(x)[:, int(self.tokens[0].argmax())]
        proj = clip.text_projection
        x = proj(x) if isinstance(proj, nn.Linear) else x @ proj
        return F.normalize(x, dim=-1)

    def logits(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(mask logits B x 1 x S x S, image logits B x 2) of the normalised input ``x``."""
        cls, maps = self.clip_features(x)
        text = self.class_text()
        mask = self.learned.side(x, maps, text[1])
        mask = F.interpolate(mask, size=x.shape[-2:], mode="bilinear", align_corners=True)
        return mask, self.learned.image_head(cls) @ text.t()

    def forward(self, images: torch.Tensor, targets: torch.Tensor | None = None) -> dict[str, Any]:
        mask, image = self.logits(self.prepare(images.float()))
        out: dict[str, Any] = {"mask": mask, "image": image}
        if targets is not None:
            out["loss"], out["terms"] = self.loss(mask, image, targets)
        return out

    def loss(self, mask: torch.Tensor, image: torch.Tensor,
             targets: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """OpenSDI's loss: image CE (an image is fake when a pixel of its view is edited) + pixel
        BCE + edge-weighted BCE x ``edge_lambda``; 'ignore' pixels (255, crop padding) count
        in neither pixel term, so with none it is OpenSDI's loss exactly."""
        labels = targets[:, None].float()
        if labels.shape[-2:] != mask.shape[-2:]:
            labels = F.interpolate(labels, size=mask.shape[-2:], mode="nearest")
        valid = (labels != IGNORE_INDEX).float()
        edited = (labels == 1).float()
        mask = mask.float()
        n = valid.sum().clamp_min(1.0)
        per_pixel = F.binary_cross_entropy_with_logits(mask, edited, reduction="none")
        bce = (per_pixel * valid).sum() / n
        edge = (per_pixel * edge_mask(edited, self.edge_width) * valid).sum() / n * self.edge_lambda
        ce = F.cross_entropy(image.float(), edited.flatten(1).amax(1).long())
        return ce + bce + edge, {"loss_ce": ce.detach(), "loss_bce": bce.detach(), "loss_edge": edge.detach()}


def _keep(seen: dict[int, torch.Tensor], index: int, module: nn.Module, args: Any, output: torch.Tensor) -> None:
    seen[index] = output


# -- building ----------------------------------------------------------------------------------
def pretrained_files(card: DetectorCard) -> tuple[Path, Path]:
    """(open_clip's CLIP file, MAE's file): both resolved before either fails, so that an
    offline machine is told in one line everything there is to fetch."""
    arch = card.arch
    name, tag = arch["open_clip_model"], arch["pretrained_tag"]
    found: list[Path] = []
    missing: list[WeightsUnavailableError] = []
    for get in (lambda: open_clip_weights(card, name, tag), lambda: hub_weights(
            card, arch["mae_hub"], ("model.safetensors", "pytorch_model.bin"),
            what=f"detector {card.name} (MAE ViT-B/16 encoder, timm {arch['mae_hub'].split('/')[1]!r})",
            detail=NO_PRETRAINED)):
        try:
            found.append(get())
        except WeightsUnavailableError as exc:
            missing.append(exc)
    if len(missing) == 2:
        repos = (arch["clip_hub"], arch["mae_hub"])
        raise WeightsUnavailableError(
            f"detector {card.name}", " and ".join(repos),
            f"OpenAI CLIP ViT-L/14 (open_clip {name!r}, pretrained={tag!r}) and the MAE ViT-B/16 encoder; "
            f"OpenSDI releases no trained MaskCLIP weights, diffzoo trains them; {NO_PRETRAINED}",
            fetch=hub_fetch(*repos))
    if missing:
        raise missing[0]
    return found[0], found[1]


def build_network(card: DetectorCard, pretrained: bool, edge_width: int, edge_lambda: float) -> MaskClipNet:
    tiny = "open_clip_config" in card.arch
    if not pretrained and not tiny:
        log.warning("%s without pretrained weights: CLIP and the side ViT are random", card.name)
    with built_from():  # the files' first use is recorded once the network is built from them
        clip_file, mae_file = pretrained_files(card) if pretrained and not tiny else (None, None)
        clip = open_clip_model(card, pretrained, clip_file)
        net = MaskClipNet(clip, card.arch, card.input_size, card.mean, card.std, edge_width, edge_lambda)
        if mae_file is not None:
            held = load_weights(mae_file, f"hf://{card.arch['mae_hub']}", what=f"detector {card.name}")
            net.learned.side.vit.load_mae(held.get("model", held), str(mae_file))
    return net


# -- the detector ------------------------------------------------------------------------------
class MaskClipDetector(TorchDetector):
    """``opensdi.maskclip``: binary localization and an image score of its own (docs/detectors.md).

    A checkpoint holds :class:`Learned` alone when CLIP is the card's pretrained one (the
    card names it), and the whole network when CLIP is random (tiny card, --no-pretrained)."""

    model: MaskClipNet
    whole_checkpoint = False  # a pretrained CLIP is named by the card, not saved

    def __init__(self, build: DetectorBuild) -> None:
        super().__init__(build)
        card = self.card
        if self.task != "binary":
            raise ConfigError(f"{card.name} predicts one 'edited' channel and an image score: it serves the binary "
                              f"task and image-level detection, not the {self.task} task")
        self.label_space = BINARY
        recipe = card.recipe_values()
        self.model = build_network(card, self.pretrained, int(recipe.get("edge_mask_width", 7)),
                                   float(recipe.get("edge_lambda", 20.0)))
        self.model.eval()

    @torch.no_grad()
    def predict(self, images: torch.Tensor) -> DetectionOutput:
        self.model.eval()
        images = images.to(self.device, torch.float32)
        out = self.model(images)
        mask = out["mask"]
        if mask.shape[-2:] != images.shape[-2:]:
            mask = F.interpolate(mask, size=images.shape[-2:], mode="bilinear", align_corners=False)
        return DetectionOutput(mask_logits=mask.float(), image_score=out["image"].float().softmax(dim=1)[:, 1])

    def fit(self, train: TrainData, config: TrainConfig, progress: Report | None = None) -> dict[str, Any]:
        """diffzoo's shared loop on OpenSDI's loss (its three terms logged); only :class:`Learned` trains."""
        self.model.edge_width = int(config.extra.get("edge_mask_width", self.model.edge_width))
        self.model.edge_lambda = float(config.extra.get("edge_lambda", self.model.edge_lambda))
        # the prompts' init is the build's; dropout and drop-path draw from the config's seed
        return fit_own_loss(self, self.model.learned, maskclip_loss, train, config, progress)

    def saved_module(self) -> nn.Module:
        # a pretrained CLIP is named by the card; a random one must travel with the rest
        return self.model.learned if self.pretrained else self.model

    def checkpoint_meta(self) -> dict[str, Any]:
        return {**super().checkpoint_meta(),
                "clip": self.card.arch.get("clip_hub", "random init") if self.pretrained else "random init"}

    def load_reference(self, state: dict[str, torch.Tensor]) -> None:
        """Load the ``state_dict`` of OpenSDI's own ``MaskCLIP`` (a checkpoint's ``'model'``),
        every tensor, strictly (see :mod:`.release`)."""
        from diffzoo.plugins.opensdi.release import from_reference

        mine = self.model.state_dict()
        mapped = from_reference(state, mine.keys())
        problem = describe_mismatch(mine, mapped)
        if problem:
            raise ModelError(f"the OpenSDI state does not fit {self.card.name}: {problem}")
        self.model.load_state_dict(mapped, strict=True)
        self.model.to(self.device).eval()


def maskclip_loss(out: dict[str, Any], targets: Any) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The loss :class:`MaskClipNet` computed with the targets, and its terms for the log."""
    return out["loss"], out["terms"]
