"""The runner: resolve -> plan -> for each job: train or load, decide thresholds, run its
passes, record its cases.

It returns one immutable :class:`ResultRecord` per planned case; the caller decides where
records go (``diffzoo.evaluate`` stores them).  :meth:`Runner.train` is the same path for
one model without cases (``diffzoo train``).

Under torchrun every rank runs the runner: training goes through DDP, each rank evaluates its
shard of a pass and every rank gets the merged result, so every rank makes the same records;
the caller lets rank 0 alone write.  The checkpoint cache must be on a filesystem every rank
sees.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from diffzoo.harness.core import distributed
from diffzoo.harness.core.cards import Release
from diffzoo.harness.core.device import resolve_device
from diffzoo.harness.core.errors import ConfigError, DiffzooError, did_you_mean
from diffzoo.harness.core.fsutil import CACHE_ENV, cache_root, check_usable_dir
from diffzoo.harness.core.parallel import resolve_workers
from diffzoo.harness.core.plugins import get_registry
from diffzoo.harness.core.progress import NullProgress, Progress
from diffzoo.harness.core.protocols import Dataset, Detector
from diffzoo.harness.core.runlog import warn_once
from diffzoo.harness.data.splits import canonical_split
from diffzoo.harness.models.checkpoints import WEIGHTS_FILE, checkpoint_meta, pickle_suffix
from diffzoo.harness.models.detector import other_detector
from diffzoo.harness.models.releases import converted_release, release_name, releases_holding
from diffzoo.harness.records.document import ResultRecord
from diffzoo.harness.records.model import TrainOverlap
from diffzoo.harness.run.evaluate import Evaluator
from diffzoo.harness.run.factories import open_dataset, open_dataset_with
from diffzoo.harness.run.loading import image_digests, usable_workers
from diffzoo.harness.run.model_source import CheckpointInfo, ModelSource, check_checkpoints
from diffzoo.harness.run.plan import (
    CaseKey,
    EvalDataset,
    Job,
    Plan,
    TrainingData,
    authentic_copies,
    make_plan,
    release_overlaps,
    shared_images,
    train_config,
    train_overlaps,
    training_ids,
    training_plan,
)
from diffzoo.harness.run.record import RecordContext, Recorder, StateWriter
from diffzoo.harness.run.request import ALLOW_TRAIN_OVERLAP, RunRequest, catalog_root, eval_dataset_spec
from diffzoo.harness.run.thresholds import check_policy, decide
from diffzoo.harness.suites import Suite, TrainSpec, is_cross, unseen_generators_suite

log = logging.getLogger(__name__)


@dataclass
class RunOutput:
    records: list[ResultRecord]
    plan: Plan
    notes: list[str]
    skipped: dict[str, dict[str, str]] = field(default_factory=dict)
    """Samples skipped in any pass of the run: id -> {"kind", "reason"} (each sample once,
    however many passes or records it missed)."""
    checkpoints: list[CheckpointInfo] = field(default_factory=list)


@dataclass
class TrainOutput:
    """What :meth:`Runner.train` made: the model, its checkpoint, the job (and the copy
    ``diffzoo.train`` wrote of the checkpoint)."""

    detector: Detector
    checkpoint: CheckpointInfo
    job: Job
    copy: Path | None = None


def request_release(request: RunRequest) -> Release | None:
    """The release ``--weights released:NAME`` names, of the detector's card, or the one a
    ``--checkpoint`` diffzoo converted from a release is; a pickled ``--checkpoint`` (or a folder
    holding one of the card's release files) of a card with releases is asked to say which one it is."""
    given = [Path(p) for p in request.checkpoint]
    card = request.detector_entry().card
    converted = converted_release(given[0]) if len(given) == 1 else None
    if converted is not None and (error := other_detector(given[0], checkpoint_meta(given[0])[1], card.name)):
        raise error  # another card's release: never looked up among this card's releases
    # a release diffzoo converted is still that release: scored zero-shot and grouped apart, never as trained
    name = release_name(request.weights) or converted
    if name is not None:
        return card.release(name)
    # one folder is read as the folder of a release's files (find_files), never as a diffzoo checkpoint without one
    folder = given[0] if len(given) == 1 and given[0].is_dir() and not (given[0] / WEIGHTS_FILE).exists() else None
    files = [folder / f for r in card.releases for f in r.files if (folder / f).is_file()] if folder else given
    pickled = [p for p in files if pickle_suffix(p) is not None]
    names = [p.name for p in files]
    # files named as another card's release, none of this card's: that card's, never read into this one
    others = [] if any(set(names) & set(r.files) for r in card.releases) else releases_holding(names)
    if pickled and others:
        (detector, release), also = others[0], ", ".join(f"{d} released:{r}" for d, r in others[1:])
        raise ConfigError(f"--checkpoint {pickled[0]} is a file {detector}'s authors released"
                          f"{f' (also the file of {also})' if also else ''}, not {card.name}'s: `diffzoo run "
                          f"--detector {detector} --weights released:{release} --checkpoint "
                          f"{' --checkpoint '.join(map(str, given))}` scores it")
    if not pickled or not card.releases:
        return None
    # the release whose file names these are, or the card's only release
    named = [r for r in card.releases if sorted(r.files) == sorted(names)]
    found = named if len(named) == 1 else list(card.releases) if len(card.releases) == 1 else []
    if len(found) != 1:
        raise ConfigError(
            f"--checkpoint {pickled[0]}: to read a file {card.name}'s authors released, say which release it "
            f"is: --weights released:NAME (releases: {', '.join(r.name for r in card.releases)}; "
            "diffzoo list detectors --released)")
    log.warning("reading %s as %s's release %s (--weights released:%s)", ", ".join(map(str, given)), card.name,
                found[0].name, found[0].name)
    return found[0]


class Runner:
    """One detector's run of one request.

    Every name is resolved and the plan made here, before any work: the detector, the suites,
    the given checkpoints, the dataset (built or downloaded once, by rank 0 under torchrun),
    the ``--eval-dataset`` datasets and the training config.  ``write``: keeps each metric
    state as soon as it is summarised (the caller's store; the harness writes nothing itself);
    ``only``: the (suite, case) names to run, of the request's suites (None: all).
    """

    def __init__(self, request: RunRequest, progress: Progress | None = None, write: StateWriter | None = None,
                 only: Collection[tuple[str, str]] | None = None):
        self.request, self.only = request, only
        check_usable_dir(cache_root(), f"the diffzoo cache (${CACHE_ENV})")  # checkpoints, resume states
        self.device = distributed.init(resolve_device(request.device))  # joins torchrun's group
        # the default depends on the device; the request keeps what was asked for (records are reproducible)
        self.workers = usable_workers(resolve_workers(request.workers, self.device))
        self.progress = (progress or NullProgress()) if distributed.is_main() else NullProgress()
        self.entry = request.detector_entry()  # unknown names fail before any work
        self.suites: list[Suite] = self._suites() if request.suite else []
        self.release = request_release(request)
        if (self.release is not None or request.checkpoint) and not request.suite:  # a runner without suites only
            paths = [str(p) for p in request.checkpoint]  # trains: it would return the model untrained; no data opened
            given = f"weights={request.weights!r}" if request.weights else f"checkpoint={paths}"
            what, flag = ("released weights, which are never trained: score them", "--weights") \
                if self.release is not None else ("a trained one: score it", "--checkpoint")
            raise ConfigError(f"train() trains a model, and {given} names {what} with evaluate() (diffzoo run {flag})")
        if self.release is None:  # a release's --checkpoint paths are its own files, read by its rules
            check_checkpoints(request.checkpoint)
        with distributed.main_first():  # rank 0 builds or downloads into the shared cache
            self.dataset = open_dataset(request.dataset, self.progress, **request.dataset_options())
        self.catalog_notes: list[str] = []  # --eval-dataset catalog:ROOT: the datasets it leaves out
        self.eval_datasets = self._eval_datasets()
        self.config, self.overrides = train_config(self.entry.card, self.dataset, request.train_overrides(),
                                                   request.pretrained, request.seed)
        self.config = self.config.with_overrides(num_workers=self.workers)  # not in the cache key
        if self.release is not None:  # a release holds every tensor: no pretrained backbone is built (or fetched)
            self.config = self.config.with_overrides(pretrained=False)
        if self.config.recipe == "paper" and not request.dataset_options().get("extra_authentic"):
            warn_once(log, f"paper-negatives:{self.dataset.fingerprint()}", "--recipe paper: no COCO negatives "
                      "given (--dataset-option extra_authentic=DIR); training without the paper's 5k unedited images")
        if self.suites:  # before any training: an unknown policy, or a calibration split missing or evaluated
            check_policy(request.thresholds, request.calibration_split, self.dataset,
                         {c.split for s in self.suites for c in s.cases if not is_cross(c)})
        self.plan = self._plan()
        self.evaluator = Evaluator(self.plan.datasets, self.device, self.workers, request.strict, self.progress,
                                   self.entry.name)
        trains = request.train is not False  # None: --train/--no-train not given, which trains
        self.models = ModelSource(self.entry, self.dataset, request.checkpoint, trains, request.save_every,
                                  request.log_every, self.device, self.progress, self.evaluator, self.release)
        self.models.check_used(self.plan.jobs)
        self.plan.models = [self.models.describe(job) for job in self.plan.jobs]  # what must fail, fails now
        self.recorder = Recorder(request.bootstrap, request.seed, write)
        self.overlaps, self.overlap_notes = self._held_out()

    @property
    def notes(self) -> list[str]:
        """Datasets a catalog left out, cases without images (planned), cases scored on training
        images (allowed), and passes that reused the undistorted one (run)."""
        return self.catalog_notes + self.plan.notes + self.overlap_notes + self.evaluator.notes

    def _suites(self) -> list[Suite]:
        suites = [e.load() for e in get_registry().expand("suite", self.request.suite)]
        if self.request.holdout:
            if not any(s.name == "unseen-generators" for s in suites):
                raise ConfigError("held-out pairs were given, but no unseen-generators suite is selected")
            custom = unseen_generators_suite(self.request.holdout)
            suites = [custom if s.name == "unseen-generators" else s for s in suites]
        if self.only is not None and not self.only:  # never a plan of no case, unsaid
            raise ConfigError("only= names no (suite, case) pair; give one, or leave only= out for every case")
        named = {s.name: s for s in suites}
        for pair in sorted(self.only or ()):  # each names a case of these suites: none is left unplanned unsaid
            try:
                if pair[0] not in named:
                    raise ConfigError(f"this run has no suite {pair[0]!r}; its suites: {', '.join(named)}."
                                      f"{did_you_mean(pair[0], list(named))}")
                named[pair[0]].case(pair[1])
            except ConfigError as exc:
                raise ConfigError(f"only= {pair!r}: {exc}") from None
        return suites

    def _eval_datasets(self) -> list[EvalDataset]:
        """The ``--eval-dataset`` datasets, opened (by rank 0 first) with the adapter options
        ``--eval-dataset-option`` (e.g. OpenSDI's ``kinds=partial``)."""
        specs = self.request.eval_dataset
        if specs and not any(is_cross(c) for s in self.suites for c in s.cases):
            raise ConfigError("--eval-dataset was given, but no selected suite evaluates other datasets: "
                              "add --suite cross-dataset")
        out: list[EvalDataset] = []
        for spec in specs:
            if catalog_root(spec) is not None:
                out += self._catalog(spec, out)
                continue
            target, split = eval_dataset_spec(spec)
            try:
                with distributed.main_first():
                    ds = open_dataset_with(target, self.progress, self.request.eval_dataset_option,
                                           flag="--eval-dataset-option")
            except DiffzooError as exc:  # names the option that gave the dataset; its type and exit code kept
                exc.args = (f"--eval-dataset {spec}: {exc}",)
                raise
            split = None if split is None else canonical_split(split)  # DATA:validation is DATA:val, as ids() reads it
            if split is not None and split not in ds.splits():
                raise ConfigError(f"--eval-dataset {spec}: dataset {ds.name} has no split {split} (it has "
                                  f"{', '.join(ds.splits())})")
            if any(other.fingerprint() == ds.fingerprint() and s == split for other, s, _ in out):
                raise ConfigError(f"--eval-dataset {spec}: the same dataset and split is given twice")
            out.append((ds, split, spec))
        return out

    def _catalog(self, spec: str, given: list[EvalDataset]) -> list[EvalDataset]:
        """The datasets of ``--eval-dataset catalog:ROOT``, each read at its default split; the
        run's own ``--dataset`` and datasets already given (same fingerprint) are left out, said
        in a note, so no catalog entry is the training data or scored twice."""
        from diffzoo.harness.run.catalog import find_datasets

        root = str(catalog_root(spec))
        with distributed.main_first():
            catalog = find_datasets(root, options=self.request.eval_dataset_option, flag="--eval-dataset-option")
        seen = {ds.fingerprint() for ds, _, _ in given}
        said = len(self.catalog_notes)
        out: list[EvalDataset] = []
        for entry in catalog.entries:
            if entry.fingerprint == self.dataset.fingerprint():
                self.catalog_notes.append(f"--eval-dataset {spec}: {entry.path} left out: it is the run's "
                                          f"--dataset (fingerprint {entry.fingerprint}), not held out")
            elif entry.fingerprint in seen:
                self.catalog_notes.append(f"--eval-dataset {spec}: {entry.path} left out: the same data "
                                          f"(fingerprint {entry.fingerprint}) is evaluated already")
            else:
                seen.add(entry.fingerprint)
                out.append((entry.dataset, None, str(entry.path)))
        self.catalog_notes += [f"--eval-dataset {spec}: {path} not opened ({why})" for path, why in catalog.broken]
        if not out:
            raise ConfigError(f"--eval-dataset {spec}: no dataset to evaluate on under {root} ("
                              f"{len(catalog.entries)} found, none held out; `diffzoo data find {root} --verbose` "
                              "says what is there)")
        for note in self.catalog_notes[said:]:
            log.warning("%s", note)
        return out

    def _plan(self) -> Plan:
        """The models, passes and cases of the request's suites (none without suites)."""
        if not self.suites:
            return Plan(self.entry.card, self.dataset, self.dataset.fingerprint(), [],
                        datasets={self.dataset.fingerprint(): self.dataset}, detector=self.entry.name)
        request = self.request
        return make_plan(self.entry.card, self.suites, self.dataset, self.config, self.dataset.fingerprint(),
                         detector=self.entry.name, eval_datasets=self.eval_datasets, generators=request.generator,
                         calibration_split=request.calibration_split if request.thresholds == "calibrated" else None,
                         val_every=request.val_every, only=self.only, release=self.release)

    # -- held out ------------------------------------------------------------
    def _training(self, job: Job) -> TrainingData | None:
        """What ``job``'s model was trained on: the run's training subset for a model the run
        trains or finds in its cache (the cache key holds both); for a ``--checkpoint``, what its
        card says (``dataset_fingerprint``, ``train_subset``), when that is one of the run's
        datasets.  None when it is not known here: a card used as built, a checkpoint whose card
        names no training or data this run does not read; released weights, whose training is text on
        their card, not images read here, are not asked about."""
        given = self.models.given_checkpoint(job)
        if given is None:
            if not self.entry.card.trainable:
                return None
            return TrainingData(self.dataset, self.plan.fingerprint, job.spec.split,
                                frozenset(training_ids(self.dataset, job.spec)), f"{self.entry.name} [{job.task}]")
        card = checkpoint_meta(given)[1]
        subset, fingerprint = card.get("train_subset"), card.get("dataset_fingerprint")
        dataset = self.plan.datasets.get(str(fingerprint))
        if dataset is None or not isinstance(subset, dict):
            log.info("checkpoint %s: its card names no training data this run reads; its evaluation splits are "
                     "not checked against it", given)
            return None
        spec = TrainSpec(str(subset.get("task", job.task)), str(subset.get("split", "train")),
                         tuple(map(str, subset.get("exclude_editors") or ())))
        try:
            ids = training_ids(dataset, spec)
        except ConfigError:  # a split the data read here lacks: not the data it was trained on
            return None
        return TrainingData(dataset, str(fingerprint), spec.split, frozenset(ids), f"checkpoint {given}")

    def _held_out(self) -> tuple[dict[CaseKey, TrainOverlap], list[str]]:
        """The cases that would score images their model was trained on, before any work: refused
        (a ConfigError naming the first) unless ``--allow-train-overlap``, then each said in a note
        and its records marked (:class:`TrainOverlap`)."""
        memo: dict[str, dict[str, str | None]] = {}  # by dataset fingerprint, which fixes each id's content

        def digests(dataset: Dataset, ids: Sequence[str]) -> dict[str, str | None]:
            known = memo.setdefault(dataset.fingerprint(), {})
            if todo := [i for i in ids if i not in known]:
                with distributed.main_first():  # rank 0 hashes into the shared cache, the others read it
                    found = image_digests(dataset, todo, self.workers)
                known.update((i, found.get(i)) for i in todo)
            return {i: known[i] for i in ids}

        found: dict[CaseKey, TrainOverlap] = {}
        named: dict[CaseKey, str] = {}
        for job in self.plan.jobs:
            if self.release is not None:  # what its authors trained it on, by dataset name
                overlaps = release_overlaps(self.plan, job, self.release)
                model = f"{self.entry.name} [released:{self.release.name}]"
            elif (training := self._training(job)) is not None:
                calib = job.calibration
                if calib is not None and calib.dataset == training.fingerprint:
                    ids = calib.read(self.plan.datasets)
                    if shared := shared_images(self.plan, calib.dataset, ids, training, digests):
                        warn_once(log, f"calibrated:{training.fingerprint}:{calib.split}:{training.model}",
                                  "thresholds calibrated on %r, where %s was trained on %d of its %d images: its "
                                  "scores there are optimistic, so the thresholds may not carry over; calibrate on a "
                                  "held-out split (--calibration-split)", calib.split, training.model, shared, len(ids))
                if copies := authentic_copies(training, digests):  # a warning: the refusals are the evaluated's
                    warn_once(log, f"authentic-copies:{training.fingerprint}", "--extra-authentic: %d of its images "
                              "are copies of images of the %r split %s trains on: the same pixels are trained as "
                              "unedited and as that split labels them; remove them from the folder", copies,
                              training.split, training.model)
                overlaps, model = train_overlaps(self.plan, job, training, digests), training.model
            else:
                continue
            found |= overlaps
            named |= dict.fromkeys(overlaps, model)
        cases: dict[tuple[str, str], dict[str, None]] = {}  # the case names of each split and overlap, in order
        for key, overlap in found.items():
            where = f"{self._data_name(key.target[0])}:{key.target[1]}"
            if not self.request.allow_train_overlap:
                raise ConfigError(
                    f"evaluation split {where} overlaps the training data of {named[key]} ({overlap.shared} of "
                    f"{overlap.images} images); pick a held-out split or pass {ALLOW_TRAIN_OVERLAP} to score it as "
                    "not held out")
            cases.setdefault((where, overlap.text), {})[f"{key.suite}/{key.case}"] = None
        notes = [f"not held out ({ALLOW_TRAIN_OVERLAP}): {', '.join(names)} on {where} ({text}); their records "
                 "say so and every table marks their rows" for (where, text), names in cases.items()]
        return found, notes

    def _data_name(self, fingerprint: str) -> str:
        """How the user named the dataset of ``fingerprint``: its ``--eval-dataset`` or ``--dataset``."""
        for ds, _, spec in self.eval_datasets:
            if ds.fingerprint() == fingerprint:
                return eval_dataset_spec(spec)[0]
        return self.request.dataset if fingerprint == self.plan.fingerprint else self.plan.datasets[fingerprint].name

    # -- run -----------------------------------------------------------------
    def run(self) -> RunOutput:
        """Train or load each job's model, decide its thresholds, run its passes, record its cases."""
        records: list[ResultRecord] = []
        checkpoints: list[CheckpointInfo] = []
        for job in self.plan.jobs:
            model, checkpoint = self.models.get(job)
            checkpoints.append(checkpoint)
            thresholds = decide(model, job, self.evaluator)
            results = self.evaluator.run_all(model, job.passes, thresholds)
            records += self.recorder.records(job, results, RecordContext(
                detector_name=self.entry.name, plugin=self.entry.source, detector=model, checkpoint=checkpoint,
                job=job, datasets=self.plan.datasets, fingerprint=self.plan.fingerprint, overrides=self.overrides,
                device=str(self.device), strict=self.request.strict, seed=self.request.seed, thresholds=thresholds,
                request=self.request.to_dict(), overlaps=self.overlaps))
        return RunOutput(records, self.plan, self.notes, dict(self.evaluator.skipped), checkpoints)

    def training_plan(self, task: str, exclude_editors: tuple[str, ...] = ()) -> Plan:
        """The plan of one model trained on the train split (``diffzoo train``): the job a suite
        case with this training gets, so the model has the cache key ``diffzoo run`` computes."""
        card = self.entry.card  # the task is one of its tasks: diffzoo.train checks it before any data is read
        editors = self.dataset.label_space.names[1:]
        exclude_editors = tuple(dict.fromkeys(exclude_editors))  # an editor named twice is the same model
        for name in exclude_editors:
            if name not in editors:
                hint = did_you_mean(name, editors)
                raise ConfigError(
                    f"cannot exclude editor {name!r}: dataset {self.dataset.name} has no such editor.{hint} "
                    f"Its editors: {', '.join(editors)}"
                )
        if editors and set(editors) <= set(exclude_editors):
            raise ConfigError(f"excluding every editor of dataset {self.dataset.name} leaves no edited image to "
                              f"train on; keep at least one of {', '.join(editors)}")
        return training_plan(card, TrainSpec(task, "train", exclude_editors), self.dataset, self.config,
                             self.dataset.fingerprint(), detector=self.entry.name, val_every=self.request.val_every)

    def train(self, task: str = "binary", plan: Plan | None = None) -> TrainOutput:
        """Train (or find in the cache) one model on the train split, as :meth:`run` would for a
        case with this training; ``plan``: its :meth:`training_plan`, when the caller made it
        (one that holds editors out)."""
        job = (plan or self.training_plan(task)).jobs[0]
        model, checkpoint = self.models.get(job)
        return TrainOutput(model, checkpoint, job)


def run(request: RunRequest, progress: Progress | None = None) -> RunOutput:
    return Runner(request, progress).run()
