"""Generator cards, the plugin's lazy registration, regions and prompts."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from diffzoo.generators import plugin
from diffzoo.generators.editors.cards import (
    CARDS_BY_NAME,
    DEFAULT_CARDS,
    GENERATOR_CARDS,
    SD_T2I_TINY,
    TINY_EDITORS,
    get_card,
)
from diffzoo.generators.generate.prompts import EDIT_TYPES, make_caption, make_prompt
from diffzoo.generators.generate.regions import SHAPES, bbox_of, random_region
from diffzoo.harness.core.errors import ConfigError, UnknownNameError
from diffzoo.harness.core.registry import Registry
from diffzoo.harness.data.labelmaps import DIFFSEG30K_EDITORS


def test_each_family_has_one_real_default_and_a_tiny_card():
    families = {c.family for c in GENERATOR_CARDS}
    assert families == {"sd2", "sd35", "sdxl", "flux1", "kolors", "hunyuandit", "kandinsky22"}
    for family in families:
        defaults = [c for c in GENERATOR_CARDS if c.family == family and c.name in DEFAULT_CARDS]
        assert len(defaults) == 1
        d = defaults[0]
        assert not d.tiny and d.weights and d.licence and d.paper and d.steps >= 20
        assert get_card(family) is d
        assert f"{family}.tiny" in CARDS_BY_NAME
    for card in GENERATOR_CARDS:
        assert card.tiny == (card.weights is None)
        if card.tiny:
            assert card.resolution == 64 and card.steps == 2
    assert set(TINY_EDITORS.values()) == {"sd2.tiny", "sd35.tiny", "sdxl.tiny", "flux1.tiny", "glide.tiny",
                                          "kolors.tiny", "hunyuandit.tiny", "kandinsky22.tiny"}
    assert tuple(TINY_EDITORS) == DIFFSEG30K_EDITORS  # mini is labelled like DiffSeg30k
    assert SD_T2I_TINY.tiny and SD_T2I_TINY.pipeline == "StableDiffusionPipeline"
    with pytest.raises(UnknownNameError, match=r"unknown generator 'sd3x'\. Did you mean .*'sd35'"):
        get_card("sd3x")


def test_plugin_registers_every_card_lazily():
    reg = Registry()
    plugin.register_generators(register=lambda *a, **k: reg.add("generator", *a, source="t", **k))
    plugin.register_datasets(register=lambda *a, **k: reg.add("dataset", *a, source="t", **k))
    assert {e.name for e in reg.list("generator")} == set(CARDS_BY_NAME) - {SD_T2I_TINY.name}  # every editor card
    for family in ("sd2", "sdxl", "flux1"):
        entry = reg.get("generator", family)
        assert entry.default and entry.name in DEFAULT_CARDS and entry.card.name == entry.name
        assert isinstance(entry.target, str)
    assert reg.get("dataset", "mini").target == "diffzoo.generators.datasets.mini:open_mini"
    glide = reg.get("generator", "glide")
    assert glide.name == "glide.inpaint" and glide.target == "diffzoo.generators.editors.glide.editor:GlideEditor"
    assert get_card("glide").name == "glide.inpaint" and get_card("glide.tiny").tiny


def test_plugin_import_does_not_import_torch():
    code = (
        "import sys; import diffzoo.generators.plugin;"
        "bad = [m for m in ('torch', 'diffusers', 'transformers') if m in sys.modules];"
        "assert not bad, bad; print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr


def test_regions_are_object_like_and_seeded():
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(60):
        region = random_region(64, 64, rng)
        seen.add(region.shape)
        m = region.mask
        assert m.dtype == bool and m.shape == (64, 64)
        assert 0.025 <= region.fraction <= 0.36
        assert not (m[0].any() or m[-1].any() or m[:, 0].any() or m[:, -1].any())
        assert region.bbox == bbox_of(m)
        x0, y0, x1, y1 = region.bbox
        assert m[y0:y1, x0:x1].sum() == m.sum()
    assert seen == set(SHAPES)
    a = random_region(48, 80, np.random.default_rng(5))
    b = random_region(48, 80, np.random.default_rng(5))
    assert np.array_equal(a.mask, b.mask) and a.shape == b.shape
    with pytest.raises(ConfigError):
        random_region(64, 64, rng, shapes=("square",))


def test_prompts_per_edit_type():
    rng = np.random.default_rng(0)
    for edit_type in EDIT_TYPES:
        prompts = {make_prompt(edit_type, rng) for _ in range(20)}
        assert len(prompts) > 3 and all(p.strip() for p in prompts)
    assert "zebra" in make_prompt("object_addition", rng, obj="zebra")
    assert make_caption(np.random.default_rng(1)) == make_caption(np.random.default_rng(1))
    with pytest.raises(ConfigError, match="attribute_change"):
        make_prompt("recolour", rng)


def test_create_generator_through_the_registry_is_lazy():
    code = (
        "import sys; from diffzoo import create_generator;"
        "e = create_generator('sdxl'); t = create_generator('flux1.tiny');"
        "assert e.card.name == 'sdxl.inpaint' and t.card.tiny;"
        "assert 'torch' not in sys.modules and 'diffusers' not in sys.modules; print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr
