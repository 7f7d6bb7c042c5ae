"""The shared training loop for segmentation detectors.

One loop serves every segmenter: random crops + horizontal flips (the
``paper`` recipe first rescales each image, as mmseg's RandomResize), AdamW (or
SGD with momentum) with a separate learning-rate multiplier for the decode
head, linear warm-up then a poly schedule with an optional floor (the
open-source SegFormer and mmseg SGD recipes), AMP on CUDA, and a seeded
sampler so that the same seed gives the same model.  Under torchrun the
network is wrapped in DistributedDataParallel and each rank trains on its
shard of the data; ``batch_size`` is the global batch (see
:mod:`.distributed`).
"""

from __future__ import annotations

import logging
import math
from functools import partial
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from diffzoo.harness.core import distributed
from diffzoo.harness.data.distortions import resize_image, resize_label, shorter_side_size
from diffzoo.harness.data.mask_encoding import all_ignore_error
from diffzoo.harness.core.errors import ConfigError, CorruptSampleError, DataError
from diffzoo.harness.core.protocols import Dataset
from diffzoo.harness.models.resume import BatchStream, Resume, capture, restore
from diffzoo.harness.core.types import IGNORE_INDEX
from diffzoo.harness.core.train_config import PAPER_RATIO, TrainConfig

log = logging.getLogger(__name__)


class CropDataset(torch.utils.data.Dataset):
    """Training view: sample -> random crop (padded with ignore) + flip.

    Labels are mapped to the task's space (binary: editors -> 1).  A corrupt
    sample yields ``None`` and is dropped by :func:`collate_skip`, counted.

    The random draws of one item come from a generator of its own, seeded
    by the config's seed, the rank and the item's key: the index, and under
    :func:`make_loader` the epoch and position in the epoch
    (:class:`EpochOrder`).  No draw depends on which process loads the
    item, so a model is the same whatever the number of loader workers, and
    a resumed training needs no generator state.
    """

    def __init__(self, dataset: Dataset, ids: list[str], task: str, cfg: TrainConfig):
        self.dataset, self.ids, self.task, self.cfg = dataset, ids, task, cfg
        self.rank = distributed.rank()  # read here: workers may not see the process group

    def _item(self, key: int | tuple[int, ...]) -> tuple[int, np.random.Generator]:
        """(index, the generator of this item's draws) of a plain index or an
        (index, epoch, position) key."""
        index, *stream = key if isinstance(key, tuple) else (key,)
        return index, np.random.default_rng([self.cfg.seed, self.rank, index, *stream])

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, key: int | tuple[int, ...]) -> tuple[torch.Tensor, torch.Tensor] | None:
        index, rng = self._item(key)
        sid = self.ids[index]
        try:
            sample = self.dataset.load(sid)
        except CorruptSampleError as exc:
            log.warning("skipping corrupt training sample: %s", exc)
            return None
        label = sample.label
        if self.task != "semantic":
            label = self.dataset.label_space.to_binary_map(label)
        image, label = paper_rescale(sample.image, label, self.cfg, rng)
        image, label = random_crop(image, label, self.cfg.crop_size, rng)
        if self.cfg.hflip and rng.random() < 0.5:
            image, label = image[:, ::-1], label[:, ::-1]
        img = torch.from_numpy(np.ascontiguousarray(image)).permute(2, 0, 1).float() / 255.0
        return img, torch.from_numpy(np.ascontiguousarray(label)).long()


class EpochOrder(torch.utils.data.Sampler):
    """The training order: each epoch a permutation of the ``n`` items drawn
    from (seed, epoch), or the given DistributedSampler's share (``inner``).

    The order is a function of the epoch alone, not of a generator's history,
    so it is the same with or without (persistent) loader workers and after a
    resume.  ``keyed``: items are (index, epoch, position in the epoch) keys,
    which seed each item's random draws (:class:`CropDataset`).
    ``set_epoch`` is called before each pass (:class:`~.resume.BatchStream`
    does) and passed on to ``inner``.
    """

    def __init__(self, n: int, seed: int, inner: torch.utils.data.Sampler | None = None, keyed: bool = False):
        self.n, self.seed, self.inner, self.keyed, self.epoch = n, seed, inner, keyed, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch
        if self.inner is not None:
            self.inner.set_epoch(epoch)

    def __iter__(self):
        if self.inner is not None:
            order = list(self.inner)
        else:
            order = np.random.default_rng([self.seed, self.epoch]).permutation(self.n).tolist()
        if not self.keyed:
            return iter(order)
        return ((index, self.epoch, position) for position, index in enumerate(order))

    def __len__(self) -> int:
        return len(self.inner) if self.inner is not None else self.n


def paper_rescale(
    image: np.ndarray, label: np.ndarray, cfg: TrainConfig, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """The ``paper`` recipe's resize before the crop; the pair unchanged under ``native``.

    As mmseg's ``RandomResize(scale=(2048, 512), ratio_range=(0.5, 2.0),
    keep_ratio=True)`` with 512 = ``crop_size``: a ratio r ~ U(0.5, 2.0)
    (one draw of ``rng``), the shorter side brought to ``round(crop_size * r)``
    (aspect kept; the longer side capped at 4x the shorter, as mmseg's
    ``scale=(2048, 512)`` does).  The image with Pillow's bicubic (the filter the
    evaluation's resizes use; mmcv's default is bilinear), the label with
    nearest neighbour.
    """
    if cfg.recipe != "paper":
        return image, label
    ratio = float(rng.uniform(*PAPER_RATIO))
    size = shorter_side_size(*label.shape, max(1, round(cfg.crop_size * ratio)))
    return resize_image(image, size), resize_label(label, size)


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


AuxLogits = list[tuple[torch.Tensor, float]]
"""Auxiliary heads' ``(logits, loss weight)``, returned next to the main logits in training."""


def segmentation_loss(
    logits: torch.Tensor | tuple[torch.Tensor, AuxLogits], target: torch.Tensor, task: str
) -> torch.Tensor:
    """Cross-entropy at label resolution, ignoring label 255.

    Binary detectors output one channel (logit of ``edited``): BCE over valid
    pixels.  Semantic detectors output one channel per class: CE.  A network
    with auxiliary heads returns ``(logits, [(aux_logits, weight), ...])`` in
    training mode; the loss is then ``loss(logits) + sum(weight * loss(aux))``
    (mmseg's deep supervision).
    """
    if isinstance(logits, tuple):
        main, aux = logits
        loss = segmentation_loss(main, target, task)
        for aux_logits, weight in aux:
            loss = loss + weight * segmentation_loss(aux_logits, target, task)
        return loss
    if logits.shape[-2:] != target.shape[-2:]:
        logits = F.interpolate(logits, size=target.shape[-2:], mode="bilinear", align_corners=False)
    if task == "semantic":
        return F.cross_entropy(logits.float(), target, ignore_index=IGNORE_INDEX)
    valid = target != IGNORE_INDEX
    if not valid.any():
        return logits.sum() * 0.0
    return F.binary_cross_entropy_with_logits(logits[:, 0].float()[valid], target[valid].float())


def poly_lr_lambda(cfg: TrainConfig, min_ratio: float = 0.0) -> Callable[[int], float]:
    """Linear warm-up from 1e-6 (mmseg LinearLR start_factor) then poly decay.

    The decay ends at ``min_ratio`` of the group's lr (mmengine PolyLR with
    ``eta_min = min_ratio * lr``); 0 decays to zero.
    """

    def factor(step: int) -> float:
        if step < cfg.warmup_iters:
            return 1e-6 + (1 - 1e-6) * step / max(cfg.warmup_iters, 1)
        progress = (step - cfg.warmup_iters) / max(cfg.iterations - cfg.warmup_iters, 1)
        return min_ratio + (1.0 - min_ratio) * max(1.0 - progress, 0.0) ** cfg.poly_power

    return factor


def make_optimizer(groups: list[dict[str, Any]], cfg: TrainConfig) -> torch.optim.Optimizer:
    """``cfg.optimizer`` over ``groups`` (each with its own ``lr``, maybe ``weight_decay``)."""
    if cfg.optimizer == "SGD":
        return torch.optim.SGD(groups, lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=cfg.betas, weight_decay=cfg.weight_decay)


def make_loader(
    data: torch.utils.data.Dataset, cfg: TrainConfig, shard: bool = True
) -> torch.utils.data.DataLoader:
    """Seeded, shuffled batches of ``cfg.batch_size`` (the global batch under torchrun).

    ``shard=False`` when ``data`` already holds only this rank's part.
    """
    if len(data) == 0:
        raise DataError("the training split is empty")
    inner = distributed.make_sampler(data, seed=cfg.seed) if shard else None
    sampler = EpochOrder(len(data), cfg.seed, inner, keyed=isinstance(data, CropDataset))
    batch_size = distributed.per_rank_batch(cfg.batch_size)
    n_local = len(sampler)
    return torch.utils.data.DataLoader(
        data,
        batch_size=min(batch_size, n_local),
        sampler=sampler,
        drop_last=n_local >= batch_size,
        generator=torch.Generator().manual_seed(cfg.seed),  # workers' base seeds; no draw depends on them
        num_workers=cfg.num_workers,
        persistent_workers=cfg.num_workers > 0,  # forked once per training, not once per epoch
        collate_fn=collate_skip,
    )


def train_loop(
    model: nn.Module,
    loader: torch.utils.data.DataLoader,
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    groups: list[dict[str, Any]],
    cfg: TrainConfig,
    device: torch.device,
    progress: Callable[[int, float], None] | None = None,
    resume: Resume | None = None,
    data_name: str = "the training data",
    with_targets: bool = False,
) -> dict[str, Any]:
    """``cfg.iterations`` steps of ``loss_fn(model(inputs), targets)``; returns a log.

    ``with_targets``: the model computes its own loss and takes the targets,
    ``loss_fn(model(inputs, targets), targets)`` (IMDL-BenCo's models return
    their ``backward_loss``); seeding, resume, AMP and DDP are the same.

    Label-map targets are watched until a labelled pixel comes: when the first
    :data:`LABEL_PATIENCE` batches (on every rank) hold only 255 ('ignore'),
    the training of ``data_name`` stops with a DataError instead of learning
    from zero losses.

    ``groups`` are optimiser parameter groups, each with its ``lr``.  The
    optimiser, warm-up + poly schedule (power 0 = constant) with its floor,
    bf16 autocast on CUDA and DDP under torchrun are shared by every
    detector kind; nothing here is specific to one task.  With ``resume``
    the loop saves its state every ``resume.every`` steps and starts from
    the newest saved state (see :mod:`.resume`); the result is the same.
    """
    opt = make_optimizer(groups, cfg)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, [poly_lr_lambda(cfg, min(cfg.min_lr / g["lr"], 1.0) if g["lr"] > 0 else 0.0) for g in groups]
    )
    use_amp = cfg.amp and device.type == "cuda"
    fmt = torch.channels_last if cfg.channels_last else torch.contiguous_format
    model.to(device).train()
    model.to(memory_format=fmt)
    net = distributed.wrap_ddp(model, device)
    losses: list[float] = []
    skipped = 0
    batches = BatchStream(loader)
    if resume is not None and distributed.world_size() > 1:
        log.info("no resumable training state under torchrun: a killed run trains again from the start")
        resume = None
    every = resume.interval(cfg.iterations) if resume is not None else 0
    start = 0
    saved = resume.load() if resume is not None else None
    if saved is not None:
        start, tensors, state = saved
        losses, skipped = restore(tensors, state, model, opt, sched, batches)
        log.info("resuming training at step %d of %d from %s", start, cfg.iterations, resume.folder)
    watch = LabelWatch(data_name, min(LABEL_PATIENCE, cfg.iterations - start))
    for step in range(start, cfg.iterations):
        batch = next(batches)
        while batch is None:
            skipped += loader.batch_size or 0
            batch = next(batches)
        inputs, targets, bad = batch
        skipped += bad
        watch.check(targets)
        inputs, targets = inputs.to(device, non_blocking=True), targets.to(device, non_blocking=True)
        if inputs.dim() == 4:
            inputs = inputs.contiguous(memory_format=fmt)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=use_amp):
            logits = net(inputs, targets) if with_targets else net(inputs)
        loss = loss_fn(logits, targets)
        value = distributed.mean(loss)
        if not math.isfinite(value):
            raise ConfigError(f"training diverged at step {step} (loss {value}); lower the lr")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(value)
        if every and (step + 1) % every == 0 and step + 1 < cfg.iterations:
            resume.save(step + 1, *capture(model, opt, sched, batches, losses, skipped))
        if progress is not None:
            progress(step + 1, value)
    model.eval()
    k = max(1, min(20, len(losses) // 5))
    return {
        "iterations": cfg.iterations,
        "first_loss": float(np.mean(losses[:k])),
        "final_loss": float(np.mean(losses[-k:])),
        "skipped_samples": sum(distributed.all_gather(skipped)),
        "world_size": distributed.world_size(),
        "losses": [round(x, 5) for x in losses[:: max(1, len(losses) // 100)]],
    }


LABEL_PATIENCE = 10
"""Training batches a run may see with only 'ignore' labels before it stops (a dataset
whose labels are all 255 would otherwise train on zero losses and be scored)."""


class LabelWatch:
    """Counts the label pixels of the first batches until one is not 255 ('ignore')."""

    def __init__(self, data_name: str, patience: int):
        self.data_name, self.patience = data_name, patience
        self.done, self.batches, self.ignored, self.pixels = False, 0, 0, 0

    def check(self, targets: torch.Tensor) -> None:
        if self.done or targets.dim() != 3 or targets.is_floating_point():  # label maps only
            return
        self.batches += 1
        ignored = int((targets == IGNORE_INDEX).sum())
        counts = distributed.all_gather((ignored, targets.numel()))  # every rank decides alike
        self.ignored += sum(c[0] for c in counts)
        self.pixels += sum(c[1] for c in counts)
        if self.ignored < self.pixels:
            self.done = True
        elif self.batches >= self.patience:
            raise all_ignore_error(self.data_name, f"the first {self.batches} training batch(es)",
                                   self.ignored, self.pixels)


def train_segmenter(
    model: nn.Module,
    param_groups: list[dict[str, Any]],
    dataset: Dataset,
    ids: list[str],
    task: str,
    cfg: TrainConfig,
    device: torch.device,
    progress: Callable[[int, float], None] | None = None,
    resume: Resume | None = None,
) -> dict[str, Any]:
    """Train ``model`` (images in [0, 1] -> logits) and return a log.

    ``param_groups`` are optimiser groups; a group may carry ``lr_mult``.
    ``resume``: see :func:`train_loop`.
    Under torchrun the model is trained through DistributedDataParallel on
    this rank's shard with ``cfg.batch_size // world`` images per step; the
    logged losses are means over ranks.
    """
    if not ids:
        raise DataError("the training split is empty")
    torch.manual_seed(cfg.seed)
    loader = make_loader(CropDataset(dataset, ids, task, cfg), cfg)
    groups = [
        {**{k: v for k, v in g.items() if k != "lr_mult"}, "lr": cfg.lr * g.get("lr_mult", 1.0)}
        for g in param_groups
    ]
    return train_loop(model, loader, partial(segmentation_loss, task=task), groups, cfg, device, progress, resume,
                      data_name=dataset.name)
