"""GPU check: train SegFormer-B2 briefly at 512x512 (bf16 autocast, channels_last),
evaluate a few hundred synthetic images, print throughput and peak memory.

Inference is timed twice: at the training batch under bf16 autocast (this
harness's throughput), and like for like with mmseg's published 30.88 fps
for SegFormer-B2 512x512 (:data:`MMSEG_FPS`): batch 1, fp32, NCHW, 512x512,
synchronised per image, 200 images after 5 warm-up.  Training images/s are
at batch 16, the recipe's total batch (mmseg's 8 GPUs x 2); mmseg publishes
no training speed to set them against.

    bash benchmarks/gpu_check.sh            # on a CUDA machine; a few minutes on one H200
    bash benchmarks/gpu_check.sh --smoke    # tiny settings on CPU, to check the script itself

No network is needed: the model starts from random weights (pretrained
weights cannot be downloaded there), the data are synthetic and in memory.
Training goes through the detector's ``fit`` (the shared trainer, which runs
bf16 autocast on CUDA, and channels_last through ``TrainConfig.channels_last``);
for evaluation and inference channels_last is applied here to the network
and its input.  A second, shorter
training pass without channels_last gives the layout's speed ratio measured
in the same run.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from contextlib import nullcontext

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import torch  # noqa: E402

FULL = {"size": 512, "batch_size": 16, "iterations": 150, "warmup": 15, "eval_images": 300, "workers": 8}
SMOKE = {"size": 64, "batch_size": 2, "iterations": 3, "warmup": 1, "eval_images": 6, "workers": 0}


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
    p.add_argument("--workers", type=int, help="DataLoader workers for training (8; smoke 0)")
    p.add_argument("--no-channels-last", action="store_true", help="train and evaluate in NCHW only")
    p.add_argument("--json", help="also write the results to this file")
    args = p.parse_args()
    for key, value in (SMOKE if args.smoke else FULL).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
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


def peak_mib(device: torch.device) -> float | None:
    return torch.cuda.max_memory_allocated(device) / 2**20 if device.type == "cuda" else None


def reset_peak(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


MMSEG_FPS = 30.88
"""mmseg's published inference speed of SegFormer MIT-B2, ADE20K 512x512 160k (configs/segformer/README.md,
"Inf time (fps)" 30.88): tools/analysis_tools/benchmark.py, batch 1 (the test loader), fp32, the model's
predict mode (logits resized to the image, argmax) on ADE20K val images resized to a shorter side of 512,
mean over 200 images after 5 warm-up, cudnn.benchmark off; the README does not name the GPU."""


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@torch.no_grad()
def inference_rate(det, device, size: int, batch: int, steps: int, amp, warmup: int = 5) -> float:
    """Forward passes only (``det.predict`` on a batch of ``batch``, logits at the
    input size), each synchronised: images/s after ``warmup`` untimed passes."""
    x = torch.rand(batch, 3, size, size, device=device)
    with amp():
        for _ in range(warmup):
            det.predict(x)
        sync(device)
        start = time.perf_counter()
        for _ in range(steps):
            out = det.predict(x)
            out.mask_logits.argmax(1)
            sync(device)
    return batch * steps / (time.perf_counter() - start)


def main() -> None:
    args = parse()
    device = device_or_exit(args.smoke)
    from bench import SyntheticEdits, report, timed_eval, timed_train

    from diffzoo import create_detector
    from diffzoo.harness.data.labelmaps import DIFFSEG30K_LABELS
    from diffzoo.harness.core.train_config import TrainConfig
    from diffzoo.harness.core.types import BINARY

    started = time.perf_counter()
    labels = DIFFSEG30K_LABELS if args.task == "semantic" else BINARY
    n_train = max(64, args.batch_size * 4)
    data = SyntheticEdits(DIFFSEG30K_LABELS, args.size, {"train": n_train, "val": args.eval_images}, pool=32)
    torch.manual_seed(0)
    det = create_detector(args.detector, args.task, labels, pretrained=False).to(device)
    params = sum(p.numel() for p in det.model.parameters())
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu"
    amp_on = device.type == "cuda"
    amp = (lambda: torch.autocast("cuda", dtype=torch.bfloat16)) if amp_on else nullcontext
    layout = "NCHW" if args.no_channels_last else "channels_last"
    precision = "bf16" if amp_on else "fp32"
    print(f"gpu_check: {args.detector} [{args.task}] {params / 1e6:.1f} M params, random init, on {name}; "
          f"{args.size}x{args.size}, batch {args.batch_size}, {args.iterations}+{args.warmup} steps, "
          f"bf16 autocast {'on' if amp_on else 'off (CPU)'}, {layout}", flush=True)

    def train(steps: int, channels_last: bool):
        set_channels_last(det, channels_last)
        config = TrainConfig(iterations=args.warmup + steps, batch_size=args.batch_size, crop_size=args.size,
                             warmup_iters=args.warmup, pretrained=False, amp=True, num_workers=args.workers,
                             channels_last=channels_last)
        reset_peak(device)
        timing, log = timed_train(det, data, config, args.warmup)
        return timing, log, peak_mib(device)

    results: dict = {"device": name, "torch": torch.__version__, "detector": args.detector, "task": args.task,
                     "params_m": round(params / 1e6, 2), "size": args.size, "batch_size": args.batch_size,
                     "bf16_autocast": amp_on, "layout": layout, "smoke": args.smoke}
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
    with amp():
        ev, result = timed_eval(det, data, "val", warmup=min(5, args.eval_images - 1))
    results.update(eval_images_per_s=ev.images_per_s, eval_peak_mib=peak_mib(device), eval_images=result.evaluated)
    print(f"  eval (harness.evaluate, batch 1, metrics included): {ev.images_per_s:.1f} images/s "
          f"over {result.evaluated} images", flush=True)
    results["inference_images_per_s"] = inference_rate(det, device, args.size, args.batch_size,
                                                       3 if args.smoke else 20, amp)
    # like for like with mmseg's 30.88 fps: batch 1, fp32 (no autocast), NCHW, 512 px, synchronised per image
    set_channels_last(det, False)
    results["inference_b1_fp32_images_per_s"] = inference_rate(det, device, args.size, 1,
                                                               3 if args.smoke else 200, nullcontext,
                                                               1 if args.smoke else 5)
    results["mmseg_published_fps"] = MMSEG_FPS
    results["wall_s"] = time.perf_counter() - started

    def mib(v):
        return "-" if v is None else f"{v:,.0f} MiB"

    rows = [("train images/s", f"{results['train_images_per_s']:.1f}")]
    if "channels_last_speedup" in results:
        rows.append(("  x vs NCHW (same run)", f"{results['channels_last_speedup']:.2f}"))
    rows += [
        ("eval images/s (batch 1, metrics)", f"{results['eval_images_per_s']:.1f}"),
        (f"inference images/s (batch {args.batch_size}, {precision})", f"{results['inference_images_per_s']:.1f}"),
        ("inference images/s (batch 1, fp32)", f"{results['inference_b1_fp32_images_per_s']:.1f}"),
        ("  mmseg published (batch 1, fp32)", f"{MMSEG_FPS:.2f}"),
        ("peak memory train / eval", f"{mib(results['train_peak_mib'])} / {mib(results['eval_peak_mib'])}"),
        ("wall time", f"{results['wall_s']:.0f} s"),
    ]
    print()
    for label, value in rows:
        print(f"  {label:<34}{value:>22}")
    from bench import figure

    results["figures"] = [
        figure(f"train img/s (batch {args.batch_size}, {precision})", results["train_images_per_s"], unit="img/s"),
        figure("inference img/s (batch 1, fp32)", results["inference_b1_fp32_images_per_s"], unit="img/s"),
        figure("x mmseg's 30.88 fps (batch 1, fp32)", results["inference_b1_fp32_images_per_s"] / MMSEG_FPS),
        figure("peak train MiB", results["train_peak_mib"], unit="MiB"),
    ]
    report(results, args.json)


if __name__ == "__main__":
    main()
