"""Train or load: the model a job needs, from a given checkpoint, the checkpoint cache, or
training (saved to the cache, resumable, watched and periodically validated).

Under torchrun rank 0 decides and writes, every rank loads the same bytes.  One process
at a time looks for, trains and caches a model (:func:`training_lock`): a second process
that shares the cache waits, then loads the first's checkpoint.
"""

from __future__ import annotations

import copy
import json
import logging
import math
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any, cast

import torch

from diffzoo.harness.core import distributed
from diffzoo.harness.core.cards import Release
from diffzoo.harness.core.errors import ConfigError, DiffzooError, ModelError, PluginError, plugin_code
from diffzoo.harness.core.fsutil import lock_open_file, make_dir, writing
from diffzoo.harness.core.progress import Progress
from diffzoo.harness.core.protocols import Dataset, Detector, moved_detector
from diffzoo.harness.core.registry import Entry
from diffzoo.harness.core.types import BINARY, Sample, StateKey, Task
from diffzoo.harness.models.checkpoints import (
    WEIGHTS_FILE,
    cache_dir,
    cached_meta,
    checkpoint_meta,
    read_weights,
    sweep_partial,
)
from diffzoo.harness.models.detector import other_classes, other_detector
from diffzoo.harness.models.divergence import refuse_nonfinite
from diffzoo.harness.models.monitor import TrainMonitor, Validation, train_log_dir
from diffzoo.harness.models.releases import install, release_paths
from diffzoo.harness.models.resume import Resume, resume_dir
from diffzoo.harness.models.train_data import TrainData, TrainHooks
from diffzoo.harness.models.weights import pretrained_place
from diffzoo.harness.records.policy import Thresholds
from diffzoo.harness.run.evaluate import EvalResult, Evaluator
from diffzoo.harness.run.factories import create_detector
from diffzoo.harness.run.plan import VALIDATION_SPLITS, Job, training_ids

log = logging.getLogger(__name__)

VALIDATION_METRICS: dict[str, tuple[tuple[str, str], ...]] = {
    StateKey.BINARY: (("mIoU", "binary_mIoU"), ("F1", "binary_F1"), ("img_Acc", "img_Acc"), ("img_AP", "img_AP")),
    StateKey.SEMANTIC: (("mIoU", "semantic_mIoU"),)}
"""What a periodic validation logs, per metric state: (its metric, the name the log gives it).
Segmenters log their pixel metrics, classifiers their image-level ones."""


@dataclass(frozen=True)
class CheckpointInfo:
    """The checkpoint a job's model came from: ``source`` (``given``, ``cache``, ``trained``,
    ``untrained``: a card used as built, ``released``: weights its authors released), its folder
    or file and the weights' sha256; the
    training log written with it (None for a given checkpoint or one used as built); the
    training's log folder in the cache (``log_dir``, when it has one) and ``model_name``, the
    name ``--out`` gives that log and its plot."""

    source: str
    path: Path
    sha256: str
    training: dict[str, Any] | None = None
    log_dir: Path | None = None
    model_name: str | None = None
    release: dict[str, Any] | None = None
    """For released weights (source ``released``): the release's name, where it is published,
    what it was trained on and its original files with their sha256 (``releases.release_record``)."""


class ModelSource:
    """Models of one detector on one dataset, per job; ``evaluator`` runs a training's
    periodic validation passes."""

    def __init__(self, entry: Entry, dataset: Dataset, checkpoints: list[Path], train: bool,
                 save_every: int | None, log_every: int | None, device: torch.device, progress: Progress,
                 evaluator: Evaluator, release: Release | None = None):
        self.entry, self.dataset, self.checkpoints, self.train = entry, dataset, checkpoints, train
        self.release = release  # --weights released:NAME; then ``checkpoints`` are its files
        self.save_every, self.log_every = save_every, log_every
        self.device, self.progress, self.evaluator = device, progress, evaluator

    def get(self, job: Job) -> tuple[Detector, CheckpointInfo]:
        """``job``'s model, with its weights, and where they came from."""
        release = self.release
        if release is not None:  # as released: never trained, whatever the job's cache holds
            det = self._new_detector(job)
            folder = distributed.broadcast(distributed.on_main(
                lambda: install(det, self.entry.card, release, self.checkpoints)))  # rank 0 converts, all load
            assert folder is not None
            meta = det.load(folder)
            return det, CheckpointInfo("released", folder, meta["sha256"], release=meta.get("release"))
        given = self.given_checkpoint(job)
        if given is not None:
            det = self._new_detector(job, loading=True)
            meta = det.load(given)
            return det, CheckpointInfo("given", given, meta["sha256"])
        with training_lock(self.entry.name, job.key):  # before the cache or a resume state is looked at
            return self._cached_or_trained(job, cache_dir(self.entry.name, job.key))

    def _cached_or_trained(self, job: Job, cached: Path) -> tuple[Detector, CheckpointInfo]:
        """``job``'s model from the cache, else trained (or saved as built) into it; run while
        this process holds the job's :func:`training_lock`."""
        if distributed.is_main():
            sweep_partial(cached.parent)  # writes that a kill cut short
        # rank 0 decides, so that every rank loads or every rank trains
        if distributed.broadcast((cached / WEIGHTS_FILE).exists()):
            cached_meta(cached, job.key)  # diffzoo's card for this very job; det.load checks the weights' hash
            check_cached_weights(cached, remove=False)  # an entry cached before diffzoo checked, or by hand
            det = self._new_detector(job, loading=True)
            meta = det.load(cached)
            log.info("using cached checkpoint %s", cached)
            return det, self._with_log(job, CheckpointInfo("cache", cached, meta["sha256"], meta.get("training")))
        det = self._new_detector(job)
        if not self.entry.card.trainable:  # used as built: saved so that its weights get a sha256
            return det, self._cache_model(job, det, cached, "untrained", None)
        if not self.train:
            raise self._none_to_load(job)
        return det, self._train(job, det, cached)

    def _none_to_load(self, job: Job) -> ModelError:
        return ModelError(f"no {job.task} checkpoint for {self.entry.name} on {self.dataset.name} "
                          f"(cache key {job.key}); pass --checkpoint PATH or drop --no-train")

    def describe(self, job: Job) -> str:
        """Where :meth:`get` will take ``job``'s model from, as the plan says it; what would fail
        there for certain fails here, before any work: a ``--checkpoint`` of another detector, and
        ``--no-train`` with no model cached.  (Another run sharing the cache may cache the model
        between the two: then it is loaded, not trained.)"""
        if self.release is not None:  # its files missing: refused here, naming what to download
            paths = release_paths(self.entry.card, self.release, self.checkpoints) or self.checkpoints
            return f"released weights {self.release.name} ({', '.join(map(str, paths))}), zero-shot"
        def weights(loading: bool = False) -> str:
            factory = self.entry.load()
            always = getattr(factory, "weights_read_always", lambda card: ())(self.entry.card)
            place = pretrained_place(self.entry.card, built_pretrained(self.entry, job.config.pretrained, loading),
                                     always, getattr(factory, "weights_url", lambda source: None))
            return f", {place}" if place else ""

        given = self.given_checkpoint(job)
        if given is not None:
            meta = checkpoint_meta(given)[1]
            if (error := other_detector(given, meta, self.entry.name)
                    or other_classes(given, meta, job.task, self.dataset.label_space)) is not None:
                raise error
            return f"checkpoint {given}{weights(loading=True)}"
        cached = cache_dir(self.entry.name, job.key)
        if (cached / WEIGHTS_FILE).exists():
            return f"loaded from the cache{weights(loading=True)}"
        if not self.entry.card.trainable:
            return f"used as built (nothing to train){weights()}"
        if not self.train:
            raise self._none_to_load(job)
        return f"trained now{weights()}"

    def check_used(self, jobs: list[Job]) -> None:
        """Every ``--checkpoint`` is some job's model: one of a task no job has would be left unread
        while another model is trained (or, with ``--no-train``, said to be missing) in its place."""
        used = {self.given_checkpoint(job) for job in jobs}
        for path in self.checkpoints if self.release is None else ():
            tasks = sorted({job.task for job in jobs if self.given_checkpoint(job) == path})
            if len(tasks) > 1:  # only a card-less one serves every task: it holds the model of one at most
                raise ConfigError(f"--checkpoint {path} has no card.json naming its task, and this run would score "
                                  f"it as a {' and as a '.join(tasks)} model: a checkpoint holds one task's model; "
                                  "give it with the card.json diffzoo wrote beside it, or a suite whose cases "
                                  "score one task")
            if path not in used:
                task = checkpoint_meta(path)[1].get("task")
                raise ConfigError(f"--checkpoint {path} is a {task} model, but no case of this run scores one (they "
                                  f"score {' and '.join(sorted({job.task for job in jobs}))} models): give a "
                                  f"checkpoint of that task, or a suite with {task} cases")

    def _new_detector(self, job: Job, loading: bool = False) -> Detector:
        torch.manual_seed(job.config.seed)
        label_space = self.dataset.label_space if job.task == Task.SEMANTIC else BINARY
        det = create_detector(self.entry.name, job.task, label_space,
                              pretrained=built_pretrained(self.entry, job.config.pretrained, loading))
        return moved_detector(det, self.device)

    def given_checkpoint(self, job: Job) -> Path | None:
        """The ``--checkpoint`` of ``job``'s task (None with released weights: those are its files)."""
        if self.release is not None:
            return None
        tasks = [(p, checkpoint_meta(p)[1].get("task")) for p in self.checkpoints]  # None: no card names it
        return next((p for p, task in tasks if task == job.task), next((p for p, task in tasks if task is None), None))

    def _cache_model(self, job: Job, det: Detector, cached: Path, source: str,
                     training: dict[str, Any] | None, **extra: Any) -> CheckpointInfo:
        """Rank 0 writes ``det`` to the cache folder of ``job``, every rank then loads it back:
        the sha256 comes from the written file."""
        def save() -> None:
            det.save(cached, extra={**extra, "training": training, "train_subset": job.spec.to_dict(),
                                    "dataset_fingerprint": self.dataset.fingerprint(), "cache_key": job.key})
            check_cached_weights(cached)  # a plugin's own save may not go through save_checkpoint

        distributed.on_main(save)  # a failed save (a full disk) stops every rank, not rank 0 alone
        meta = det.load(cached)
        return CheckpointInfo(source, cached, meta["sha256"], training)

    def _train(self, job: Job, det: Detector, cached: Path) -> CheckpointInfo:
        """Train ``det`` (through DDP under torchrun); rank 0 writes the checkpoint to the
        cache, the other ranks wait, then all load it.

        The shared training loop saves its state every ``save_every`` steps beside the
        checkpoint and a later run of the same job resumes from it (:mod:`~..models.resume`);
        the state is deleted once the checkpoint is written.
        """
        ids = training_ids(self.dataset, job.spec)
        desc = f"training {self.entry.name} [{job.task}] on {self.dataset.name}/{job.spec.split}{job.held_out}"
        resume = Resume(resume_dir(self.entry.name, job.key), self.save_every,
                        {"detector": self.entry.name, "cache_key": job.key, "train_config": job.config.to_dict()})
        validate = self._validation(job, det)
        monitor = TrainMonitor(self.entry.name, train_log_dir(self.entry.name, job.key), self.log_every,
                               job.val_every, validate)  # its loss check serves every fit, the shared loop's or not
        with self.progress.task(desc, total=job.config.iterations) as task:
            done = [0]

            def advance(step: int, loss: float) -> None:  # a resumed run starts past 0
                monitor.watch.check(step, loss)
                task.advance(step - done[0], loss=loss)
                done[0] = step

            def preparing(done_: int, total: int) -> None:  # e.g. features extracted before step 1
                task.advance(0, preparing=f"{done_}/{total}")

            data = cast(Dataset, _Reading(self.dataset))
            try:
                with plugin_code(self._plugin("its fit")):
                    log_ = det.fit(TrainData(data, ids, TrainHooks(resume, monitor, preparing)), job.config,
                                   progress=advance)
            except DiffzooError as exc:
                raise _own_message(exc) from exc.__cause__
            finally:
                monitor.close()
        try:  # the training log goes into the card and every record: a JSON mapping
            if not isinstance(log_, dict):
                raise TypeError(f"a {type(log_).__name__}")
            json.dumps(log_)
        except (TypeError, ValueError) as exc:
            raise PluginError(f"{self._plugin('its fit')} returned {exc}, not a training log (a dict of JSON values: "
                              "the shared training loop's, or one of the detector's own)") from None
        log_["num_train_images"] = len(ids)
        ckpt = self._cache_model(job, det, cached, "trained", log_, train_config=job.config.to_dict())
        if distributed.is_main():
            resume.clear()  # the checkpoint is written: nothing left to resume
        return self._with_log(job, ckpt)

    def _plugin(self, what: str) -> str:
        return f"detector {self.entry.name!r} from plugin {self.entry.source!r}: {what}"

    def _validation(self, job: Job, det: Detector) -> Validation | None:
        """The periodic validation of ``job``'s training: its validation pass with the fixed
        thresholds, logged and plotted; it never selects a checkpoint (the final weights are
        the model, docs/detectors.md).  None (said, when asked for) without a validation split."""
        spec = job.validation
        if spec is None:
            if job.val_every:
                log.warning("--val-every: dataset %s has no %s split; the training is not validated",
                            self.dataset.name, " or ".join(VALIDATION_SPLITS))
            return None
        pixels = job.task != Task.CLASSIFICATION

        def validate() -> tuple[str, dict[str, float]]:
            return spec.split, validation_metrics(self.evaluator.run(det, spec, Thresholds.fixed(det)), pixels)

        return validate

    def _with_log(self, job: Job, ckpt: CheckpointInfo) -> CheckpointInfo:
        """``ckpt`` with the training's log folder in the cache (when it has one) and its name."""
        folder = train_log_dir(self.entry.name, job.key)
        return replace(ckpt, log_dir=folder if folder.is_dir() else None, model_name=model_name(self.entry.name, job))


class _Reading:
    """A dataset as a training reads it: a sample whose reading raises names itself and the
    dataset (:func:`~..core.errors.plugins_bug`, as an evaluation's does); the rest is the dataset's."""

    def __init__(self, dataset: Dataset):
        self.wrapped = dataset

    def __getattr__(self, name: str) -> Any:
        if name == "wrapped":  # an unpickled copy before its state is set: no dataset to ask
            raise AttributeError(name)
        return getattr(self.wrapped, name)

    def load(self, sample_id: str) -> Sample:
        with plugin_code(f"sample {sample_id!r} of dataset {self.wrapped.name!r}: reading it for training"):
            return self.wrapped.load(sample_id)


def _own_message(exc: DiffzooError) -> DiffzooError:
    """``exc`` with its own one-line message where torch re-raised it from a loader worker, whose
    traceback it then carries as its message (the traceback's last line is ``Type: message``)."""
    text = str(exc)
    if not text.startswith(f"Caught {type(exc).__name__} in DataLoader worker process "):
        return exc
    error = copy.copy(exc)
    error.args = (text.rstrip("\n").rsplit("\n", 1)[-1].partition(": ")[2],)
    return error


@contextmanager
def training_lock(detector: str, key: str) -> Iterator[None]:
    """Hold the lock of cache entry ``key`` of ``detector`` while the block runs: one process
    at a time looks for, trains and caches that model.  A second process that shares the cache
    waits (saying so once), then finds the finished checkpoint in the cache; a resume state is
    therefore taken over only from a process that is gone (the operating system frees a dead
    holder's lock, :func:`~diffzoo.harness.core.fsutil.lock_open_file`).  Under torchrun rank 0
    alone holds it, the other ranks waiting with it in step (:func:`.distributed.main_waits`)."""
    path = cache_dir(detector, key).with_name(f"{key}.lock")  # <key>.lock beside its checkpoint folder

    def open_lock() -> IO[str]:
        with writing(path):
            make_dir(path.parent)
            return open(path, "a", encoding="utf-8")

    fh = distributed.on_main(open_lock)
    said = False

    def attempt() -> bool:
        nonlocal said
        assert fh is not None  # attempt() runs on rank 0, which opened it
        try:
            if lock_open_file(fh, wait=False):
                return True
            if not said:
                log.warning("waiting for another process training %s (lock %s)", key, path)
                said = True
            # one process waits in the kernel; under torchrun rank 0 keeps trying, its ranks in step
            return not distributed.is_initialized() and lock_open_file(fh)
        except OSError as exc:  # a filesystem without locks: nothing keeps two runs apart
            log.warning("cannot lock %s (%s): two runs that share this cache may train %s at once",
                        path, exc.strerror or exc, key)
            return True

    try:
        distributed.main_waits(attempt)
        yield
    finally:
        if fh is not None:
            fh.close()  # releases the lock


def validation_metrics(result: EvalResult, pixels: bool) -> dict[str, float]:
    """The logged metrics of one validation pass (``pixels``: a segmenter, else a classifier)."""
    out: dict[str, float] = {}
    for task, state in sorted(result.states.items()):
        if task not in VALIDATION_METRICS:
            continue
        values = state.compute()
        for metric, name in VALIDATION_METRICS[task]:
            if metric.startswith("img_") == pixels:
                continue  # a segmenter's pixels, a classifier's image scores
            value = values.get(metric, math.nan)
            out[name] = float(value) if value is not None else math.nan
    return out


def model_name(detector: str, job: Job) -> str:
    """How ``--out`` names a model's training log and plot: detector, task, held-out editors,
    and the cache key's first 8 characters (``segformer-binary-1a2b3c4d``)."""
    parts = [detector, job.task]
    if job.spec.exclude_editors:
        parts.append("without-" + "+".join(job.spec.exclude_editors))
    if job.spec.split != "train":
        parts.append(job.spec.split)
    return "-".join(parts + [job.key[:8]])


def check_cached_weights(folder: Path, remove: bool = True) -> None:
    """The weights in cache folder ``folder``, checked finite whatever wrote them (a plugin's
    own ``save`` may not go through ``save_checkpoint``).  A diverged model is refused;
    ``remove``: the folder is deleted first (this run just wrote it)."""
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
    """One checkpoint per task: a run scores the model it is given, it never picks one of
    several by its scores (that would be choosing a checkpoint on the test split).  Each is a
    safetensors file whose header parses: an empty or cut-short one is refused before any work."""
    by_task: dict[str, Path] = {}
    for path in paths:
        weights, meta = checkpoint_meta(path)
        read_weights(weights, header_only=True)
        task = meta.get("task", "?")
        if task in by_task:
            raise ConfigError(
                f"two --checkpoint for the {task} task ({by_task[task]} and {path}): a run scores one model "
                "per task and never chooses between checkpoints by their scores on the evaluated split; "
                "run each checkpoint separately (with its own --out) and compare the records"
            )
        by_task[task] = path


def built_pretrained(entry: Any, pretrained: bool, loading: bool) -> bool:
    """Whether a model of registry ``entry`` is built with its card's pretrained weights: as asked,
    unless a checkpoint follows (``loading``) that holds them too (:attr:`TorchDetector.whole_checkpoint`)."""
    return pretrained and not (loading and getattr(entry.load(), "whole_checkpoint", False) is True)
