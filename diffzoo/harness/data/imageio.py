"""Safe decoding of images and masks into the arrays a :class:`Sample` holds.

Every adapter decodes through these functions so that a corrupt, truncated or
mis-shaped file fails the same way everywhere: a :class:`CorruptSampleError`
naming the sample and the file, which a run can skip and count.  Decoding is
forced to completion (``img.load()``) and truncated files are never padded
(PIL's ``ImageFile.LOAD_TRUNCATED_IMAGES`` is left False), so a half-written
PNG is an error rather than a silently grey image.
"""

from __future__ import annotations

import io
import logging
import os
import zlib
from pathlib import Path

import numpy as np
from PIL import Image, UnidentifiedImageError

from ..errors import CorruptSampleError, DataError

log = logging.getLogger(__name__)

ImageSource = str | os.PathLike | bytes | bytearray | memoryview | Image.Image
"""A path, the encoded file's bytes, or an (opened) PIL image."""

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".webp")
"""File suffixes (lower-case) that the folder adapters take for images and masks."""

_warned_low_mask = False

_DECODE_ERRORS = (OSError, SyntaxError, ValueError, EOFError, zlib.error, IndexError)


def is_image_file(name: str) -> bool:
    return name.lower().endswith(IMAGE_EXTENSIONS)


def _describe(src: ImageSource, name: str | None) -> str:
    if name:
        return name
    if isinstance(src, (str, os.PathLike)):
        return str(src)
    if isinstance(src, Image.Image) and getattr(src, "filename", ""):
        return str(src.filename)
    return "<in-memory image>"


def _open(src: ImageSource, sample_id: str, name: str) -> Image.Image:
    """Open and fully decode ``src``; decoding errors become CorruptSampleError."""
    try:
        if isinstance(src, Image.Image):
            img = src
        elif isinstance(src, (bytes, bytearray, memoryview)):
            img = Image.open(io.BytesIO(bytes(src)))
        else:
            path = Path(src)
            if not path.is_file():
                raise CorruptSampleError(sample_id, f"{name}: file not found")
            # Read the bytes first: no file handle outlives the call (multi-frame
            # formats keep theirs open after load()).
            img = Image.open(io.BytesIO(path.read_bytes()))
        img.load()
    except CorruptSampleError:
        raise
    except UnidentifiedImageError:
        raise CorruptSampleError(
            sample_id, f"{name}: corrupt or truncated image (not a recognised image format)"
        ) from None
    except Image.DecompressionBombError as exc:
        raise CorruptSampleError(sample_id, f"{name}: image too large to decode ({exc})") from None
    except _DECODE_ERRORS as exc:
        raise CorruptSampleError(
            sample_id, f"{name}: corrupt or truncated image ({exc or type(exc).__name__})"
        ) from None
    return img


def _to_uint8(arr: np.ndarray) -> np.ndarray:
    """Scale a 16-bit or float single-channel array to 0..255 uint8."""
    if arr.dtype == np.uint8:
        return arr
    if arr.dtype.kind == "f":
        scale = 255.0 if arr.size and float(np.nanmax(arr)) <= 1.0 else 1.0
        return np.clip(np.nan_to_num(arr) * scale, 0, 255).round().astype(np.uint8)
    # 16-bit (I;16 / I) images: full range 0..65535 maps to 0..255.
    return np.clip(np.round(arr.astype(np.float64) / 257.0), 0, 255).astype(np.uint8)


def read_image(src: ImageSource, sample_id: str, *, name: str | None = None) -> np.ndarray:
    """Decode an image as H x W x 3 uint8 RGB.

    Grey, palette, RGBA (alpha dropped), CMYK and 16-bit images are converted;
    ``name`` is how the file is called in error messages (default: the path).
    """
    name = _describe(src, name)
    img = _open(src, sample_id, name)
    if img.mode in ("I", "I;16", "I;16B", "I;16L", "I;16N", "F"):
        grey = _to_uint8(np.asarray(img))
        return np.ascontiguousarray(np.repeat(grey[:, :, None], 3, axis=2))
    if img.mode == "P" and "transparency" in img.info:
        img = img.convert("RGBA")
    if img.mode != "RGB":
        img = img.convert("RGB")
    return np.asarray(img, dtype=np.uint8).copy()


def _mask_array(img: Image.Image, sample_id: str, name: str) -> np.ndarray:
    """Raw class-index array of a mask image (no conversion of index values)."""
    mode = img.mode
    if mode in ("L", "P"):  # P: the palette index is the class
        return np.asarray(img, dtype=np.uint8)
    if mode == "1":
        return np.asarray(img, dtype=np.uint8)
    if mode == "LA":
        return np.asarray(img, dtype=np.uint8)[:, :, 0]
    if mode in ("I", "I;16", "I;16B", "I;16L", "I;16N"):
        arr = np.asarray(img)
        if arr.size and int(arr.max()) > 255:
            raise CorruptSampleError(
                sample_id,
                f"{name}: 16-bit mask has values up to {int(arr.max())}; class-index masks "
                f"hold values 0..254 (255 = ignore)",
            )
        return arr.astype(np.uint8)
    if mode in ("RGB", "RGBA"):
        arr = np.asarray(img, dtype=np.uint8)
        r, g, b = arr[:, :, 0], arr[:, :, 1], arr[:, :, 2]
        if np.array_equal(r, g) and np.array_equal(r, b):
            return r.copy()
        raise DataError(
            f"sample {sample_id}: {name}: mask is a colour ({mode}) image whose channels "
            f"differ; masks must be single-channel class-index maps (mode L or P, pixel "
            f"value = class index)"
        )
    raise DataError(
        f"sample {sample_id}: {name}: unsupported mask mode {mode}; masks must be "
        f"single-channel class-index maps (mode L or P)"
    )


def _check_size(mask: np.ndarray, size: tuple[int, int] | None, sample_id: str, name: str) -> None:
    if size is not None and (mask.shape[1], mask.shape[0]) != tuple(size):
        raise CorruptSampleError(
            sample_id,
            f"{name}: mask size {mask.shape[1]}x{mask.shape[0]} differs from image size "
            f"{size[0]}x{size[1]} (W x H); masks must match their image",
        )


def read_mask(
    src: ImageSource,
    sample_id: str,
    *,
    name: str | None = None,
    size: tuple[int, int] | None = None,
) -> np.ndarray:
    """Decode a class-index mask as H x W uint8.

    Accepts mode L and P (palette index = class) and an RGB mask whose three
    channels are equal; any other colour mask raises :class:`DataError`.
    ``size`` = the image's (W, H): a mask of another size raises
    :class:`CorruptSampleError` naming both sizes and the file.
    """
    name = _describe(src, name)
    mask = _mask_array(_open(src, sample_id, name), sample_id, name)
    _check_size(mask, size, sample_id, name)
    return np.array(mask, dtype=np.uint8, order="C")  # a writable copy, never PIL's buffer


def read_binary_mask(
    src: ImageSource,
    sample_id: str,
    *,
    name: str | None = None,
    size: tuple[int, int] | None = None,
) -> np.ndarray:
    """Decode a ground-truth mask of the classic sets as 0/1 uint8.

    The field's rule (IMDL-BenCo): mean over the RGB channels > 127.5 is
    edited.  Masks stored as 0/1 values therefore read as all background; a
    warning is logged when a mask has non-zero values that all fall below the
    threshold, since that is the usual sign of such an encoding.
    """
    name = _describe(src, name)
    img = _open(src, sample_id, name)
    if img.mode in ("I", "I;16", "I;16B", "I;16L", "I;16N", "F"):
        grey = _to_uint8(np.asarray(img)).astype(np.float32)
    else:
        if img.mode == "1":
            img = img.convert("L")
        if img.mode not in ("L", "RGB"):
            img = img.convert("RGB")
        arr = np.asarray(img, dtype=np.float32)
        grey = arr.mean(axis=2) if arr.ndim == 3 else arr
    mask = (grey > 127.5).astype(np.uint8)
    if not mask.any() and grey.size and grey.max() > 0:
        global _warned_low_mask
        log.log(
            logging.DEBUG if _warned_low_mask else logging.WARNING,
            "sample %s: %s has non-zero values up to %d but none above 127.5, so it reads "
            "as all background; is it a 0/1-encoded mask? (warned once)",
            sample_id,
            name,
            int(grey.max()),
        )
        _warned_low_mask = True
    _check_size(mask, size, sample_id, name)
    return mask
