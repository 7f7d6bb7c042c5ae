"""Boundary F1 per image on worst-case maps: the bit-packed code against the distance-transform code it replaced.

    python benchmarks/bf1.py
    python benchmarks/bf1.py --size 1024 --rounds 9 --json bf1.json

Worst-case maps are uniform random labels, where every pixel is a boundary
point: binary (labels 0/1) and semantic (the 9 DiffSeg30k classes), GT and
prediction drawn independently, ``--size`` squared (default 512).

- before: the distance-transform implementation, kept as the test oracle
  ``tests/helpers/boundary_oracle.py`` (a full Euclidean distance
  transform, ``scipy.ndimage.distance_transform_edt``, per class);
- after: ``diffzoo.harness.metrics.per_class_bf1`` (classes packed into bits,
  the other boundary dilated by the disk of offsets shorter than theta).

Both run on the same maps in the same process, rounds interleaved (the order
alternates from one round to the next) after one untimed warm-up of each;
printed are ms per image of each (median over rounds), the median of the
per-round ratios before / after, whether both gave exactly equal floats, and
the goal (after <= 30 ms per 512² image).  One ``RESULT {json}`` line
(``--json FILE`` also writes it).  A benchmark, not a test: nothing is
asserted, and on a shared machine the absolute figures move with the load;
the ratio, measured in one run, moves less.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import numpy as np
from bench import figure, report, test_helper

from diffzoo.harness.metrics.boundaries import per_class_bf1

oracle = test_helper("boundary_oracle")

GOAL_MS = 30.0
"""The target per 512² worst-case image: the bit-packed code must keep bF1 cheap beside a forward pass."""

def worst_case_maps(classes: int, size: int, images: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``images`` (GT, prediction) pairs of independent uniform random labels in 0..classes-1."""
    rng = np.random.default_rng(seed)
    return [tuple(rng.integers(0, classes, (size, size)).astype(np.uint8) for _ in range(2)) for _ in range(images)]


def ms_per_image(fn, maps, classes: int) -> tuple[float, list[np.ndarray]]:
    out = []
    start = time.perf_counter()
    for gt, pred in maps:
        out.append(fn(gt, pred, classes))
    return (time.perf_counter() - start) / len(maps) * 1e3, out


def identical(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return all(np.array_equal(x, y, equal_nan=True) for x, y in zip(a, b, strict=True))


def measure(classes: int, size: int, images: int, rounds: int) -> dict:
    maps = worst_case_maps(classes, size, images, seed=classes)
    _, after_out = ms_per_image(per_class_bf1, maps, classes)  # warm-up of each
    _, before_out = ms_per_image(oracle.per_class_bf1, maps, classes)
    same = identical(after_out, before_out)
    befores, afters = [], []
    for r in range(rounds):
        order = [("after", per_class_bf1), ("before", oracle.per_class_bf1)]
        for name, fn in order if r % 2 == 0 else order[::-1]:
            ms, out = ms_per_image(fn, maps, classes)
            (afters if name == "after" else befores).append(ms)
            same = same and identical(out, after_out)
    ratios = [b / a for b, a in zip(befores, afters)]
    return {
        "classes": classes, "size": size, "images_per_round": images, "rounds": rounds,
        "before_ms": statistics.median(befores), "after_ms": statistics.median(afters),
        "speedup": statistics.median(ratios), "identical": same,
        "before_ms_rounds": [round(v, 3) for v in befores], "after_ms_rounds": [round(v, 3) for v in afters],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=512, help="square map side (default 512)")
    parser.add_argument("--images", type=int, default=4, help="image pairs per round and kind (default 4)")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved timed rounds (default 7; at least 5)")
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--quick", action="store_true", help="2 images per round, for a smoke run")
    args = parser.parse_args()
    if args.quick:
        args.images = min(args.images, 2)
    if args.rounds < 5 or args.images < 1 or args.size < 1:
        parser.error("--rounds must be at least 5, --images and --size at least 1")

    results = {
        "benchmark": "bf1_worst_case", "goal_after_ms": GOAL_MS, "cpus": os.cpu_count(),
        "machine": platform.machine(), "python": platform.python_version(), "numpy": np.__version__,
        "kinds": {name: measure(classes, args.size, args.images, args.rounds)
                  for name, classes in (("binary", 2), ("semantic9", 9))},
    }
    results["figures"] = [figure(f"{name}: after ms/image ({args.size} px)", row["after_ms"], f"<= {GOAL_MS:g}", "ms")
                          for name, row in results["kinds"].items()]
    results["figures"] += [figure(f"{name}: before/after", row["speedup"]) for name, row in results["kinds"].items()]
    print(f"bF1 per {args.size}x{args.size} worst-case image (uniform random labels), {os.cpu_count()} CPUs, "
          f"median of {args.rounds} interleaved rounds x {args.images} images")
    print(f"  {'maps':<12}{'before ms':>11}{'after ms':>10}{'before/after':>14}{'identical':>11}")
    for name, row in results["kinds"].items():
        print(f"  {name:<12}{row['before_ms']:>11.1f}{row['after_ms']:>10.1f}{row['speedup']:>13.1f}x"
              f"{str(row['identical']):>11}")
    print(f"  goal: after <= {GOAL_MS:.0f} ms per 512x512 image; a shared machine's absolute "
          "figures move with its load")
    report(results, args.json)


if __name__ == "__main__":
    main()
