"""Training you can watch: the log, the TensorBoard events and the periodic
validation of one training (docs/detectors.md, "Watching a training").

A :class:`TrainMonitor` is handed to the shared training loop (``TrainData.hooks.monitor``;
the runner makes one per training job).  Every ``log_every`` steps it writes
one JSON line to ``log.jsonl`` (step, epoch, the loss at that step and the
mean since the last line, each loss term the detector reports, the learning
rate of every parameter group, images/s, the share of the time spent waiting
for data, peak device memory on CUDA, wall time) and the same scalars as
TensorBoard events, in the folder ``<key>.train/`` beside the checkpoint in
the cache; the runner copies it into the run's ``--out`` (``train/<model>/``).
Every ``val_every`` steps (mmseg's rule: not also after the last) it calls the runner's
validation, which scores the model as it stands on the validation split; the
result is logged and plotted, and never selects a checkpoint: the final
weights are the model.

Nothing here changes the model: logging draws no random number, and the
validation runs between two steps with every random generator put back as it
was and the network back in training mode (a test compares weights with and
without both).  A resumed training keeps the lines up to the step it resumes
from and TensorBoard drops its later events (``purge_step``).  Under
torchrun only rank 0 writes; every rank validates its shard.
"""

from __future__ import annotations

import json
import logging
import math
import random
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from diffzoo.harness.core import distributed
from diffzoo.harness.core.fsutil import append_line, atomic_write_text, writing
from diffzoo.harness.models.checkpoints import cache_dir
from diffzoo.harness.models.divergence import LossWatch

log = logging.getLogger(__name__)

LOG_FILE = "log.jsonl"
CURVE_POINTS = 200
"""Points of the loss and learning-rate curve kept in the training log of the
checkpoint card and the records (the site draws it); log.jsonl has every logged step."""
PAPER_VAL_EVERY = 16_000
"""mmseg's SegFormer/DeepLab configs validate every 16,000 of 160,000 iterations."""

Validation = Callable[[], tuple[str, dict[str, float]]]
"""Scores the model as it stands: (split, metric name -> value)."""


def default_val_every(recipe: str) -> int:
    """On for ``--recipe paper`` at mmseg's 16,000 iterations, off otherwise."""
    return PAPER_VAL_EVERY if recipe == "paper" else 0


def train_log_dir(detector: str, key: str) -> Path:
    """The log folder of cache entry ``key``: ``<key>.train/`` beside its checkpoint folder."""
    return cache_dir(detector, key).with_name(f"{key}.train")


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def curve(losses: list[float], lr_at: Callable[[int], float]) -> dict[str, list]:
    """At most :data:`CURVE_POINTS` (step, loss, learning rate) of a training, evenly spread, the last step
    included."""
    n = len(losses)
    if n == 0:
        return {"step": [], "loss": [], "lr": []}
    k = min(CURVE_POINTS, n)
    idx = sorted({round(i * (n - 1) / max(k - 1, 1)) for i in range(k)})
    return {"step": [i + 1 for i in idx], "loss": [round(losses[i], 6) for i in idx],
            "lr": [float(f"{lr_at(i):.6g}") for i in idx]}


class _RandomState:
    """Every random generator a training draws from, noted and put back (around a validation)."""

    def __init__(self) -> None:
        self.python, self.numpy, self.torch = random.getstate(), np.random.get_state(), torch.get_rng_state()
        self.cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() and torch.cuda.is_initialized() \
            else None

    def restore(self) -> None:
        random.setstate(self.python)
        np.random.set_state(self.numpy)
        torch.set_rng_state(self.torch)
        if self.cuda is not None:
            torch.cuda.set_rng_state_all(self.cuda)


class TrainMonitor:
    """The log, events and validations of one training; see the module docstring.

    ``folder``: where log.jsonl and the events go (None: nothing is written,
    the losses are still checked).  ``validate``: the runner's validation
    (None: no validation, whatever ``val_every``).
    """

    def __init__(self, detector: str = "the detector", folder: Path | None = None, log_every: int | None = None,
                 val_every: int = 0, validate: Validation | None = None):
        self.watch = LossWatch(detector)  # every reported loss: the first non-finite one stops the training
        self.folder = Path(folder) if folder is not None and distributed.is_main() else None
        self.log_every: int = log_every or 0  # 0: the default for the training's length, set by start()
        self.val_every = val_every if validate is not None else 0
        self.validate = validate
        self.validations: list[dict[str, Any]] = []
        self.train_seconds = self.val_seconds = 0.0
        self._writer: Any = None
        self._window: list[float] = []
        self._images = 0
        self._data_s = self._busy_s = 0.0
        self._total = 0
        self._clock = 0.0

    # -- begin / end ----------------------------------------------------------------
    def start(self, start: int, total: int, device: torch.device) -> None:
        """Before the first step ``start`` (0, or the step a resumed training continues from)."""
        self._total, self.device = total, device
        # mmseg's 50 steps, or about a hundred lines for a shorter training (every step below 100)
        self.log_every = self.log_every or max(1, min(50, total // 100))
        self._clock = time.monotonic()
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        if self.folder is None:
            return
        path = self.folder / LOG_FILE
        if start == 0:
            shutil.rmtree(self.folder, ignore_errors=True)  # an earlier training of this job that did not finish
        with writing(self.folder):
            self.folder.mkdir(parents=True, exist_ok=True)
        if start:  # keep what the resumed state had seen; its later lines are written again
            kept = [line for line in _lines(path) if (at := _step(line)) is not None and at <= start]
            self.validations = [row for row in map(json.loads, kept) if row.get("event") == "val"]
            atomic_write_text(path, "".join(line + "\n" for line in kept))
        self._write({"event": "start", "step": start, "total": total, "log_every": self.log_every,
                     "val_every": self.val_every, "device": str(device), "world_size": distributed.world_size(),
                     "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
        self._writer = _summary_writer(self.folder, purge_step=start + 1 if start else None)

    def finish(self, losses: list[float], lr_at: Callable[[int], float]) -> dict[str, Any]:
        """After the last step: the training log's watch part (curve, validations), files closed."""
        self._write({"event": "end", "step": self._total, "train_seconds": round(self.train_seconds, 3),
                     "validation_seconds": round(self.val_seconds, 3)})
        self.close()
        return {"curve": curve(losses, lr_at), "validation": [
            {k: row[k] for k in ("step", "split", "metrics")} for row in self.validations],
            "log_every": self.log_every, "val_every": self.val_every}

    def close(self) -> None:
        """Close the TensorBoard writer (its last events are written now: a full disk here
        is a StorageError naming the events file)."""
        writer, self._writer = self._writer, None
        if writer is not None:
            with writing(_events_file(writer, self.folder)):
                writer.close()

    # -- per step ----------------------------------------------------------------------
    def step(self, step: int, epoch: int, loss: float, terms: dict[str, float], lrs: dict[str, float],
             images: int, data_s: float, busy_s: float) -> None:
        """After step ``step`` (1-based): ``images`` in this step over all ranks, ``data_s``
        seconds waiting for the batch, ``busy_s`` the whole step."""
        self._window.append(loss)
        self._images += images
        self._data_s += data_s
        self._busy_s += busy_s
        self.train_seconds += busy_s
        if not self.logs_at(step):
            return
        row: dict[str, Any] = {"event": "train", "step": step, "epoch": epoch, "loss": _finite(loss),
               "loss_mean": _finite(float(np.mean(self._window))), "terms": {k: _finite(v) for k, v in terms.items()},
               "lr": lrs, "images_per_s": round(self._images / self._busy_s, 3) if self._busy_s else None,
               "data_wait": round(self._data_s / self._busy_s, 4) if self._busy_s else None,
               "peak_mem_mib": round(torch.cuda.max_memory_allocated(self.device) / 2**20, 1)
               if self.device.type == "cuda" else None, "wall_s": round(time.monotonic() - self._clock, 3)}
        self._window, self._images, self._data_s, self._busy_s = [], 0, 0.0, 0.0
        self._write(row)
        scalars = {"train/loss": row["loss"], "train/loss_mean": row["loss_mean"],
                   **{f"train/{k}": v for k, v in row["terms"].items()}, **{f"lr/{k}": v for k, v in lrs.items()},
                   "perf/images_per_s": row["images_per_s"], "perf/data_wait": row["data_wait"],
                   "perf/peak_mem_mib": row["peak_mem_mib"]}
        self._scalars(scalars, step)

    def logs_at(self, step: int) -> bool:
        """Whether step ``step`` (1-based) writes a line (the loss terms are read then)."""
        return self.folder is not None and (step % self.log_every == 0 or step == self._total)

    def validation_due(self, step: int) -> bool:
        return bool(self.val_every) and step % self.val_every == 0

    def run_validation(self, step: int, model: torch.nn.Module) -> None:
        """The runner's validation after step ``step``, between two steps: every random
        generator and the network's training mode are put back as they were."""
        assert self.validate is not None, "validation_due() is false without a validation"
        state = _RandomState()
        began = time.monotonic()
        try:
            split, metrics = self.validate()
        finally:
            state.restore()
            model.train()
        seconds = time.monotonic() - began
        self.val_seconds += seconds
        row: dict[str, Any] = {"event": "val", "step": step, "split": split,
               "metrics": {k: _finite(float(v)) for k, v in metrics.items()}, "seconds": round(seconds, 3)}
        self.validations.append(row)
        self._write(row)
        self._scalars({f"val/{k}": v for k, v in row["metrics"].items()} | {"perf/validation_s": row["seconds"]},
                      step)
        log.info("validation after step %d on %s: %s", step, split,
                 ", ".join(f"{k} {v:.4f}" for k, v in metrics.items() if math.isfinite(v)))

    # -- writing -----------------------------------------------------------------------
    def _write(self, row: dict[str, Any]) -> None:
        if self.folder is not None:
            append_line(self.folder / LOG_FILE, json.dumps(row))

    def _scalars(self, values: dict[str, float | None], step: int) -> None:
        """The step's scalars, flushed: TensorBoard writes in a thread of its own and raises
        that thread's error (a full disk) at the next write or flush, here, so a full disk is
        a StorageError naming the events file within the step that filled it."""
        writer = self._writer
        if writer is None:
            return
        try:
            with writing(_events_file(writer, self.folder)):
                for tag, value in values.items():
                    if value is not None:
                        writer.add_scalar(tag, value, step)
                writer.flush()
        except BaseException:
            self._writer = None  # failed: close() must not raise the same error a second time
            try:
                writer.close()
            except Exception:  # noqa: BLE001 - the first error is the one reported
                log.debug("closing a failed TensorBoard writer", exc_info=True)
            raise


def _lines(path: Path) -> list[str]:
    try:
        return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except OSError:
        return []


def _step(line: str) -> int | None:
    try:
        row = json.loads(line)
    except ValueError:
        return None
    return row.get("step") if isinstance(row, dict) and row.get("event") in ("train", "val") else None


def _summary_writer(folder: Path, purge_step: int | None) -> Any:
    """TensorBoard's writer for ``folder``; None (said once) when tensorboard is not installed."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as exc:  # a plugin's own venv without it: the log is still written
        log.warning("no TensorBoard events (%s); install tensorboard to get them", exc)
        return None
    _quiet_writer_threads()
    with writing(folder):  # the writer creates its events file and writes its first event now
        return SummaryWriter(str(folder), purge_step=purge_step)


def _quiet_writer_threads() -> None:
    """TensorBoard's writer thread keeps its error (a full disk) for the next write or flush,
    where :meth:`TrainMonitor._scalars` reports it in one line, and then raises it again to
    end the thread: that second one is not printed as a traceback.  Every other thread's
    error is handled as before."""
    previous = threading.excepthook
    if getattr(previous, "kept_for_the_writer", False):
        return

    def hook(args: Any) -> None:
        if args.exc_value is not None and getattr(args.thread, "exception", None) is args.exc_value:
            log.debug("TensorBoard's writer thread ended: %s", args.exc_value)
            return
        previous(args)

    hook.kept_for_the_writer = True  # type: ignore[attr-defined]
    threading.excepthook = hook


def _events_file(writer: Any, folder: Path | None) -> Path | str:
    """The events file ``writer`` (a SummaryWriter) writes; its folder if it does not say."""
    try:
        return Path(writer.file_writer.event_writer._file_name)
    except AttributeError:
        return folder if folder is not None else "the TensorBoard events file"
