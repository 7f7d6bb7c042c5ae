"""MaskCLIP (OpenSDI, CVPR 2025) as ``opensdi.maskclip``: the tiny card trains and scores on
``mini`` through the CLI and passes ``plugins check``; a reference network written here after
OpenSDI's module structure and parameter names (iamwangyabin/OpenSDI ``model/MaskCLIP.py``,
``model/clip_utils.py``, ``model/mae.py``, ``model/prompt_learner.py``), given random weights,
loads through ``release.from_reference`` and gives the same logits; a state with a tensor
missing or renamed is refused by name; offline, the full card names what to download."""

from __future__ import annotations

import json
import math

import open_clip
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from diffzoo import create_detector
from diffzoo.harness.core.errors import ModelError, WeightsUnavailableError
from diffzoo.plugins.opensdi import CARDS
from diffzoo.plugins.opensdi.model import prompt_tokens
from diffzoo.plugins.opensdi.release import from_reference

from helpers.cli import cli

TINY = "opensdi.maskclip.tiny"
ARCH = next(c for c in CARDS if c.name == TINY).arch


# -- the reference, after OpenSDI's modules (names of modules and parameters kept) ------------------------
class RefChannelsFirstNorm(nn.Module):  # clip_utils.LayerNorm: over dim 1 of B x C x H x W
    def __init__(self, n, eps=1e-6):
        super().__init__()
        self.weight, self.bias, self.eps = nn.Parameter(torch.ones(n)), nn.Parameter(torch.zeros(n)), eps

    def forward(self, x):
        centred = x - x.mean(1, keepdim=True)
        scaled = centred / torch.sqrt(centred.pow(2).mean(1, keepdim=True) + self.eps)
        return self.weight[:, None, None] * scaled + self.bias[:, None, None]


def ref_rel_pos(q_size, k_size, table):  # mae.get_rel_pos, for q_size == k_size
    length = 2 * max(q_size, k_size) - 1
    if table.shape[0] != length:
        table = F.interpolate(table.T[None], size=length, mode="linear")[0].T
    offsets = torch.arange(q_size)[:, None] - torch.arange(k_size)[None, :] + (k_size - 1)
    return table[offsets]


class RefAttention(nn.Module):  # mae.Attention with relative positions
    def __init__(self, dim, heads, grid):
        super().__init__()
        self.heads = heads
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.rel_pos_h = nn.Parameter(torch.zeros(2 * grid - 1, dim // heads))
        self.rel_pos_w = nn.Parameter(torch.zeros(2 * grid - 1, dim // heads))

    def forward(self, x):
        b, h, w, c = x.shape
        d = c // self.heads
        q, k, v = self.qkv(x).reshape(b, h * w, 3, self.heads, d).permute(2, 0, 3, 1, 4).reshape(3, b * self.heads,
                                                                                                  h * w, d)
        scores = (q * d ** -0.5) @ k.transpose(1, 2)
        rh, rw = ref_rel_pos(h, h, self.rel_pos_h), ref_rel_pos(w, w, self.rel_pos_w)
        grid_q = q.reshape(-1, h, w, d)
        bias_h = torch.einsum("nyxd,ykd->nyxk", grid_q, rh)
        bias_w = torch.einsum("nyxd,xkd->nyxk", grid_q, rw)
        scores = (scores.view(-1, h, w, h, w) + bias_h[..., None] + bias_w[..., None, :]).view(-1, h * w, h * w)
        out = (scores.softmax(-1) @ v).view(b, self.heads, h, w, d).permute(0, 2, 3, 1, 4).reshape(b, h, w, c)
        return self.proj(out)


class RefMlp(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class RefBlock(nn.Module):  # mae.Block: windowed (zero-padded) or global attention
    def __init__(self, dim, heads, window, grid):
        super().__init__()
        self.window = window
        self.norm1, self.norm2 = nn.LayerNorm(dim, eps=1e-6), nn.LayerNorm(dim, eps=1e-6)
        self.attn = RefAttention(dim, heads, window or grid)
        self.mlp = RefMlp(dim, 4 * dim)

    def forward(self, x):
        y = self.norm1(x)
        if self.window:
            b, h, w, c = y.shape
            s = self.window
            hp, wp = -(-h // s) * s, -(-w // s) * s
            y = F.pad(y, (0, 0, 0, wp - w, 0, hp - h))
            y = y.view(b, hp // s, s, wp // s, s, c).permute(0, 1, 3, 2, 4, 5).reshape(-1, s, s, c)
            y = self.attn(y)
            y = y.view(b, hp // s, wp // s, s, s, c).permute(0, 1, 3, 2, 4, 5).reshape(b, hp, wp, c)[:, :h, :w]
        else:
            y = self.attn(y)
        x = x + y
        return x + self.mlp(self.norm2(x))


class RefPatchEmbed(nn.Module):
    def __init__(self, patch, dim):
        super().__init__()
        self.proj = nn.Conv2d(3, dim, patch, stride=patch)


class RefViT(nn.Module):  # mae.ViT (pretrain_use_cls_token=True)
    def __init__(self, size, patch, dim, depth, heads, window, windowed, pretrain_size):
        super().__init__()
        self.patch_embed = RefPatchEmbed(patch, dim)
        self.pos_embed = nn.Parameter(torch.zeros(1, (pretrain_size // patch) ** 2 + 1, dim))
        self.blocks = nn.ModuleList(RefBlock(dim, heads, window if i in windowed else 0, size // patch)
                                    for i in range(depth))

    def abs_pos(self, h, w):
        table = self.pos_embed[:, 1:]
        side = int(math.sqrt(table.shape[1]))
        table = table.reshape(1, side, side, -1).permute(0, 3, 1, 2)
        return F.interpolate(table, size=(h, w), mode="bicubic", align_corners=False).permute(0, 2, 3, 1)


class RefMaskDecoder(nn.Module):  # clip_utils.MaskDecoder (LN norm)
    def __init__(self, dim, width, heads):
        super().__init__()
        self.num_heads = heads
        self.to_q, self.to_kv, self.proj = nn.Linear(width, width), nn.Linear(width, 2 * width), nn.Linear(width, width)
        self.stages = nn.ModuleList()
        for scale in (4.0, 2.0, 1.0, 0.5):
            if scale == 4.0:
                layers = [nn.ConvTranspose2d(dim, dim // 2, 2, 2), RefChannelsFirstNorm(dim // 2), nn.GELU(),
                          nn.ConvTranspose2d(dim // 2, dim // 4, 2, 2)]
                n = dim // 4
            elif scale == 2.0:
                layers, n = [nn.ConvTranspose2d(dim, dim // 2, 2, 2)], dim // 2
            elif scale == 1.0:
                layers, n = [], dim
            else:
                layers, n = [nn.MaxPool2d(2, 2)], dim
            layers += [nn.Conv2d(n, width, 1), RefChannelsFirstNorm(width), nn.Conv2d(width, width, 3, padding=1),
                       RefChannelsFirstNorm(width)]
            self.stages.append(nn.Sequential(*layers))
        self.linear_fuse = nn.Conv2d(4 * width, width, 1)
        self.norm = RefChannelsFirstNorm(width)
        self.dropout = nn.Dropout(0.1)
        self.predict = nn.Conv2d(width, 1, 1)

    def forward(self, query, x):
        maps = [stage(x) for stage in self.stages]
        h, w = maps[0].shape[-2:]
        x = self.linear_fuse(torch.cat([F.interpolate(m, size=(h, w), mode="bilinear", align_corners=False)
                                        for m in maps], 1))
        b, c = x.shape[:2]
        d = c // self.num_heads
        q = self.to_q(query[:, None]).reshape(b, 1, self.num_heads, d).transpose(1, 2)
        k, v = (t.reshape(b, h * w, self.num_heads, d).transpose(1, 2)
                for t in self.to_kv(x.flatten(2).transpose(1, 2)).chunk(2, -1))
        att = ((q @ k.transpose(-2, -1)) * d ** -0.5).softmax(-1)
        answer = self.proj((att @ v).transpose(1, 2).reshape(b, 1, c))
        x = x + answer.reshape(b, c, 1, 1).expand(b, c, h, w)
        return self.predict(self.dropout(self.norm(x)))


class RefAttentionFusion(nn.Module):  # clip_utils.AttentionFusion: CLIP map queries, ViT tokens answer
    def __init__(self, clip_dim, x_dim, heads=8):
        super().__init__()
        self.num_heads = heads
        self.channel_adjust = nn.Sequential(nn.Conv2d(clip_dim, x_dim, 1), RefChannelsFirstNorm(x_dim))
        self.query_proj, self.key_proj, self.value_proj = (nn.Linear(x_dim, x_dim) for _ in range(3))
        self.output_proj = nn.Sequential(nn.Linear(x_dim, x_dim), nn.LayerNorm(x_dim))

    def forward(self, x, clip_map):
        b, h, w, c = x.shape
        d = c // self.num_heads
        query = self.channel_adjust(F.interpolate(clip_map, size=(h, w), mode="bilinear", align_corners=False))
        query = query.permute(0, 2, 3, 1).reshape(b, h * w, c)
        tokens = x.reshape(b, h * w, c)
        q, k, v = (proj(t).reshape(b, h * w, self.num_heads, d).permute(0, 2, 1, 3)
                   for proj, t in ((self.query_proj, query), (self.key_proj, tokens), (self.value_proj, tokens)))
        att = torch.softmax((q @ k.transpose(-2, -1)) * d ** -0.5, dim=-1)
        fused = (att @ v).permute(0, 2, 1, 3).reshape(b, h * w, c)
        return self.output_proj(fused).reshape(b, h, w, c)


class RefSideAdapterNetwork(nn.Module):
    def __init__(self, size, align_channels, clip_channels, fusion_map, side, width, heads):
        super().__init__()
        self.vit_model = RefViT(size, side["patch"], side["dim"], side["depth"], side["heads"], side["window"],
                                side["windowed"], side["pretrain_size"])
        self.text_projection = nn.Linear(align_channels, width)
        self.fusion_layers = nn.ModuleDict({f"layer_{t}": RefAttentionFusion(clip_channels, side["dim"])
                                            for t in fusion_map})
        self.fusion_map = fusion_map
        self.mask_decoder = RefMaskDecoder(side["dim"], width, heads)

    def forward(self, image, text_features, clip_features):
        x = self.vit_model.patch_embed.proj(image).permute(0, 2, 3, 1)
        x = x + self.vit_model.abs_pos(x.shape[1], x.shape[2])
        for i, block in enumerate(self.vit_model.blocks):
            x = block(x)
            if i in self.fusion_map:
                x = self.fusion_layers[f"layer_{i}"](x, clip_features[self.fusion_map[i]]) + x
        text = self.text_projection(text_features.expand(x.shape[0], -1, -1))[:, 1, :]
        return self.mask_decoder(text, x.permute(0, 3, 1, 2))


class RefCLSAttentionAggregator(nn.Module):
    def __init__(self, feature_dim, out_dim, heads):
        super().__init__()
        self.layers = nn.ModuleList([nn.ModuleDict({
            "multihead_attn": nn.MultiheadAttention(feature_dim, heads, batch_first=True),
            "layer_norm": nn.LayerNorm(feature_dim), "dropout": nn.Dropout(0.1)})])
        self.projector = nn.Sequential(nn.Linear(feature_dim, out_dim, bias=False))

    def forward(self, x):
        for layer in self.layers:
            x = layer["dropout"](layer["layer_norm"](layer["multihead_attn"](x, x, x)[0] + x))
        return self.projector(x.mean(1))


class RefPromptLearner(nn.Module):
    def __init__(self, width, n):
        super().__init__()
        self.n_ctx = n
        self.ctx_pos = nn.Parameter(torch.randn(1, n, width) * 0.02)
        self.ctx_neg = nn.Parameter(torch.randn(1, n, width) * 0.02)


class RefMaskCLIP(nn.Module):
    """OpenSDI's MaskCLIP forward, on an open_clip CLIP (OpenAI's names; its transformers take
    batch-first tokens and the text one its causal mask as an argument)."""

    def __init__(self, arch, size):
        super().__init__()
        self.clip = open_clip.CLIP(**arch["open_clip_config"])
        self.selected_layers, self.clip_size = arch["clip_layers"], arch["clip_size"]
        width = self.clip.ln_final.weight.shape[0]
        clip_dim = self.clip.visual.conv1.out_channels
        self.aggregator = RefSideAdapterNetwork(size, width, clip_dim, dict(map(tuple, arch["fusion_map"])),
                                                arch["side"], arch["decoder_width"], arch["decoder_heads"])
        self.cls_aggregator = RefCLSAttentionAggregator(clip_dim, width, arch["image_head_heads"])
        self.prompt_learner = RefPromptLearner(width, arch["prompt_context"])
        self.tokens = prompt_tokens(arch)
        self.outputs = []
        for name, module in self.clip.visual.named_modules():
            if "ln_2" in name:
                module.register_forward_hook(lambda m, i, o: self.outputs.append(o))

    def encode_text(self, prompts, tokens):
        x = self.clip.transformer(prompts + self.clip.positional_embedding, attn_mask=self.clip.attn_mask)
        x = self.clip.ln_final(x)
        return x[torch.arange(x.shape[0]), tokens.argmax(-1)] @ self.clip.text_projection

    def forward(self, image):
        self.outputs.clear()
        with torch.no_grad():
            self.clip.encode_image(F.interpolate(image, size=(self.clip_size,) * 2, mode="bilinear",
                                                 align_corners=True))
        chosen = torch.stack([self.outputs[i] for i in self.selected_layers], dim=2)  # B x N x L x C
        b, n, _, c = chosen.shape
        g = int(math.sqrt(n - 1))
        cls_features = chosen[:, 0]
        patch_maps = [chosen[:, 1:, i].permute(0, 2, 1).reshape(b, c, g, g) for i in range(chosen.shape[2])]
        tokens = torch.cat([self.tokens, self.tokens])  # ['an image'] * 2
        with torch.no_grad():
            words = self.clip.token_embedding(tokens)
        k = self.prompt_learner.n_ctx
        pos = torch.cat([words[:, :1], self.prompt_learner.ctx_pos.expand(2, -1, -1), words[:, 1 + k:]], 1)
        neg = torch.cat([words[:, :1], self.prompt_learner.ctx_neg.expand(2, -1, -1), words[:, 1 + k:]], 1)
        feats = self.encode_text(torch.cat([neg, pos]), torch.cat([tokens, tokens])).chunk(2)
        text = torch.stack([feats[0].mean(0), feats[1].mean(0)])
        text = text / text.norm(dim=-1, keepdim=True)
        mask = self.aggregator(image, text, patch_maps)
        mask = F.interpolate(mask, size=image.shape[2:], mode="bilinear", align_corners=True)
        return mask, self.cls_aggregator(cls_features) @ text.t()


def _randomised(module: nn.Module, seed: int) -> nn.Module:
    """Every tensor random (relative positions and norms included), so that no term is inert."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * (0.5 if p.ndim <= 1 else 0.2))
    return module.eval()


@pytest.fixture(scope="module")
def reference():
    return _randomised(RefMaskCLIP(ARCH, next(c for c in CARDS if c.name == TINY).input_size), 7)


# -- (2) parity ---------------------------------------------------------------------------------------
def test_the_reference_network_loads_through_the_key_map_and_gives_the_same_logits(reference):
    det = create_detector(TINY, "binary", pretrained=False)
    before = det.model.learned.side.decoder.head.weight.clone()
    det.load_reference(reference.state_dict())
    assert not torch.equal(before, det.model.learned.side.decoder.head.weight)  # the tensors did load
    x = torch.randn(2, 3, 64, 64, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        ref_mask, ref_image = reference(x)
        mask, image = det.model.logits(x)
    assert mask.shape == ref_mask.shape == (2, 1, 64, 64) and image.shape == ref_image.shape == (2, 2)
    assert torch.allclose(mask, ref_mask, atol=1e-4, rtol=1e-4), (mask - ref_mask).abs().max()
    assert torch.allclose(image, ref_image, atol=1e-5, rtol=1e-4), (image - ref_image).abs().max()
    # predict: the same network behind the card's resize and normalisation; the image score is P(fake)
    images = torch.rand(2, 3, 64, 64)
    out = det.predict(images)
    with torch.no_grad():
        ref_mask, ref_image = reference((images - det.model.mean) / det.model.std)
    assert torch.allclose(out.mask_logits, ref_mask, atol=1e-4, rtol=1e-4)
    assert torch.allclose(out.image_score, ref_image.softmax(1)[:, 1], atol=1e-5)


def test_a_checkpoint_saved_by_opensdis_training_loads_as_a_release(reference, tmp_path):
    """What OpenSDI's train.py saves (IMDL-BenCo's save_model: the state under 'model', its
    arguments beside it) goes through diffzoo's release reader with ``release.convert``."""
    import argparse

    from diffzoo.harness.core.cards import Release
    from diffzoo.harness.models.releases import install

    path = tmp_path / "checkpoint-49.pth"
    torch.save({"model": reference.state_dict(), "epoch": 49, "args": argparse.Namespace(lr=1e-4)}, path)
    release = Release("own-run", (path.name,), "a local OpenSDI training", "test", "OpenSDI", "-",
                      unwrap=("model",), strip=(), allow=("argparse.Namespace",),
                      convert="diffzoo.plugins.opensdi.release:convert")
    det = create_detector(TINY, "binary", pretrained=False)
    folder = install(det, det.card, release, [path])
    loaded = create_detector(TINY, "binary", pretrained=False)
    loaded.load(folder)
    x = torch.randn(1, 3, 64, 64)
    with torch.no_grad():
        assert torch.allclose(loaded.model.logits(x)[0], reference(x)[0], atol=1e-4, rtol=1e-4)


def test_for_a_pretrained_card_the_converter_keeps_the_trained_part_only(reference):
    from dataclasses import replace

    from diffzoo.plugins.opensdi.release import convert

    det = create_detector(TINY, "binary", pretrained=False)
    full = convert(reference.state_dict(), det.card)
    assert set(full) == set(det.model.state_dict())
    trained = convert(reference.state_dict(), replace(det.card, weights="some/hub-id"))
    assert set(trained) == set(det.model.learned.state_dict())  # what a pretrained build saves


# -- (3) a state that does not fit is refused by name -------------------------------------------------
@pytest.mark.parametrize("name", ["aggregator.vit_model.blocks.1.attn.rel_pos_h",
                                  "aggregator.mask_decoder.stages.3.2.weight",
                                  "aggregator.fusion_layers.layer_2.output_proj.1.bias",
                                  "clip.visual.transformer.resblocks.1.ln_2.weight",
                                  "prompt_learner.ctx_pos"])
def test_a_missing_tensor_is_named(reference, name):
    state = dict(reference.state_dict())
    del state[name]
    with pytest.raises(ModelError, match="missing tensor") as exc:
        from_reference(state)
    assert name in str(exc.value)
    with pytest.raises(ModelError, match=name.replace(".", r"\.")):
        create_detector(TINY, "binary", pretrained=False).load_reference(state)


def test_a_renamed_tensor_is_named_twice(reference):
    state = dict(reference.state_dict())
    state["aggregator.mask_decoder.predictor.weight"] = state.pop("aggregator.mask_decoder.predict.weight")
    with pytest.raises(ModelError) as exc:
        from_reference(state)
    message = str(exc.value)
    assert "unexpected tensor(s) aggregator.mask_decoder.predictor.weight" in message
    assert "missing tensor(s) aggregator.mask_decoder.predict.weight" in message


def test_a_state_for_another_size_is_refused_by_the_detector(reference):
    state = dict(reference.state_dict())
    del state["aggregator.fusion_layers.layer_2.query_proj.weight"]  # a whole fusion layer gone is consistent ...
    state = {k: v for k, v in state.items() if not k.startswith("aggregator.fusion_layers.layer_2.")}
    assert from_reference(state)  # ... as a MaskCLIP, but not the one this card builds
    with pytest.raises(ModelError, match=r"missing tensor\(s\) aggregator\.fusion_layers\.layer_2\."):
        create_detector(TINY, "binary", pretrained=False).load_reference(state)


def test_mae_weights_in_timm_layout_initialise_the_side_vit():
    from timm.models.vision_transformer import VisionTransformer

    side = ARCH["side"]
    mae = VisionTransformer(img_size=side["pretrain_size"], patch_size=side["patch"], embed_dim=side["dim"],
                            depth=side["depth"], num_heads=side["heads"], num_classes=0)
    state = mae.state_dict()
    vit = create_detector(TINY, "binary", pretrained=False).model.learned.side.vit
    vit.load_mae(state, "mae.safetensors")
    assert torch.equal(vit.blocks[2].attn.qkv.weight, state["blocks.2.attn.qkv.weight"])
    assert torch.equal(vit.patch_embed.weight, state["patch_embed.proj.weight"])
    del state["blocks.1.mlp.fc2.bias"]
    with pytest.raises(ModelError, match=r"mae\.safetensors lack 1 tensor.*blocks\.1\.mlp\.fc2\.bias"):
        vit.load_mae(state, "mae.safetensors")



def test_tensors_of_another_shape_are_named_in_the_one_mismatch_wording(reference):
    """A MAE file and an OpenSDI state that hold a tensor of another shape say so as every
    checkpoint does (``describe_mismatch``)."""
    det = create_detector(TINY, "binary", pretrained=False)
    vit = det.model.learned.side.vit
    mae = {k.replace("patch_embed.", "patch_embed.proj."): v for k, v in vit.state_dict().items()}
    mae["blocks.0.mlp.fc1.weight"] = torch.zeros(3, 3)
    with pytest.raises(ModelError) as exc:
        vit.load_mae(mae, "mae.safetensors")
    assert str(exc.value).startswith("MAE weights mae.safetensors do not fit the side ViT: 1 tensor shape(s) differ: "
                                     "blocks.0.mlp.fc1.weight is [3, 3] in the checkpoint, [128, 32] in the model")
    state = dict(reference.state_dict())
    state["aggregator.text_projection.weight"] = torch.zeros(2, 2)
    with pytest.raises(ModelError, match=r"does not fit opensdi\.maskclip\.tiny: 1 tensor shape\(s\) differ: "
                                         r"learned\.side\.text_in\.weight is \[2, 2\] in the checkpoint"):
        det.load_reference(state)

# -- (4) offline ----------------------------------------------------------------------------------
def test_offline_the_full_card_names_both_downloads(offline_empty_hub):
    with pytest.raises(WeightsUnavailableError) as exc:
        create_detector("opensdi.maskclip", "binary", pretrained=True)
    message = str(exc.value)
    assert "`hf download timm/vit_large_patch14_clip_224.openai`" in message
    assert "`hf download timm/vit_base_patch16_224.mae`" in message
    from huggingface_hub import constants

    assert f"into {constants.HF_HUB_CACHE} here (HF_HUB_CACHE or HF_HOME moves it)" in message  # the cache read here
    assert "--no-pretrained" in message and "releases no trained MaskCLIP weights" in message
    assert offline_empty_hub == []


# -- (1) the tiny card on mini ------------------------------------------------------------------------
def test_the_tiny_card_trains_and_scores_on_mini(capsys, tmp_path):
    out = tmp_path / "out"
    code, stdout, stderr = cli(capsys, "run", "--detector", TINY, "--suite", "standard", "--iterations", "3",
                               "--batch-size", "2", "--bootstrap", "0", "--device", "cpu", "--out", out)
    assert code == 0, stderr
    records = [json.loads(p.read_text()) for p in (out / "records").glob("*.json")]
    assert sorted(r["case"]["name"] for r in records) == ["binary", "image", "image"]
    assert f"{TINY} (own image score)" in stdout
    training = records[0]["training"]
    assert training["iterations"] == 3 and math.isfinite(training["final_loss"])
    code, stdout, stderr = cli(capsys, "plugins", "check", TINY)
    assert code == 0, stdout + stderr
    assert "0 failed" in stdout
