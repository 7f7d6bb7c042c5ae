"""The metric update against torchmetrics doing less: Jaccard + binned AUROC.

    python benchmarks/metrics.py
    python benchmarks/metrics.py --size 512 --images 8 --rounds 7 --json metrics.json

Per image, ``EvalState.update`` (binary task: the confusion counts, boundary
F1, the binned pixel-AUC histograms, the image-level row) against
torchmetrics' ``BinaryJaccardIndex`` + ``BinaryAUROC(thresholds=1000)``
updates of the same maps, which compute less (no boundary F1, no per-image
rows).  Two kinds of maps, ``--size`` squared:

- typical: one edited square per image, probabilities smooth around it;
- worst case: uniform random labels and probabilities (every pixel a
  boundary point: boundary F1's worst case).

Rounds interleaved (the order alternates), after one untimed warm-up of each;
printed are ms per image of each and the median of the per-round ratios
torchmetrics / diffzoo (goal: diffzoo at least 5x faster).  A
benchmark, not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np
import torch
from bench import add_common_args, figure, interleaved, median_ratio, report, setup, timed
from torchmetrics.classification import BinaryAUROC, BinaryJaccardIndex

from diffzoo.harness.core.types import BINARY, SampleMeta
from diffzoo.harness.metrics import EvalState

GOAL = ">= 5"
BINS = 1000  # EvalState's pixel-AUC histogram size (docs/metrics.md)


def typical_maps(size: int, images: int, rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray]]:
    maps = []
    yy, xx = np.mgrid[0:size, 0:size]
    for _ in range(images):
        side = size // 3
        y0, x0 = (int(v) for v in rng.integers(0, size - side, 2))
        gt = np.zeros((size, size), np.uint8)
        gt[y0:y0 + side, x0:x0 + side] = 1
        dist = np.hypot(yy - (y0 + side / 2), xx - (x0 + side / 2)) / side
        prob = np.clip(1.2 - dist + rng.normal(0, 0.05, gt.shape), 0, 1).astype(np.float32)
        maps.append((gt, prob))
    return maps


def worst_maps(size: int, images: int, rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray]]:
    return [(rng.integers(0, 2, (size, size)).astype(np.uint8), rng.random((size, size), dtype=np.float32))
            for _ in range(images)]


def diffzoo_update(maps) -> None:
    state = EvalState(BINARY, "binary")
    for i, (gt, prob) in enumerate(maps):
        state.update(SampleMeta(f"{i}", "real", (), "bench"), gt, (prob > 0.5).astype(np.uint8), prob)


def torchmetrics_update(maps) -> None:
    jaccard, auroc = BinaryJaccardIndex(), BinaryAUROC(thresholds=BINS)
    for gt, prob in maps:
        target, p = torch.from_numpy(gt), torch.from_numpy(prob)
        jaccard.update((p > 0.5).long(), target)
        auroc.update(p, target)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=512, help="square map side (default 512)")
    parser.add_argument("--images", type=int, default=8, help="maps per round (default 8)")
    add_common_args(parser)
    args = parser.parse_args()
    setup(parser, args)
    if args.quick:
        args.size, args.images = min(args.size, 256), min(args.images, 4)
    rng = np.random.default_rng(0)
    kinds = {"typical": typical_maps(args.size, args.images, rng),
             "worst case": worst_maps(args.size, args.images, rng)}
    rows, figures = {}, []
    for kind, maps in kinds.items():
        candidates = {"diffzoo": lambda r, m=maps: timed(lambda: diffzoo_update(m)),
                      "torchmetrics": lambda r, m=maps: timed(lambda: torchmetrics_update(m))}
        for fn in candidates.values():
            fn(-1)
        times = interleaved(candidates, args.rounds)
        ms = {k: statistics.median(v) / args.images * 1e3 for k, v in times.items()}
        ratio = median_ratio(times["torchmetrics"], times["diffzoo"])
        rows[kind] = {"ms_per_image": ms, "torchmetrics_over_diffzoo": ratio}
        figures.append(figure(f"{kind}: torchmetrics / diffzoo update", ratio, GOAL))
        figures.append(figure(f"{kind}: diffzoo ms/image ({args.size} px)", ms["diffzoo"], unit="ms"))
    print(f"metric update per {args.size} px image, median of {args.rounds} interleaved rounds x {args.images} maps")
    print(f"  {'maps':<12}{'diffzoo ms':>12}{'torchmetrics ms':>17}{'ratio':>8}")
    for kind, row in rows.items():
        ms = row["ms_per_image"]
        print(f"  {kind:<12}{ms['diffzoo']:>12.2f}{ms['torchmetrics']:>17.2f}{row['torchmetrics_over_diffzoo']:>8.1f}")
    print(f"  goal: torchmetrics / diffzoo {GOAL} (diffzoo also computes boundary F1 and per-image rows)")
    report({"benchmark": "metrics", "size": args.size, "images": args.images, "rounds": args.rounds,
            "kinds": rows, "figures": figures}, args.json)


if __name__ == "__main__":
    main()
