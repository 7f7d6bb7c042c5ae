"""A training step through the harness (``det.fit``) against a bare loop, per native detector.

    python benchmarks/train_overhead.py
    python benchmarks/train_overhead.py --detectors 'segformer.tiny,cnnspot.tiny' --steps 16 --rounds 7

Every ``*.tiny`` card by default, random init, the ``mini`` demo's settings
(64 px crops, batch 8), task ``binary`` (classifiers: ``classification``),
the card's optimizer, learning rate and weight decay.

- harness: ``det.fit`` on a synthetic in-memory split (the shared trainer:
  DataLoader, crops and flips, CNNSpot's blur/JPEG augmentation, the loss,
  the optimizer and lr schedule), steady-state seconds per step from the
  trainer's per-step callback, ``--warmup`` steps left out;
- bare: the same network (``det.model``), the same loss function, a plain
  torch optimizer of the card's kind and lr, on batches built in memory
  before the clock starts; ``forward, loss, zero_grad, backward, step``.

Both train the whole network the harness trains.  UniversalFakeDetect's
``fit`` trains only its linear probe, on CLIP features it extracts once
before the first step; its rows are: fit's probe step against a bare probe
step on the same features, fit's feature extraction (images/s), and the
whole model's step (CLIP backbone forward, frozen, + probe forward, backward
and step), which no harness code runs but a per-step cost of UFD is.

Rounds are interleaved (harness and bare alternately first); printed are
images/s of each (median) and the median of the per-round ratios
harness / bare of the step time.  A benchmark, not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from bench import SyntheticEdits, add_common_args, figure, interleaved, median_ratio, report, setup  # noqa: E402

from diffzoo import create_detector  # noqa: E402
from diffzoo.harness.core.plugins import get_registry  # noqa: E402
from diffzoo.harness.core.train_config import TrainConfig  # noqa: E402
from diffzoo.harness.core.types import BINARY  # noqa: E402
from diffzoo.harness.data.labelmaps import DIFFSEG30K_LABELS  # noqa: E402
from diffzoo.harness.models.classifier import bce_loss  # noqa: E402
from diffzoo.harness.models.trainer import segmentation_loss  # noqa: E402


def card_config(card, args, steps: int) -> TrainConfig:
    recipe = {k: v.value for k, v in card.recipe.items()}
    return TrainConfig.from_recipe(recipe, iterations=args.warmup + steps, batch_size=args.batch_size,
                                   crop_size=args.size, warmup_iters=1, pretrained=False, num_workers=0)


def optimizer(params, cfg: TrainConfig) -> torch.optim.Optimizer:
    params = [p for p in params if p.requires_grad]
    if cfg.optimizer == "SGD":
        return torch.optim.SGD(params, lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)
    return torch.optim.AdamW(params, lr=cfg.lr, betas=cfg.betas, weight_decay=cfg.weight_decay)


def batches(n: int, batch: int, size: int, classifier: bool) -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(0)
    out = []
    for _ in range(n):
        x = torch.rand(batch, 3, size, size, generator=g)
        y = torch.randint(0, 2, (batch,) if classifier else (batch, size, size), generator=g)
        out.append((x, y.float() if classifier else y))
    return out


def bare_steps(model, loss_fn, opt, data, warmup: int) -> float:
    """Seconds per step over ``data`` after ``warmup`` untimed steps."""
    model.train()
    start = 0.0
    for i, (x, y) in enumerate(data):
        if i == warmup:
            start = time.perf_counter()
        loss = loss_fn(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    model.eval()
    return (time.perf_counter() - start) / (len(data) - warmup)


def harness_step(det, dataset, cfg: TrainConfig, warmup: int, walls: list[float] | None = None) -> float:
    from diffzoo.harness.models.segmenter import TrainData

    stamps: list[float] = []
    start = time.perf_counter()
    det.fit(TrainData(dataset, dataset.ids("train")), cfg,
            progress=lambda step, loss: stamps.append(time.perf_counter()))
    if walls is not None:
        walls.append(stamps[0] - start)  # setup, and UFD's feature extraction, before the first step ends
    return (stamps[-1] - stamps[warmup - 1]) / (len(stamps) - warmup)


def measure(name: str, args, dataset) -> dict:
    card = get_registry().get("detector", name).card
    classifier = card.tasks == ("classification",)
    task = "classification" if classifier else "binary"
    torch.manual_seed(0)
    det = create_detector(name, task, BINARY, pretrained=False)
    cfg = card_config(card, args, args.steps)
    data = batches(args.warmup + args.steps, args.batch_size, args.size, classifier)
    ufd = hasattr(det.model, "probe") and hasattr(det.model, "embed")
    row: dict = {"task": task, "optimizer": cfg.optimizer, "lr": cfg.lr,
                 "params": sum(p.numel() for p in det.model.parameters())}
    walls: list[float] = []
    if ufd:  # fit trains the probe on features; the bare loop does the same on features of the same batches
        with torch.no_grad():
            feats = [(det.model.embed(det.model.prepare(x)), y) for x, y in data]
        model, loss_fn = det.model.probe, bce_loss
        whole = optimizer(det.model.probe.parameters(), cfg)
        candidates = {"harness": lambda r: harness_step(det, dataset, cfg, args.warmup, walls),
                      "bare": lambda r: bare_steps(model, loss_fn, probe_opt, feats, args.warmup),
                      "whole": lambda r: bare_steps(det.model, bce_loss, whole, data, args.warmup)}
        probe_opt = optimizer(model.parameters(), cfg)
    else:
        loss_fn = bce_loss if classifier else (lambda logits, y: segmentation_loss(logits, y, "binary"))
        opt = optimizer(det.model.parameters(), cfg)
        candidates = {"harness": lambda r: harness_step(det, dataset, cfg, args.warmup, walls),
                      "bare": lambda r: bare_steps(det.model, loss_fn, opt, data, args.warmup)}
    for fn in candidates.values():  # warm-up of each
        fn(-1)
    walls.clear()
    times = interleaved(candidates, args.rounds)
    b = args.batch_size
    row.update({f"{k}_images_per_s": b / statistics.median(v) for k, v in times.items()})
    row["ratio"] = median_ratio(times["harness"], times["bare"])
    row["seconds_per_step_rounds"] = {k: [round(x, 5) for x in v] for k, v in times.items()}
    if ufd:
        extract = [w - s for w, s in zip(walls, times["harness"])]  # before step 1 ended, less one step
        row["fit_feature_images_per_s"] = len(dataset.ids("train")) / statistics.median(extract)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--detectors", help="comma-separated names or wildcards (default: every *.tiny card)")
    parser.add_argument("--size", type=int, default=64, help="square crop (default: the demo's 64 px)")
    parser.add_argument("--batch-size", type=int, default=8, help="default: the demo's 8")
    parser.add_argument("--steps", type=int, default=10, help="timed steps per round (default 10)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first in each round (default 2)")
    parser.add_argument("--train-images", type=int, default=64, help="synthetic training images (default 64)")
    add_common_args(parser)
    args = parser.parse_args()
    setup(parser, args)
    if args.quick:
        args.steps = min(args.steps, 4)
    registry = get_registry()
    names = ([e.name for e in registry.expand("detector", args.detectors)] if args.detectors
             else [e.name for e in registry.list("detector") if e.name.endswith(".tiny")])
    dataset = SyntheticEdits(DIFFSEG30K_LABELS, args.size, {"train": args.train_images})
    print(f"training step, harness (det.fit) vs bare loop: {args.size} px, batch {args.batch_size}, {args.steps} "
          f"timed steps x {args.rounds} interleaved rounds, {torch.get_num_threads()} torch thread(s), random init")
    rows: dict[str, dict] = {}
    for name in names:
        try:
            rows[name] = measure(name, args, dataset)
        except Exception as exc:  # a benchmark reports a broken detector and goes on
            rows[name] = {"error": f"{type(exc).__name__}: {exc}"}
        print(f"  {name}: done", flush=True)
    figures = []
    print(f"  {'detector':<24}{'harness img/s':>14}{'bare img/s':>12}{'harness/bare':>14}  notes")
    for name, r in rows.items():
        if "error" in r:
            print(f"  {name:<24}failed: {r['error'][:90]}")
            figures.append(figure(f"{name}: failed", None))
            continue
        note = ""
        if "whole_images_per_s" in r:
            note = (f"probe on cached features; whole model {r['whole_images_per_s']:.0f} img/s, "
                    f"fit's feature extraction {r['fit_feature_images_per_s']:.0f} img/s")
        print(f"  {name:<24}{r['harness_images_per_s']:>14.1f}{r['bare_images_per_s']:>12.1f}"
              f"{r['ratio']:>14.3f}  {note}")
        figures.append(figure(f"{name}: step harness/bare", r["ratio"]))
        if "whole_images_per_s" in r:
            figures.append(figure(f"{name}: whole-model step img/s", r["whole_images_per_s"], unit="img/s"))
    report({"benchmark": "train_overhead", "size": args.size, "batch_size": args.batch_size, "steps": args.steps,
            "warmup": args.warmup, "rounds": args.rounds, "detectors": rows, "figures": figures}, args.json)


if __name__ == "__main__":
    main()
