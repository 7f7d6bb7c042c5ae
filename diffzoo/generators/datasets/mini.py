"""The embedded ``mini`` dataset: a small DiffSeg30k-like set built offline.

Bases are seeded crops of the photographs shipped inside scikit-image (real)
and images of the tiny text-to-image pipeline (AI).  About 1/6 of the images
stay authentic (no edit, all-zero mask); each other image gets 1-3
sequential edits (turn ratio about 1:4:5, as in DiffSeg30k) by tiny
stand-ins of DiffSeg30k's eight editors (labelled with DiffSeg30k's names,
so every suite runs on it), chosen so that each editor makes about the same
number of edits; each turn edits the previous turn's output, and later
turns overwrite earlier labels.  The editors have random weights: numbers on
``mini`` only prove that a pipeline works.

Layout (DiffSeg30k): ``train_copy/<8-digit id>.image.png`` and ``.mask.png``
(8-bit 'L', pixel = class index), ``labels.json``, ``manifest.jsonl`` (one
``SampleMeta`` per line) and ``README.md``.  Same arguments give byte-identical
files.  The build goes to a temporary sibling folder renamed at the end, so an
interrupted build never leaves a half dataset.

The default ``mini`` is data, not a computation: the tiny editors run on the
CPU, and their float results (so the bytes of every edited image, the
fingerprint, every checkpoint cache key) depend on the CPU's kernels and on
Pillow's zlib.  So the copy built once is shipped inside the package
(:data:`SHIPPED_ROOT`, with the LoRA suite's re-edits of its validation
images in :data:`SHIPPED_REEDITS`) and ``--dataset mini`` reads it: the same
bytes and fingerprint on every machine, and no build before the demo.
``diffzoo data build mini`` still builds it from the tiny editors, into the
cache or ``--root``; that copy's bytes are this machine's.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from diffzoo.harness.core.errors import ConfigError, DataError
from diffzoo.harness.core.fsutil import cache_root, exclusive_lock
from diffzoo.harness.core.types import EditRecord, LabelSpace, SampleMeta, check_seed
from diffzoo.harness.data.labelmaps import DIFFSEG30K_EDITORS, LABELS_FILE
from diffzoo.harness.data.metadata import MANIFEST_FILE

log = logging.getLogger(__name__)

MINI_VERSION = 3  # bump whenever a change alters the built files (3: eight editors)
DEFAULT_N_IMAGES = 240
MAX_N_IMAGES = 100_000
"""The most images a mini build plans: a demo set, built on the first run that reads it; larger sets are
made with diffzoo generate."""
DEFAULT_SIZE = 64
DEFAULT_SEED = 0
EDITORS: tuple[str, ...] = DIFFSEG30K_EDITORS
"""DiffSeg30k's label names, in its order."""
AI_FRACTION = 0.4
TURN_RATIO = (1, 4, 5)  # edited images with 1, 2, 3 edits
AUTHENTIC_WEIGHT = 2  # authentic : 1 : 2 : 3 edits = 2 : 1 : 4 : 5 (1/6 unedited)
"""Unedited images, so image-level detection and false positives can be measured
(the paper added 5k authentic COCO images to its training data)."""
README = "README.md"  # what the built folder says it is
SOURCE = "diffzoo-mini"
SHIPPED_ROOT = Path(__file__).resolve().parent / f"mini-v{MINI_VERSION}"
"""The default ``mini`` as built once (DEFAULT_N_IMAGES, DEFAULT_SIZE, DEFAULT_SEED), shipped as package data."""
SHIPPED_REEDITS = Path(__file__).resolve().parent / f"mini-v{MINI_VERSION}-reedits"
"""The LoRA suite's re-edits of the shipped ``mini`` (``<generator>/<key>.png``, keys as in reedit.py)."""
PHOTOS: tuple[str, ...] = (
    "astronaut.png", "camera.png", "chelsea.png", "coffee.png", "coins.png", "rocket.jpg",
    "hubble_deep_field.jpg", "motorcycle_left.png", "retina.jpg", "ihc.png", "moon.png",
    "grass.png", "gravel.png", "brick.png",
)  # fmt: skip
"""Photographs inside the scikit-image package itself (no pooch download)."""

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class _Plan:
    id: str
    base: str  # real | ai
    base_spec: dict[str, Any]
    turns: tuple[EditRecord, ...]
    masks: tuple[np.ndarray, ...]


# -- bases -------------------------------------------------------------------------
def _photo_dir() -> Path:
    import skimage.data

    return Path(skimage.data.__file__).parent


@functools.lru_cache(maxsize=len(PHOTOS))
def _photo(name: str) -> Any:
    from PIL import Image

    with Image.open(_photo_dir() / name) as im:
        return im.convert("RGB")


def _real_base(spec: dict[str, Any], size: int) -> np.ndarray:
    from PIL import Image

    im = _photo(spec["photo"])
    w, h = im.size
    side = max(8, int(round(spec["scale"] * min(w, h))))
    x0 = int(round(spec["fx"] * (w - side)))
    y0 = int(round(spec["fy"] * (h - side)))
    crop = im.resize((size, size), Image.Resampling.LANCZOS, box=(x0, y0, x0 + side, y0 + side))
    arr = np.asarray(crop, dtype=np.uint8)
    return np.ascontiguousarray(arr[:, ::-1] if spec["flip"] else arr)


# -- planning (all random choices; cheap) -----------------------------------------
def plan_mini(n_images: int, size: int, seed: int) -> list[_Plan]:
    """Every random choice of a build, made before any pipeline runs."""
    from diffzoo.generators.generate.prompts import EDIT_TYPES, make_caption, make_prompt
    from diffzoo.generators.generate.regions import random_region
    from diffzoo.generators.generate.schedule import balanced, split_counts

    if not 1 <= n_images <= MAX_N_IMAGES:
        raise ConfigError(f"n_images must be from 1 to {MAX_N_IMAGES:,} (mini is the demo dataset; make a larger "
                          f"one with diffzoo generate), got {n_images}")
    if size < 16 or size % 8:
        raise ConfigError(f"size must be a multiple of 8 and at least 16, got {size}")
    check_seed(seed, "seed")  # numpy takes no negative seed
    photos = [p for p in PHOTOS if (_photo_dir() / p).is_file()]  # those this scikit-image install has
    if not photos:
        raise DataError("no scikit-image photographs found; reinstall scikit-image")
    rng = np.random.default_rng([seed, 0x6D696E69])
    n_ai = int(round(n_images * AI_FRACTION))
    bases = balanced(rng, ("real", "ai"), [n_images - n_ai, n_ai])
    n_turns = balanced(rng, (0, 1, 2, 3), split_counts(n_images, (AUTHENTIC_WEIGHT, *TURN_RATIO)))
    editors = balanced(rng, EDITORS, split_counts(sum(n_turns), (1.0,) * len(EDITORS)))
    photo_order = balanced(rng, tuple(photos), split_counts(n_images - n_ai, (1.0,) * len(photos)))
    plans = []
    for i in range(n_images):
        r = np.random.default_rng([seed, i])
        if bases[i] == "real":
            spec: dict[str, Any] = {
                "photo": photo_order.pop(),
                "scale": float(r.uniform(0.3, 1.0)),
                "fx": float(r.uniform()),
                "fy": float(r.uniform()),
                "flip": bool(r.integers(2)),
            }
        else:
            spec = {"caption": make_caption(r), "seed": int(r.integers(2**31 - 1))}
        turns, masks = [], []
        for _ in range(n_turns[i]):
            region = random_region(size, size, r)
            edit_type = EDIT_TYPES[int(r.integers(len(EDIT_TYPES)))]
            turns.append(
                EditRecord(
                    editor=editors.pop(),
                    prompt=make_prompt(edit_type, r),
                    edit_type=edit_type,
                    region=region.bbox,
                    seed=int(r.integers(2**31 - 1)),
                )
            )
            masks.append(region.mask)
        plans.append(_Plan(f"{i:08d}", bases[i], spec, tuple(turns), tuple(masks)))
    return plans


# -- writing -----------------------------------------------------------------------
def _readme(n_images: int, size: int, seed: int, label_space: LabelSpace) -> str:
    from diffzoo.generators.editors.cards import TINY_EDITORS

    return f"""# diffzoo mini (v{MINI_VERSION})

A tiny DiffSeg30k-like dataset built offline by `diffzoo.generators.datasets.mini.build_mini`
(n_images={n_images}, size={size}, seed={seed}).

- Bases: seeded crops of photographs shipped inside scikit-image (`base: real`)
  and images of a tiny random-weight Stable Diffusion text-to-image pipeline
  (`base: ai`), about {AI_FRACTION:.0%} AI.
- Edits: none for about 1/6 of the images (authentic), else 1-3 sequential
  inpainting edits per image (turn ratio about 1:4:5) by
  tiny **random-weight** stand-ins of the editors {", ".join(EDITORS)}
  (cards {", ".join(TINY_EDITORS[e] for e in EDITORS)}), object-like random regions, template
  prompts. Later turns overwrite earlier labels; unmasked pixels are copied back
  from the input, so labels are exact.
- Layout: `train_copy/<id>.image.png`, `train_copy/<id>.mask.png` (8-bit, pixel =
  class index in `labels.json`: {", ".join(f"{i}={n}" for i, n in enumerate(label_space.names))}),
  `manifest.jsonl` (per-turn editor, prompt, edit type, region bbox, seed).

The editors have random weights: edited regions are noise-like. Numbers measured
on this dataset only prove that a pipeline works; they say nothing about real
detectors or real editors.
"""


def build_mini(
    root: Path,
    *,
    n_images: int = DEFAULT_N_IMAGES,
    size: int = DEFAULT_SIZE,
    seed: int = DEFAULT_SEED,
    progress: Progress | None = None,
    overwrite: bool = False,
) -> Path:
    """Build the ``mini`` dataset at ``root`` (deterministic, offline); return ``root``.

    torch runs one intra-op thread during the build (restored after): the tiny
    models gain little from more, and several threads on a busy small CPU slow
    each call down many times over.
    """
    from diffzoo.generators.editors.cards import TINY_EDITORS
    from diffzoo.generators.editors.text2image import TextToImage
    from diffzoo.generators.generate.layout import (
        IMAGE_DIR,
        built_in_place_of,
        labels_text,
        manifest_text,
        sample_paths,
        save,
    )
    from diffzoo.generators.generate.multiturn import TurnPlan, edit_sample, torch_threads
    from diffzoo.generators.generate.regions import Region
    from diffzoo.harness.run.factories import create_generator

    root = Path(root)
    if root.exists() and not overwrite:
        raise DataError(f"{root} already exists; pass overwrite=True to rebuild it")
    with torch_threads(1):
        plans = plan_mini(n_images, size, seed)
        label_space = LabelSpace.from_editors(EDITORS)
        editors = {name: create_generator(TINY_EDITORS[name]) for name in EDITORS}
        t2i = TextToImage()
        started = time.perf_counter()
        with built_in_place_of(root, (IMAGE_DIR, MANIFEST_FILE, LABELS_FILE, README)) as tmp:
            (tmp / IMAGE_DIR).mkdir()
            manifest = []
            for done, plan in enumerate(plans, start=1):
                if plan.base == "real":
                    image = _real_base(plan.base_spec, size)
                else:
                    image = t2i.generate(plan.base_spec["caption"], plan.base_spec["seed"], size=size)
                turns = [
                    TurnPlan(t.editor, t.edit_type, Region(mask, t.region, "random"), ((t.prompt, int(t.seed)),))
                    for t, mask in zip(plan.turns, plan.masks)
                ]
                edited = edit_sample(image, [lambda _image, _done, t=t: (t,) for t in turns], editors, label_space)
                for path, array in zip(sample_paths(tmp, plan.id), (edited.image, edited.label)):
                    save(path, array)
                manifest.append(SampleMeta(id=plan.id, base=plan.base, turns=plan.turns, source=SOURCE).to_dict())
                if progress is not None:
                    progress(done, len(plans))
            save(tmp / MANIFEST_FILE, manifest_text(manifest))
            save(tmp / LABELS_FILE, labels_text(label_space))
            save(tmp / README, _readme(n_images, size, seed, label_space))
        log.info("built mini (%d images, %d px) at %s in %.1fs", n_images, size, root, time.perf_counter() - started)
        return root


# -- cache -------------------------------------------------------------------------
def mini_root(
    cache: Path | str | None = None,
    *,
    n_images: int = DEFAULT_N_IMAGES,
    size: int = DEFAULT_SIZE,
    seed: int = DEFAULT_SEED,
) -> Path:
    """``<cache>/datasets/mini-v<version>`` (non-default arguments get their own folder)."""
    base = Path(cache).expanduser() if cache is not None else cache_root()
    name = f"mini-v{MINI_VERSION}"
    if (n_images, size, seed) != (DEFAULT_N_IMAGES, DEFAULT_SIZE, DEFAULT_SEED):
        name += f"-n{n_images}-s{size}-seed{seed}"
    return base / "datasets" / name


def _is_built(root: Path) -> bool:
    return (root / LABELS_FILE).is_file() and (root / MANIFEST_FILE).is_file()


def ensure_mini(
    cache: Path | str | None = None,
    *,
    root: Path | str | None = None,
    n_images: int = DEFAULT_N_IMAGES,
    size: int = DEFAULT_SIZE,
    seed: int = DEFAULT_SEED,
    progress: Progress | None = None,
    force: bool = False,
) -> Path:
    """The built ``mini`` root, building it first if needed (safe across processes).

    ``root`` overrides the cache location; ``force`` rebuilds an existing copy.
    """
    target = Path(root) if root is not None else mini_root(cache, n_images=n_images, size=size, seed=seed)
    if _is_built(target) and not force:
        return target
    # a --root of the user's: its lock lives in the cache, never as a file beside the user's folders
    lock = target.parent / f".{target.name}.lock" if root is None else \
        cache_root() / "locks" / f"mini-{hashlib.sha256(os.path.realpath(target).encode()).hexdigest()[:16]}.lock"
    with exclusive_lock(lock):
        if force or not _is_built(target):  # another process may have finished while we waited
            log.info("building the mini dataset at %s (first use)", target)
            build_mini(target, n_images=n_images, size=size, seed=seed, progress=progress, overwrite=target.exists())
    return target


MINI_NOTICE = (
    "'mini' is diffzoo's embedded demo dataset: small images edited by tiny random-weight "
    "editors. Its numbers only prove that the pipeline works end to end; they say nothing "
    "about real detectors or editors. For the paper's benchmark, download DiffSeg30k "
    "(hf download Chaos2629/Diffseg30k --repo-type dataset) and run "
    "`diffzoo run --detector segformer --suite all --dataset PATH/TO/train.zip`."
)

MINI_SPLITS = {"val_fraction": 0.15, "calib_fraction": 0.1}
"""train / calib / val = 75 / 10 / 15 %: ``calib`` serves ``--thresholds calibrated``;
val stays small so that ``--suite all`` (its 1024 px resize cases above all) fits
a 2-core CPU in well under 45 minutes."""
MINI_GENERATORS = {"sdxl.hyper-sd-8step": "sdxl.tiny-lora"}
"""Generators a suite names (the LoRA suite's re-edits) -> their offline stand-ins."""
MINI_REFERENCES = {"universalfakedet": "universalfakedet.tiny"}
"""Reference detectors the classification suite names -> what runs on ``mini``.
Offline, UniversalFakeDetect's CLIP ViT-L/14 starts from random weights, so its
frozen features mean no more than a 2-layer ViT's, and extracting them for
mini's 228 images took 6 of the demo's 20 minutes on 2 cores (2026-12-01)."""

# A training budget that fits the demo on 2 CPU cores: the images are 64 px and
# no pretrained encoder can be downloaded offline, so the model starts from random
# weights with a shorter warm-up and a higher learning rate than the paper recipe.
# Recorded in every result record as dataset overrides.
MINI_TRAINING = {
    "iterations": 60,  # five SegFormer-B2 models in --suite all: the demo's main cost (README command 1 <= 15 min)
    "batch_size": 8,
    "crop_size": 64,
    "lr_scale": 10.0,  # x the card's recipe lr: SegFormer 6e-5 -> 6e-4, DeepLabv3+ SGD 0.01 -> 0.1
    "warmup_iters": 10,
    "pretrained": False,
}


def shipped_root() -> Path:
    """:data:`SHIPPED_ROOT`, checked: a DataError saying how to mend an install that lacks it."""
    if not _is_built(SHIPPED_ROOT):
        raise DataError(
            f"the shipped copy of 'mini' is missing from this diffzoo install ({SHIPPED_ROOT}); reinstall "
            "diffzoo, or build one with `diffzoo data build mini` (its bytes are this machine's) and "
            "pass its folder as --dataset"
        )
    return SHIPPED_ROOT


def open_mini(path: str | Path | None = None, *, progress: Progress | None = None, **options: Any) -> Any:
    """Dataset adapter for ``mini``: read it as DiffSeg30k.

    With no ``path`` and no build option it is the shipped copy
    (:func:`shipped_root`).  Build options (``n_images``, ``size``, ``seed``,
    ``cache``) or a ``path`` that holds no build yet build one with
    :func:`ensure_mini` first (``progress`` reports that build); the rest of
    ``options`` go to ``DiffSeg30kDataset``.
    """
    from diffzoo.harness.data.adapters.diffseg30k import DiffSeg30kDataset
    from diffzoo.harness.run.factories import typed_options

    build = typed_options(ensure_mini, {k: options.pop(k) for k in ("n_images", "size", "seed", "cache")
                                        if k in options})
    options = typed_options(DiffSeg30kDataset, options)
    root = shipped_root() if path is None and not build else ensure_mini(root=path, progress=progress, **build)
    dataset = DiffSeg30kDataset(root, **{"name": "mini", **MINI_SPLITS, **options})
    dataset.notice = MINI_NOTICE
    dataset.training_overrides = dict(MINI_TRAINING)
    dataset.generator_substitutes = dict(MINI_GENERATORS)
    dataset.reference_substitutes = dict(MINI_REFERENCES)
    return dataset


def _mini_options() -> list[str]:
    """What ``--dataset-option`` takes for ``mini``: the build options and DiffSeg30kDataset's."""
    from diffzoo.harness.data.adapters.diffseg30k import DiffSeg30kDataset
    from diffzoo.harness.run.factories import option_names

    return ["n_images", "size", "seed", "cache", *(option_names(DiffSeg30kDataset) or [])]


open_mini.dataset_options = _mini_options
