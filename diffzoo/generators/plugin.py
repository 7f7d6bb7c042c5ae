"""In-tree plugin: registers the diffusers editors and the ``mini`` dataset.

Registration is lazy (``"module:attr"`` targets); this module imports only
plain-data cards, never torch or diffusers.  Mask editors of the DiffSeg30k
families (diffusers), GLIDE (diffzoo's own port) and the instruction-editor
families are registered by three hook implementations (through pluggy's
``specname``).
"""

from __future__ import annotations

from diffzoo.generators.editors.cards import DEFAULT_CARDS, GENERATOR_CARDS, INSTRUCT_CARDS
from diffzoo.generators.editors.glide.cards import EDITOR_TARGET as GLIDE_TARGET
from diffzoo.generators.editors.glide.cards import GLIDE_CARDS
from diffzoo.harness.core.hookspecs import hookimpl

EDITOR_TARGET = "diffzoo.generators.editors.diffusers_editor:DiffusersEditor"
INSTRUCT_TARGET = "diffzoo.generators.editors.instruct:InstructionEditor"
MINI_TARGET = "diffzoo.generators.datasets.mini:open_mini"


def _register(register, cards, target: str | None = None) -> None:
    for card in cards:
        register(
            card.name,
            target or (INSTRUCT_TARGET if card.options.get("instruct") else EDITOR_TARGET),
            card=card,
            default=card.name in DEFAULT_CARDS,
            description=card.description,
        )


@hookimpl
def register_generators(register):
    _register(register, GENERATOR_CARDS)


@hookimpl(specname="register_generators")
def register_instruction_editors(register):
    """Qwen-Image-Edit, FLUX.2, LongCat and FireRed (and their inpainting variants)."""
    _register(register, INSTRUCT_CARDS)


@hookimpl(specname="register_generators")
def register_glide(register):
    """GLIDE text-guided inpainting: diffzoo's PyTorch port loading the official checkpoints."""
    _register(register, GLIDE_CARDS, GLIDE_TARGET)


@hookimpl
def register_datasets(register):
    register(
        "mini",
        MINI_TARGET,
        description=(
            "embedded demo set shipped with diffzoo: DiffSeg30k layout, 1-3 edits per image by tiny "
            "random-weight stand-ins of the eight DiffSeg30k editors (proves pipelines work only)"
        ),
    )
    register(
        "imgedit",
        "diffzoo.generators.datasets.imgedit:ImgEditDataset",
        description="ImgEdit instruction-editing pairs (PKU-YuanGroup/ImgEdit parquet): labels derived by "
        "pixel difference, cached",
    )


@hookimpl
def register_distortions(register):
    register("reedit", "diffzoo.generators.datasets.reedit:reedit",
             description="re-edit one editor's regions with a generator card (label unchanged; cached on disk)")
