"""IMDL-BenCo's eleven image-manipulation localizers as diffzoo detectors (``benco.*``).

IMDL-BenCo (PyPI ``imdlbenco`` 0.1.45, GitHub scu-zjz/IMDLBenCo) ships IML-ViT,
MVSS-Net, CAT-Net, PSCC-Net, TruFor, ObjectFormer, SparseViT, Mesorch, SPAN,
ManTra-Net and MSCDI-Net as code.  This in-tree plugin registers one card per
model (``benco.<model>``, and ``benco.<model>.tiny`` where the model can be
built small and offline) through the same hook a third party would use; the
harness does not know it exists.  The package is optional: installed by
``bash scripts/install-benco.sh`` (docs/detectors.md, "IMDL-BenCo's
localizers"); without it the cards are still listed, saying so, and building
one fails with one line saying how to install it.

This module is plain data: it imports neither torch nor IMDL-BenCo.  The
adapter is :mod:`diffzoo.plugins.benco.model`; the facts behind every card are
in :mod:`diffzoo.plugins.benco.specs`.
"""

from __future__ import annotations

from diffzoo.plugin import DetectorCard, RecipeValue, hookimpl, register_cards
from diffzoo.plugins.benco.releases import RELEASES
from diffzoo.plugins.benco.specs import INSTALL, RUNS, SPECS, Spec, installed

TARGET = "diffzoo.plugins.benco.model:BencoDetector"
DEFAULT = "benco.iml-vit"
PAPER_SCHEDULE = "mmsegmentation configs/_base_/schedules/schedule_160k.py (train_cfg.max_iters)"


def recipe(spec: Spec, tiny: bool) -> dict[str, RecipeValue]:
    """The training recipe: IMDL-BenCo's demo script where diffzoo's trainer can follow it, each
    deviation said (the schedule, the budget, the augmentations)."""
    script = f"{RUNS}{spec.script}"

    def benco(name: str) -> RecipeValue:
        value, flag = spec.recipe[name]
        return RecipeValue(value, f"{script} ({flag})")

    epochs, warmup = spec.recipe["epochs"][0], spec.recipe["warmup_epochs"][0]
    size = spec.tiny_size if tiny else spec.size
    out = {
        "optimizer": RecipeValue("AdamW", "IMDL-BenCo training_scripts/train.py (--opt AdamW: timm create_optimizer)"),
        "lr": benco("lr"),
        "weight_decay": RecipeValue(spec.recipe["weight_decay"][0], f"{script} (--weight_decay); timm's "
                                    "create_optimizer leaves 1-D parameters and biases undecayed, as diffzoo does"),
        "betas": RecipeValue((0.9, 0.999),
                             "timm's AdamW defaults (train.py sets args.betas, which timm does not read)"),
        "head_lr_mult": RecipeValue(1.0, "IMDL-BenCo trains every parameter at one lr"),
        "min_lr": benco("min_lr"),
        "batch_size": benco("batch_size"),
        "iterations": RecipeValue(160_000, f"diffzoo choice: the DiffSeg30k paper's schedule ({PAPER_SCHEDULE}), "
                                  f"the same budget for every localizer; IMDL-BenCo trains {epochs} epochs "
                                  f"(--epochs {epochs})"),
        "warmup_iters": RecipeValue(1500, f"diffzoo choice: the paper's SegFormer warm-up; IMDL-BenCo warms up "
                                    f"{warmup} epochs (--warmup_epochs {warmup})"),
        "poly_power": RecipeValue(1.0, "diffzoo's schedule: linear decay to min_lr after the warm-up; IMDL-BenCo "
                                  "decays by a half-cosine (training_scripts/schedular/cos_lr_schedular.py)"),
        "crop_size": RecipeValue(size, f"{script} (--image_size {spec.size}, {spec.rule})" if not tiny
                                 else "tiny test card: the small input size of its constructor arguments"),
        "input_rule": RecipeValue(spec.rule, f"{script} (--if_{'padding' if spec.rule == 'pad' else 'resizing'}): "
                                  "how images reach the model at its input size, in training and evaluation"),
        "hflip": RecipeValue(True, "IMDL-BenCo train.py (HorizontalFlip(p=0.5))"),
        "augmentation": RecipeValue(
            "random crop + horizontal flip",
            "diffzoo choice, as for every detector: IMDL-BenCo train.py also applies vertical flips, 90-degree "
            "rotations, rescaling, copy-move, inpainting, brightness/contrast, JPEG 70-100 and blur, which change "
            "the pixel statistics edit localizers rely on"),
        "pretrained": RecipeValue(not tiny and bool(spec.weights),
                                  "tiny test card: random weights" if tiny else
                                  "; ".join(f"{w.arg}: {w.name} ({w.source})" for w in spec.weights) or "none"),
        "amp": RecipeValue(spec.recipe.get("amp", (True, ""))[0],
                           f"{script} (--if_not_amp)" if "amp" in spec.recipe else "diffzoo: bf16 autocast on CUDA"),
    }
    if "edge_mask_width" in spec.recipe:
        out["edge_mask_width"] = benco("edge_mask_width")
    return out


def _needs(spec: Spec) -> str:
    needs = [f"needs `{INSTALL}`"] if not installed() else []
    if spec.needs_cuda:
        needs.append("CUDA only")
    required = [w.name for w in spec.weights if w.required]
    if required:
        needs.append(f"needs weights {', '.join(required)}")
    return f" [{'; '.join(needs)}]" if needs else ""


def card(spec: Spec, tiny: bool = False) -> DetectorCard:
    kwargs = spec.tiny if tiny else spec.kwargs
    size = spec.tiny_size if tiny else spec.size
    licence = spec.licence
    warning = " NON-COMMERCIAL licence." if licence.startswith("NON-COMMERCIAL") else ""
    what = "tiny random-weight test variant of " if tiny else ""
    return DetectorCard(
        name=f"benco.{spec.key}" + (".tiny" if tiny else ""),
        description=(f"{what}{spec.title} from IMDL-BenCo 0.1.45: binary localization "
                     f"({spec.rule} to {size} px).{warning}{_needs(spec)}"),
        tasks=("binary",),
        weights=None if tiny else " + ".join(w.url or w.name for w in spec.weights) or None,  # every file it reads
        input_size=size,  # the default mean/std: albu.Normalize defaults (IMDLBenCo/transforms/iml_transforms.py)
        licence=licence,
        paper=spec.paper,
        arch={"benco": spec.key, "class": spec.cls, "module": spec.module, "kwargs": dict(kwargs or {}),
              "input_rule": spec.rule, "tiny": tiny},
        recipe=recipe(spec, tiny),
        gives_image_score=spec.has_label,
        releases=RELEASES.get(spec.key, ()),
    )


CARDS = [card(spec) for spec in SPECS] + [card(spec, tiny=True) for spec in SPECS if spec.tiny is not None]


@hookimpl
def register_detectors(register):
    register_cards(register, CARDS, TARGET, DEFAULT)
