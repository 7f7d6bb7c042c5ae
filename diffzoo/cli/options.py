"""Options several commands share, each defined once with its check.

A value a user can get wrong fails in the option's callback with a
ConfigError: one line naming the option, the value and the fix, exit 2.
"""

from __future__ import annotations

import json

import typer

from diffzoo.harness.core.errors import ConfigError
from diffzoo.harness.core.types import check_seed


def _seed(value: int) -> int:
    return check_seed(value, "--seed")


SEED = typer.Option(0, "--seed", callback=_seed, help="Random seed, an integer from 0 to 2**63 - 1.")


def _recipe(value: str) -> str:
    from diffzoo.harness.core.train_config import RECIPES

    if value not in RECIPES:
        raise ConfigError(f"--recipe {value!r} is not a recipe; give one of {', '.join(RECIPES)} "
                          "(docs/detectors.md, 'Recipes')")
    return value


RECIPE = typer.Option(
    "native", "--recipe", callback=_recipe,
    help="native (default): train on crop-size crops at the images' own scale, evaluate at native size. "
    "paper: as the DiffSeg30k paper (mmseg): train on the shorter side resized to crop x 0.5-2.0 then cropped, "
    "evaluate with the shorter side at the crop size; uses --dataset-option extra_authentic=DIR (COCO negatives) "
    "when given. Use paper to reproduce the paper's Table 3. Part of the cache key and the record.",
)


# -- options shared by `run`, `train` and `data` (one definition each) ---------
DETECTOR = typer.Option(..., "--detector", "-d", help="Detector name (family or family.tag).")
DATASET = typer.Option("mini", "--dataset", help="Registered dataset name or a path.")
DEVICE = typer.Option("auto", "--device", help="auto, cpu, cuda, cuda:1, ... (under torchrun: one GPU per rank).")
PRETRAINED = typer.Option(
    None, "--pretrained/--no-pretrained", help="Start from the card's pretrained weights (default: card/dataset)."
)
ITERATIONS = typer.Option(None, "--iterations", help="Override training iterations.")
BATCH_SIZE = typer.Option(None, "--batch-size", help="Override training batch size (global under torchrun).")
CROP_SIZE = typer.Option(None, "--crop-size", help="Override training crop size.")
LABELS = typer.Option(
    None, "--labels", help="Label map: JSON file {'names': [...]} or comma-separated editor names."
)
EXTRA_AUTHENTIC = typer.Option(
    None, "--extra-authentic", help="Folder of authentic images added to training with all-zero masks."
)
SAVE_EVERY = typer.Option(
    None, "--save-every",
    help="Training steps between resume saves (default: a tenth of the iterations; 0: never). "
    "A killed training resumes from the last one. Not part of the cache key.",
)

LOG_EVERY = typer.Option(
    None, "--log-every",
    help="Training steps between lines of the training log and TensorBoard events (default: 50, or about 100 "
    "lines for a shorter training). Not part of the cache key: the model is the same.",
)
VAL_EVERY = typer.Option(
    None, "--val-every",
    help="Training steps between validations on the calib (else val) split, logged and plotted, never used to "
    "pick a checkpoint (default: 16000 with --recipe paper, else 0: off). Not part of the cache key.",
)


def _workers(value: int | None) -> int | None:
    from diffzoo.harness.core.parallel import check_workers

    return None if value is None else check_workers(value)


WORKERS = typer.Option(
    None, "--workers", callback=_workers,
    help="Loader processes that read, decode and distort images while the model runs (default: $DIFFZOO_WORKERS, "
    "else min(4, CPU cores) with a GPU and the cores the model's threads leave free on the CPU, so 0 for a CPU "
    "model; 0: all in the main process). Results are the same for any number.",
)
DATASET_OPTION = typer.Option(
    [], "--dataset-option",
    help="KEY=VALUE passed to the dataset adapter (e.g. calib_fraction=0.05, split=test); repeatable.",
)


def parse_options(items: list[str], what: str) -> dict[str, object]:
    """``["a=1", "b=x"]`` -> ``{"a": 1, "b": "x"}`` (JSON values where they parse)."""
    out: dict[str, object] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{what} takes KEY=VALUE, got {item!r}")
        try:
            out[key.strip()] = json.loads(value)
        except ValueError:
            out[key.strip()] = value
    return out
