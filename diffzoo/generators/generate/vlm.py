"""A vision-language model (Qwen2.5-VL through transformers) for object names, prompts and scores.

Three optional roles in ``diffzoo generate``, each a small class around
:class:`QwenVL.ask` (greedy decoding, so answers are deterministic):

- :class:`VlmObjectNamer`: the objects in an image, for open-vocabulary detection;
- :class:`VlmPrompter`: a prompt per editor call of a turn (same interface as
  :class:`~diffzoo.generators.generate.prompts.TemplatePrompter`; falls back to a
  template when the answer is empty);
- :class:`VlmScorer`: a 0-5 score of an edit for the quality filter
  (unparsable answers score 0).

Without cached weights while offline, the first use raises
:class:`WeightsUnavailableError` naming the hub id.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from diffzoo.generators.editors.diffusers_editor import HubModel
from diffzoo.generators.generate.defaults import DEFAULT_VLM
from diffzoo.generators.generate.prompts import turn_prompts
from diffzoo.generators.generate.regions import bbox_of

log = logging.getLogger(__name__)

MAX_NAMES = 10


class QwenVL(HubModel):
    """Question answering about images (``model``/``processor`` may be given built)."""

    what, default = "vision-language model", DEFAULT_VLM
    classes = ("AutoProcessor", "Qwen2_5_VLForConditionalGeneration")

    def __init__(self, model_id: str | None = None, device: str = "cpu", *, max_new_tokens: int = 48, **built: Any):
        super().__init__(model_id, device, **built)
        self.max_new_tokens = max_new_tokens

    def ask(self, images: Sequence[np.ndarray], question: str) -> str:
        """The model's answer to ``question`` about ``images`` (in order)."""
        import torch
        from PIL import Image

        model, processor = self._load(dtype=torch.bfloat16 if self.device.startswith("cuda") else torch.float32)
        content = [{"type": "image"} for _ in images] + [{"type": "text", "text": question}]
        text = processor.apply_chat_template([{"role": "user", "content": content}], tokenize=False,
                                             add_generation_prompt=True)
        inputs = processor(text=[text], images=[Image.fromarray(im) for im in images], return_tensors="pt")
        inputs = inputs.to(self.device)
        with torch.inference_mode():
            out = model.generate(**inputs, max_new_tokens=self.max_new_tokens, do_sample=False)
        answer = processor.batch_decode(out[:, inputs["input_ids"].shape[1]:], skip_special_tokens=True)[0]
        return answer.strip()


def _where(region: Any, image: np.ndarray) -> str:
    x0, y0, x1, y1 = region.bbox
    h, w = image.shape[:2]
    return f"the box from ({x0}, {y0}) to ({x1}, {y1}) of this {w}x{h} image"


def _clean(answer: str) -> str:
    line = answer.strip().splitlines()[0] if answer.strip() else ""
    return line.strip().strip('"').strip("'").strip()


class VlmObjectNamer:
    """``namer(image)`` -> up to 10 object names the VLM lists."""

    def __init__(self, vlm: QwenVL):
        self.vlm = vlm

    def __call__(self, image: np.ndarray) -> list[str]:
        answer = self.vlm.ask([image], "List the distinct objects visible in this image as a comma-separated "
                                       "list of short nouns. Answer with the list only.")
        names = (re.sub(r"[^a-z ]", "", part.lower()).strip() for part in re.split(r"[,\n;]", answer))
        return [name for name in dict.fromkeys(names) if name][:MAX_NAMES]  # first mention first, once each


class VlmPrompter:
    """Prompts written by the VLM for the region and edit type (templates when it answers nothing)."""

    name = "vlm"

    def __init__(self, vlm: QwenVL):
        self.vlm = vlm

    def __call__(self, image: np.ndarray, region: Any, edit_type: str, rng: np.random.Generator) -> tuple[str, ...]:
        fallback = turn_prompts(edit_type, rng, obj=getattr(region, "label", None))
        thing = getattr(region, "label", None) or "object"
        where = _where(region, image)
        remove = f"The {thing} in {where} will be removed. Describe the background that should fill it."
        questions = {
            "attribute_change": [f"The {thing} in {where} will be repainted with another colour, material or "
                                 f"texture. Describe the changed {thing}."],
            "object_removal": [remove],
            "object_addition": [remove, f"A new object will be painted into {where}. Name one object that fits "
                                        f"the scene and describe it."],
        }[edit_type]
        answers = [_clean(self.vlm.ask([image], q + " Answer with a prompt of at most 12 words only."))
                   for q in questions]
        return tuple(a or f for a, f in zip(answers, fallback))


class VlmScorer:
    """``scorer(before, after, mask, prompt, edit_type)`` -> 0..5 (the quality filter's judge)."""

    def __init__(self, vlm: QwenVL):
        self.vlm = vlm
        self.name = f"vlm:{vlm.model_id}"

    def __call__(self, before: np.ndarray, after: np.ndarray, mask: np.ndarray, prompt: str, edit_type: str) -> float:
        box = "({}, {}) to ({}, {})".format(*bbox_of(mask)) if mask.any() else "nowhere"
        answer = self.vlm.ask([before, after], (
            f"The first image was edited inside the box {box} ({edit_type.replace('_', ' ')}, prompt: "
            f"'{prompt}'); the second image is the result. Rate the edit from 0 (failed, implausible or "
            f"not matching the prompt) to 5 (realistic and matching the prompt). Answer with one digit."
        ))  # fmt: skip
        m = re.search(r"[0-5]", answer)
        if m is None:
            log.debug("VLM score answer %r has no digit 0-5; scored 0", answer)
            return 0.0
        return float(m.group())
