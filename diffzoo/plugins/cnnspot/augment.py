"""CNNSpot's training augmentation: Gaussian blur and JPEG re-compression.

The "Blur+JPEG (0.5)" recipe of Wang et al. 2020 as the official code does
it (PeterWang512/CNNDetection data/datasets.py ``data_augment``): with
probability ``blur_prob`` blur every channel with scipy's gaussian_filter,
sigma ~ U[lo, hi]; then with probability ``jpeg_prob`` re-encode as JPEG
with cv2 or PIL (chosen uniformly) at a quality drawn uniformly from the
integers lo..hi inclusive.  The quality is passed to the encoder exactly (no
jitter), and every draw comes from the given numpy generator, so a seed
fixes the result.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

import numpy as np

JPEG_METHODS = ("cv2", "pil")


def encode_jpeg(image: np.ndarray, quality: int, method: str) -> bytes:
    """JPEG bytes of an RGB uint8 image at exactly ``quality`` (libjpeg scale 1..100)."""
    quality = int(quality)
    if not 1 <= quality <= 100:
        raise ValueError(f"JPEG quality must be in 1..100, got {quality}")
    if method == "cv2":
        import cv2

        ok, buf = cv2.imencode(".jpg", np.ascontiguousarray(image[:, :, ::-1]), [cv2.IMWRITE_JPEG_QUALITY, quality])
        if not ok:
            raise ValueError("cv2 could not encode the image as JPEG")
        return buf.tobytes()
    if method == "pil":
        from PIL import Image

        out = io.BytesIO()
        Image.fromarray(image).save(out, format="JPEG", quality=quality)
        return out.getvalue()
    raise ValueError(f"JPEG method must be one of {JPEG_METHODS}, got {method!r}")


def jpeg(image: np.ndarray, quality: int, method: str) -> np.ndarray:
    """``image`` after one JPEG round trip at ``quality``."""
    from PIL import Image

    with Image.open(io.BytesIO(encode_jpeg(image, quality, method))) as img:
        return np.asarray(img.convert("RGB")).copy()


def gaussian_blur(image: np.ndarray, sigma: float) -> np.ndarray:
    """Per-channel Gaussian blur (scipy gaussian_filter, as the official code)."""
    from scipy.ndimage import gaussian_filter

    return gaussian_filter(image, sigma=(sigma, sigma, 0))


@dataclass(frozen=True)
class BlurJpeg:
    """The Blur+JPEG augmentation with its probabilities and ranges."""

    blur_prob: float = 0.5
    blur_sigma: tuple[float, float] = (0.0, 3.0)
    jpeg_prob: float = 0.5
    jpeg_quality: tuple[int, int] = (30, 100)  # inclusive
    jpeg_methods: tuple[str, ...] = JPEG_METHODS

    def draw(self, rng: np.random.Generator) -> dict[str, Any]:
        """The random choices for one image: sigma (or None), quality and method (or None)."""
        choice: dict[str, Any] = {"sigma": None, "quality": None, "method": None}
        if rng.random() < self.blur_prob:
            choice["sigma"] = float(rng.uniform(*self.blur_sigma))
        if rng.random() < self.jpeg_prob:
            choice["method"] = self.jpeg_methods[int(rng.integers(len(self.jpeg_methods)))]
            choice["quality"] = int(rng.integers(self.jpeg_quality[0], self.jpeg_quality[1] + 1))
        return choice

    def apply(self, image: np.ndarray, choice: dict[str, Any]) -> np.ndarray:
        if choice["sigma"] is not None and choice["sigma"] > 0:
            image = gaussian_blur(image, choice["sigma"])
        if choice["quality"] is not None:
            image = jpeg(image, choice["quality"], choice["method"])
        return image

    def __call__(self, image: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return self.apply(image, self.draw(rng))
