"""diffzoo's native segmenters against the MMSeg backend's builds of the same models.

    python benchmarks/mmseg_parity.py                     # 128 px, batch 2, 5 interleaved rounds
    python benchmarks/mmseg_parity.py --quick             # 64 px, fewer steps
    python benchmarks/mmseg_parity.py --train-demo        # + train each pair alike and score it
    python benchmarks/mmseg_parity.py --train-demo --demo-only --demo-iterations 20   # the demo alone

Pairs (native vs mmseg; docs/mmseg.md says how they differ):

- ``segformer.b2`` vs ``mmseg.segformer-b2``: the same design (MiT-B2 + the
  all-MLP head); mmseg's head is 256 wide (native 768) with BN + ReLU per stage;
  a second row builds the native one with mmseg's head width (256), so that
  both have the same shapes (the model tests/test_mmseg_parity.py compares);
- ``deeplabv3plus.r50`` vs ``mmseg.deeplabv3plus-r50``: the same design,
  different details (ResNet-50 vs ResNetV1c, a 256- vs 512-wide ASPP; mmseg
  also trains an auxiliary FCN head);
- ``fcn8s.vgg16`` vs ``mmseg.fcn-r50``: different architectures that share
  a name (VGG-16 FCN-8s vs a dilated ResNet-50 with an FCN head).

For each pair, random init, task ``binary``: parameters (mmseg's auxiliary
head, used only in training, apart), the network's output shape on a
``--size`` input (the head's resolution; ``predict`` resizes to the input),
and two ratios native / mmseg, each the median over interleaved rounds
measured in this run (goal <= 1.0: native no slower):

- training step: ``--steps`` steps of forward (mmseg: with its auxiliary
  head, as it trains), diffzoo's loss, backward and the recipe's optimizer
  step on batches built before the clock starts;
- inference: ``--steps`` calls of ``det.predict`` under ``inference_mode``.

``--train-demo``: each model of a pair trained with the same recipe (the
mmseg card's, with the dataset's demo overrides), seed and data, then scored
on the held-out split: ``mini`` when it is built (``diffzoo data build
mini``), else a DiffSeg30k-layout folder of PNG files the script writes.
A benchmark, not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from bench import add_common_args, figure, interleaved, median_ratio, report, setup, timed, write_png_dataset  # noqa: E402

from diffzoo import DetectorBuild, create_detector, open_dataset  # noqa: E402
from diffzoo.harness.core.plugins import get_registry  # noqa: E402
from diffzoo.harness.core.types import BINARY  # noqa: E402
from diffzoo.harness.data.labelmaps import DIFFSEG30K_LABELS  # noqa: E402
from diffzoo.harness.models.trainer import make_optimizer, segmentation_loss  # noqa: E402

PAIRS = (  # key, native card, its arch changes, mmseg card, note
    ("segformer-b2", "segformer.b2", {}, "mmseg.segformer-b2",
     "same design; mmseg's head 256 wide (native 768), BN+ReLU per stage"),
    ("segformer-b2-head256", "segformer.b2", {"decoder_hidden_size": 256}, "mmseg.segformer-b2",
     "native built with mmseg's head width: the same shapes (tests/test_mmseg_parity.py)"),
    ("deeplabv3plus-r50", "deeplabv3plus.r50", {}, "mmseg.deeplabv3plus-r50",
     "same design; ResNet-50 vs ResNetV1c, ASPP 256 vs 512 wide, mmseg + auxiliary head"),
    ("fcn", "fcn8s.vgg16", {}, "mmseg.fcn-r50",
     "different architectures: VGG-16 FCN-8s vs dilated ResNet-50 + FCN head"),
)
DEMO = {"iterations": 30, "batch_size": 4, "crop_size": 64, "lr_scale": 10.0, "warmup_iters": 5}
"""--train-demo's schedule on the PNG fixture (``mini`` brings its own overrides; --demo-iterations wins)."""
DEMO_METRICS = ("mIoU", "F1", "pixel_AUC")


def card(name: str):
    return get_registry().get("detector", name).card


def build(name: str, arch: dict, seed: int = 0):
    """Detector ``name`` (binary, random init), its card's arch updated with ``arch``."""
    entry = get_registry().get("detector", name)
    torch.manual_seed(seed)
    if not arch:
        return create_detector(name, "binary", BINARY, pretrained=False)
    changed = dataclasses.replace(entry.card, arch={**entry.card.arch, **arch})
    return entry.load()(DetectorBuild(changed, "binary", BINARY, pretrained=False))


def params(det) -> tuple[int, int]:
    """(parameters, of which in auxiliary heads: training only)."""
    named = list(det.model.named_parameters())
    return sum(p.numel() for _, p in named), sum(p.numel() for n, p in named if ".auxiliary_head." in n)


def train_steps(det, opt, batches) -> float:
    """Seconds for the steps over ``batches``: forward, loss, zero_grad, backward, step."""
    det.model.train()

    def run():
        for x, y in batches:
            loss = segmentation_loss(det.model(x), y, "binary")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

    seconds = timed(run)
    det.model.eval()
    return seconds


def infer_steps(det, batches) -> float:
    def run():
        with torch.inference_mode():
            for x, _ in batches:
                det.predict(x)

    return timed(run)


def measure(native_name: str, arch: dict, mmseg_name: str, args) -> dict:
    from diffzoo.harness.core.train_config import TrainConfig

    dets = {"native": build(native_name, arch), "mmseg": build(mmseg_name, {})}
    # one recipe for both sides (the mmseg card's): the same optimizer work per step
    cfg = TrainConfig.from_recipe(card(mmseg_name).recipe_values(), pretrained=False)
    g = torch.Generator().manual_seed(0)
    batches = [(torch.rand(args.batch_size, 3, args.size, args.size, generator=g),
                torch.randint(0, 2, (args.batch_size, args.size, args.size), generator=g)) for _ in range(args.steps)]
    row: dict = {"native_card": native_name, "native_arch_changes": arch, "mmseg_card": mmseg_name}
    x = batches[0][0][:1]
    for side, det in dets.items():
        total, aux = params(det)
        with torch.inference_mode():
            shape = tuple(det.model.eval()(x).shape)
        row[side] = {"params": total, "aux_params": aux, "output_shape": shape}
    # extra 'lr_mult' keys in the groups are ignored by torch (the trainer turns them into lrs)
    opts = {side: make_optimizer(det.param_groups(cfg.head_lr_mult), cfg) for side, det in dets.items()}
    for side, det in dets.items():  # warm-up, untimed (also creates the optimizers' state)
        train_steps(det, opts[side], batches[:1])
        infer_steps(det, batches[:1])
    train = interleaved({s: (lambda r, s=s: train_steps(dets[s], opts[s], batches)) for s in dets}, args.rounds)
    infer = interleaved({s: (lambda r, d=d: infer_steps(d, batches)) for s, d in dets.items()}, args.rounds)
    row["train_ratio"] = median_ratio(train["native"], train["mmseg"])
    row["infer_ratio"] = median_ratio(infer["native"], infer["mmseg"])
    for side in dets:
        row[side]["train_s_per_step"] = statistics.median(train[side]) / args.steps
        row[side]["infer_s_per_batch"] = statistics.median(infer[side]) / args.steps
    row["rounds_s"] = {"train": train, "infer": infer}
    return row


def demo_dataset(args, folder: Path):
    """``mini`` when it is built (``--demo-data auto``) or asked for, else the PNG
    fixture written to ``folder``; (dataset, its training overrides)."""
    from diffzoo.generators.datasets.mini import mini_root

    if args.demo_data == "mini" or (args.demo_data == "auto" and mini_root(None).is_dir()):
        ds = open_dataset("mini")
        return ds, dict(ds.training_overrides)
    ds = write_png_dataset(folder, DIFFSEG30K_LABELS, 64, {"train": 96, "val": 32}, seed=args.seed, noise=0.0)
    return ds, dict(DEMO)


def train_demo(args, chosen) -> dict:
    from diffzoo.harness.core.plugins import get_registry as registry
    from diffzoo.harness.models.segmenter import TrainData
    from diffzoo.harness.run.evaluate import evaluate
    from diffzoo.harness.run.plan import train_config

    identity = registry().get("distortion", "none").load()
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        ds, overrides = demo_dataset(args, Path(tmp) / "fixture")
        split = next(s for s in ("val", "test", "calib") if s in ds.splits())
        user = {"iterations": args.demo_iterations}
        print(f"  train demo on {ds.name}: train {len(ds.ids('train'))} images, scored on {split} "
              f"({len(ds.ids(split))}); overrides {overrides}, seed {args.seed}")
        ds.training_overrides = overrides
        for key, native_name, arch, mmseg_name, _ in chosen:
            cfg, _ = train_config(card(mmseg_name), ds, user, pretrained=False, seed=args.seed)
            for name, changes in ((native_name, arch), (mmseg_name, {})):
                det = build(name, changes, args.seed)
                name = f"{key}: {name}"
                start = time.perf_counter()
                log = det.fit(TrainData(ds, ds.ids("train")), cfg)
                wall = time.perf_counter() - start
                metrics = evaluate(det, ds, split, identity, {}, tasks={"binary"}).states["binary"].compute()
                rows[name] = {"pair": key, "optimizer": cfg.optimizer, "lr": cfg.lr, "train_wall_s": wall,
                              "final_loss": log["losses"][-1], **{m: metrics.get(m) for m in DEMO_METRICS}}
                scores = "  ".join(f"{m} {metrics.get(m, float('nan')):.3f}" for m in DEMO_METRICS)
                print(f"    {name:<46} loss {log['losses'][-1]:.3f}  {scores}  ({wall:.0f} s)", flush=True)
        config = {k: getattr(cfg, k) for k in ("iterations", "batch_size", "crop_size", "warmup_iters", "seed")}
    return {"dataset": ds.name, "split": split, "config": config, "overrides": overrides,
            "recipe": "each pair: the mmseg card's recipe, lr x the data's lr_scale", "models": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=128, help="square input (default 128)")
    parser.add_argument("--batch-size", type=int, default=2, help="default 2")
    parser.add_argument("--steps", type=int, default=3, help="timed steps (and predict calls) per round (default 3)")
    parser.add_argument("--pairs", help="comma-separated pair keys (default: all): "
                        + ", ".join(p[0] for p in PAIRS))
    parser.add_argument("--train-demo", action="store_true", help="also train and score each model alike")
    parser.add_argument("--demo-data", choices=("auto", "mini", "fixture"), default="auto",
                        help="auto: mini when built, else the PNG fixture")
    parser.add_argument("--demo-iterations", type=int, help="training steps of the demo (default: the data's)")
    parser.add_argument("--demo-only", action="store_true", help="with --train-demo: skip the timed rounds")
    parser.add_argument("--seed", type=int, default=0)
    add_common_args(parser)
    args = parser.parse_args()
    setup(parser, args)
    if args.quick:
        args.size, args.steps = 64, 2
    chosen = [p for p in PAIRS if not args.pairs or p[0] in args.pairs.split(",")]
    print(f"native vs mmseg: {args.size} px, batch {args.batch_size}, {args.steps} steps x {args.rounds} "
          f"interleaved rounds, {torch.get_num_threads()} torch thread(s), random init, task binary")
    rows, figures = {}, []
    timed_pairs = [] if args.train_demo and args.demo_only else chosen
    for key, native_name, arch, mmseg_name, note in timed_pairs:
        try:
            rows[key] = {**measure(native_name, arch, mmseg_name, args), "note": note}
        except Exception as exc:  # e.g. the backend is not installed: report and go on
            rows[key] = {"error": f"{type(exc).__name__}: {exc}"}
        print(f"  {key}: done", flush=True)
    if rows:
        print(f"  {'pair':<20}{'params native / mmseg (+aux)':>32}{'output native / mmseg':>34}"
              f"{'train':>8}{'infer':>8}  (native / mmseg time)")
    for key, r in rows.items():
        if "error" in r:
            print(f"  {key:<20}failed: {r['error'][:100]}")
            figures.append(figure(f"{key}: failed", None))
            continue
        n, m = r["native"], r["mmseg"]
        mm = (m["params"] - m["aux_params"]) / 1e6
        par = f"{n['params'] / 1e6:.1f} M / {mm:.1f} M (+{m['aux_params'] / 1e6:.1f})"
        out = f"{'x'.join(map(str, n['output_shape'][1:]))} / {'x'.join(map(str, m['output_shape'][1:]))}"
        print(f"  {key:<20}{par:>32}{out:>34}{r['train_ratio']:>8.2f}{r['infer_ratio']:>8.2f}  {r['note']}")
        figures.append(figure(f"{key}: train step native/mmseg", r["train_ratio"], "<= 1.0"))
        figures.append(figure(f"{key}: inference native/mmseg", r["infer_ratio"], "<= 1.0"))
    results = {"benchmark": "mmseg_parity", "size": args.size, "batch_size": args.batch_size, "steps": args.steps,
               "rounds": args.rounds, "pairs": rows, "figures": figures}
    if args.train_demo:
        results["train_demo"] = train_demo(args, chosen)
    report(results, args.json)


if __name__ == "__main__":
    main()
