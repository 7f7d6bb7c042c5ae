"""Safe decoding of images and masks into the arrays a :class:`Sample` holds.

Every adapter decodes through these functions so that a corrupt, truncated,
oversized or ambiguous file fails the same way everywhere: a
:class:`CorruptSampleError` naming the sample and the file, with a ``kind``
(``corrupt``, ``missing-file``, ``not-a-file``, ``unreadable``, ``too-large``,
``multi-frame``, ``unsupported-mode``, ``mask-ambiguous``, ``mask-lossy``, ``mask-size``,
``mask-values``, ``mask-empty``), which a run skips and counts (``--strict`` stops).
The conversion rules are in docs/datasets.md ("Odd images"); opening follows these:

- the image's size is read from its header and checked against
  :func:`max_pixels` (``DIFFZOO_MAX_PIXELS``, default 8192 x 8192) *before*
  anything is decoded; a larger image is kind ``too-large``;
- decoding is forced to completion (``img.load()``) and truncated files are
  never padded (PIL's ``ImageFile.LOAD_TRUNCATED_IMAGES`` stays False);
- no exception other than :class:`DiffzooError` leaves :func:`open_image`,
  and PIL's ``DecompressionBombWarning`` is not re-emitted (diffzoo's own
  limit decides; PIL's ``DecompressionBombError`` becomes ``too-large``).
"""

from __future__ import annotations

import io
import logging
import os
import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np
from PIL import Image, UnidentifiedImageError

from diffzoo.harness.core.errors import CorruptSampleError, DiffzooError, EnvVarError
from diffzoo.harness.core.fsutil import MISSING, file_kind
from diffzoo.harness.core.runlog import warn_once

log = logging.getLogger(__name__)
T = TypeVar("T")

ImageSource = str | os.PathLike | bytes | bytearray | memoryview | Image.Image
"""A path, the encoded file's bytes, or an (opened) PIL image."""

MAX_PIXELS_ENV = "DIFFZOO_MAX_PIXELS"
DEFAULT_MAX_PIXELS = 8192 * 8192
"""67,108,864 pixels: 8192 x 8192 (about 200 MB as 8-bit RGB)."""

WIDE_MODES = ("I", "I;16", "I;16B", "I;16L", "I;16N", "F")
"""Single-channel modes with more than 8 bits (16-bit, 32-bit integer, float)."""

ALPHA_MODES = ("RGBA", "LA", "PA", "RGBa", "La")

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".webp")
"""File suffixes (lower-case) that the folder adapters take for images and masks."""

LOSSY_FORMATS = ("JPEG", "MPO")
"""Formats whose compression moves pixel values: refused for class-index masks."""

_SUFFIX_FORMATS = {".png": "PNG", ".tif": "TIFF", ".tiff": "TIFF", ".bmp": "BMP",
                   ".webp": "WEBP", ".jpg": "JPEG", ".jpeg": "JPEG"}

__all__ = ["IMAGE_EXTENSIONS", "ImageSource", "is_image_file", "read_binary_mask", "read_image",
           "read_mask"]


def max_pixels() -> int:
    """The largest width x height diffzoo decodes (``$DIFFZOO_MAX_PIXELS``)."""
    raw = os.environ.get(MAX_PIXELS_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_PIXELS
    try:
        value = int(raw.replace("_", ""))
    except ValueError:
        value = 0
    if value <= 0:
        raise EnvVarError(
            f"{MAX_PIXELS_ENV}={raw!r} is not a positive whole number of pixels; unset it for "
            f"the default {DEFAULT_MAX_PIXELS:,} (8192 x 8192) or give e.g. {MAX_PIXELS_ENV}=200000000"
        )
    return value


def describe_source(src: ImageSource, name: str | None) -> str:
    """How ``src`` is called in messages: ``name``, else its path."""
    if name:
        return name
    if isinstance(src, (str, os.PathLike)):
        return str(src)
    filename = getattr(src, "filename", None) if isinstance(src, Image.Image) else None
    return str(filename) if filename else "<in-memory image>"


def _check_pixels(img: Image.Image, sample_id: str, name: str) -> None:
    w, h = img.size
    if w <= 0 or h <= 0:
        raise CorruptSampleError(sample_id, f"{name}: image has no pixels ({w}x{h})", "corrupt")
    limit = max_pixels()
    if w * h > limit:
        raise CorruptSampleError(
            sample_id,
            f"{name}: image is {w}x{h} = {w * h:,} pixels, above the limit of {limit:,} pixels; "
            f"set {MAX_PIXELS_ENV}={w * h} (or more) to decode it",
            "too-large",
        )


ORIENTATION_TAG = 0x0112
"""EXIF Orientation: 1 is the stored view; 2..8 ask a viewer to mirror and/or rotate it."""


def image_trait(src: Path | bytes, trait: Callable[[Image.Image], T]) -> T | None:
    """``trait`` of the image in ``src`` (a file, or a file's first bytes) opened lazily: no pixel is
    decoded unless ``trait`` reads them; None for what is not a regular file, cannot be read or is no
    image (reading the image says why)."""
    try:
        if isinstance(src, bytes) or src.is_file():  # a FIFO is never opened: it would block
            with warnings.catch_warnings(), Image.open(io.BytesIO(src) if isinstance(src, bytes) else src) as img:
                warnings.simplefilter("ignore")
                return trait(img)
    except Exception:  # not an image, a header cut short: a bad file may make Pillow raise anything
        pass
    return None


def exif_orientation(img: Image.Image) -> int | None:
    """The EXIF orientation of an opened image (:func:`image_trait`), read from its header, or
    None: no tag or 1 (normal).  diffzoo scores the stored pixels whatever it says
    (docs/datasets.md, "EXIF orientation")."""
    raw = img.info.get("exif")
    if raw is not None:  # JPEG, PNG, WebP: the block read with the header
        exif = Image.Exif()
        exif.load(raw)
    elif img.format == "TIFF":  # the first IFD's tags, read when opened
        exif = img.getexif()
    else:  # PNG's getexif() would decode the pixels to look for a late eXIf chunk
        return None
    value = exif.get(ORIENTATION_TAG)
    return value if isinstance(value, int) and value != 1 else None


def transparent(img: Image.Image) -> bool:
    """Whether ``img`` holds alpha or a transparent colour (a ``tRNS`` colour or palette entry):
    :func:`read_image` composites such an image on white."""
    return img.mode in ALPHA_MODES or img.info.get("transparency") is not None


def see_through(img: Image.Image) -> bool:
    """Whether a pixel of ``img`` has alpha under 255, which :func:`read_image`'s compositing on white
    changes; an image :func:`transparent` by its header alone is decoded to tell."""
    return transparent(img) and int(np.asarray(converted(img, "RGBA", "", ""))[:, :, 3].min()) < 255


def _link_note(path: Path) -> str:
    """`` (a symbolic link to TARGET)`` for a link, else nothing."""
    try:
        return f" (a symbolic link to {os.readlink(path)})" if os.path.islink(path) else ""
    except OSError:
        return ""


def open_image(src: ImageSource, sample_id: str, name: str | None) -> tuple[Image.Image, bytes | None, str]:
    """Open ``src``, check its size, decode it fully.

    Returns the image, the encoded bytes (None for a PIL image given as
    such) and how the file is called in messages (:func:`describe_source`).
    Every failure is a :class:`CorruptSampleError` naming it:
    kind ``missing-file``, ``not-a-file`` (a FIFO, a folder, a link that leads nowhere),
    ``unreadable`` (permission denied, an I/O error), ``too-large``, ``multi-frame`` (a
    multi-page TIFF, an animated GIF, APNG or WebP) or ``corrupt``.
    """
    name = describe_source(src, name)
    data: bytes | None = None
    try:
        with warnings.catch_warnings():
            # diffzoo's limit is checked below; PIL's warning would only be noise
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            if isinstance(src, Image.Image):
                img = src
            else:
                if isinstance(src, (bytes, bytearray, memoryview)):
                    data = bytes(src)
                else:
                    path = Path(src)
                    kind = file_kind(path)  # never open a FIFO or device: the read would not end
                    if kind == MISSING[0]:
                        raise CorruptSampleError(sample_id, f"{name}: file not found ({kind})", "missing-file")
                    if kind is not None:  # a link that leads nowhere is listed, never followed (data/walk.py)
                        raise CorruptSampleError(sample_id, f"{name} is {kind}, not an image file{_link_note(path)}",
                                                 "not-a-file")
                    try:  # bytes first: no file handle outlives the call
                        data = path.read_bytes()
                    except OSError as exc:  # a file there that may not be read is not a corrupt one
                        raise CorruptSampleError(sample_id, f"{name}: not readable ({exc.strerror or exc})",
                                                 "unreadable") from None
                if not data:  # Pillow's "not a recognised image format" would hide the cause
                    raise CorruptSampleError(sample_id, f"{name}: the file is empty (0 bytes), not an image")
                limit = max_pixels()
                # Pillow refuses above twice its own limit: one below DIFFZOO_MAX_PIXELS is raised to it (never lowered)
                if Image.MAX_IMAGE_PIXELS is not None and 2 * Image.MAX_IMAGE_PIXELS < limit:
                    Image.MAX_IMAGE_PIXELS = limit
                img = Image.open(io.BytesIO(data))
            _check_pixels(img, sample_id, name)
            img.load()
            # a sample is one frame: PIL would read the first alone.  A camera's MPO JPEG is one photo: its
            # first frame is the primary image, the others previews or a stereo view
            if (frames := getattr(img, "n_frames", 1)) > 1 and img.format != "MPO":
                raise CorruptSampleError(sample_id, f"{name}: holds {frames} frames (a multi-page or animated image); "
                                         "give a one-frame image", "multi-frame")
    except DiffzooError:
        raise
    except UnidentifiedImageError:
        raise CorruptSampleError(
            sample_id, f"{name}: corrupt or truncated image (not a recognised image format)"
        ) from None
    except Image.DecompressionBombError as exc:
        raise CorruptSampleError(
            sample_id,
            f"{name}: image too large to decode ({exc}); set {MAX_PIXELS_ENV} to its size in pixels (or more) "
            "to decode it",
            "too-large",
        ) from None
    except MemoryError:
        raise CorruptSampleError(
            sample_id, f"{name}: out of memory decoding the image", "too-large"
        ) from None
    except Exception as exc:  # a bad file may make any decoder raise anything
        raise CorruptSampleError(
            sample_id, f"{name}: corrupt or truncated image ({exc or type(exc).__name__})"
        ) from None
    return img, data, name


def wide_to_uint8(arr: np.ndarray) -> np.ndarray:
    """A 16-bit, 32-bit integer or float single-channel array as 0..255 uint8.

    Integers: the high byte, value // 256 (0..65535 -> 0..255, as Pillow
    reduces 16-bit colour), clipped to 0..255.  Floats: NaN -> 0; values in
    [0, 1] are scaled by 255 and rounded, otherwise taken as 0..255; clipped.
    """
    if arr.dtype == np.uint8:
        return arr
    if arr.dtype.kind == "f":
        a = np.nan_to_num(arr.astype(np.float64), nan=0.0, posinf=255.0, neginf=0.0)
        scale = 255.0 if a.size and float(a.max()) <= 1.0 else 1.0
        return np.clip(np.round(a * scale), 0, 255).astype(np.uint8)
    return np.clip(arr.astype(np.int64) // 256, 0, 255).astype(np.uint8)


def converted(img: Image.Image, mode: str, sample_id: str, name: str) -> Image.Image:
    """``img.convert(mode)``; a mode PIL cannot convert is kind ``unsupported-mode``."""
    if img.mode == mode:
        return img
    try:
        return img.convert(mode)
    except Exception as exc:  # PIL raises ValueError, OSError, KeyError... per mode
        raise CorruptSampleError(
            sample_id, f"{name}: cannot convert image mode {img.mode} to {mode} ({exc})",
            "unsupported-mode",
        ) from None


def is_image_file(name: str) -> bool:
    return name.lower().endswith(IMAGE_EXTENSIONS)


def read_image(src: ImageSource, sample_id: str, *, name: str | None = None) -> np.ndarray:
    """Decode an image as H x W x 3 uint8 RGB.

    Conversions: grey / 1-bit -> RGB (equal channels); 16-bit, 32-bit and
    float grey -> 8-bit by :func:`wide_to_uint8` (16-bit: the high
    byte, as Pillow does for 16-bit colour);
    palette -> its colours; CMYK, YCbCr, LAB -> RGB by PIL (no colour
    profile); anything with alpha or a transparent colour (RGBA, LA, PA,
    palette or grey with ``tRNS``) is composited on white.  ``name`` is how the
    file is called in error messages (default: the path).
    """
    img, _, name = open_image(src, sample_id, name)
    return _rgb(img, sample_id, name)


def _rgb(img: Image.Image, sample_id: str, name: str, *, opaque: bool = False) -> np.ndarray:
    """:func:`read_image`'s conversion of an opened image; ``opaque``: a transparent pixel is refused
    (``mask-ambiguous``) instead of composited."""
    if img.mode in WIDE_MODES:
        grey = wide_to_uint8(np.asarray(img))
        return np.ascontiguousarray(np.repeat(grey[:, :, None], 3, axis=2))
    if transparent(img):
        rgba = np.asarray(converted(img, "RGBA", sample_id, name), dtype=np.uint8)
        if opaque:
            _opaque(rgba, sample_id, name)
        a, rgb = rgba[:, :, 3:4].astype(np.uint32), rgba[:, :, :3].astype(np.uint32)
        return ((rgb * a + 255 * (255 - a) + 127) // 255).astype(np.uint8)  # over white, rounded
    return np.array(converted(img, "RGB", sample_id, name), dtype=np.uint8)


def _refuse_lossy(img: Image.Image, data: bytes | None, sample_id: str, name: str) -> None:
    lossy_webp = img.format == "WEBP" and data is not None and b"VP8 " in data[12:64]  # lossy chunk (lossless: "VP8L")
    if img.format in LOSSY_FORMATS or lossy_webp:
        m = re.search(r"(\.[A-Za-z0-9]+)\)?$", name)  # a suffix naming another format is said
        named = (f" although it is named {m[1]}"
                 if m and _SUFFIX_FORMATS.get(m[1].lower()) not in (None, img.format) else "")
        raise CorruptSampleError(
            sample_id,
            f"{name}: mask is {img.format}-encoded (lossy){named}; lossy "
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


def check_mask_size(mask: np.ndarray, size: tuple[int, int] | None, sample_id: str, name: str) -> None:
    """Refuse (``mask-size``) a mask whose (W, H) is not ``size``, the image's, when given."""
    if size is not None and (mask.shape[1], mask.shape[0]) != tuple(size):
        turned = mask.shape[:2] == tuple(size)  # W and H swapped: drawn on a view turned by a quarter
        raise CorruptSampleError(
            sample_id,
            f"{name}: mask size {mask.shape[1]}x{mask.shape[0]} differs from image size "
            f"{size[0]}x{size[1]} (W x H)" + ("; it is the image's size turned a quarter: a mask drawn on the view "
                                              "an EXIF orientation tag shows? diffzoo reads the stored pixels "
                                              "(docs/datasets.md, EXIF orientation)" if turned else "")
            + "; masks must match their image",
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
    img, data, name = open_image(src, sample_id, name)
    _refuse_lossy(img, data, sample_id, name)
    mask = _mask_array(img, sample_id, name)
    check_mask_size(mask, size, sample_id, name)
    return np.array(mask, dtype=np.uint8, order="C")  # a writable copy, never PIL's buffer


def read_object_mask(src: ImageSource, sample_id: str, *, name: str | None = None) -> np.ndarray:
    """Decode a region mask (``generate --regions masks:DIR``) as H x W bool: every non-zero pixel
    is the object, whatever its bit depth (a 16-bit 0/65535 mask too: no class index is read from
    it).  Lossy files, float and colour masks and transparency are refused as :func:`read_mask`
    refuses them."""
    img, data, name = open_image(src, sample_id, name)
    _refuse_lossy(img, data, sample_id, name)
    if img.mode in WIDE_MODES and img.mode != "F":
        return np.asarray(img) != 0
    return _mask_array(img, sample_id, name) != 0


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
    img, _, name = open_image(src, sample_id, name)
    grey = _rgb(img, sample_id, name, opaque=True).astype(np.float32).mean(axis=2)  # 0..255, as read_image reads it
    cut = threshold * 255.0
    mask = (grey > cut).astype(np.uint8)
    # the stored values, not the 8-bit ones: a 16-bit mask of 0/1 or 0/255 is all 0 once its high byte is kept
    wide = img.mode in WIDE_MODES and np.issubdtype(np.asarray(img).dtype, np.integer)
    top = int(np.asarray(img).max()) if wide and grey.size else int(grey.max()) if grey.size else 0
    if not mask.any() and top > 0:
        warn_once(
            log,
            "low-mask-values",
            "sample %s: %s has non-zero values up to %d but none above %g, so it reads "
            "as all background; is it %s? (warned once)",
            sample_id,
            name,
            top,
            65535 * threshold if wide else cut,
            f"an 8-bit or 0/1 mask saved as {img.mode} (read by its high byte, v // 256)" if wide
            else "a 0/1-encoded mask",
        )
    check_mask_size(mask, size, sample_id, name)
    return mask


def edited_region(edited: np.ndarray, sample_id: str, name: str, hint: str = "") -> np.ndarray:
    """``edited``, the label read from the mask ``name`` of an image the data lists as edited;
    one with no edited pixel is skipped (``mask-empty``; ``hint``: why, in that layout): read as
    it is, the edited image would be labelled authentic."""
    if not edited.any():
        raise CorruptSampleError(sample_id, f"{name}: the mask marks no pixel as edited, but the data lists the "
                                 "image as edited; read as it is, it would be labelled authentic"
                                 + (f" ({hint})" if hint else ""), "mask-empty")
    return edited


def read_labelled(
    src: ImageSource,
    mask: ImageSource | None,
    sample_id: str,
    value: int = 1,
    *,
    full: bool = False,
    name: str | None = None,
    mask_name: str | None = None,
    threshold: float = 0.5,
) -> tuple[np.ndarray, np.ndarray]:
    """An image (:func:`read_image`) and its H x W uint8 label: class ``value`` where the
    binary ``mask`` (:func:`read_binary_mask`, at the image's size, :func:`edited_region`) is
    edited; without a mask, every pixel ``value`` when ``full`` (a fully generated image), else none."""
    image = read_image(src, sample_id, name=name)
    h, w = image.shape[:2]
    if mask is None:
        return image, np.full((h, w), value if full else 0, np.uint8)
    edited = read_binary_mask(mask, sample_id, name=mask_name, size=(w, h), threshold=threshold)
    return image, edited_region(edited, sample_id, describe_source(mask, mask_name)) * np.uint8(value)
