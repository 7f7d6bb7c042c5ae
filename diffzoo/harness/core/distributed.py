"""Running under ``torchrun``: a small layer over :mod:`torch.distributed`.

diffzoo never schedules processes itself.  ``torchrun`` (or any launcher that
sets ``RANK``, ``WORLD_SIZE`` and ``LOCAL_RANK``, e.g. torchrun's multi-node
rendezvous) starts one process per device; :func:`init` joins them into a
process group (NCCL on CUDA, gloo on CPU).  Then:

- evaluation: each rank scores :func:`shard` of a split's ids,
  and the metric states are gathered to rank 0 and merged
  (:func:`diffzoo.harness.run.evaluate.gather_eval_result`); merged states give exactly the single-process
  numbers;
- training: :func:`wrap_ddp` wraps the network in DistributedDataParallel,
  :func:`make_sampler` shards the data, :func:`per_rank_batch` splits the
  recipe's (global) batch; rank 0 alone writes the checkpoint
  (:func:`is_main`, :func:`barrier`);
- output: only rank 0 writes records and prints.

A process started without those variables (or with ``WORLD_SIZE=1``) never
initialises torch.distributed: every helper here then is the identity.
"""

from __future__ import annotations

import atexit
import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import torch
from torch import nn

from diffzoo.harness.core.errors import ConfigError, DiffzooError

log = logging.getLogger(__name__)

T = TypeVar("T")
LAUNCH_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK")


def launched() -> bool:
    """True when started by torchrun (or alike) with more than one process."""
    return all(v in os.environ for v in LAUNCH_VARS) and int(os.environ["WORLD_SIZE"]) > 1


def launch_rank() -> int:
    """This process's rank as torchrun set it (0 when not launched); known
    before the process group is joined."""
    return int(os.environ["RANK"]) if launched() else 0


def is_initialized() -> bool:
    return torch.distributed.is_available() and torch.distributed.is_initialized()


def rank() -> int:
    return torch.distributed.get_rank() if is_initialized() else 0


def world_size() -> int:
    return torch.distributed.get_world_size() if is_initialized() else 1


def is_main() -> bool:
    return rank() == 0


def init(device: torch.device) -> torch.device:
    """Join the process group if launched by torchrun; return this rank's device.

    Idempotent.  ``device`` is the requested one: a CUDA device without an
    index becomes ``cuda:LOCAL_RANK`` under torchrun.  The backend is NCCL
    for CUDA and gloo otherwise.  Single-process runs return ``device`` and
    leave torch.distributed alone.
    """
    if not launched():
        return device
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    if not is_initialized():
        if not torch.distributed.is_available():
            raise ConfigError("launched by torchrun, but this torch build has no torch.distributed")
        if device.type == "cuda":
            torch.cuda.set_device(device)
        backend = "nccl" if device.type == "cuda" else "gloo"
        torch.distributed.init_process_group(backend, device_id=device if device.type == "cuda" else None)
        atexit.register(shutdown)
        log.info("rank %d of %d on %s (%s)", rank(), world_size(), device, backend)
    return device


def shutdown(sync: bool = False) -> None:
    """Leave the process group (no-op when none was joined).

    ``sync=True`` (a normal end) first waits for every rank: a rank that
    destroys its gloo group while a peer is still writing output can abort
    at exit ("terminate called without an active exception").  After an
    error the peers may be inside another collective, so no barrier then.
    """
    if is_initialized():
        if sync:
            torch.distributed.barrier()
        torch.distributed.destroy_process_group()


def barrier() -> None:
    if is_initialized():
        torch.distributed.barrier()


@contextmanager
def main_first() -> Iterator[None]:
    """Rank 0 runs the block first (e.g. builds or downloads into a shared
    cache); the other ranks run it after rank 0 has finished."""
    if not is_main():
        barrier()
    yield
    if is_main():
        barrier()


def on_main(work: Callable[[], T]) -> T | None:
    """Run ``work`` on rank 0 alone, every rank waiting for it; its result on rank 0,
    None elsewhere.  An exception there is raised on every rank (a DiffzooError as it
    is, another as a DiffzooError naming it), so that no rank waits for ever in the next
    collective for a rank 0 that has failed."""
    if not is_initialized():
        return work()
    result: T | None = None
    failure: BaseException | None = None
    if is_main():
        try:
            result = work()
        except Exception as exc:
            failure = exc
    sent = broadcast(None if failure is None else failure if isinstance(failure, DiffzooError) else
                     DiffzooError(f"rank 0 failed: {type(failure).__name__}: {failure}"))
    if failure is not None:
        raise failure
    if sent is not None:
        raise sent
    return result


def main_waits(attempt: Callable[[], bool]) -> None:
    """Rank 0 calls ``attempt`` (e.g. taking a lock without waiting) until it returns
    True; the other ranks wait with it, in step.  Each try is one short collective, so no
    collective outlives the process group's timeout however long rank 0 waits.  In a
    single process ``attempt`` is simply retried."""
    while not broadcast(attempt() if is_main() else None):
        time.sleep(0.5)  # between two of rank 0's tries


# -- data sharding --------------------------------------------------------------

def shard(ids: Sequence[T], rank_: int | None = None, world: int | None = None) -> list[T]:
    """This rank's part of ``ids``: every ``world``-th item from ``rank``.

    Deterministic; the shards of all ranks cover every item exactly once.
    """
    r = rank() if rank_ is None else rank_
    w = world_size() if world is None else world
    if not 0 <= r < w:
        raise ConfigError(f"rank {r} is outside a world of {w} process(es)")
    return list(ids)[r::w]


# -- collectives ------------------------------------------------------------------

def gather(obj: Any) -> list[Any] | None:
    """Every rank's picklable ``obj``, in rank order, on rank 0; None elsewhere."""
    if not is_initialized():
        return [obj]
    out: list[Any] | None = [None] * world_size() if is_main() else None
    torch.distributed.gather_object(obj, out, dst=0)
    return out


def all_gather(obj: Any) -> list[Any]:
    """Every rank's picklable ``obj``, in rank order, on every rank."""
    if not is_initialized():
        return [obj]
    out: list[Any] = [None] * world_size()
    torch.distributed.all_gather_object(out, obj)
    return out


def broadcast(obj: T) -> T:
    """Rank 0's picklable ``obj`` on every rank."""
    if not is_initialized():
        return obj
    box = [obj]
    torch.distributed.broadcast_object_list(box, src=0)
    return box[0]


def mean_and_any(value: torch.Tensor, flag: bool) -> tuple[float, bool]:
    """(the mean over ranks of the scalar ``value`` as a float, whether ``flag`` is set on any
    rank), in one collective: the training loop's loss and its stop request travel together."""
    if not is_initialized():
        return float(value.item()), flag
    t = torch.stack([value.detach().float().reshape(()), value.new_tensor(float(flag), dtype=torch.float32)])
    torch.distributed.all_reduce(t)
    total, flags = t.tolist()
    return total / world_size(), flags > 0


# -- training -----------------------------------------------------------------------

def per_rank_batch(batch_size: int) -> int:
    """The per-process batch: a recipe's batch size is the global batch.

    ``batch_size // world``; a remainder is dropped (logged), and a batch
    smaller than the number of processes is an error.
    """
    world = world_size()
    if batch_size < world:
        raise ConfigError(f"batch size {batch_size} is smaller than the {world} processes; "
                          f"use --batch-size {world} or more")
    if batch_size % world:
        log.warning("batch size %d is not a multiple of %d processes: global batch is %d",
                    batch_size, world, batch_size // world * world)
    return batch_size // world


def make_sampler(data: torch.utils.data.Dataset, seed: int) -> torch.utils.data.DistributedSampler | None:
    """A DistributedSampler giving this rank its part of ``data`` (shuffled
    from ``seed`` + epoch), or None in a single process, where the caller
    keeps its own sampler.  Call ``set_epoch`` on it before each pass."""
    if world_size() == 1:
        return None
    return torch.utils.data.DistributedSampler(data, num_replicas=world_size(), rank=rank(), shuffle=True, seed=seed)


def wrap_ddp(model: nn.Module, device: torch.device) -> nn.Module:
    """``model`` wrapped in DistributedDataParallel under torchrun, else itself.

    The wrapper shares ``model``'s parameters, so training it trains
    ``model``; DDP broadcasts rank 0's initial weights and averages gradients.
    """
    if world_size() == 1:
        return model
    ids = [device.index] if device.type == "cuda" else None
    return nn.parallel.DistributedDataParallel(model, device_ids=ids)
