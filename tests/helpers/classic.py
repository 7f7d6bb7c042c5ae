"""Columbia's uncompressed image splicing set in its download layout (``4cam_auth/``,
``4cam_splc/``, ``4cam_splc/edgemask/``), with the colour-coded edge masks it ships."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from helpers.images import save_image as save

S = 32
RED, BRIGHT_RED, GREEN, BRIGHT_GREEN, BLUE = (200, 0, 0), (255, 0, 0), (0, 200, 0), (0, 255, 0), (0, 0, 200)
SPLICED = ("canong3_canonxt_sub_01", "nikond70_kodakdcs330_sub_02")
AUTHENTIC = ("canong3_02_sub_01", "nikond70_05_sub_02")


def photo(seed: int, size: int = S) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (size, size, 3), dtype=np.uint8)


def save_jpeg(path: Path, arr: np.ndarray) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(arr).save(path, quality=100, subsampling=0)  # 4:4:4: block-aligned colours survive
    return path


def edgemask() -> np.ndarray:
    """Columbia's colour coding, each band 8 px (JPEG-block) wide: host (red) in columns 0..15,
    spliced region (green) in columns 16..31, bright shades next to the boundary, and a blue
    single-edge band over the spliced side's top rows."""
    m = np.zeros((S, S, 3), np.uint8)
    for cols, colour in ((slice(0, 8), RED), (slice(8, 16), BRIGHT_RED), (slice(16, 24), BRIGHT_GREEN),
                         (slice(24, 32), GREEN)):
        m[:, cols] = colour
    m[0:8, 16:32] = BLUE
    return m


def make_columbia(root: Path, nested: bool = False) -> Path:
    """``4cam_auth/``, ``4cam_splc/`` and ``4cam_splc/edgemask/``; ``nested``: each archive unpacked
    into a folder of its own name, the edge masks beside the inner spliced folder."""
    splc = root / "4cam_splc" / "4cam_splc" if nested else root / "4cam_splc"
    auth = root / "4cam_auth" / "4cam_auth" if nested else root / "4cam_auth"
    for i, stem in enumerate(SPLICED):
        save(splc / f"{stem}.tif", photo(i))
        save_jpeg(root / "4cam_splc" / "edgemask" / f"{stem}_edgemask.jpg", edgemask())
    save_jpeg(root / "4cam_splc" / "edgemask" / f"{SPLICED[0]}_edgemask_3.jpg", edgemask())  # a variant: unused
    for i, stem in enumerate(AUTHENTIC):
        save(auth / f"{stem}.tif", photo(10 + i))
    save_jpeg(auth / "edgemask" / f"{AUTHENTIC[0]}_edgemask.jpg", edgemask())  # never an authentic sample
    return root
