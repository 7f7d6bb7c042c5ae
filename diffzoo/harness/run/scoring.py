"""What evaluation does with one image's checked prediction: the metric states'
updates, the prediction digest and the constant baselines.

Two paths give the same numbers (``tests/test_metrics_reduce.py``,
``tests/test_scoring.py``):

- ``numpy``: the maps come to the CPU and :func:`~..metrics.reduce.reduce_numpy`
  counts them (the faster path on a CPU, measured: ``benchmarks/metrics_benco.py``);
- ``torch``: the maps stay on the model's device and
  :func:`~..metrics.reduce.reduce_torch` counts them there; only the counts,
  and the predicted label map and probability bins the digest hashes, travel
  to the CPU.  ``auto`` takes it when the detector runs on CUDA.

:class:`Overlap` runs the scoring of image n in one worker thread while the
calling thread reads image n + 1 and runs the model on it, so that on a GPU
the slower of the two sets the pace, not their sum.  One worker scores the
images in the order they came, so every state sees the same sequence of
updates as without it; an error raised there is raised in the caller at the
next submission or at :meth:`Overlap.close`.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from diffzoo.harness.core.cards import DetectorCard
from diffzoo.harness.core.errors import ConfigError, DetectorError
from diffzoo.harness.core.outputs import has_pixels, pixel_tensors
from diffzoo.harness.core.types import DetectionOutput, SampleMeta, StateKey
from diffzoo.harness.metrics import EvalState
from diffzoo.harness.metrics.confusion import check_label_map
from diffzoo.harness.metrics.reduce import reduce_numpy, reduce_torch
from diffzoo.harness.metrics.state import prediction_digest
from diffzoo.harness.records.policy import Thresholds
from diffzoo.harness.run import baselines as constant_baselines

METRIC_PATHS = ("auto", "numpy", "torch")


def metric_path(path: str, device: torch.device) -> str:
    """``numpy`` or ``torch`` for a detector on ``device`` (``auto``: torch on CUDA)."""
    if path not in METRIC_PATHS:
        raise ConfigError(f"metric path {path!r} is not one of {', '.join(METRIC_PATHS)}")
    if path == "auto":
        return "torch" if device.type == "cuda" else "numpy"
    return path


def check_own_score(card: DetectorCard, score: float | None, planned: bool, sample_id: str) -> None:
    """Pixels and an image score of its own come from a detector whose card says so
    (``gives_image_score``): the run plans the second image row from the card, and predict
    gives the verdicts of the rows it plans (``planned``: that row is there to fill)."""
    if score is not None and not card.gives_image_score:
        raise DetectorError(card.name, "predict returned an image_score beside its pixels, but the card does not "
                            "declare gives_image_score=True (docs/plugins.md)", sample_id=sample_id)
    if score is None and planned:
        raise DetectorError(card.name, "the card declares gives_image_score=True, but predict returned no "
                            "image_score beside its pixels", sample_id=sample_id)


@dataclass
class Scorer:
    """Scores one image's prediction into ``states`` (and ``baselines`` when given)."""

    detector: Any
    states: dict[str, EvalState]
    thresholds: Thresholds
    label_space: Any
    baselines: dict[str, EvalState] | None = None
    path: str = "numpy"

    def score(self, meta: SampleMeta, label: np.ndarray, out: DetectionOutput) -> None:
        check_label_map(f"sample {meta.id}: GT", label, self.label_space.num_classes, allow_ignore=True)
        binary_gt = self.label_space.to_binary_map(label)
        gts = {StateKey.BINARY: binary_gt, StateKey.SEMANTIC: label}
        score = None if out.image_score is None else float(out.image_score.reshape(-1)[0])
        if not has_pixels(out):  # an image-level classifier: its image score only
            digest = prediction_digest(None, None, score)
            for task in gts:
                if task in self.states:
                    self.states[task].update(meta, gts[task], None, None, image_score=score, digest=digest)
        else:
            maps = self._maps(out, label.shape)
            reduced: dict[StateKey, Any] = {}
            for task in gts:  # the semantic GT's binary view is binary_gt: one histogram
                if task in self.states:
                    reduced[task] = self._reduce(gts[task], maps, task, like=reduced.get(StateKey.BINARY))
            check_own_score(self.detector.card, score, StateKey.OWN_SCORE in self.states, meta.id)
            if StateKey.OWN_SCORE in self.states:  # pixels and its own score: the second image row
                self.states[StateKey.OWN_SCORE].add(meta, reduced[StateKey.BINARY], image_score=score,
                                                    digest=self._digest(maps, reduced[StateKey.BINARY], score,
                                                                        semantic=False))
            score = None  # the task states judge images by the predicted area, as for every segmenter
            digest = self._digest(maps, next(iter(reduced.values()), None), score, semantic=maps[2] is not None)
            for task, counts in reduced.items():
                self.states[task].add(meta, counts, image_score=score, digest=digest)
        if self.baselines is not None:
            constant_baselines.update(self.baselines, meta, binary_gt)

    # -- the two paths ---------------------------------------------------------------------
    def _maps(self, out: DetectionOutput, size: tuple[int, int]) -> tuple[Any, Any, Any]:
        """(binary pred, edited prob, semantic pred or None) of the batch's one image: numpy
        arrays on the numpy path, tensors on the model's device on the torch path."""
        binary, edited, semantic = pixel_tensors(self.detector, out, self.thresholds.pixel, size)
        maps = (binary[0], edited[0], None if semantic is None else semantic[0])
        if self.path == "torch":
            return maps
        return maps[0].cpu().numpy(), maps[1].cpu().numpy(), None if maps[2] is None else maps[2].cpu().numpy()

    def _reduce(self, gt: np.ndarray, maps: tuple[Any, Any, Any], task: str, like: Any = None) -> Any:
        semantic = task == StateKey.SEMANTIC
        pred, c = (maps[2], self.label_space.num_classes) if semantic else (maps[0], 2)
        bins = self.states[task].config.auc_bins
        if self.path == "torch":
            gt_t = torch.from_numpy(gt).to(maps[1].device, non_blocking=True)
            return reduce_torch(gt_t, pred, maps[1], c, bins, like=like)
        return reduce_numpy(gt, pred, maps[1], c, bins, like=like)

    def _digest(self, maps: tuple[Any, Any, Any], counts: Any, score: float | None, semantic: bool) -> str:
        """:func:`prediction_digest` of the label map the states scored and the probabilities' bins."""
        pred, prob = (maps[2] if semantic else maps[0]), maps[1]
        binned = None if counts is None else counts.bins16  # computed with the counts, on either path
        if self.path == "torch":
            pred, prob = pred.cpu().numpy(), None if binned is not None else prob.cpu().numpy()
        return prediction_digest(pred, prob, score, binned=binned)


class Overlap:
    """Calls submitted functions one after another in one worker thread (``on``), or at once."""

    def __init__(self, on: bool, depth: int = 2):
        self.on = on
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        if on:
            self._thread = threading.Thread(target=self._work, name="diffzoo-scoring", daemon=True)
            self._thread.start()

    def _work(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            if self._error is None:
                try:
                    job[0](*job[1])
                except BaseException as exc:  # raised in the caller, in order
                    self._error = exc

    def _raise(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def submit(self, fn: Callable[..., None], *args: Any) -> None:
        if not self.on:
            fn(*args)
            return
        self._raise()
        self._queue.put((fn, args))

    def close(self) -> None:
        """Wait for every submitted call; raise the first error one of them raised."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
        self._raise()
