"""Evaluation: stream a split through a distortion into a detector and
update metric states.  Memory does not grow with the dataset beyond the
small per-image rows the metric states keep.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from diffzoo.harness.core import distributed
from diffzoo.harness.core.outputs import check_output
from diffzoo.harness.data.distortions import shorter_side_size
from diffzoo.harness.core.errors import ConfigError, CorruptSampleError, DetectorError, DiffzooError
from diffzoo.harness.metrics import EvalState
from diffzoo.harness.records.policy import Thresholds
from diffzoo.harness.run import baselines as constant_baselines
from diffzoo.harness.run.baselines import BaselineCache
from diffzoo.harness.run.loading import as_batch, eval_inputs
from diffzoo.harness.run.scoring import Overlap, Scorer, metric_path
from diffzoo.harness.core.progress import NullProgress, Progress
from diffzoo.harness.core.protocols import Dataset, Detector
from diffzoo.harness.core.types import BINARY, IGNORE_INDEX, DetectionOutput
from diffzoo.harness.data.mask_encoding import all_ignore_error

log = logging.getLogger(__name__)

Distortion = Callable[..., tuple[np.ndarray, np.ndarray]]


@dataclass
class EvalResult:
    """Metric states of one model on one (split, distortion)."""

    states: dict[str, EvalState]  # metric task ("binary" / "semantic", and OWN_SCORE) -> state
    baselines: dict[str, EvalState] = field(default_factory=dict)
    evaluated: int = 0
    skipped: list[dict[str, str]] = field(default_factory=list)
    sizes: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Sample id -> (h, w) of its stored image, before any distortion (this
    process's images; not merged across ranks): what the planner checks a
    size-only distortion against (:func:`same_input`)."""


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


def _parameters(distortion: Distortion) -> set[str]:
    try:
        return set(inspect.signature(distortion).parameters)
    except (TypeError, ValueError):
        return set()


def distortion_context(distortion: Distortion) -> set[str]:
    """Which of ``meta`` / ``label_space`` a distortion declares (it then gets them)."""
    return {"meta", "label_space"} & _parameters(distortion)


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
        baseline = (h, w)
        if own and short_side is not None:
            baseline = shorter_side_size(h, w, short_side)
        if tuple(size_of(h, w, **params)) != baseline:
            return False
    return True


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
    input_short_side: int | None = None,
    workers: int = 0,
    pin_memory: bool = False,
    cache: BaselineCache | None = None,
    metrics: str = "auto",
    overlap: bool | None = None,
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
    the label.  ``input_short_side``: the recipe's evaluation input rule
    (:func:`detector_input`), applied after the distortion unless the
    distortion sets the input size itself (:func:`sets_input_size`).
    ``workers``: loader processes that read and distort the images
    (run/loading.py; 0: this process); the result is the same for any number.
    ``pin_memory``: page-locked images (for a detector on a GPU).
    ``baselines``: also score the constant predictors (run/baselines.py),
    taken from ``cache`` when it holds them for these images and every
    label came through the distortion as stored.

    ``metrics``: where each prediction is reduced to the states' counts,
    ``numpy`` (CPU), ``torch`` (the model's device) or ``auto`` (torch on
    CUDA); ``overlap``: score image n in a worker thread while image n + 1
    is read and run (None: on CUDA); run/scoring.py.  The numbers are the
    same either way."""
    progress = progress or NullProgress()
    thresholds = thresholds or Thresholds.fixed(detector)
    tasks = set(tasks)
    if "semantic" in tasks and detector.task != "semantic":
        raise ConfigError(f"semantic metrics need a semantic model; {detector.card.name} is {detector.task}")
    states = {t: EvalState(BINARY if t == "binary" else dataset.label_space, t,
                           area_threshold=thresholds.area, score_threshold=thresholds.score)
              for t in sorted(tasks)}
    short_side = None if sets_input_size(distortion) else input_short_side
    result = EvalResult(states)
    ids = dataset.ids(split) if ids is None else ids
    cached = cache.get(split, ids) if baselines and cache is not None else None
    if baselines and cached is None:
        result.baselines = constant_baselines.empty()
    device = getattr(detector, "device", torch.device("cpu"))
    scorer = Scorer(detector, states, thresholds, dataset.label_space, result.baselines or None,
                    metric_path(metrics, torch.device(device)))
    overlap = Overlap(torch.device(device).type == "cuda" if overlap is None else overlap)
    labels_kept = True  # every label as stored (a cached baseline holds)
    ignored = pixels = 0  # label pixels that are 255 ('ignore'), of all
    evaluated: list[str] = []
    inputs = eval_inputs(dataset, ids, distortion, distortion_params, context=distortion_context(distortion),
                         short_side=short_side, workers=workers, pin_memory=pin_memory)
    with progress.task(description, total=len(ids)) as task:
        try:
            for item in inputs:
                sid = item.sid
                if item.error is not None:
                    if strict or not isinstance(item.error, CorruptSampleError):
                        raise item.error
                    log.warning("skipping corrupt sample: %s", item.error)
                    result.skipped.append({"id": sid, "kind": item.error.kind, "reason": item.error.reason})
                    task.advance()
                    continue
                label, meta = item.label, item.meta
                if cached is not None and not item.label_kept and not evaluated:
                    cached, result.baselines = None, constant_baselines.empty()  # a crop: score its own labels
                    scorer.baselines = result.baselines
                labels_kept &= item.label_kept
                evaluated.append(sid)
                result.sizes[sid] = item.size
                ignored, pixels = ignored + int(np.count_nonzero(label == IGNORE_INDEX)), pixels + label.size
                out = predict_checked(detector, as_batch(item.image), [sid])
                overlap.submit(scorer.score, meta, label, out)  # the metrics of this image while the next one runs
                result.evaluated += 1
                task.advance()
        finally:
            overlap.close()  # every image scored (or the first error of one raised)
    counts = distributed.all_gather((ignored, pixels))  # every rank decides on the whole split
    error = all_ignore_error(dataset.name, f"split {split}", sum(c[0] for c in counts), sum(c[1] for c in counts))
    if error is not None:
        raise error
    if cached is not None:
        states_, scored = cached
        same = labels_kept and scored == evaluated  # the same images, labels as stored
        result.baselines = states_ if same else _baselines_of(dataset, ids, distortion, distortion_params, workers)
    elif baselines and cache is not None and labels_kept:
        cache.put(split, ids, result.baselines, evaluated)
    return result


def _baselines_of(dataset: Dataset, ids: list[str], distortion: Distortion, params: dict[str, Any],
                  workers: int) -> dict[str, EvalState]:
    """The baselines of a pass whose distortion changed some labels but not the
    first one's (so the cached ones were taken): one more reading of its labels."""
    states = constant_baselines.empty()
    for item in eval_inputs(dataset, ids, distortion, params, context=distortion_context(distortion),
                            workers=workers):
        if item.error is None:
            constant_baselines.update(states, item.meta, dataset.label_space.to_binary_map(item.label))
    return states


def gather_eval_result(result: EvalResult, order: Sequence[str]) -> EvalResult | None:
    """Merge every rank's :class:`EvalResult` of one split on rank 0.

    States travel as their documented ``state_dict`` (an exact round trip)
    and are merged with :meth:`EvalState.merge`, which computes from rows in
    canonical order, so the merged metrics equal the single-process ones.
    Skipped samples are put back in ``order`` (the split's id order).
    Returns the result itself in a single process, None on ranks > 0.
    """
    if not distributed.is_initialized():
        return result
    parts = distributed.gather({
        "states": {k: s.state_dict() for k, s in result.states.items()},
        "baselines": {k: s.state_dict() for k, s in result.baselines.items()},
        "evaluated": result.evaluated,
        "skipped": result.skipped,
    })
    if parts is None:
        return None

    def merged(key: str, name: str) -> EvalState:
        state = EvalState.from_state_dict(parts[0][key][name])
        for part in parts[1:]:
            state.merge(EvalState.from_state_dict(part[key][name]))
        return state

    position = {sid: i for i, sid in enumerate(order)}
    skipped = sorted((s for p in parts for s in p["skipped"]), key=lambda s: position.get(s["id"], len(position)))
    return EvalResult(
        states={k: merged("states", k) for k in parts[0]["states"]},
        baselines={k: merged("baselines", k) for k in parts[0]["baselines"]},
        evaluated=sum(p["evaluated"] for p in parts),
        skipped=skipped,
    )
