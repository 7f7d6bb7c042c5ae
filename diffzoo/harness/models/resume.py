"""Training that survives a kill: the training loop's whole state, saved every N steps.

A :class:`Resume` is handed to the shared training loop (``TrainData.hooks.resume``;
the runner makes one per training job, in ``<key>.resume/`` beside the job's
checkpoint in the cache).  Every ``every`` steps the loop saves the model,
the optimiser and LR-schedule state, the RNG states (Python, NumPy, torch CPU
and CUDA), where the data stream stands (epoch, batches taken, and the
shuffling generator as it was at the epoch's start; crops draw from
generators seeded per item, which need no saving), the step, the losses,
the skipped-sample count and whether an edited label was seen yet into
``step-NNNNNNNNN/``, written atomically (:func:`~.checkpoints.atomic_dir`);
the previous step's folder is deleted only once the new one is complete, so
a kill during a save leaves the previous state intact.  The next run of the same job (same cache key)
continues from the newest complete step: the current epoch's first batches
are replayed (loaded, not trained on), which puts the data stream where it
was, so the final weights
equal an uninterrupted run's bit for bit.  The runner deletes the folder
once the final checkpoint is written.

Tensors are stored with safetensors and the rest as JSON: nothing is ever
unpickled.  There is no AMP GradScaler to save (AMP trains in bfloat16,
which needs none).

Under torchrun (world size > 1) saving and loading are collective
(:meth:`Resume.save_all`, :meth:`Resume.load_all`): the ranks agree on the
step (a stop request travels with each step's loss), rank 0 gathers what
differs from rank to rank (the random generators and the skipped-sample
count, ``rank/R/...`` and ``ranks[R]``) and writes the state while the other
ranks wait; a rerun with the same number of processes puts every rank back
where it stood.  The model, optimiser and schedule are rank 0's, which DDP
keeps equal on every rank.  A state saved by another number of processes
shards the data differently and is ignored.
"""

from __future__ import annotations

import json
import logging
import math
import random
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch

from diffzoo.harness.core import distributed
from diffzoo.harness.core.cards import stable_hash
from diffzoo.harness.core.errors import ConfigError, DataError, ModelError
from diffzoo.harness.core.fsutil import atomic_write_text, sha256_file, writing
from diffzoo.harness.models.checkpoints import RESUME_STEP, atomic_dir, cache_dir, describe_mismatch, sweep_partial

log = logging.getLogger(__name__)

FORMAT = "diffzoo-resume-3"
TENSORS, STATE = "state.safetensors", "state.json"
RANK_STATE = ("python_rng", "numpy_rng", "skipped")
"""The JSON parts of a state that differ from rank to rank (with the stream's ``data_rng``
and the ``rng/`` tensors)."""


def check_every(every: Any, flag: str = "--save-every", minimum: int = 0) -> int | None:
    """``every`` if it is None or a whole number >= ``minimum``, else a ConfigError naming ``flag``."""
    if every is not None and (isinstance(every, bool) or not isinstance(every, int) or every < minimum):
        meaning = " (0: off)" if minimum == 0 else ""
        raise ConfigError(f"{flag} {every!r}: give a whole number of steps >= {minimum}{meaning}")
    return every


def _under(tensors: dict[str, torch.Tensor], prefix: str) -> dict[str, torch.Tensor]:
    """The tensors whose name begins with ``prefix``, named without it."""
    return {k.removeprefix(prefix): v for k, v in tensors.items() if k.startswith(prefix)}


def resume_dir(detector: str, key: str) -> Path:
    """The resume folder of cache entry ``key``: beside its checkpoint folder."""
    return cache_dir(detector, key).with_name(f"{key}.resume")


class BatchStream:
    """Endless batches of a loader, epoch after epoch, that can be put back
    where an earlier run stood (:meth:`seek`).

    At each epoch's start it notes the loader's shuffling generator and the
    dataset's crop generator (``dataset.rng_state()``, when it has one).
    """

    def __init__(self, loader: torch.utils.data.DataLoader):
        self.loader = loader
        self.epoch = 0  # epochs begun
        self.taken = 0  # batches taken from the current epoch
        self.epoch_start: tuple[torch.Tensor | None, Any] = (None, None)
        self._it: Any = None

    def _begin(self) -> None:
        set_epoch = getattr(self.loader.sampler, "set_epoch", None)  # a DistributedSampler's
        if set_epoch is not None:
            set_epoch(self.epoch)
        generator = getattr(self.loader, "generator", None)  # any iterable of batches will do
        data_rng = getattr(getattr(self.loader, "dataset", None), "rng_state", None)
        self.epoch_start = (generator.get_state() if generator is not None else None,
                            data_rng() if data_rng is not None else None)
        self.epoch += 1
        self.taken = 0
        self._it = iter(self.loader)

    def __iter__(self) -> BatchStream:
        return self

    def close(self) -> None:
        """End the loader's workers now.  They ignore SIGINT and SIGTERM (``quiet_worker``), so
        workers of an iterator that an exception's traceback keeps alive would hold the process
        at exit, joined by multiprocessing for ever."""
        shutdown = getattr(self._it, "_shutdown_workers", None)  # torch's multi-process iterator only
        if shutdown is not None:
            shutdown()
        self._it = None

    def __next__(self) -> Any:
        while True:
            if self._it is None:
                self._begin()
            try:
                batch = next(self._it)
            except StopIteration:
                if self.taken == 0:
                    raise DataError("the training split yielded no usable samples") from None
                self._it = None
                continue
            self.taken += 1
            return batch

    def seek(self, epoch: int, taken: int, loader_rng: torch.Tensor | None, data_rng: Any) -> None:
        """Back to batch ``taken`` of epoch ``epoch`` (counting from 1): restore the
        generators of that epoch's start, then replay its first ``taken`` batches."""
        generator = getattr(self.loader, "generator", None)
        if loader_rng is not None and generator is not None:
            generator.set_state(loader_rng)
        set_rng = getattr(getattr(self.loader, "dataset", None), "set_rng_state", None)
        if set_rng is not None:
            set_rng(data_rng)
        self.epoch = epoch - 1
        self._begin()
        for _ in range(taken):
            next(self._it)
        self.taken = taken


def capture(model: torch.nn.Module, opt: torch.optim.Optimizer, sched: Any, stream: BatchStream,
            losses: list[float], skipped: int, saw_edited: bool) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """(tensors, JSON-able state) of a training loop after a step; ``saw_edited``: whether any
    rank's batches held an edited pixel or image so far."""
    tensors = {f"model/{k}": v.detach().cpu().clone() for k, v in model.state_dict().items()}
    saved = opt.state_dict()
    for idx, entry in saved["state"].items():
        tensors.update({f"optim/{idx}/{k}": v.detach().cpu().clone() for k, v in entry.items()
                        if isinstance(v, torch.Tensor)})
    opt_state = {str(idx): {k: v for k, v in entry.items() if not isinstance(v, torch.Tensor)}
                 for idx, entry in saved["state"].items()}
    tensors["rng/torch"] = torch.get_rng_state()
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        for i, cuda_state in enumerate(torch.cuda.get_rng_state_all()):
            tensors[f"rng/cuda/{i}"] = cuda_state
    loader_rng, data_rng = stream.epoch_start
    if loader_rng is not None:
        tensors["rng/loader"] = loader_rng
    py = random.getstate()
    # legacy=True: the MT19937 tuple (name, keys, pos, has_gauss, cached_gaussian), never the dict
    np_name, np_keys, np_pos, np_has_gauss, np_gauss = cast(
        tuple[str, np.ndarray, int, int, float], np.random.get_state(legacy=True))
    state = {
        "optimizer": {"param_groups": saved["param_groups"], "state": opt_state},
        "scheduler": sched.state_dict(),
        "stream": {"epoch": stream.epoch, "taken": stream.taken, "data_rng": data_rng},
        "python_rng": [py[0], list(py[1]), py[2]],
        "numpy_rng": [np_name, np_keys.tolist(), np_pos, np_has_gauss, np_gauss],
        "losses": losses,
        "skipped": skipped,
        "saw_edited": saw_edited,
    }
    return tensors, state


def restore(tensors: dict[str, torch.Tensor], state: dict[str, Any], model: torch.nn.Module,
            opt: torch.optim.Optimizer, sched: Any, stream: BatchStream) -> tuple[list[float], int, bool]:
    """Put a training loop back where :func:`capture` saw it; returns (losses, skipped, saw_edited)."""
    model.load_state_dict(_under(tensors, "model/"))
    opt_state = {int(idx): {**plain, **_under(tensors, f"optim/{idx}/")}
                 for idx, plain in state["optimizer"]["state"].items()}
    groups = [{k: tuple(v) if k == "betas" else v for k, v in g.items()}
              for g in state["optimizer"]["param_groups"]]
    opt.load_state_dict({"state": opt_state, "param_groups": groups})
    sched.load_state_dict(state["scheduler"])
    where = state["stream"]
    stream.seek(where["epoch"], where["taken"], tensors.get("rng/loader"), where["data_rng"])
    # after the replay, which may draw from them: the global generators as they were at the save
    version, internal, gauss = state["python_rng"]
    random.setstate((version, tuple(internal), gauss))
    name, keys, pos, has_gauss, cached = state["numpy_rng"]
    np.random.set_state((name, np.asarray(keys, dtype=np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(tensors["rng/torch"])
    cuda_keys = sorted((k for k in tensors if k.startswith("rng/cuda/")), key=lambda k: int(k.rsplit("/", 1)[1]))
    cuda = [tensors[k] for k in cuda_keys]
    if cuda and torch.cuda.is_available() and len(cuda) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(cuda)
    return [float(x) for x in state["losses"]], int(state["skipped"]), bool(state["saw_edited"])


def _misfit(tensors: dict[str, torch.Tensor], model: torch.nn.Module | None) -> str | None:
    """Why the model tensors of a saved state (``model/...``) cannot be restored into ``model``; None if they can."""
    if model is None:
        return None
    problem = describe_mismatch(model.state_dict(), _under(tensors, "model/"))
    return None if problem is None else f"it does not fit the model ({problem})"


def _rank_part(tensors: dict[str, torch.Tensor], state: dict[str, Any]) -> tuple[dict[str, torch.Tensor],
                                                                              dict[str, Any]]:
    """What differs from rank to rank in this rank's :func:`capture`."""
    return ({k: v for k, v in tensors.items() if k.startswith("rng/")},
            {**{k: state[k] for k in RANK_STATE}, "data_rng": state["stream"]["data_rng"]})


def _own_part(tensors: dict[str, torch.Tensor], doc: dict[str, Any], rank: int) -> tuple[dict[str, torch.Tensor],
                                                                                   dict[str, Any]]:
    """A state saved by every rank (:meth:`Resume.save_all`) as rank ``rank`` saw it."""
    if "ranks" not in doc:
        return tensors, doc
    own = {k: v for k, v in tensors.items() if not k.startswith(("rank/", "rng/"))}
    own.update(_under(tensors, f"rank/{rank}/"))
    part = doc["ranks"][rank]
    state = {**doc, **{k: part[k] for k in RANK_STATE}, "stream": {**doc["stream"], "data_rng": part["data_rng"]}}
    return own, state


@dataclass
class Resume:
    """Where one training job saves its state, how often, and what it must match.

    ``every``: steps between saves; None = ten saves per training (:meth:`interval`), 0 = never.
    ``identity``: what a saved state must have been saved with (the cache key
    and the training config); a state saved by another job is ignored.
    """

    folder: Path
    every: int | None = None
    identity: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_every(self.every)
        self.folder = Path(self.folder)
        self.identity = json.loads(json.dumps(self.identity, default=str))  # as read back from JSON

    def interval(self, iterations: int) -> int:
        """Steps between saves: ``every``, or ten saves per training (every step when it has fewer than ten)."""
        return max(1, math.ceil(iterations / 10)) if self.every is None else self.every

    def _steps(self) -> list[tuple[int, Path]]:
        """Complete step folders, newest first."""
        if not self.folder.is_dir():
            return []
        found = [(int(m[1]), p) for p in self.folder.iterdir() if (m := RESUME_STEP.match(p.name)) and p.is_dir()]
        return sorted(found, reverse=True)

    def save(self, step: int, tensors: dict[str, torch.Tensor], state: dict[str, Any]) -> Path:
        """Write the state after ``step`` steps, then drop older steps' folders."""
        from safetensors.torch import save_file

        target = self.folder / f"step-{step:09d}"
        with atomic_dir(target) as tmp:
            with writing(target / TENSORS):  # safetensors wraps ENOSPC in its own error
                save_file(tensors, str(tmp / TENSORS))
            doc = {"format": FORMAT, "step": step, "identity": self.identity, "world_size": distributed.world_size(),
                   "sha256": sha256_file(tmp / TENSORS), **state}
            doc["digest"] = stable_hash(doc, 64)  # of the rest of state.json, as sha256 is of the tensors
            atomic_write_text(tmp / STATE, json.dumps(doc))
        for older, path in self._steps():
            if older < step:
                shutil.rmtree(path, ignore_errors=True)
        log.debug("saved training state after step %d in %s", step, target)
        return target

    def load(self, model: torch.nn.Module | None = None) -> tuple[int, dict[str, torch.Tensor], dict[str, Any]] | None:
        """(step, tensors, state) of the newest complete, matching state; None when there is none.
        ``model``: the model the state is restored into; a state whose model tensors do not fit
        it (a detector whose code changed since) is ignored too."""
        from safetensors.torch import load_file

        sweep_partial(self.folder)  # no folder: nothing swept, and _steps() finds none
        for step, path in self._steps():
            try:
                doc = json.loads((path / STATE).read_text(encoding="utf-8"))
                if doc.get("format") != FORMAT or doc.get("step") != step:
                    problem = f"not a {FORMAT} state of step {step}"
                elif doc.get("identity") != self.identity:
                    problem = "it was saved by another training job (cache key or training config differ)"
                elif (saved_by := doc.get("world_size", 1)) != distributed.world_size():
                    problem = (f"it was saved by a training on {saved_by} process(es), this one runs "
                               f"{distributed.world_size()} (the data is sharded otherwise)")
                elif sha256_file(path / TENSORS) != doc.get("sha256"):
                    problem = f"{TENSORS} changed after it was written"
                elif stable_hash({k: v for k, v in doc.items() if k != "digest"}, 64) != doc.get("digest"):
                    problem = f"{STATE} changed after it was written"
                elif (misfit := _misfit(tensors := load_file(str(path / TENSORS)), model)) is not None:
                    problem = misfit
                else:
                    # said, not silent: a run that picks up an interrupted training tells the user where
                    log.warning("resuming an interrupted training from step %d (%s)", step, path)
                    return step, tensors, doc
            except (OSError, ValueError, AttributeError) as exc:
                problem = f"unreadable ({exc})"
            log.warning("ignoring the training state in %s: %s", path, problem)
        return None

    def save_all(self, step: int, tensors: dict[str, torch.Tensor], state: dict[str, Any]) -> None:
        """:meth:`save` this rank's :func:`capture`, called by every rank at the same step:
        under torchrun rank 0 writes every rank's part while the others wait, and a failed
        write stops every rank."""
        if distributed.world_size() == 1:
            self.save(step, tensors, state)
            return
        parts = distributed.gather(_rank_part(tensors, state))

        def write() -> Path:
            assert parts is not None  # rank 0 holds every rank's part
            merged = dict(tensors)
            for r, (rank_tensors, _) in enumerate(parts):
                merged.update({f"rank/{r}/{k}": v for k, v in rank_tensors.items()})
            return self.save(step, merged, {**state, "ranks": [rank_state for _, rank_state in parts]})

        distributed.on_main(write)

    def load_all(self, model: torch.nn.Module | None = None) -> tuple[int, dict[str, torch.Tensor],
                                                                      dict[str, Any]] | None:
        """:meth:`load`, called by every rank: under torchrun rank 0 picks the state (and
        says so), every rank reads that one and takes its own rank's part."""
        if distributed.world_size() == 1:
            return self.load(model)
        found = self.load(model) if distributed.is_main() else None
        step = distributed.broadcast(found[0] if found is not None else None)
        if step is None:
            return None
        path = self.folder / f"step-{step:09d}"
        problem = None
        if found is not None:
            tensors, doc = found[1], found[2]
        else:
            from safetensors import SafetensorError
            from safetensors.torch import load_file

            try:
                doc = json.loads((path / STATE).read_text(encoding="utf-8"))
                tensors = load_file(str(path / TENSORS))
            except (OSError, ValueError, SafetensorError) as exc:
                problem = str(exc)
        problems = [(r, p) for r, p in enumerate(distributed.all_gather(problem)) if p is not None]
        if problems:
            r, p = problems[0]
            raise ModelError(f"rank {r} cannot read the training state {path} that rank 0 resumes from ({p}); "
                             "every rank must see the same $DIFFZOO_CACHE")
        return (step, *_own_part(tensors, doc, distributed.rank()))

    def clear(self) -> None:
        """Delete every saved state (the final checkpoint is written)."""
        shutil.rmtree(self.folder, ignore_errors=True)
