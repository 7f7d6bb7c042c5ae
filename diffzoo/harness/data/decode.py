"""Opening image files safely: one place that turns every bad file into a
:class:`CorruptSampleError` with a ``kind``, and that enforces the pixel limit.

Rules (docs/datasets.md, "Odd images"):

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
import os
import warnings
from pathlib import Path

import numpy as np
from PIL import Image, UnidentifiedImageError

from diffzoo.harness.core.errors import ConfigError, CorruptSampleError, DiffzooError
from diffzoo.harness.core.fsutil import MISSING, file_kind

ImageSource = str | os.PathLike | bytes | bytearray | memoryview | Image.Image
"""A path, the encoded file's bytes, or an (opened) PIL image."""

MAX_PIXELS_ENV = "DIFFZOO_MAX_PIXELS"
DEFAULT_MAX_PIXELS = 8192 * 8192
"""67,108,864 pixels: 8192 x 8192 (about 200 MB as 8-bit RGB)."""

WIDE_MODES = ("I", "I;16", "I;16B", "I;16L", "I;16N", "F")
"""Single-channel modes with more than 8 bits (16-bit, 32-bit integer, float)."""

ALPHA_MODES = ("RGBA", "LA", "PA", "RGBa", "La")


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
        raise ConfigError(
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
    if isinstance(src, Image.Image) and getattr(src, "filename", ""):
        return str(src.filename)
    return "<in-memory image>"


def _check_size(img: Image.Image, sample_id: str, name: str) -> None:
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


def open_image(src: ImageSource, sample_id: str, name: str) -> tuple[Image.Image, bytes | None]:
    """Open ``src``, check its size, decode it fully.

    Returns the image and the encoded bytes (None for a PIL image given as
    such).  Every failure is a :class:`CorruptSampleError` naming ``name``:
    kind ``missing-file``, ``too-large`` or ``corrupt``.
    """
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
                    if kind in MISSING:
                        raise CorruptSampleError(sample_id, f"{name}: file not found ({kind})", "missing-file")
                    if kind is not None:
                        raise CorruptSampleError(sample_id, f"{name} is {kind}, not an image file", "not-a-file")
                    # bytes first: no file handle outlives the call
                    data = path.read_bytes()
                img = Image.open(io.BytesIO(data))
            _check_size(img, sample_id, name)
            img.load()
    except DiffzooError:
        raise
    except UnidentifiedImageError:
        raise CorruptSampleError(
            sample_id, f"{name}: corrupt or truncated image (not a recognised image format)"
        ) from None
    except Image.DecompressionBombError as exc:
        raise CorruptSampleError(
            sample_id,
            f"{name}: image too large to decode ({exc}); Pillow refuses images above "
            f"2 x PIL.Image.MAX_IMAGE_PIXELS whatever {MAX_PIXELS_ENV} says",
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
    return img, data


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


def has_alpha(img: Image.Image) -> bool:
    """An alpha channel, or a transparent colour / palette entry (``tRNS``)."""
    return img.mode in ALPHA_MODES or img.info.get("transparency") is not None


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
