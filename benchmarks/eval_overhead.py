"""The harness's evaluation loop against a bare loop doing the same work, binary and semantic.

    python benchmarks/eval_overhead.py
    python benchmarks/eval_overhead.py --size 256 --images 64 --rounds 7 --json eval.json

Data: ``--images`` synthetic edits of ``--size`` px written as PNG files in
the DiffSeg30k layout to a temporary folder and read through the real
adapter (``DiffSeg30kDataset``: two PNG decodes per image, as in a run).
Model: ``segformer.tiny``, random init, one binary and one semantic (the 9
DiffSeg30k classes) detector.

- harness: ``harness.run.evaluate.evaluate`` on the split with the ``none``
  distortion and the tasks a run scores (binary: ``binary``; semantic:
  ``binary`` + ``semantic``), with ``workers=0`` (like for like: everything in
  this process) and ``workers=2`` (loader processes, the default on 2 cores);
- bare: per image ``dataset.load``, the uint8 -> float batch, ``det.predict``
  under ``torch.inference_mode``, sigmoid / softmax + threshold / argmax,
  ``.numpy()``, and ``EvalState.update`` of the same states.

Rounds are interleaved (the three loops' order rotates each round) after one
untimed warm-up of each; printed are the median of the per-round ratios
harness / bare (goal <= 1.05) and the bare loop's per-image costs
(ms/image of decode, forward, post-processing, metric update: the figures
docs/scaling.md quotes).  A benchmark, not a test: nothing is asserted.
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
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from bench import (  # noqa: E402
    add_common_args,
    figure,
    interleaved,
    median_ratio,
    report,
    setup,
    timed,
    write_png_dataset,  # noqa: E402
)

from diffzoo import create_detector  # noqa: E402
from diffzoo.harness.core.plugins import get_registry  # noqa: E402
from diffzoo.harness.core.types import BINARY  # noqa: E402
from diffzoo.harness.data.labelmaps import DIFFSEG30K_LABELS  # noqa: E402
from diffzoo.harness.metrics import EvalState  # noqa: E402
from diffzoo.harness.run.evaluate import evaluate  # noqa: E402

GOAL = "<= 1.05"
DETECTOR = "segformer.tiny"
PHASES = ("decode", "forward", "post", "metric")


def harness_accepts_workers() -> bool:
    return "workers" in inspect.signature(evaluate).parameters


def run_harness(det, dataset, workers: int | None) -> None:
    identity = get_registry().get("distortion", "none").load()
    tasks = {"binary", "semantic"} if det.task == "semantic" else {"binary"}
    extra = {} if workers is None else {"workers": workers}
    evaluate(det, dataset, "val", identity, {}, tasks=tasks, **extra)


def bare_loop(det, dataset, ids: list[str], phases: dict[str, list[float]]) -> None:
    """The work the metrics need, with nothing else; appends seconds per phase."""
    semantic = det.task == "semantic"
    threshold = det.card.default_threshold
    binary_state = EvalState(BINARY, "binary")
    semantic_state = EvalState(dataset.label_space, "semantic") if semantic else None
    spent = dict.fromkeys(PHASES, 0.0)
    for sid in ids:
        t0 = time.perf_counter()
        sample = dataset.load(sid)
        t1 = time.perf_counter()
        x = torch.from_numpy(sample.image).permute(2, 0, 1)[None].float() / 255
        with torch.inference_mode():
            logits = det.predict(x).mask_logits
        t2 = time.perf_counter()
        with torch.inference_mode():
            if logits.shape[-2:] != sample.label.shape:
                logits = F.interpolate(logits, size=sample.label.shape, mode="bilinear", align_corners=False)
            if semantic:
                probs = torch.softmax(logits, dim=1)[0]
                labels = probs.argmax(0).to(torch.uint8).numpy()
                edited = (1.0 - probs[0]).numpy()
                binary = (labels > 0).astype(np.uint8)
            else:
                edited_t = torch.sigmoid(logits[0, 0])
                binary = (edited_t > threshold).to(torch.uint8).numpy()
                edited = edited_t.numpy()
        gt = dataset.label_space.to_binary_map(sample.label)
        t3 = time.perf_counter()
        binary_state.update(sample.meta, gt, binary, edited)
        if semantic_state is not None:
            semantic_state.update(sample.meta, sample.label, labels, edited)
        t4 = time.perf_counter()
        for name, seconds in zip(PHASES, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
            spent[name] += seconds
    for name in PHASES:
        phases[name].append(spent[name] / len(ids))


def measure(task: str, dataset, rounds: int, workers: bool) -> dict:
    torch.manual_seed(0)
    labels = DIFFSEG30K_LABELS if task == "semantic" else BINARY
    det = create_detector(DETECTOR, task, labels, pretrained=False)
    ids = dataset.ids("val")
    phases: dict[str, list[float]] = {name: [] for name in PHASES}
    candidates = {"bare": lambda r: timed(lambda: bare_loop(det, dataset, ids, phases)),
                  "harness_w0": lambda r: timed(lambda: run_harness(det, dataset, 0 if workers else None))}
    if workers:
        candidates["harness_w2"] = lambda r: timed(lambda: run_harness(det, dataset, 2))
    for fn in candidates.values():  # warm-up of each: first calls, allocator, worker imports
        fn(-1)
    for values in phases.values():
        values.clear()
    times = interleaved(candidates, rounds)
    n = len(ids)
    row = {"task": task, "images": n,
           "ms_per_image": {k: statistics.median(v) / n * 1e3 for k, v in times.items()},
           "ms_per_image_phase": {k: statistics.median(v) * 1e3 for k, v in phases.items()},
           "seconds_rounds": {k: [round(x, 4) for x in v] for k, v in times.items()}}
    row["ratio_w0"] = median_ratio(times["harness_w0"], times["bare"])
    if workers:
        row["ratio_w2"] = median_ratio(times["harness_w2"], times["bare"])
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=128, help="square image side (default 128)")
    parser.add_argument("--images", type=int, default=48, help="images in the evaluated split (default 48)")
    add_common_args(parser)
    args = parser.parse_args()
    setup(parser, args)
    if args.quick:
        args.size, args.images = min(args.size, 64), min(args.images, 16)
    workers = harness_accepts_workers()
    note = None if workers else ("harness.evaluate has no workers= keyword yet: only workers=0 (its loop in "
                                 "this process) is measured")
    with tempfile.TemporaryDirectory() as tmp:
        dataset = write_png_dataset(Path(tmp) / "png", DIFFSEG30K_LABELS, args.size, {"val": args.images})
        rows = {task: measure(task, dataset, args.rounds, workers) for task in ("binary", "semantic")}
    figures = []
    for task, row in rows.items():
        figures.append(figure(f"{task}: harness/bare, workers=0", row["ratio_w0"], GOAL))
        if workers:
            figures.append(figure(f"{task}: harness/bare, workers=2", row["ratio_w2"], GOAL))
        for phase, ms in row["ms_per_image_phase"].items():
            figures.append(figure(f"{task}: bare {phase} ms/image", ms, unit="ms"))
    results = {"benchmark": "eval_overhead", "detector": DETECTOR, "size": args.size, "images": args.images,
               "rounds": args.rounds, "harness_workers_keyword": workers, "note": note, "tasks": rows,
               "figures": figures}

    print(f"evaluation of {args.images} PNG images of {args.size} px, {DETECTOR} (random init), {os.cpu_count()} "
          f"CPUs, {torch.get_num_threads()} torch thread(s), median of {args.rounds} interleaved rounds")
    if note:
        print(f"  note: {note}")
    print(f"  {'task':<10}{'bare ms/img':>12}{'harness w0':>12}{'w0 / bare':>11}{'harness w2':>12}{'w2 / bare':>11}")
    for task, row in rows.items():
        ms = row["ms_per_image"]
        w2 = (f"{ms['harness_w2']:>12.2f}{row['ratio_w2']:>11.3f}" if workers else f"{'-':>12}{'-':>11}")
        print(f"  {task:<10}{ms['bare']:>12.2f}{ms['harness_w0']:>12.2f}{row['ratio_w0']:>11.3f}{w2}")
    print(f"  goal: harness / bare {GOAL}")
    print(f"  bare loop per image (ms): {'  '.join(PHASES)}")
    for task, row in rows.items():
        print(f"  {task:<10}" + "".join(f"{row['ms_per_image_phase'][p]:>9.2f}" for p in PHASES))
    report(results, args.json)


if __name__ == "__main__":
    main()
