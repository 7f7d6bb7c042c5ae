"""Overhead of ``diffzoo generate`` per editor call, as a ratio to a bare diffusers call.

    python benchmarks/generate_overhead.py
    python benchmarks/generate_overhead.py --editor sdxl.tiny --samples 24 --size 64 --repeats 5

One tiny random-weight editor (default ``sd2.tiny``), real bases only
(synthetic images written to a temporary folder), template prompts, random
regions, the default quality filter, PNG writes and the manifest: everything
a real run does except text to image.

- bare: ``editor.pipeline(**kwargs)`` alone, the kwargs built outside the timed
  region (``DiffusersEditor.pipeline_call_kwargs``), as many calls as the run
  makes;
- pipeline: a whole ``DatasetGenerator.run`` into a fresh folder, wall time
  divided by its editor calls (an addition is two calls).

Prints both and the overhead ratio ``(pipeline - bare) / bare`` per call, the
median over ``--repeats`` alternating rounds after one warm-up of each (goal:
under 5%).  A benchmark, not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

from diffzoo import create_generator  # noqa: E402
from diffzoo.generators.generate.pipeline import DatasetGenerator, GenerateConfig  # noqa: E402
from diffzoo.generators.generate.regions import random_region  # noqa: E402


class Counting:
    """The editor, counting its ``edit`` calls."""

    def __init__(self, editor):
        self.editor, self.calls = editor, 0

    def edit(self, image, mask, prompt, seed):
        self.calls += 1
        return self.editor.edit(image, mask, prompt, seed)


def write_bases(folder: Path, n: int, size: int) -> None:
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True)
    yy, xx = np.mgrid[0:size, 0:size]
    for i in range(n):
        image = np.stack([(xx * 3 + i * 17) % 256, (yy * 5) % 256, rng.integers(0, 256, (size, size))], -1)
        Image.fromarray(image.astype(np.uint8)).save(folder / f"base{i:03d}.png")


def time_pipeline(args, editor: Counting, bases: Path, work: Path, round_: int) -> tuple[float, int]:
    config = GenerateConfig(out=work / f"out{round_}", editors=(args.editor,), bases=str(bases), n=args.samples,
                            ai_fraction=0.0, size=args.size, seed=round_, device=args.device, threads=args.threads)
    generator = DatasetGenerator(config, editors={args.editor: editor})
    before = editor.calls
    start = time.perf_counter()
    generator.run()
    return time.perf_counter() - start, editor.calls - before


def time_bare(editor, calls: int, size: int, seed: int) -> float:
    import torch

    rng = np.random.default_rng(seed)
    total = 0.0
    for i in range(calls):
        image = rng.integers(0, 256, (size, size, 3), dtype=np.uint8)
        mask = random_region(size, size, rng).mask
        kwargs = editor.pipeline_call_kwargs(image, mask, "a red cup", seed=i)
        start = time.perf_counter()
        with torch.inference_mode():
            editor.pipeline(**kwargs)
        total += time.perf_counter() - start
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--editor", default="sd2.tiny")
    parser.add_argument("--samples", type=int, default=20, help="samples per pipeline run")
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    raw = create_generator(args.editor, device=args.device)
    editor = Counting(raw)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        write_bases(work / "bases", 8, args.size)
        time_pipeline(args, editor, work / "bases", work, 0)  # warm-up: builds the pipeline
        time_bare(raw, 3, args.size, 0)
        rows = []
        for r in range(1, args.repeats + 1):
            wall, calls = time_pipeline(args, editor, work / "bases", work, r)
            bare = time_bare(raw, calls, args.size, r)
            rows.append((wall / calls, bare / calls, calls))
            print(f"round {r}: {calls} editor calls; pipeline {wall / calls * 1e3:.1f} ms/call, "
                  f"bare diffusers {bare / calls * 1e3:.1f} ms/call")
    ratios = [(p - b) / b for p, b, _ in rows]
    print(f"{args.editor} at {args.size} px on {args.device} ({args.threads} thread(s)): "
          f"pipeline overhead per edit = {statistics.median(ratios):+.1%} of a bare diffusers call "
          f"(median of {len(ratios)} rounds; goal < 5%)")


if __name__ == "__main__":
    main()
