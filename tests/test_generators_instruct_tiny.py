"""Tiny offline builds of every instruction-editor card (Qwen-Image-Edit, Plus/FireRed, its inpainting
pipeline, FLUX.2 [dev], LongCat): cards, tokenizers made in code, and each card run end to end (slow)."""

from __future__ import annotations

import numpy as np
import pytest

from diffzoo import create_generator
from diffzoo.generators.editors.cards import INSTRUCT_CARDS, get_card
from diffzoo.generators.editors.instruct import InstructionEditor
from diffzoo.generators.editors.instruct_cards import TINY_OF
from diffzoo.generators.editors.labels import difference_label
from diffzoo.generators.generate.regions import random_region
from diffzoo.generators.tiny.components import byte_chars

from helpers.cli import cli

NEW_TINY = ("qwen.tiny-edit", "qwen.tiny-edit-2509", "firered.tiny-edit", "longcat.tiny-edit", "flux2.tiny-dev")
TINY_CARDS = [c for c in INSTRUCT_CARDS if c.tiny]




def _image(h: int, w: int) -> np.ndarray:
    yy, xx = np.mgrid[0:h, 0:w]
    noise = np.random.default_rng(0).integers(0, 40, (h, w, 3))
    return (np.stack([xx * 3 + 30, 200 - yy * 2, (xx * yy) % 90 + 60], -1) + noise).clip(0, 255).astype(np.uint8)


# -- cards ---------------------------------------------------------------------------
def test_every_instruction_card_has_a_registered_tiny_stand_in(capsys):
    from diffzoo.generators.tiny.builders import TINY_BUILDERS

    real = [c for c in INSTRUCT_CARDS if not c.tiny]
    assert set(TINY_OF) == {c.name for c in real}
    assert set(TINY_OF.values()) == {c.name for c in TINY_CARDS}
    for card in real:
        tiny = get_card(TINY_OF[card.name])
        assert (tiny.pipeline, tiny.family, tiny.native_inpaint) == (card.pipeline, card.family, card.native_inpaint)
        for key in ("instruct", "guidance_kwarg", "call_kwargs"):
            if key in card.options:
                assert tiny.options[key] == card.options[key]
        assert (tiny.weights, tiny.resolution, tiny.steps, tiny.guidance_scale) == (None, 64, 2, 5.0)
        assert tiny.pipeline in TINY_BUILDERS, f"tiny.TINY_BUILDERS has no builder for {tiny.pipeline}"
    assert get_card("qwen.tiny-edit").options["call_kwargs"] == {"negative_prompt": " "}  # true CFG runs
    assert get_card("flux2.tiny-dev").options["call_kwargs"] == {"text_encoder_out_layers": (1, 2, 3)}
    code, out, _ = cli(capsys, "list", "generators", "*.tiny-*")
    assert code == 0 and all(name in out for name in NEW_TINY)


# -- tokenizers made in code ----------------------------------------------------------
def test_mistral_processor_renders_flux2_dev_conversations():
    from diffzoo.generators.tiny.instruct import mistral_processor

    processor = mistral_processor()
    assert type(processor).__name__ == "PixtralProcessor" and len(processor.tokenizer) == 11 + 256
    messages = [[{"role": "system", "content": [{"type": "text", "text": "sys"}]},
                 {"role": "user", "content": [{"type": "text", "text": "a dog"}]}]]  # fmt: skip
    inputs = processor.apply_chat_template(
        messages, tokenize=True, return_dict=True, padding="max_length", truncation=True, max_length=16
    )
    byte = {c: 11 + i for i, c in enumerate(byte_chars())}
    text = [byte[c] for c in "sys"], [byte[c] for c in "aĠdog"]  # byte-level: the space is "Ġ"
    # <s> [SYSTEM_PROMPT] sys [/SYSTEM_PROMPT] [INST] a dog [/INST] <pad> x 3
    assert inputs["input_ids"][0].tolist() == [1, 5, *text[0], 6, 3, *text[1], 4, 10, 10, 10]
    assert inputs["attention_mask"][0].tolist() == [1] * 13 + [0] * 3
    assert processor.tokenizer.decode(processor.tokenizer("héllo wörld")["input_ids"]) == "héllo wörld"


def test_qwen_vl_processor_expands_the_image_to_its_tokens():
    from PIL import Image

    from diffzoo.generators.tiny.qwen import QWEN_VL_TOKENS, qwen_tokenizer, qwen_vl_processor

    tokenizer = qwen_tokenizer(*QWEN_VL_TOKENS)
    ids = tokenizer.convert_tokens_to_ids(["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>",
                                           "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"])  # fmt: skip
    assert ids == list(range(256, 263)) and tokenizer.pad_token_id == 256
    processor = qwen_vl_processor(tokenizer)
    out = processor(text=["<|vision_start|><|image_pad|><|vision_end|>hi"], images=[Image.new("RGB", (1024, 1024))])
    assert out["image_grid_thw"].tolist() == [[1, 4, 4]]  # any picture: about 56 x 56 px, 14 px patches
    assert list(out["input_ids"][0]) == [259, *[261] * 4, 260, *tokenizer("hi")["input_ids"]]  # 2 x 2 merged


def test_tiny_builds_are_offline_and_consistent(offline_empty_hub, one_thread):
    from diffzoo.generators.tiny.builders import build_tiny_pipeline

    pipes = {name: build_tiny_pipeline(get_card(name)) for name in ("qwen.tiny-edit", "longcat.tiny-edit")}
    for name in ("qwen.tiny-edit-2509", "qwen.tiny-edit-inpaint", "flux2.tiny-dev"):
        pipes[name] = build_tiny_pipeline(get_card(name))
    assert offline_empty_hub == [], "no network connection may be attempted"
    for name, pipe in pipes.items():
        assert type(pipe).__name__ == get_card(name).pipeline
    qwen, longcat, dev = pipes["qwen.tiny-edit"], pipes["longcat.tiny-edit"], pipes["flux2.tiny-dev"]
    config = qwen.text_encoder.config
    assert config.image_token_id == qwen.tokenizer.convert_tokens_to_ids("<|image_pad|>") == 261
    assert config.text_config.vocab_size == len(qwen.tokenizer) == 263
    assert qwen.vae_scale_factor == longcat.vae_scale_factor == 8  # as the real VAEs
    assert longcat.vae.config.latent_channels == 16 and longcat.transformer.config.in_channels == 64
    assert dev.transformer.config.guidance_embeds is True  # FLUX.2 [dev] is guidance-distilled
    assert dev.transformer.config.joint_attention_dim == 3 * dev.text_encoder.config.text_config.hidden_size
    a, b = build_tiny_pipeline(get_card("longcat.tiny-edit")), longcat  # the same weights in every build
    assert all((p == q).all() for p, q in zip(a.transformer.parameters(), b.transformer.parameters()))


# -- end to end: card -> pipeline -> edit -> pixel-difference label ------------------
@pytest.mark.slow
@pytest.mark.parametrize("name", NEW_TINY)
def test_tiny_instruction_card_runs_end_to_end(name, one_thread):
    card = get_card(name)
    editor = create_generator(name, max_area=1.0)  # random weights repaint everything
    assert isinstance(editor, InstructionEditor)
    outputs = []
    run = editor._run
    editor._run = lambda kwargs: outputs.append(run(kwargs)) or outputs[-1]  # keep the pipeline's raw output
    image = _image(64, 64 if card.family == "flux2" else 48)  # FLUX.2 needs both sides >= 64 px
    result = editor.edit(image, None, "make the 'sky' red", seed=1)
    (raw,) = outputs
    expected = difference_label(image, raw)
    assert np.array_equal(result.label, expected.mask) and np.array_equal(result.image, expected.rectified)
    assert result.image.shape == image.shape and np.array_equal(result.changed, result.label == 1)
    meta = result.metadata
    assert meta["pipeline"] == card.pipeline == type(editor.pipeline).__name__ and meta["mode"] == "instruct"
    assert meta["label"]["status"] == "ok" and meta["output_size"] == [raw.shape[1], raw.shape[0]]
    assert meta["run_size"] == ([64, 64] if card.family == "flux2" else [48, 80])  # the size handed to it
    if card.family == "longcat":  # sizes itself to about a megapixel from the (80 x 48) run size
        assert raw.shape[:2] == (1328, 800)
    else:
        assert meta["output_size"] == meta["run_size"]


@pytest.mark.slow
def test_tiny_qwen_edit_inpaint_composites_like_a_mask_editor(one_thread):
    editor = create_generator("qwen.tiny-edit-inpaint")
    image = _image(64, 64)
    mask = random_region(64, 64, np.random.default_rng(3), min_frac=0.15, max_frac=0.3).mask
    result = editor.edit(image, mask, "a red apple", seed=1)
    differs = (result.image != image).any(-1)
    assert not differs[~mask].any() and differs[mask].mean() > 0.8
    assert np.array_equal(result.changed, mask) and result.metadata["mode"] == "native"
