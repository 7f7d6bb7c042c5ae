"""What a training is given and how the shared loop reads it: the input of
``fit`` (:class:`TrainData`: the dataset and sample ids, and the harness's
:class:`TrainHooks`), random crops and flips of the samples
(:class:`CropDataset`), the seeded order of each epoch (:class:`EpochOrder`),
the ``paper`` recipe's rescale, and the loader that batches them
(:func:`make_loader`).

Every random draw of an item comes from a generator seeded by the config's
seed, the rank and the item's key, so a model does not depend on the number
of loader workers, and a resumed training needs no generator state.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sized
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import torch

from diffzoo.harness.core import distributed
from diffzoo.harness.core.errors import CorruptSampleError, DataError
from diffzoo.harness.core.protocols import Dataset
from diffzoo.harness.core.train_config import PAPER_RATIO, TrainConfig
from diffzoo.harness.core.types import IGNORE_INDEX, Sample, shareable
from diffzoo.harness.data.distortions import resize_image, resize_label, shorter_side_size
from diffzoo.harness.models.monitor import TrainMonitor
from diffzoo.harness.models.resume import BatchStream, Resume
from diffzoo.harness.models.stopping import quiet_worker

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainHooks:
    """How the harness watches one training.  A detector does not read these: its
    ``fit`` passes ``train.hooks`` on to :func:`~.trainer.train_loop`, which uses them."""

    resume: Resume | None = None
    """Where the shared loop saves its state to resume after a kill (None: no saves)."""
    monitor: TrainMonitor | None = None
    """The log, TensorBoard events, validation and loss check of the training (:mod:`.monitor`)."""
    preparing: Callable[[int, int], None] | None = None
    """Hears of work a detector does before its training steps (:meth:`TrainData.prepared`)."""


@dataclass(frozen=True)
class TrainData:
    """The training input of :meth:`Detector.fit`: a dataset and the ids of its
    samples to train on, and the harness's :class:`TrainHooks` (opaque to a
    detector: pass ``hooks`` to ``train_loop``)."""

    dataset: Dataset
    ids: list[str]
    hooks: TrainHooks = field(default_factory=TrainHooks)

    def prepared(self, done: int, total: int) -> None:
        """Say how far work before the training steps has come (UniversalFakeDetect's
        feature extraction), so that the run's progress shows it."""
        if self.hooks.preparing is not None:
            self.hooks.preparing(done, total)


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

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, key: int | tuple[int, ...]) -> tuple[torch.Tensor, torch.Tensor] | None:
        index, *stream = key if isinstance(key, tuple) else (key,)  # a plain index or (index, epoch, position)
        rng = np.random.default_rng([self.cfg.seed, self.rank, index, *stream])  # this item's draws
        try:
            sample = self.dataset.load(self.ids[index])
        except CorruptSampleError as exc:
            log.warning("skipping corrupt training sample: %s", exc)
            return None
        return self._example(sample, rng)

    def _example(self, sample: Sample, rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """(image as a 3 x H x W float tensor in [0, 1], target) of one loaded sample: here its
        label map, rescaled by the recipe, cropped and flipped with the image."""
        label = sample.label
        if self.task != "semantic":
            label = self.dataset.label_space.to_binary_map(label)
        image, label = paper_rescale(sample.image, label, self.cfg, rng)
        image, label = crop_view(image, label, rng, self.cfg.crop_size, self.cfg.hflip)
        return as_float_chw(image), torch.from_numpy(shareable(label)).long()


def as_float_chw(image: np.ndarray) -> torch.Tensor:
    """An H x W x 3 uint8 image as the 3 x H x W float tensor in [0, 1] a training batch holds."""
    return torch.from_numpy(shareable(image)).permute(2, 0, 1).float() / 255.0


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

    def __init__(self, n: int, seed: int, inner: torch.utils.data.DistributedSampler | None = None,
                 keyed: bool = False):
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
    height, width = label.shape
    size = shorter_side_size(height, width, max(1, round(cfg.crop_size * ratio)))
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


def crop_view(
    image: np.ndarray, label: np.ndarray, rng: np.random.Generator, size: int, hflip: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Random ``size`` crop (padded when smaller, label = ignore), then a flip with p = 0.5."""
    image, label = random_crop(image, label, size, rng)
    if hflip and rng.random() < 0.5:
        image, label = image[:, ::-1], label[:, ::-1]
    return image, label


def collate_skip(batch: list[Any]) -> tuple[torch.Tensor, torch.Tensor, int] | None:
    good = [b for b in batch if b is not None]
    if not good:
        return None
    images, labels = zip(*good)
    return torch.stack(images), torch.stack(labels), len(batch) - len(good)


def make_loader(
    data: torch.utils.data.Dataset, cfg: TrainConfig, shard: bool = True
) -> torch.utils.data.DataLoader:
    """Seeded, shuffled batches of ``cfg.batch_size`` (the global batch under torchrun).

    ``shard=False`` when ``data`` already holds only this rank's part.
    """
    size = len(cast(Sized, data))  # map-style: every dataset trained on has a length
    if size == 0:
        raise DataError("the training split is empty")
    inner = distributed.make_sampler(data, seed=cfg.seed) if shard else None
    sampler = EpochOrder(size, cfg.seed, inner, keyed=isinstance(data, CropDataset))
    batch_size = distributed.per_rank_batch(cfg.batch_size)
    n_local = len(sampler)
    if n_local < batch_size:  # said: each step trains on fewer images than the config (and its records) name
        log.warning("--batch-size %d is more than the %d training image(s): every step trains on all of them",
                    cfg.batch_size, size)
    per_epoch = max(1, n_local // batch_size)  # a worker loads whole batches: more would never be given one
    workers = min(cfg.num_workers, per_epoch)
    return torch.utils.data.DataLoader(
        data,
        batch_size=min(batch_size, n_local),
        sampler=sampler,
        drop_last=n_local >= batch_size,
        generator=torch.Generator().manual_seed(cfg.seed),  # workers' base seeds; no draw depends on them
        num_workers=workers,
        persistent_workers=workers > 0,  # forked once per training, not once per epoch
        worker_init_fn=quiet_worker,  # SIGINT/SIGTERM stop the training loop, not its workers
        collate_fn=collate_skip,
    )


def batch_ids(loader: torch.utils.data.DataLoader, batches: BatchStream) -> list[str] | None:
    """The sample ids of the batch ``batches`` gave last (from the epoch's order,
    which is a function of the epoch alone); None when the loader cannot tell."""
    sampler, ids = loader.sampler, getattr(loader.dataset, "ids", None)
    size = loader.batch_size
    if not isinstance(sampler, EpochOrder) or ids is None or not size:
        return None
    order = [key[0] if isinstance(key, tuple) else key for key in sampler]
    part = order[(batches.taken - 1) * size: batches.taken * size]
    return [str(ids[i]) for i in part]
