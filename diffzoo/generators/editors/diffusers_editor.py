"""One mask editor class for every diffusers inpainting pipeline, driven by a card.

``DiffusersEditor(card)`` builds its pipeline on first use: tiny cards from
``tiny/builders.py`` (offline, random weights), real cards with
``<card.pipeline>.from_pretrained(card.weights)``.  Missing weights while
offline raise :class:`WeightsUnavailableError` naming the hub id to fetch.

``edit`` runs the pipeline at the card's square resolution (resizing in and
out when the image size differs), then composites the unmasked pixels back
from the input: outside the mask the output equals the input exactly, so the
label is exact.  Two modes, from ``card.native_inpaint``:

- ``native``: the pipeline's own inpainting (image + mask in), ``strength=1.0``
  where the pipeline takes a strength, so every step runs;
- ``blend``: a text-to-image pipeline (Kolors, HunyuanDiT) with mask-blended
  latent inpainting through ``callback_on_step_end`` (``latent_blend.py``).

Cards may add LoRAs and a scheduler swap (``lora.py``).  Instruction editors
(no mask in, label from pixel differences) subclass this in ``instruct.py``.
"""

from __future__ import annotations

import inspect
import logging
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from diffzoo.generators.diffusers_classes import diffusers_class
from diffzoo.harness.core.cards import GeneratorCard
from diffzoo.harness.core.errors import ConfigError, DataError, ModelError, WeightsUnavailableError, not_found
from diffzoo.harness.core.fsutil import require_file, written_as_path
from diffzoo.harness.core.hub import hub_offline, hub_unreachable
from diffzoo.harness.core.protocols import EditResult, Generator
from diffzoo.harness.core.types import check_image
from diffzoo.harness.data.distortions import resize_image
from diffzoo.harness.models.weights import hub_snapshots

log = logging.getLogger(__name__)


def resolve_dtype(card: GeneratorCard, device: str, dtype: Any = None) -> Any:
    """float32 on CPU and for tiny cards; the card's ``torch_dtype`` on accelerators."""
    import torch

    if dtype is not None:
        return getattr(torch, dtype) if isinstance(dtype, str) else dtype
    if card.tiny or str(device).startswith("cpu"):
        return torch.float32
    return getattr(torch, str(card.options.get("torch_dtype", "float32")))


def _from_pretrained(card: GeneratorCard, torch_dtype: Any) -> Any:
    import diffusers
    import torch

    if not card.weights:
        raise ModelError(f"generator card {card.name!r} has no weights and is not tiny")
    cls = diffusers_class(card.pipeline)
    if cls is None:
        raise ModelError(
            f"generator {card.name!r}: diffusers {diffusers.__version__} has no {card.pipeline}; "
            f"upgrade diffusers"
        )
    kwargs: dict[str, Any] = {"torch_dtype": torch_dtype}
    if card.options.get("variant") and torch_dtype != torch.float32:
        kwargs["variant"] = card.options["variant"]
    return from_hub(f"generator {card.name!r}", card.weights, cls, also=card.options.get("extra_weights") or (),
                    **kwargs)


def from_hub(what: str, model_id: str, cls: Any, *, also: Sequence[str] = (), **kwargs: Any) -> Any:
    """``cls.from_pretrained(model_id, **kwargs)``, from the local cache only when offline
    (``HF_HUB_OFFLINE``) or when the hub does not answer
    (:func:`~diffzoo.harness.core.hub.hub_unreachable`); missing or gated weights are a
    :class:`WeightsUnavailableError` naming what to fetch (``also``: the further hub ids the model
    loads)."""
    from huggingface_hub.errors import GatedRepoError, HfHubHTTPError

    try:
        with warnings.catch_warnings():
            # diffusers >= 0.42 and transformers prefer `dtype`; older releases know only `torch_dtype`
            warnings.filterwarnings("ignore", message=".*torch_dtype.*", category=FutureWarning)
            local = hub_offline() or hub_unreachable(model_id)
            return cls.from_pretrained(written_as_path(model_id) or model_id, local_files_only=local, **kwargs)
    except GatedRepoError as exc:
        raise WeightsUnavailableError(
            what, model_id, f"gated repository: accept its licence on the hub page and log in (`hf auth login`); {exc}",
        ) from exc
    except (OSError, HfHubHTTPError, ValueError) as exc:
        detail = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        if also:
            detail = f"it also needs {', '.join(also)}; {detail}"
        raise WeightsUnavailableError(what, model_id, detail) from exc


MODEL_FILES = ("config.json", "model_index.json")
"""What a folder a model or pipeline was saved to holds (``save_pretrained``)."""


def require_cached(what: str, model_ids: Sequence[str]) -> None:
    """Each hub id of ``model_ids`` (what :func:`from_hub` loads) is in the hub cache, or the hub answers:
    else the WeightsUnavailableError its load would raise, said before any model is built; one written
    as a path (:func:`written_as_path`) is a folder that exists and holds a saved model (the
    ``config.json`` of ``save_pretrained``, or a pipeline's ``model_index.json``)."""
    for model_id in model_ids:
        if (path := written_as_path(model_id)) is not None:
            require_file(path, what, " (a hub id is written ORG/NAME)", folder=True)
            if not any(os.path.isfile(os.path.join(path, name)) for name in MODEL_FILES):
                raise not_found(DataError(f"{what} {model_id} is a folder that holds no saved model (no "
                                          f"{' or '.join(MODEL_FILES)}): give the folder save_pretrained wrote, or a "
                                          "hub id ORG/NAME"))
            continue
        snapshots = hub_snapshots(model_id)
        here = Path(model_id).is_dir() or (snapshots.is_dir() and any(snapshots.iterdir()))
        if not here and (hub_offline() or hub_unreachable(model_id)):
            raise WeightsUnavailableError(what, model_id, "the hub is offline or does not answer")


class HubModel:
    """A transformers model and its processor from hub id ``model_id`` (default :attr:`default`),
    loaded by :func:`from_hub` as :attr:`what` on first use (``model``/``processor`` may be given
    built); :attr:`classes`: the transformers (processor, model) class names."""

    what, default, classes = "", "", ("AutoProcessor", "")

    def __init__(self, model_id: str | None = None, device: str = "cpu", *, model: Any = None, processor: Any = None):
        self.model_id, self.device = self.default if model_id is None else model_id, str(device)
        self._model, self._processor = model, processor

    def check_weights(self) -> None:
        """Its weights are here or the hub answers (:func:`require_cached`), unless given built."""
        if self._model is None:
            require_cached(self.what, (self.model_id,))

    def _load(self, **kwargs: Any) -> tuple[Any, Any]:
        if self._model is None:
            import transformers

            processor, model = (getattr(transformers, name) for name in self.classes)
            self._processor = from_hub(self.what, self.model_id, processor)
            self._model = from_hub(self.what, self.model_id, model, **kwargs).to(self.device).eval()
        return self._model, self._processor


def _check_inputs(image: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    check_image(np.asarray(image), "the input image")
    if mask is None:
        raise DataError("mask editors need a mask (H x W bool); got None")
    mask = np.asarray(mask)
    if mask.shape != image.shape[:2]:
        raise DataError(f"mask shape {mask.shape} differs from image shape {image.shape[:2]}")
    return mask.astype(bool)


def composite(image: np.ndarray, edited: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``edited`` (resized bicubically to ``image``'s size) inside ``mask``, ``image`` outside: the
    pixels an editor was not asked to change stay exactly the input's, so the label is exact."""
    return np.ascontiguousarray(np.where(mask[..., None], resize_image(edited, image.shape[:2]), image))


def call_kwargs(card: GeneratorCard, prompt: str, seed: int, kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` with what every call of the card's pipeline takes: the prompt, steps,
    guidance (to the card's ``guidance_kwarg``, Qwen-Image: ``true_cfg_scale``), a CPU
    generator seeded with ``seed``, float output, ``max_sequence_length`` and ``call_kwargs``."""
    import torch

    generator = torch.Generator(device="cpu").manual_seed(int(seed))
    kwargs.update(prompt=prompt, num_inference_steps=card.steps, generator=generator, output_type="np")
    kwargs[str(card.options.get("guidance_kwarg", "guidance_scale"))] = card.guidance_scale
    if "max_sequence_length" in card.options:
        kwargs["max_sequence_length"] = int(card.options["max_sequence_length"])
    kwargs.update(card.options.get("call_kwargs") or {})
    return kwargs


def _accepts(pipe: Any, name: str) -> bool:
    """Whether the pipeline's ``__call__`` takes keyword ``name``."""
    return name in inspect.signature(type(pipe).__call__).parameters


class CardPipeline:
    """The model a card names, built on ``device`` at first use (:meth:`_build`): the base of
    diffzoo's editors and of text to image."""

    what = "generator"

    def __init__(self, card: GeneratorCard, device: str = "cpu", dtype: Any = None):
        self.card, self.device, self.dtype = card, str(device), dtype
        self._pipeline: Any = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.card.name!r}, device={self.device!r})"

    def check_weights(self) -> None:
        """Its card's hub weights are here or the hub answers (:func:`require_cached`); a tiny card has none."""
        card = self.card
        if card.weights:
            require_cached(f"generator {card.name!r}", (card.weights, *(card.options.get("extra_weights") or ())))

    @property
    def pipeline(self) -> Any:
        """The diffusers pipeline (GLIDE: its models), built on first access."""
        if self._pipeline is None:
            log.info("building %s (%s) on %s", self.card.name, self.card.pipeline, self.device)
            self._pipeline = self._build()
        return self._pipeline

    def _build(self) -> Any:
        """The card's diffusers pipeline on ``device`` (tiny: offline random weights).

        LoRA files are located first (a missing one fails before the base weights
        load), then the scheduler is swapped and the LoRAs are loaded on ``device``
        (``lora.py``).
        """
        import torch

        from diffzoo.generators.editors.lora import apply_loras, apply_scheduler, drop_log_message, resolve_lora_files

        # diffusers 0.42 warns on every ``vae.to(dtype)`` even when no module must stay fp32
        drop_log_message("should be kept in float32: []", "diffusers.models.modeling_utils")
        card = self.card
        lora_files = resolve_lora_files(card)
        torch_dtype = resolve_dtype(card, self.device, self.dtype)
        if card.tiny:
            from diffzoo.generators.tiny.builders import build_tiny_pipeline

            pipe = build_tiny_pipeline(card)  # float32
            if torch_dtype != torch.float32:
                pipe = pipe.to(dtype=torch_dtype)
        else:
            pipe = _from_pretrained(card, torch_dtype)
        pipe = pipe.to(self.device)
        pipe.set_progress_bar_config(disable=True)
        apply_scheduler(pipe, card)
        apply_loras(pipe, card, lora_files)
        return pipe

    def _run(self, kwargs: dict[str, Any]) -> np.ndarray:
        """One pipeline call; its first image, floats in [0, 1] (:meth:`_finite`), as H x W x 3 uint8."""
        import torch

        with torch.inference_mode():
            out = self._finite(self.pipeline(**kwargs).images[0])
        return (np.clip(out, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)

    def _finite(self, pixels: Any) -> Any:
        """``pixels`` (numpy or torch), unless one is NaN or infinite (either carries through ``max``):
        then a ModelError naming the card as ``what``."""
        if np.isfinite(float(abs(pixels).max())):
            return pixels
        raise ModelError(f"{self.what} {self.card.name!r} produced non-finite pixels")


class DiffusersEditor(CardPipeline, Generator):
    """A mask editor backed by the diffusers pipeline named by ``card``.

    ``mode`` is ``"native"`` (the pipeline inpaints) when ``card.native_inpaint``,
    else ``"blend"`` (text-to-image pipeline plus latent blending).  ``lora``
    (a local file) attaches a LoRA to the card (:func:`~diffzoo.generators.editors.lora.with_lora`).
    """

    def __init__(
        self,
        card: GeneratorCard,
        device: str = "cpu",
        dtype: Any = None,
        *,
        lora: str | None = None,
        lora_scale: float = 1.0,
        lora_fuse: bool = True,
    ):
        if lora is not None:
            from diffzoo.generators.editors.lora import with_lora

            card = with_lora(card, lora, scale=lora_scale, fuse=lora_fuse)
        self.mode = self._mode(card)
        super().__init__(card, device, dtype)

    @staticmethod
    def _mode(card: GeneratorCard) -> str:
        if card.options.get("instruct"):
            raise ConfigError(
                f"generator {card.name!r} is an instruction editor: use "
                f"diffzoo.generators.editors.instruct.InstructionEditor (or create_generator)"
            )
        return "native" if card.native_inpaint else "blend"

    def pipeline_call_kwargs(
        self, image: np.ndarray, mask: np.ndarray, prompt: str, seed: int
    ) -> dict[str, Any]:
        """Keyword arguments of the bare pipeline call that :meth:`edit` makes.

        ``pipeline(**kwargs)`` returns float images in [0, 1] at the card's
        resolution (a benchmark can time exactly that call).  In ``blend`` mode
        the image is VAE-encoded here (once per call of this method) and the
        kwargs carry the start noise and the blending callback.
        """
        from PIL import Image

        mask = _check_inputs(image, mask)
        res = self.card.resolution
        pil = Image.fromarray(image)
        pil_mask = Image.fromarray(mask.astype(np.uint8) * 255)
        if pil.size != (res, res):
            pil = pil.resize((res, res), Image.Resampling.BICUBIC)
            pil_mask = pil_mask.resize((res, res), Image.Resampling.NEAREST)
        kwargs = call_kwargs(self.card, prompt, seed, {"height": res, "width": res})
        if self.mode == "native":
            kwargs.update(image=pil, mask_image=pil_mask)
            if _accepts(self.pipeline, "strength"):  # Kandinsky's combined inpaint pipeline has none
                kwargs["strength"] = self.card.strength
        else:
            kwargs.update(self._blend_kwargs(pil, np.asarray(pil_mask) > 127, kwargs["generator"]))
        return kwargs

    def _blend_kwargs(self, pil: Any, mask: np.ndarray, generator: Any) -> dict[str, Any]:
        """Start noise and the ``callback_on_step_end`` of mask-blended latent inpainting."""
        import torch
        from diffusers.utils.torch_utils import randn_tensor

        from diffzoo.generators.editors.latent_blend import LatentBlend, encode_latents, regenerate_mask

        pipe = self.pipeline
        denoiser = getattr(pipe, "unet", None)
        if denoiser is None:
            denoiser = getattr(pipe, "transformer", None)
        if denoiser is None:
            raise ModelError(f"{type(pipe).__name__} has neither a unet nor a transformer to blend latents for")
        with torch.no_grad():
            z0 = encode_latents(pipe, pil).to(denoiser.dtype)
        noise = randn_tensor(tuple(z0.shape), generator=generator, device=z0.device, dtype=z0.dtype)
        blend = LatentBlend(z0, noise, regenerate_mask(mask, tuple(z0.shape[-2:])))
        return {
            "latents": noise,  # the pipeline scales it by init_noise_sigma, as diffusers' inpainting does
            "callback_on_step_end": blend,
            "callback_on_step_end_tensor_inputs": blend.tensor_inputs,
        }

    def edit(self, image: np.ndarray, mask: np.ndarray | None, prompt: str, seed: int) -> EditResult:
        """Inpaint ``mask`` of ``image`` following ``prompt``; pixels outside stay identical."""
        mask = _check_inputs(image, mask)
        edited = self._run(self.pipeline_call_kwargs(image, mask, prompt, seed))
        metadata = {**self._metadata(prompt, seed), "strength": self.card.strength, "composited": True}
        return EditResult(image=composite(image, edited, mask), changed=mask.copy(), metadata=metadata)

    def _metadata(self, prompt: str, seed: int) -> dict[str, Any]:
        return edit_metadata(self.card, self.mode, prompt, seed, self.card.resolution)


def edit_metadata(card: GeneratorCard, mode: str, prompt: str, seed: int, resolution: int) -> dict[str, Any]:
    """What every edit records about how it was made (the card's LoRAs and scheduler swap too)."""
    from diffzoo.generators.editors.lora import lora_summary

    meta: dict[str, Any] = {"generator": card.name, "pipeline": card.pipeline, "weights": card.weights, "mode": mode,
                            "steps": card.steps, "guidance": card.guidance_scale, "seed": int(seed),
                            "prompt": prompt, "resolution": resolution}
    if card.options.get("loras"):
        meta["loras"] = lora_summary(card)
    if card.options.get("scheduler"):
        meta["scheduler"] = dict(card.options["scheduler"])
    return meta
