"""Training throughput of registered detectors at the demo size, on this machine.

    python benchmarks/train_throughput.py                 # tiny cards + each family's default card
    python benchmarks/train_throughput.py --detectors 'segformer.*,fcn8s' --size 128
    python benchmarks/train_throughput.py --detectors 'benco.*' --batch-size 2 --random-weight-files

Every detector starts from random weights (no downloads) and trains through
its own ``fit`` (the shared trainer for segmenters) on synthetic 64 px images,
the size of the ``mini`` demo.  Prints steady-state images/s (warm-up steps
excluded) and the ratio to SegFormer-B2 measured in the same run, and the wall
time of the whole ``fit``, which also holds one-time work such as
UniversalFakeDetect's pass that extracts frozen CLIP features of every
training image.  ``--random-weight-files``: the IMDL-BenCo models whose
constructor needs a weight file (TruFor, SPAN, MSCDI-Net, MVSS-Net) are built
from random files of the right shapes, written into a temporary cache.  A
benchmark, not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from bench import SyntheticEdits, timed_train  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.markup import escape  # noqa: E402
from rich.table import Table  # noqa: E402

from diffzoo import DiffzooError, create_detector  # noqa: E402
from diffzoo.harness.core.device import resolve_device  # noqa: E402
from diffzoo.harness.core.plugins import get_registry  # noqa: E402
from diffzoo.harness.core.train_config import TrainConfig
from diffzoo.harness.core.types import BINARY  # noqa: E402
from diffzoo.harness.data.labelmaps import DIFFSEG30K_LABELS  # noqa: E402

REFERENCE = "segformer.b2"


def detector_names(spec: str | None) -> list[str]:
    """``spec``'s detectors (default: every ``*.tiny`` card and every family's
    default card), with the reference added so that ratios exist."""
    registry = get_registry()
    if spec:
        names = [e.name for e in registry.expand("detector", spec)]
    else:
        names = [e.name for e in registry.list("detector") if e.default or e.name.endswith(".tiny")]
    return names if REFERENCE in names else [REFERENCE, *names]


def random_weight_files() -> None:
    """A temporary $DIFFZOO_CACHE and torch hub cache holding random weight files for every
    IMDL-BenCo model that needs one (tests/helpers/benco_weights.py)."""
    import tempfile

    from bench import test_helper

    from diffzoo.plugins.benco.specs import SPECS

    root = tempfile.mkdtemp(prefix="diffzoo-bench-weights-")
    os.environ["DIFFZOO_CACHE"] = os.path.join(root, "cache")
    torch.hub.set_dir(os.path.join(root, "hub"))
    for spec in SPECS:
        if any(w.required for w in spec.weights):
            test_helper("benco_weights").write_random_weights(spec.key)


def measure(name: str, args, device: torch.device, dataset: SyntheticEdits) -> dict:
    card = get_registry().get("detector", name).card
    task = args.task if args.task in card.tasks else card.tasks[0]
    torch.manual_seed(0)
    det = create_detector(name, task, DIFFSEG30K_LABELS if task == "semantic" else BINARY, pretrained=False)
    det.to(device)
    module = getattr(det, "model", None) or getattr(det, "net", None)
    params = sum(p.numel() for p in module.parameters()) if module is not None else None
    config = TrainConfig(iterations=args.warmup + args.iterations, batch_size=args.batch_size, crop_size=args.size,
                         warmup_iters=1, pretrained=False, num_workers=args.workers)
    start = time.perf_counter()
    timing, _ = timed_train(det, dataset, config, args.warmup)
    return {"task": task, "params": params, "ips": timing.images_per_s, "fit_s": time.perf_counter() - start}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--detectors", help="comma-separated names or wildcards (default: tiny + default cards)")
    parser.add_argument("--size", type=int, default=64, help="square training crop (default: the demo's 64 px)")
    parser.add_argument("--batch-size", type=int, default=8, help="default: the demo's 8")
    parser.add_argument("--iterations", type=int, default=10, help="timed steps per detector")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    parser.add_argument("--task", default="binary", help="binary or semantic (if the card supports it)")
    parser.add_argument("--workers", type=int, default=0, help="DataLoader workers")
    parser.add_argument("--train-images", type=int, default=64, help="size of the synthetic training split")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--random-weight-files", action="store_true",
                        help="build IMDL-BenCo models that need weight files from random ones (a temporary cache)")
    args = parser.parse_args()
    if args.random_weight_files:
        random_weight_files()

    console = Console(width=None if sys.stdout.isatty() else 120)
    device = resolve_device(args.device)
    try:
        names = detector_names(args.detectors)
    except DiffzooError as exc:
        sys.exit(f"error: {exc}")
    dataset = SyntheticEdits(DIFFSEG30K_LABELS, args.size, {"train": args.train_images})
    console.print(f"training throughput on {device} ({torch.get_num_threads()} CPU threads), "
                  f"{args.size} px crops, batch {args.batch_size}, {args.iterations} timed steps, random init")
    results: dict[str, dict] = {}
    for name in names:
        start = time.perf_counter()
        try:
            results[name] = measure(name, args, device, dataset)
        except Exception as exc:  # a benchmark reports a broken detector and goes on
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
        console.print(f"  {name}: done in {time.perf_counter() - start:.1f} s", highlight=False)

    ref = results.get(REFERENCE, {}).get("ips")
    table = Table(title=f"training images/s at {args.size} px on {device}")
    for col in ("detector", "task", "params (M)", "images/s", "s / step", f"x {REFERENCE}", "fit wall s"):
        table.add_column(col, justify="left" if col in ("detector", "task") else "right", no_wrap=col == "detector")
    for name, r in results.items():
        if "error" in r:
            table.add_row(name, "", "", f"[red]failed[/]: {escape(r['error'][:80])}", "", "", "")
            continue
        params = f"{r['params'] / 1e6:.2f}" if r["params"] is not None else "?"
        ratio = f"{r['ips'] / ref:.2f}" if ref else "-"
        table.add_row(name, r["task"], params, f"{r['ips']:.1f}", f"{args.batch_size / r['ips']:.2f}", ratio,
                      f"{r['fit_s']:.1f}")
    console.print(table)


if __name__ == "__main__":
    main()
