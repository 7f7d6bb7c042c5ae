"""All DiffSeg30k editor families: every tiny card edits only its mask, reproducibly;
latent blending (Kolors, HunyuanDiT) keeps the known latents on the original's path;
real cards fail offline naming the hub id, without touching the network."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace

import numpy as np
import pytest

from diffzoo.generators.editors.cards import DEFAULT_CARDS, GENERATOR_CARDS, get_card
from diffzoo.generators.editors.diffusers_editor import DiffusersEditor
from diffzoo.generators.generate.regions import random_region
from diffzoo.harness.core.errors import ModelError, WeightsUnavailableError

TINY_CARDS = [c for c in GENERATOR_CARDS if c.tiny]
REAL_CARDS = [c for c in GENERATOR_CARDS if not c.tiny]
NEW_TINY = ["sd35.tiny", "kandinsky22.tiny", "kolors.tiny", "hunyuandit.tiny"]
BLEND_TINY = [c for c in TINY_CARDS if not c.native_inpaint]

# the hub ids and pipeline classes each family's model card names
NEW_FAMILIES = {
    "sd35": ("stabilityai/stable-diffusion-3.5-medium", "StableDiffusion3InpaintPipeline", True),
    "kandinsky22": (
        "kandinsky-community/kandinsky-2-2-decoder-inpaint",
        "KandinskyV22InpaintCombinedPipeline",
        True,
    ),
    "kolors": ("Kwai-Kolors/Kolors-diffusers", "KolorsPipeline", False),
    "hunyuandit": ("Tencent-Hunyuan/HunyuanDiT-v1.1-Diffusers", "HunyuanDiTPipeline", False),
}


def _image(h: int = 64, w: int = 64, seed: int = 0) -> np.ndarray:
    yy, xx = np.mgrid[0:h, 0:w]
    noise = np.random.default_rng(seed).integers(0, 40, (h, w, 3))
    return (np.stack([xx * 2 + 30, 200 - yy * 2, (xx * yy) % 90 + 60], -1) + noise).clip(0, 255).astype(np.uint8)


def _mask(h: int = 64, w: int = 64, seed: int = 0) -> np.ndarray:
    return random_region(h, w, np.random.default_rng(seed), min_frac=0.15, max_frac=0.3).mask


@pytest.fixture(scope="module")
def editors() -> Iterator[dict[str, DiffusersEditor]]:
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models: one thread is as fast and steadier on a shared CPU
    try:
        yield {c.name: DiffusersEditor(c) for c in TINY_CARDS}
    finally:
        torch.set_num_threads(before)


def test_every_family_has_a_real_default_and_a_tiny_variant():
    families = {c.family for c in GENERATOR_CARDS}
    assert set(NEW_FAMILIES) <= families
    for family in families:
        real = get_card(family)
        assert real.name in DEFAULT_CARDS and not real.tiny and real.weights
        tiny = get_card(f"{family}.tiny")
        assert tiny.tiny and tiny.weights is None
        assert (tiny.pipeline, tiny.native_inpaint) == (real.pipeline, real.native_inpaint)
    for family, (hub_id, pipeline, native) in NEW_FAMILIES.items():
        card = get_card(family)
        assert (card.weights, card.pipeline, card.native_inpaint) == (hub_id, pipeline, native)
    assert get_card("sd35.large").weights == "stabilityai/stable-diffusion-3.5-large"
    assert DiffusersEditor(get_card("kolors")).mode == "blend"  # lazy: builds nothing
    assert DiffusersEditor(get_card("sd35")).mode == "native"


@pytest.mark.parametrize("card", TINY_CARDS, ids=lambda c: c.name)
def test_tiny_editor_changes_only_the_mask_reproducibly(editors, card):
    editor = editors[card.name]
    image, mask = _image(seed=1), _mask(seed=1)
    a = editor.edit(image, mask, "a red cat", seed=7)
    differs = (a.image != image).any(-1)
    assert not differs[~mask].any(), "outside the mask the output must equal the input exactly"
    assert differs[mask].mean() > 0.8, "most masked pixels must change"
    assert np.array_equal(a.changed, mask)
    assert np.array_equal(editor.edit(image, mask, "a red cat", seed=7).image, a.image)
    assert not np.array_equal(editor.edit(image, mask, "a red cat", seed=8).image, a.image)
    meta = a.metadata
    assert meta["mode"] == ("native" if card.native_inpaint else "blend")
    assert meta["composited"] is True and meta["generator"] == card.name
    assert meta["pipeline"] == card.pipeline == type(editor.pipeline).__name__


@pytest.mark.parametrize("name", NEW_TINY)
def test_fresh_build_gives_identical_output(editors, name):
    card = get_card(name)
    image, mask = _image(seed=2), _mask(seed=2)
    a = editors[name].edit(image, mask, "a blue vase", seed=4).image
    b = DiffusersEditor(card).edit(image, mask, "a blue vase", seed=4).image
    assert np.array_equal(a, b)


@pytest.mark.parametrize("card", BLEND_TINY, ids=lambda c: c.name)
def test_blend_keeps_known_latents_on_the_original_path(editors, card):
    """Unmasked latent cells end exactly at the input's latents; masked ones are generated."""
    import torch

    editor = editors[card.name]
    image = _image(seed=3)
    mask = np.zeros((64, 64), bool)
    mask[20:44, 8:40] = True
    kwargs = editor.pipeline_call_kwargs(image, mask, "a green apple", seed=0)
    assert "image" not in kwargs and "strength" not in kwargs
    blend = kwargs["callback_on_step_end"]
    kwargs["output_type"] = "latent"
    with torch.inference_mode():
        latents = editor.pipeline(**kwargs).images
    keep = blend.regen[0, 0] == 0
    assert keep.any() and (~keep).any()
    assert torch.equal(latents[..., keep], blend.z0[..., keep])
    assert not torch.allclose(latents[..., ~keep], blend.z0[..., ~keep])


def test_latent_blend_with_a_flow_matching_scheduler():
    """The blend uses ``scale_noise`` on flow-matching schedulers, ``add_noise`` otherwise."""
    import torch
    from diffusers import DDPMScheduler, FlowMatchEulerDiscreteScheduler

    from diffzoo.generators.editors.latent_blend import LatentBlend, noised

    g = torch.Generator().manual_seed(0)
    z0, noise, latents = (torch.randn(1, 4, 8, 8, generator=g) for _ in range(3))
    regen = torch.zeros(1, 1, 8, 8)
    regen[..., 2:5, 3:6] = 1
    flow = FlowMatchEulerDiscreteScheduler()
    flow.set_timesteps(3)
    blend = LatentBlend(z0, noise, regen)
    pipe = SimpleNamespace(scheduler=flow)
    out = blend(pipe, 0, flow.timesteps[0], {"latents": latents})["latents"]
    sigma = flow.sigmas[1]
    keep = regen[0, 0] == 0
    expected = (1 - sigma) * z0 + sigma * noise
    assert torch.allclose(out[..., keep], expected[..., keep], atol=1e-6)
    assert torch.equal(out[..., ~keep], latents[..., ~keep])
    last = blend(pipe, 2, flow.timesteps[2], {"latents": latents})["latents"]
    assert torch.equal(last[..., keep], z0[..., keep])
    ddpm = DDPMScheduler()
    ddpm.set_timesteps(2)
    acp = ddpm.alphas_cumprod[int(ddpm.timesteps[1])]
    assert torch.allclose(noised(ddpm, z0, noise, ddpm.timesteps[1]), acp.sqrt() * z0 + (1 - acp).sqrt() * noise)
    with pytest.raises(ModelError, match="unpacked"):
        blend(pipe, 0, flow.timesteps[0], {"latents": torch.zeros(1, 16, 4)})


def test_regenerate_mask_covers_every_masked_pixel():
    from diffzoo.generators.editors.latent_blend import regenerate_mask

    mask = np.zeros((16, 16), bool)
    mask[5, 9] = True  # one pixel marks its whole 4x4 cell for generation
    regen = regenerate_mask(mask, (4, 4))
    assert regen.shape == (1, 1, 4, 4) and regen.sum() == 1 and regen[0, 0, 1, 2] == 1
    with pytest.raises(ModelError, match="does not divide"):
        regenerate_mask(mask, (5, 5))


@pytest.mark.parametrize("card", REAL_CARDS, ids=lambda c: c.name)
def test_real_card_offline_names_the_hub_id_without_downloading(offline_empty_hub, card):
    editor = DiffusersEditor(card)
    with pytest.raises(WeightsUnavailableError, match=card.weights) as info:
        editor.edit(_image(), _mask(), "a cat", seed=0)
    for extra in card.options.get("extra_weights", ()):
        assert extra in str(info.value)
    assert offline_empty_hub == [], "no network connection may be attempted"
