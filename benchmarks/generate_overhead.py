"""Overhead of ``diffzoo generate`` per editor call, as a ratio to a bare diffusers call.

    python benchmarks/generate_overhead.py
    python benchmarks/generate_overhead.py --editor sdxl.tiny --samples 24 --size 64 --rounds 7
    python benchmarks/generate_overhead.py --profile      # also: where the pipeline's own time goes

One tiny random-weight editor (default ``sd2.tiny``), real bases only
(synthetic images written to a temporary folder), template prompts, random
regions, the default quality filter, PNG writes and the manifest: everything
a real run does except text to image.

- bare: ``editor.pipeline(**kwargs)`` alone, the kwargs built outside the timed
  region (``DiffusersEditor.pipeline_call_kwargs``), as many calls as the run
  makes;
- pipeline: a whole ``DatasetGenerator.run`` into a fresh folder (the same
  seed every round, so the same work), wall time divided by its editor calls
  (an addition is two calls).

Rounds are interleaved, pipeline and bare alternately first, after one
warm-up of each; printed are ms per call of both and the median of the
per-round ratios pipeline / bare (goal <= 1.03).  ``--profile``
runs one more pipeline round under cProfile and lists the functions of
``diffzoo/`` that cost the most outside the diffusers call, so that the
overhead can be located.  A benchmark, not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import inspect
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
from bench import add_common_args, figure, interleaved, median_ratio, report, setup  # noqa: E402
from PIL import Image  # noqa: E402

from diffzoo import create_generator  # noqa: E402
from diffzoo.generators.generate.pipeline import DatasetGenerator, GenerateConfig  # noqa: E402
from diffzoo.generators.generate.regions import random_region  # noqa: E402

GOAL = "<= 1.03"


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
                            ai_fraction=0.0, size=args.size, seed=args.seed, device=args.device,
                            threads=max(args.threads, 1))
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


def profile_round(args, editor: Counting, raw, bases: Path, work: Path, top: int = 12) -> dict:
    """One pipeline round under cProfile: seconds inside the diffusers call, and
    the ``diffzoo/`` functions with the most time of their own, and with the most
    time under them outside the diffusers call (cumulative minus the pipeline's)."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    wall, calls = time_pipeline(args, editor, bases, work, 10_000)
    profiler.disable()
    stats = pstats.Stats(profiler).stats  # (file, line, name) -> (cc, nc, tottime, cumtime, callers)
    pipe_file = inspect.getsourcefile(inspect.unwrap(type(raw.pipeline).__call__))
    model = max((v[3] for k, v in stats.items() if k[0] == pipe_file and k[2] == "__call__"), default=0.0)
    root = str(Path(__file__).resolve().parents[1] / "diffzoo")

    def rows(index: int) -> list[dict]:
        own = [(k, v) for k, v in stats.items() if k[0].startswith(root)]
        own.sort(key=lambda kv: -kv[1][index])
        return [{"function": f"{Path(k[0]).relative_to(Path(root).parent)}:{k[1]}({k[2]})", "calls": v[1],
                 "own_s": round(v[2], 4), "cumulative_s": round(v[3], 4)} for k, v in own[:top]]

    return {"wall_s": wall, "calls": calls, "diffusers_call_s": model, "outside_diffusers_s": wall - model,
            "outside_ms_per_call": (wall - model) / calls * 1e3,
            "by_own_time": rows(2), "by_cumulative_time": rows(3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--editor", default="sd2.tiny")
    parser.add_argument("--samples", type=int, default=20, help="samples per pipeline run")
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--seed", type=int, default=0, help="the generation seed of every round")
    parser.add_argument("--profile", action="store_true", help="profile one more pipeline round (cProfile)")
    add_common_args(parser)
    args = parser.parse_args()
    setup(parser, args)
    if args.quick:
        args.samples = min(args.samples, 8)

    import torch

    raw = create_generator(args.editor, device=args.device)
    editor = Counting(raw)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        write_bases(work / "bases", 8, args.size)
        # warm-up of each (builds the pipeline); every round runs the same seed, so the same calls
        _, n_calls = time_pipeline(args, editor, work / "bases", work, 0)
        time_bare(raw, 3, args.size, 0)
        calls = dict.fromkeys(range(args.rounds), n_calls)

        def pipeline(r: int) -> float:
            wall, calls[r] = time_pipeline(args, editor, work / "bases", work, r + 1)
            return wall

        def bare(r: int) -> float:
            return time_bare(raw, n_calls, args.size, r + 1)

        times = interleaved({"pipeline": pipeline, "bare": bare}, args.rounds)
        profile = profile_round(args, editor, raw, work / "bases", work) if args.profile else None
    per_call = {k: [t / calls[r] for r, t in enumerate(v)] for k, v in times.items()}
    for r in range(args.rounds):
        print(f"round {r + 1}: {calls[r]} editor calls, {'pipeline' if r % 2 == 0 else 'bare'} first; "
              f"pipeline {per_call['pipeline'][r] * 1e3:.1f} ms/call, bare diffusers {per_call['bare'][r] * 1e3:.1f}")
    ratio = median_ratio(per_call["pipeline"], per_call["bare"])
    results = {"benchmark": "generate_overhead", "editor": args.editor, "size": args.size, "samples": args.samples,
               "rounds": args.rounds, "threads": torch.get_num_threads(),
               "pipeline_ms_per_call": statistics.median(per_call["pipeline"]) * 1e3,
               "bare_ms_per_call": statistics.median(per_call["bare"]) * 1e3, "ratio": ratio,
               "calls_rounds": [calls[r] for r in range(args.rounds)], "profile": profile,
               "figures": [figure("pipeline/bare per editor call", ratio, GOAL),
                           figure("bare diffusers ms/call", statistics.median(per_call["bare"]) * 1e3, unit="ms")]}
    print(f"{args.editor} at {args.size} px on {args.device} ({torch.get_num_threads()} thread(s)): "
          f"pipeline / bare per edit = {ratio:.3f} (median of {args.rounds} interleaved rounds; goal {GOAL})")
    if profile:
        print(f"profile of one round: {profile['wall_s']:.2f} s for {profile['calls']} calls, "
              f"{profile['diffusers_call_s']:.2f} s inside the diffusers call, "
              f"{profile['outside_diffusers_s']:.3f} s outside it ({profile['outside_ms_per_call']:.1f} ms/call, "
              "profiler overhead included)")
        for title, key in (("own time", "by_own_time"), ("cumulative time", "by_cumulative_time")):
            print(f"  diffzoo functions by {title}:")
            for row in profile[key]:
                print(f"    {row['own_s']:>8.3f} own {row['cumulative_s']:>8.3f} cum {row['calls']:>6}x  "
                      f"{row['function']}")
    report(results, args.json)


if __name__ == "__main__":
    main()
