"""Evaluation: one pass of images through a distortion into a detector, into metric states.

:func:`evaluate` streams a split (or some of its ids) in this process; memory does not grow
with the dataset beyond the small per-image rows the metric states keep.  :class:`Evaluator`
runs a planned :class:`~.plan.PassSpec`: it owns the device, the loader workers, the
sharding over torchrun ranks and the gathering of the shards, so that every rank gets the
same merged result; and a pass that would feed the detector exactly the input of the
model's undistorted pass on its split reuses that pass's predictions (noted), instead of
running again.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch

from diffzoo.harness.core import distributed
from diffzoo.harness.core.errors import ConfigError, CorruptSampleError, DetectorError, DiffzooError, plugins_bug
from diffzoo.harness.core.outputs import check_output
from diffzoo.harness.core.plugins import get_registry
from diffzoo.harness.core.progress import NullProgress, Progress
from diffzoo.harness.core.protocols import Dataset, Detector
from diffzoo.harness.core.types import BINARY, IGNORE_INDEX, DetectionOutput, StateKey, Task
from diffzoo.harness.data.mask_encoding import all_ignore_error
from diffzoo.harness.metrics import EvalState
from diffzoo.harness.records.policy import Thresholds
from diffzoo.harness.run import baselines as constant_baselines
from diffzoo.harness.run.baselines import BaselineCache, baseline_cache
from diffzoo.harness.run.loading import Distortion, as_batch, eval_inputs, same_input, sets_input_size
from diffzoo.harness.run.plan import CALIBRATE, VALIDATE, PassSpec
from diffzoo.harness.run.scoring import Overlap, Scorer, metric_path

log = logging.getLogger(__name__)


@dataclass
class EvalResult:
    """Metric states of one model on one pass."""

    states: dict[str, EvalState]  # StateKey -> state
    baselines: dict[str, EvalState] = field(default_factory=dict)
    evaluated: int = 0
    skipped: list[dict[str, str]] = field(default_factory=list)
    sizes: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Sample id -> (h, w) of its stored image, before any distortion (this process's images;
    not merged across ranks): what a size-only distortion is checked against (:func:`same_input`)."""
    params: dict[str, Any] = field(default_factory=dict)
    """The distortion parameters as the records say them (``same_input_as: baseline`` for a
    pass that reused the undistorted one's predictions)."""


def predict_checked(detector: Detector, images: torch.Tensor, ids: list[str]) -> DetectionOutput:
    """``detector.predict(images)``, held to the protocol before anything
    reads it (core/outputs.py): a malformed answer, or an exception other
    than a DiffzooError from the detector's own code, is a DetectorError
    naming the detector and the sample."""
    try:
        out = detector.predict(images)
    except DiffzooError:
        raise
    except (Exception, SystemExit) as exc:  # a plugin's bug (its sys.exit() too): say whose, keep the cause
        name = getattr(getattr(detector, "card", None), "name", type(detector).__name__)
        raise DetectorError(name, f"predict raised {type(exc).__name__}: {exc}",
                            sample_id=ids[0] if len(ids) == 1 else ", ".join(ids[:4])) from exc
    height, width = images.shape[-2:]
    return check_output(detector, out, ids, (height, width))


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
    ``tasks`` are the metric states to fill (:class:`StateKey`): ``binary`` (any
    segmenter; for a classifier without pixel output, its image scores only),
    ``semantic`` (semantic ones) and ``binary+score`` (a detector that gives pixels
    and its own image score: images judged by that score).  ``thresholds``: the
    pixel and image thresholds (default: the card's fixed ones, docs/metrics.md).

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
    if StateKey.SEMANTIC in tasks and detector.task != Task.SEMANTIC:
        raise ConfigError(f"semantic metrics need a semantic model; {detector.card.name} is {detector.task}")
    states = {t: EvalState(dataset.label_space if t == StateKey.SEMANTIC else BINARY,
                           "semantic" if t == StateKey.SEMANTIC else "binary",
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
    scoring = Overlap(torch.device(device).type == "cuda" if overlap is None else overlap)
    labels_kept = True  # every label as stored (a cached baseline holds)
    ignored = pixels = 0  # label pixels that are 255 ('ignore'), of all
    evaluated: list[str] = []
    inputs = eval_inputs(dataset, ids, distortion, distortion_params, short_side=short_side, workers=workers,
                         pin_memory=pin_memory)
    with progress.task(description, total=len(ids)) as task:
        try:
            for item in inputs:
                sid = item.sid
                if item.error is not None:
                    item.error = plugins_bug(f"sample {sid!r} of dataset {dataset.name!r}: reading it, or the "
                                             f"distortion {getattr(distortion, '__name__', distortion)!r},",
                                             item.error)  # an adapter's or a distortion's bug, named
                    if strict or not isinstance(item.error, CorruptSampleError):
                        raise item.error
                    log.warning("skipping corrupt sample: %s", item.error)
                    result.skipped.append({"id": sid, "kind": item.error.kind, "reason": item.error.reason})
                    task.advance()
                    continue
                label, meta, image, size = item.label, item.meta, item.image, item.size
                assert label is not None and meta is not None and image is not None and size is not None, \
                    "an EvalInput without an error has all its fields"
                if cached is not None and not item.label_kept and not evaluated:
                    cached, result.baselines = None, constant_baselines.empty()  # a crop: score its own labels
                    scorer.baselines = result.baselines
                labels_kept &= item.label_kept
                evaluated.append(sid)
                result.sizes[sid] = size
                ignored, pixels = ignored + int(np.count_nonzero(label == IGNORE_INDEX)), pixels + label.size
                out = predict_checked(detector, as_batch(image), [sid])
                scoring.submit(scorer.score, meta, label, out)  # the metrics of this image while the next one runs
                result.evaluated += 1
                task.advance()
        finally:
            scoring.close()  # every image scored (or the first error of one raised)
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
    for item in eval_inputs(dataset, ids, distortion, params, workers=workers):
        if item.error is None:
            assert item.meta is not None and item.label is not None, "an EvalInput without an error has all its fields"
            constant_baselines.update(states, item.meta, dataset.label_space.to_binary_map(item.label))
    return states


def gather_eval_result(result: EvalResult, order: Sequence[str]) -> EvalResult:
    """Every rank's :class:`EvalResult` of one pass, merged, on every rank.

    States travel as their documented ``state_dict`` (an exact round trip) and are merged
    with :meth:`EvalState.merge`, which computes from rows in canonical order, so the merged
    metrics equal the single-process ones.  Skipped samples are put back in ``order`` (the
    split's id order).  In a single process the result itself; ``sizes`` stay this rank's.
    """
    if not distributed.is_initialized():
        return result
    parts = distributed.all_gather({
        "states": {k: s.state_dict() for k, s in result.states.items()},
        "baselines": {k: s.state_dict() for k, s in result.baselines.items()},
        "evaluated": result.evaluated,
        "skipped": result.skipped,
    })

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
        sizes=result.sizes,
    )


class Evaluator:
    """Runs the passes of one run's plan: ``datasets`` by fingerprint (the plan's), on
    ``device`` with ``workers`` loader processes; ``name`` is the detector's, for progress
    texts and notes.  It gathers ``notes`` (passes that reused the undistorted one's
    predictions) and ``skipped`` (every sample skipped by any pass, once: id -> kind, reason)."""

    def __init__(self, datasets: dict[str, Dataset], device: torch.device, workers: int = 0, strict: bool = False,
                 progress: Progress | None = None, name: str = "the detector"):
        self.datasets, self.device, self.workers, self.strict = datasets, device, workers, strict
        self.progress, self.name = progress or NullProgress(), name
        self.notes: list[str] = []
        self.skipped: dict[str, dict[str, str]] = {}
        self._seen: dict[tuple[str, str], dict[str, tuple[int, int] | None]] = {}
        """(dataset, split) -> id -> (h, w) of the images this process read (None: unreadable)."""

    def run_all(self, model: Detector, passes: Sequence[PassSpec], thresholds: Thresholds) -> dict[str, EvalResult]:
        """Every pass of a job, in order, by pass key; a pass that feeds the model the input of
        its undistorted pass on the same split reuses that pass's result."""
        results: dict[str, EvalResult] = {}
        undistorted: dict[tuple[str, str], tuple[PassSpec, EvalResult]] = {}
        for spec in passes:
            results[spec.key] = self.run(model, spec, thresholds, undistorted.get((spec.dataset, spec.split)))
            if spec.undistorted:
                undistorted[(spec.dataset, spec.split)] = (spec, results[spec.key])
        return results

    def run(self, model: Detector, spec: PassSpec, thresholds: Thresholds,
            undistorted: tuple[PassSpec, EvalResult] | None = None) -> EvalResult:
        """The merged result of ``spec`` (the same on every rank); ``undistorted``: the
        model's undistorted pass on this split and its result, reused when ``spec`` would
        feed the model its very input."""
        if undistorted is not None:
            sizes = self._same_input(spec, undistorted[0])
            if sizes is not None:
                note = same_input_note(spec, self.name, sizes)
                log.info("%s", note)
                self.notes.append(note)
                return replace(undistorted[1], params={**spec.distortion_params, "same_input_as": "baseline"})
        dataset = self.datasets[spec.dataset]
        distortion = get_registry().get("distortion", spec.distortion).load()
        every = dataset.ids(spec.split)
        ids = every if spec.ids is None else list(spec.ids)
        result = evaluate(
            model, dataset, spec.split, distortion, spec.distortion_params, tasks=spec.tasks, strict=self.strict,
            baselines=spec.baselines, progress=self.progress, description=self._describe(model, spec, dataset, ids,
                                                                                            len(every)),
            ids=distributed.shard(ids), thresholds=thresholds, input_short_side=spec.short_side,
            workers=self.workers, pin_memory=self.device.type == "cuda", cache=baseline_cache(dataset.fingerprint()),
        )
        seen = self._seen.setdefault((spec.dataset, spec.split), {})
        seen.update(result.sizes)
        seen.update((item["id"], None) for item in result.skipped)  # unreadable: skipped by every pass alike
        merged = gather_eval_result(result, ids)
        merged.params = spec.distortion_params
        for item in merged.skipped:
            self.skipped.setdefault(item["id"], {"kind": item.get("kind", "corrupt"), "reason": item["reason"]})
        return merged

    def _describe(self, model: Detector, spec: PassSpec, dataset: Dataset, ids: list[str], split_size: int) -> str:
        where = f"{dataset.name}/{spec.split}"
        desc = {CALIBRATE: f"calibrating thresholds on {where}", VALIDATE: f"validating on {where}"}.get(
            spec.purpose, f"evaluating {self.name} [{model.task}] on {where}")
        if len(ids) < split_size:
            desc += f" ({len(ids)} images with the cases' editors)"
        if spec.distortion != "none":
            desc += f" ({spec.distortion} {', '.join(f'{k}={v}' for k, v in spec.params)})"
        if distributed.world_size() > 1:
            desc += f" (rank 0's shard of {distributed.world_size()})"
        return desc

    def _same_input(self, spec: PassSpec, base: PassSpec) -> set[tuple[int, int]] | None:
        """The image sizes of ``spec`` when it would feed the model exactly the input of its
        undistorted pass ``base`` (which covered its images and metric states), else None.
        Every rank judges its shard by the sizes it read, and all must agree."""
        if spec.undistorted or not spec.tasks <= base.tasks:
            return None
        if base.ids is not None and (spec.ids is None or not set(base.ids).issuperset(spec.ids)):
            return None
        seen = self._seen.get((spec.dataset, spec.split), {})
        mine = distributed.shard(spec.read(self.datasets))
        sizes = {size for sid in mine if (size := seen.get(sid)) is not None}
        distortion = get_registry().get("distortion", spec.distortion).load()
        same = all(sid in seen for sid in mine) and same_input(distortion, spec.distortion_params, sizes,
                                                               spec.short_side)
        return sizes if all(distributed.all_gather(same)) else None


def same_input_note(spec: PassSpec, model: str, sizes: set[tuple[int, int]]) -> str:
    """The run's note for a pass that reused the undistorted pass's predictions."""
    what = ", ".join(f"{k}={v}" for k, v in spec.params)
    shown = ", ".join(f"{w}x{h}" for h, w in sorted(sizes)[:3]) + (" ..." if len(sizes) > 3 else "")
    rule = f"shorter side {spec.short_side}" if spec.short_side else "as stored"
    why = "" if spec.short_side else (" (the native recipe evaluates at the stored size; --recipe paper evaluates "
                                      "at the training resolution, as the DiffSeg30k paper did)")
    return (f"{', '.join(spec.cases)}: {spec.distortion} ({what}) feeds {model} the same input as the undistorted "
            f"pass on {spec.split} (images {shown}, evaluated {rule}); its numbers are the baseline's, reused, not "
            f"re-run{why}")
