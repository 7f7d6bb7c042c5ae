"""The shared training loop (:func:`train_loop`) and the segmentation loss.

One loop serves every detector kind; for a segmenter
(:meth:`~.segmenter.SegmentationDetector.fit`): random crops + horizontal
flips (the ``paper`` recipe first rescales each image, as mmseg's
RandomResize; the data side is :mod:`.train_data`), AdamW (or SGD with
momentum) with a separate learning-rate multiplier for the decode
head, linear warm-up then a poly schedule with an optional floor (the
open-source SegFormer and mmseg SGD recipes), AMP on CUDA, and a seeded
sampler so that the same seed gives the same model.  Under torchrun the
network is wrapped in DistributedDataParallel and each rank trains on its
shard of the data; ``batch_size`` is the global batch (see
:mod:`diffzoo.harness.core.distributed`).
"""

from __future__ import annotations

import logging
import math
import signal
import time
from collections.abc import Callable
from contextlib import closing
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from diffzoo.harness.core import distributed
from diffzoo.harness.core.errors import DataError, TrainingStopped
from diffzoo.harness.core.protocols import Report
from diffzoo.harness.core.train_config import TrainConfig
from diffzoo.harness.core.types import IGNORE_INDEX
from diffzoo.harness.data.mask_encoding import all_ignore_error
from diffzoo.harness.models.monitor import TrainMonitor
from diffzoo.harness.models.resume import BatchStream, capture, restore
from diffzoo.harness.models.stopping import StopSignals
from diffzoo.harness.models.train_data import TrainHooks, batch_ids

log = logging.getLogger(__name__)


AuxLogits = list[tuple[torch.Tensor, float]]
"""Auxiliary heads' ``(logits, loss weight)``, returned next to the main logits in training."""


LossResult = torch.Tensor | tuple[torch.Tensor, dict[str, torch.Tensor]]
"""What a loss function returns: the loss, or (loss, its named terms) to have them logged."""


def split_loss(result: LossResult) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """(loss, terms) of a loss function's result."""
    if isinstance(result, tuple):
        loss, terms = result
        return loss, dict(terms)
    return result, {}


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
    if isinstance(logits, tuple):  # the terms' sum, in their order
        return split_loss(segmentation_loss_terms(logits, target, task))[0]
    if logits.shape[-2:] != target.shape[-2:]:
        logits = F.interpolate(logits, size=target.shape[-2:], mode="bilinear", align_corners=False)
    if task == "semantic":
        return F.cross_entropy(logits.float(), target, ignore_index=IGNORE_INDEX)
    valid = target != IGNORE_INDEX
    if not valid.any():
        return logits.sum() * 0.0
    return F.binary_cross_entropy_with_logits(logits[:, 0].float()[valid], target[valid].float())


def segmentation_loss_terms(
    logits: torch.Tensor | tuple[torch.Tensor, AuxLogits], target: torch.Tensor, task: str
) -> LossResult:
    """:func:`segmentation_loss`, with its terms for the log when there are
    auxiliary heads: ``decode`` (the main head) and ``aux1``, ``aux2``, ... (weighted);
    the total is computed in the same order, so it is the same number."""
    if not isinstance(logits, tuple):
        return segmentation_loss(logits, target, task)
    main, aux = logits
    loss = decode = segmentation_loss(main, target, task)
    terms = {"decode": decode}
    for i, (aux_logits, weight) in enumerate(aux, start=1):
        terms[f"aux{i}"] = weight * segmentation_loss(aux_logits, target, task)
        loss = loss + terms[f"aux{i}"]
    return loss, terms


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


def train_loop(
    model: nn.Module,
    loader: torch.utils.data.DataLoader,
    loss_fn: Callable[[Any, torch.Tensor], LossResult],
    groups: list[dict[str, Any]],
    cfg: TrainConfig,
    device: torch.device,
    progress: Report | None = None,
    hooks: TrainHooks | None = None,
    data_name: str = "the training data",
    with_targets: bool = False,
) -> dict[str, Any]:
    """``cfg.iterations`` steps of ``loss_fn(model(inputs), targets)``; returns a log.

    ``loss_fn`` returns the loss, or ``(loss, {term name: tensor})`` to have
    each term logged.  ``with_targets``: the model computes its own loss and
    takes the targets, ``loss_fn(model(inputs, targets), targets)``
    (IMDL-BenCo's models return their ``backward_loss``); seeding, resume,
    AMP and DDP are the same.

    Label-map targets are watched until a labelled pixel comes: when the first
    :data:`LABEL_PATIENCE` batches (on every rank) hold only 255 ('ignore'),
    the training of ``data_name`` stops with a DataError instead of learning
    from zero losses.  The first loss that is not finite stops it with a
    ModelError naming the step, the last finite loss and the batch's samples.

    ``groups`` are optimiser parameter groups, each with its ``lr`` (and a
    ``name`` for the log).  The optimiser, warm-up + poly schedule (power 0 =
    constant) with its floor, bf16 autocast on CUDA and DDP under torchrun
    are shared by every detector kind; nothing here is specific to one task.
    ``hooks`` (a ``fit`` passes its ``train.hooks``) are how the harness watches
    the training: with ``hooks.resume`` the loop saves its state every
    ``resume.every`` steps and starts from the newest saved state (see
    :mod:`.resume`); the result is the same.  ``hooks.monitor`` logs, validates
    (:mod:`.monitor`) and checks the losses.  SIGINT and SIGTERM stop the loop
    after the step they arrive in, with its state saved (:mod:`.stopping`).
    """
    hooks = hooks or TrainHooks()
    resume = hooks.resume
    opt = make_optimizer(groups, cfg)
    lambdas = [poly_lr_lambda(cfg, min(cfg.min_lr / g["lr"], 1.0) if g["lr"] > 0 else 0.0) for g in groups]
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambdas)
    names = [str(g.get("name") or f"group{i}") for i, g in enumerate(groups)]
    use_amp = autocast_enabled(cfg, device)
    fmt = torch.channels_last if cfg.channels_last else torch.contiguous_format
    model.to(device).train()
    model.to(memory_format=fmt)
    net = distributed.wrap_ddp(model, device)
    monitor = hooks.monitor or TrainMonitor(type(model).__name__)
    losses: list[float] = []
    skipped = 0
    batches = BatchStream(loader)
    every = resume.interval(cfg.iterations) if resume is not None else 0
    start = 0
    saw_edited = False
    saved = resume.load_all(model) if resume is not None else None  # every rank, under torchrun
    if resume is not None and saved is not None:
        start, tensors, state = saved
        losses, skipped, saw_edited = restore(tensors, state, model, opt, sched, batches)
        log.info("resuming training at step %d of %d from %s", start, cfg.iterations, resume.folder)
    watch = LabelWatch(data_name, min(LABEL_PATIENCE, cfg.iterations - start))
    watch.edited = saw_edited  # the steps before a resume count: the check below covers every step
    monitor.start(start, cfg.iterations, device)
    world = distributed.world_size()
    with StopSignals() as signals, closing(batches):  # its workers end with the loop, however it ends
        for step in range(start, cfg.iterations):
            began = time.perf_counter()
            batch = next(batches)
            while batch is None:
                skipped += loader.batch_size or 0
                batch = next(batches)
            waited = time.perf_counter() - began
            inputs, targets, bad = batch
            skipped += bad
            watch.check(targets)
            inputs, targets = inputs.to(device, non_blocking=True), targets.to(device, non_blocking=True)
            if inputs.dim() == 4:
                inputs = inputs.contiguous(memory_format=fmt)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=use_amp):
                out = net(inputs, targets) if with_targets else net(inputs)
            loss, terms = split_loss(loss_fn(out, targets))
            value, stop = distributed.mean_and_any(loss, signals.signum is not None)
            monitor.watch.check(step + 1, value, None if math.isfinite(value) else batch_ids(loader, batches))
            lrs = {name: g["lr"] for name, g in zip(names, opt.param_groups)}  # this step's
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            losses.append(value)
            # every rank at the same step: the stop and the interval are shared
            if resume is not None and (stop or (every and (step + 1) % every == 0 and step + 1 < cfg.iterations)):
                resume.save_all(step + 1, *capture(model, opt, sched, batches, losses, skipped, watch.saw_edited()))
            if progress is not None:
                progress(step + 1, value)
            logged = monitor.logs_at(step + 1)
            monitor.step(step + 1, batches.epoch, value, {k: float(v) for k, v in terms.items()} if logged else {},
                         lrs, int(inputs.shape[0]) * world, waited, time.perf_counter() - began)
            if stop:
                monitor.close()
                raise TrainingStopped(step + 1, cfg.iterations, signals.signum or signal.SIGTERM,
                                      resumable=resume is not None)
            if monitor.validation_due(step + 1):
                monitor.run_validation(step + 1, model)
    if not watch.saw_edited():
        if resume is not None and distributed.is_main():
            resume.clear()  # its states would resume past this check
        raise DataError(f"detector {monitor.watch.detector!r}: training on {data_name} saw no edited {watch.unit} in "
                        f"its {cfg.iterations} steps (every label was authentic): its training split holds no edited "
                        "image, and a model that never saw one is not scored; nothing was cached")
    model.eval()
    k = max(1, min(20, len(losses) // 5))
    return {
        "iterations": cfg.iterations,
        "first_loss": float(np.mean(losses[:k])),
        "final_loss": float(np.mean(losses[-k:])),
        "skipped_samples": sum(distributed.all_gather(skipped)),
        "world_size": distributed.world_size(),
        "losses": [round(x, 5) for x in losses[:: max(1, len(losses) // 100)]],
        # the schedule from its base: a group's "lr" is the scheduler's latest value, and a resumed
        # training's is the one it was saved with
        **monitor.finish(losses, lambda s: float(sched.base_lrs[0]) * lambdas[0](s)),
    }


def autocast_enabled(cfg: TrainConfig, device: torch.device) -> bool:
    """bf16 autocast: ``cfg.amp`` on CUDA (a test turns it on for the CPU)."""
    return cfg.amp and device.type == "cuda"


LABEL_PATIENCE = 10
"""Training batches a run may see with only 'ignore' labels before it stops (a dataset
whose labels are all 255 would otherwise train on zero losses and be scored)."""


class LabelWatch:
    """Counts the label pixels of the first batches until one is not 255 ('ignore'), and
    notes whether any batch holds an edited pixel or image."""

    def __init__(self, data_name: str, patience: int):
        self.data_name, self.patience = data_name, patience
        self.done, self.batches, self.ignored, self.pixels = False, 0, 0, 0
        self.edited, self.unit = False, "image"  # an edited pixel (label maps) or image (image labels) seen yet

    def saw_edited(self) -> bool:
        """Whether any rank's training saw an edited pixel or image."""
        return any(distributed.all_gather(self.edited))

    def check(self, targets: torch.Tensor) -> None:
        if not self.edited:  # until one comes
            self.edited = bool(((targets > 0) & (targets != IGNORE_INDEX)).any())
            self.unit = "pixel" if targets.dim() == 3 else "image"
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
            error = all_ignore_error(self.data_name, f"the first {self.batches} training batch(es)",
                                     self.ignored, self.pixels)
            if error is not None:  # None only without any label pixel
                raise error
