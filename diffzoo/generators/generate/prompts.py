"""Prompt templates per edit type, with small object and attribute vocabularies.

DiffSeg30k's three edit types: ``attribute_change`` (same object, new look),
``object_addition`` (a region is cleared, then a new object painted in place)
and ``object_removal`` (the region is filled with plausible background).  A
template prompt is the cheap stand-in for a VLM-written one; every choice is
drawn from a seeded ``numpy.random.Generator``.
"""

from __future__ import annotations

import numpy as np

from diffzoo.harness.core.errors import ConfigError

EDIT_TYPES: tuple[str, ...] = ("attribute_change", "object_addition", "object_removal")

OBJECTS: tuple[str, ...] = (
    "cat", "dog", "bird", "horse", "car", "bicycle", "bench", "chair", "cup", "bottle",
    "vase", "clock", "umbrella", "backpack", "book", "apple", "orange", "teddy bear",
    "potted plant", "lamp", "hat", "ball", "boat", "kite",
)
COLOURS: tuple[str, ...] = (
    "red", "blue", "green", "yellow", "white", "black", "orange", "purple", "pink", "brown",
)
MATERIALS: tuple[str, ...] = ("wooden", "metal", "glass", "plastic", "woollen", "stone", "golden")
STYLES: tuple[str, ...] = ("striped", "spotted", "shiny", "old", "painted", "checkered")
BACKGROUNDS: tuple[str, ...] = (
    "empty background", "grass", "a plain wall", "a wooden floor", "sand", "the sky",
    "a road", "a table top", "water", "a carpet",
)
SCENES: tuple[str, ...] = (
    "a kitchen", "a street", "a park", "a living room", "a beach", "a garden",
    "an office", "a field", "a harbour", "a snowy mountain",
)

TEMPLATES: dict[str, tuple[str, ...]] = {
    "attribute_change": (
        "a {colour} {obj}",
        "a {material} {obj}",
        "a {style} {colour} {obj}",
        "the {obj}, now {colour}",
    ),
    "object_addition": (
        "a {obj}",
        "a photo of a {obj}",
        "a {colour} {obj}, realistic",
        "a {obj} in natural light",
    ),
    "object_removal": (
        "{background}",
        "{background}, nothing there",
        "clean {background}, no objects",
    ),
}
CAPTION_TEMPLATES: tuple[str, ...] = (
    "a photo of {scene}",
    "a {colour} {obj} in {scene}",
    "{scene} with a {obj}",
    "a photo of a {obj}",
)


def _pick(rng: np.random.Generator, items: tuple[str, ...]) -> str:
    return items[int(rng.integers(len(items)))]


def make_prompt(edit_type: str, rng: np.random.Generator, *, obj: str | None = None) -> str:
    """A prompt for one edit of type ``edit_type`` (``obj`` fixes the object)."""
    if edit_type not in TEMPLATES:
        raise ConfigError(f"unknown edit type {edit_type!r}; choose from {', '.join(EDIT_TYPES)}")
    template = _pick(rng, TEMPLATES[edit_type])
    return template.format(
        obj=obj if obj is not None else _pick(rng, OBJECTS),
        colour=_pick(rng, COLOURS),
        material=_pick(rng, MATERIALS),
        style=_pick(rng, STYLES),
        background=_pick(rng, BACKGROUNDS),
    )


def make_caption(rng: np.random.Generator) -> str:
    """A scene caption for a text-to-image (AI) base image."""
    return _pick(rng, CAPTION_TEMPLATES).format(
        scene=_pick(rng, SCENES), obj=_pick(rng, OBJECTS), colour=_pick(rng, COLOURS)
    )


def turn_prompts(edit_type: str, rng: np.random.Generator, *, obj: str | None = None) -> tuple[str, ...]:
    """The prompt of each editor call of one turn.

    ``object_addition`` is two calls on the same region, as in DiffSeg30k: the
    object there is removed, then an object (``obj`` when known) is painted in
    its place.  The other types are one call.
    """
    if edit_type == "object_addition":
        return make_prompt("object_removal", rng), make_prompt("object_addition", rng, obj=obj)
    return (make_prompt(edit_type, rng, obj=obj),)


class TemplatePrompter:
    """Prompts from the templates above; the region's object name fills ``{obj}`` when known.

    Prompters are called as ``prompter(image, region, edit_type, rng)`` and
    return one prompt per editor call (see :func:`turn_prompts`).
    """

    name = "templates"

    def __call__(self, image: np.ndarray, region: object, edit_type: str, rng: np.random.Generator) -> tuple[str, ...]:
        return turn_prompts(edit_type, rng, obj=getattr(region, "label", None))
