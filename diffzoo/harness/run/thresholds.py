"""Threshold policy: fixed thresholds, or thresholds calibrated on a
validation split that no case evaluates.

docs/metrics.md: every threshold is fixed or calibrated on validation data and
recorded; a threshold (or a checkpoint) chosen on the test split is
forbidden, and "oracle" numbers (best threshold on the evaluated split) are
reported only as separately named columns (``F1_oracle``,
``img_Acc_oracle``).

Calibration maximises, on the calibration split, the binary pixel F1 (the
pixel threshold of a binary model) and then the image accuracy of "score >
t" (the image threshold: on the predicted edited-area fraction, or on the
detector's own image probability), with the calibrated pixel threshold in
force.  Semantic models decide pixels by argmax and keep it.

Each record of the job carries the thresholds in its ``threshold_policy``
with the sha256 of the model's weights, so :func:`recorded_thresholds` finds
a model's calibrated thresholds again (``diffzoo predict --thresholds calibrated``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from diffzoo.harness.core.errors import ConfigError
from diffzoo.harness.core.protocols import Dataset, Detector
from diffzoo.harness.core.types import StateKey, Task
from diffzoo.harness.metrics.verdict import DETECTOR, threshold_text
from diffzoo.harness.records.document import read_all
from diffzoo.harness.records.model import RECORDS_DIR
from diffzoo.harness.records.policy import Thresholds
from diffzoo.harness.run.evaluate import EvalResult, Evaluator
from diffzoo.harness.run.plan import Job


def check_policy(policy: str, calibration_split: str, dataset: Dataset, evaluated_splits: set[str]) -> None:
    """A clear error for a missing calibration split, or one that is also evaluated (that would
    be choosing thresholds on the test split); the policy itself is the request's, checked there."""
    if policy == "fixed":
        return
    if calibration_split in evaluated_splits:
        raise ConfigError(
            f"cannot calibrate thresholds on {calibration_split!r}: this run evaluates that split, and "
            "choosing thresholds on the evaluated split is not allowed (docs/metrics.md); oracle numbers are "
            "reported in the *_oracle columns instead"
        )
    if calibration_split not in dataset.splits():
        raise ConfigError(
            f"dataset {dataset.name} has no {calibration_split!r} split to calibrate thresholds on (it has "
            f"{', '.join(dataset.splits())}); give one in splits.json, or use --thresholds fixed"
        )


def decide(model: Detector, job: Job, evaluator: Evaluator) -> Thresholds:
    """The thresholds ``job``'s model is evaluated with: fixed, or calibrated on the job's
    calibration pass (never an evaluated split: :func:`check_policy` made sure)."""
    if job.calibration is None:
        return Thresholds.fixed(model)
    spec = job.calibration
    return calibrate(model, spec.split, lambda thresholds: evaluator.run(model, spec, thresholds))


def calibrate(detector: Detector, split: str, run: Callable[[Thresholds], EvalResult]) -> Thresholds:
    """Calibrated thresholds for ``detector``; ``run(thresholds)`` evaluates the calibration
    split (every rank gets the same merged result, so every rank ends with the same thresholds)."""
    fixed = Thresholds.fixed(detector)
    result = run(fixed)
    counts = result.states[StateKey.BINARY].counts()  # a threshold is chosen between the two classes: both are there
    if lacking := [name for name in ("edited", "authentic") if not counts[f"num_{name}"]]:
        other = "authentic" if lacking[0] == "edited" else "edited"
        raise ConfigError(f"cannot calibrate thresholds on split {split!r}: it holds no {lacking[0]} image "
                          f"({counts[f'num_{other}']} {other}), and a threshold chosen on one class calls every "
                          "image of the other wrong; give --calibration-split a split holding both, or use "
                          "--thresholds fixed")
    thresholds = fixed
    pixel = result.states[StateKey.BINARY].best_thresholds()["pixel"] if detector.task == Task.BINARY else None
    if pixel is not None and pixel != fixed.pixel:
        thresholds = replace(fixed, pixel=pixel)
        result = run(thresholds)  # the image rule reads areas made with the pixel threshold
    # pixels and the detector's own score: both image rules; a threshold below 0 or at 1 (every image or none
    # best called edited) is applied as chosen
    for state in (result.states[StateKey.BINARY], result.states.get(StateKey.OWN_SCORE)):
        if state is not None and (image := state.best_thresholds()["image"]) is not None:
            thresholds = replace(thresholds, **{"score" if state.image_score_source == DETECTOR else "area": image})
    return replace(thresholds, source=f"calibrated on {split} ({counts['num_images']} images)")


def calibrated_split(source: str) -> str | None:
    """The split a source :func:`calibrate` wrote names (``calibrated on SPLIT (N images)``); None for another."""
    found = re.fullmatch(r"calibrated on (.+) \(\d+ images\)", source, re.DOTALL)
    return found[1] if found else None


class CalibrationMissing(ConfigError):
    """``--thresholds calibrated`` for a model no stored record holds calibrated thresholds of."""


def recorded_thresholds(store: Path | str, sha256: str, detector: str, task: str,
                        checkpoint: Path | str | None = None) -> Thresholds:
    """The calibrated thresholds that the records in ``store`` (a ``diffzoo run --out`` folder)
    hold for the model whose weights have ``sha256`` (loaded from ``checkpoint``, when known).
    The records of one calibrated model share one set; two different sets (the same weights
    calibrated in two runs) are ambiguous, and none is :class:`CalibrationMissing`, whose
    message says how to get them."""
    if task == Task.SEMANTIC:
        raise CalibrationMissing(f"{detector} [semantic] has no calibrated thresholds: a semantic model decides "
                                 "pixels by argmax and keeps its fixed image rule; use --thresholds fixed")
    folder = Path(store) / RECORDS_DIR
    # a file, or a folder of other files, is no run's --out: running there is no advice to give
    if not folder.is_dir() and (Path(store).is_file() or Path(store).is_dir() and any(Path(store).iterdir())):
        raise CalibrationMissing(f"--records {store} is not a record store (no {folder}): pass --records the --out "
                                 "folder of a `diffzoo run --thresholds calibrated`")
    found: dict[Thresholds, list[str]] = {}
    # the records the store's tables hold: another file is `diffzoo leaderboard validate`'s to name
    for record in read_all(sorted(folder.glob("*.json")) if folder.is_dir() else []).records:
        body, values = record.body, record.body.policy.values
        if body.detector.checkpoint_sha256 == sha256 and body.policy.mode == "calibrated" and values is not None:
            found.setdefault(values, []).append(record.id)
    if not found:
        # the run evaluates these very weights only when given them: a --detector alone would train, or take
        # the cached checkpoint of its default seed and options, another model than another seed's
        given = f" --checkpoint {checkpoint}" if checkpoint is not None else ""
        where = "" if given else " (and --checkpoint PATH for the weights to evaluate)"
        raise CalibrationMissing(
            f"no calibrated thresholds for {detector} (weights sha256 {sha256[:12]}) in the records of {store}: "
            f"evaluate this model with `diffzoo run --detector {detector}{given} --thresholds calibrated --out "
            f"{store}`{where}, or pass --records the --out folder of such a run")
    if len(found) > 1:
        choices = "; ".join(f"{t.source}: pixel {threshold_text(t.pixel)}, area {threshold_text(t.area)}, score "
                            f"{threshold_text(t.score)} (record "
                            f"{ids[0][:12]})" for t, ids in found.items())
        raise ConfigError(f"the records of {store} hold {len(found)} different calibrated thresholds for {detector} "
                          f"(weights sha256 {sha256[:12]}): {choices}; pass --records the --out folder of one run")
    return next(iter(found))
