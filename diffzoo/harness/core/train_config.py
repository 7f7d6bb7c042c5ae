"""Training hyper-parameters (:class:`TrainConfig`): plain data, no torch.

Cards give the defaults with their sources; ``--iterations`` and the like
override them; the whole config is part of every record and cache key.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from diffzoo.harness.core.errors import ConfigError

OPTIMIZERS = ("AdamW", "SGD")
MAX_ITERATIONS = 10**9
RECIPES = ("native", "paper")
"""Training/evaluation scale recipes (docs/detectors.md): ``native`` (the
default) crops ``crop_size`` at the images' own scale and evaluates at native
size; ``paper`` follows mmseg's SegFormer/DeepLab configs, as the DiffSeg30k
paper did (see :func:`paper_rescale`)."""
TRAIN_OPTIONS = ("detector", "dataset", "seed", "device", "pretrained", "iterations", "batch_size", "crop_size",
                 "recipe", "labels", "extra_authentic", "dataset_option", "save_every", "log_every", "val_every",
                 "workers")
"""The request options a training reads: ``diffzoo train``'s, shared with ``diffzoo run``, and the
keywords of ``diffzoo.train`` (any other is ``diffzoo.evaluate``'s)."""
PAPER_RATIO = (0.5, 2.0)
"""mmseg's RandomResize ratio_range: the shorter side becomes crop_size x U(0.5, 2.0)."""


def _below(value: Any, high: float) -> bool:
    """Whether ``value`` is a number (a bool is none) in [0, ``high``)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < high


@dataclass(frozen=True)
class TrainConfig:
    """Training hyper-parameters; detectors' cards give defaults with sources."""

    iterations: int = 160_000
    batch_size: int = 16
    crop_size: int = 512
    optimizer: str = "AdamW"  # AdamW | SGD
    lr: float = 6e-5
    momentum: float = 0.9  # SGD only
    weight_decay: float = 0.01
    head_lr_mult: float = 10.0
    warmup_iters: int = 1500
    poly_power: float = 1.0
    min_lr: float = 0.0  # poly floor (mmengine PolyLR eta_min), absolute, for every group
    betas: tuple[float, float] = (0.9, 0.999)
    hflip: bool = True
    pretrained: bool = True
    amp: bool = True  # only takes effect on CUDA
    channels_last: bool = False  # NHWC weights and image batches (faster convolutions on CUDA)
    num_workers: int = 0  # loader processes; not part of the config's identity (see to_dict)
    seed: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    recipe: str = "native"  # native | paper (RECIPES)

    @classmethod
    def from_recipe(cls, recipe: dict[str, Any], /, **overrides: Any) -> TrainConfig:
        """Build from a card's recipe values, then apply overrides (None = keep)."""
        names = {f.name for f in fields(cls)}
        values = {k: v for k, v in recipe.items() if k in names}
        extra = {k: v for k, v in recipe.items() if k not in names}
        return cls(**values, extra=extra).with_overrides(**overrides)

    def with_overrides(self, **overrides: Any) -> TrainConfig:
        if unknown := set(overrides) - {f.name for f in fields(self)}:
            raise ConfigError(f"unknown training option(s): {', '.join(sorted(unknown))}")
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})

    def __post_init__(self) -> None:
        """Every config is checked where it is made (a card's recipe, overrides, the API)."""
        if isinstance(self.betas, list):
            object.__setattr__(self, "betas", tuple(self.betas))
        for name, least in (("iterations", 1), ("batch_size", 1), ("crop_size", 8), ("warmup_iters", 0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                said = "training warmup_iters" if name == "warmup_iters" else f"--{name.replace('_', '-')}"
                raise ConfigError(f"{said} {value!r}: must be at least {least} (a whole number)")
        # the progress line's ETA and the schedule's step counters are machine integers
        if self.iterations > MAX_ITERATIONS:
            raise ConfigError(f"--iterations {self.iterations:,}: must be at most {MAX_ITERATIONS:,}")
        # a card's recipe or a dataset's lr_scale gives these: a NaN, inf or negative one trains nothing sound
        for name in ("lr", "momentum", "weight_decay", "head_lr_mult", "poly_power", "min_lr"):
            if not _below(getattr(self, name), math.inf):
                raise ConfigError(f"training {name} {getattr(self, name)!r}: must be a finite number >= 0")
        if not isinstance(self.betas, tuple) or len(self.betas) != 2 or not all(_below(b, 1) for b in self.betas):
            raise ConfigError(f"training betas {self.betas!r}: must be two numbers in [0, 1)")
        if self.optimizer not in OPTIMIZERS:
            raise ConfigError(f"optimizer {self.optimizer!r} is not one of {', '.join(OPTIMIZERS)}")
        if self.recipe not in RECIPES:
            raise ConfigError(f"--recipe {self.recipe!r} is not a recipe; give one of {', '.join(RECIPES)}")

    def to_dict(self) -> dict[str, Any]:
        """The config as JSON data (records' ``config.train``, the cache key;
        ``recipe`` is in it, so native and paper models never share a cache entry).
        ``num_workers`` is left out: a model does not depend on how many
        processes load its data (trainer.CropDataset), so it is no part of
        what a record or a cache key names."""
        d = asdict(self)
        del d["num_workers"]
        d["betas"] = list(self.betas)
        return d
