"""Instruction editors: image + prompt in, no mask; the label comes from pixel differences.

``InstructionEditor`` drives the diffusers pipelines of Qwen-Image-Edit,
FLUX.2, LongCat and FireRed through the same machinery as the mask editors
(``DiffusersEditor``: pipeline loading, offline errors, LoRAs, seeding).
``edit(image, None, prompt, seed)``:

1. resizes the image to the card's working area (``resolution`` squared,
   aspect ratio kept, sides multiples of the pipeline's latent patch, and
   at least the shortest side the pipeline takes, :data:`SIZE_RULES`);
2. runs the pipeline (the image is its reference / conditioning input);
3. derives the label with :func:`~diffzoo.generators.editors.labels.difference_label`
   (resize back, ORB+RANSAC(+ECC) alignment, ``mean_rgb|orig - gen| > tau``,
   cleanup, area bounds);
4. returns an :class:`InstructEditResult` in the input's frame: ``image`` is
   the rectified output, ``changed`` the changed pixels (pixels that could
   not be compared count as unchanged there), ``label`` the full label
   (1 changed, 0 unchanged, 255 not compared) and ``metadata["label"]``
   how it was derived.

A no-op or global edit (status ``rejected-noop`` / ``rejected-global``), or
an output of another aspect ratio that alignment cannot fit (``rejected-aspect``),
raises :class:`EditRejectedError`, which carries the result: a multi-turn
generator catches it to retry with another seed or prompt, or to skip the
turn, and can still record what was rejected.  Nothing can mistake a
rejected edit for a usable one.

The families' mask-inpainting pipelines (``qwen.edit-inpaint``,
``flux2.klein-inpaint``) are plain mask editors: use ``DiffusersEditor``
(``create_generator`` picks the class the card is registered with).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from diffzoo.generators.editors.diffusers_editor import DiffusersEditor, _accepts, call_kwargs
from diffzoo.generators.editors.labels import (
    DEFAULT_CLEANUP,
    DEFAULT_MAX_AREA,
    DEFAULT_MIN_AREA,
    DEFAULT_TAU,
    difference_label,
    label_options,
    shown_share,
)
from diffzoo.harness.core.cards import GeneratorCard
from diffzoo.harness.core.errors import ConfigError, DataError, DiffzooError
from diffzoo.harness.core.protocols import EditResult
from diffzoo.harness.core.types import check_image

log = logging.getLogger(__name__)


@dataclass
class InstructEditResult(EditResult):
    """An :class:`EditResult` with the pixel-difference label (H x W uint8: 1, 0, or 255 = not compared)."""

    label: np.ndarray | None = None


class EditRejectedError(DiffzooError):
    """An instruction edit whose changed area is out of bounds (no-op or global repaint), or whose
    output of another aspect ratio alignment cannot fit.

    ``result`` is the full :class:`InstructEditResult`; ``status`` is
    ``rejected-noop``, ``rejected-global`` or ``rejected-aspect``.
    """

    def __init__(self, generator: str, result: InstructEditResult):
        self.generator, self.result = generator, result
        info = result.metadata["label"]
        self.status = info["status"]
        settings = info["settings"]
        if self.status == "rejected-aspect":
            (w, h), (gw, gh) = settings["orig_size"], settings["gen_size"]
            why = (f"the output, {gw} x {gh} px, is not the input's shape ({w} x {h} px) and alignment found "
                   f"no fit ({info['alignment']['reason']})")
        elif not info["changed_pixels"]:  # a no-op whatever min_area: no bound to name
            why = "no compared pixel changed"
        else:
            side, name = ("below", "min_area") if self.status == "rejected-noop" else ("above", "max_area")
            bound = settings[name]  # the bound this editor applied, not the run's region bounds
            why = (f"{shown_share(info['changed_fraction'], bound)} of the compared pixels changed, {side} the "
                   f"editor's {name} {bound * 100:g}%" if bound <= 1 else
                   f"{info['changed_pixels']} compared pixels changed, {side} the editor's {name} {bound:g} px")
        super().__init__(f"generator {generator!r}: edit rejected ({self.status}): {why}")


SIZE_RULES = {"Flux2Pipeline": (64, 8), "Flux2KleinPipeline": (64, 8)}
"""Pipeline class -> (shortest side in px, largest aspect ratio) of the image it takes: diffusers'
``Flux2ImageProcessor.check_image_input`` refuses any other.  The other instruction pipelines take any size."""


def run_size(height: int, width: int, resolution: int, multiple: int, min_side: int = 0) -> tuple[int, int]:
    """(height, width): area about ``resolution``**2, the input's aspect ratio, sides multiples of ``multiple``;
    scaled up further where the shorter side would fall below ``min_side`` (a multiple of ``multiple``)."""
    scale = max(resolution / math.sqrt(height * width), min_side / min(height, width))
    rh, rw = (max(multiple, round(n * scale / multiple) * multiple) for n in (height, width))
    return rh, rw


class InstructionEditor(DiffusersEditor):
    """An instruction editor backed by the diffusers pipeline named by an ``instruct`` card.

    ``tau``, ``min_area``, ``max_area``, ``cleanup`` and ``align`` are the
    settings of :func:`~diffzoo.generators.editors.labels.difference_label`.
    """

    def __init__(
        self,
        card: GeneratorCard,
        device: str = "cpu",
        dtype: Any = None,
        *,
        tau: float = DEFAULT_TAU,
        min_area: float = DEFAULT_MIN_AREA,
        max_area: float = DEFAULT_MAX_AREA,
        cleanup: int = DEFAULT_CLEANUP,
        align: bool = True,
        lora: str | None = None,
        lora_scale: float = 1.0,
        lora_fuse: bool = True,
    ):
        self.label_options = label_options(tau, min_area, max_area, cleanup, align)[0]  # before a pipeline is built
        super().__init__(card, device, dtype, lora=lora, lora_scale=lora_scale, lora_fuse=lora_fuse)

    @staticmethod
    def _mode(card: GeneratorCard) -> str:
        if not card.options.get("instruct"):
            raise ConfigError(f"generator {card.name!r} is a mask editor: use DiffusersEditor")
        return "instruct"

    def pipeline_call_kwargs(
        self, image: np.ndarray, mask: np.ndarray | None, prompt: str, seed: int
    ) -> dict[str, Any]:
        """Keyword arguments of the bare pipeline call (``mask`` is ignored)."""
        from PIL import Image

        image = np.asarray(image)
        check_image(image, "the input image")
        min_side, max_aspect = SIZE_RULES.get(self.card.pipeline, (0, math.inf))
        multiple = int(getattr(self.pipeline, "vae_scale_factor", 8)) * 2  # VAE downsampling x the 2x2 latent patch
        height, width = run_size(*image.shape[:2], self.card.resolution, multiple, min_side)
        if max(height, width) > max_aspect * min(height, width):
            raise DataError(f"generator {self.card.name!r}: {self.card.pipeline} takes images of aspect ratio up to "
                            f"{max_aspect}:1, and this {image.shape[1]} x {image.shape[0]} px image would run at "
                            f"{width} x {height} px; crop it or choose another editor")
        pil = Image.fromarray(image)
        if pil.size != (width, height):
            pil = pil.resize((width, height), Image.Resampling.BICUBIC)
        kwargs: dict[str, Any] = {"image": pil}
        for key, value in (("height", height), ("width", width)):
            if _accepts(self.pipeline, key):  # LongCat sizes itself from the image
                kwargs[key] = value
        return call_kwargs(self.card, prompt, seed, kwargs)

    def edit(self, image: np.ndarray, mask: np.ndarray | None, prompt: str, seed: int) -> InstructEditResult:
        """Edit ``image`` as ``prompt`` says; raises :class:`EditRejectedError` for a no-op or global edit."""
        if mask is not None:
            log.debug("%s: instruction editor ignores the given mask", self.card.name)
        kwargs = self.pipeline_call_kwargs(image, None, prompt, seed)  # checks the image first
        generated = self._run(kwargs)
        width, height = kwargs["image"].size  # the size the edit ran at, whether or not the pipeline takes it
        label = difference_label(image, generated, run_size=(height, width), **self.label_options)
        metadata = {
            **self._metadata(prompt, seed),
            "composited": False,
            "mask_ignored": mask is not None,
            "run_size": [width, height],
            "output_size": [int(generated.shape[1]), int(generated.shape[0])],
            "frame": "orig",  # image and label are in the input's frame (rectified output)
            "label": {
                "status": label.status,
                "changed_fraction": label.changed_fraction,
                "changed_pixels": label.changed_pixels,
                "valid_pixels": label.valid_pixels,
                "ignored_pixels": int(label.mask.size - label.valid_pixels),
                "alignment": label.alignment.to_dict(),
                "settings": label.metadata,
            },
        }
        result = InstructEditResult(
            image=np.ascontiguousarray(label.rectified),
            changed=label.mask == 1,
            metadata=metadata,
            label=label.mask,
        )
        if label.status != "ok":
            raise EditRejectedError(self.card.name, result)
        return result
