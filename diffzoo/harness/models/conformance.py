"""``diffzoo plugins check``: hold a detector to its protocol on a tiny fixture.

For plugin authors: it builds the detector for each task its card lists,
and reports every violation instead of stopping at the first one:
registration (the entry imports, the card is a DetectorCard with known
tasks, the factory takes the documented arguments and returns a complete
Detector), predict (the checks every run applies, core/outputs.py, on odd
sizes and two batch sizes), determinism (the same input twice; the same
seed twice, trained where the card is trainable), fit (returns a JSON-able
log, reports progress) and the save/load round trip (``save(path,
extra=...)`` writes a checkpoint, ``load`` returns metadata with the
weights' sha256 and ``extra``, and the loaded model predicts the same).

The fixture is a small in-memory dataset (eight 48 x 48 images, two
editors) made here, so the check needs no download and takes seconds for a
small model.
"""

from __future__ import annotations

import functools
import inspect
import json
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from diffzoo.harness.core.cards import DetectorCard
from diffzoo.harness.core.errors import ConfigError, PluginError, UnknownNameError
from diffzoo.harness.core.outputs import check_output
from diffzoo.harness.core.plugins import get_plugin_system, get_registry
from diffzoo.harness.core.protocols import (
    KEYWORD_FORM,
    Detector,
    DetectorBuild,
    build_detector,
    moved_detector,
    takes_keyword_form,
)
from diffzoo.harness.core.types import BINARY, LabelSpace, Sample, SampleMeta, check_task
from diffzoo.harness.data.base import SplitDataset

FIXTURE_EDITORS = ("editor_a", "editor_b")
FIXTURE_SIZES = ((37, 53), (48, 48))  # odd sizes: a detector must predict at any H x W
CHECK_ITERATIONS = 2
TOLERANCE = 1e-5  # two outputs that should be one may differ by this much (float rounding)
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class Finding:
    """One check of one detector: passed, or the violation."""

    detector: str
    task: str
    check: str
    ok: bool
    message: str = ""


class FixtureDataset(SplitDataset):
    """Eight smooth 48 x 48 images; six carry a noise square by one of two editors."""

    def __init__(self, n: int = 8, size: int = 48) -> None:
        super().__init__("plugin-check-fixture", LabelSpace.from_editors(FIXTURE_EDITORS))
        ids = [f"fixture{i:02d}" for i in range(n)]
        self._splits = {"train": ids[: n - 2], "val": ids[n - 2 :]}
        self._size = size

    def _load(self, sample_id: str) -> Sample:
        i = int(sample_id.removeprefix("fixture"))
        s = self._size
        yy, xx = np.mgrid[0:s, 0:s]
        image = np.stack([(xx * 4 + i * 9) % 256, (yy * 4 + i * 5) % 256, np.full_like(xx, 100)], -1).astype(np.uint8)
        label = np.zeros((s, s), np.uint8)
        if i % 4:
            rng = np.random.default_rng(i)
            k = s // 3
            y0, x0 = (i * 7) % (s - k), (i * 11) % (s - k)
            image[y0:y0 + k, x0:x0 + k] = rng.integers(0, 256, (k, k, 3), dtype=np.uint8)
            label[y0:y0 + k, x0:x0 + k] = 1 + i % 2
        return Sample(image, label, SampleMeta(sample_id))

    def _content_fingerprint(self) -> str:
        return "plugin-check-fixture-1"


def _outputs(out: Any) -> list[torch.Tensor]:
    """The tensors of an output, for comparing two of them."""
    return [torch.as_tensor(getattr(out, f)).detach().float().cpu()
            for f in ("mask_logits", "mask_probs", "labels", "image_score") if getattr(out, f, None) is not None]


class _Report:
    def __init__(self, detector: str, task: str):
        self.detector, self.task = detector, task
        self.findings: list[Finding] = []

    def add(self, check: str, problem: str | None) -> bool:
        self.findings.append(Finding(self.detector, self.task, check, problem is None, problem or ""))
        return problem is None

    def run(self, check: str, fn: Callable[[], str | None]) -> bool:
        """Record ``fn``'s problem (or an exception it raised) under ``check``."""
        try:
            problem = fn()
        except (Exception, SystemExit) as exc:  # a plugin's failure, whatever it is (a sys.exit() too), is reported
            problem = f"{type(exc).__name__}: {exc}"
        return self.add(check, problem)


def _build(entry: Any, task: str, label_space: LabelSpace, seed: int) -> Detector:
    torch.manual_seed(seed)
    return build_detector(entry.load(), DetectorBuild(entry.card, task, label_space, pretrained=False))


def _train(det: Detector, card: DetectorCard, data: FixtureDataset, seed: int, steps: list[int]) -> Any:
    from diffzoo.harness.core.train_config import TrainConfig
    from diffzoo.harness.models.train_data import TrainData

    config = TrainConfig.from_recipe(card.recipe_values(), iterations=CHECK_ITERATIONS, batch_size=2,
                                     crop_size=32, pretrained=False, seed=seed, num_workers=0, warmup_iters=0)
    return det.fit(TrainData(data, data.ids("train")), config, progress=lambda step, loss: steps.append(step))


def check_detector(name: str, tasks: list[str] | None = None, device: str = "cpu", seed: int = 0) -> list[Finding]:
    """Every finding for detector ``name`` (each of its card's tasks, or ``tasks``)."""
    entry = get_registry().get("detector", name)
    head = _Report(entry.name, "-")
    card = entry.card
    if not head.add("card", None if isinstance(card, DetectorCard) else
                    f"registered with card {type(card).__name__}, expected a diffzoo.DetectorCard "
                    "(register(name, target, card=DetectorCard(...)))"):
        return head.findings
    if not head.run("import", lambda: None if entry.load() is not None else "the target is None"):
        return head.findings
    if takes_keyword_form(entry.load()):
        head.findings.append(Finding(entry.name, "-", "factory form", True, f"deprecated: it takes the keyword form "
                                     f"{KEYWORD_FORM}; take one diffzoo.DetectorBuild"))
    findings = head.findings
    data = FixtureDataset()
    for task in tasks or list(card.tasks):
        report = _Report(entry.name, task)
        _check_task(report, entry, card, task, data, device, seed)
        findings += report.findings
    return findings


def _check_task(r: _Report, entry: Any, card: DetectorCard, task: str, data: FixtureDataset,
                device: str, seed: int) -> None:
    label_space = data.label_space if task == "semantic" else BINARY
    built: dict[str, Detector] = {}

    def build() -> str | None:
        try:
            built["det"] = moved_detector(_build(entry, task, label_space, seed), device)
        except PluginError as exc:  # the build's own problem, in its words
            return str(exc)
        return None

    if not r.run("build", lambda: _explain_build_error(entry, build)):
        return
    det = built["det"]
    r.add("attributes", _attribute_problems(det, card, task, label_space))
    x = {size: torch.rand(n, 3, *size, generator=torch.Generator().manual_seed(seed))
         for n, size in zip((2, 1), FIXTURE_SIZES)}

    def predict(size: tuple[int, int]) -> str | None:
        images = x[size]
        ids = [f"check-{size[0]}x{size[1]}-{i}" for i in range(images.shape[0])]
        check_output(det, det.predict(images.to(device, copy=True)), ids, size)
        return None

    for s in FIXTURE_SIZES:
        r.run(f"predict {x[s].shape[0]} x 3 x {s[0]} x {s[1]}", functools.partial(predict, s))
    first = x[FIXTURE_SIZES[0]]
    # each call its own copy, as each run batch is: a predict that normalises its input in place is no fault
    r.run("deterministic predict", lambda: _same(det.predict(first.to(device, copy=True)),
                                                 det.predict(first.to(device, copy=True)),
                                                 "predicting the same batch twice"))
    trainable = card.trainable
    if trainable:
        steps: list[int] = []

        def fit() -> str | None:
            result = _train(det, card, data, seed, steps)
            if not isinstance(result, dict):
                return f"fit returned {type(result).__name__}; it must return a dict (the training log)"
            try:
                json.dumps(result, allow_nan=True, default=None)
            except (TypeError, ValueError) as exc:
                return f"fit's log is not JSON-able ({exc})"
            if not steps:
                return "fit never called progress(step, loss)"
            return None

        r.run("fit", fit)
    r.run("save/load round trip", lambda: _round_trip(entry, det, task, label_space, seed, device, x[FIXTURE_SIZES[0]]))

    def same_seed() -> str | None:
        a, b = (moved_detector(_build(entry, task, label_space, seed), device) for _ in range(2))
        if trainable:
            _train(a, card, data, seed, [])
            _train(b, card, data, seed, [])
        images = x[FIXTURE_SIZES[0]]
        return _same(a.predict(images.to(device, copy=True)), b.predict(images.to(device, copy=True)),
                     f"two models {'trained' if trainable else 'built'} with seed {seed}")

    r.run("deterministic under the same seed", same_seed)


def _explain_build_error(entry: Any, build: Callable[[], str | None]) -> str | None:
    try:
        return build()
    except TypeError as exc:
        target = entry.load()
        abstract = sorted(getattr(target, "__abstractmethods__", ()) or ())
        if abstract:
            return f"{getattr(target, '__name__', target)} does not implement {', '.join(abstract)} (TypeError: {exc})"
        params = inspect.signature(target).parameters.values() if callable(target) else ()
        if not takes_keyword_form(target) and not any(p.kind is not p.KEYWORD_ONLY for p in params):
            return f"the factory must take one diffzoo.DetectorBuild, factory(build) (TypeError: {exc})"
        return f"TypeError: {exc}"


def _attribute_problems(det: Detector, card: DetectorCard, task: str, label_space: LabelSpace) -> str | None:
    problems = []
    if getattr(det, "card", None) is not card and getattr(getattr(det, "card", None), "name", None) != card.name:
        problems.append(f"card is {getattr(det, 'card', None)!r:.60}, not the registered card {card.name}")
    if getattr(det, "task", None) != task:
        problems.append(f"task is {getattr(det, 'task', None)!r}, built for {task!r}")
    if getattr(det, "label_space", None) != label_space:
        problems.append(f"label_space is {getattr(det, 'label_space', None)!r:.80}, "
                        f"built with {list(label_space.names)}")
    return "; ".join(problems) or None


def _same(a: Any, b: Any, what: str) -> str | None:
    """None if outputs ``a`` and ``b`` have the same tensors, equal within :data:`TOLERANCE`; else what differs."""
    ta, tb = _outputs(a), _outputs(b)
    if len(ta) != len(tb) or any(x.shape != y.shape for x, y in zip(ta, tb)):
        return f"{what} gave outputs of different kinds or shapes"
    if any(bool((x.isnan() != y.isnan()).any()) for x, y in zip(ta, tb)):  # NaN compares as no difference
        return f"{what} gave different outputs (NaN in one where the other has a number)"
    diff = max((float((x - y).nan_to_num(0.0).abs().max()) for x, y in zip(ta, tb) if x.numel()), default=0.0)
    if diff > TOLERANCE:
        return f"{what} gave different outputs (largest difference {diff:.3g} > {TOLERANCE})"
    return None


def _round_trip(entry: Any, det: Detector, task: str, label_space: LabelSpace, seed: int, device: str,
                images: torch.Tensor) -> str | None:
    with tempfile.TemporaryDirectory(prefix="diffzoo-check-") as tmp:
        folder = Path(tmp) / "checkpoint"
        try:
            written = det.save(folder, extra={"plugin_check": "extra kept"})
        except TypeError as exc:
            return (f"save(path, extra=...) failed ({exc}); the runner calls save(path, extra=dict): "
                    "accept and store extra (docs/plugins.md)")
        if written is None or not Path(written).exists():
            return f"save returned {written!r}; it must return the weights file it wrote"
        fresh = _build(entry, task, label_space, seed + 1).to(device)
        meta = fresh.load(folder)
        if not isinstance(meta, dict):
            return f"load returned {type(meta).__name__}; it must return the checkpoint metadata (a dict)"
        problems = []
        if not isinstance(meta.get("sha256"), str) or not _SHA256.match(meta["sha256"]):
            problems.append(f"load's metadata has sha256 {meta.get('sha256')!r}, not the weights' 64-hex sha256")
        if meta.get("plugin_check") != "extra kept":
            problems.append("save dropped extra: load's metadata lacks the extra keys passed to save")
        before, after = det.predict(images.to(device, copy=True)), fresh.predict(images.to(device, copy=True))
        same = _same(before, after, "the loaded model and the saved one")
        if same:
            problems.append(same)
        return "; ".join(problems) or None


def check_plugin(name: str, tasks: list[str] | None = None, device: str = "cpu", seed: int = 0) -> list[Finding]:
    """A detector name, or a plugin name: then its hooks and every detector it registers.  A task
    that is none, or one a named detector's card does not list, is the user's mistake (ConfigError),
    never a finding against the detector."""
    registry = get_registry()
    for task in tasks or ():
        check_task(task)
    if registry.has("detector", name):
        card = registry.get("detector", name).card
        if isinstance(card, DetectorCard) and (other := [t for t in tasks or () if t not in card.tasks]):
            raise ConfigError(f"--task {other[0]}: {card.name} serves {', '.join(card.tasks)}, not {other[0]}")
        return check_detector(name, tasks, device, seed)
    system = get_plugin_system()
    plugins = {info.name: info for info in system.info()}
    failures = [f for f in system.failures if f.plugin == name]
    if name not in plugins and not failures:
        raise UnknownNameError("detector", name, [e.name for e in registry.list("detector")] + list(plugins))
    report = _Report(name, "-")
    for failure in failures:
        report.add(f"load ({failure.stage})", str(failure))
    if name in plugins:
        hooks = [h for h in plugins[name].hooks if h.startswith("register_")]
        report.add("hooks", None if hooks else
                   "the plugin implements no register_* hook (diffzoo/harness/core/hookspecs.py)")
    findings = report.findings
    for entry in registry.list("detector"):
        if entry.source == name:  # with --task, each detector on those of its tasks
            served = None if tasks is None else [t for t in tasks if t in getattr(entry.card, "tasks", ())]
            if served != []:
                findings += check_detector(entry.name, served, device, seed)
    if name in plugins and not any(e.source == name for e in registry.list("detector")):
        findings.append(Finding(name, "-", "detectors", True, "registers no detector (nothing more to check)"))
    return findings


__all__ = ["Finding", "FixtureDataset", "check_detector", "check_plugin"]
