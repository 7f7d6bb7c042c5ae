"""Evaluation loader throughput with 0, 1, 2 and 4 worker processes on decode-bound input.

    python benchmarks/loader.py
    python benchmarks/loader.py --images 128 --size 1024 --rounds 7 --json loader.json

``--images`` synthetic edits of ``--size`` px (default 64 of 512 px, half
their pixels random so that PNG decoding costs what a photograph's does)
written in the DiffSeg30k layout to a temporary folder, then read by
``harness.run.loading.eval_inputs(dataset, ids, none, {}, workers=N)``: decode
of image and mask, the ``none`` distortion, the uint8 CHW tensor, in ``N``
worker processes (0: in this process).  Nothing consumes the items but a
check of their size, so the figure is the loader's own rate, worker start-up
included (once per evaluation pass in a run).

Rounds are interleaved (the order of the worker counts rotates each round);
printed are images/s (median over rounds) and the median ratio to 0 workers
measured in the same rounds.  On a machine with C free cores the ratio
cannot pass about C.  A benchmark, not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import tempfile
import warnings
from pathlib import Path

from bench import add_common_args, figure, interleaved, median_ratio, report, setup, timed, write_png_dataset

from diffzoo.harness.core.plugins import get_registry
from diffzoo.harness.data.labelmaps import DIFFSEG30K_LABELS

WORKERS = (0, 1, 2, 4)
warnings.filterwarnings("ignore", message="This DataLoader will create")  # 4 workers on 2 cores: on purpose


def read_all(dataset, ids: list[str], workers: int) -> None:
    from diffzoo.harness.run.loading import eval_inputs

    identity = get_registry().get("distortion", "none").load()
    n = 0
    for item in eval_inputs(dataset, ids, identity, {}, workers=workers):
        if item.error is not None:
            raise item.error
        n += item.image.shape[0] == 3
    if n != len(ids):
        raise RuntimeError(f"the loader gave {n} images for {len(ids)} ids")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=512, help="square image side (default 512)")
    parser.add_argument("--images", type=int, default=64, help="images read per pass (default 64)")
    add_common_args(parser)
    args = parser.parse_args()
    setup(parser, args)
    if args.quick:
        args.size, args.images = min(args.size, 256), min(args.images, 32)
    if importlib.util.find_spec("diffzoo.harness.run.loading") is None:
        report({"benchmark": "loader", "error": "diffzoo.harness.run.loading is missing", "figures": []}, args.json)
        return
    with tempfile.TemporaryDirectory() as tmp:
        dataset = write_png_dataset(Path(tmp) / "png", DIFFSEG30K_LABELS, args.size, {"val": args.images})
        ids = dataset.ids("val")
        file_mb = sum(f.stat().st_size for f in (Path(tmp) / "png").glob("*.image.png")) / len(ids) / 2**20
        candidates = {w: (lambda r, w=w: timed(lambda: read_all(dataset, ids, w))) for w in WORKERS}
        for fn in candidates.values():  # warm-up: page cache, imports
            fn(-1)
        times = interleaved(candidates, args.rounds)
    rates = {w: len(ids) / statistics.median(t) for w, t in times.items()}
    ratios = {w: median_ratio(times[0], times[w]) for w in WORKERS}
    figures = [figure(f"images/s, {w} worker(s)", rates[w], unit="img/s") for w in WORKERS]
    figures += [figure(f"x 0 workers, {w} worker(s)", ratios[w]) for w in WORKERS if w]
    results = {"benchmark": "loader", "size": args.size, "images": args.images, "rounds": args.rounds,
               "image_file_mib": file_mb, "images_per_s": rates, "ratio_to_0_workers": ratios,
               "seconds_rounds": {w: [round(x, 4) for x in t] for w, t in times.items()}, "figures": figures}
    print(f"eval_inputs on {args.images} PNG images of {args.size} px ({file_mb:.2f} MiB each), {os.cpu_count()} "
          f"CPUs, median of {args.rounds} interleaved rounds")
    print(f"  {'workers':<9}{'images/s':>10}{'x 0 workers':>13}")
    for w in WORKERS:
        print(f"  {w:<9}{rates[w]:>10.1f}{ratios[w]:>13.2f}")
    report(results, args.json)


if __name__ == "__main__":
    main()
