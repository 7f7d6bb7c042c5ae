"""gpu_check's ``metrics`` section: the device path's counts on this GPU equal the numpy path's.

``metrics/reduce.py`` reduces a prediction to exact counts either with numpy on the
CPU or with torch on the model's device; the tests hold the two equal with torch on
the CPU.  On a lent GPU this checks the same on CUDA kernels (bincount with atomics,
float64 binning, the bit-packed boundary morphology), on worst-case and blob maps
of 512 and 1024 px, binary and 9 classes, with ignored pixels, and times both paths
per image (the device one synchronised).  Nothing here is a test: the result is
recorded (``device_metrics``) and a mismatch is listed by field.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from diffzoo.harness.core.types import IGNORE_INDEX
from diffzoo.harness.metrics.reduce import reduce_numpy, reduce_torch

FIELDS = ("gt_counts", "conf", "boundary", "hist")


def _maps(size: int, classes: int, worst: bool, rng: np.random.Generator):
    if worst:
        gt = rng.integers(0, classes, (size, size)).astype(np.uint8)
        pred = rng.integers(0, classes, (size, size)).astype(np.uint8)
    else:
        gt = np.zeros((size, size), np.uint8)
        pred = np.zeros((size, size), np.uint8)
        for _ in range(3):
            y, x, h, w = (int(v) for v in rng.integers(0, size // 2, 4))
            gt[y:y + h, x:x + w] = rng.integers(1, classes)
            y, x, h, w = (int(v) for v in rng.integers(0, size // 2, 4))
            pred[y:y + h, x:x + w] = rng.integers(1, classes)
    gt[rng.random((size, size)) < 0.03] = IGNORE_INDEX
    prob = rng.random((size, size), dtype=np.float32)
    return gt, pred, prob


def check_device_metrics(device: torch.device, sizes: tuple[int, ...], repeats: int = 3) -> dict:
    """{case: {exact, mismatched fields, numpy_ms, device_ms}} for each size x (2, 9 classes) x map kind."""
    rng = np.random.default_rng(0)
    out = {}
    for size in sizes:
        for classes in (2, 9):
            for worst in (False, True):
                gt, pred, prob = _maps(size, classes, worst, rng)
                tensors = [torch.from_numpy(a).to(device) for a in (gt, pred, prob)]
                reduce_torch(*tensors, classes, 1024)  # warm-up: kernels, allocator
                began = time.perf_counter()
                for _ in range(repeats):
                    want = reduce_numpy(gt, pred, prob, classes, 1024)
                numpy_ms = (time.perf_counter() - began) / repeats * 1e3
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
                began = time.perf_counter()
                for _ in range(repeats):
                    got = reduce_torch(*tensors, classes, 1024)  # ends with a copy to the CPU: synchronised
                device_ms = (time.perf_counter() - began) / repeats * 1e3
                wrong = [f for f in FIELDS if not np.array_equal(getattr(got, f), getattr(want, f))]
                out[f"{size}px-{classes}cls-{'worst' if worst else 'blobs'}"] = {
                    "exact": not wrong, "mismatched": wrong, "numpy_ms": round(numpy_ms, 3),
                    "device_ms": round(device_ms, 3)}
    return out
