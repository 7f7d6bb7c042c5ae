"""The shared training loop for segmentation detectors.

One loop serves every segmenter: random crops + horizontal flips, AdamW with a
separate learning-rate multiplier for the decode head, linear warm-up then a
poly schedule (the open-source SegFormer recipe), AMP on CUDA, and a seeded
sampler so that the same seed gives the same model.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .errors import ConfigError, CorruptSampleError, DataError
from .protocols import Dataset
from .types import IGNORE_INDEX

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainConfig:
    """Training hyper-parameters; detectors' cards give defaults with sources."""

    iterations: int = 160_000
    batch_size: int = 16
    crop_size: int = 512
    lr: float = 6e-5
    weight_decay: float = 0.01
    head_lr_mult: float = 10.0
    warmup_iters: int = 1500
    poly_power: float = 1.0
    betas: tuple[float, float] = (0.9, 0.999)
    hflip: bool = True
    pretrained: bool = True
    amp: bool = True  # only takes effect on CUDA
    num_workers: int = 0
    seed: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_recipe(cls, recipe: dict[str, Any], **overrides: Any) -> TrainConfig:
        """Build from a card's recipe values, then apply overrides (None = keep)."""
        names = {f.name for f in fields(cls)}
        values = {k: v for k, v in recipe.items() if k in names}
        extra = {k: v for k, v in recipe.items() if k not in names}
        cfg = cls(**values, extra=extra)
        return cfg.with_overrides(**overrides)

    def with_overrides(self, **overrides: Any) -> TrainConfig:
        names = {f.name for f in fields(self)}
        unknown = set(overrides) - names
        if unknown:
            raise ConfigError(f"unknown training option(s): {', '.join(sorted(unknown))}")
        cfg = replace(self, **{k: v for k, v in overrides.items() if v is not None})
        if isinstance(cfg.betas, list):
            cfg = replace(cfg, betas=tuple(cfg.betas))
        if cfg.iterations < 1 or cfg.batch_size < 1 or cfg.crop_size < 8:
            raise ConfigError("iterations and batch_size must be >= 1 and crop_size >= 8")
        return cfg

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["betas"] = list(self.betas)
        return d


def resolve_device(device: str) -> torch.device:
    """``auto`` -> cuda if available else cpu; a clear error for a missing GPU."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"--device {device}: CUDA is not available on this machine; use --device cpu")
    return dev


class CropDataset(torch.utils.data.Dataset):
    """Training view: sample -> random crop (padded with ignore) + flip.

    Labels are mapped to the task's space (binary: editors -> 1).  A corrupt
    sample yields ``None`` and is dropped by :func:`collate_skip`, counted.
    """

    def __init__(self, dataset: Dataset, ids: list[str], task: str, cfg: TrainConfig):
        self.dataset, self.ids, self.task, self.cfg = dataset, ids, task, cfg
        self._rng: np.random.Generator | None = None

    def _generator(self) -> np.random.Generator:
        # Seeded per process: torch seeds each DataLoader worker from the
        # loader's generator, so crops are reproducible with and without workers.
        if self._rng is None:
            self._rng = np.random.default_rng([self.cfg.seed, torch.initial_seed() % (2**31)])
        return self._rng

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor] | None:
        sid = self.ids[index]
        try:
            sample = self.dataset.load(sid)
        except CorruptSampleError as exc:
            log.warning("skipping corrupt training sample: %s", exc)
            return None
        label = sample.label
        if self.task != "semantic":
            label = self.dataset.label_space.to_binary_map(label)
        rng = self._generator()
        image, label = random_crop(sample.image, label, self.cfg.crop_size, rng)
        if self.cfg.hflip and rng.random() < 0.5:
            image, label = image[:, ::-1], label[:, ::-1]
        img = torch.from_numpy(np.ascontiguousarray(image)).permute(2, 0, 1).float() / 255.0
        return img, torch.from_numpy(np.ascontiguousarray(label)).long()


def random_crop(
    image: np.ndarray, label: np.ndarray, size: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Crop ``size`` x ``size``; smaller images are padded (label = ignore)."""
    h, w = label.shape
    ph, pw = max(size - h, 0), max(size - w, 0)
    if ph or pw:
        image = np.pad(image, ((0, ph), (0, pw), (0, 0)))
        label = np.pad(label, ((0, ph), (0, pw)), constant_values=IGNORE_INDEX)
        h, w = label.shape
    y = int(rng.integers(0, h - size + 1))
    x = int(rng.integers(0, w - size + 1))
    return image[y : y + size, x : x + size], label[y : y + size, x : x + size]


def collate_skip(batch: list[Any]) -> tuple[torch.Tensor, torch.Tensor, int] | None:
    good = [b for b in batch if b is not None]
    if not good:
        return None
    images, labels = zip(*good)
    return torch.stack(images), torch.stack(labels), len(batch) - len(good)


def segmentation_loss(logits: torch.Tensor, target: torch.Tensor, task: str) -> torch.Tensor:
    """Cross-entropy at label resolution, ignoring label 255.

    Binary detectors output one channel (logit of ``edited``): BCE over valid
    pixels.  Semantic detectors output one channel per class: CE.
    """
    if logits.shape[-2:] != target.shape[-2:]:
        logits = F.interpolate(logits, size=target.shape[-2:], mode="bilinear", align_corners=False)
    if task == "semantic":
        return F.cross_entropy(logits.float(), target, ignore_index=IGNORE_INDEX)
    valid = target != IGNORE_INDEX
    if not valid.any():
        return logits.sum() * 0.0
    return F.binary_cross_entropy_with_logits(logits[:, 0].float()[valid], target[valid].float())


def poly_lr_lambda(cfg: TrainConfig) -> Callable[[int], float]:
    """Linear warm-up from 1e-6 (mmseg LinearLR start_factor) then poly decay."""

    def factor(step: int) -> float:
        if step < cfg.warmup_iters:
            return 1e-6 + (1 - 1e-6) * step / max(cfg.warmup_iters, 1)
        progress = (step - cfg.warmup_iters) / max(cfg.iterations - cfg.warmup_iters, 1)
        return max(1.0 - progress, 0.0) ** cfg.poly_power

    return factor


def _batches(loader: torch.utils.data.DataLoader) -> Iterable[Any]:
    while True:
        yielded = False
        for batch in loader:
            yielded = True
            yield batch
        if not yielded:
            raise DataError("the training split yielded no usable samples")


def train_segmenter(
    model: nn.Module,
    param_groups: list[dict[str, Any]],
    dataset: Dataset,
    ids: list[str],
    task: str,
    cfg: TrainConfig,
    device: torch.device,
    progress: Callable[[int, float], None] | None = None,
) -> dict[str, Any]:
    """Train ``model`` (images in [0, 1] -> logits) and return a log.

    ``param_groups`` are AdamW groups; a group may carry ``lr_mult``.
    """
    if not ids:
        raise DataError("the training split is empty")
    torch.manual_seed(cfg.seed)
    data = CropDataset(dataset, ids, task, cfg)
    gen = torch.Generator().manual_seed(cfg.seed)
    loader = torch.utils.data.DataLoader(
        data,
        batch_size=min(cfg.batch_size, len(ids)),
        shuffle=True,
        drop_last=len(ids) >= cfg.batch_size,
        generator=gen,
        num_workers=cfg.num_workers,
        collate_fn=collate_skip,
    )
    groups = [
        {**{k: v for k, v in g.items() if k != "lr_mult"}, "lr": cfg.lr * g.get("lr_mult", 1.0)}
        for g in param_groups
    ]
    opt = torch.optim.AdamW(groups, lr=cfg.lr, betas=cfg.betas, weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, poly_lr_lambda(cfg))
    use_amp = cfg.amp and device.type == "cuda"
    model.to(device).train()
    losses: list[float] = []
    skipped = 0
    batches = _batches(loader)
    for step in range(cfg.iterations):
        batch = next(batches)
        while batch is None:
            skipped += cfg.batch_size
            batch = next(batches)
        images, labels, bad = batch
        skipped += bad
        images, labels = images.to(device, non_blocking=True), labels.to(device, non_blocking=True)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=use_amp):
            logits = model(images)
        loss = segmentation_loss(logits, labels, task)
        if not math.isfinite(loss.item()):
            raise ConfigError(f"training diverged at step {step} (loss {loss.item()}); lower the lr")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
        if progress is not None:
            progress(step + 1, losses[-1])
    model.eval()
    k = max(1, min(20, len(losses) // 5))
    return {
        "iterations": cfg.iterations,
        "first_loss": float(np.mean(losses[:k])),
        "final_loss": float(np.mean(losses[-k:])),
        "skipped_samples": skipped,
        "losses": [round(x, 5) for x in losses[:: max(1, len(losses) // 100)]],
    }
