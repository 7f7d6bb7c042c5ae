"""GLIDE generator cards (plain data, no torch): the official inpainting models and a tiny stand-in.

``options`` holds one entry per stage, read by :class:`~.editor.GlideEditor`:

- ``base``: ``model`` (a :class:`~.model.GlideConfig` dict) and ``schedule``; the
  base runs ``card.steps`` respaced steps with classifier-free guidance
  ``card.guidance_scale`` (a batch of cond + empty-prompt uncond);
- ``upsampler``: ``model``, ``schedule``, ``respacing`` and ``temperature`` (start
  noise scale); no guidance, conditioned on the prompt;
- ``weights``: ``base``/``upsampler`` checkpoint URLs and the two tokenizer files
  (real card), or ``seed`` (tiny card: random weights built after seeding);
- ``torch_dtype``: float32 (the editor's default everywhere).

Settings follow the official ``notebooks/inpaint.ipynb``: respacing ``"100"``
for the base and ``"fast27"`` for the upsampler, guidance 5, upsample
temperature 0.997.
"""

from __future__ import annotations

import dataclasses

from diffzoo.generators.editors.instruct_cards import TINY_LICENCE, TINY_NOTE
from diffzoo.harness.core.cards import GeneratorCard

EDITOR_TARGET = "diffzoo.generators.editors.glide.editor:GlideEditor"

GLIDE_PAPER = (
    "Nichol et al., GLIDE: Towards Photorealistic Image Generation and Editing with "
    "Text-Guided Diffusion Models, ICML 2022, arXiv:2112.10741"
)
BLOB = "https://openaipublic.blob.core.windows.net/diffusion/dec-2021/"
BASE_INPAINT_URL = BLOB + "base_inpaint.pt"
UPSAMPLE_INPAINT_URL = BLOB + "upsample_inpaint.pt"
# the GPT-2 BPE files inside the glide-text2im package (pinned to a commit of the repository)
TOKENIZER_ROOT = (
    "https://raw.githubusercontent.com/openai/glide-text2im/"
    "1f791b82a8b018b94bc2f692e200e9403a03e581/glide_text2im/tokenizer/"
)

_TEXT = {"text_ctx": 128, "xf_width": 512, "xf_layers": 16, "xf_heads": 8, "n_vocab": 50257}
BASE_MODEL = {
    "image_size": 64, "super_res": False, "model_channels": 192, "num_res_blocks": 3,
    "channel_mult": (1, 2, 3, 4), "attention_resolutions": (32, 16, 8), "num_head_channels": 64, **_TEXT,
}
UPSAMPLE_MODEL = {**BASE_MODEL, "image_size": 256, "super_res": True, "num_res_blocks": 2,
                  "channel_mult": (1, 1, 2, 2, 4, 4)}  # fmt: skip

GLIDE_INPAINT = GeneratorCard(
    name="glide.inpaint",
    description=(
        "GLIDE (filtered) text-guided inpainting: 64 px base with classifier-free guidance, "
        "then the 256 px inpainting upsampler (diffzoo's PyTorch port; official checkpoints)"
    ),
    pipeline="GlideInpaint",
    weights=BASE_INPAINT_URL,
    resolution=256,
    steps=100,
    guidance_scale=5.0,
    licence="MIT (openai/glide-text2im code and released weights)",
    paper=GLIDE_PAPER,
    options={
        "base": {"model": BASE_MODEL, "schedule": "squaredcos_cap_v2"},
        "upsampler": {"model": UPSAMPLE_MODEL, "schedule": "linear", "respacing": "fast27", "temperature": 0.997},
        "weights": {
            "base": BASE_INPAINT_URL,
            "upsampler": UPSAMPLE_INPAINT_URL,
            "encoder_json": TOKENIZER_ROOT + "encoder.json.gz",
            "vocab_bpe": TOKENIZER_ROOT + "vocab.bpe.gz",
        },
        "torch_dtype": "float32",
        "notes": "GPU recommended: the official notebook reports ~20 min per sample on CPU",
    },
)

_TINY_TEXT = {"text_ctx": 16, "xf_width": 32, "xf_layers": 1, "xf_heads": 2, "n_vocab": 257}
_TINY_BASE = {
    "image_size": 16, "super_res": False, "model_channels": 32, "num_res_blocks": 1,
    "channel_mult": (1, 2), "attention_resolutions": (8,), "num_head_channels": 32, **_TINY_TEXT,
}
GLIDE_TINY = dataclasses.replace(
    GLIDE_INPAINT,
    name="glide.tiny",
    description="tiny random-weight GLIDE inpainting (16 px base + 32 px upsampler) built offline",
    weights=None,
    tiny=True,
    resolution=32,
    steps=2,
    licence=TINY_LICENCE,
    options={
        "base": {**GLIDE_INPAINT.options["base"], "model": _TINY_BASE},
        "upsampler": {
            **GLIDE_INPAINT.options["upsampler"],
            "model": {**_TINY_BASE, "image_size": 32, "super_res": True, "channel_mult": (1, 1, 2)},
            "respacing": "2",
        },
        "weights": {"seed": 0},
        "torch_dtype": "float32",
        "notes": TINY_NOTE,
    },
)

GLIDE_CARDS: tuple[GeneratorCard, ...] = (GLIDE_INPAINT, GLIDE_TINY)
"""Registered by the generators plugin with target :data:`EDITOR_TARGET`; ``glide.inpaint`` is the default."""
