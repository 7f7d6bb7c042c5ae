"""The typed result record: one dataclass per part of the JSON document,
parsed with validation and written back by :meth:`RecordBody.to_dict`.

Every reader and writer of records goes through :class:`RecordBody`
(``ResultRecord.body``); the schema is documented field by field in
:mod:`.document` and docs/leaderboard.md.  Parsing collects every problem, each
naming its field (``detector.checkpoint_sha256``, ``counts.evaluated``,
``metrics.mIoU``) with what was expected, so one message lists all that is
wrong with a hand-edited file.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from diffzoo.harness.core.types import MAX_SEED
from diffzoo.harness.metrics.verdict import CALIBRATED_ROW, OWN_SCORE_ROW
from diffzoo.harness.records.case_summary import SCORE_OPTION
from diffzoo.harness.records.fields import (
    FieldReader,
    ci_table,
    confusion_matrix,
    json_kind,
    metric_table,
    nested_metrics,
)
from diffzoo.harness.records.policy import ThresholdPolicy

SCHEMA_VERSION = 2
SEED_LIMIT = MAX_SEED + 1
"""Seeds are integers with 0 <= seed < SEED_LIMIT (types.check_seed's range; bool is not a seed)."""
STATE_DIR, RECORDS_DIR, LOCK_FILE = "states", "records", ".lock"
"""A record store's layout as records name it: its states, its records and the lock every writer holds."""
SKIPPED_EXAMPLES = 20
"""How many skipped samples (id, kind, reason) a record lists; all are counted by kind."""
TRAIN_OVERLAP = "train_overlap"
"""The ``config`` key of a record scored on images its model was trained on (:class:`TrainOverlap`);
a held-out record has no such key."""
NOT_HELD_OUT_ROW = "{} (not held out)"
"""A table row of records scored on their model's training images: never read as a held-out row."""
RELEASED_ROW = "{} [released:{}]"
"""A row of released weights: the detector and the release it scored (never a model trained here)."""


def state_file_name(sha256: str) -> str:
    """Where a state lives, relative to its store: named by its content hash."""
    return f"{STATE_DIR}/{sha256}.json"


@dataclass(frozen=True)
class DetectorInfo:
    name: str
    checkpoint_sha256: str
    task: str = ""
    card: dict[str, Any] = field(default_factory=dict)
    pretrained: bool | None = None
    plugin: str = ""
    plugin_version: str | None = None
    checkpoint_source: str | None = None
    release: dict[str, Any] | None = None
    """Released weights (``checkpoint_source`` ``released``): the release's name, source, training
    data and original files with their sha256; None for a model trained or given here."""

    @property
    def release_name(self) -> str | None:
        return str(self.release.get("name")) if self.release else None

    def to_dict(self) -> dict[str, Any]:
        """The record's ``detector`` field; ``release`` only where there is one."""
        return {k: v for k, v in vars(self).items() if k != "release" or v is not None}

    @classmethod
    def parse(cls, problems: list[str], obj: Any) -> DetectorInfo:
        r = FieldReader(problems, obj, "detector", cls.__dataclass_fields__)
        pretrained = r.get("pretrained")
        if pretrained is not None and not isinstance(pretrained, bool):
            r.fail("pretrained", f"must be true, false or null, got {pretrained!r}")
        return cls(name=r.text("name"), checkpoint_sha256=r.hex64("checkpoint_sha256") or "",
                   task=r.text("task", required=False), card=r.mapping("card"), pretrained=pretrained,
                   plugin=r.text("plugin", required=False), plugin_version=r.text("plugin_version", optional=True,
                                                                                  required=False),
                   checkpoint_source=r.text("checkpoint_source", optional=True, required=False),
                   release=_release(r))


def _release(r: FieldReader) -> dict[str, Any] | None:
    """``detector.release``: a mapping naming the release and its files, or absent."""
    release = r.mapping("release", nullable=True)
    if release is not None and not (isinstance(release.get("name"), str) and release["name"]
                                    and isinstance(release.get("files"), list)):
        r.fail("release", "must name the release (name) and its files (files)")
    return release


@dataclass(frozen=True)
class SuiteInfo:
    name: str
    version: str
    definition_hash: str = ""

    @classmethod
    def parse(cls, problems: list[str], obj: Any) -> SuiteInfo:
        r = FieldReader(problems, obj, "suite", cls.__dataclass_fields__)
        return cls(r.text("name"), r.text("version"), r.text("definition_hash", required=False))


@dataclass(frozen=True)
class DatasetInfo:
    """``label_map``: ``{names, sha256, source, verified}``, the mask value ->
    class map the numbers were made under; ``split``: ``{id, source}``, the
    split scheme (``diffzoo-hash-v1-seed0-val20``, ``native``, ...).  Both are
    part of the record's identity; None only in records written before they
    existed."""

    name: str
    fingerprint: str
    description: Any = None  # the adapter's own description (may hold paths: never part of the id)
    label_map: dict[str, Any] | None = None
    split: dict[str, Any] | None = None

    @classmethod
    def parse(cls, problems: list[str], obj: Any) -> DatasetInfo:
        r = FieldReader(problems, obj, "dataset", cls.__dataclass_fields__)
        label_map = r.mapping("label_map", nullable=True)
        if label_map is not None:
            m = FieldReader(problems, label_map, "dataset.label_map")
            names = m.get("names", required=True)
            if not isinstance(names, list) or len(names) < 2 or not all(isinstance(n, str) and n for n in names):
                m.fail("names", f"must be a list of at least two class names, got {names!r}")
            m.hex64("sha256")
            m.text("source")
            if not isinstance(m.get("verified", required=True), bool):
                m.fail("verified", f"must be true or false, got {m.get('verified')!r}")
        split = r.mapping("split", nullable=True)
        if split is not None:
            m = FieldReader(problems, split, "dataset.split")
            m.text("id")
            m.text("source", required=False)
        return cls(r.text("name"), r.text("fingerprint"), r.get("description"), label_map, split)

    @property
    def label_map_id(self) -> str:
        """The label map's short hash and source (``3f2a9c1d0b7e (labels.json)``); ``unknown`` when absent."""
        if not self.label_map:
            return "unknown"
        return f"{str(self.label_map.get('sha256', ''))[:12]} ({self.label_map.get('source', '?')})"

    @property
    def split_id(self) -> str:
        """The split scheme's id; ``unknown`` when absent."""
        return str(self.split.get("id")) if self.split else "unknown"


@dataclass(frozen=True)
class Counts:
    """Images evaluated, and samples skipped: in total, by kind (``corrupt``,
    ``too-large``, ...) and the first few with their reasons."""

    evaluated: int
    skipped_total: int = 0
    skipped_by_reason: dict[str, int] = field(default_factory=dict)
    skipped: tuple[dict[str, str], ...] = ()

    @classmethod
    def of(cls, evaluated: int, skipped: list[dict[str, str]]) -> Counts:
        kinds = [str(item.get("kind") or "corrupt") for item in skipped]
        examples = tuple({"id": str(s["id"]), "kind": kind, "reason": str(s["reason"])}
                         for s, kind in zip(skipped[:SKIPPED_EXAMPLES], kinds))
        return cls(evaluated, len(skipped), dict(sorted(Counter(kinds).items())), examples)

    @classmethod
    def parse(cls, problems: list[str], obj: Any) -> Counts:
        r = FieldReader(problems, obj, "counts", cls.__dataclass_fields__)
        total = r.integer("skipped_total", required=False)
        by = {}
        for kind, n in (r.mapping("skipped_by_reason") or {}).items():
            if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                r.fail(f"skipped_by_reason.{kind}", f"must be a count (integer >= 0), got {n!r}")
            else:
                by[kind] = n
        if by and sum(by.values()) != total:
            r.fail("skipped_by_reason", f"sums to {sum(by.values())}, but skipped_total is {total}")
        examples = r.get("skipped", [])
        if not isinstance(examples, list) or not all(
                isinstance(s, dict) and isinstance(s.get("id"), str) and isinstance(s.get("reason"), str)
                for s in examples):
            r.fail("skipped", "must be a list of {id, kind, reason}")
            examples = []
        elif len(examples) > total:
            r.fail("skipped", f"lists {len(examples)} samples, more than skipped_total {total}")
        return cls(r.integer("evaluated"), total, by, tuple(examples))

    def to_dict(self) -> dict[str, Any]:
        return {"evaluated": self.evaluated, "skipped_total": self.skipped_total,
                "skipped_by_reason": dict(self.skipped_by_reason), "skipped": [dict(s) for s in self.skipped]}


@dataclass(frozen=True)
class TrainOverlap:
    """A case scored on images its model was trained on, kept only because the run was told to
    (``--allow-train-overlap``): ``shared`` of the case's ``images`` are training images (the
    same samples of the same data, or the same image content), and ``training`` is what the model
    was trained on (``name``, ``fingerprint``, ``split``).  It lives in ``config``, so it is part
    of the record's identity, its digests and its state's binding: removing or editing it is seen
    by ``leaderboard verify``."""

    shared: int
    images: int
    training: dict[str, str]

    @classmethod
    def parse(cls, problems: list[str], obj: Any) -> TrainOverlap:
        r = FieldReader(problems, obj, f"config.{TRAIN_OVERLAP}", ("held_out", "shared_images", "images", "training"))
        held = r.get("held_out", required=True)
        if "held_out" in r.obj and held is not False:
            r.fail("held_out", f"must be false (a held-out record has no {TRAIN_OVERLAP}), got {held!r}")
        images = r.integer("images", 1)
        shared = r.integer("shared_images", 1)
        if shared > images:
            r.fail("shared_images", f"is {shared}, more than the {images} images evaluated")
        keys = ("name", "fingerprint", "split")
        t = FieldReader(problems, r.mapping("training"), f"config.{TRAIN_OVERLAP}.training", keys)
        return cls(shared, images, {k: t.text(k) for k in keys})

    def to_dict(self) -> dict[str, Any]:
        return {"held_out": False, "shared_images": self.shared, "images": self.images,
                "training": dict(self.training)}

    @property
    def text(self) -> str:
        """``12 of 48 images are training images of mini/train``."""
        where = f"{self.training.get('name')}/{self.training.get('split')}"
        return f"{self.shared} of {self.images} images are training images of {where}"


def utc_date(date: str | None) -> str:
    """A record's ``environment.date`` (ISO 8601) in UTC, so that the text compares as the time it
    is whatever offset it was written with (one without is UTC's); '' for none: the oldest."""
    if not date:
        return ""
    when = datetime.fromisoformat(date)
    return (when.astimezone(UTC) if when.tzinfo else when.replace(tzinfo=UTC)).isoformat()


@dataclass(frozen=True)
class Environment:
    """Where and when the record was made: never part of its identity."""

    date: str | None = None
    git: str | None = None
    host: str | None = None
    device: str | None = None
    python: str | None = None
    packages: dict[str, str | None] = field(default_factory=dict)

    @classmethod
    def parse(cls, problems: list[str], obj: Any) -> Environment:
        r = FieldReader(problems, obj, "environment", cls.__dataclass_fields__)
        text = {k: r.text(k, required=False, optional=True) for k in ("date", "git", "host", "device", "python")}
        try:  # the newest record of a run is the one of the latest date: no other text may stand for one
            utc_date(text["date"])
        except ValueError:
            r.fail("date", f"must be an ISO 8601 date and time (2026-11-29T12:00:00+00:00), got {text['date']!r}")
        except OverflowError:  # ISO 8601, but its UTC time is no date every reader compares
            r.fail("date", f"is {text['date']!r}, outside the years 1 to 9999 in UTC")
        return cls(**text, packages=r.mapping("packages"))


@dataclass(frozen=True)
class StateRef:
    """A metric-state file, relative to the store: ``states/<sha256>.json``."""

    file: str
    sha256: str


def _state_ref(r: FieldReader, prefix: str) -> StateRef | None:
    sha = r.hex64(f"{prefix}_sha256", required=False)
    name = r.text(f"{prefix}_file", required=False, optional=True)
    if sha is None and name is None:
        return None
    if sha is None or name is None:
        r.fail(f"{prefix}_file", f"and {prefix}_sha256 must both be given or both be null")
        return None
    if name != state_file_name(sha):
        r.fail(f"{prefix}_file", f"must be {state_file_name(sha)!r} (named by its sha256), got {name!r}")
    return StateRef(name, sha)


@dataclass(frozen=True)
class RecordBody:
    """A parsed, validated result record (see :mod:`.document` for the schema)."""

    record_id: str
    detector: DetectorInfo
    suite: SuiteInfo
    case: dict[str, Any]
    dataset: DatasetInfo
    label_space: tuple[str, ...]
    metrics: dict[str, Any]
    metrics_version: str
    threshold_policy: dict[str, Any]
    counts: Counts
    seed: int
    config: dict[str, Any]
    environment: Environment
    digests: dict[str, str]
    ci95: dict[str, Any] = field(default_factory=dict)
    baselines: dict[str, dict[str, Any]] = field(default_factory=dict)
    confusion: list[list[int]] | None = None
    slices: dict[str, dict[str, dict[str, Any]]] | None = None
    training: dict[str, Any] | None = None
    predictions_digest: str | None = None
    state: StateRef | None = None
    compared_state: StateRef | None = None
    request: dict[str, Any] | None = None
    """The run's options as flag name -> value (``RunRequest.to_dict``): what ``diffzoo
    reproduce`` runs again.  Not part of the identity (it holds paths)."""
    schema_version: int = SCHEMA_VERSION
    train_overlap: TrainOverlap | None = None
    """``config.train_overlap`` read (None: held out); written back as part of ``config``."""

    @property
    def not_held_out(self) -> bool:
        """True for a case scored on images its model was trained on (:class:`TrainOverlap`)."""
        return self.train_overlap is not None

    @property
    def case_name(self) -> str:
        return str(self.case.get("name", ""))

    @property
    def setting(self) -> str:
        """What the case stands for among its suite's cases (``Case.setting``: a distortion
        setting, a held-out pair, an editor, ...); "" for a suite's only setting."""
        return str(self.case.get("setting", ""))

    @property
    def task(self) -> str:
        return str(self.case.get("task", ""))

    @property
    def own_score(self) -> bool:
        """True for an image case judged by the detector's own image score (IMDL-BenCo's
        ``pred_label``) instead of its predicted edited area: the second image row of a
        detector that gives both (:func:`.case_summary.own_score_case`)."""
        return self.case_option(SCORE_OPTION[0]) == SCORE_OPTION[1]

    @property
    def row_name(self) -> str:
        """The detector as a table row names it: ``NAME``, or ``NAME (own image score)``; with
        ``[released:R]`` for released weights, `` (calibrated)`` for calibrated thresholds (so the
        rows of one model's two threshold rules stand side by side, each saying which it is), and
        `` (not held out)`` for a case scored on its model's training images, so that no table
        shows or ranks it as a held-out row."""
        name = OWN_SCORE_ROW.format(self.detector.name) if self.own_score else self.detector.name
        if self.detector.release_name:
            name = RELEASED_ROW.format(name, self.detector.release_name)
        if self.calibrated:
            name = CALIBRATED_ROW.format(name)
        return NOT_HELD_OUT_ROW.format(name) if self.not_held_out else name

    @property
    def distortion(self) -> str:
        """The case's distortion; ``none`` when the case names none."""
        return str(self.case.get("distortion") or "none")

    @property
    def distortion_params(self) -> dict[str, Any]:
        """The case's distortion parameters (name -> value; {} when none or unreadable)."""
        params = self.case.get("distortion_params") or {}
        try:
            return dict(params) if isinstance(params, (dict, list, tuple)) else {}
        except (TypeError, ValueError):
            return {}

    @property
    def editors(self) -> tuple[str, ...]:
        """The editors the case is restricted to (() when it reads every image)."""
        editors = self.case.get("editors") or ()
        return tuple(map(str, editors)) if isinstance(editors, (list, tuple)) else ()

    def case_option(self, name: str, default: Any = None) -> Any:
        """One of the case's ``options`` (e.g. the format-parity ``tolerance``)."""
        options = self.case.get("options")
        return options.get(name, default) if isinstance(options, dict) else default

    @property
    def calibrated(self) -> bool:
        """Thresholds calibrated on a validation split (never a semantic record's: its pixels are
        an argmax and its image rule the fixed one, so its number is the fixed row's)."""
        return self.policy.mode == "calibrated"

    @property
    def policy(self) -> ThresholdPolicy:
        """``threshold_policy`` read as a :class:`ThresholdPolicy` (its rules follow the detector's task)."""
        return ThresholdPolicy.of(self.threshold_policy, self.detector.task)

    @classmethod
    def parse(cls, data: Any) -> tuple[RecordBody | None, list[str]]:
        """(the record, []) or (None, every problem, each naming its field)."""
        if not isinstance(data, dict):
            return None, [f"a record is a JSON object, not {json_kind(data)}"]
        if "record_id" not in data and {"rows", "pos_hist"} <= data.keys():  # what EvalState.state_dict writes
            return None, ["a metric-state file, not a record: give the records that name it (the store, or its "
                          f"{RECORDS_DIR}/ folder); each record is checked against its state"]
        if "record_id" not in data and "record_digests" in data:  # what a frozen version's manifest holds
            return None, ["a frozen version's manifest, not a record: check it with `diffzoo leaderboard verify "
                          "VERSION --store STORE`"]
        problems: list[str] = []
        if missing := [k for k in REQUIRED if k not in data]:
            problems.append(f"missing field(s): {', '.join(missing)}")
        if unknown := sorted(set(data) - set(FIELDS)):
            problems.append(f"unknown field(s): {', '.join(unknown)} (schema version {SCHEMA_VERSION})")
        version = data.get("schema_version")
        if "schema_version" in data and (isinstance(version, bool) or not isinstance(version, int)
                                         or version != SCHEMA_VERSION):
            problems.append(f"schema version {version!r} is not {SCHEMA_VERSION} (this diffzoo reads version "
                            f"{SCHEMA_VERSION} only; re-run the evaluation to get a current record)")
        if problems:
            return None, problems
        r = FieldReader(problems, data, "")
        labels = r.get("label_space")
        if not isinstance(labels, list) or len(labels) < 2 or not all(isinstance(n, str) and n for n in labels):
            r.fail("label_space", f"must be a list of at least two class names, got {labels!r}")
            labels = []
        case = r.mapping("case") or {}
        if not isinstance(case.get("name"), str) or not case.get("name", "").strip():
            r.fail("case.name", "must be a non-empty string")
        digests = r.mapping("digests") or {}
        if not all(isinstance(v, str) for v in digests.values()):
            r.fail("digests", "must map field names to hex digests")
        training = r.mapping("training", nullable=True)
        config = r.mapping("config") or {}
        overlap = TrainOverlap.parse(problems, config[TRAIN_OVERLAP]) if TRAIN_OVERLAP in config else None
        body = cls(
            record_id=r.text("record_id"), detector=DetectorInfo.parse(problems, data["detector"]),
            suite=SuiteInfo.parse(problems, data["suite"]), case=case,
            dataset=DatasetInfo.parse(problems, data["dataset"]), label_space=tuple(labels),
            metrics=metric_table(r, "metrics", r.mapping("metrics")), metrics_version=r.text("metrics_version"),
            threshold_policy=r.mapping("threshold_policy") or {}, counts=Counts.parse(problems, data["counts"]),
            seed=r.integer("seed", 0, SEED_LIMIT), config=config,
            environment=Environment.parse(problems, data["environment"]), digests=digests,
            ci95=ci_table(r), baselines=nested_metrics(r, "baselines", 1) or {},
            confusion=confusion_matrix(r, len(labels)), slices=nested_metrics(r, "slices", 2), training=training,
            predictions_digest=r.hex64("predictions_digest", required=False), state=_state_ref(r, "state"),
            compared_state=_state_ref(r, "compared_state"), request=r.mapping("request", nullable=True),
            train_overlap=overlap,
        )
        return (None, problems) if problems else (body, [])

    def to_dict(self) -> dict[str, Any]:
        """The JSON document: every field of :data:`FIELDS` (optional ones as null or {}), each the
        attribute of its name but for the typed parts and the state references."""
        parts: dict[str, Any] = {
            "detector": self.detector.to_dict(), "suite": dict(vars(self.suite)), "dataset": dict(vars(self.dataset)),
            "label_space": list(self.label_space), "counts": self.counts.to_dict(),
            "environment": dict(vars(self.environment))}
        for prefix, ref in (("state", self.state), ("compared_state", self.compared_state)):
            parts[f"{prefix}_file"], parts[f"{prefix}_sha256"] = (ref.file, ref.sha256) if ref else (None, None)
        return {name: parts[name] if name in parts else getattr(self, name) for name in FIELDS}


REQUIRED = (
    "schema_version", "record_id", "detector", "suite", "case", "dataset", "label_space", "metrics",
    "metrics_version", "threshold_policy", "counts", "seed", "config", "environment", "digests",
)
OPTIONAL = ("ci95", "baselines", "confusion", "slices", "training", "predictions_digest", "state_file",
            "state_sha256", "compared_state_file", "compared_state_sha256", "request")
FIELDS = REQUIRED + OPTIONAL
