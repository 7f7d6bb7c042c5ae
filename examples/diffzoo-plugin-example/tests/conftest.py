"""A toy in-memory dataset made here: smooth images with noisy edited squares."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from diffzoo import Dataset, LabelSpace, Sample, SampleMeta


class ToyDataset(Dataset):
    """``n`` 32 x 32 images; every other one has a square re-drawn by 'editor' 1 or 2.

    Edited squares are uniform noise on a smooth gradient, which a high-pass
    residual separates at once: a few training steps must lower the loss.
    """

    name = "toy"

    def __init__(self, n: int = 8, size: int = 32, seed: int = 0):
        self.label_space = LabelSpace.from_editors(["sd2", "sdxl"])
        rng = np.random.default_rng(seed)
        yy, xx = np.mgrid[0:size, 0:size]
        self._samples = {}
        for i in range(n):
            image = np.stack([(xx * 4 + i * 9) % 256, (yy * 4 + i * 5) % 256, np.full_like(xx, 120)], -1)
            image = image.astype(np.uint8)
            label = np.zeros((size, size), np.uint8)
            if i % 2:
                s = size // 2
                y0, x0 = rng.integers(0, size - s, 2)
                image[y0 : y0 + s, x0 : x0 + s] = rng.integers(0, 256, (s, s, 3), dtype=np.uint8)
                label[y0 : y0 + s, x0 : x0 + s] = 1 + (i // 2) % 2
            self._samples[f"{i:03d}"] = Sample(image, label, SampleMeta(f"{i:03d}"))

    def splits(self) -> list[str]:
        return ["train"]

    def ids(self, split: str) -> list[str]:
        return sorted(self._samples)

    def load(self, sample_id: str) -> Sample:
        return self._samples[sample_id]

    def fingerprint(self) -> str:
        h = hashlib.sha256()
        for sid in self.ids("train"):
            h.update(self._samples[sid].image.tobytes() + self._samples[sid].label.tobytes())
        return h.hexdigest()[:16]


@pytest.fixture
def toy() -> ToyDataset:
    return ToyDataset()
