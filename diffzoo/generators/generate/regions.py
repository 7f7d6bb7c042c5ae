"""Edit regions: object-like random shapes, given mask files, and choosing among candidates.

``random_region`` draws stand-ins for object masks (ellipses, smooth blobs,
polygons) from a seeded ``numpy.random.Generator``; each covers a chosen
fraction of the image (``min_frac``..``max_frac``) and keeps a one-pixel
margin from the border, like an object inside the frame.

Region sources for ``diffzoo generate`` return every candidate region of a
base image (``candidates(base, rng)``): :class:`RandomRegions`,
:class:`MaskFolderRegions` (mask PNGs given per base image), COCO instances
(``coco.py``) and open-vocabulary detection + SAM (``openvocab.py``).
:func:`dedupe_overlaps` drops near-duplicate masks and :func:`choose_region`
picks one candidate per edit, balanced over area bins.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from diffzoo.generators.generate.defaults import AREA_BINS
from diffzoo.harness.core.errors import ConfigError, CorruptSampleError, DataError, name_some
from diffzoo.harness.core.fsutil import require_file, sha256_file
from diffzoo.harness.core.progress import NullProgress, current_progress
from diffzoo.harness.data.distortions import longer_side_size, resize_label

SHAPES: tuple[str, ...] = ("ellipse", "blob", "polygon")
MARGIN = 1  # px kept free of every random region along the border
MIN_SIDE = 8  # px: an image with a shorter side holds no region
RANDOM_AREA = (0.05, 0.35)  # fractions of the image a random region covers
Shape = tuple[int, int]  # (h, w) in px
T = TypeVar("T")


@dataclass(frozen=True)
class Region:
    """A bool H x W mask, its bounding box ``(x0, y0, x1, y1)`` (exclusive end), its shape.

    ``shape`` is the drawn shape, or where the mask came from (``mask``,
    ``coco``, ``open-vocab``); ``label`` the object's name when known.
    """

    mask: np.ndarray
    bbox: tuple[int, int, int, int]
    shape: str
    label: str | None = None

    @property
    def fraction(self) -> float:
        return float(self.mask.mean())

    @property
    def area(self) -> int:
        return int(self.mask.sum())


def bbox_of(mask: np.ndarray) -> tuple[int, int, int, int]:
    """Bounding box ``(x0, y0, x1, y1)`` of the True pixels (exclusive end)."""
    ys, xs = np.nonzero(mask)
    if len(xs) == 0:
        raise ConfigError("bounding box of an empty mask")
    return int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1


def _radial_mask(
    height: int, width: int, cy: float, cx: float, radius_at: Callable[[np.ndarray], np.ndarray], angle: float
) -> np.ndarray:
    """Pixels whose distance from (cy, cx) is below ``radius_at(theta)``."""
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float64)
    dy, dx = yy + 0.5 - cy, xx + 0.5 - cx
    theta = np.arctan2(dy, dx) - angle
    return np.hypot(dy, dx) < radius_at(theta)


def _ellipse_radius(aspect: float):
    # r(theta) of an ellipse with semi-axes a = sqrt(aspect), b = 1/sqrt(aspect) (area pi)
    a, b = math.sqrt(aspect), 1.0 / math.sqrt(aspect)
    return lambda t: a * b / np.sqrt((b * np.cos(t)) ** 2 + (a * np.sin(t)) ** 2), max(a, b)


def _blob_radius(rng: np.random.Generator):
    # smooth star-shaped curve: 1 + sum of low harmonics with random phases
    ks = np.arange(2, 6)
    amps = rng.uniform(0.0, 0.22, size=len(ks)) / ks**0.5
    phases = rng.uniform(0.0, 2 * math.pi, size=len(ks))

    def radius(t: np.ndarray) -> np.ndarray:
        r = np.ones_like(t)
        for k, a, p in zip(ks, amps, phases):
            r = r + a * np.cos(k * t + p)
        return r

    norm = math.sqrt(1.0 + 0.5 * float((amps**2).sum()))  # mean r^2 -> area ~ pi * norm^2
    return (lambda t: radius(t) / norm), float((1 + amps.sum()) / norm)


def _polygon_radius(rng: np.random.Generator):
    # random star-shaped polygon: sorted vertex angles, jittered radii, linear edges
    n = int(rng.integers(5, 10))
    # jittered even spacing keeps every angular gap below pi, so the centre is inside
    angles = (np.arange(n) + rng.uniform(-0.35, 0.35, size=n)) * (2 * math.pi / n)
    radii = rng.uniform(0.7, 1.3, size=n)
    px, py = radii * np.cos(angles), radii * np.sin(angles)
    area = 0.5 * abs(float(np.dot(px, np.roll(py, -1)) - np.dot(py, np.roll(px, -1))))
    scale = math.sqrt(math.pi / max(area, 1e-6))  # area pi, like the other shapes
    ext_angles = np.concatenate([angles - 2 * math.pi, angles, angles + 2 * math.pi])
    ext_px, ext_py = np.tile(px, 3) * scale, np.tile(py, 3) * scale

    def radius(t: np.ndarray) -> np.ndarray:
        t = np.mod(t, 2 * math.pi)
        i = np.searchsorted(ext_angles, t) - 1
        x0, y0, x1, y1 = ext_px[i], ext_py[i], ext_px[i + 1], ext_py[i + 1]
        # intersection of the ray at angle t with the edge (x0,y0)-(x1,y1)
        ct, st = np.cos(t), np.sin(t)
        den = ct * (y1 - y0) - st * (x1 - x0)
        num = x0 * y1 - y0 * x1
        return np.abs(num / np.where(np.abs(den) < 1e-12, 1e-12, den))

    return radius, float(radii.max() * scale)


def random_region(
    height: int,
    width: int,
    rng: np.random.Generator,
    *,
    min_frac: float = RANDOM_AREA[0],
    max_frac: float = RANDOM_AREA[1],
    shapes: tuple[str, ...] = SHAPES,
) -> Region:
    """Draw one object-like region covering about ``min_frac``..``max_frac`` of the image."""
    if not 0 < min_frac <= max_frac < 1:
        raise ConfigError(f"need 0 < min_frac <= max_frac < 1, got {min_frac}, {max_frac}")
    unknown = set(shapes) - set(SHAPES)
    if not shapes or unknown:
        raise ConfigError(f"unknown region shapes {sorted(unknown)}; choose from {SHAPES}")
    if min(height, width) < MIN_SIDE:
        raise ConfigError(f"image {width}x{height} is too small for a region: a side under {MIN_SIDE} px")
    for _ in range(20):
        shape = shapes[int(rng.integers(len(shapes)))]
        frac = float(rng.uniform(min_frac, max_frac))
        angle = float(rng.uniform(0, math.pi))
        if shape == "ellipse":
            radius_at, reach = _ellipse_radius(float(np.exp(rng.uniform(-0.7, 0.7))))
        elif shape == "blob":
            radius_at, reach = _blob_radius(rng)
        else:
            radius_at, reach = _polygon_radius(rng)
        # unit shapes have area ~pi: scale radius so the area is frac * H * W
        scale = math.sqrt(frac * height * width / math.pi)
        half = min(height, width) / 2 - MARGIN
        scale = min(scale, half / reach)
        ext = reach * scale
        cy = float(rng.uniform(MARGIN + ext, height - MARGIN - ext)) if height - 2 * (MARGIN + ext) > 0 else height / 2
        cx = float(rng.uniform(MARGIN + ext, width - MARGIN - ext)) if width - 2 * (MARGIN + ext) > 0 else width / 2
        mask = _radial_mask(height, width, cy, cx, lambda t, s=scale, r=radius_at: s * r(t), angle)
        mask[:MARGIN], mask[-MARGIN:], mask[:, :MARGIN], mask[:, -MARGIN:] = False, False, False, False
        if mask.mean() >= 0.5 * min_frac:
            return Region(mask=mask, bbox=bbox_of(mask), shape=shape)
    raise ConfigError(f"could not draw a region covering {min_frac:.0%}..{max_frac:.0%} of {width}x{height}")


def random_fits(height: int, width: int) -> bool:
    """Whether :func:`random_region` can draw in an image of this size: each region it draws lies in a
    disk within the margins, which must cover the least area it accepts (half its ``min_frac``)."""
    return math.pi * (min(height, width) / 2 - MARGIN) ** 2 >= 0.5 * RANDOM_AREA[0] * height * width


# -- candidates for diffzoo generate ---------------------------------------------
def regions_of(masks: Iterable[tuple[np.ndarray, str | None]], shape: str) -> list[Region]:
    """The Regions of the non-empty bool masks among ``(mask, label)`` pairs, in order."""
    masks = [(np.ascontiguousarray(mask, dtype=bool), label) for mask, label in masks]
    return [Region(mask=mask, bbox=bbox_of(mask), shape=shape, label=label) for mask, label in masks if mask.any()]


def resize_mask(mask: np.ndarray, height: int, width: int) -> np.ndarray:
    """A bool mask resized (nearest neighbour, as a label map: :func:`resize_label`) to ``height`` x ``width``."""
    return resize_label(mask.astype(np.uint8), (height, width)).astype(bool)


def same_shape(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """Whether (h, w) ``a`` and ``b`` are one shape at two scales: the larger brought to the
    smaller's longer side is it, within 1 px of rounding (a region resized keeps its place)."""
    big, small = (a[:2], b[:2]) if max(a[:2]) >= max(b[:2]) else (b[:2], a[:2])
    return max(abs(x - y) for x, y in zip(longer_side_size(big[0], big[1], max(small)), small)) <= 1


def iou(a: np.ndarray, b: np.ndarray) -> float:
    union = np.logical_or(a, b).sum()
    return float(np.logical_and(a, b).sum() / union) if union else 0.0


def dedupe_overlaps(regions: Sequence[Region], max_iou: float = 0.7) -> list[Region]:
    """Drop masks that overlap an already kept one with IoU > ``max_iou``.

    Largest first (ties: input order), so of two near-duplicates the larger
    stays; the result keeps the input order.
    """
    order = sorted(range(len(regions)), key=lambda i: (-regions[i].area, i))
    kept: list[int] = []
    for i in order:
        if all(iou(regions[i].mask, regions[j].mask) <= max_iou for j in kept):
            kept.append(i)
    return [regions[i] for i in sorted(kept)]


def choose_region(
    candidates: Sequence[Region],
    rng: np.random.Generator,
    *,
    min_area: float = 0.0,
    max_area: float = 1.0,
    bins: Sequence[float] = AREA_BINS,
    avoid: Sequence[Region] = (),
) -> Region | None:
    """One candidate whose area fraction lies in [min_area, max_area], balanced over area bins.

    An area bin is drawn uniformly among the bins that hold a candidate, then
    a candidate of that bin; candidates in ``avoid`` (regions earlier turns
    used) are taken only when nothing else is left.  None when no candidate
    is within the bounds.
    """
    fitting = [r for r in candidates if min_area <= r.fraction <= max_area]
    fresh = [r for r in fitting if not any(r is a for a in avoid)]
    pool = fresh or fitting
    if not pool:
        return None
    by_bin: dict[int, list[Region]] = {}
    for r in pool:
        by_bin.setdefault(int(np.searchsorted(np.asarray(bins), r.fraction, side="right")), []).append(r)  # 0: small
    keys = sorted(by_bin)
    group = by_bin[keys[int(rng.integers(len(keys)))]]
    return group[int(rng.integers(len(group)))]


class RandomRegions:
    """Six object-like random shapes per image (:func:`random_region`; for bases without annotations)."""

    name = "random"

    def __init__(self, min_area: float, max_area: float):
        lo, hi = RANDOM_AREA  # choose_region takes none outside [min_area, max_area]
        if min_area > hi or max_area < lo:
            raise ConfigError(f"--min-area {min_area:g} and --max-area {max_area:g} leave no random region (those "
                              f"cover {lo:.0%} to {hi:.0%} of an image: every sample would be rejected); give bounds "
                              "that meet that range, or --regions open-vocab")

    def candidates(self, base: Any, rng: np.random.Generator) -> list[Region]:
        """The draws that fit: a base near too narrow (:func:`random_fits`) fits on some only."""
        h, w = base.image.shape[:2]
        out = []
        for _ in range(6):
            with contextlib.suppress(ConfigError):
                out.append(random_region(h, w, rng))
        return out


def listing_digest(files: Iterable[tuple[str, Path]]) -> str:
    """Names and sizes of the ``(name, path)`` files a run reads: its bases, its mask files (its config records it)."""
    rows = [(name, path.stat().st_size) for name, path in files]
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()[:16]


ANNOUNCE = 500  # more files take seconds to check (about 300 decoded a second): shown as they are read


def checked(items: Sequence[T], what: str) -> Iterator[T]:
    """``items``, each counted done by the next: the progress task of a check (of ``what``) before any
    model loads, the command's (:func:`current_progress`) past :data:`ANNOUNCE` items, else silent."""
    progress = current_progress() if len(items) > ANNOUNCE else NullProgress()
    with progress.task(f"checking {what} before any model loads", len(items)) as task:
        for item in items:
            yield item
            task.advance()


def refuse_files(where: str, what: str, bad: Sequence[str]) -> None:
    """One DataError naming the first three ``bad`` files (each with why) and counting the rest;
    nothing when there is none: the refusal of a check made before any model loads."""
    if bad:
        raise DataError(f"{where}: {len(bad)} {what}(s) cannot be used: {name_some(bad, 3, '; ')}; fix or remove them")


def _object_name(stem: str) -> str | None:
    """``dog_2`` -> ``dog``; ``cup`` -> ``cup``; ``3`` -> None."""
    name = stem.rstrip("0123456789").rstrip("_- ").replace("_", " ").strip()
    return name or None


class MaskFolderRegions:
    """Object masks given as files: ``FOLDER/<base key>/*.png``, non-zero pixels = the object.

    ``<base key>`` is the base image's path inside the bases folder without
    its suffix (``street/0001.jpg`` -> ``FOLDER/street/0001/``).  A file's
    stem names the object (``dog_2.png`` -> "dog").  Masks of another size
    than the base, its shape scaled, are resized (nearest neighbour).
    """

    name = "masks"

    def __init__(self, folder: Path | str):
        self.folder = Path(folder)
        require_file(self.folder, "mask folder", folder=True, option=f"--regions {self.name}:")

    def files(self, key: str) -> list[Path]:
        from diffzoo.harness.data.authentic import image_files_in

        d = self.folder / key
        return image_files_in(d) if d.is_dir() else []

    def digest(self) -> str:
        """Names and sizes of every mask file (a run's config records it)."""
        return listing_digest(sorted((p.relative_to(self.folder).as_posix(), p) for p in self.folder.rglob("*")
                                     if p.is_file() and not p.name.startswith(".")))

    def sha256(self, key: str) -> str:
        """One sha256 of base ``key``'s mask files (:meth:`files`, in order): its samples' records hold it."""
        return hashlib.sha256(" ".join(sha256_file(p) for p in self.files(key)).encode()).hexdigest()

    def check(self, bases: Sequence[Any], sizes: Mapping[str, tuple[Shape, Shape]], min_area: float,
              max_area: float) -> None:
        """Every mask file of ``bases`` (each with its ``key`` and ``source``; ``sizes``: each key's
        (h, w) and (h, w) at --size, :func:`~diffzoo.generators.generate.bases.check_bases`) decodes as
        :meth:`candidates` reads it (pixels and all), holds a non-zero pixel, has its base's shape up to
        a resize (1 px of rounding), as a mask of another image, or of a view turned by an EXIF tag, has
        not, and keeps a pixel resized to --size; and each base has a mask whose area at --size is in
        [``min_area``, ``max_area``] (:func:`choose_region` takes no other): a bad one is named before
        any model loads, not at its sample."""
        from diffzoo.harness.data.imageio import read_object_mask

        bad, far = [], []
        for base in checked(bases, f"the masks of {len(bases)} base(s)"):
            (h, w), at = sizes[base.key]
            areas = []  # of its good masks, at --size
            for path in self.files(base.key):
                try:
                    mask = read_object_mask(path, base.key)
                except CorruptSampleError as exc:
                    bad.append(exc.reason)
                    continue
                if not mask.any():  # no candidate: its base's samples would say no region is within the bounds
                    bad.append(f"{path}: the mask is empty (no non-zero pixel, no region)")
                elif not same_shape(mask.shape, (h, w)):
                    bad.append(f"{path}: {mask.shape[1]} x {mask.shape[0]} px does not scale to its base "
                               f"{base.source}, {w} x {h} px")
                elif not (area := float(resize_mask(mask, *at).mean())):  # no candidate left at that size
                    bad.append(f"{path}: its {np.count_nonzero(mask)} non-zero pixel(s) vanish at --size ({at[1]} x "
                               f"{at[0]} px): no region is left; draw a larger region or give a larger --size")
                else:
                    areas.append(area)
            if areas and not any(min_area <= a <= max_area for a in areas):
                far.append(f"{base.source}: its mask(s) in {self.folder / base.key} cover "
                           f"{name_some([f'{a:.1%}' for a in areas])} of it, none from --min-area {min_area:g} to "
                           f"--max-area {max_area:g}: no region to edit")
        refuse_files(f"--regions masks:{self.folder}", "mask file", bad)
        refuse_files(f"--regions masks:{self.folder}", "base image", far)

    def candidates(self, base: Any, rng: np.random.Generator) -> list[Region]:
        from diffzoo.harness.data.imageio import read_object_mask

        h, w = base.image.shape[:2]
        masks = ((resize_mask(read_object_mask(path, base.key), h, w), _object_name(path.stem))
                 for path in self.files(base.key))  # fmt: skip
        return regions_of(masks, "mask")
