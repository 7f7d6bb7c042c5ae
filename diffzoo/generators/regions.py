"""Object-like random edit regions: ellipses, smooth blobs and polygons.

Stand-ins for object masks (COCO instances, detector + SAM) when none are
given.  Every draw comes from a seeded ``numpy.random.Generator``; each mask
covers a chosen fraction of the image (``min_frac``..``max_frac``) and keeps a
one-pixel margin from the border, like an object inside the frame.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..harness.errors import ConfigError

SHAPES: tuple[str, ...] = ("ellipse", "blob", "polygon")


@dataclass(frozen=True)
class Region:
    """A bool H x W mask, its bounding box ``(x0, y0, x1, y1)`` (exclusive end), its shape."""

    mask: np.ndarray
    bbox: tuple[int, int, int, int]
    shape: str

    @property
    def fraction(self) -> float:
        return float(self.mask.mean())


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
    min_frac: float = 0.05,
    max_frac: float = 0.35,
    shapes: tuple[str, ...] = SHAPES,
    margin: int = 1,
) -> Region:
    """Draw one object-like region covering about ``min_frac``..``max_frac`` of the image."""
    if not 0 < min_frac <= max_frac < 1:
        raise ConfigError(f"need 0 < min_frac <= max_frac < 1, got {min_frac}, {max_frac}")
    unknown = set(shapes) - set(SHAPES)
    if not shapes or unknown:
        raise ConfigError(f"unknown region shapes {sorted(unknown)}; choose from {SHAPES}")
    if min(height, width) < 8:
        raise ConfigError(f"image {width}x{height} is too small for a region")
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
        half = min(height, width) / 2 - margin
        scale = min(scale, half / reach)
        ext = reach * scale
        cy = float(rng.uniform(margin + ext, height - margin - ext)) if height - 2 * (margin + ext) > 0 else height / 2
        cx = float(rng.uniform(margin + ext, width - margin - ext)) if width - 2 * (margin + ext) > 0 else width / 2
        mask = _radial_mask(height, width, cy, cx, lambda t: scale * radius_at(t), angle)
        if margin > 0:
            mask[:margin], mask[-margin:], mask[:, :margin], mask[:, -margin:] = False, False, False, False
        if mask.mean() >= 0.5 * min_frac:
            return Region(mask=mask, bbox=bbox_of(mask), shape=shape)
    raise ConfigError(f"could not draw a region covering {min_frac:.0%}..{max_frac:.0%} of {width}x{height}")
