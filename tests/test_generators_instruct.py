"""Instruction editors (label from pixel differences, no-op/global rejection), their cards and
offline errors, and LoRA variants (Hyper-SD card, tiny random LoRA, any local LoRA file)."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from diffzoo import create_generator
from diffzoo.generators.editors.cards import CARDS_BY_NAME, GENERATOR_CARDS, INSTRUCT_CARDS, SDXL_TINY, get_card
from diffzoo.generators.editors.diffusers_editor import DiffusersEditor
from diffzoo.generators.editors.instruct import EditRejectedError, InstructEditResult, InstructionEditor, run_size
from diffzoo.generators.editors.labels import difference_label
from diffzoo.generators.editors.lora import with_lora
from diffzoo.generators.generate.regions import random_region
from diffzoo.harness.core.errors import ConfigError, DataError, WeightsUnavailableError

TINY_INSTRUCT = get_card("flux2.tiny-klein")
REAL_INSTRUCT = [c for c in INSTRUCT_CARDS if not c.tiny]
# the hub ids and pipeline classes each model card names (FireRed: its hub pages)
EXPECTED = {
    "qwen.edit": ("Qwen/Qwen-Image-Edit", "QwenImageEditPipeline", True),
    "qwen.edit-2509": ("Qwen/Qwen-Image-Edit-2509", "QwenImageEditPlusPipeline", True),
    "qwen.edit-inpaint": ("Qwen/Qwen-Image-Edit", "QwenImageEditInpaintPipeline", False),
    "flux2.dev": ("black-forest-labs/FLUX.2-dev", "Flux2Pipeline", True),
    "flux2.klein-inpaint": ("black-forest-labs/FLUX.2-klein-base-9B", "Flux2KleinInpaintPipeline", False),
    "longcat.edit": ("meituan-longcat/LongCat-Image-Edit", "LongCatImageEditPipeline", True),
    "firered.edit": ("FireRedTeam/FireRed-Image-Edit-1.1", "QwenImageEditPlusPipeline", True),
}


def _image(h: int = 64, w: int = 64, seed: int = 0) -> np.ndarray:
    yy, xx = np.mgrid[0:h, 0:w]
    noise = np.random.default_rng(seed).integers(0, 40, (h, w, 3))
    return (np.stack([xx * 2 + 30, 200 - yy * 2, (xx * yy) % 90 + 60], -1) + noise).clip(0, 255).astype(np.uint8)


def _mask(seed: int = 0) -> np.ndarray:
    return random_region(64, 64, np.random.default_rng(seed), min_frac=0.15, max_frac=0.3).mask


def _raw_output(editor: InstructionEditor, image: np.ndarray, prompt: str, seed: int) -> np.ndarray:
    """The pipeline's own output for the call ``edit`` makes, as uint8."""
    import torch

    with torch.inference_mode():
        out = editor.pipeline(**editor.pipeline_call_kwargs(image, None, prompt, seed)).images[0]
    return (np.clip(out, 0, 1) * 255 + 0.5).astype(np.uint8)




@pytest.fixture(scope="module")
def loose(one_thread) -> InstructionEditor:
    """The tiny FLUX.2 [klein] editor with no upper area bound (random weights repaint everything)."""
    return InstructionEditor(TINY_INSTRUCT, max_area=1.0)


class _Stub:
    """Stands in for a pipeline: returns ``make(input as float)``; records its calls."""

    vae_scale_factor = 8

    def __init__(self, make):
        self.make, self.calls = make, []

    def __call__(self, image, prompt, height, width, generator, output_type, **settings):
        self.calls.append((height, width))
        return SimpleNamespace(images=[self.make(np.asarray(image, np.float32) / 255.0)])


def _stubbed(make, **options) -> InstructionEditor:
    editor = InstructionEditor(TINY_INSTRUCT, **options)
    editor._pipeline = _Stub(make)
    return editor


# -- cards and registration ---------------------------------------------------------
def test_instruction_cards_registry_and_classes():
    from diffzoo.generators import plugin
    from diffzoo.harness.core.registry import Registry

    for name, (hub, pipeline, instruct) in EXPECTED.items():
        card = get_card(name)
        assert (card.weights, card.pipeline, bool(card.options.get("instruct"))) == (hub, pipeline, instruct)
        assert card.native_inpaint == (not instruct)
    for family, default in (("qwen", "qwen.edit"), ("flux2", "flux2.dev"), ("longcat", "longcat.edit")):
        assert get_card(family).name == default
    assert not {c.family for c in INSTRUCT_CARDS} & {c.family for c in GENERATOR_CARDS}
    reg = Registry()
    plugin.register_generators(register=lambda *a, **k: reg.add("generator", *a, source="t", **k))
    assert {c.name for c in INSTRUCT_CARDS} <= {e.name for e in reg.list("generator")}
    assert reg.get("generator", "qwen.edit").target.endswith(":InstructionEditor")
    assert reg.get("generator", "flux2.klein-inpaint").target.endswith(":DiffusersEditor")
    assert reg.get("generator", "flux2").name == "flux2.dev"
    with pytest.raises(ConfigError, match="instruction editor"):
        DiffusersEditor(get_card("qwen.edit"))
    with pytest.raises(ConfigError, match="mask editor"):
        InstructionEditor(get_card("sdxl"))
    assert isinstance(create_generator("longcat"), InstructionEditor)
    assert type(create_generator("qwen.edit-inpaint")) is DiffusersEditor


def test_run_size_keeps_area_and_aspect():
    assert run_size(64, 64, 64, 2) == (64, 64)
    h, w = run_size(480, 640, 1024, 16)
    assert h % 16 == 0 and w % 16 == 0 and abs(h * w / 1024**2 - 1) < 0.05 and abs(w / h - 4 / 3) < 0.03
    assert run_size(4096, 4, 64, 16) == (2048, 16)  # a side never drops below one patch
    assert run_size(10, 10, 1024, 16) == (1024, 1024)  # small inputs are scaled up to the working area
    assert run_size(48, 64, 64, 2, min_side=64) == (64, 86)  # the shorter side is raised to min_side
    assert run_size(64, 64, 64, 2, min_side=64) == run_size(64, 64, 64, 2)  # a square input runs as before


# -- the tiny instruction editor ----------------------------------------------------
def test_tiny_instruction_editor_label_is_the_pixel_difference_label(loose):
    image = _image(seed=1)
    result = loose.edit(image, None, "make the sky red", seed=3)
    assert isinstance(result, InstructEditResult)
    raw = _raw_output(loose, image, "make the sky red", seed=3)
    expected = difference_label(image, raw)  # the documented defaults; the editor only lifts max_area
    assert np.array_equal(result.label, expected.mask)
    assert np.array_equal(result.image, expected.rectified) and result.image.shape == image.shape
    assert np.array_equal(result.changed, expected.mask == 1) and result.changed.any()
    meta = result.metadata
    assert meta["mode"] == "instruct" and meta["composited"] is False and meta["frame"] == "orig"
    assert meta["pipeline"] == "Flux2KleinPipeline" == type(loose.pipeline).__name__
    assert meta["label"]["status"] == "ok" and meta["label"]["settings"]["max_area"] == 1.0
    assert meta["label"]["changed_fraction"] == pytest.approx(expected.changed_fraction)
    assert meta["label"]["alignment"]["used"] is False and meta["run_size"] == [64, 64]


def test_tiny_flux2_edits_a_non_square_image(loose):
    """FLUX.2 takes images with both sides at least 64 px: a 64 x 48 px base runs with its shorter
    side raised to 64 px (aspect kept); one beyond 8:1 is refused before the pipeline runs."""
    image = _image(48, 64)
    result = loose.edit(image, None, "make the sky red", seed=3)
    assert result.image.shape == image.shape and result.metadata["run_size"] == [86, 64]
    with pytest.raises(DataError, match=r"Flux2KleinPipeline takes images of aspect ratio up to 8:1, and this "
                                        r"600 x 64 px image would run at 600 x 64 px"):
        loose.pipeline_call_kwargs(_image(64, 600), None, "make the sky red", seed=3)


def test_tiny_instruction_editor_is_deterministic_per_seed(loose):
    image = _image(seed=2)
    a = loose.edit(image, None, "a blue hat", seed=5)
    b = InstructionEditor(TINY_INSTRUCT, max_area=1.0).edit(image, None, "a blue hat", seed=5)  # fresh build
    assert np.array_equal(a.image, b.image) and np.array_equal(a.label, b.label)
    c = loose.edit(image, None, "a blue hat", seed=6)
    assert not np.array_equal(a.image, c.image)


def test_global_repaint_is_rejected_with_the_result(one_thread):
    editor = InstructionEditor(TINY_INSTRUCT)  # default bounds: random weights repaint > 70%
    image = _image(seed=4)
    with pytest.raises(EditRejectedError, match="rejected-global") as info:
        editor.edit(image, None, "a cat", seed=0)
    err = info.value
    assert err.status == "rejected-global" and err.generator == "flux2.tiny-klein"
    assert err.result.metadata["label"]["changed_fraction"] > 0.7
    assert np.array_equal(err.result.label, difference_label(image, _raw_output(editor, image, "a cat", 0)).mask)


def test_noop_is_rejected_and_a_given_mask_is_ignored():
    editor = _stubbed(lambda x: x)  # returns its input: nothing changed
    image = _image(seed=5)
    with pytest.raises(EditRejectedError, match="rejected-noop") as info:
        editor.edit(image, _mask(), "nothing", seed=0)
    assert info.value.result.metadata["mask_ignored"] is True
    assert not info.value.result.changed.any() and editor.pipeline.calls == [(64, 64)]


def _changing(k: int):
    """A stub output with the first ``k`` pixels (row-major) set far from the input: k visibly changed pixels."""
    def make(x):
        y = x.copy()
        y.reshape(-1, 3)[:k] = x.reshape(-1, 3)[:k] < 0.5
        return y
    return make


@pytest.mark.parametrize("k, options, why", [
    (2869, {}, "rejected-global): 70.1% of the compared pixels changed, above the editor's max_area 70%"),
    (204, {"min_area": 0.05}, "rejected-noop): 4.9% of the compared pixels changed, below the editor's min_area 5%"),
    (200, {"max_area": 100}, "rejected-global): 200 compared pixels changed, above the editor's max_area 100 px"),
    (0, {"min_area": 0}, "rejected-noop): no compared pixel changed"),
])
def test_a_rejection_names_the_one_bound_it_crossed_rounded_away_from_it(k, options, why):
    """A rejection read "70.04% of the compared pixels changed, bounds min_area=0.01 max_area=0.7": both bounds,
    and a share rounded to two places, where the filter of mask edits rounds to one, never onto its bound."""
    editor = _stubbed(_changing(k), align=False, **options)  # 64 x 64 px: 4096 compared pixels
    with pytest.raises(EditRejectedError) as info:
        editor.edit(_image(seed=5), None, "p", seed=0)
    assert str(info.value) == f"generator 'flux2.tiny-klein': edit rejected ({why}"


def test_an_output_of_another_aspect_ratio_alignment_cannot_fit_is_rejected():
    editor = _stubbed(lambda x: x[:, :48].copy())  # a crop: 48 x 64 px of a 64 x 64 input
    with pytest.raises(EditRejectedError) as info:
        editor.edit(_image(seed=5), None, "crop", seed=0)
    reason = info.value.result.metadata["label"]["alignment"]["reason"]
    rounded = _stubbed(lambda x: 1.0 - x if x.shape[:2] == (80, 64) else None, max_area=1.0)
    result = rounded.edit(_image(64, 48), None, "invert", seed=0)  # run at 64 x 80 px: its sides rounded to 16 px
    assert rounded.pipeline.calls == [(80, 64)] and result.metadata["label"]["status"] == "ok"
    assert info.value.status == "rejected-aspect" and str(info.value) == (
        "generator 'flux2.tiny-klein': edit rejected (rejected-aspect): the output, 48 x 64 px, is not the "
        f"input's shape (64 x 64 px) and alignment found no fit ({reason})")


class _SelfSizing(_Stub):
    """A pipeline that takes no height or width and sizes its output itself, as LongCat does: twice its input."""

    def __call__(self, image, prompt, generator, output_type, **settings):
        self.calls.append((image.height, image.width))
        twice = image.resize((image.width * 2, image.height * 2))
        return SimpleNamespace(images=[self.make(np.asarray(twice, np.float32) / 255.0)])


def test_run_size_is_the_size_an_editor_that_sizes_itself_ran_at_not_its_output():
    """LongCat's ``run_size`` recorded its output's size; every other editor's, the size it ran the edit at."""
    editor = InstructionEditor(TINY_INSTRUCT, max_area=1.0)
    editor._pipeline = _SelfSizing(lambda x: 1.0 - x)
    result = editor.edit(_image(64, 48), None, "invert", seed=0)
    assert editor.pipeline.calls == [(80, 64)] and result.metadata["label"]["status"] == "ok"
    assert result.metadata["run_size"] == [64, 80] and result.metadata["output_size"] == [128, 160]


@pytest.mark.parametrize("options, said", [
    ({"tau": 1.5}, "tau must be in [0, 1), got 1.5"),
    ({"min_area": 0.5, "max_area": 0.1}, "min_area (0.5) is above max_area (0.1): every pair would be rejected"),
    ({"cleanup": -1}, "cleanup must be a whole number of pixels >= 0 (0: off), got -1"),
])
def test_label_settings_no_label_can_follow_are_refused_before_any_pipeline_runs(options, said):
    """The editor took them and refused only after building the pipeline and running the first edit."""
    with pytest.raises(ConfigError, match=re.escape(said)):
        InstructionEditor(TINY_INSTRUCT, **options)


def test_local_edit_gives_its_region():
    def paint(x):
        y = x.copy()
        y[16:40, 20:44] = 1.0 - y[16:40, 20:44]
        return y

    image = _image(seed=6)
    result = _stubbed(paint).edit(image, None, "invert a square", seed=0)
    truth = np.zeros((64, 64), bool)
    truth[16:40, 20:44] = True
    assert result.metadata["label"]["status"] == "ok"
    assert np.array_equal(result.changed, truth)
    assert np.array_equal(result.image[~truth], image[~truth])


def test_shifted_output_is_aligned_before_labelling():
    """An editor that re-frames its output by a few pixels: the label still marks only the edit."""
    from skimage import data

    photo = data.astronaut()
    image = np.ascontiguousarray(photo[100:356, 120:376])
    shifted = photo[106:362, 116:372].copy()  # content moved by (+4, -6) px
    shifted[60:120, 80:150] = (255, 0, 255)
    card = dataclasses.replace(TINY_INSTRUCT, resolution=256)
    editor = InstructionEditor(card)
    editor._pipeline = _Stub(lambda x: shifted.astype(np.float32) / 255.0)
    result = editor.edit(image, None, "a magenta box", seed=0)
    info = result.metadata["label"]
    assert info["status"] == "ok" and info["alignment"]["used"] is True
    truth = np.zeros((256, 256), bool)
    truth[66:126, 76:146] = True  # the box in the input's frame
    valid = result.label != 255
    iou = (result.changed & truth).sum() / ((result.changed | truth) & valid).sum()
    assert iou > 0.9 and info["ignored_pixels"] > 0  # the uncovered border is not compared


def test_inpainting_variant_composites_like_a_mask_editor(one_thread):
    editor = create_generator("flux2.tiny-klein-inpaint")
    image, mask = _image(seed=7), _mask(seed=7)
    a = editor.edit(image, mask, "a red apple", seed=1)
    differs = (a.image != image).any(-1)
    assert not differs[~mask].any() and differs[mask].mean() > 0.8
    assert np.array_equal(a.changed, mask) and a.metadata["mode"] == "native"
    assert np.array_equal(editor.edit(image, mask, "a red apple", seed=1).image, a.image)


# -- real cards offline ---------------------------------------------------------------
@pytest.mark.parametrize("card", REAL_INSTRUCT, ids=lambda c: c.name)
def test_real_instruction_card_offline_names_the_hub_id(offline_empty_hub, card):
    editor = create_generator(card.name)
    with pytest.raises(WeightsUnavailableError, match=card.weights):
        if card.options.get("instruct"):
            editor.edit(_image(), None, "a cat", seed=0)
        else:
            editor.edit(_image(), _mask(), "a cat", seed=0)
    assert offline_empty_hub == [], "no network connection may be attempted"


def test_hyper_sd_offline_names_the_lora_file(offline_empty_hub):
    card = get_card("sdxl.hyper-sd-8step")
    assert (card.steps, card.guidance_scale, card.weights) == (8, 0.0, get_card("sdxl").weights)
    assert card.options["scheduler"] == {"class": "DDIMScheduler", "timestep_spacing": "trailing"}
    with pytest.raises(WeightsUnavailableError) as info:
        DiffusersEditor(card).edit(_image(), _mask(), "a cat", seed=0)
    message = str(info.value)
    assert "ByteDance/Hyper-SD" in message and "Hyper-SDXL-8steps-lora.safetensors" in message
    assert card.weights in message
    assert offline_empty_hub == []


# -- LoRA -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def lora_file(tmp_path_factory, one_thread):
    """A random LoRA for the tiny SDXL UNet, written as a diffusers/peft safetensors file."""
    from safetensors.torch import save_file

    from diffzoo.generators.tiny.builders import build_tiny_pipeline
    from diffzoo.generators.tiny.components import tiny_lora_state_dict

    path = tmp_path_factory.mktemp("lora") / "my style.safetensors"
    save_file(tiny_lora_state_dict(build_tiny_pipeline(SDXL_TINY), seed=3), str(path))
    return path


def test_tiny_lora_card_changes_the_output_only_through_its_lora(one_thread):
    card = get_card("sdxl.tiny-lora")
    assert card.options["scheduler"] == get_card("sdxl.hyper-sd-8step").options["scheduler"]
    image, mask = _image(seed=8), _mask(seed=8)
    editor = DiffusersEditor(card)
    a = editor.edit(image, mask, "a dog", seed=2)
    assert type(editor.pipeline.scheduler).__name__ == "DDIMScheduler"
    assert a.metadata["loras"] == [{"scale": 1.0, "fuse": True, "tiny_seed": 1}]
    assert not (a.image != image).any(-1)[~mask].any()
    assert np.array_equal(DiffusersEditor(card).edit(image, mask, "a dog", seed=2).image, a.image)
    no_lora = dataclasses.replace(card, options={k: v for k, v in card.options.items() if k != "loras"})
    base = DiffusersEditor(no_lora).edit(image, mask, "a dog", seed=2).image
    assert (base != a.image).any(-1)[mask].mean() > 0.5
    zero = dataclasses.replace(card, options={**card.options, "loras": ({"tiny_seed": 1, "scale": 0.0},)})
    assert np.array_equal(DiffusersEditor(zero).edit(image, mask, "a dog", seed=2).image, base)


def test_local_lora_file_fused_equals_unfused(lora_file):
    import torch

    image, mask = _image(seed=9), _mask(seed=9)
    fused = DiffusersEditor(with_lora(SDXL_TINY, lora_file, scale=0.8))
    unfused = DiffusersEditor(SDXL_TINY, lora=str(lora_file), lora_scale=0.8, lora_fuse=False)
    assert fused.card.name == unfused.card.name == "sdxl.tiny+lora-my_style"
    assert fused.card.family == "sdxl" and fused.card.options["loras"][0]["scale"] == 0.8
    a = fused.edit(image, mask, "a hat", seed=4)
    b = unfused.edit(image, mask, "a hat", seed=4)
    plain = DiffusersEditor(SDXL_TINY).edit(image, mask, "a hat", seed=4).image
    assert np.abs(a.image.astype(int) - b.image.astype(int)).max() <= 2
    assert (a.image != plain).any(-1)[mask].mean() > 0.5
    assert not (a.image != image).any(-1)[~mask].any()
    assert np.array_equal(fused.edit(image, mask, "a hat", seed=4).image, a.image)
    q = fused.pipeline.unet.down_blocks[1].attentions[0].transformer_blocks[0].attn1.to_q
    assert type(q) is torch.nn.Linear  # fused, adapter layers unloaded
    assert hasattr(unfused.pipeline.unet.down_blocks[1].attentions[0].transformer_blocks[0].attn1.to_q, "lora_A")
    assert a.metadata["loras"][0]["source"] == str(lora_file.resolve())


def test_a_lora_on_a_kolors_card_prints_no_torch_jit_warning(tmp_path):
    """The first import of Kolors' ChatGLM module makes torch warn that torch.jit.script is deprecated;
    with_lora (what `generate --lora` calls) may be that first import, in a fresh process."""
    import torch
    from safetensors.torch import save_file

    path = tmp_path / "style.safetensors"
    save_file({"unet.down.lora_A.weight": torch.zeros(2, 2)}, str(path))
    code = ("import sys; from diffzoo.generators.editors.cards import KOLORS_BLEND; "
            "from diffzoo.generators.editors.lora import with_lora; print(with_lora(KOLORS_BLEND, sys.argv[1]).name)")
    done = subprocess.run([sys.executable, "-W", "always::FutureWarning", "-c", code, str(path)],
                          capture_output=True, text=True, timeout=300)
    assert (done.returncode, done.stdout, done.stderr) == (0, "kolors.blend+lora-style\n", "")


def test_lora_option_through_the_registry_and_bad_loras(lora_file, tmp_path):
    editor = create_generator("sdxl.tiny", lora=str(lora_file))
    assert editor.card.name == "sdxl.tiny+lora-my_style" and editor.card.options["loras"][0]["fuse"] is True
    with pytest.raises(DataError, match="^LoRA file .*missing.safetensors does not exist"):
        with_lora(SDXL_TINY, tmp_path / "missing.safetensors")
    with pytest.raises(ConfigError, match="no LoRA support"):
        with_lora(get_card("longcat.edit"), lora_file)
    assert "sdxl.tiny+lora-my_style" not in CARDS_BY_NAME  # with_lora makes a new card, registers nothing
