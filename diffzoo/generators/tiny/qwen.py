"""Tiny Qwen text and vision-language encoders for the tiny instruction editors, offline.

* :func:`qwen_tokenizer`: a byte-level ``Qwen2Tokenizer`` (256 byte symbols,
  no merges) with Qwen's chat markers and any extra special tokens, made in
  code.  FLUX.2 [klein]'s Qwen3 text encoder reads it as is.
* :func:`qwen_vl_processor` and :func:`qwen_vl_encoder`: a ``Qwen2VLProcessor``
  (that tokenizer plus Qwen's vision markers, a ``Qwen2VLImageProcessor`` that
  shrinks every picture to about 56 x 56 pixels: at most 16 patches and
  4 image tokens) and a 2-layer ``Qwen2_5_VLForConditionalGeneration``
  (2-block vision tower) whose token ids match the tokenizer.  Qwen-Image-Edit (and Plus, FireRed)
  and LongCat-Image-Edit read the instruction and the input image with them.

Shapes follow diffusers' fast tests of the Qwen-Image edit pipelines (they
download a tiny Qwen2-VL tokenizer; here it is built).  Every module is built
inside ``components.seeded`` (forked RNG, fixed seed).
"""

from __future__ import annotations

from typing import Any

from diffzoo.generators.tiny.components import byte_chars, seeded

QWEN_CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
QWEN_VL_TOKENS = ("<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>")
"""Qwen2.5-VL's vision markers (ids 259-262)."""
TINY_QWEN_VL_WIDTH = 16  # hidden size of the tiny Qwen2.5-VL language model (the edit transformers' text width)
TINY_VL_PIXELS = 56 * 56  # the image processor's min and max pixels: at most 4 x 4 patches, 2 x 2 merged tokens


def qwen_tokenizer(*extra_special: str) -> Any:
    """A byte-level ``Qwen2Tokenizer`` (256 byte symbols, no merges): ``<|endoftext|>`` (end, padding and
    unknown; id 256), the chat markers (257, 258), then ``extra_special`` tokens."""
    from transformers import Qwen2Tokenizer

    tokenizer = Qwen2Tokenizer(vocab={c: i for i, c in enumerate(byte_chars())}, merges=[])
    special = ["<|im_start|>", "<|im_end|>", *extra_special]
    tokenizer.add_special_tokens({"additional_special_tokens": special})
    tokenizer.chat_template = QWEN_CHAT_TEMPLATE
    return tokenizer


def qwen_vl_processor(tokenizer: Any) -> Any:
    """A ``Qwen2VLProcessor`` over ``tokenizer`` whose image processor shrinks any picture to about 56 x 56 px.

    The pipelines hand it a picture of about a megapixel (LongCat: a quarter
    of that; Plus: 384 x 384); bounding ``min_pixels`` and ``max_pixels`` keeps
    the vision tower's input at 16 patches or fewer whatever they pass.
    """
    from transformers import Qwen2VLImageProcessor, Qwen2VLProcessor, Qwen2VLVideoProcessor

    image_processor = Qwen2VLImageProcessor(min_pixels=TINY_VL_PIXELS, max_pixels=TINY_VL_PIXELS)
    return Qwen2VLProcessor(
        image_processor=image_processor, tokenizer=tokenizer, video_processor=Qwen2VLVideoProcessor()
    )


def qwen_vl_encoder(seed: int, tokenizer: Any) -> Any:
    """A 2-layer ``Qwen2_5_VLForConditionalGeneration`` (width 16, 2-block vision tower) for ``tokenizer``."""
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    ids = {token: tokenizer.convert_tokens_to_ids(token) for token in ("<|endoftext|>", *QWEN_VL_TOKENS)}
    config = Qwen2_5_VLConfig(
        text_config={
            "vocab_size": len(tokenizer),
            "hidden_size": TINY_QWEN_VL_WIDTH,
            "intermediate_size": 16,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "num_key_value_heads": 2,
            "rope_scaling": {"mrope_section": [1, 1, 2], "rope_type": "default", "type": "default"},
            "rope_theta": 1000000.0,
            "bos_token_id": None,
            "eos_token_id": tokenizer.convert_tokens_to_ids("<|im_end|>"),
            "pad_token_id": ids["<|endoftext|>"],
        },
        vision_config={
            "depth": 2,
            "hidden_size": 16,
            "intermediate_size": 16,
            "num_heads": 2,
            "out_hidden_size": TINY_QWEN_VL_WIDTH,
            "fullatt_block_indexes": [1],
        },
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
    )
    return seeded(seed, lambda: Qwen2_5_VLForConditionalGeneration(config))
