"""The runner: resolve -> plan -> train or load -> evaluate -> record.

It returns one immutable :class:`ResultRecord` per (detector, suite, case);
the caller decides where records go (the CLI writes them to the output
folder, atomically).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from .checkpoints import cache_dir, resolve_checkpoint
from .errors import ConfigError, ModelError
from .evaluate import EvalResult, evaluate
from .factories import create_detector, open_dataset
from .fsutil import atomic_write_text
from .metrics import METRICS_VERSION, EvalState
from .planning import Plan, TrainingJob, make_plan, training_ids
from .plugins import get_registry
from .progress import NullProgress, Progress
from .protocols import Detector
from .records import ResultRecord, environment
from .segmenter import TrainData
from .suites import Case, Suite
from .trainer import TrainConfig, resolve_device
from .types import BINARY

log = logging.getLogger(__name__)


@dataclass
class RunRequest:
    detector: str
    suites: str = "all"
    dataset: str = "mini"
    checkpoints: list[Path] = field(default_factory=list)
    train: bool = True
    seed: int = 0
    device: str = "auto"
    strict: bool = False
    pretrained: bool | None = None
    train_overrides: dict[str, Any] = field(default_factory=dict)
    dataset_options: dict[str, Any] = field(default_factory=dict)
    bootstrap: int = 1000
    out: Path | None = None


@dataclass
class RunOutput:
    records: list[ResultRecord]
    plan: Plan
    notes: list[str]


def _train_config(card, dataset, request: RunRequest) -> tuple[TrainConfig, dict[str, Any]]:
    """Card recipe <- dataset's recommended overrides <- the user's overrides."""
    overrides: dict[str, Any] = dict(getattr(dataset, "training_overrides", {}) or {})
    overrides.update({k: v for k, v in request.train_overrides.items() if v is not None})
    if request.pretrained is not None:
        overrides["pretrained"] = request.pretrained
    overrides["seed"] = request.seed
    config = TrainConfig.from_recipe(card.recipe_values(), **overrides)
    if config.pretrained and not card.weights:
        config = config.with_overrides(pretrained=False)
    return config, overrides


class Runner:
    def __init__(self, request: RunRequest, progress: Progress | None = None):
        self.request = request
        self.progress = progress or NullProgress()
        self.device = resolve_device(request.device)
        self.notes: list[str] = []

    # -- resolve and plan ------------------------------------------------
    def plan(self) -> Plan:
        registry = get_registry()
        entry = registry.get("detector", self.request.detector)
        self.entry = entry
        self.suites: list[Suite] = [e.load() for e in registry.expand("suite", self.request.suites)]
        self.dataset = open_dataset(self.request.dataset, self.progress, **self.request.dataset_options)
        config, self.overrides = _train_config(entry.card, self.dataset, self.request)
        fingerprint = self.dataset.fingerprint()
        return make_plan(entry.card, self.suites, self.dataset, config, fingerprint)

    # -- models ------------------------------------------------------------
    def _new_detector(self, job: TrainingJob) -> Detector:
        torch.manual_seed(job.config.seed)
        label_space = self.dataset.label_space if job.task == "semantic" else BINARY
        det = create_detector(self.entry.name, job.task, label_space, pretrained=job.config.pretrained)
        return det.to(self.device)

    def _given_checkpoint(self, job: TrainingJob) -> Path | None:
        for path in self.request.checkpoints:
            _, meta_path = resolve_checkpoint(path)
            meta = json.loads(meta_path.read_text()) if meta_path else {}
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
        if (cached / "model.safetensors").exists():
            meta = det.load(cached)
            log.info("using cached checkpoint %s", cached)
            return det, {"source": "cache", "path": str(cached), "sha256": meta["sha256"],
                         "training": meta.get("training")}
        if not self.request.train:
            raise ModelError(
                f"no {job.task} checkpoint for {self.entry.name} on {self.dataset.name} "
                f"(cache key {job.key}); pass --checkpoint PATH or drop --no-train"
            )
        ids = training_ids(self.dataset, job.spec)
        desc = f"training {self.entry.name} [{job.task}] on {self.dataset.name}/{job.spec.split}"
        with self.progress.task(desc, total=job.config.iterations) as task:
            log_ = det.fit(
                TrainData(self.dataset, ids), job.config,
                progress=lambda step, loss: task.advance(1, loss=loss),
            )
        log_["num_train_images"] = len(ids)
        det.save(cached, extra={"train_config": job.config.to_dict(), "training": log_,
                                "dataset_fingerprint": self.plan_.fingerprint, "cache_key": job.key})
        meta = det.load(cached)
        return det, {"source": "trained", "path": str(cached), "sha256": meta["sha256"], "training": log_}

    # -- run -----------------------------------------------------------------
    def run(self) -> RunOutput:
        self.plan_ = self.plan()
        records: list[ResultRecord] = []
        for job in self.plan_.jobs:
            det, ckpt = self.model_for(job)
            # cases on the same (split, distortion) share one pass over the data
            groups: dict[tuple[str, str, tuple], list[tuple[Suite, Case]]] = {}
            for suite, case in job.cases:
                groups.setdefault((case.split, case.distortion, case.distortion_params), []).append((suite, case))
            for members in groups.values():
                result = self._evaluate(det, members[0][1], {_metric_task(c) for _, c in members})
                records.extend(self._record(s, c, job, det, ckpt, result) for s, c in members)
        return RunOutput(records, self.plan_, self.notes)

    def _evaluate(self, det: Detector, case: Case, tasks: set[str]) -> EvalResult:
        if case.split not in self.dataset.splits():
            raise ConfigError(
                f"case {case.name!r} evaluates split {case.split!r}, which dataset "
                f"{self.dataset.name} lacks (it has {', '.join(self.dataset.splits())})"
            )
        distortion = get_registry().get("distortion", case.distortion).load()
        desc = f"evaluating {self.entry.name} [{det.task}] on {self.dataset.name}/{case.split}"
        return evaluate(
            det, self.dataset, case.split, distortion, dict(case.distortion_params),
            tasks=tasks, strict=self.request.strict, baselines=det.task == "binary",
            progress=self.progress, description=desc,
        )

    def _record(self, suite: Suite, case: Case, job: TrainingJob, det: Detector,
                ckpt: dict[str, Any], result: EvalResult) -> ResultRecord:
        state: EvalState = result.states[_metric_task(case)]
        values = state.compute()
        wanted = list(case.metrics)
        if case.task == "semantic":
            wanted += [f"IoU.{n}" for n in self.dataset.label_space.names]
        metrics = {m: values.get(m) for m in wanted}
        ci = state.bootstrap(n=self.request.bootstrap, seed=self.request.seed,
                             metrics=list(case.metrics)) if self.request.bootstrap else {}
        state_file = self._write_state(state)
        baselines = {}
        if case.task == "binary":
            baselines = {name: {m: s.compute().get(m) for m in ("mIoU", "aAcc", "bF1", "F1")}
                         for name, s in result.baselines.items()}
        return ResultRecord.create(
            detector={"name": self.entry.name, "card": det.card.to_dict(), "task": det.task,
                      "checkpoint_sha256": ckpt["sha256"], "checkpoint_source": ckpt["source"],
                      "pretrained": job.config.pretrained, "plugin": self.entry.source},
            suite={"name": suite.name, "version": suite.version,
                   "definition_hash": suite.definition_hash()},
            case=case.to_dict(),
            dataset={"name": self.dataset.name, "fingerprint": self.plan_.fingerprint,
                     "description": self.dataset.describe()},
            label_space=list(state.label_space.names),
            metrics=metrics,
            ci95={k: list(v) for k, v in ci.items()},
            metrics_version=METRICS_VERSION,
            threshold_policy={
                "pixel": f"fixed: edited if probability > {det.card.default_threshold} (detector card)"
                if det.task == "binary" else "fixed: argmax over classes; edited = argmax != background",
                "image": "fixed: edited if predicted edited area > 1% of the image (DiffSeg30k rule)",
                "image_score_source": state.image_score_source,
                "calibrated_on": None,
            },
            baselines=baselines,
            confusion=state.confusion_matrix().tolist() if case.task == "semantic" else None,
            slices={key: state.slices(key) for key in ("base", "turns", "editor", "edit_type")},
            counts={"evaluated": result.evaluated, "skipped_corrupt": len(result.skipped),
                    "skipped": result.skipped[:50]},
            seed=self.request.seed,
            config={"train": job.config.to_dict(), "train_subset": job.spec.to_dict(),
                    "overrides": self.overrides, "cache_key": job.key,
                    "device": str(self.device), "strict": self.request.strict},
            training=ckpt.get("training"),
            environment=environment(str(self.device)),
            state_file=state_file,
        )

    def _write_state(self, state: EvalState) -> str | None:
        if self.request.out is None:
            return None
        from .cards import stable_hash

        body = state.state_dict()
        name = f"states/{stable_hash(body, length=16)}.json"
        path = Path(self.request.out) / name
        if not path.exists():
            atomic_write_text(path, json.dumps(body))
        return name


def _metric_task(case: Case) -> str:
    """The metric state a case reads: image-level cases use the binary one."""
    return "semantic" if case.task == "semantic" else "binary"


def run(request: RunRequest, progress: Progress | None = None) -> RunOutput:
    return Runner(request, progress).run()
