"""Shared benchmark helpers: synthetic data in memory, timed training and evaluation.

Throughput is measured through the same code paths a run uses (the detector's
``fit`` with the shared trainer, and ``harness.evaluate``), timed from the
trainer's per-step callback, so the numbers include data loading and the
optimizer step.  The first ``warmup`` steps/images are not timed.
"""

from __future__ import annotations

import json
import time
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from diffzoo import Dataset, Detector, LabelSpace, Sample, SampleMeta


@dataclass
class Timing:
    images_per_s: float
    timed_images: int
    seconds: float


def rate(stamps: list[float], per_step: int, warmup: int) -> Timing:
    """Images/s from the end times of consecutive steps, the first ``warmup`` steps excluded."""
    warmup = min(max(warmup, 1), len(stamps) - 1)
    if warmup < 1:
        raise ValueError("need at least 2 timed steps")
    seconds = stamps[-1] - stamps[warmup - 1]
    images = (len(stamps) - warmup) * per_step
    return Timing(images / seconds if seconds > 0 else float("nan"), images, seconds)


def timed_train(det: Detector, dataset: Dataset, config, warmup: int) -> tuple[Timing, dict]:
    """Train with ``det.fit``; images/s over the steps after ``warmup``."""
    from diffzoo.harness.models.segmenter import TrainData

    stamps: list[float] = []
    log = det.fit(TrainData(dataset, dataset.ids("train")), config,
                  progress=lambda step, loss: stamps.append(time.perf_counter()))
    return rate(stamps, config.batch_size, warmup), log


class _Stamps:
    """A harness Progress that records when each item finishes."""

    def __init__(self):
        self.stamps: list[float] = []

    @contextmanager
    def task(self, description, total):
        outer = self

        class _Task:
            def advance(self, n=1, **info):
                outer.stamps.append(time.perf_counter())

        yield _Task()


def timed_eval(det: Detector, dataset: Dataset, split: str, warmup: int):
    """Evaluate ``split`` with ``harness.evaluate`` (batch 1, metrics included); images/s."""
    from diffzoo.harness.run.evaluate import evaluate
    from diffzoo.harness.core.plugins import get_registry

    identity = get_registry().get("distortion", "none").load()
    stamps = _Stamps()
    tasks = {"binary", "semantic"} if det.task == "semantic" else {"binary"}
    result = evaluate(det, dataset, split, identity, {}, tasks=tasks, progress=stamps)
    return rate(stamps.stamps, 1, warmup), result


class SyntheticEdits(Dataset):
    def __init__(self, label_space: LabelSpace, size: int, n: dict[str, int], pool: int = 32, seed: int = 0):
        self.name = f"synthetic-{size}px"
        self.label_space, self.size, self.n, self.pool, self.seed = label_space, size, dict(n), pool, seed
        self._cache: dict[tuple[str, int], Sample] = {}

    def splits(self) -> list[str]:
        return list(self.n)

    def ids(self, split: str) -> list[str]:
        return [f"{split}-{i:06d}" for i in range(self.n[split])]

    def fingerprint(self) -> str:
        return f"synthetic-{self.size}-{self.n}-{self.pool}-{self.seed}"

    def load(self, sample_id: str) -> Sample:
        split, index = sample_id.rsplit("-", 1)
        key = (split, int(index) % self.pool)
        if key not in self._cache:
            self._cache[key] = self._make(*key)
        image, label, meta = self._cache[key].image, self._cache[key].label, self._cache[key].meta
        return Sample(image, label, SampleMeta(sample_id, meta.base, meta.turns, meta.source))

    def _make(self, split: str, k: int) -> Sample:
        rng = np.random.default_rng([self.seed, k, len(split)])
        s = self.size
        yy, xx = np.mgrid[0:s, 0:s]
        image = np.stack([(xx * 3 + k * 7) % 256, (yy * 3 + k * 11) % 256, np.full_like(xx, 90)], -1).astype(np.uint8)
        label = np.zeros((s, s), np.uint8)
        if k % 3 and self.label_space.num_classes > 1:
            cls = 1 + k % (self.label_space.num_classes - 1)
            side = max(2, s // 3)
            y0, x0 = (int(v) for v in rng.integers(0, s - side, 2))
            image[y0 : y0 + side, x0 : x0 + side] = rng.integers(0, 256, (side, side, 3), dtype=np.uint8)
            label[y0 : y0 + side, x0 : x0 + side] = cls
        return Sample(image, label, SampleMeta(f"{split}-{k}", "real", (), "synthetic"))


def report(results: dict, json_path: str | None = None) -> None:
    """The one machine-readable line every benchmark ends with (``RESULT {json}``),
    and the same JSON in ``json_path`` when given."""
    print("RESULT " + json.dumps(results))
    if json_path:
        with open(json_path, "w") as fh:
            json.dump(results, fh, indent=2)
