"""Per-image costs at DiffSeg30k's size, and what they project for ``--suite all`` on DiffSeg30k.

    python benchmarks/scaling.py
    python benchmarks/scaling.py --sizes 512,1024 --images 6 --json scaling.json

Measures, on this machine, the bare per-image phases of evaluating
``segformer.b2`` (random init, semantic: the 9 DiffSeg30k classes, which also
scores the binary task) on synthetic PNG edits of each size: decode (two PNGs
through the DiffSeg30k adapter), forward, post-processing and the metric
update (``eval_overhead.bare_loop``).  1024 px is DiffSeg30k's image size
(the ``native`` recipe's input); 512 px is the ``paper`` recipe's input
(shorter side at the crop size).

The projection multiplies the per-image total by the image reads of
``diffzoo run --detector segformer --suite all`` on DiffSeg30k's validation
split (20% of 30k = 6,000 images): the reads per validation image come from
the plan of the same run on ``mini`` (the same suites; its "passes" lines),
whose eight editors and cases match DiffSeg30k's.  Training is not included
(the paper recipe's 160k iterations per model dominate any evaluation).
A benchmark, not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from bench import add_common_args, figure, report, setup, write_png_dataset  # noqa: E402
from eval_overhead import PHASES, bare_loop  # noqa: E402

from diffzoo import create_detector  # noqa: E402
from diffzoo.harness.data.labelmaps import DIFFSEG30K_LABELS  # noqa: E402

DIFFSEG30K_VAL = 6000
"""Validation images of DiffSeg30k (the paper's 8:2 split of 30k)."""


def mini_reads_per_image() -> tuple[float, int, int]:
    """(image reads per validation image, model passes, reads) of ``--suite all`` on mini, from its plan."""
    from diffzoo.harness.run.request import RunRequest
    from diffzoo.harness.run.runner import Runner

    runner = Runner(RunRequest(detector="segformer", suite="all", dataset="mini", device="cpu"))
    plan = runner.plan
    passes = sum(len(job.passes) for job in plan.jobs)
    reads = sum(plan.images(p) for job in plan.jobs for p in job.passes)
    return reads / len(runner.dataset.ids("val")), passes, reads


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="512,1024", help="image sides to measure (default 512,1024)")
    parser.add_argument("--images", type=int, default=4, help="images per round (default 4)")
    add_common_args(parser, rounds=5)
    args = parser.parse_args()
    setup(parser, args)
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.quick:
        sizes, args.images = [min(sizes)], 2
    per_read, passes, reads = mini_reads_per_image()
    torch.manual_seed(0)
    det = create_detector("segformer.b2", "semantic", DIFFSEG30K_LABELS, pretrained=False)
    rows, figures = {}, []
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            ds = write_png_dataset(Path(tmp) / f"png{size}", DIFFSEG30K_LABELS, size, {"val": args.images})
            phases: dict[str, list[float]] = {name: [] for name in PHASES}
            bare_loop(det, ds, ds.ids("val"), {name: [] for name in PHASES})  # warm-up
            for _ in range(args.rounds):
                bare_loop(det, ds, ds.ids("val"), phases)
            ms = {name: statistics.median(v) * 1e3 for name, v in phases.items()}
            total = sum(ms.values())
            hours = DIFFSEG30K_VAL * per_read * total / 3.6e6
            rows[size] = {"ms_per_image": ms, "total_ms": total, "projected_hours_2_cores": hours}
            figures += [figure(f"{size} px: {name} ms/image", value, unit="ms") for name, value in ms.items()]
            figures.append(figure(f"{size} px: DiffSeg30k --suite all evaluation, hours here", hours, unit="h"))
    print(f"segformer.b2 (semantic, random init), {os.cpu_count()} CPUs, {torch.get_num_threads()} torch thread(s), "
          f"median of {args.rounds} rounds x {args.images} images")
    print(f"--suite all on mini: {passes} model passes, {reads} image reads = {per_read:.2f} per validation image;"
          f" DiffSeg30k: {DIFFSEG30K_VAL} validation images -> {DIFFSEG30K_VAL * per_read:,.0f} reads")
    print(f"  {'size':>6}" + "".join(f"{p:>10}" for p in PHASES) + f"{'total ms':>10}{'hours':>9}")
    for size, row in rows.items():
        print(f"  {size:>6}" + "".join(f"{row['ms_per_image'][p]:>10.1f}" for p in PHASES)
              + f"{row['total_ms']:>10.1f}{row['projected_hours_2_cores']:>9.1f}")
    report({"benchmark": "scaling", "detector": "segformer.b2", "images": args.images, "rounds": args.rounds,
            "mini_passes": passes, "mini_reads": reads, "reads_per_val_image": per_read,
            "diffseg30k_val": DIFFSEG30K_VAL, "sizes": rows, "figures": figures}, args.json)


if __name__ == "__main__":
    main()
