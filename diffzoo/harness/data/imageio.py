"""Safe decoding of images and masks into the arrays a :class:`Sample` holds.

Every adapter decodes through these functions so that a corrupt, truncated,
oversized or ambiguous file fails the same way everywhere: a
:class:`CorruptSampleError` naming the sample and the file, with a ``kind``
(``corrupt``, ``missing-file``, ``too-large``, ``unsupported-mode``,
``mask-ambiguous``, ``mask-lossy``, ``mask-size``, ``mask-values``), which a
run skips and counts (``--strict`` stops).  Opening and the pixel limit are in
:mod:`.decode`; the conversion rules are in docs/datasets.md ("Odd images").
"""

from __future__ import annotations

import logging
import re

import numpy as np
from PIL import Image

from diffzoo.harness.core.errors import CorruptSampleError
from diffzoo.harness.data.decode import (
    WIDE_MODES,
    ImageSource,
    converted,
    describe_source,
    has_alpha,
    open_image,
    wide_to_uint8,
)

log = logging.getLogger(__name__)

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".webp")
"""File suffixes (lower-case) that the folder adapters take for images and masks."""

LOSSY_FORMATS = ("JPEG", "MPO")
"""Formats whose compression moves pixel values: refused for class-index masks."""

_SUFFIX_FORMATS = {".png": "PNG", ".tif": "TIFF", ".tiff": "TIFF", ".bmp": "BMP",
                   ".webp": "WEBP", ".jpg": "JPEG", ".jpeg": "JPEG"}

_warned_low_mask = False

__all__ = ["IMAGE_EXTENSIONS", "ImageSource", "is_image_file", "read_binary_mask", "read_image",
           "read_mask"]


def is_image_file(name: str) -> bool:
    return name.lower().endswith(IMAGE_EXTENSIONS)


def on_white(rgba: np.ndarray) -> np.ndarray:
    """Composite H x W x 4 uint8 RGBA over white: round((c*a + 255*(255-a)) / 255)."""
    a = rgba[:, :, 3:4].astype(np.uint32)
    rgb = rgba[:, :, :3].astype(np.uint32)
    return ((rgb * a + 255 * (255 - a) + 127) // 255).astype(np.uint8)


def read_image(src: ImageSource, sample_id: str, *, name: str | None = None) -> np.ndarray:
    """Decode an image as H x W x 3 uint8 RGB.

    Conversions: grey / 1-bit -> RGB (equal channels); 16-bit, 32-bit and
    float grey -> 8-bit by :func:`.decode.wide_to_uint8` (16-bit: the high
    byte, as Pillow does for 16-bit colour);
    palette -> its colours; CMYK, YCbCr, LAB -> RGB by PIL (no colour
    profile); anything with alpha or a transparent colour (RGBA, LA, PA,
    palette or grey with ``tRNS``) is composited on white.  ``name`` is how the
    file is called in error messages (default: the path).
    """
    name = describe_source(src, name)
    img, _ = open_image(src, sample_id, name)
    if img.mode in WIDE_MODES:
        grey = wide_to_uint8(np.asarray(img))
        return np.ascontiguousarray(np.repeat(grey[:, :, None], 3, axis=2))
    if has_alpha(img):
        return on_white(np.asarray(converted(img, "RGBA", sample_id, name), dtype=np.uint8))
    return np.array(converted(img, "RGB", sample_id, name), dtype=np.uint8)


def _suffix_note(name: str, fmt: str) -> str:
    m = re.search(r"(\.[A-Za-z0-9]+)\)?$", name)
    expected = _SUFFIX_FORMATS.get(m.group(1).lower()) if m else None
    return f" although it is named {m.group(1)}" if m and expected and expected != fmt else ""


def _is_lossy(img: Image.Image, data: bytes | None) -> bool:
    if img.format in LOSSY_FORMATS:
        return True
    if img.format == "WEBP" and data is not None:
        return b"VP8 " in data[12:64]  # lossy bitstream chunk (lossless is "VP8L")
    return False


def _refuse_lossy(img: Image.Image, data: bytes | None, sample_id: str, name: str) -> None:
    if _is_lossy(img, data):
        raise CorruptSampleError(
            sample_id,
            f"{name}: mask is {img.format}-encoded (lossy){_suffix_note(name, img.format)}; lossy "
            f"compression changes class indices near every edge, so class-index masks must be "
            f"stored losslessly (PNG, TIFF, BMP or lossless WebP)",
            "mask-lossy",
        )


def _opaque(arr: np.ndarray, sample_id: str, name: str) -> None:
    """Refuse a mask whose alpha channel (last) is not 255 everywhere."""
    alpha = arr[:, :, -1]
    if alpha.size and int(alpha.min()) < 255:
        raise CorruptSampleError(
            sample_id,
            f"{name}: mask has transparent pixels (alpha down to {int(alpha.min())}); which class a "
            f"transparent pixel belongs to is ambiguous: store masks without alpha",
            "mask-ambiguous",
        )


def _mask_array(img: Image.Image, sample_id: str, name: str) -> np.ndarray:
    """Raw class-index array of a mask image (no conversion of index values)."""
    mode = img.mode
    if mode in ("L", "P", "1"):  # P: the palette index is the class
        return np.asarray(img, dtype=np.uint8)
    if mode in ("LA", "PA"):
        arr = np.asarray(img, dtype=np.uint8)
        _opaque(arr, sample_id, name)
        return arr[:, :, 0]
    if mode in ("I", "I;16", "I;16B", "I;16L", "I;16N"):
        arr = np.asarray(img)
        if arr.size and (int(arr.max()) > 255 or int(arr.min()) < 0):
            raise CorruptSampleError(
                sample_id,
                f"{name}: {mode} mask has values {int(arr.min())}..{int(arr.max())}; class-index "
                f"masks hold values 0..254 (255 = ignore)",
                "mask-values",
            )
        return arr.astype(np.uint8)
    if mode in ("RGB", "RGBA"):
        arr = np.asarray(img, dtype=np.uint8)
        if mode == "RGBA":
            _opaque(arr, sample_id, name)
        r, g, b = arr[:, :, 0], arr[:, :, 1], arr[:, :, 2]
        if np.array_equal(r, g) and np.array_equal(r, b):
            return r.copy()
        n = int(np.count_nonzero((r != g) | (r != b)))
        raise CorruptSampleError(
            sample_id,
            f"{name}: mask is a colour ({mode}) image and {n} pixel(s) have unequal channels, so "
            f"their class is ambiguous; masks must be single-channel class-index maps (mode L or "
            f"P, pixel value = class index) or grey RGB",
            "mask-ambiguous",
        )
    raise CorruptSampleError(
        sample_id,
        f"{name}: unsupported mask mode {mode}; masks must be single-channel class-index maps "
        f"(mode L or P, pixel value = class index)",
        "unsupported-mode",
    )


def _check_size(mask: np.ndarray, size: tuple[int, int] | None, sample_id: str, name: str) -> None:
    if size is not None and (mask.shape[1], mask.shape[0]) != tuple(size):
        raise CorruptSampleError(
            sample_id,
            f"{name}: mask size {mask.shape[1]}x{mask.shape[0]} differs from image size "
            f"{size[0]}x{size[1]} (W x H); masks must match their image",
            "mask-size",
        )


def read_mask(
    src: ImageSource,
    sample_id: str,
    *,
    name: str | None = None,
    size: tuple[int, int] | None = None,
) -> np.ndarray:
    """Decode a class-index mask as H x W uint8.

    Accepts modes L, 1, P (palette index = class), 16-bit / 32-bit grey with
    values 0..255, and RGB / LA / RGBA whose channels are equal and whose
    alpha is opaque.  Refused per sample (:class:`CorruptSampleError`):
    unequal channels or transparency (``mask-ambiguous``), a lossy file
    (JPEG whatever its suffix, lossy WebP: ``mask-lossy``), values above 255
    (``mask-values``), other modes (``unsupported-mode``), and, with ``size``
    = the image's (W, H), another size (``mask-size``).
    """
    name = describe_source(src, name)
    img, data = open_image(src, sample_id, name)
    _refuse_lossy(img, data, sample_id, name)
    mask = _mask_array(img, sample_id, name)
    _check_size(mask, size, sample_id, name)
    return np.array(mask, dtype=np.uint8, order="C")  # a writable copy, never PIL's buffer


def _grey(img: Image.Image, sample_id: str, name: str) -> np.ndarray:
    """Mean over the colour channels, 0..255 float (binary masks)."""
    if img.mode in WIDE_MODES:
        return wide_to_uint8(np.asarray(img)).astype(np.float32)
    if has_alpha(img):
        rgba = np.asarray(converted(img, "RGBA", sample_id, name), dtype=np.uint8)
        _opaque(rgba, sample_id, name)
        return rgba[:, :, :3].astype(np.float32).mean(axis=2)
    if img.mode in ("1", "L"):
        return np.asarray(converted(img, "L", sample_id, name), dtype=np.float32)
    return np.asarray(converted(img, "RGB", sample_id, name), dtype=np.float32).mean(axis=2)


def read_binary_mask(
    src: ImageSource,
    sample_id: str,
    *,
    name: str | None = None,
    size: tuple[int, int] | None = None,
    threshold: float = 0.5,
) -> np.ndarray:
    """Decode a ground-truth mask of the classic sets as 0/1 uint8.

    The field's rule (IMDL-BenCo): a pixel is edited when the mean over its
    RGB channels exceeds ``threshold`` x 255 (127.5).  Colours and lossy
    files are read by that rule (the threshold absorbs JPEG noise); grey /
    palette / CMYK / 16-bit masks are converted as :func:`read_image` does;
    transparent pixels are refused (``mask-ambiguous``), as is another size
    than ``size`` (``mask-size``).  Masks stored as 0/1 values read as all
    background; a warning is logged (once) when a mask has non-zero values
    that all fall below the threshold, the usual sign of such an encoding.
    """
    name = describe_source(src, name)
    img, _ = open_image(src, sample_id, name)
    grey = _grey(img, sample_id, name)
    cut = threshold * 255.0
    mask = (grey > cut).astype(np.uint8)
    if not mask.any() and grey.size and grey.max() > 0:
        global _warned_low_mask
        log.log(
            logging.DEBUG if _warned_low_mask else logging.WARNING,
            "sample %s: %s has non-zero values up to %d but none above %g, so it reads "
            "as all background; is it a 0/1-encoded mask? (warned once)",
            sample_id,
            name,
            int(grey.max()),
            cut,
        )
        _warned_low_mask = True
    _check_size(mask, size, sample_id, name)
    return mask
