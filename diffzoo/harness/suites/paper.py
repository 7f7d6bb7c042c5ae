"""The suites behind the DiffSeg30k paper's other experiments (Tables 3-8)
and the format-parity check.

Editor names are DiffSeg30k's label names (``harness/data/labelmaps.py``).
A case whose editors a dataset lacks is skipped by the planner and listed
in the plan, not an error.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from diffzoo.harness.core.errors import ConfigError
from diffzoo.harness.core.types import CaseTask
from diffzoo.harness.data.labelmaps import DIFFSEG30K_EDITORS
from diffzoo.harness.metrics.catalog import SLICE_KEYS
from diffzoo.harness.suites.model import Case, Suite, TrainSpec
from diffzoo.harness.suites.standard import (
    BINARY_TRAIN,
    IMAGE_METRICS,
    LOCALIZATION_METRICS,
    ORACLE_IMAGE,
    PIXEL_METRICS,
    SEMANTIC_TRAIN,
)

# Registry names these suites use (resolved by the registry at run time; Suite.registry_names
# lists them and tests/test_suites.py checks each resolves): the paper's LoRA variant and the
# image-level classifiers the classification suite compares against.
LORA_GENERATOR = "sdxl.hyper-sd-8step"
REFERENCE_DETECTORS = ("cnnspot", "universalfakedet")

Setting = tuple[str, str, tuple[tuple[str, Any], ...]]  # (label, distortion, params)

PAPER_DISTORTIONS: tuple[Setting, ...] = (
    ("jpeg80", "jpeg", (("quality", 80),)),
    ("jpeg60", "jpeg", (("quality", 60),)),
    ("resize50", "rescale", (("scale", 0.5),)),
    ("resize200", "rescale", (("scale", 2.0),)),
)
"""The paper's settings: exact JPEG quality 80 and 60; the detector shown the
image with its shorter side at 0.5x and 2x its training resolution, scored at
the label's resolution (the paper's "resize 256" and "resize 1024" at its
512-px training resolution; the same cases on data of any size)."""

PAPER_SETTING_NAMES = {"jpeg80": "JPEG 80", "jpeg60": "JPEG 60", "resize50": "resize 256",
                       "resize200": "resize 1024"}
"""Each paper setting's name in the paper's Table 3."""

SWEEPS: tuple[Setting, ...] = (
    ("blur1", "blur", (("sigma", 1.0),)),
    ("blur2", "blur", (("sigma", 2.0),)),
    ("noise5", "noise", (("sigma", 5.0),)),
    ("noise10", "noise", (("sigma", 10.0),)),
    ("webp80", "webp", (("quality", 80),)),
    ("webp60", "webp", (("quality", 60),)),
    ("crop75", "crop", (("fraction", 0.75),)),
    ("crop50", "crop", (("fraction", 0.5),)),
)
"""Beyond the paper: blur, noise, WebP and crop, two strengths each."""

DISTORTION_CASE_METRICS = {
    "binary": ("aAcc", "mIoU", "bF1", "F1", "pixel_AUC", "gIoU"),
    "semantic": ("aAcc", "mIoU", "bF1", "mAcc", "top1"),
    "image": ("img_Acc", "img_AP", "img_AUC"),
}
DISTORTION_TRAIN = {"binary": BINARY_TRAIN, "semantic": SEMANTIC_TRAIN, "image": BINARY_TRAIN}


def distortion_cases(settings: Iterable[Setting], tasks: Sequence[str] = tuple(CaseTask)) -> tuple[Case, ...]:
    """One case per (setting, task), named ``<setting>.<task>``; for plugins
    that register a sweep suite of their own distortions."""
    return tuple(
        Case(name=f"{label}.{task}", task=task, train=DISTORTION_TRAIN[task], distortion=distortion, setting=label,
             distortion_params=params, metrics=DISTORTION_CASE_METRICS[task],
             description=f"{task} under {distortion} {dict(params)}")
        for label, distortion, params in settings
        for task in tasks
    )


DISTORTIONS = Suite(
    name="distortions",
    version="2",
    description=(
        "Robustness (paper Table 3): the models trained on clean data, scored on the "
        "validation split after exact JPEG (q80, q60) and rescaling (shorter side at 0.5x and 2x "
        "the model's training resolution: the paper's resize 256 / 1024; scored at the label's "
        "resolution), plus blur, noise, WebP and centre-crop sweeps. One case per setting and "
        "task; 'clean' is the undistorted reference point."
    ),
    cases=distortion_cases((("clean", "none", ()), *PAPER_DISTORTIONS, *SWEEPS)),
    changelog=("1: clean + JPEG 80/60 + resize 256/1024 (paper) + blur/noise/WebP/crop sweeps.",
               "2: the paper's columns (Acc = aAcc, mIoU, bF1) for binary and semantic cases; resize "
               "256/1024 became resize50/resize200, the detector's input at 0.5x/2x its training "
               "resolution (a longer side of 1024 px on 1024-px data was a no-op)."),
)

PAPER_PAIRS: tuple[tuple[str, str], ...] = (("flux1", "hunyuandit1.1"), ("sd2", "sd3.5"), ("glide", "kolors"))
PAIR_NAMES: dict[tuple[str, ...], str] = {("flux1", "hunyuandit1.1"): "Flux_Hunyuan", ("sd2", "sd3.5"): "SD2_SD3.5",
              ("glide", "kolors"): "Glide_Kolors"}
UNSEEN_BINARY = PIXEL_METRICS[:4] + ("F1", "pixel_AUC") + LOCALIZATION_METRICS
"""aAcc, mAcc, mIoU, bF1 (the paper's Table 4: Acc, mIoU, bF1), F1, pixel AUC and localization."""


def pair_name(pair: tuple[str, str]) -> str:
    return PAIR_NAMES.get(tuple(pair), "_".join(pair))


def unseen_generators_suite(pairs: Sequence[tuple[str, str]] = PAPER_PAIRS) -> Suite:
    """Leave-two-out: per pair, a binary model trained without the pair's
    images, scored on the validation images the pair edited (plus the
    authentic ones); ``seen`` cases score the model trained on every editor on
    the same images, for reference.  Other pairs than the paper's give a
    suite with another definition hash, so their rows never mix."""
    cases: list[Case] = []
    seen: dict[frozenset[str], tuple[str, ...]] = {}
    for given in pairs:
        pair = tuple(given)
        if len(pair) != 2 or len(set(pair)) != 2:
            raise ConfigError(f"a held-out pair names two different editors, got {list(pair)}")
        if (first := seen.setdefault(frozenset(pair), pair)) is not pair:  # one pair, one model: never trained twice
            also = f" (also as {','.join(first)})" if first != pair else ""
            raise ConfigError(f"the held-out pair {','.join(pair)} is given twice{also}; give each pair once")
        name = pair_name(pair)
        held_out = TrainSpec("binary", exclude_editors=pair)
        cases += [Case(name=f"{prefix}.{task}", task=task, train=train, editors=pair, setting=name, metrics=metrics,
                       description=f"{what} of {' + '.join(pair)} edits")
                  for prefix, train in ((name, held_out), (f"{name}.seen", BINARY_TRAIN))
                  for task, metrics, what in (("binary", UNSEEN_BINARY, "localization"),
                                              ("image", IMAGE_METRICS, "image-level detection"))]
    return Suite(
        name="unseen-generators",
        version="2",
        description=(
            "Generalization to unseen editors (paper Tables 4 and 6): train a binary model on six "
            "editors, test on the two held out (pixel metrics and image-level Acc/AP); '.seen' "
            "cases score the model trained on all editors on the same images."
        ),
        cases=tuple(cases),
        changelog=("1: pairs Flux_Hunyuan, SD2_SD3.5, Glide_Kolors; held-out and seen models.",
                   "2: binary cases report bF1 (the paper's Table 4 columns: Acc = aAcc, mIoU, bF1)."),
    )


UNSEEN_GENERATORS = unseen_generators_suite()

REEDIT = (("editor", "sdxl"), ("generator", LORA_GENERATOR))
LORA = Suite(
    name="lora",
    version="1",
    description=(
        "LoRA variants (paper Table 7): the validation images with SDXL regions, as they are "
        "and with those regions re-edited by SDXL + the Hyper-SD 8-step LoRA; models trained "
        "on the vanilla editors. The re-edited regions keep the SDXL label, so SDXL-LoRA "
        "predicted as SDXL counts as correct."
    ),
    cases=tuple(
        Case(name=f"{variant}.{task}", task=task, train=DISTORTION_TRAIN[task], editors=("sdxl",), setting=variant,
             authentic=False, distortion="reedit" if variant == "sdxl-lora" else "none",
             distortion_params=REEDIT if variant == "sdxl-lora" else (),
             metrics=("mIoU", "F1", "gIoU", "img_edited_Acc") if task == "binary"
             else ("aAcc", "mIoU", "IoU.sdxl", "top1"),
             description=f"{task} on SDXL regions ({variant})")
        for variant in ("sdxl", "sdxl-lora")
        for task in ("binary", "semantic")
    ),
    changelog=("1: SDXL vs SDXL + Hyper-SD 8-step LoRA re-edits, binary and semantic.",),
)

CLASSIFICATION_EDITORS = DIFFSEG30K_EDITORS
CLASSIFICATION = Suite(
    name="classification",
    version="1",
    description=(
        "Segmenters as image classifiers (paper Table 5): edited if predicted edited area > 1% "
        "of the image; classifiers (CNNSpot, UniversalFakeDetect) use probability > 0.5. Acc "
        "and AP on the whole validation split and per editor (its images + the authentic ones); "
        "mAP is the mean of the per-editor APs."
    ),
    cases=(
        Case(name="all", task="image", train=BINARY_TRAIN, metrics=IMAGE_METRICS + ORACLE_IMAGE, setting="all",
             description="every validation image"),
        *(Case(name=editor, task="image", train=BINARY_TRAIN, editors=(editor,), metrics=("img_Acc", "img_AP"),
               setting=editor,
               description=f"{editor} edits vs authentic images") for editor in CLASSIFICATION_EDITORS),
    ),
    changelog=("1: whole split + one case per DiffSeg30k editor.",),
    references=REFERENCE_DETECTORS,
)

SLICE_CASE_METRICS = {
    "binary": ("aAcc", "mIoU", "bF1", "F1", "gIoU", "img_Acc"),
    "semantic": ("aAcc", "mIoU", "bF1", "top1"),
}
SLICES = Suite(
    name="slices",
    version="2",
    description=(
        "Results by real vs AI base, number of edit turns, single vs multi-turn, editor and edit "
        "type (paper Table 8), computed from the per-image counts of the standard pass (no extra "
        "inference). A key no image carries metadata for reports no slice metric and says so."
    ),
    cases=tuple(
        Case(name=f"{key}.{task}", task=task, train=DISTORTION_TRAIN[task], slice_by=key, setting=key,
             metrics=SLICE_CASE_METRICS[task], description=f"{task} metrics per {key}")
        for key in SLICE_KEYS
        for task in ("binary", "semantic")
    ),
    changelog=("1: base, turns, editor, edit type; binary and semantic.",
               "2: the paper's columns (Acc = aAcc, mIoU, bF1) in both tasks; multiturn slice (single / "
               "multi); a key without metadata on any image reports no slice metric."),
)

PARITY_METRICS = ("img_Acc", "img_AP", "verdict_flip_rate", "flip_rate_authentic", "flip_rate_edited",
                  "delta_img_Acc", "format_shortcut")
PARITY_TOLERANCE = 0.05
FORMAT_PARITY = Suite(
    name="format-parity",
    version="1",
    description=(
        "Flags a format shortcut: every validation image, authentic and edited alike, is "
        "re-encoded (PNG, JPEG q95/q75, WebP q90) and the image-level verdict compared with the "
        "native file's; format_shortcut = 1 when more than 5% of verdicts move."
    ),
    cases=(
        Case(name="native", task="image", train=BINARY_TRAIN, metrics=("img_Acc", "img_AP"), setting="native",
             description="the files as stored"),
        *(Case(name=label, task="image", train=BINARY_TRAIN, distortion="reencode", setting=label,
               distortion_params=params, compare_to="native", metrics=PARITY_METRICS,
               options=(("tolerance", PARITY_TOLERANCE),), description=f"re-encoded as {label}")
          for label, params in (("png", (("format", "png"),)),
                                ("jpeg95", (("format", "jpeg"), ("quality", 95))),
                                ("jpeg75", (("format", "jpeg"), ("quality", 75))),
                                ("webp90", (("format", "webp"), ("quality", 90))))),
    ),
    changelog=("1: PNG, JPEG 95/75 and WebP 90 against the native files.",),
)


PAPER_SUITES: tuple[Suite, ...] = (DISTORTIONS, UNSEEN_GENERATORS, LORA, CLASSIFICATION, SLICES, FORMAT_PARITY)
