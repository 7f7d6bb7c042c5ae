"""In-tree plugin: registers the diffusers editors and the ``mini`` dataset.

Registration is lazy (``"module:attr"`` targets); this module imports only
plain-data cards, never torch or diffusers.
"""

from __future__ import annotations

from ..harness.hookspecs import hookimpl
from .cards import DEFAULT_CARDS, GENERATOR_CARDS

EDITOR_TARGET = "diffzoo.generators.diffusers_editor:DiffusersEditor"
MINI_TARGET = "diffzoo.generators.demo:open_mini"


@hookimpl
def register_generators(register):
    for card in GENERATOR_CARDS:
        register(
            card.name,
            EDITOR_TARGET,
            card=card,
            default=card.name in DEFAULT_CARDS,
            description=card.description,
        )


@hookimpl
def register_datasets(register):
    register(
        "mini",
        MINI_TARGET,
        description=(
            "embedded demo set built offline on first use: DiffSeg30k layout, 1-3 edits per "
            "image by tiny random-weight sd2/sdxl/flux1 editors (proves pipelines work only)"
        ),
    )
