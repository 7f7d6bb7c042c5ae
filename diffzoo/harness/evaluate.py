"""Evaluation: stream a split through a distortion into a detector and
update metric states.  Memory does not grow with the dataset beyond the
small per-image rows the metric states keep.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from .core.outputs import check_output, has_pixels, pixel_predictions
from .errors import ConfigError, CorruptSampleError, DetectorError, DiffzooError
from .metrics import AREA_THRESHOLD, SCORE_THRESHOLD, EvalState, prediction_digest
from .progress import NullProgress, Progress
from .protocols import Dataset, Detector
from .types import BINARY, DetectionOutput, SampleMeta

log = logging.getLogger(__name__)

Distortion = Callable[..., tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class Thresholds:
    """The thresholds one evaluation decides with, and where they came from.

    ``pixel``: edited if probability > pixel (binary models; semantic ones
    use the argmax); ``area``: an image is edited if its predicted edited
    area > area of the image; ``score``: edited if a detector's own image
    probability > score.  ``source``: ``fixed`` or ``calibrated on <split>``.
    """

    pixel: float
    area: float = AREA_THRESHOLD
    score: float = SCORE_THRESHOLD
    source: str = "fixed"

    @classmethod
    def fixed(cls, detector: Detector) -> Thresholds:
        return cls(pixel=detector.card.default_threshold)


@dataclass
class EvalResult:
    """Metric states of one model on one (split, distortion)."""

    states: dict[str, EvalState]  # metric task ("binary" / "semantic") -> state
    baselines: dict[str, EvalState] = field(default_factory=dict)
    evaluated: int = 0
    skipped: list[dict[str, str]] = field(default_factory=list)


def image_tensor(image: np.ndarray) -> torch.Tensor:
    """An H x W x 3 uint8 RGB image as the 1 x 3 x H x W float batch in [0, 1] detectors take."""
    return torch.from_numpy(np.ascontiguousarray(image)).permute(2, 0, 1)[None].float() / 255.0


def predict_checked(detector: Detector, images: torch.Tensor, ids: list[str]) -> DetectionOutput:
    """``detector.predict(images)``, held to the protocol before anything
    reads it (core/outputs.py): a malformed answer, or an exception other
    than a DiffzooError from the detector's own code, is a DetectorError
    naming the detector and the sample."""
    try:
        out = detector.predict(images)
    except DiffzooError:
        raise
    except Exception as exc:  # a plugin's bug: say whose, keep the cause for --debug
        name = getattr(getattr(detector, "card", None), "name", type(detector).__name__)
        raise DetectorError(name, f"predict raised {type(exc).__name__}: {exc}",
                            sample_id=ids[0] if len(ids) == 1 else ", ".join(ids[:4])) from exc
    return check_output(detector, out, ids, tuple(images.shape[-2:]))


def distortion_context(distortion: Distortion) -> set[str]:
    """Which of ``meta`` / ``label_space`` a distortion declares (it then gets them)."""
    try:
        params = inspect.signature(distortion).parameters
    except (TypeError, ValueError):
        return set()
    return {"meta", "label_space"} & set(params)


def evaluate(
    detector: Detector,
    dataset: Dataset,
    split: str,
    distortion: Distortion,
    distortion_params: dict[str, Any],
    *,
    tasks: Iterable[str] = ("binary",),
    strict: bool = False,
    baselines: bool = False,
    progress: Progress | None = None,
    description: str = "evaluating",
    ids: list[str] | None = None,
    thresholds: Thresholds | None = None,
) -> EvalResult:
    """Run ``detector`` over ``split`` (or only ``ids`` of it); corrupt
    samples are skipped and counted (``strict`` re-raises instead).
    ``tasks`` are the metric tasks to score: ``binary`` (any segmenter; for a
    classifier without pixel output, its image scores only) and
    ``semantic`` (semantic ones).  ``thresholds``: the pixel and image
    thresholds (default: the card's and METRICS.md's fixed ones).

    Every prediction is checked first (core/outputs.py: a malformed one is a
    DetectorError).  The distortion's label is the ground truth; when it kept
    the label but changed the image size, the prediction is resized back to
    the label."""
    progress = progress or NullProgress()
    thresholds = thresholds or Thresholds.fixed(detector)
    threshold = thresholds.pixel
    tasks = set(tasks)
    if "semantic" in tasks and detector.task != "semantic":
        raise ConfigError(f"semantic metrics need a semantic model; {detector.card.name} is {detector.task}")
    states = {t: EvalState(BINARY if t == "binary" else dataset.label_space, t,
                           area_threshold=thresholds.area, score_threshold=thresholds.score)
              for t in sorted(tasks)}
    context = distortion_context(distortion)
    result = EvalResult(states)
    if baselines:
        result.baselines = {
            "all_background": EvalState(BINARY, "binary"),
            "all_edited": EvalState(BINARY, "binary"),
        }
    ids = dataset.ids(split) if ids is None else ids
    with progress.task(description, total=len(ids)) as task:
        for sid in ids:
            try:
                sample = dataset.load(sid)
            except CorruptSampleError as exc:
                if strict:
                    raise
                log.warning("skipping corrupt sample: %s", exc)
                result.skipped.append({"id": sid, "kind": exc.kind, "reason": exc.reason})
                task.advance()
                continue
            extra = {k: v for k, v in (("meta", sample.meta), ("label_space", dataset.label_space)) if k in context}
            image, label = distortion(sample.image, sample.label, **distortion_params, **extra)
            out = predict_checked(detector, image_tensor(image), [sid])
            if not has_pixels(out):  # an image-level classifier: its image score only
                binary_pred = edited_prob = semantic_pred = None
            else:
                binary_pred, edited_prob, semantic_pred = pixel_predictions(detector, out, threshold, label.shape)[0]
            score = None if out.image_score is None else float(out.image_score.reshape(-1)[0])
            binary_gt = dataset.label_space.to_binary_map(label)
            meta: SampleMeta = sample.meta
            digest = prediction_digest(semantic_pred if semantic_pred is not None else binary_pred, edited_prob, score)
            if "binary" in states:
                states["binary"].update(meta, binary_gt, binary_pred, edited_prob, image_score=score, digest=digest)
            if "semantic" in states:
                states["semantic"].update(meta, label, semantic_pred, edited_prob, image_score=score, digest=digest)
            for name, state in result.baselines.items():
                const = np.full_like(binary_gt, 1 if name == "all_edited" else 0)
                state.update(meta, binary_gt, const, const.astype(np.float32))
            result.evaluated += 1
            task.advance()
    return result
