"""Evaluation inputs, read by DataLoader worker processes (core/parallel.py), and what a
distortion's signature says about the input it gives the detector.

Each sample is read, distorted and brought to the detector's input rule in
the loader's worker processes (``workers`` of them; 0: in this process),
while this process runs the model and the metrics.  Items come back in the
split's order whatever the number of workers, and every one of them is
computed from the sample alone, so the records of a run do not depend on
``workers`` (tests/test_loading.py).

An error in a worker does not travel as a traceback: the item carries the
exception itself (``EvalInput.error``) and the caller decides (a corrupt
sample is skipped and counted, anything else is raised in this process as
the very exception a worker-less run raises).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from diffzoo.harness.core.errors import ConfigError
from diffzoo.harness.core.parallel import available_cores, ordered_map, sendable
from diffzoo.harness.core.protocols import Dataset
from diffzoo.harness.core.types import SampleMeta, shareable
from diffzoo.harness.data.distortions import resize_image, shorter_side_size
from diffzoo.harness.data.fingerprint import DigestCache

log = logging.getLogger(__name__)

Distortion = Callable[..., tuple[np.ndarray, np.ndarray]]
"""``distortion(image, label, **params) -> (image, label)`` (docs/distortions.md)."""


def usable_workers(workers: int) -> int:
    """``workers``, at most the CPU cores this process may use (more only compete for them,
    and each takes memory), said in one warning line when it is more."""
    cores = available_cores()
    if workers > cores:
        _say_capped(workers, cores)
    return min(workers, cores)


@functools.cache  # once per process: the runners of a run's reference detectors ask again
def _say_capped(workers: int, cores: int) -> None:
    log.warning("%d loader workers asked for, more than the %d CPU core(s) this process may use: "
                "at most %d are started", workers, cores, cores)


def detector_input(image: np.ndarray, short_side: int | None) -> np.ndarray:
    """The recipe's evaluation input rule: the image as stored (``None``,
    ``native``), or resized (Pillow bicubic) so its shorter side is
    ``short_side`` (``paper``: the training crop size)."""
    if short_side is None:
        return image
    height, width = image.shape[:2]
    return resize_image(image, shorter_side_size(height, width, short_side))


def chw_uint8(image: np.ndarray) -> torch.Tensor:
    """An H x W x 3 uint8 image as a 3 x H x W uint8 tensor (what workers send: a quarter of float's bytes)."""
    return torch.from_numpy(shareable(image)).permute(2, 0, 1)


def as_batch(image: torch.Tensor) -> torch.Tensor:
    """A 3 x H x W uint8 tensor as the 1 x 3 x H x W float batch in [0, 1]."""
    return image[None].float() / 255.0


@dataclass
class EvalInput:
    """One sample, ready for the detector: its id, the distorted image (3 x H x W
    uint8), the label to score against, its metadata and its stored size; or
    the error reading or distorting it raised (``error``; the rest is None)."""

    sid: str
    image: torch.Tensor | None = None
    label: np.ndarray | None = None
    meta: SampleMeta | None = None
    size: tuple[int, int] | None = None
    label_kept: bool = True  # the distortion returned the stored label itself
    error: BaseException | None = None

    def pin_memory(self) -> EvalInput:
        """The same item with its image in page-locked memory (the loader's ``pin_memory``)."""
        if self.image is not None:
            self.image = self.image.pin_memory()
        return self


def _parameters(distortion: Distortion) -> set[str]:
    try:
        return set(inspect.signature(distortion).parameters)
    except (TypeError, ValueError):
        return set()


def check_params(distortion: Distortion, name: str, params: dict[str, Any], case: str) -> None:
    """ConfigError when ``distortion`` cannot be called with ``params`` (a name it does not take,
    one it needs left out): said as the case is planned, not by its pass's first image."""
    try:
        signature = inspect.signature(distortion)
    except (TypeError, ValueError):  # no signature to read: its pass says
        return
    context = {k: None for k in ("meta", "label_space") if k in signature.parameters and k not in params}
    try:  # a name it does not take first (a misspelt one is also a missing one), then one left out
        signature.bind_partial(None, None, **params, **context)
        signature.bind(None, None, **params, **context)
    except TypeError as exc:
        raise ConfigError(f"case {case}: distortion {name!r} cannot take the parameters {params}: {exc}") from None


def sets_input_size(distortion: Distortion) -> bool:
    """True for a distortion that takes ``input_size`` (the model's input
    resolution, e.g. ``rescale``): it decides the detector's input size
    itself, so the recipe's evaluation resize is not applied after it."""
    return "input_size" in _parameters(distortion)


def same_input(distortion: Distortion, params: dict[str, Any], sizes: Iterable[tuple[int, int]],
               short_side: int | None) -> bool:
    """True when ``distortion`` with ``params`` feeds the detector exactly
    the undistorted pass's input for images of every size in ``sizes``.

    Only distortions that change nothing but the size (they carry
    ``output_size(h, w, **params)``: ``none``, ``resize``, ``rescale``) can:
    one that sets the input size itself must give the size the evaluation
    rule gives the undistorted image (the rule's resize and the distortion's
    are the same function); any other must leave the image as it is.
    """
    size_of = getattr(distortion, "output_size", None)
    if size_of is None:
        return False
    own = sets_input_size(distortion)
    for h, w in sizes:
        baseline = shorter_side_size(h, w, short_side) if own and short_side is not None else (h, w)
        if tuple(size_of(h, w, **params)) != baseline:
            return False
    return True


def _eval_input(dataset: Dataset, distortion: Callable[..., Any], params: dict[str, Any], short_side: int | None,
                context: set[str], sid: str) -> EvalInput:
    """Sample ``sid`` as its :class:`EvalInput`: read, distorted (given the ``context`` it
    declares), resized by the input rule."""
    try:
        sample = dataset.load(sid)
        extra = {k: v for k, v in (("meta", sample.meta), ("label_space", dataset.label_space)) if k in context}
        image, label = distortion(sample.image, sample.label, **params, **extra)
        image = detector_input(image, short_side)
        return EvalInput(sid, chw_uint8(image), label, sample.meta, tuple(sample.image.shape[:2]),
                         label_kept=label is sample.label)
    except (Exception, SystemExit) as exc:  # handed to the caller, which skips or raises it (a sys.exit() too)
        return EvalInput(sid, error=sendable(exc))


def eval_inputs(dataset: Dataset, ids: Sequence[str], distortion: Callable[..., Any], params: dict[str, Any],
                *, short_side: int | None = None, workers: int = 0, pin_memory: bool = False) -> Iterator[EvalInput]:
    """Every id's :class:`EvalInput`, in order, read by ``workers`` processes
    (core/parallel.py); the distortion gets the sample's ``meta`` / ``label_space``
    when it declares them.  ``short_side``: the evaluation input rule
    (:func:`detector_input`); ``pin_memory``: page-locked images, for a GPU."""
    context = {"meta", "label_space"} & _parameters(distortion)  # what it declares, it gets
    read = functools.partial(_eval_input, dataset, distortion, params, short_side, context)
    return ordered_map(read, list(ids), workers, pin_memory=pin_memory)


def image_digest(image: np.ndarray) -> str:
    """sha256 of a decoded image: its size and its RGB pixels, so that one image stored twice (another
    folder, name, container or lossless encoding) has one digest."""
    height, width = image.shape[:2]
    return hashlib.sha256(f"{height}x{width}:".encode() + np.ascontiguousarray(image).tobytes()).hexdigest()


def _sample_digest(dataset: Dataset, sid: str) -> str | None:
    """:func:`image_digest` of sample ``sid``'s image, or None when it cannot be read (a run
    skips or stops at that sample when it evaluates it)."""
    try:
        return image_digest(dataset.load(sid).image)
    except Exception:  # an unreadable sample has no content to compare
        return None


def image_digests(dataset: Dataset, ids: Sequence[str], workers: int = 0) -> dict[str, str]:
    """:func:`image_digest` of each of ``ids`` that can be read, by id, read by ``workers`` processes.
    Memoised under the diffzoo cache per dataset fingerprint: the fingerprint fixes every id's
    content (data/fingerprint.py), so an entry never goes stale."""
    cache = DigestCache(f"images:{dataset.fingerprint()}")
    out: dict[str, str] = {}
    todo = []
    for sid in ids:
        hit = cache.get(sid, [])
        if hit is None:
            todo.append(sid)
        else:
            out[sid] = hit
    if todo:
        log.info("hashing %d image(s) of %s once, to compare evaluation and training images", len(todo),
                 dataset.name)
    for sid, digest in zip(todo, ordered_map(functools.partial(_sample_digest, dataset), todo, workers), strict=True):
        if digest is not None:
            out[sid] = digest
            cache.put(sid, [], digest)
    cache.save()
    return out
