"""Shared benchmark helpers: synthetic data (in memory, or PNG files in the
DiffSeg30k layout), timed training and evaluation, interleaved rounds, and the
result format every benchmark writes.

Throughput is measured through the same code paths a run uses (the detector's
``fit`` with the shared trainer, and ``harness.evaluate``), timed from the
trainer's per-step callback, so the numbers include data loading and the
optimizer step.  The first ``warmup`` steps/images are not timed.

Every benchmark ends with :func:`report`: one ``RESULT {json}`` line and the
same JSON in ``--json FILE``, holding ``figures`` (rows of the table
``python -m benchmarks`` prints: :func:`figure`) and the machine
(:func:`machine`).
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from diffzoo import Dataset, Detector, LabelSpace, Sample, SampleMeta


def test_helper(name: str) -> Any:
    """The module ``tests/helpers/<name>.py``: test-only code the benchmarks reuse (the bF1
    oracle, random weight files), which the installed package does not ship."""
    tests = str(Path(__file__).resolve().parents[1] / "tests")
    if tests not in sys.path:
        sys.path.append(tests)
    return importlib.import_module(f"helpers.{name}")


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
    from diffzoo.harness.core.plugins import get_registry
    from diffzoo.harness.run.evaluate import evaluate

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


def write_png_dataset(folder: Path, label_space: LabelSpace, size: int, n: dict[str, int], seed: int = 0,
                      noise: float = 0.5):
    """``n[split]`` synthetic edits as PNG files in the DiffSeg30k layout
    (``<id>.image.png`` + ``<id>.mask.png``, class-index masks, ``splits.json``)
    in ``folder``, opened with the real adapter (``DiffSeg30kDataset``), so that
    every ``load`` decodes two PNGs as a run does.  ``noise``: the fraction of
    pixels drawn at random (photographs compress about as badly; 0 gives tiny,
    fast files)."""
    from PIL import Image

    from diffzoo.harness.data.adapters.diffseg30k import DiffSeg30kDataset

    folder.mkdir(parents=True, exist_ok=True)
    source = SyntheticEdits(label_space, size, n, pool=max(n.values()), seed=seed)
    rng = np.random.default_rng(seed)
    splits = {}
    for split in n:
        splits[split] = []
        for sid in source.ids(split):
            sample = source.load(sid)
            image = sample.image.copy()
            speckle = rng.random(image.shape[:2]) < noise
            image[speckle] = rng.integers(0, 256, (int(speckle.sum()), 3), dtype=np.uint8)
            Image.fromarray(image).save(folder / f"{sid}.image.png")
            Image.fromarray(sample.label, mode="L").save(folder / f"{sid}.mask.png")
            splits[split].append(sid)
    (folder / "splits.json").write_text(json.dumps(splits))
    return DiffSeg30kDataset(folder, label_space=label_space, name=f"png-{size}px")


# -- rounds, ratios and results ----------------------------------------------------------
MIN_ROUNDS = 5
"""Every ratio is the median over at least this many interleaved rounds."""


def add_common_args(parser: argparse.ArgumentParser, rounds: int = 5) -> None:
    """``--rounds``, ``--threads``, ``--quick`` and ``--json``, the options every benchmark takes."""
    parser.add_argument("--rounds", type=int, default=rounds,
                        help=f"interleaved timed rounds (default {rounds}; at least {MIN_ROUNDS})")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads of this process (default 1: steadier on a shared machine; "
                             "0: torch's default)")
    parser.add_argument("--quick", action="store_true", help="smaller inputs, for a smoke run")
    parser.add_argument("--json", help="also write the results to this file")


def setup(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Check the common options and apply ``--threads``."""
    import torch

    if args.rounds < MIN_ROUNDS:
        parser.error(f"--rounds must be at least {MIN_ROUNDS}")
    if args.threads > 0:
        torch.set_num_threads(args.threads)


def interleaved(candidates: dict[str, Callable[[int], float]], rounds: int) -> dict[str, list[float]]:
    """Seconds of each candidate per round; each is called ``fn(round)`` once
    per round, the order rotated by one every round (for two candidates:
    alternately first), so drift in the machine's load hits them alike."""
    names = list(candidates)
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            times[name].append(candidates[name](r))
    return times


def median_ratio(numerator: list[float], denominator: list[float]) -> float:
    """The median of the per-round ratios (each round's pair measured side by side)."""
    return statistics.median(a / b for a, b in zip(numerator, denominator, strict=True))


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def figure(name: str, value: float | int | None, goal: str | None = None, unit: str = "") -> dict:
    """One row of the summary table.  ``goal`` is ``"<= X"`` or ``">= X"``;
    ``met`` says whether ``value`` meets it (None when there is no goal)."""
    met = None
    if goal is not None and value is not None:
        op, bound = goal.split()
        met = bool(value <= float(bound)) if op == "<=" else bool(value >= float(bound))
    return {"figure": name, "value": value, "unit": unit, "goal": goal, "met": met}


def git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10,
                             cwd=Path(__file__).resolve().parent)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True, timeout=10, cwd=Path(__file__).resolve().parent).stdout.strip()
        return out.stdout.strip() + ("+dirty" if dirty else "") if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def machine() -> dict:
    """Where and when: date, CPUs, the load, versions and the git commit."""
    import torch

    return {"date": datetime.date.today().isoformat(), "cpus": os.cpu_count(),
            "load_1min": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
            "torch_threads": torch.get_num_threads(), "torch": torch.__version__,
            "python": platform.python_version(), "platform": platform.platform(), "git_commit": git_commit()}


def report(results: dict, json_path: str | None = None) -> None:
    """The one machine-readable line every benchmark ends with (``RESULT {json}``),
    and the same JSON in ``json_path`` when given."""
    results.setdefault("machine", machine())
    print("RESULT " + json.dumps(results))
    if json_path:
        with open(json_path, "w") as fh:
            json.dump(results, fh, indent=2)
