"""Distortions applied to an image (and its label) before the detector.

Each is a function ``(image, label, **params) -> (image, label)``: ``image``
is H x W x 3 uint8 RGB, ``label`` H x W uint8 (255 = ignore).  The returned
label is the ground truth the prediction is scored against; when the returned
image has another size than the returned label, the evaluation resizes the
detector's logits bilinearly to the label's size.  Registered through
``register_distortions``.

Every distortion is deterministic (same inputs, same bytes out) and rejects
an invalid parameter with a :class:`ConfigError` naming the distortion, the
parameter and the allowed range.  Codecs are Pillow's (libjpeg-turbo,
libwebp), filters OpenCV's; exact bytes can differ between builds of those
libraries, never between runs of one build.
"""

from __future__ import annotations

import hashlib
import io
import math
from numbers import Integral, Real
from typing import Any

import numpy as np

from .errors import ConfigError

JPEG_SUBSAMPLING = "4:2:0"
"""Chroma subsampling of every JPEG encode: Pillow's (libjpeg's) default, written
out so that a change of default cannot move a number."""
WEBP_METHOD = 4
"""libwebp effort (0 fast .. 6 slow); 4 is Pillow's default.  Fixed: the method
changes the encoded pixels."""
PNG_COMPRESS_LEVEL = 6
"""zlib level of PNG encodes (lossless at any level; fixed for stable bytes)."""
FORMATS = ("png", "jpeg", "webp")
"""Formats :func:`reencode` takes (case-insensitive)."""

Pair = tuple[np.ndarray, np.ndarray]


def identity(image: np.ndarray, label: np.ndarray, **params) -> Pair:
    """No distortion."""
    return image, label


# -- helpers shared by the distortions (and by generators/reedit.py) ----------


def image_digest(array: np.ndarray) -> str:
    """sha256 (hex) of an array's shape, dtype and bytes: equal pixels, equal digest."""
    array = np.ascontiguousarray(array)
    h = hashlib.sha256(f"{array.shape}{array.dtype.str}".encode())
    h.update(array.tobytes())
    return h.hexdigest()


def encode(image: np.ndarray, fmt: str, **options: Any) -> bytes:
    """Encode an RGB uint8 image with Pillow (``fmt``: ``PNG``, ``JPEG``, ``WEBP``)."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(image), "RGB").save(buf, format=fmt, **options)
    return buf.getvalue()


def decode(data: bytes) -> np.ndarray:
    """Bytes of an encoded image -> H x W x 3 uint8 RGB."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as img:
        return np.asarray(img.convert("RGB")).copy()


def _integer(dist: str, name: str, value: Any, lo: int, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral) or value < lo or (hi is not None and value > hi):
        allowed = f"an integer in {lo}..{hi}" if hi is not None else f"an integer >= {lo}"
        raise ConfigError(f"distortion {dist!r}: {name} must be {allowed}, got {value!r}")
    return int(value)


def _real(dist: str, name: str, value: Any, *, lo: float, hi: float = math.inf,
          lo_open: bool = False, allowed: str = "") -> float:
    ok = isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value)
    if ok:
        ok = (value > lo if lo_open else value >= lo) and value <= hi
    if not ok:
        raise ConfigError(f"distortion {dist!r}: {name} must be {allowed}, got {value!r}")
    return float(value)


def _quality(dist: str, quality: Any) -> int:
    return _integer(dist, "quality", quality, 1, 100)


def _jpeg_roundtrip(image: np.ndarray, quality: int) -> np.ndarray:
    return decode(encode(image, "JPEG", quality=quality, subsampling=JPEG_SUBSAMPLING, optimize=False))


def _webp_roundtrip(image: np.ndarray, quality: int) -> np.ndarray:
    return decode(encode(image, "WEBP", quality=quality, method=WEBP_METHOD, lossless=False))


# -- the distortions -----------------------------------------------------------


def jpeg(image: np.ndarray, label: np.ndarray, *, quality: int) -> Pair:
    """JPEG encode + decode at exactly ``quality`` (integer 1..100).

    Pillow with its standard quantization tables scaled to ``quality``, 4:2:0
    chroma subsampling, no ``optimize`` (Huffman optimization changes no pixel,
    but is left off so the bytes are the plain encoder's).  Label unchanged.
    """
    return _jpeg_roundtrip(image, _quality("jpeg", quality)), label


def webp(image: np.ndarray, label: np.ndarray, *, quality: int) -> Pair:
    """Lossy WebP encode + decode at ``quality`` (integer 1..100), libwebp method 4
    (fixed: the method changes the pixels).  Label unchanged."""
    return _webp_roundtrip(image, _quality("webp", quality)), label


def resize(image: np.ndarray, label: np.ndarray, *, size: int, back: bool = True) -> Pair:
    """Resize so that the longer side is ``size`` px (integer >= 1), aspect kept.

    The shorter side becomes ``round(short * size / long)`` (at least 1).
    Resampling is Pillow's bicubic for both down- and upscaling: Pillow widens
    the filter support by the scale factor when it downscales, so it is
    anti-aliased (area-like) where OpenCV's cubic would alias, and it is the
    filter the editors use (``diffusers_editor.py``).  An image whose longer
    side is already ``size`` is returned unchanged.

    ``back=True`` (default): the label is unchanged, so the evaluation resizes
    the logits back to the original size and scores there.  ``back=False``: the
    label is resized with nearest neighbour to the new image size and scoring
    happens at the new size.

    DiffSeg30k images are 1024 px; the paper's settings are ``size`` 256 and
    1024 (the latter a no-op on 1024 px images, an upscale on smaller ones).
    """
    from PIL import Image

    size = _integer("resize", "size", size, 1)
    if not isinstance(back, (bool, np.bool_)):
        raise ConfigError(f"distortion 'resize': back must be true or false, got {back!r}")
    height, width = image.shape[:2]
    scale = size / max(height, width)
    new_w, new_h = max(1, round(width * scale)), max(1, round(height * scale))
    if (new_h, new_w) == (height, width):
        return image, label
    out = np.array(Image.fromarray(image, "RGB").resize((new_w, new_h), Image.Resampling.BICUBIC))
    if back:
        return out, label
    return out, np.array(Image.fromarray(label, "L").resize((new_w, new_h), Image.Resampling.NEAREST))


def blur(image: np.ndarray, label: np.ndarray, *, sigma: float) -> Pair:
    """Gaussian blur with standard deviation ``sigma`` px (>= 0; 0 = unchanged).

    OpenCV ``GaussianBlur`` with a square kernel of side ``2 * ceil(3 * sigma) + 1``
    (covers +-3 sigma) and ``BORDER_REFLECT_101`` borders (``dcb|abcd|cba``,
    the edge pixel not repeated).  Label unchanged.
    """
    import cv2

    sigma = _real("blur", "sigma", sigma, lo=0.0, allowed="a number >= 0")
    if sigma == 0.0:
        return image, label
    k = 2 * math.ceil(3.0 * sigma) + 1
    out = cv2.GaussianBlur(np.ascontiguousarray(image), (k, k), sigmaX=sigma, sigmaY=sigma,
                           borderType=cv2.BORDER_REFLECT_101)
    return out, label


def noise(image: np.ndarray, label: np.ndarray, *, sigma: float, seed: int = 0) -> Pair:
    """Additive Gaussian noise of standard deviation ``sigma`` (>= 0) in 0..255 units.

    ``out = clip(rint(image + N(0, sigma^2)), 0, 255)`` per pixel and channel,
    drawn by numpy's default generator seeded with ``seed`` (integer >= 0) and
    the first 128 bits of the image's sha256: reproducible, yet different
    for every image.  Label unchanged.
    """
    sigma = _real("noise", "sigma", sigma, lo=0.0, allowed="a number >= 0 (0..255 units)")
    seed = _integer("noise", "seed", seed, 0)
    if sigma == 0.0:
        return image, label
    digest = bytes.fromhex(image_digest(image))[:16]
    rng = np.random.default_rng([seed, *np.frombuffer(digest, dtype="<u4").tolist()])
    noisy = image.astype(np.float64) + rng.normal(0.0, sigma, size=image.shape)
    return np.clip(np.rint(noisy), 0, 255).astype(np.uint8), label


def crop(image: np.ndarray, label: np.ndarray, *, fraction: float) -> Pair:
    """Centre crop keeping ``fraction`` (0 < fraction <= 1) of each side.

    The crop is ``round(H * fraction)`` x ``round(W * fraction)`` (at least 1)
    starting at ``((H - h) // 2, (W - w) // 2)``; the label is cropped with the
    same window, so scoring covers the kept pixels only.
    """
    fraction = _real("crop", "fraction", fraction, lo=0.0, hi=1.0, lo_open=True,
                     allowed="a number in (0, 1]")
    height, width = image.shape[:2]
    h, w = max(1, round(height * fraction)), max(1, round(width * fraction))
    top, left = (height - h) // 2, (width - w) // 2
    window = (slice(top, top + h), slice(left, left + w))
    return np.ascontiguousarray(image[window]), np.ascontiguousarray(label[window])


def reencode(image: np.ndarray, label: np.ndarray, *, format: str, quality: int | None = None) -> Pair:
    """Re-encode as ``format`` (``png``, ``jpeg`` or ``webp``; case-insensitive).

    ``png`` is lossless: the pixels come back identical (``quality`` must be
    unset).  ``jpeg`` and ``webp`` need ``quality`` (1..100) and are exactly
    :func:`jpeg` and :func:`webp`.  Used by the format-parity suite, which
    re-encodes authentic and edited images alike.  Label unchanged.
    """
    fmt = str(format).lower() if isinstance(format, str) else format
    if fmt not in FORMATS:
        raise ConfigError(f"distortion 'reencode': format must be one of {', '.join(FORMATS)}, got {format!r}")
    if fmt == "png":
        if quality is not None:
            raise ConfigError(f"distortion 'reencode': png is lossless and takes no quality, got {quality!r}")
        return decode(encode(image, "PNG", compress_level=PNG_COMPRESS_LEVEL)), label
    if quality is None:
        raise ConfigError(f"distortion 'reencode': format {fmt} needs quality (an integer in 1..100)")
    q = _quality("reencode", quality)
    return (_jpeg_roundtrip(image, q) if fmt == "jpeg" else _webp_roundtrip(image, q)), label
