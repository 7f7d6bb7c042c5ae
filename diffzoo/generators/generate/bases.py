"""Base images for ``diffzoo generate``: real ones from a folder or COCO, AI ones from text to image.

Real bases are listed once, sorted, and visited in a seeded permutation:
the k-th real sample of a run takes entry ``perm[k % n]`` (so every image is
used once before any is reused).  AI bases are made by a text-to-image
pipeline from a caption: the k-th AI sample takes caption ``perm[k % n]`` of
a COCO captions file, or a template caption (``prompts.make_caption``).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from diffzoo.generators.generate.regions import (
    MIN_SIDE,
    RANDOM_AREA,
    Shape,
    checked,
    random_fits,
    refuse_files,
    same_shape,
)
from diffzoo.generators.generate.schedule import sample_rng
from diffzoo.harness.core.errors import ConfigError, CorruptSampleError, DataError, name_some
from diffzoo.harness.core.fsutil import MISSING, file_kind, require_file
from diffzoo.harness.data.distortions import longer_side_size

log = logging.getLogger(__name__)

_ORDER_KEY = 0x6F7264  # "ord"


@dataclass(frozen=True)
class BaseRef:
    """A real base image on disk; ``key`` is its path in the bases folder without suffix;
    ``annotated`` the (h, w) its COCO annotations give."""

    key: str
    path: Path
    source: str
    coco_id: int | None = None
    annotated: tuple[int, int] | None = None


@dataclass
class BaseImage:
    """A loaded base: pixels, ``real``/``ai``, where it came from."""

    kind: str
    image: np.ndarray
    source: str
    key: str | None = None
    coco_id: int | None = None
    info: dict[str, Any] = field(default_factory=dict)


def resize_longer_side(image: np.ndarray, size: int | None) -> np.ndarray:
    """``image`` scaled (Lanczos) so its longer side is ``size`` px; unchanged when None or equal."""
    if size is None:
        return image
    h, w = image.shape[:2]
    if max(h, w) == size:
        return image
    from PIL import Image

    new_h, new_w = longer_side_size(h, w, size)
    return np.asarray(Image.fromarray(image).resize((new_w, new_h), Image.Resampling.LANCZOS))


def list_folder(folder: Path) -> list[BaseRef]:
    """Every image under ``folder`` (recursively, hidden entries skipped), sorted by path."""
    from diffzoo.harness.data.authentic import list_image_files
    from diffzoo.harness.data.imageio import IMAGE_EXTENSIONS
    from diffzoo.harness.data.sources import PAIR_RE

    folder = Path(folder)
    require_file(folder, "bases folder", folder=True)
    files = list_image_files(folder)
    if not files:
        raise ConfigError(f"bases folder {folder} holds no images ({', '.join(IMAGE_EXTENSIONS)}); give a folder of "
                          "photos, or --ai-bases 1")
    if odd := [f"{p.relative_to(folder)} is {kind}" for p in files if (kind := file_kind(p))]:  # a FIFO blocks reads
        raise ConfigError(f"bases folder {folder}: {name_some(odd, 3, '; ')}, not "
                          f"{'an image file; move it' if len(odd) == 1 else 'image files; move them'} away")
    # a dataset's masks would be edited as photos, and its edited images labelled real
    if mask := next((p for p in files if (pair := PAIR_RE.match(p.name)) and pair["kind"].lower() == "mask"), None):
        raise ConfigError(f"bases folder {folder} holds label masks ({mask.relative_to(folder)}): it is an "
                          "edited dataset (a generate --out?), not real bases; give a folder of real photos")
    rels = [p.relative_to(folder) for p in files]
    refs = [BaseRef(key=rel.with_suffix("").as_posix(), path=folder / rel, source=rel.as_posix()) for rel in rels]
    keys = Counter(r.key for r in refs)  # a base's key names its masks and its samples' base
    if dup := [r.source for r in refs if keys[r.key] > 1]:
        raise ConfigError(f"bases folder {folder}: images share a name without suffix ({name_some(dup, 5)}); rename "
                          "them apart or move all but one away")
    return refs


def header_size(ref: BaseRef) -> tuple[int, int]:
    """(h, w) of a base from its header, no pixel decoded; one with no header to read (a file
    not there, not regular, empty or no image), or too large, raises the CorruptSampleError
    reading it would, which says why from the header too."""
    from diffzoo.harness.data.imageio import image_trait, max_pixels, read_image

    hw = image_trait(ref.path, lambda im: (im.height, im.width) if im.width * im.height <= max_pixels() else None)
    return hw or read_image(ref.path, ref.key, name=ref.source).shape[:2]


def check_bases(refs: Sequence[BaseRef], size: int | None, spec: str, decode: Collection[str] = (),
                random: bool = False) -> dict[str, tuple[Shape, Shape]]:
    """Each base's (h, w) by key, from its header (the bases of keys in ``decode``, those the run
    reads: from all their pixels, as it reads them), and its (h, w) at ``size``, before any
    model loads: one that cannot be read, with a side under :data:`MIN_SIDE` px at ``size`` (no
    region fits), with ``random`` (random regions) too narrow for one (:func:`random_fits`), or not
    of the shape its COCO annotations give, scaled (another image's file, or one turned: its
    instance masks would be stretched onto it), is named in one line (``spec``: the ``--bases`` given)."""
    from diffzoo.harness.data.imageio import read_image

    sizes, bad = {}, []
    for ref in checked(refs, f"{len(refs)} base image(s) ({len(decode)} decoded)"):
        try:
            h, w = read_image(ref.path, ref.key, name=ref.source).shape[:2] if ref.key in decode else header_size(ref)
        except CorruptSampleError as exc:
            bad.append(exc.reason)
            continue
        rh, rw = longer_side_size(h, w, size) if size else (h, w)
        sizes[ref.key] = (h, w), (rh, rw)
        at = f", {rw} x {rh} px at --size {size}" if (rh, rw) != (h, w) else ""
        if min(rh, rw) < MIN_SIDE:
            bad.append(f"{ref.source}: {w} x {h} px{at}: a side under {MIN_SIDE} px, too small for a region")
        elif random and not random_fits(rh, rw):
            bad.append(f"{ref.source}: {w} x {h} px{at}: too narrow for a random region (one covering "
                       f"{0.5 * RANDOM_AREA[0]:.1%} of it)")
        elif ref.annotated and not same_shape((h, w), ref.annotated):
            bad.append(f"{ref.source}: {w} x {h} px does not scale to the {ref.annotated[1]} x {ref.annotated[0]} px "
                       "its annotations give: a file of another image, or turned")
    refuse_files(f"--bases {spec}", "base image", bad)
    from diffzoo.harness.data.fingerprint import file_orientation
    from diffzoo.harness.data.imageio import image_trait, see_through

    for odd, what, why in (  # read as every image is, unlike a viewer shows them: one warning per kind
        (file_orientation, "carry an EXIF orientation tag", "they are edited as stored, as diffzoo reads every image; "
         "a viewer that applies the tag shows them turned against their samples (rotate the originals first: "
         "exiftran -ai)"),
        (lambda path: image_trait(path, see_through), "hold transparency (an alpha channel or a transparent colour)",
         "they are edited composited on white, as diffzoo reads every image (flatten the originals on the background "
         "you want)"),
    ):
        if found := [r.source for r in refs if odd(r.path)]:
            log.warning("%d base image(s) %s (%s): %s", len(found), what, name_some(found, 1), why)
    return sizes


class RealBases:
    """Real bases visited in a seeded permutation; loaded with the longer side at ``size``."""

    def __init__(self, refs: Sequence[BaseRef], seed: int, size: int | None):
        if not refs:
            raise ConfigError("no usable real base images (check --bases and --regions)")
        self.refs = list(refs)
        self.order = sample_rng(seed, _ORDER_KEY, 0).permutation(len(self.refs))
        self.size = size

    def keys(self, count: int) -> set[str]:
        """The keys of the bases of ordinals 0..count-1 (:meth:`get`)."""
        return {self.refs[int(i)].key for i in self.order[:count]}

    def ref(self, ordinal: int) -> BaseRef:
        """The base of real sample ordinal ``ordinal`` (:meth:`get` reads it)."""
        return self.refs[int(self.order[ordinal % len(self.refs)])]

    def get(self, ordinal: int) -> BaseImage:
        from diffzoo.harness.data.imageio import read_image

        ref = self.ref(ordinal)
        if (kind := file_kind(ref.path)) is not None:  # gone (or replaced) since the folder was listed
            raise DataError(f"base image {ref.path} " + ("does not exist" if kind == MISSING[0] else f"is {kind}"))
        image = resize_longer_side(read_image(ref.path, ref.key), self.size)
        info = {"file": ref.source, **({"coco_id": ref.coco_id} if ref.coco_id is not None else {})}
        return BaseImage("real", np.ascontiguousarray(image), ref.source, ref.key, ref.coco_id, info)


class AIBases:
    """AI bases: ``t2i.generate(caption, seed, size)`` on COCO or template captions.

    ``t2i`` is a :class:`~diffzoo.generators.editors.text2image.TextToImage` (or any
    object with that ``generate`` and a ``card``); ``size`` None keeps its
    resolution; ``name`` is its card's (a run's settings and every AI base record it).
    """

    def __init__(self, t2i: Any, captions: Sequence[str] | None, seed: int, size: int | None):
        self.t2i, self.captions, self.size = t2i, list(captions or ()), size
        self.name = getattr(getattr(t2i, "card", None), "name", type(t2i).__name__)
        self.order = sample_rng(seed, _ORDER_KEY, 1).permutation(len(self.captions)) if self.captions else None

    def get(self, ordinal: int, rng: np.random.Generator) -> BaseImage:
        from diffzoo.generators.generate.prompts import make_caption

        if self.captions:
            caption = self.captions[int(self.order[ordinal % len(self.captions)])]
        else:
            caption = make_caption(rng)
        t2i_seed = int(rng.integers(2**31 - 1))
        image = self.t2i.generate(caption, t2i_seed, size=self.size)
        info = {"caption": caption, "seed": t2i_seed, "text2image": self.name}
        return BaseImage("ai", np.ascontiguousarray(image), f"t2i:{self.name}", info=info)
