"""Image arrays, encoded image bytes and image files, made by the tests."""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path

import numpy as np
from PIL import Image


def save_image(path: Path, arr: np.ndarray) -> Path:
    """Write ``arr`` as an image file at ``path`` (folders made; format from the suffix)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(arr).save(path)
    return path


def png_bytes(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="PNG")
    return buf.getvalue()


def encode(img: Image.Image, fmt: str = "PNG", **kw) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format=fmt, **kw)
    return buf.getvalue()


def raw_png(width: int, height: int, depth: int, colour_type: int, rows: list[bytes]) -> bytes:
    """A PNG written by hand (PIL cannot write 16-bit RGB); ``rows`` unfiltered."""

    def chunk(tag: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(tag + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, depth, colour_type, 0, 0, 0)
    idat = zlib.compress(b"".join(b"\x00" + r for r in rows))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def huge_png() -> bytes:
    """A valid 12000 x 12000 1-bit PNG (17 kB; 144 M pixels if decoded)."""
    return raw_png(12000, 12000, 1, 0, [bytes(1500)] * 12000)


def mixed_image(i: int, kind: str, rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray | None]:
    """Image ``i`` of a dataset mixing real and fake images (OpenSDI, SID-Set), and its 0/255
    mask: smooth for ``real`` (no mask), a noise square for a ``local`` edit (its mask), noise
    everywhere for a ``full`` (fully generated) image (no mask)."""
    yy, xx = np.mgrid[0:size, 0:size]
    image = np.stack([(xx * 3 + i * 7) % 256, (yy * 3 + i * 11) % 256, np.full_like(xx, 90)], -1).astype(np.uint8)
    if kind == "full":
        return rng.integers(0, 256, (size, size, 3), dtype=np.uint8), None
    if kind == "real":
        return image, None
    s = size // 3
    y0, x0 = (int(v) for v in rng.integers(0, size - s, 2))
    image[y0:y0 + s, x0:x0 + s] = rng.integers(0, 256, (s, s, 3), dtype=np.uint8)
    mask = np.zeros((size, size), np.uint8)
    mask[y0:y0 + s, x0:x0 + s] = 255
    return image, mask
