"""The runner: resolve -> plan -> train or load -> evaluate -> record.

It returns one immutable :class:`ResultRecord` per (detector, suite, case);
the caller decides where records go (the CLI writes them to the output
folder, atomically).  :meth:`Runner.train` is the same path for one model
without suites (``diffzoo train``).

Under torchrun every rank runs the runner: training goes through DDP, each
rank evaluates its shard of a split, and rank 0 alone merges the metric
states, writes checkpoints and returns records (other ranks return none).
The checkpoint cache must be on a filesystem every rank sees.
"""

from __future__ import annotations

import difflib
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from . import distributed
from .checkpoints import META_FILE, WEIGHTS_FILE, cache_dir, checkpoint_meta, load_checkpoint, save_checkpoint
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
from .suites import Case, Suite, TrainSpec
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
    """Card recipe <- dataset's recommended overrides <- the user's overrides.

    A dataset may give ``lr_scale`` instead of an ``lr``: the card's recipe lr
    times that factor (``mini`` trains from scratch on a tiny budget, so it
    raises every recipe's lr tenfold).
    """
    overrides: dict[str, Any] = dict(getattr(dataset, "training_overrides", {}) or {})
    overrides.update({k: v for k, v in request.train_overrides.items() if v is not None})
    if request.pretrained is not None:
        overrides["pretrained"] = request.pretrained
    overrides["seed"] = request.seed
    recipe = card.recipe_values()
    scale = overrides.pop("lr_scale", None)
    if scale is not None and "lr" not in overrides:
        # a dataset's budget scales each card's own lr (AdamW and SGD recipes differ 100x)
        overrides["lr"] = float(recipe.get("lr", TrainConfig.lr)) * float(scale)
    config = TrainConfig.from_recipe(recipe, **overrides)
    if scale is not None:
        overrides["lr_scale"] = scale
    if config.pretrained and not card.weights:
        config = config.with_overrides(pretrained=False)
    return config, overrides


@dataclass
class TrainOutput:
    """What :meth:`Runner.train` made: the model, its checkpoint, the job."""

    detector: Detector
    checkpoint: dict[str, Any]  # source, path, sha256, training log
    job: TrainingJob
    copy: Path | None = None


class Runner:
    def __init__(self, request: RunRequest, progress: Progress | None = None):
        self.request = request
        self.device = distributed.init(resolve_device(request.device))  # joins torchrun's group
        self.progress = (progress or NullProgress()) if distributed.is_main() else NullProgress()
        self.notes: list[str] = []
        self.plan_: Plan | None = None

    # -- resolve and plan ------------------------------------------------
    def _resolve(self) -> TrainConfig:
        """Detector entry, dataset and training config (shared by run and train)."""
        self.entry = get_registry().get("detector", self.request.detector)
        with distributed.main_first():  # rank 0 builds or downloads into the shared cache
            self.dataset = open_dataset(self.request.dataset, self.progress, **self.request.dataset_options)
        config, self.overrides = _train_config(self.entry.card, self.dataset, self.request)
        return config

    def _make_plan(self, suites: list[Suite], config: TrainConfig) -> Plan:
        self.plan_ = make_plan(self.entry.card, suites, self.dataset, config, self.dataset.fingerprint())
        return self.plan_

    def plan(self) -> Plan:
        registry = get_registry()
        registry.get("detector", self.request.detector)  # unknown names fail before any work
        self.suites: list[Suite] = [e.load() for e in registry.expand("suite", self.request.suites)]
        return self._make_plan(self.suites, self._resolve())

    def plan_training(self, task: str, exclude_editors: tuple[str, ...] = ()) -> Plan:
        """The plan of one model trained on the train split (``diffzoo train``).

        It goes through :func:`make_plan` like a suite case, so the model
        gets the cache key ``diffzoo run`` computes for the same training.
        A second call for the same training returns the same plan.
        """
        spec = TrainSpec(task, "train", tuple(exclude_editors))
        if self.plan_ is not None and [job.spec for job in self.plan_.jobs] == [spec]:
            return self.plan_
        config = self._resolve()
        card = self.entry.card
        if task not in card.tasks:
            raise ConfigError(f"{card.name} cannot be trained for task {task!r}; it supports {', '.join(card.tasks)}")
        editors = self.dataset.label_space.names[1:]
        for name in exclude_editors:
            if name not in editors:
                close = difflib.get_close_matches(name, editors, n=1)
                hint = f" Did you mean {close[0]!r}?" if close else ""
                raise ConfigError(
                    f"cannot exclude editor {name!r}: dataset {self.dataset.name} has no such editor.{hint} "
                    f"Its editors: {', '.join(editors)}"
                )
        case = Case(name=f"train-{task}", task=task if task in ("binary", "semantic") else "image", train=spec)
        return self._make_plan([Suite("train", "0", "one model, no evaluation", (case,))], config)

    # -- models ------------------------------------------------------------
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
        # rank 0 decides, so that every rank loads or every rank trains
        if distributed.broadcast((cached / WEIGHTS_FILE).exists()):
            meta = det.load(cached)
            log.info("using cached checkpoint %s", cached)
            return det, {"source": "cache", "path": str(cached), "sha256": meta["sha256"],
                         "training": meta.get("training")}
        if not self.request.train:
            raise ModelError(
                f"no {job.task} checkpoint for {self.entry.name} on {self.dataset.name} "
                f"(cache key {job.key}); pass --checkpoint PATH or drop --no-train"
            )
        return det, self._train(job, det, cached)

    def _train(self, job: TrainingJob, det: Detector, cached: Path) -> dict[str, Any]:
        """Train ``det`` (through DDP under torchrun); rank 0 writes the
        checkpoint to the cache, the other ranks wait, then all load it."""
        ids = training_ids(self.dataset, job.spec)
        desc = f"training {self.entry.name} [{job.task}] on {self.dataset.name}/{job.spec.split}"
        with self.progress.task(desc, total=job.config.iterations) as task:
            log_ = det.fit(
                TrainData(self.dataset, ids), job.config,
                progress=lambda step, loss: task.advance(1, loss=loss),
            )
        log_["num_train_images"] = len(ids)
        if distributed.is_main():
            det.save(cached, extra={"train_config": job.config.to_dict(), "training": log_,
                                    "train_subset": job.spec.to_dict(),
                                    "dataset_fingerprint": self.plan_.fingerprint, "cache_key": job.key})
        distributed.barrier()
        meta = det.load(cached)
        return {"source": "trained", "path": str(cached), "sha256": meta["sha256"], "training": log_}

    # -- run -----------------------------------------------------------------
    def run(self) -> RunOutput:
        """Plan (unless :meth:`plan` ran), train or load, evaluate, record.

        Under torchrun only rank 0 gets records; the other ranks return none.
        """
        if self.plan_ is None:
            self.plan()
        records: list[ResultRecord] = []
        for job in self.plan_.jobs:
            det, ckpt = self.model_for(job)
            # cases on the same (split, distortion) share one pass over the data
            groups: dict[tuple[str, str, tuple], list[tuple[Suite, Case]]] = {}
            for suite, case in job.cases:
                groups.setdefault((case.split, case.distortion, case.distortion_params), []).append((suite, case))
            for members in groups.values():
                result = self._evaluate(det, members[0][1], {_metric_task(c) for _, c in members})
                if result is None:  # ranks > 0
                    continue
                # cases reading the same state (binary and image) share its metrics, slices and file
                summaries = {task: self._summarize(state) for task, state in result.states.items()}
                records.extend(self._record(s, c, job, det, ckpt, result, summaries[_metric_task(c)])
                               for s, c in members)
        return RunOutput(records, self.plan_, self.notes)

    def train(self, task: str = "binary", exclude_editors: tuple[str, ...] = ()) -> TrainOutput:
        """Train (or find in the cache) one model on the train split, as
        ``run`` would for a case with this training; with ``request.out``,
        rank 0 also writes a copy of the checkpoint there."""
        job = self.plan_training(task, exclude_editors).jobs[0]  # planned once if the caller did
        if self.request.out is not None:
            _check_copy_target(Path(self.request.out))  # before training, not after
        det, ckpt = self.model_for(job)
        copy = None
        if self.request.out is not None and distributed.is_main():
            copy = copy_checkpoint(Path(ckpt["path"]), Path(self.request.out))
        return TrainOutput(det, ckpt, job, copy)

    def _evaluate(self, det: Detector, case: Case, tasks: set[str]) -> EvalResult | None:
        """Metric states of ``det`` on the case's (split, distortion); under
        torchrun each rank scores its shard and rank 0 gets the merged result."""
        if case.split not in self.dataset.splits():
            raise ConfigError(
                f"case {case.name!r} evaluates split {case.split!r}, which dataset "
                f"{self.dataset.name} lacks (it has {', '.join(self.dataset.splits())})"
            )
        distortion = get_registry().get("distortion", case.distortion).load()
        desc = f"evaluating {self.entry.name} [{det.task}] on {self.dataset.name}/{case.split}"
        if distributed.world_size() > 1:
            desc += f" (rank 0's shard of {distributed.world_size()})"
        result = evaluate(
            det, distributed.sharded(self.dataset), case.split, distortion, dict(case.distortion_params),
            tasks=tasks, strict=self.request.strict, baselines=det.task == "binary",
            progress=self.progress, description=desc,
        )
        return distributed.gather_eval_result(result, self.dataset.ids(case.split))

    def _summarize(self, state: EvalState) -> dict[str, Any]:
        """What every record of one metric state carries, computed once."""
        return {"values": state.compute(), "state_file": self._write_state(state),
                "slices": {key: state.slices(key) for key in ("base", "turns", "editor", "edit_type")}}

    def _threshold_policy(self, det: Detector, state: EvalState) -> dict[str, Any]:
        pixel = {
            "binary": f"fixed: edited if probability > {det.card.default_threshold} (detector card)",
            "semantic": "fixed: argmax over classes; edited = argmax != background",
            "classification": "none: image-level classifier (no pixel output)",
        }[det.task]
        if state.image_score_source == "detector":
            image = f"fixed: edited if image probability > {state.config.score_threshold:g} (METRICS.md)"
        else:
            image = (f"fixed: edited if predicted edited area > {state.config.area_threshold:.0%} of the "
                     "image (DiffSeg30k rule)")
        return {"pixel": pixel, "image": image, "image_score_source": state.image_score_source,
                "calibrated_on": None}

    def _record(self, suite: Suite, case: Case, job: TrainingJob, det: Detector,
                ckpt: dict[str, Any], result: EvalResult, summary: dict[str, Any]) -> ResultRecord:
        state: EvalState = result.states[_metric_task(case)]
        values = summary["values"]
        wanted = list(case.metrics)
        if case.task == "semantic":
            wanted += [f"IoU.{n}" for n in self.dataset.label_space.names]
        metrics = {m: values.get(m) for m in wanted}
        ci = state.bootstrap(n=self.request.bootstrap, seed=self.request.seed,
                             metrics=list(case.metrics)) if self.request.bootstrap else {}
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
            threshold_policy=self._threshold_policy(det, state),
            baselines=baselines,
            confusion=state.confusion_matrix().tolist() if case.task == "semantic" else None,
            slices=summary["slices"],
            counts={"evaluated": result.evaluated, "skipped_corrupt": len(result.skipped),
                    "skipped": result.skipped[:50]},
            seed=self.request.seed,
            config={"train": job.config.to_dict(), "train_subset": job.spec.to_dict(),
                    "overrides": self.overrides, "cache_key": job.key,
                    "device": str(self.device), "strict": self.request.strict},
            training=ckpt.get("training"),
            environment=environment(str(self.device)),
            state_file=summary["state_file"],
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


def copy_checkpoint(src: Path, dst: Path) -> Path:
    """Write checkpoint ``src`` (verified on read) to folder ``dst``; returns ``dst``.

    ``dst`` must be new, empty, or a checkpoint folder (it is replaced).
    """
    _check_copy_target(dst)
    state, meta = load_checkpoint(src)
    meta.pop("sha256", None)  # recomputed from the written file
    save_checkpoint(dst, state, meta)
    return dst


def _check_copy_target(dst: Path) -> None:
    if dst.exists() and (not dst.is_dir() or any(p.name not in (WEIGHTS_FILE, META_FILE) for p in dst.iterdir())):
        raise ConfigError(f"{dst} exists and is not a checkpoint folder; give a new or empty folder")


def _metric_task(case: Case) -> str:
    """The metric state a case reads: image-level cases use the binary one."""
    return "semantic" if case.task == "semantic" else "binary"


def run(request: RunRequest, progress: Progress | None = None) -> RunOutput:
    return Runner(request, progress).run()
