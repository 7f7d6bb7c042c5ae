"""GPU check: train SegFormer-B2 briefly at 512x512 (bf16 autocast, channels_last),
evaluate a few hundred synthetic images, print throughput and peak memory; then
the real data path (PNG files read through diffzoo's loaders) and IMDL-BenCo's
detectors.

Sections, in this order (``--skip`` leaves any out):

0. ``metrics``: the metric counts of the device path (torch on this GPU) equal
   the numpy path's, bit for bit, and how long each takes per image
   (``gpu_metrics_check.py``; seconds).
1. ``synthetic``: in-memory data.  Inference is timed twice: at the training
   batch under bf16 autocast (this harness's throughput), and like for like
   with mmseg's published 30.88 fps for SegFormer-B2 512x512
   (:data:`MMSEG_FPS`): batch 1, fp32, NCHW, 512x512, synchronised per image,
   200 images after 5 warm-up.  Training images/s are at batch 16, the
   recipe's total batch (mmseg's 8 GPUs x 2); mmseg publishes no training
   speed to set them against.  The evaluation (``harness.evaluate``) also
   gives forward / metric / wait ms per image (below).
2. ``data``: a small DiffSeg30k-layout folder of PNG files per size (512 px,
   the ``paper`` recipe's input, and 1024 px, DiffSeg30k's own size; uniform
   noise images, the worst case for PNG decoding), opened through
   ``open_dataset`` (the registered adapters sniff it).  For 0, 2 and 4 loader
   workers: training images/s through ``det.fit`` (the shared trainer:
   ``CropDataset``, ``make_loader``, ``TrainConfig(num_workers=...)``) and
   evaluation images/s through ``harness.evaluate`` (``eval_inputs`` into
   ``predict``, metrics included, fp32 as a run), each with the share of
   wall time the loop waits for data (blocked in ``next()`` of its
   iterator / total).  Helpers: ``gpu_data_path.py``.
3. ``benco``: each IMDL-BenCo detector that builds offline (random init;
   random weight files, ``tests/helpers/benco_weights.py``, in a temporary cache for
   those whose constructor needs one): training images/s through its
   ``fit`` (the shared trainer) on in-memory data at its input size, and
   ``predict`` images/s at batch 1, fp32.  Without ``imdlbenco`` the section
   is recorded as not measured.

Every evaluation through ``harness.evaluate`` (sections 1 and 2) also reports
per image, in ms, ``forward`` (``predict_checked``, synchronised on CUDA),
``metric`` (``Scorer.score``, timed where it runs: the scoring thread when
evaluation overlaps) and ``wait`` (blocked on the loader), and which of them
leads, by wrapping ``evaluate.predict_checked`` and ``scoring.Scorer.score``
for the measurement (``eval_timing_note`` in the JSON says what the
synchronisation changes).  That is the default configuration (``metrics``
auto, ``overlap`` as evaluate chooses: torch and overlapped on CUDA); on CUDA,
budget permitting, also ``metrics="numpy", overlap=False``, the way
evaluation ran before (section 1's images; section 2 at the most workers).

    bash benchmarks/gpu_check.sh            # on a CUDA machine; within 8 minutes on one H200
    bash benchmarks/gpu_check.sh --smoke    # tiny settings on CPU, to check the script itself

A time budget (``--budget``, 400 s from the script's start; ``gpu_check.sh``
kills it at 480 s) decides what runs after section 1's own figures: a measurement that
would not fit in what is left is skipped and listed in the JSON's
``not_measured`` ({what, why}), as is everything a ``--smoke`` run or a
missing ``imdlbenco`` leaves out.  After each section the JSON so
far is written to ``--json`` (with ``"partial": true``), and SIGTERM (sent
by ``gpu_check.sh``'s limit) ends the run with its summary and JSON, so a run
stopped at the limit still leaves its figures.

No network is needed: the models start from random weights (pretrained
weights cannot be downloaded there), the data are synthetic.  Training goes
through the detector's ``fit`` (the shared trainer, which runs bf16 autocast
on CUDA, and channels_last through ``TrainConfig.channels_last``); for
evaluation and inference of the synthetic section channels_last is applied
here to the network and its input.  A second, shorter training pass without
channels_last gives the layout's speed ratio measured in the same run.
"""

from __future__ import annotations

import argparse
import functools
import gc
import os
import platform
import shutil
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import torch  # noqa: E402
from gpu_data_path import inference_rate, peak_mib, random_weight_files, reset_peak  # noqa: E402
from gpu_metrics_check import check_device_metrics  # noqa: E402

FULL = {"size": 512, "batch_size": 16, "iterations": 150, "warmup": 15, "eval_images": 300, "workers": 8,
        "budget": 400.0, "data_sizes": "512,1024", "data_workers": "0,2,4", "data_train_images": 64,
        "data_val_images": 48, "data_steps": 10, "data_warmup": 3, "benco": "benco.*", "benco_steps": 5}
SMOKE = {"size": 64, "batch_size": 2, "iterations": 3, "warmup": 1, "eval_images": 6, "workers": 0,
         "budget": 150.0, "data_sizes": "64,128", "data_workers": "0,2", "data_train_images": 8,
         "data_val_images": 5, "data_steps": 2, "data_warmup": 1, "benco": "benco.pscc-net.tiny", "benco_steps": 2}
SECTIONS = ("metrics", "synthetic", "data", "benco")


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--smoke", action="store_true", help="tiny settings; runs on CPU (checks the script, not the GPU)")
    p.add_argument("--detector", default="segformer.b2")
    p.add_argument("--task", default="semantic", help="semantic (9 DiffSeg30k classes) or binary")
    p.add_argument("--size", type=int, help="square training crop and eval image size (512; smoke 64)")
    p.add_argument("--batch-size", type=int, help="training batch (16, the paper recipe's total batch; smoke 2)")
    p.add_argument("--iterations", type=int, help="timed training steps (150; smoke 3)")
    p.add_argument("--warmup", type=int, help="untimed steps first: cuDNN autotune, allocator (15; smoke 1)")
    p.add_argument("--eval-images", type=int, help="synthetic images evaluated (300; smoke 6)")
    p.add_argument("--workers", type=int, help="DataLoader workers for in-memory training (8; smoke 0)")
    p.add_argument("--no-channels-last", action="store_true", help="train and evaluate in NCHW only")
    p.add_argument("--json", help="also write the results to this file")
    p.add_argument("--budget", type=float, help="seconds for the whole run; what would not fit is skipped (400)")
    p.add_argument("--skip", default="", help=f"comma-separated sections to leave out: {', '.join(SECTIONS)}")
    p.add_argument("--data-sizes", help="PNG image sizes of the data path (512,1024; smoke 64,128)")
    p.add_argument("--data-workers", help="loader workers of the data path (0,2,4; smoke 0,2)")
    p.add_argument("--data-train-images", type=int, help="PNG training pairs per size (64; smoke 8)")
    p.add_argument("--data-val-images", type=int, help="PNG validation pairs per size (48; smoke 5)")
    p.add_argument("--data-steps", type=int, help="timed training steps per worker count (10; smoke 2)")
    p.add_argument("--data-warmup", type=int, help="untimed steps / images first, worker start-up (3; smoke 1)")
    p.add_argument("--recipe", default="native", choices=("native", "paper"),
                   help="data path training crops and evaluation input rule (native: as stored)")
    p.add_argument("--benco", help="IMDL-BenCo cards to measure, names or wildcards (benco.*, without .tiny; "
                                   "smoke benco.pscc-net.tiny)")
    p.add_argument("--benco-steps", type=int, help="timed training steps and 2x predict calls per model (5; smoke 2)")
    args = p.parse_args()
    for key, value in (SMOKE if args.smoke else FULL).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    args.skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    if args.skip - set(SECTIONS):
        p.error(f"--skip: unknown section(s) {', '.join(sorted(args.skip - set(SECTIONS)))}")
    args.data_sizes = [int(v) for v in args.data_sizes.split(",") if v.strip()]
    args.data_workers = [int(v) for v in args.data_workers.split(",") if v.strip()]
    return args


def device_or_exit(smoke: bool) -> torch.device:
    if torch.cuda.is_available():
        return torch.device("cuda")
    if smoke:
        return torch.device("cpu")
    sys.exit(
        f"gpu_check: no CUDA device is available (torch {torch.__version__}, built for CUDA "
        f"{torch.version.cuda or 'none'}). Run it on a machine with an NVIDIA GPU, or pass --smoke "
        "for a tiny CPU run that only checks the script."
    )


def set_channels_last(det, on: bool) -> None:
    """Weights and the network's input in channels_last (NHWC) memory, or back to NCHW."""
    net = det.model.net
    fmt = torch.channels_last if on else torch.contiguous_format
    net.to(memory_format=fmt)
    handle = getattr(net, "_gpu_check_hook", None)
    if handle is not None:
        handle.remove()
        net._gpu_check_hook = None
    if on:
        net._gpu_check_hook = net.register_forward_pre_hook(
            lambda module, inputs: (inputs[0].contiguous(memory_format=torch.channels_last), *inputs[1:])
        )


MMSEG_FPS = 30.88
"""mmseg's published inference speed of SegFormer MIT-B2, ADE20K 512x512 160k (configs/segformer/README.md,
"Inf time (fps)" 30.88): tools/analysis_tools/benchmark.py, batch 1 (the test loader), fp32, the model's
predict mode (logits resized to the image, argmax) on ADE20K val images resized to a shorter side of 512,
mean over 200 images after 5 warm-up, cudnn.benchmark off; the README does not name the GPU."""


# -- section 1: in-memory data (the original check) -----------------------------------------------


def measure_synthetic(det, args, device, amp, run) -> None:
    from bench import SyntheticEdits, timed_train
    from gpu_data_path import NUMPY_NO_OVERLAP, eval_rate, parts_line

    from diffzoo.harness.core.train_config import TrainConfig
    from diffzoo.harness.data.labelmaps import DIFFSEG30K_LABELS

    results = run.results
    n_train = max(64, args.batch_size * 4)
    data = SyntheticEdits(DIFFSEG30K_LABELS, args.size, {"train": n_train, "val": args.eval_images}, pool=32)

    def train(steps: int, channels_last: bool):
        set_channels_last(det, channels_last)
        config = TrainConfig(iterations=args.warmup + steps, batch_size=args.batch_size, crop_size=args.size,
                             warmup_iters=args.warmup, pretrained=False, amp=True, num_workers=args.workers,
                             channels_last=channels_last)
        reset_peak(device)
        timing, log = timed_train(det, data, config, args.warmup)
        return timing, log, peak_mib(device)

    timing, log, peak = train(args.iterations, not args.no_channels_last)
    results.update(train_images_per_s=timing.images_per_s, train_peak_mib=peak,
                   train_loss=[log["first_loss"], log["final_loss"]])
    print(f"  train: {timing.images_per_s:.1f} images/s over {timing.timed_images} images, "
          f"loss {log['first_loss']:.3f} -> {log['final_loss']:.3f}", flush=True)
    if not args.no_channels_last:
        nchw, _, _ = train(max(2, args.iterations // 3), False)
        results["train_images_per_s_nchw"] = nchw.images_per_s
        results["channels_last_speedup"] = timing.images_per_s / nchw.images_per_s
        print(f"  train without channels_last: {nchw.images_per_s:.1f} images/s", flush=True)
        set_channels_last(det, True)

    reset_peak(device)
    warmup = min(5, args.eval_images - 1)
    with amp():
        ev = eval_rate(det, data, 0, False, None, warmup, split="val")
    results.update(eval_images_per_s=ev["images_per_s"], eval_peak_mib=peak_mib(device), eval_images=ev["evaluated"])
    timing = results["eval_timing"] = {"default": ev}
    print(f"  eval (harness.evaluate, batch 1, metrics included): {ev['images_per_s']:.1f} images/s "
          f"over {ev['evaluated']} images; {parts_line(ev)}", flush=True)
    what = "synthetic evaluation with metrics=numpy, overlap=False (the old way)"
    if device.type == "cuda" and run.affordable(what, 1.5 * ev["seconds"] * ev["evaluated"] / ev["timed_images"] + 5):
        with amp():
            old = run.attempt(what, lambda: eval_rate(det, data, 0, False, None, warmup, split="val",
                                                      config=NUMPY_NO_OVERLAP))
        if old is not None:
            timing["numpy_no_overlap"] = old
            print(f"  eval, metrics=numpy, overlap=False: {old['images_per_s']:.1f} images/s; {parts_line(old)}",
                  flush=True)
    results["inference_images_per_s"] = inference_rate(det, device, args.size, args.batch_size,
                                                       3 if args.smoke else 20, amp)
    # like for like with mmseg's 30.88 fps: batch 1, fp32 (no autocast), NCHW, 512 px, synchronised per image
    set_channels_last(det, False)
    results["inference_b1_fp32_images_per_s"] = inference_rate(det, device, args.size, 1,
                                                               3 if args.smoke else 200, nullcontext,
                                                               1 if args.smoke else 5)
    results["mmseg_published_fps"] = MMSEG_FPS


# -- section 2: the real data path ----------------------------------------------------------------


def note_reduced_data_path(args, run) -> None:
    """What a full run's data path measures that this one leaves out."""
    why = "--smoke: tiny stand-ins on CPU" if args.smoke else "not asked for (--data-sizes / --data-workers)"
    full_sizes = [int(v) for v in FULL["data_sizes"].split(",")]
    full_workers = [int(v) for v in FULL["data_workers"].split(",")]
    missing = [s for s in full_sizes if s not in args.data_sizes]
    if missing:
        run.skip(f"data path at {' and '.join(f'{s} px' for s in missing)} (the paper input, DiffSeg30k's size)",
                 f"{why}: {', '.join(f'{s} px' for s in args.data_sizes)} instead")
    missing = [w for w in full_workers if w not in args.data_workers]
    if missing:
        run.skip(f"data path with {', '.join(map(str, missing))} loader worker(s)",
                 f"{why}: workers {', '.join(map(str, args.data_workers))} only")


def measure_data(det, args, device, run) -> None:
    from gpu_data_path import DataPathPlan, measure_data_path, per_image_s

    from diffzoo.harness.core.train_config import TrainConfig
    from diffzoo.harness.data.labelmaps import DIFFSEG30K_LABELS

    note_reduced_data_path(args, run)
    set_channels_last(det, False)  # as a run evaluates: NCHW, fp32 (the trainer sets its own layout)

    def train_config(workers: int) -> TrainConfig:  # TrainConfig's defaults otherwise, as `diffzoo train`
        return TrainConfig(iterations=args.data_warmup + args.data_steps, batch_size=args.batch_size,
                           crop_size=args.size, warmup_iters=args.data_warmup, pretrained=False, amp=True,
                           num_workers=workers, recipe=args.recipe)

    results = run.results
    plan = DataPathPlan(
        args.data_sizes, args.data_workers, args.data_train_images, args.data_val_images, args.data_warmup,
        args.data_steps, train_config, short_side=args.size if args.recipe == "paper" else None,
        pin_memory=device.type == "cuda", margin_s=0.0 if args.smoke else 10.0, compare=device.type == "cuda",
        train_s=per_image_s(results.get("train_images_per_s_nchw") or results.get("train_images_per_s"), 0.05),
        eval_s=per_image_s(results.get("eval_images_per_s"), 0.05))
    tmp = Path(tempfile.mkdtemp(prefix="gpu-check-png-"))
    try:
        out = measure_data_path(det, run, plan, tmp, DIFFSEG30K_LABELS.names)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out.update(recipe=args.recipe, crop_size=args.size, batch_size=args.batch_size, detector=args.detector,
               precision_train="bf16 autocast" if device.type == "cuda" else "fp32",
               precision_eval="fp32 (as diffzoo run evaluates)", layout="NCHW (TrainConfig's default)",
               eval_input=f"shorter side {args.size}" if args.recipe == "paper" else "as stored",
               data_wait="share of the timed window spent blocked in next() of the loop's batch / image iterator")


# -- section 3: IMDL-BenCo's detectors ------------------------------------------------------------


def measure_benco_model(name: str, args, device) -> dict:
    from bench import SyntheticEdits
    from gpu_data_path import train_rate

    from diffzoo import create_detector
    from diffzoo.harness.core.plugins import get_registry
    from diffzoo.harness.core.train_config import TrainConfig
    from diffzoo.harness.core.types import BINARY
    from diffzoo.harness.data.labelmaps import DIFFSEG30K_LABELS

    card = get_registry().get("detector", name).card
    recipe = {k: v.value for k, v in card.recipe.items()}
    size, warmup = card.input_size, 1 if args.smoke else 2
    batch = min(args.batch_size, int(recipe.get("batch_size", args.batch_size)))
    start = time.perf_counter()
    torch.manual_seed(0)
    det = create_detector(name, "binary", BINARY, pretrained=False).to(device)
    build_s = time.perf_counter() - start
    config = TrainConfig.from_recipe(recipe, iterations=warmup + args.benco_steps, batch_size=batch, crop_size=size,
                                     warmup_iters=1, pretrained=False, num_workers=args.workers)
    data = SyntheticEdits(DIFFSEG30K_LABELS, size, {"train": max(8, 2 * batch)}, pool=8)
    reset_peak(device)
    train, _ = train_rate(det, data, config, warmup)
    peak = peak_mib(device)
    infer = inference_rate(det, device, size, 1, 2 * args.benco_steps, nullcontext, warmup)
    return {"input_size": size, "batch_size": batch, "amp": bool(config.amp and device.type == "cuda"),
            "params_m": round(sum(p.numel() for p in det.net.parameters()) / 1e6, 2), "build_s": round(build_s, 2),
            "train_images_per_s": train["images_per_s"], "train_data_wait_share": train["data_wait_share"],
            "train_peak_mib": peak, "inference_b1_fp32_images_per_s": infer}


def benco_names(pattern: str) -> list[str]:
    from diffzoo.harness.core.plugins import get_registry

    entries = get_registry().expand("detector", pattern)
    explicit = any(part.strip().endswith(".tiny") for part in pattern.split(","))
    return [e.name for e in entries if e.name.startswith("benco.") and (explicit or not e.name.endswith(".tiny"))]


def measure_benco(args, device, run) -> None:
    from diffzoo.plugins.benco.specs import installed

    what = "IMDL-BenCo detectors (benco.*): training step and inference speed"
    if not installed():
        run.results["benco"] = {"status": "not measured: imdlbenco not installed (scripts/install-benco.sh)"}
        run.skip(what, "imdlbenco not installed (scripts/install-benco.sh)")
        return
    names = benco_names(args.benco)
    out = run.results["benco"] = {
        "status": "measured", "cards": args.benco, "models": {},
        "data": "in-memory synthetic edits at each model's input size (its recipe's crop), binary task",
        "batch": f"min(--batch-size {args.batch_size}, the card's recipe batch)",
        "train": "det.fit (the shared trainer), bf16 autocast on CUDA where the card's recipe has amp",
        "inference": "det.predict at batch 1, fp32, synchronised per image (as a run evaluates)"}
    if args.smoke:
        run.skip("IMDL-BenCo's full-size detectors", f"--smoke measures {args.benco} only, on CPU")
    longest = 0.0
    with random_weight_files(run, names):
        for name in names:
            if not run.affordable(f"{name}: training step and inference speed", max(30.0, 1.2 * longest)
                                  if not args.smoke else 0.0):
                continue
            start = time.perf_counter()
            got = run.attempt(f"{name}: training step and inference speed",
                              functools.partial(measure_benco_model, name, args, device))
            longest = max(longest, time.perf_counter() - start)
            gc.collect()
            if device.type == "cuda":
                torch.cuda.empty_cache()
            if got is not None:
                out["models"][name] = got
                print(f"  {name}: train {got['train_images_per_s']:.2f} images/s (batch {got['batch_size']}, "
                      f"{got['input_size']} px), predict {got['inference_b1_fp32_images_per_s']:.2f} images/s",
                      flush=True)
            run.save()


# -- the report -----------------------------------------------------------------------------------


def main() -> None:
    args = parse()
    device = device_or_exit(args.smoke)
    from bench import report
    from gpu_data_path import EVAL_TIMING_NOTE, Run, figures, print_summary

    from diffzoo import create_detector
    from diffzoo.harness.core.types import BINARY
    from diffzoo.harness.data.labelmaps import DIFFSEG30K_LABELS

    run = Run(args.budget, args.json, time.perf_counter())
    labels = DIFFSEG30K_LABELS if args.task == "semantic" else BINARY
    torch.manual_seed(0)
    det = create_detector(args.detector, args.task, labels, pretrained=False).to(device)
    params = sum(p.numel() for p in det.model.parameters())
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu"
    amp_on = device.type == "cuda"
    amp = (lambda: torch.autocast("cuda", dtype=torch.bfloat16)) if amp_on else nullcontext
    layout = "NCHW" if args.no_channels_last else "channels_last"
    print(f"gpu_check: {args.detector} [{args.task}] {params / 1e6:.1f} M params, random init, on {name}; "
          f"{args.size}x{args.size}, batch {args.batch_size}, {args.iterations}+{args.warmup} steps, "
          f"bf16 autocast {'on' if amp_on else 'off (CPU)'}, {layout}; budget {args.budget:.0f} s", flush=True)
    run.results.update({"device": name, "torch": torch.__version__, "detector": args.detector, "task": args.task,
                        "params_m": round(params / 1e6, 2), "size": args.size, "batch_size": args.batch_size,
                        "bf16_autocast": amp_on, "layout": layout, "smoke": args.smoke,
                        "eval_timing_note": EVAL_TIMING_NOTE})
    if device.type != "cuda":
        run.skip("GPU figures: bf16 autocast, channels_last on CUDA, peak GPU memory, pinned-memory copies",
                 "no CUDA device: --smoke runs on CPU and checks the script only")
        run.skip("evaluation with metrics=numpy, overlap=False (the old way) beside the default",
                 "no CUDA device: on the CPU the default is that already (metrics auto = numpy, no overlap)")
    sections = {"metrics": lambda: run.results.update(device_metrics=check_device_metrics(
                    device, (64,) if args.smoke else (512, 1024))),
                "synthetic": lambda: measure_synthetic(det, args, device, amp, run),
                "data": lambda: measure_data(det, args, device, run),
                "benco": lambda: measure_benco(args, device, run)}
    stopped = run_sections(run, sections, args.skip)
    run.results["wall_s"] = time.perf_counter() - run.started
    print_summary(run.results, args)
    run.results["figures"] = figures(run.results, args)
    report(run.results, args.json)
    if stopped:
        sys.exit(128 + stopped)


def run_sections(run, sections: dict, skip: set[str]) -> int | None:
    """Each section not in ``skip``, timed (``section_s``); the JSON so far saved after each.
    Returns the signal number when SIGTERM stopped the run (what is left is then not measured)."""
    from gpu_data_path import Stopped, stop_on_sigterm

    stop_on_sigterm()
    seconds = run.results["section_s"] = {"start-up": round(time.perf_counter() - run.started, 1)}
    for section, measure in sections.items():
        start = time.perf_counter()
        try:
            if section in skip:
                run.skip(f"section {section}", "--skip")
            else:
                run.attempt(f"section {section}", measure)
        except Stopped as stop:
            run.skip(f"section {section} from where it was, and the sections after it",
                     f"stopped by signal {stop.signum} (gpu_check.sh's GPU_CHECK_TIMEOUT?)")
            return stop.signum
        finally:
            seconds[section] = round(time.perf_counter() - start, 1)
            run.save()
    return None


if __name__ == "__main__":
    main()
