"""Options several commands share, each defined once with its check.

A value a user can get wrong fails in the option's callback with a
ConfigError: one line naming the option, the value and the fix, exit 2.
"""

from __future__ import annotations

import typer

from ..harness.types import check_seed


def _seed(value: int) -> int:
    return check_seed(value, "--seed")


SEED = typer.Option(0, "--seed", callback=_seed, help="Random seed, an integer from 0 to 2**63 - 1.")


def _recipe(value: str) -> str:
    from ..harness.errors import ConfigError
    from ..harness.trainer import RECIPES

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
