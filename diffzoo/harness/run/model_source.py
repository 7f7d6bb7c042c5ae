"""Train or load: the model a training job needs, from a given checkpoint,
the checkpoint cache, or training (saved to the cache, resumable).

Under torchrun rank 0 decides and writes, every rank loads the same bytes.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from collections.abc import Callable
from typing import Any

import torch

from diffzoo.harness.core import distributed
from diffzoo.harness.core.errors import ConfigError, ModelError
from diffzoo.harness.core.progress import Progress
from diffzoo.harness.core.protocols import Dataset, Detector
from diffzoo.harness.core.registry import Entry
from diffzoo.harness.core.types import BINARY
from diffzoo.harness.models.checkpoints import WEIGHTS_FILE, cache_dir, cached_meta, checkpoint_meta, sweep_partial
from diffzoo.harness.models.divergence import refuse_nonfinite
from diffzoo.harness.models.monitor import TrainMonitor, Validation, default_val_every, train_log_dir
from diffzoo.harness.models.resume import Resume, resume_dir
from diffzoo.harness.models.segmenter import TrainData
from diffzoo.harness.run.factories import create_detector
from diffzoo.harness.run.planning import TrainingJob, training_ids
from diffzoo.harness.run.request import RunRequest

log = logging.getLogger(__name__)


class ModelSource:
    """Models of one detector on one dataset, per training job.

    ``validation(job, detector)``: the periodic validation of a training
    (the runner's, which evaluates; None: no validation)."""

    def __init__(self, entry: Entry, dataset: Dataset, request: RunRequest, device: torch.device,
                 progress: Progress,
                 validation: Callable[[TrainingJob, Detector], Validation | None] | None = None):
        self.entry = entry
        self.dataset = dataset
        self.request = request  # its checkpoints, train, save_every, log_every and val_every
        self.device = device
        self.progress = progress
        self.validation = validation

    def _new_detector(self, job: TrainingJob) -> Detector:
        torch.manual_seed(job.config.seed)
        label_space = self.dataset.label_space if job.task == "semantic" else BINARY
        det = create_detector(self.entry.name, job.task, label_space, pretrained=job.config.pretrained)
        return det.to(self.device)

    def _given_checkpoint(self, job: TrainingJob) -> Path | None:
        for path in self.request.checkpoints:
            _, meta = checkpoint_meta(path)
            if meta.get("task", job.task) == job.task:
                return path
        return None

    def model_for(self, job: TrainingJob) -> tuple[Detector, dict[str, Any]]:
        det = self._new_detector(job)
        given = self._given_checkpoint(job)
        cached = cache_dir(self.entry.name, job.key)
        if given is not None:
            meta = det.load(given)
            return det, {"source": "given", "path": str(given), "sha256": meta["sha256"]}
        if distributed.is_main():
            sweep_partial(cached.parent)  # writes that a kill cut short
        # rank 0 decides, so that every rank loads or every rank trains
        if distributed.broadcast((cached / WEIGHTS_FILE).exists()):
            cached_meta(cached, job.key)  # diffzoo's card for this very job; det.load checks the weights' hash
            check_cached_weights(cached, remove=False)  # an entry cached before diffzoo checked, or by hand
            meta = det.load(cached)
            log.info("using cached checkpoint %s", cached)
            return det, {"source": "cache", "path": str(cached), "sha256": meta["sha256"],
                         "training": meta.get("training"), **self._log_of(job)}
        if not self.entry.card.trainable:  # used as built: its weights are the checkpoint
            return det, self._keep_untrained(job, det, cached)
        if not self.request.train:
            raise ModelError(
                f"no {job.task} checkpoint for {self.entry.name} on {self.dataset.name} "
                f"(cache key {job.key}); pass --checkpoint PATH or drop --no-train"
            )
        return det, self._train(job, det, cached)

    def _keep_untrained(self, job: TrainingJob, det: Detector, cached: Path) -> dict[str, Any]:
        """A training-free detector (card ``trainable=False``) is saved as
        built, so that its weights get a sha256 and later runs load the same bytes."""
        return self._cache_model(job, det, cached, "untrained", None)

    def _cache_model(self, job: TrainingJob, det: Detector, cached: Path, source: str,
                     training: dict[str, Any] | None, **extra: Any) -> dict[str, Any]:
        """Rank 0 writes ``det`` to the cache folder of ``job``, every rank then
        loads it back: the sha256 comes from the written file."""
        if distributed.is_main():
            det.save(cached, extra={**extra, "training": training, "train_subset": job.spec.to_dict(),
                                    "dataset_fingerprint": self.dataset.fingerprint(), "cache_key": job.key})
            check_cached_weights(cached)  # a plugin's own save may not go through save_checkpoint
        distributed.barrier()
        meta = det.load(cached)
        return {"source": source, "path": str(cached), "sha256": meta["sha256"], "training": training}

    def _train(self, job: TrainingJob, det: Detector, cached: Path) -> dict[str, Any]:
        """Train ``det`` (through DDP under torchrun); rank 0 writes the
        checkpoint to the cache, the other ranks wait, then all load it.

        The shared training loop saves its state every ``save_every`` steps
        beside the checkpoint and a later run of the same job resumes from
        it (:mod:`.resume`); the state is deleted once the checkpoint is written.
        """
        ids = training_ids(self.dataset, job.spec)
        desc = f"training {self.entry.name} [{job.task}] on {self.dataset.name}/{job.spec.split}"
        if job.spec.exclude_editors:
            desc += f" without {'+'.join(job.spec.exclude_editors)}"
        resume = Resume(resume_dir(self.entry.name, job.key), self.request.save_every,
                        {"detector": self.entry.name, "cache_key": job.key, "train_config": job.config.to_dict()})
        monitor = self._monitor(job, det)  # its loss check serves every fit, the shared trainer's or a plugin's own
        with self.progress.task(desc, total=job.config.iterations) as task:
            done = [0]

            def advance(step: int, loss: float) -> None:  # a resumed run starts past 0
                monitor.check_loss(step, loss)
                task.advance(step - done[0], loss=loss)
                done[0] = step

            def preparing(done_: int, total: int) -> None:  # e.g. features extracted before step 1
                task.advance(0, preparing=f"{done_}/{total}")

            try:
                log_ = det.fit(TrainData(self.dataset, ids, resume, preparing, monitor), job.config, progress=advance)
            finally:
                monitor.close()
        log_["num_train_images"] = len(ids)
        ckpt = self._cache_model(job, det, cached, "trained", log_, train_config=job.config.to_dict())
        if distributed.is_main():
            resume.clear()  # the checkpoint is written: nothing left to resume
        return {**ckpt, **self._log_of(job)}

    def _monitor(self, job: TrainingJob, det: Detector) -> TrainMonitor:
        """The log, events and validation of ``job``'s training (:mod:`~..models.monitor`)."""
        val_every = self.request.val_every
        if val_every is None:
            val_every = default_val_every(job.config.recipe)
        validate = self.validation(job, det) if val_every and self.validation is not None else None
        return TrainMonitor(self.entry.name, train_log_dir(self.entry.name, job.key), self.request.log_every,
                            val_every, validate)

    def _log_of(self, job: TrainingJob) -> dict[str, Any]:
        """``log_dir`` (the training's log folder in the cache, when it has one) and
        ``model_name`` (the folder and plot name it is copied to in ``--out``)."""
        folder = train_log_dir(self.entry.name, job.key)
        named = {"model_name": model_name(self.entry.name, job)}
        return {"log_dir": str(folder), **named} if folder.is_dir() else named


def model_name(detector: str, job: TrainingJob) -> str:
    """How ``--out`` names a model's training log and plot: detector, task, held-out
    editors, and the cache key's first 8 characters (``segformer-binary-1a2b3c4d``)."""
    parts = [detector, job.task]
    if job.spec.exclude_editors:
        parts.append("without-" + "+".join(job.spec.exclude_editors))
    if job.spec.split != "train":
        parts.append(job.spec.split)
    return "-".join(parts + [job.key[:8]])


def check_cached_weights(folder: Path, remove: bool = True) -> None:
    """The weights in cache folder ``folder``, checked finite whatever wrote them (a
    plugin's own ``save`` may not go through ``save_checkpoint``).  A diverged model
    is refused; ``remove``: the folder is deleted first (this run just wrote it)."""
    weights = folder / WEIGHTS_FILE
    if not weights.is_file():
        return
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        tensors = load_file(str(weights))
    except (SafetensorError, OSError, ValueError):
        return  # not readable safetensors: loading it names the problem
    try:
        refuse_nonfinite(tensors, f"checkpoint {folder}")
    except ModelError as exc:
        if remove:
            shutil.rmtree(folder, ignore_errors=True)
            raise ModelError(f"{exc}; it was not kept in the cache") from None
        raise ModelError(f"{exc}; delete {folder} and run again to train it anew") from None


def check_checkpoints(paths: list[Path]) -> None:
    """One checkpoint per task: a run scores the model it is given, it never
    picks one of several by its scores (that would be choosing a checkpoint
    on the test split)."""
    by_task: dict[str, Path] = {}
    for path in paths:
        task = checkpoint_meta(path)[1].get("task", "?")
        if task in by_task:
            raise ConfigError(
                f"two --checkpoint for the {task} task ({by_task[task]} and {path}): a run scores one model "
                "per task and never chooses between checkpoints by their scores on the evaluated split; "
                "run each checkpoint separately (with its own --out) and compare the records"
            )
        by_task[task] = path
