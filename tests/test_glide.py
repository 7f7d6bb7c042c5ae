"""GLIDE inpainting port: tiny edits, official key names, weights-only loading, offline errors."""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
from collections.abc import Iterator

import numpy as np
import pytest
import torch

from diffzoo.generators.editors.glide.cards import BASE_INPAINT_URL, GLIDE_INPAINT, GLIDE_TINY, UPSAMPLE_INPAINT_URL
from diffzoo.generators.editors.glide.diffusion import Schedule, beta_schedule, sample, space_timesteps
from diffzoo.generators.editors.glide.editor import GlideEditor
from diffzoo.generators.editors.glide.model import GlideConfig, GlideUNet
from diffzoo.generators.editors.glide.tokenizer import END_TEXT, GlideTokenizer
from diffzoo.generators.editors.glide.weights import cached_path, load_model, load_state_dict
from diffzoo.harness.core.errors import ConfigError, DataError, ModelError, WeightsUnavailableError
from diffzoo.harness.core.protocols import EditResult, Generator

WB = ("weight", "bias")


def _image(h: int = 64, w: int = 64, seed: int = 0) -> np.ndarray:
    yy, xx = np.mgrid[0:h, 0:w]
    noise = np.random.default_rng(seed).integers(0, 30, (h, w, 3))
    return (np.stack([xx * 3, yy * 3, (xx + yy) * 2], -1) % 200 + noise).astype(np.uint8)


def _mask(h: int = 64, w: int = 64) -> np.ndarray:
    m = np.zeros((h, w), bool)
    m[h // 5 : h // 2, w // 4 : (3 * w) // 4] = True
    return m


@pytest.fixture(scope="module")
def editor() -> Iterator[GlideEditor]:
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models: one thread is as fast on a busy CPU
    try:
        yield GlideEditor(GLIDE_TINY)
    finally:
        torch.set_num_threads(before)


# -- editing -------------------------------------------------------------------------
@pytest.mark.parametrize("size", [(64, 64), (40, 72)])
def test_tiny_edit_changes_only_the_mask(editor, size):
    image, mask = _image(*size), _mask(*size)
    result = editor.edit(image, mask, "a red cat", seed=1)
    assert isinstance(editor, Generator) and isinstance(result, EditResult)
    assert result.image.shape == image.shape and result.image.dtype == np.uint8
    differs = (result.image != image).any(-1)
    assert not differs[~mask].any(), "pixels outside the mask must equal the input exactly"
    assert differs[mask].mean() > 0.8
    assert np.array_equal(result.changed, mask)
    meta = result.metadata
    assert meta["generator"] == "glide.tiny" and meta["mode"] == "native" and meta["composited"] is True
    assert meta["steps"] == 2 and meta["guidance"] == 5.0 and meta["upsample_temperature"] == 0.997
    assert meta["resolution"] == 32 and meta["base_resolution"] == 16 and meta["seed"] == 1


def test_tiny_edit_is_deterministic_per_seed_and_follows_the_prompt(editor):
    image, mask = _image(seed=3), _mask()
    a = editor.edit(image, mask, "a wooden chair", seed=7).image
    assert np.array_equal(a, editor.edit(image, mask, "a wooden chair", seed=7).image)
    assert np.array_equal(a, GlideEditor(GLIDE_TINY).edit(image, mask, "a wooden chair", seed=7).image)
    assert not np.array_equal(a, editor.edit(image, mask, "a wooden chair", seed=8).image)
    assert not np.array_equal(a, editor.edit(image, mask, "a red bus", seed=7).image)


def test_bad_inputs_raise_data_errors(editor):
    with pytest.raises(DataError, match="mask shape"):
        editor.edit(_image(), _mask(32, 32), "x", 0)
    with pytest.raises(DataError, match="need a mask"):
        editor.edit(_image(), None, "x", 0)


def test_non_finite_pixels_are_a_model_error_naming_the_card():
    broken = GlideEditor(GLIDE_TINY)
    with torch.no_grad():
        for param in broken.pipeline[1].parameters():  # the upsampler
            param.fill_(float("nan"))
    with pytest.raises(ModelError, match=r"^generator 'glide.tiny' produced non-finite pixels$"):
        broken.edit(_image(), _mask(), "a red cat", seed=1)


def test_sampling_keeps_the_known_region_exactly():
    schedule = Schedule.make("linear", "5")
    gen = torch.Generator().manual_seed(0)
    known = torch.rand(1, 3, 8, 8) * 2 - 1
    keep = (torch.rand(1, 1, 8, 8) > 0.5).float()

    def predict(x, t):
        return torch.randn(x.shape, generator=gen) * 3, torch.zeros_like(x)

    out = sample(predict, schedule, torch.randn(1, 3, 8, 8, generator=gen), known, keep, gen)
    assert torch.equal(out * keep, known * keep)
    assert out.abs().max() <= 1 and not torch.equal(out * (1 - keep), known * (1 - keep))


# -- schedules -----------------------------------------------------------------------
def test_respacing_follows_the_official_rules():
    base = space_timesteps(1000, "100")
    assert len(base) == 100 and base[0] == 0 and base[-1] == 999
    fast = space_timesteps(1000, "fast27")
    assert len(fast) == 27 and 997 in fast and 999 not in fast and fast[0] == 0
    assert space_timesteps(1000, "ddim50") == list(range(0, 1000, 20))
    full = Schedule.make("squaredcos_cap_v2", "1000")
    assert np.allclose(full.betas, beta_schedule("squaredcos_cap_v2", 1000))
    assert beta_schedule("squaredcos_cap_v2", 1000).max() == pytest.approx(0.999)
    lin = beta_schedule("linear", 1000)
    assert lin[0] == pytest.approx(1e-4) and lin[-1] == pytest.approx(0.02)
    short = Schedule.make("linear", "fast27")
    assert list(short.timestep_map) == fast
    assert np.allclose(np.cumprod(1 - short.betas), short.alphas_cumprod)  # respaced betas chain up
    for bad in ("0", "2000", "fast"):
        with pytest.raises(ConfigError):
            space_timesteps(1000, bad)


# -- tokenizer -----------------------------------------------------------------------
def test_tokenizer_is_lowercased_byte_bpe_padded_with_the_end_token():
    tiny = GlideTokenizer.tiny()
    symbols = list(tiny._bpe.get_vocab())
    vocab = {s: i for i, s in enumerate(sorted(symbols, key=tiny._bpe.token_to_id)[:-1])}
    for piece in ("he", "ll", "hell", "hello", "Ġw"):
        vocab[piece] = len(vocab)
    vocab[END_TEXT] = len(vocab)
    tok = GlideTokenizer(vocab, [("h", "e"), ("l", "l"), ("he", "ll"), ("hell", "o"), ("Ġ", "w")])
    ids = tok.encode("HeLLo wow")
    assert ids == tok.encode("hello wow")
    assert ids[0] == vocab["hello"] and ids[1] == vocab["Ġw"] and len(ids) == 4
    padded, mask = tok.padded(ids, 6)
    assert padded == [*ids, tok.end_token, tok.end_token] and mask == [True] * 4 + [False] * 2
    assert tok.end_token == vocab[END_TEXT] == tok.n_vocab - 1
    assert tok.padded(list(range(9)), 6)[1] == [True] * 6
    with pytest.raises(ModelError, match="last"):
        GlideTokenizer({"a": 0, END_TEXT: 1, "b": 2}, [])


# -- official key names --------------------------------------------------------------
def _official_keys(image_size, channels, blocks, mult, attention, layers) -> set[str]:
    """Parameter names of upstream's (SuperRes)InpaintText2ImUNet, enumerated from its unet.py rules."""
    keys = {"positional_embedding", "padding_embedding", "token_embedding.weight"}
    keys |= {f"{m}.{p}" for m in ("final_ln", "transformer_proj", "time_embed.0", "time_embed.2") for p in WB}
    for i in range(layers):
        for m in ("attn.c_qkv", "attn.c_proj", "ln_1", "mlp.c_fc", "mlp.c_proj", "ln_2"):
            keys |= {f"transformer.resblocks.{i}.{m}.{p}" for p in WB}

    def res(prefix, cin, cout):
        mods = ["in_layers.0", "in_layers.2", "emb_layers.1", "out_layers.0", "out_layers.3"]
        keys.update(f"{prefix}.{m}.{p}" for m in mods + (["skip_connection"] if cin != cout else []) for p in WB)

    def attn(prefix):
        keys.update(f"{prefix}.{m}.{p}" for m in ("norm", "qkv", "encoder_kv", "proj_out") for p in WB)

    attn_ds = {image_size // r for r in attention}
    keys |= {f"input_blocks.0.0.{p}" for p in WB} | {f"out.{i}.{p}" for i in (0, 2) for p in WB}
    ch, chans, ds, n = channels * mult[0], [channels * mult[0]], 1, 1
    for level, m in enumerate(mult):
        for _ in range(blocks):
            res(f"input_blocks.{n}.0", ch, channels * m)
            ch = channels * m
            if ds in attn_ds:
                attn(f"input_blocks.{n}.1")
            chans.append(ch)
            n += 1
        if level < len(mult) - 1:
            res(f"input_blocks.{n}.0", ch, ch)
            chans.append(ch)
            ds, n = ds * 2, n + 1
    res("middle_block.0", ch, ch), attn("middle_block.1"), res("middle_block.2", ch, ch)
    n = 0
    for level in reversed(range(len(mult))):
        for i in range(blocks + 1):
            res(f"output_blocks.{n}.0", ch + chans.pop(), channels * mult[level])
            ch, j = channels * mult[level], 1
            if ds in attn_ds:
                attn(f"output_blocks.{n}.1")
                j = 2
            if level and i == blocks:
                res(f"output_blocks.{n}.{j}", ch, ch)
                ds //= 2
            n += 1
    return keys


@pytest.mark.parametrize(
    "card_model, in_channels, official_text2im_params",
    [("base", 7, 385_030_726), ("upsampler", 10, 398_361_286)],
)
def test_real_configs_have_the_official_parameter_names_and_shapes(card_model, in_channels, official_text2im_params):
    cfg = GlideConfig.from_dict(GLIDE_INPAINT.options[card_model]["model"])
    with torch.device("meta"):
        model = GlideUNet(cfg)
    state = model.state_dict()
    expected = _official_keys(cfg.image_size, 192, cfg.num_res_blocks, cfg.channel_mult, (32, 16, 8), 16)
    assert set(state) == expected
    shapes = {
        "input_blocks.0.0.weight": (192, in_channels, 3, 3),
        "transformer.resblocks.0.attn.c_qkv.weight": (1536, 512),
        "transformer.resblocks.15.mlp.c_fc.weight": (2048, 512),
        "padding_embedding": (128, 512),
        "positional_embedding": (128, 512),
        "token_embedding.weight": (50257, 512),
        "final_ln.weight": (512,),
        "transformer_proj.weight": (768, 512),
        "time_embed.0.weight": (768, 192),
        "time_embed.2.weight": (768, 768),
        "out.2.weight": (6, 192, 3, 3),
        "middle_block.0.emb_layers.1.weight": (2 * 192 * cfg.channel_mult[-1], 768),
        "middle_block.1.encoder_kv.weight": (2 * 192 * cfg.channel_mult[-1], 512, 1),
    }
    if card_model == "base":  # level 3 (768 ch) ends with the upsampling ResBlock after attention
        shapes["output_blocks.3.2.in_layers.2.weight"] = (768, 768, 3, 3)
        shapes["input_blocks.4.0.in_layers.0.weight"] = (192,)  # first downsampling ResBlock
    for key, shape in shapes.items():
        assert tuple(state[key].shape) == shape, key
    # upstream's notebooks print 385,030,726 / 398,361,286 parameters for the text2im models;
    # inpainting adds 4 input channels to the first 3x3 conv of 192 filters
    assert sum(p.numel() for p in model.parameters()) == official_text2im_params + 4 * 192 * 9


def test_config_rejects_unknown_keys():
    with pytest.raises(ConfigError, match="num_heads"):
        GlideConfig.from_dict({"num_heads": 4})


# -- weights-only loading ------------------------------------------------------------
def test_saved_state_dict_round_trips_strictly(tmp_path):
    cfg = GlideConfig.from_dict(GLIDE_TINY.options["base"]["model"])
    torch.manual_seed(0)
    model = GlideUNet(cfg).eval()
    torch.save(model.state_dict(), tmp_path / "base.pt")
    loaded = load_model(cfg, load_state_dict(tmp_path / "base.pt"), "test")
    for key, value in model.state_dict().items():
        assert torch.equal(loaded.state_dict()[key], value), key
    state = load_state_dict(tmp_path / "base.pt")
    state.pop("padding_embedding")
    with pytest.raises(ModelError, match="padding_embedding"):
        load_model(cfg, state, "test")


class _Payload:
    def __reduce__(self):
        return (os.getcwd, ())


@pytest.mark.parametrize("extra", [_Payload(), 3, "text"], ids=["object", "int", "str"])
def test_loader_refuses_anything_but_tensors(tmp_path, extra):
    torch.save({"w": torch.zeros(2), "extra": extra}, tmp_path / "bad.pt")
    with pytest.raises(ModelError, match="refus(ed|ing to load)"):
        load_state_dict(tmp_path / "bad.pt")


# -- real card: files, cache, offline ------------------------------------------------
def test_real_card_offline_raises_naming_the_url():
    editor = GlideEditor(GLIDE_INPAINT)  # lazy: nothing is fetched yet
    with pytest.raises(WeightsUnavailableError, match=BASE_INPAINT_URL) as info:
        editor.edit(_image(), _mask(), "a cat", seed=0)
    text = str(info.value)
    assert UPSAMPLE_INPAINT_URL in text and str(cached_path(BASE_INPAINT_URL)) in text
    assert not cached_path(BASE_INPAINT_URL).exists()


def test_cached_files_load_through_the_real_path(editor):
    """Checkpoints + tokenizer files in the cache are loaded offline exactly like the official ones."""
    base, up, tokenizer = editor.pipeline
    urls = {k: f"https://example.invalid/glide/{k}" for k in ("base.pt", "up.pt", "enc.json.gz", "vocab.bpe.gz")}
    cached_path(urls["base.pt"]).parent.mkdir(parents=True, exist_ok=True)
    torch.save(base.state_dict(), cached_path(urls["base.pt"]))
    torch.save(up.state_dict(), cached_path(urls["up.pt"]))
    with gzip.open(cached_path(urls["enc.json.gz"]), "wt", encoding="utf-8") as f:
        json.dump(tokenizer._bpe.get_vocab(), f)
    with gzip.open(cached_path(urls["vocab.bpe.gz"]), "wt", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
    options = {**GLIDE_TINY.options, "weights": {
        "base": urls["base.pt"], "upsampler": urls["up.pt"],
        "encoder_json": urls["enc.json.gz"], "vocab_bpe": urls["vocab.bpe.gz"],
    }}
    card = dataclasses.replace(GLIDE_TINY, name="glide.files", tiny=False, weights=urls["base.pt"], options=options)
    image, mask = _image(), _mask()
    expected = editor.edit(image, mask, "a lamp", seed=2).image
    assert np.array_equal(GlideEditor(card).edit(image, mask, "a lamp", seed=2).image, expected)
