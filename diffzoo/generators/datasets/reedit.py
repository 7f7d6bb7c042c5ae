"""The ``reedit`` distortion: re-edit one editor's regions with another generator.

The LoRA suite scores detectors on SDXL regions re-edited by SDXL with the
Hyper-SD 8-step LoRA (card ``sdxl.hyper-sd-8step``; ``sdxl.tiny-lora`` is its
tiny offline stand-in).  The label is returned unchanged: a re-edited region
keeps its editor's class, so predicting ``sdxl`` on an SDXL-LoRA region counts
as correct.

Re-edits are cached on disk (PNG, written atomically) under
``cache_root() / "reedits" / <generator>``, keyed by the generator card, the
image, the mask, the prompt and the seed, so a second evaluation of the same
data never runs the generator.  The re-edits of the shipped ``mini`` are
shipped beside it (``mini.SHIPPED_REEDITS``, same layout and keys, read
first): a tiny generator's float results depend on the CPU, so computing them
would give each machine its own numbers.  Generator instances are kept per
process.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import re
from pathlib import Path

import numpy as np

from diffzoo.generators.datasets.mini import SHIPPED_REEDITS
from diffzoo.harness.core.cards import stable_hash
from diffzoo.harness.core.errors import ConfigError, ModelError
from diffzoo.harness.core.fsutil import atomic_write_bytes, cache_root
from diffzoo.harness.core.plugins import get_registry
from diffzoo.harness.core.protocols import Generator
from diffzoo.harness.core.types import LabelSpace, SampleMeta
from diffzoo.harness.data.distortions import decode, encode, image_digest
from diffzoo.harness.run.factories import create_generator

log = logging.getLogger(__name__)

DEFAULT_PROMPT = "a photo"
"""Prompt when no turn of the sample names the editor (no per-edit metadata):
neutral, so the generator fills the region with plausible content."""
CACHE_DIR = "reedits"


def turn_prompt(meta: SampleMeta, editor: str) -> str:
    """The prompt of the last turn by ``editor`` (its pixels are the ones still
    labelled ``editor``: later turns overwrite earlier ones), else :data:`DEFAULT_PROMPT`."""
    for turn in reversed(meta.turns):
        if turn.editor == editor and turn.prompt.strip():
            return turn.prompt
    return DEFAULT_PROMPT


def reedit_seed(seed: int, sample_id: str) -> int:
    """A 32-bit edit seed from (``seed``, sample id): fixed per sample, different across samples."""
    digest = hashlib.sha256(f"{int(seed)}:{sample_id}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


@functools.lru_cache(maxsize=2)
def _generator(name: str, device: str) -> Generator:
    """One instance per (card, device) and process: its pipeline is built once, on first edit."""
    return create_generator(name, **({} if device == "cpu" else {"device": device}))


def _read_cached(path: Path, shape: tuple[int, ...]) -> np.ndarray | None:
    if not path.is_file():
        return None
    try:
        image = decode(path.read_bytes())
    except (OSError, SyntaxError, ValueError) as exc:  # what Pillow raises on a damaged file
        log.warning("re-edit cache %s is unreadable (%s); editing again", path, exc)
        return None
    if image.shape != shape:
        log.warning("re-edit cache %s has shape %s, expected %s; editing again", path, image.shape, shape)
        return None
    return image


def reedit(
    image: np.ndarray,
    label: np.ndarray,
    *,
    meta: SampleMeta,
    label_space: LabelSpace,
    editor: str,
    generator: str,
    seed: int = 0,
    cache: bool = True,
    device: str = "auto",
) -> tuple[np.ndarray, np.ndarray]:
    """Re-edit the pixels labelled ``editor`` with generator card ``generator``.

    The mask is ``label == label_space.index(editor)``; an image without such
    pixels is returned as it is (the generator is not built).  The prompt is
    :func:`turn_prompt`, the seed :func:`reedit_seed` of (``seed``, ``meta.id``).
    Pixels outside the mask are copied from the input whatever the generator
    returns.  The label is returned unchanged.  ``cache=False`` neither reads
    nor writes the disk cache.  ``device``: ``auto`` (CUDA when available),
    ``cpu``, ``cuda``, ...; a device other than ``cpu`` is passed to the
    generator's factory.
    """
    if not label_space.has_editor(editor):
        raise ConfigError(
            f"distortion 'reedit': editor {editor!r} is not in the dataset's label space; "
            f"available editors: {', '.join(label_space.editors) or '(none)'}"
        )
    editor = label_space.read(editor)  # the prompt and the cache key see the name the label space holds
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ConfigError(f"distortion 'reedit': seed must be an integer >= 0, got {seed!r}")
    if not isinstance(cache, (bool, np.bool_)):  # a text "false" would be true
        raise ConfigError(f"distortion 'reedit': cache must be true or false, got {cache!r}")
    entry = get_registry().get("generator", generator)  # a typo fails here, with did-you-mean
    mask = label == label_space.index(editor)
    if not mask.any():
        return image, label
    prompt = turn_prompt(meta, editor)
    edit_seed = reedit_seed(seed, meta.id)
    key = stable_hash(
        {
            "generator": entry.name,
            "card": stable_hash(entry.card) if entry.card is not None else None,
            "image": image_digest(image),
            "mask": image_digest(mask),
            "prompt": prompt,
            "seed": edit_seed,
        },
        length=32,
    )
    folder = re.sub(r"[^\w.+-]", "_", entry.name)
    path = cache_root() / CACHE_DIR / folder / f"{key}.png"
    edited = None
    for candidate in (SHIPPED_REEDITS / folder / f"{key}.png", path) if cache else ():
        edited = _read_cached(candidate, image.shape)
        if edited is not None:
            break
    hit = edited is not None
    if not hit:
        from diffzoo.harness.core.device import resolve_device

        result = _generator(entry.name, str(resolve_device(device))).edit(image, mask, prompt, edit_seed)
        edited = np.asarray(result.image)
        if edited.shape != image.shape or edited.dtype != np.uint8:
            raise ModelError(
                f"distortion 'reedit': generator {entry.name!r} returned a {edited.shape} {edited.dtype} "
                f"image for a {image.shape} uint8 input"
            )
    # enforced whatever the generator or the cache file says: outside the mask the input stays
    out = np.where(mask[..., None], edited, image)
    if cache and not hit:
        atomic_write_bytes(path, encode(out, "PNG"))
        log.debug("re-edit of %s cached at %s", meta.id, path)
    return out, label
