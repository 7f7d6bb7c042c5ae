"""Work spread over DataLoader worker processes: how many, and an ordered map.

``--workers N`` on ``run``, ``train``, ``predict`` and ``generate`` sets how
many processes read, decode and transform inputs while the main process runs
the model (default: :func:`default_workers`).  :func:`ordered_map` hands the
items to a ``torch.utils.data.DataLoader``, so results come back in the
items' order whatever the number of workers; a function that depends only on
its item gives the same results for any number.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar, cast

from diffzoo.harness.core.errors import ConfigError, DataError

T = TypeVar("T")
R = TypeVar("R")

WORKERS_ENV = "DIFFZOO_WORKERS"
"""Environment variable that sets the default number of loader workers."""


def available_cores() -> int:
    """The CPU cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def default_workers(device: Any = "cpu", threads: int | None = None) -> int:
    """Loader workers when none is asked for: ``$DIFFZOO_WORKERS`` if set, else
    by where the model runs (docs/scaling.md, "Loader workers").

    ``device`` (a torch device or its name): on a GPU, min(4, cores) — the
    CPU only reads and decodes.  On the CPU, the cores the model's
    ``threads`` leave free (torch's intra-op threads, every core by
    default), at most 4: a worker process there takes cores the model
    needs (measured on 2 cores: evaluation 1.3-1.6x slower with 2 workers
    than with none), while reading and decoding are about 2% of a CPU
    forward.  So evaluation and training on a CPU default to 0, and
    ``generate`` (one editor thread) uses the other cores.
    """
    if (value := os.environ.get(WORKERS_ENV)) not in (None, ""):
        return check_workers(value, f"${WORKERS_ENV}")
    cores = available_cores()
    if str(getattr(device, "type", device)).split(":")[0] != "cpu":
        return min(4, cores)
    if threads is None:
        import torch

        threads = torch.get_num_threads()
    return max(0, min(4, cores - threads))


def check_workers(workers: Any, what: str = "--workers") -> int:
    """``workers`` as a whole number >= 0, else a ConfigError naming ``what``."""
    try:
        value = int(workers)
        if isinstance(workers, bool) or value != float(workers) or value < 0:
            raise ValueError
    except (TypeError, ValueError):
        raise ConfigError(f"{what} {workers!r}: give a whole number of worker processes >= 0 "
                          "(0: everything in the main process)") from None
    return value


def resolve_workers(workers: Any, device: Any = "cpu", threads: int | None = None) -> int:
    """``workers`` checked, or :func:`default_workers` for ``device`` and ``threads`` for None."""
    return default_workers(device, threads) if workers is None else check_workers(workers)


def sendable(exc: BaseException) -> BaseException:
    """``exc`` if it survives a trip between processes (every DiffzooError
    does), else a DataError with its text; for functions that return their
    errors instead of raising them in a worker."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return DataError(f"{type(exc).__name__}: {exc}")
    return exc


class _Items:
    """``fn`` over ``items`` as a map-style dataset (what a DataLoader indexes)."""

    def __init__(self, fn: Callable[[Any], Any], items: Sequence[Any]):
        self.fn, self.items = fn, items

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> Any:
        return self.fn(self.items[index])


def _as_is(item: Any) -> Any:
    return item


def ordered_map(fn: Callable[[T], R], items: Sequence[T], workers: int = 0, *, pin_memory: bool = False) -> Iterator[R]:
    """``fn(item)`` for every item, in order, computed by ``workers`` loader
    processes (0, or fewer than two items: here, no process started; never
    more workers than items).  ``fn`` runs in a forked worker: it should catch its
    own errors and return them (:func:`sendable`), since an exception raised
    there reaches this process only as text.  ``pin_memory``: results'
    tensors (or objects with a ``pin_memory()`` method) in page-locked
    memory, for a fast copy to a GPU.
    """
    workers = min(check_workers(workers), len(items))
    if workers == 0 or len(items) < 2:
        yield from map(fn, items)
        return
    import torch.utils.data  # here, not at the top: the CLI imports this module for --workers (no torch at start-up)

    # map-style: __len__ and __getitem__ are all a DataLoader reads of a dataset
    dataset = cast("torch.utils.data.Dataset[Any]", _Items(fn, items))
    loader: torch.utils.data.DataLoader[Any] = torch.utils.data.DataLoader(
        dataset, batch_size=None, shuffle=False, num_workers=workers, collate_fn=_as_is,
        pin_memory=pin_memory, prefetch_factor=4,
    )
    yield from loader
