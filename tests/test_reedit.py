"""The ``reedit`` distortion: re-edits one editor's region with a generator card.

The real-pipeline tests use the tiny offline card ``sdxl.tiny-lora`` (the
stand-in of SDXL + Hyper-SD); the others inject a fake generator to check the
prompt, seed, compositing and cache logic exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

from diffzoo.generators.datasets import reedit as R
from diffzoo.harness.core.errors import ConfigError, DiffzooError
from diffzoo.harness.core.fsutil import cache_root
from diffzoo.harness.core.protocols import EditResult
from diffzoo.harness.core.types import EditRecord, LabelSpace, SampleMeta
from diffzoo.harness.data.distortions import decode

SPACE = LabelSpace.from_editors(("sd2", "sdxl", "flux1"))
SDXL = SPACE.index("sdxl")
CARD = "sdxl.tiny-lora"


def make_sample(size: int = 40) -> tuple[np.ndarray, np.ndarray]:
    yy, xx = np.mgrid[0:size, 0:size]
    image = np.stack([xx * 5, yy * 6, np.full_like(xx, 120)], -1).astype(np.uint8)
    label = np.zeros((size, size), np.uint8)
    label[4:20, 6:26] = SDXL
    label[24:36, 24:36] = SPACE.index("sd2")
    label[0, :] = 255
    return image, label


META = SampleMeta(
    id="00000042",
    turns=(
        EditRecord("sdxl", prompt="a red umbrella"),
        EditRecord("sd2", prompt="a dog"),
        EditRecord("sdxl", prompt="a green lamp"),
    ),
)


def call(image, label, meta=META, **kw):
    params = {"editor": "sdxl", "generator": CARD, **kw}
    return R.reedit(image, label, meta=meta, label_space=SPACE, **params)


class FakeEditor:
    """Records its calls; paints every pixel (inside and outside the mask)."""

    def __init__(self):
        self.calls = []

    def edit(self, image, mask, prompt, seed):
        self.calls.append({"mask": mask.copy(), "prompt": prompt, "seed": seed})
        painted = np.full_like(image, seed % 251)
        return EditResult(image=painted, changed=np.ones(mask.shape, bool))


@pytest.fixture
def fake(monkeypatch):
    editor = FakeEditor()
    monkeypatch.setattr(R, "_generator", lambda name, device: editor)
    return editor


@pytest.fixture
def no_generator(monkeypatch):
    def refuse(*args):
        raise AssertionError("the generator must not be built or called")

    monkeypatch.setattr(R, "_generator", refuse)


def test_tiny_lora_changes_only_the_editor_region_and_is_deterministic():
    image, label = make_sample()
    out, out_label = call(image, label, cache=False)
    region = label == SDXL
    assert out.shape == image.shape and out.dtype == np.uint8
    assert out_label is label  # the region keeps the sdxl class
    assert np.array_equal(out[~region], image[~region])  # bit-identical outside
    assert (out[region] != image[region]).any(axis=-1).mean() > 0.5
    again, _ = call(image.copy(), label.copy(), cache=False)
    assert again.tobytes() == out.tobytes()
    other, _ = call(image, label, meta=SampleMeta(id="00000043", turns=META.turns), cache=False)
    assert not np.array_equal(other[region], out[region])  # the seed follows the sample id


def test_second_call_is_a_cache_hit_that_never_builds_the_generator(monkeypatch):
    image, label = make_sample()
    first, _ = call(image, label)
    files = list((cache_root() / "reedits").rglob("*"))
    pngs = [f for f in files if f.suffix == ".png"]
    assert len(pngs) == 1 and pngs[0].parent.name == CARD
    assert not [f for f in files if f.name.endswith(".tmp")]  # written atomically
    monkeypatch.setattr(R, "_generator", lambda *a: pytest.fail("cache hit ran the generator"))
    second, _ = call(image, label)
    assert second.tobytes() == first.tobytes()
    assert np.array_equal(decode(pngs[0].read_bytes()), first)


def test_cache_key_covers_prompt_seed_mask_and_image(fake):
    image, label = make_sample()
    call(image, label)
    call(image, label)  # hit
    assert len(fake.calls) == 1
    call(image, label, seed=1)
    call(image, label, meta=SampleMeta(id=META.id, turns=(EditRecord("sdxl", prompt="a cat"),)))
    moved = label.copy()
    moved[20, 6] = SDXL
    call(image, moved)
    brighter = image.copy()
    brighter[30, 30] += 1  # outside the region, still another image
    call(brighter, label)
    assert len(fake.calls) == 5
    assert len(list((cache_root() / "reedits").rglob("*.png"))) == 5


def test_prompt_is_the_last_turn_of_the_editor_and_seed_comes_from_seed_and_id(fake):
    image, label = make_sample()
    call(image, label, cache=False)
    call(image, label, meta=SampleMeta(id="x", turns=(EditRecord("sd2", prompt="a dog"),)), cache=False)
    call(image, label, meta=SampleMeta(id="x"), seed=7, cache=False)
    prompts = [c["prompt"] for c in fake.calls]
    assert prompts == ["a green lamp", R.DEFAULT_PROMPT, R.DEFAULT_PROMPT]
    seeds = [c["seed"] for c in fake.calls]
    assert seeds[0] == R.reedit_seed(0, META.id) and seeds[1] == R.reedit_seed(0, "x")
    assert seeds[2] == R.reedit_seed(7, "x") and len(set(seeds)) == 3
    assert np.array_equal(fake.calls[0]["mask"], label == SDXL)


def test_pixels_outside_the_mask_are_enforced_even_if_the_generator_paints_them(fake):
    image, label = make_sample()
    out, _ = call(image, label)
    region = label == SDXL
    assert np.array_equal(out[~region], image[~region])
    assert (out[region] == R.reedit_seed(0, META.id) % 251).all()
    hit, _ = call(image, label)  # from the PNG cache: same bytes
    assert hit.tobytes() == out.tobytes() and len(fake.calls) == 1


def test_no_pixel_of_the_editor_returns_inputs_without_building_the_generator(no_generator):
    image, label = make_sample()
    label[label == SDXL] = 0
    out, out_label = call(image, label)
    assert out is image and out_label is label
    assert not (cache_root() / "reedits").exists()


def test_editor_not_in_label_space_names_the_available_editors(no_generator):
    image, label = make_sample()
    with pytest.raises(ConfigError, match=r"'kolors'.*available editors: sd2, sdxl, flux1"):
        call(image, label, editor="kolors")


def test_an_editor_named_with_spaces_is_the_label_space_s_editor(fake):
    """' sdxl' was refused as not in the label space, though index() reads it as sdxl."""
    image, label = make_sample()
    out, _ = call(image, label, editor=" sdxl ", cache=False)
    assert [c["prompt"] for c in fake.calls] == ["a green lamp"]
    assert np.array_equal(fake.calls[0]["mask"], label == SDXL) and not np.array_equal(out, image)


def test_bad_seed_and_unknown_generator_are_diffzoo_errors(no_generator):
    image, label = make_sample()
    with pytest.raises(ConfigError, match="seed"):
        call(image, label, seed=-1)
    with pytest.raises(DiffzooError, match="sdxl.tiny-lora"):  # did-you-mean
        call(image, label, generator="sdxl.tiny-lorra")
    with pytest.raises(ConfigError) as info:  # the text "false" is truthy: it would read the cache
        call(image, label, cache="false")
    assert str(info.value) == "distortion 'reedit': cache must be true or false, got 'false'"


def test_a_damaged_cache_file_is_replaced(fake):
    image, label = make_sample()
    first, _ = call(image, label)
    (png,) = (cache_root() / "reedits").rglob("*.png")
    png.write_bytes(b"not a png")
    again, _ = call(image, label)
    assert len(fake.calls) == 2 and again.tobytes() == first.tobytes()
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_declares_meta_and_label_space_and_passes_a_non_cpu_device(monkeypatch):
    import inspect

    params = inspect.signature(R.reedit).parameters
    assert params["meta"].kind is params["label_space"].kind is inspect.Parameter.KEYWORD_ONLY
    seen = []
    monkeypatch.setattr(R, "create_generator", lambda name, **kw: seen.append((name, kw)) or object())
    R._generator.__wrapped__(CARD, "cuda:1")
    R._generator.__wrapped__(CARD, "cpu")
    assert seen == [(CARD, {"device": "cuda:1"}), (CARD, {})]
