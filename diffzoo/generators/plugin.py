"""In-tree plugin: registers the diffusers editors and the ``mini`` dataset.

Registration is lazy (``"module:attr"`` targets); this module imports only
plain-data cards, never torch or diffusers.  One hook registers the mask
editors of the DiffSeg30k families (diffusers), GLIDE (diffzoo's own port)
and the instruction-editor families.
"""

from __future__ import annotations

from diffzoo.generators.editors.cards import DEFAULT_CARDS, GENERATOR_CARDS, INSTRUCT_CARDS
from diffzoo.generators.editors.glide.cards import EDITOR_TARGET as GLIDE_TARGET
from diffzoo.generators.editors.glide.cards import GLIDE_CARDS
from diffzoo.harness.core.hookspecs import hookimpl

EDITOR_TARGET = "diffzoo.generators.editors.diffusers_editor:DiffusersEditor"
INSTRUCT_TARGET = "diffzoo.generators.editors.instruct:InstructionEditor"
MINI_TARGET = "diffzoo.generators.datasets.mini:open_mini"


@hookimpl
def register_generators(register):
    """The DiffSeg30k mask-editor families, GLIDE (diffzoo's PyTorch port loading the official
    checkpoints) and Qwen-Image-Edit, FLUX.2, LongCat and FireRed (with their inpainting variants)."""
    for card in (*GENERATOR_CARDS, *GLIDE_CARDS, *INSTRUCT_CARDS):
        target = GLIDE_TARGET if card in GLIDE_CARDS else INSTRUCT_TARGET if card.options.get("instruct") else \
            EDITOR_TARGET
        register(card.name, target, card=card, default=card.name in DEFAULT_CARDS, description=card.description)


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
