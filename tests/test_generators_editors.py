"""Tiny diffusers editors: exact compositing, determinism, offline errors."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Iterator

import numpy as np
import pytest

from diffzoo.generators.editors.cards import FLUX1_FILL, GENERATOR_CARDS, SD2_INPAINT
from diffzoo.generators.editors.diffusers_editor import DiffusersEditor
from diffzoo.generators.generate.regions import random_region
from diffzoo.harness.core.errors import DataError, ModelError, WeightsUnavailableError
from diffzoo.harness.core.protocols import EditResult, Generator

TINY_CARDS = [c for c in GENERATOR_CARDS if c.tiny]


def _image(h: int = 64, w: int = 64, seed: int = 0) -> np.ndarray:
    yy, xx = np.mgrid[0:h, 0:w]
    noise = np.random.default_rng(seed).integers(0, 30, (h, w, 3))
    base = np.stack([xx * 3, yy * 3, (xx + yy) * 2], -1) % 200 + noise
    return base.astype(np.uint8)


def _mask(h: int = 64, w: int = 64, seed: int = 0) -> np.ndarray:
    return random_region(h, w, np.random.default_rng(seed), min_frac=0.15, max_frac=0.3).mask


@pytest.fixture(scope="module")
def editors() -> Iterator[dict[str, DiffusersEditor]]:
    import torch

    # tiny models: one thread is as fast and does not collapse on a busy 2-core CPU
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield {c.name: DiffusersEditor(c) for c in TINY_CARDS}
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("card", TINY_CARDS, ids=lambda c: c.name)
def test_tiny_editor_changes_only_the_mask(editors, card):
    editor = editors[card.name]
    image, mask = _image(), _mask()
    result = editor.edit(image, mask, "a red cat", seed=1)
    assert isinstance(editor, Generator) and isinstance(result, EditResult)
    assert result.image.shape == image.shape and result.image.dtype == np.uint8
    differs = (result.image != image).any(-1)
    assert not differs[~mask].any(), "pixels outside the mask must equal the input exactly"
    assert differs[mask].mean() > 0.8, "most masked pixels must change"
    assert np.array_equal(result.changed, mask) and result.changed.dtype == bool
    meta = result.metadata
    assert meta["generator"] == card.name and meta["pipeline"] == card.pipeline
    assert meta["composited"] is True and meta["seed"] == 1 and meta["prompt"] == "a red cat"
    assert meta["steps"] == 2 and meta["resolution"] == 64 and meta["weights"] is None


@pytest.mark.parametrize("card", TINY_CARDS, ids=lambda c: c.name)
def test_tiny_editor_is_deterministic_per_seed(editors, card):
    editor = editors[card.name]
    image, mask = _image(seed=3), _mask(seed=3)
    a = editor.edit(image, mask, "a wooden chair", seed=7).image
    b = editor.edit(image, mask, "a wooden chair", seed=7).image
    c = editor.edit(image, mask, "a wooden chair", seed=8).image
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_fresh_build_gives_identical_output(editors):
    image, mask = _image(), _mask()
    a = editors["sdxl.tiny"].edit(image, mask, "a cup", seed=4).image
    b = DiffusersEditor(editors["sdxl.tiny"].card).edit(image, mask, "a cup", seed=4).image
    assert np.array_equal(a, b)


def test_other_image_sizes_are_resized_in_and_out(editors):
    image, mask = _image(40, 72), _mask(40, 72, seed=2)
    result = editors["flux1.tiny"].edit(image, mask, "a blue ball", seed=0)
    assert result.image.shape == (40, 72, 3)
    differs = (result.image != image).any(-1)
    assert not differs[~mask].any() and differs[mask].mean() > 0.8


def test_pipeline_call_kwargs_reproduce_the_bare_call(editors):
    editor = editors["sd2.tiny"]
    image, mask = _image(), _mask()
    kwargs = editor.pipeline_call_kwargs(image, mask, "a dog", seed=5)
    assert kwargs["strength"] == 1.0 and kwargs["num_inference_steps"] == 2
    assert kwargs["height"] == kwargs["width"] == 64
    out = editor.pipeline(**kwargs).images[0]
    edited = (np.clip(out, 0, 1) * 255 + 0.5).astype(np.uint8)
    expected = editor.edit(image, mask, "a dog", seed=5).image
    assert np.array_equal(np.where(mask[..., None], edited, image), expected)


def test_bad_inputs_raise_data_errors(editors):
    editor = editors["sd2.tiny"]
    with pytest.raises(DataError, match="uint8"):
        editor.edit(_image().astype(np.float32), _mask(), "x", 0)
    with pytest.raises(DataError, match="mask shape"):
        editor.edit(_image(), _mask(32, 32), "x", 0)
    with pytest.raises(DataError, match="need a mask"):
        editor.edit(_image(), None, "x", 0)


def test_non_finite_pixels_are_a_model_error_naming_the_card(editors):
    import torch

    broken = DiffusersEditor(editors["sd2.tiny"].card)
    with torch.no_grad():
        for param in broken.pipeline.vae.decoder.parameters():
            param.fill_(float("inf"))
    with pytest.raises(ModelError, match=r"^generator 'sd2.tiny' produced non-finite pixels$"):
        broken.edit(_image(), _mask(), "x", 0)


@pytest.mark.parametrize("card", [SD2_INPAINT, FLUX1_FILL], ids=lambda c: c.name)
def test_real_card_offline_raises_weights_unavailable(monkeypatch, tmp_path, card):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    import huggingface_hub.constants as hub_constants

    # the hub library reads these at import time; point it at an empty cache, offline
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", True, raising=False)
    monkeypatch.setattr(hub_constants, "HF_HUB_CACHE", str(tmp_path / "hf" / "hub"), raising=False)
    editor = DiffusersEditor(card)  # lazy: nothing loads yet
    with pytest.raises(WeightsUnavailableError, match=card.weights):
        editor.edit(_image(), _mask(), "a cat", seed=0)


def test_weights_identical_across_processes(editors, tmp_path):
    """Same seed -> same tiny weights -> same pixels in a fresh interpreter."""
    image, mask = _image(), _mask()
    np.save(tmp_path / "image.npy", image)
    np.save(tmp_path / "mask.npy", mask)
    here = hashlib.sha256(editors["sd2.tiny"].edit(image, mask, "a cat", seed=3).image.tobytes()).hexdigest()
    code = (
        "import hashlib, sys, numpy as np\n"
        "from diffzoo.generators.editors.cards import SD2_TINY\n"
        "from diffzoo.generators.editors.diffusers_editor import DiffusersEditor\n"
        "image, mask = np.load(sys.argv[1]), np.load(sys.argv[2])\n"
        "r = DiffusersEditor(SD2_TINY).edit(image, mask, 'a cat', seed=3)\n"
        "print(hashlib.sha256(r.image.tobytes()).hexdigest())\n"
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    args = [sys.executable, "-c", code, str(tmp_path / "image.npy"), str(tmp_path / "mask.npy")]
    out = subprocess.run(args, capture_output=True, text=True, timeout=180, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == here
