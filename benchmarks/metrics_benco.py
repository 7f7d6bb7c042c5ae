"""diffzoo's per-image metric work against IMDL-BenCo's pixel evaluators.

    python benchmarks/metrics_benco.py                  # finds IMDL-BenCo here or in .venv-benco
    python benchmarks/metrics_benco.py --images 200 --rounds 5 --json benco.json

Per 512 px image (``--size``), on the same maps:

- diffzoo: what evaluation does with one model output (``run/scoring.Scorer``):
  the threshold of the logits (sigmoid, > 0.5), the prediction digest and
  ``EvalState`` counting (confusion counts, boundary F1, the pixel-AUC
  histogram, the per-image row), for a binary model; and for a semantic
  model of DiffSeg30k's 9 classes (softmax, argmax, the binary and the
  semantic state);
- IMDL-BenCo 0.1.45: ``batch_update`` of its four pixel evaluators,
  ``PixelF1``, ``PixelIOU``, ``PixelAUC`` and ``PixelAccuracy`` (mode
  ``origin``, batch of one image, as its test loop calls them), on the
  sigmoid probabilities and the mask (binary only: it has no semantic metrics).

Two kinds of maps: typical (one edited square, smooth probabilities) and
worst case (uniform random labels and probabilities).  Rounds interleaved,
the median of the per-round ratios reported (goal: BenCo / diffzoo at least
5), with diffzoo's ms per image at 512 and 1024 px.  Without IMDL-BenCo in
this interpreter the script runs itself with ``$DIFFZOO_BENCO_PYTHON`` or
``.venv-benco/bin/python`` (``scripts/install-benco.sh``); with neither, the
ratio is reported as not measured, with the reason.  Nothing is asserted.
"""

from __future__ import annotations

import argparse
import importlib
import os
import statistics
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import torch
from bench import add_common_args, figure, interleaved, median_ratio, report, setup, timed
from metrics import typical_maps, worst_maps

from diffzoo.harness.core.types import BINARY, DetectionOutput, LabelSpace, SampleMeta
from diffzoo.harness.metrics import EvalState
from diffzoo.harness.records.policy import Thresholds
from diffzoo.harness.run.scoring import Scorer

GOAL = ">= 5"
HERE = Path(__file__).resolve().parent
NINE = LabelSpace(("background", "sd2", "sd3.5", "sdxl", "flux1", "glide", "kolors", "hunyuandit1.1",
                   "kandinsky2.2"))


class _Model:
    """What the scorer reads of a detector: its task and label space (and device)."""

    def __init__(self, task: str, label_space: LabelSpace):
        self.task, self.label_space, self.device = task, label_space, torch.device("cpu")


def benco_evaluators() -> list | None:
    """IMDL-BenCo's four pixel evaluators, or None when it is not importable here."""
    try:
        import IMDLBenCo
    except ImportError:
        return None
    package = types.ModuleType("IMDLBenCo.evaluation")  # its __init__ imports grad-cam, not installed
    package.__path__ = [str(Path(IMDLBenCo.__file__).parent / "evaluation")]
    sys.modules.setdefault("IMDLBenCo.evaluation", package)
    mods = {n: importlib.import_module(f"IMDLBenCo.evaluation.{n}") for n in ("F1", "IOU", "AUC", "Accuracy")}
    return [mods["F1"].PixelF1(threshold=0.5, mode="origin"), mods["IOU"].PixelIOU(threshold=0.5, mode="origin"),
            mods["AUC"].PixelAUC(mode="origin"), mods["Accuracy"].PixelAccuracy(threshold=0.5, mode="origin")]


def binary_inputs(maps):
    """(GT, logits 1x1xHxW, BenCo's probabilities and mask 1x1xHxW) per map."""
    out = []
    for gt, prob in maps:
        logits = torch.logit(torch.from_numpy(prob).clamp(1e-6, 1 - 1e-6))[None, None]
        out.append((gt, logits, torch.sigmoid(logits), torch.from_numpy(gt.astype(np.float32))[None, None]))
    return out


def semantic_inputs(maps, rng):
    """(9-class GT, 1x9xHxW logits favouring the GT class) per map."""
    out = []
    for gt, _ in maps:
        label = np.where(gt > 0, rng.integers(1, 9, gt.shape), 0).astype(np.uint8)
        logits = torch.from_numpy(rng.normal(0, 1, (1, 9, *gt.shape)).astype(np.float32))
        logits.scatter_add_(1, torch.from_numpy(label.astype(np.int64))[None, None], torch.full((1, 1, *gt.shape), 2.0))
        out.append((label, logits))
    return out


def diffzoo_binary(inputs) -> None:
    model = _Model("binary", BINARY)
    scorer = Scorer(model, {"binary": EvalState(BINARY, "binary")}, Thresholds(pixel=0.5), BINARY)
    for i, (gt, logits, _, _) in enumerate(inputs):
        scorer.score(SampleMeta(f"{i}"), gt, DetectionOutput(mask_logits=logits))


def diffzoo_semantic(inputs) -> None:
    model = _Model("semantic", NINE)
    states = {"binary": EvalState(BINARY, "binary"), "semantic": EvalState(NINE, "semantic")}
    scorer = Scorer(model, states, Thresholds(pixel=0.5), NINE)
    for i, (label, logits) in enumerate(inputs):
        scorer.score(SampleMeta(f"{i}"), label, DetectionOutput(mask_logits=logits))


def update_only(inputs):
    """The states' update alone (binary + semantic), on maps made beforehand: docs/scaling.md's
    'metric update' row (post-processing, the digest and the softmax left out)."""
    maps = []
    for i, (label, logits) in enumerate(inputs):
        probs = torch.softmax(logits, dim=1)[0]
        classes = probs.max(0).indices.to(torch.uint8).numpy()
        maps.append((SampleMeta(f"{i}"), label, NINE.to_binary_map(label), classes, (classes > 0).astype(np.uint8),
                     (1.0 - probs[0]).numpy()))

    def run() -> None:
        binary, semantic = EvalState(BINARY, "binary"), EvalState(NINE, "semantic")
        for meta, label, gt, classes, pred, edited in maps:
            binary.update(meta, gt, pred, edited)
            semantic.update(meta, label, classes, edited)
    return run


def benco_update(evaluators, inputs) -> None:
    for _, _, prob, mask in inputs:
        for evaluator in evaluators:
            evaluator.batch_update(prob, mask)


def per_image_ms(fn, images: int, rounds: int) -> float:
    return statistics.median(timed(fn) for _ in range(rounds)) / images * 1e3


def elsewhere() -> str | None:
    """A Python with IMDL-BenCo: ``$DIFFZOO_BENCO_PYTHON``, else ``.venv-benco/bin/python``."""
    candidate = os.environ.get("DIFFZOO_BENCO_PYTHON") or str(HERE.parent / ".venv-benco" / "bin" / "python")
    # venvs link the same interpreter: compare the environments, not the binaries
    return candidate if Path(candidate).is_file() and Path(candidate).absolute().parent.parent != Path(sys.prefix) \
        else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=512, help="square map side (default 512)")
    parser.add_argument("--images", type=int, default=40, help="maps per round (default 40)")
    parser.add_argument("--here", action="store_true", help="do not look for IMDL-BenCo in another venv")
    add_common_args(parser)
    parser.set_defaults(threads=2)  # BenCo's torch evaluators use the machine's threads; so do OpenCV's histograms
    args = parser.parse_args()
    setup(parser, args)
    evaluators = benco_evaluators()
    other = None if evaluators is not None or args.here else elsewhere()
    if other is not None:
        print(f"IMDL-BenCo is not installed here; running with {other}", flush=True)
        rc = subprocess.run([other, __file__, "--here", *sys.argv[1:]]).returncode
        sys.exit(rc)
    if args.quick:
        args.images = min(args.images, 6)
    rng = np.random.default_rng(0)
    rows, figures, notes = {}, [], []
    for kind, make in (("typical", typical_maps), ("worst case", worst_maps)):
        maps = make(args.size, args.images, rng)
        binary = binary_inputs(maps)
        candidates = {"diffzoo": lambda r, b=binary: timed(lambda: diffzoo_binary(b))}
        if evaluators is not None:
            candidates["benco"] = lambda r, b=binary: timed(lambda: benco_update(evaluators, b))
        for fn in candidates.values():
            fn(-1)
        times = interleaved(candidates, args.rounds)
        ms = {k: statistics.median(v) / args.images * 1e3 for k, v in times.items()}
        semantic = semantic_inputs(maps, rng)
        ms["diffzoo 9 classes"] = per_image_ms(lambda s=semantic: diffzoo_semantic(s), args.images, args.rounds)
        row = {"ms_per_image": ms}
        if evaluators is not None:
            row["benco_over_diffzoo"] = median_ratio(times["benco"], times["diffzoo"])
        rows[kind] = row
        figures.append(figure(f"{kind}: IMDL-BenCo / diffzoo metric update", row.get("benco_over_diffzoo"), GOAL))
        figures.append(figure(f"{kind}: diffzoo ms/image, binary ({args.size} px)", ms["diffzoo"], unit="ms"))
        figures.append(figure(f"{kind}: diffzoo ms/image, 9 classes ({args.size} px)", ms["diffzoo 9 classes"],
                              unit="ms"))
    if evaluators is None:
        notes.append("IMDL-BenCo not installed (bash scripts/install-benco.sh in a venv of its own, or set "
                     "DIFFZOO_BENCO_PYTHON): the ratio was not measured")
    big = 2 * args.size
    maps = typical_maps(big, max(2, args.images // 4), rng)
    big_binary, big_semantic = binary_inputs(maps), semantic_inputs(maps, rng)
    ms_big = {"binary": per_image_ms(lambda: diffzoo_binary(big_binary), len(maps), args.rounds),
              "9 classes": per_image_ms(lambda: diffzoo_semantic(big_semantic), len(maps), args.rounds)}
    figures.append(figure(f"diffzoo ms/image, binary ({big} px)", ms_big["binary"], unit="ms"))
    figures.append(figure(f"diffzoo ms/image, 9 classes ({big} px)", ms_big["9 classes"], unit="ms"))
    small = typical_maps(args.size, args.images, rng)
    update_ms = {args.size: per_image_ms(update_only(semantic_inputs(small, rng)), len(small), args.rounds),
                 big: per_image_ms(update_only(semantic_inputs(maps, rng)), len(maps), args.rounds)}
    for size, value in update_ms.items():
        figures.append(figure(f"state update alone, binary + semantic ({size} px)", value, unit="ms"))
    print(f"metric work per image, median of {args.rounds} interleaved rounds x {args.images} maps, "
          f"{torch.get_num_threads()} threads")
    print(f"  {'maps':<12}{'diffzoo ms':>12}{'9 classes ms':>14}{'BenCo ms':>10}{'ratio':>8}")
    for kind, row in rows.items():
        ms = row["ms_per_image"]
        ratio = row.get("benco_over_diffzoo")
        print(f"  {kind:<12}{ms['diffzoo']:>12.2f}{ms['diffzoo 9 classes']:>14.2f}"
              f"{ms.get('benco', float('nan')):>10.2f}{(ratio or float('nan')):>8.1f}")
    print(f"  at {big} px: binary {ms_big['binary']:.2f} ms, 9 classes {ms_big['9 classes']:.2f} ms")
    print("  the states' update alone (binary + semantic, no softmax or digest): "
          + ", ".join(f"{v:.2f} ms at {k} px" for k, v in update_ms.items()))
    print(f"  goal: IMDL-BenCo / diffzoo {GOAL} (diffzoo also computes boundary F1, the digest and per-image rows)")
    for note in notes:
        print(f"  note: {note}")
    report({"benchmark": "metrics_benco", "size": args.size, "images": args.images, "rounds": args.rounds,
            "kinds": rows, "large": {"size": big, "ms_per_image": ms_big},
            "update_only_ms": {str(k): v for k, v in update_ms.items()}, "notes": notes, "figures": figures},
           args.json)


if __name__ == "__main__":
    main()
