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
from collections.abc import Callable
from numbers import Integral, Real
from typing import Any

import numpy as np

from diffzoo.harness.core.errors import ConfigError, CorruptSampleError, DataError
from diffzoo.harness.core.types import SampleMeta

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
MAX_SIDE = {"JPEG": 65500, "WEBP": 16383}
"""The longest side each lossy codec encodes (libjpeg's and libwebp's limits)."""

Pair = tuple[np.ndarray, np.ndarray]


def identity(image: np.ndarray, label: np.ndarray) -> Pair:
    """No distortion (and no parameter: a case giving one is refused when planned)."""
    return image, label


# -- helpers shared by the distortions (and by generators/datasets/reedit.py) ----------


def image_digest(array: np.ndarray) -> str:
    """sha256 (hex) of an array's shape, dtype and bytes: equal pixels, equal digest."""
    array = np.ascontiguousarray(array)
    h = hashlib.sha256(f"{array.shape}{array.dtype.str}".encode())
    h.update(array.tobytes())
    return h.hexdigest()


def encode(image: np.ndarray, fmt: str, **options: Any) -> bytes:
    """Encode a uint8 image (H x W x 3 RGB, or H x W: a mask) with Pillow (``fmt``: ``PNG``, ``JPEG``,
    ``WEBP``); a PNG at :data:`PNG_COMPRESS_LEVEL`, with no text chunk or timestamp: the same pixels
    give the same bytes, which is what a written file's recorded sha256 relies on."""
    from PIL import Image

    buf = io.BytesIO()
    if fmt == "PNG":
        options.setdefault("compress_level", PNG_COMPRESS_LEVEL)
    Image.fromarray(np.ascontiguousarray(image)).save(buf, format=fmt, **options)
    return buf.getvalue()


def decode(data: bytes) -> np.ndarray:
    """Bytes of an encoded image -> H x W x 3 uint8 RGB."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as img:
        return np.asarray(img.convert("RGB")).copy()


def _integer(dist: str, name: str, value: Any, lo: int, hi: int | None = None) -> int:
    number = int(value) if isinstance(value, Integral) and not isinstance(value, bool) else None
    if number is None or number < lo or (hi is not None and number > hi):
        allowed = f"an integer in {lo}..{hi}" if hi is not None else f"an integer >= {lo}"
        raise ConfigError(f"distortion {dist!r}: {name} must be {allowed}, got {value!r}")
    return number


def _real(dist: str, name: str, value: Any, *, lo: float, hi: float = math.inf,
          lo_open: bool = False, allowed: str = "") -> float:
    ok = isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value)
    if ok:
        ok = (value > lo if lo_open else value >= lo) and value <= hi
    if not ok:
        raise ConfigError(f"distortion {dist!r}: {name} must be {allowed}, got {value!r}")
    return float(value)


def _lossy_roundtrip(dist: str, image: np.ndarray, fmt: str, quality: Any, meta: SampleMeta | None) -> np.ndarray:
    """``image`` encoded as ``fmt`` (``JPEG``, ``WEBP``) at ``quality`` (distortion ``dist``'s, an integer
    in 1..100) with its fixed options, and decoded; unless it has a side ``fmt`` cannot encode: sample
    ``meta`` skipped as ``too-large`` (an image within the pixel limit, such as a 2 x 20000 strip, is no
    error of the run), or without ``meta`` (called from Python) a DataError naming no sample."""
    quality = _integer(dist, "quality", quality, 1, 100)
    height, width = image.shape[:2]
    if max(height, width) > MAX_SIDE[fmt]:
        reason = f"a {width}x{height} image cannot be encoded as {fmt}, which takes at most {MAX_SIDE[fmt]} px a side"
        raise DataError(reason) if meta is None else CorruptSampleError(meta.id, reason, "too-large")
    options = ({"subsampling": JPEG_SUBSAMPLING, "optimize": False} if fmt == "JPEG"
               else {"method": WEBP_METHOD, "lossless": False})
    return decode(encode(image, fmt, quality=quality, **options))


# -- the distortions -----------------------------------------------------------


def jpeg(image: np.ndarray, label: np.ndarray, *, quality: int, meta: SampleMeta | None = None) -> Pair:
    """JPEG encode + decode at exactly ``quality`` (integer 1..100).

    Pillow with its standard quantization tables scaled to ``quality``, 4:2:0
    chroma subsampling, no ``optimize`` (Huffman optimization changes no pixel,
    but is left off so the bytes are the plain encoder's).  Label unchanged.
    An image with a side past 65500 px is sample ``meta.id`` skipped as ``too-large``.
    """
    return _lossy_roundtrip("jpeg", image, "JPEG", quality, meta), label


def webp(image: np.ndarray, label: np.ndarray, *, quality: int, meta: SampleMeta | None = None) -> Pair:
    """Lossy WebP encode + decode at ``quality`` (integer 1..100), libwebp method 4
    (fixed: the method changes the pixels).  Label unchanged.  An image with a side
    past 16383 px is sample ``meta.id`` skipped as ``too-large``."""
    return _lossy_roundtrip("webp", image, "WEBP", quality, meta), label


def longer_side_size(height: int, width: int, size: int) -> tuple[int, int]:
    """(h, w) of an image whose longer side is brought to ``size`` px, aspect kept
    (the other side ``round(side * size / long)``, at least 1)."""
    scale = size / max(height, width)
    return max(1, round(height * scale)), max(1, round(width * scale))


LONG_SIDE_CAP = 4
"""The longer side is at most this many times the target shorter side: mmseg's
``scale=(2048, 512), keep_ratio=True`` rule, so that a 1 x 8192 image is not
blown up to 512 x 4 million pixels."""


def shorter_side_size(height: int, width: int, short: int) -> tuple[int, int]:
    """(h, w) of an image whose shorter side is brought to ``short`` px, aspect
    kept (the longer side ``round(long * short / shorter)``, at least 1),
    unless the longer side would pass ``LONG_SIDE_CAP * short``: then the
    longer side is brought to that (as mmseg's keep-ratio resize does)."""
    scale = min(short / min(height, width), LONG_SIDE_CAP * short / max(height, width))
    return max(1, round(height * scale)), max(1, round(width * scale))


def resize_image(image: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """``image`` resized to (h, w) = ``size`` with Pillow's bicubic filter; the
    same array when it already has that size.

    Pillow widens the filter support by the scale factor when it downscales,
    so it is anti-aliased (area-like) where OpenCV's cubic would alias, and it
    is the filter the editors use (``diffusers_editor.py``).
    """
    from PIL import Image

    if tuple(size) == image.shape[:2]:
        return image
    return np.array(Image.fromarray(np.ascontiguousarray(image), "RGB").resize(
        (size[1], size[0]), Image.Resampling.BICUBIC))


def resize_label(label: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """A label map resized to (h, w) = ``size`` with nearest neighbour (Pillow)."""
    from PIL import Image

    if tuple(size) == label.shape[:2]:
        return label
    return np.array(Image.fromarray(np.ascontiguousarray(label), "L").resize(
        (size[1], size[0]), Image.Resampling.NEAREST))


def resize(image: np.ndarray, label: np.ndarray, *, size: int, back: bool = True) -> Pair:
    """Resize so that the longer side is ``size`` px (integer >= 1), aspect kept.

    The shorter side becomes ``round(short * size / long)`` (at least 1).
    Resampling is Pillow's bicubic for both down- and upscaling (see
    :func:`resize_image`).  An image whose longer side is already ``size`` is
    returned unchanged.

    ``back=True`` (default): the label is unchanged, so the evaluation resizes
    the logits back to the original size and scores there.  ``back=False``: the
    label is resized with nearest neighbour to the new image size and scoring
    happens at the new size.

    An absolute size, whatever the detector's training resolution: on
    1024 px DiffSeg30k images ``size=1024`` is a no-op (reported as the
    baseline's input, not re-run).  The paper's "resize 256 / 1024" are
    :func:`rescale` at 0.5 and 2.0 (docs/distortions.md).  Under
    ``--recipe paper`` the evaluation then brings the result to the
    recipe's input size (its shorter side to the training crop).
    """
    new = _resize_output(*image.shape[:2], size=size)
    if not isinstance(back, (bool, np.bool_)):
        raise ConfigError(f"distortion 'resize': back must be true or false, got {back!r}")
    if new == image.shape[:2]:
        return image, label
    out = resize_image(image, new)
    return (out, label) if back else (out, resize_label(label, new))


def rescale(image: np.ndarray, label: np.ndarray, *, scale: float, input_size: int | None = None) -> Pair:
    """Show the detector the image with its shorter side at ``scale`` x its input resolution.

    The shorter side becomes ``round(scale * input_size)`` px (at least 1), the
    longer ``round(long * short_new / short)`` (aspect kept, at least 1; an
    image over 4:1 has its longer side capped at 4x, see :func:`shorter_side_size`), with
    Pillow's bicubic filter (see :func:`resize_image`); an image that already
    has that size is returned unchanged.  The label is unchanged: the
    evaluation resizes the logits back to the label and scores at the
    label's resolution.

    ``scale``: a number > 0.  ``input_size``: the model's input resolution,
    filled in by the runner (the ``crop_size`` it was trained with; a card
    used as built: its ``input_size``), so that 0.5 and 2.0 mean the same on
    64 px ``mini`` (64-px crops) as on 1024 px DiffSeg30k (512-px crops): the
    paper's "resize 256 / 1024".  The size it sets is the detector's input
    under either recipe (``--recipe paper`` does not resize it again).
    Without ``input_size`` (called outside a run) it is a ConfigError.
    """
    return resize_image(image, _rescale_output(*image.shape[:2], scale=scale, input_size=input_size)), label


def _within_limit(dist: str, given: str, height: int, width: int, new_size: Callable[[], tuple[int, int]]
                  ) -> tuple[int, int]:
    """``new_size()``, the (h, w) ``dist`` brings a ``height`` x ``width`` image to, unless it is over the
    pixel limit on images: that image would be more memory than any image diffzoo decodes.  A size
    past what a float holds (``new_size`` overflows) is past any limit."""
    from diffzoo.harness.data.imageio import MAX_PIXELS_ENV, max_pixels

    try:
        size: tuple[int, int] | None = new_size()
    except OverflowError:
        size = None
    if size is None or size[0] * size[1] > max_pixels():
        made = "" if size is None else f" {size[0]} x {size[1]} px"
        raise ConfigError(f"distortion {dist!r}: {given} makes a {height} x {width} px image{made}, "
                          f"over the {max_pixels():,}-pixel limit on images (${MAX_PIXELS_ENV})")
    return size


def _resize_output(height: int, width: int, *, size: int, back: bool = True) -> tuple[int, int]:
    size = _integer("resize", "size", size, 1)
    return _within_limit("resize", f"size {size}", height, width, lambda: longer_side_size(height, width, size))


def _rescale_output(height: int, width: int, *, scale: float, input_size: int | None = None) -> tuple[int, int]:
    scale = _real("rescale", "scale", scale, lo=0.0, lo_open=True, allowed="a number > 0")
    input_size = _integer("rescale", "input_size", input_size, 1)
    return _within_limit("rescale", f"scale {scale:g} of input_size {input_size}", height, width,
                         lambda: shorter_side_size(height, width, max(1, round(scale * input_size))))


# Distortions that only change the image's size carry ``output_size(h, w, **params)``:
# the planner uses it to see when a pass feeds the detector the baseline's very input.
identity.output_size = lambda height, width: (height, width)  # type: ignore[attr-defined]
resize.output_size = _resize_output  # type: ignore[attr-defined]
rescale.output_size = _rescale_output  # type: ignore[attr-defined]


MAX_BLUR_SIGMA = 100.0
"""The largest blur sigma (px): a 601-px kernel, wider than most images.  The cost grows
with the kernel (about 70 s per 1024 px image at sigma 1000, hours past that) and OpenCV
takes no kernel side past 2**31."""


def blur(image: np.ndarray, label: np.ndarray, *, sigma: float) -> Pair:
    """Gaussian blur with standard deviation ``sigma`` px (0..``MAX_BLUR_SIGMA``; 0 = unchanged).

    OpenCV ``GaussianBlur`` with a square kernel of side ``2 * ceil(3 * sigma) + 1``
    (covers +-3 sigma) and ``BORDER_REFLECT_101`` borders (``dcb|abcd|cba``,
    the edge pixel not repeated).  Label unchanged.
    """
    import cv2

    sigma = _real("blur", "sigma", sigma, lo=0.0, hi=MAX_BLUR_SIGMA, allowed=f"a number in 0..{MAX_BLUR_SIGMA:g}")
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


def reencode(image: np.ndarray, label: np.ndarray, *, format: str, quality: int | None = None,
             meta: SampleMeta | None = None) -> Pair:
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
        return decode(encode(image, "PNG")), label
    if quality is None:
        raise ConfigError(f"distortion 'reencode': format {fmt} needs quality (an integer in 1..100)")
    return _lossy_roundtrip("reencode", image, fmt.upper(), quality, meta), label
