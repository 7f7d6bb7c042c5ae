"""Which records a table reads: one grouping key, one rule for "the newest
record" and one mixing check, for every layout (per case, the paper's
tables, the overview) and every output.

- **Group.**  Rows are ranked together only when their records share a
  :class:`GroupKey` (dataset and fingerprint, label map, split scheme,
  recipe, metrics version, and whether the weights are released ones; a
  cross-dataset record is grouped by its run's ``--dataset``,
  ``config.train_dataset``: the data its model was trained on, or the data
  released weights scored as the run's own) and, within it, one
  version (and definition hash) of each suite: :meth:`RecordIndex.groups`
  gives one :class:`Group` per key and depth, the newest version of every
  suite first, then the next-older versions, and so on.
- **Newest.**  Of several records of one case and row (re-runs, two run
  folders), the one with the latest ``environment.date`` counts, and of
  equal dates the one read later (:func:`newest`).  Tables, diffs, the
  summary, the paper report, the overview and the site all ask this.
- **Mixing.**  A per-case table (one suite version, case, dataset and
  metrics version) may hold rows made under different label maps, splits or
  recipes: those are not in its key on purpose, so that a mix is seen
  instead of silently split.  :func:`check_mixing` refuses such a table
  unless mixing is allowed, and then the renderers add a column per
  condition that differs.

Case facts come from typed record fields: :attr:`RecordBody.setting`
(``Case.setting``), the task, and whether the case's model held editors out
(``case["train"]["exclude_editors"]``); never from parsing a case's name.
"""

from __future__ import annotations

import re
import shlex
from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from diffzoo.harness.core.errors import ConfigError
from diffzoo.harness.core.registry import natural_key
from diffzoo.harness.core.types import nfc
from diffzoo.harness.metrics import METRICS_VERSION
from diffzoo.harness.records.document import ResultRecord
from diffzoo.harness.records.model import DatasetInfo, utc_date

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)

RELEASED = "released weights, zero-shot"
"""The weights of a group or table whose rows score weights their authors released (never
trained on the data): kept apart from, and never ranked with, models trained here."""


def weights_kind(record: ResultRecord) -> str:
    """:data:`RELEASED` for a record of released weights, else '' (a model trained or given here)."""
    return RELEASED if record.body.detector.release is not None else ""


CONDITIONS = ("dataset", "label map", "split", "recipe", "suite", "metrics")
"""What a number was made under besides the detector: rows that differ in any of
these are never ranked together without a column saying so."""


# -- newest -------------------------------------------------------------------------------------
def record_date(record: ResultRecord) -> str:
    """When ``record`` was made (:func:`utc_date`)."""
    return utc_date(record.body.environment.date)


def newest(items: Iterable[T], key: Callable[[T], K], date: Callable[[T], str] | None = None) -> dict[K, T]:
    """The newest item per ``key(item)``, keys in the order they first appear;
    ``date(item)`` says when an item was made (default: a record's date)."""
    when = date if date is not None else cast(Callable[[T], str], record_date)
    out: dict[K, T] = {}
    for item in items:
        k = key(item)
        if k not in out or when(item) >= when(out[k]):
            out[k] = item
    return out


def newest_record(records: Iterable[ResultRecord]) -> ResultRecord:
    """The newest of ``records`` (at least one)."""
    return newest(records, key=lambda _: None)[None]


# -- case facts ---------------------------------------------------------------------------------
def held_out(record: ResultRecord) -> bool:
    """Whether the record's model was trained without some editors (``case.train.exclude_editors``)."""
    train = record.body.case.get("train")
    return bool(train.get("exclude_editors")) if isinstance(train, dict) else False


def is_cross(record: ResultRecord) -> bool:
    """A record of a case evaluated on an ``--eval-dataset`` (suites cross-dataset, opensdi)."""
    return record.body.case_option("eval_dataset") == "other"


def eval_place(record: ResultRecord) -> str:
    """``name/split`` of the dataset a record evaluated."""
    return f"{record.body.dataset.name}/{record.body.case.get('split', '')}"


def place_label(where: str, fingerprint: str, label_map: str, clash: bool) -> str:
    """The column label of an evaluation place (``where``: its :func:`eval_place`): ``where``
    alone, or, where two places of one name and split ``clash``, with the dataset's short
    fingerprint and its label map (two ``tpgt`` folders of a catalog are two places, never one
    column)."""
    return f"{where} ({fingerprint[:8]}, {label_map})" if clash else where


def place_labels(records: Iterable[ResultRecord]) -> dict[str, str]:
    """Per record id, the :func:`place_label` of the place it evaluated among ``records``."""
    places = {r.id: (eval_place(r), r.body.dataset.fingerprint, record_conditions(r)["label map"])
              for r in records}
    distinct = Counter(where for where, _, _ in set(places.values()))  # places of one name and split
    return {i: place_label(*place, clash=distinct[place[0]] > 1) for i, place in places.items()}


def case_identity(record: ResultRecord) -> tuple[str, ...]:
    """What makes two records of one row the same result: suite, case, the evaluated split and
    dataset (a cross-dataset case is run once per evaluated dataset); the newest of them counts."""
    b = record.body
    return (b.suite.name, b.case_name, str(b.case.get("split", "")), b.row_name, b.dataset.name,
            b.dataset.fingerprint)


# -- conditions and mixing ----------------------------------------------------------------------
def record_conditions(record: ResultRecord) -> dict[str, str]:
    """The record's :data:`CONDITIONS` as short texts: ``label map`` is the map's short sha256
    and source, ``split`` the split scheme's id, ``recipe`` the evaluation input recipe; each
    ``unknown`` for records written before it was recorded."""
    b = record.body
    ds = b.dataset
    return {
        "dataset": f"{ds.name} ({ds.fingerprint[:12]})",
        "label map": ds.label_map_id,
        "split": ds.split_id,
        "recipe": str((b.config.get("eval_input") or {}).get("recipe") or "unknown"),
        "suite": f"{b.suite.name} {SuiteVersion(b.suite.version, b.suite.definition_hash)}",
        "metrics": f"v{b.metrics_version}",
    }


def mixed_conditions(records: Iterable[ResultRecord]) -> dict[str, dict[str, list[str]]]:
    """Condition -> {value: rows} for each condition the records differ in."""
    seen: dict[str, dict[str, dict[str, None]]] = {}
    for r in records:
        for name, value in record_conditions(r).items():
            seen.setdefault(name, {}).setdefault(value, {})[r.body.row_name] = None
    return {name: {value: list(rows) for value, rows in sorted(values.items())}
            for name, values in seen.items() if len(values) > 1}


def check_mixing(tables: Iterable[Any], allow_mixed: bool = False) -> None:
    """Refuse (:class:`ConfigError`) tables whose rows' records differ in a condition, unless
    ``allow_mixed``; each table has a ``title`` and the ``records`` it shows.  The message names
    every differing condition with each value and its rows:
    ``TITLE: label map A [det1], B [det2]; split ...``."""
    if allow_mixed:
        return
    problems = []
    for t in tables:
        mixed = mixed_conditions(t.records)
        if mixed:
            problems.append(f"{t.title}: " + "; ".join(
                f"{name} " + ", ".join(f"{value} [{', '.join(rows)}]" for value, rows in values.items())
                for name, values in mixed.items()))
    if problems:
        raise ConfigError("refusing to rank rows made under different label maps, splits or evaluator "
                          "versions in one table: " + " | ".join(problems)
                          + ". Publish one kind (freeze a version of the records you mean to compare: "
                          "`diffzoo leaderboard freeze NAME --detector/--suite/--dataset ...`), or pass "
                          "--allow-mixed to publish them with a column naming each")


# -- keys ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TableKey:
    """The identity of a per-case table (module doc, "Mixing")."""

    suite: str
    suite_version: str
    definition_hash: str
    case: str
    task: str
    dataset: str
    fingerprint: str
    metrics_version: str
    weights: str = ""  # RELEASED, or '' for models trained here

    @classmethod
    def of(cls, record: ResultRecord) -> TableKey:
        b = record.body
        return cls(suite=b.suite.name, suite_version=b.suite.version, definition_hash=b.suite.definition_hash,
                   case=f"{b.case_name} ({b.case.get('split')})" if is_cross(record) else b.case_name,  # one per split
                   task=b.task, dataset=b.dataset.name, fingerprint=b.dataset.fingerprint,
                   metrics_version=b.metrics_version, weights=weights_kind(record))

    @property
    def title(self) -> str:
        apart = f" ({self.weights})" if self.weights else ""
        return f"{self.suite} v{self.suite_version} / {self.case} on {self.dataset}{apart}"

    @property
    def name(self) -> str:
        """Every part of the key, for a file-name slug."""
        return (f"{self.suite}-v{self.suite_version}-{self.case}-{self.dataset}-{self.fingerprint[:8]}"
                f"-m{self.metrics_version}-{self.definition_hash[:8]}" + ("-released" if self.weights else ""))

    @property
    def order(self) -> tuple:
        return (self.suite, version_order(self.suite_version), self.case, natural_key(self.dataset), self.fingerprint,
                self.metrics_version, self.weights)


@dataclass(frozen=True, order=True)
class GroupKey:
    """What every number of one group was made under (module doc)."""

    dataset: str
    fingerprint: str
    label_map: str
    split: str
    recipe: str
    metrics_version: str
    weights: str = ""  # RELEASED (zero-shot rows), or '' for models trained here

    @classmethod
    def of(cls, record: ResultRecord) -> GroupKey:
        """The record's key; a cross-dataset record's dataset, label map and split are its run's
        ``--dataset``'s: the data a model trained here was trained on, and the data released weights
        scored as the run's own (zero-shot), so a run's benchmarks are columns of one table; its name
        in NFC, as a record's ``dataset.name`` is written."""
        b = record.body
        recipe = record_conditions(record)["recipe"]
        trained = b.config.get("train_dataset")
        ds = b.dataset
        if isinstance(trained, dict) and trained:
            ds = DatasetInfo(nfc(str(trained.get("name", ""))), str(trained.get("fingerprint", "")),
                             label_map=trained.get("label_map"), split=trained.get("split"))
        return cls(ds.name, ds.fingerprint, ds.label_map_id, ds.split_id, recipe, b.metrics_version,
                   weights_kind(record))

    @property
    def conditions(self) -> dict[str, str]:
        return {"label map": self.label_map, "split": self.split, "recipe": self.recipe,
                "metrics": f"v{self.metrics_version}"}

    @property
    def other_version(self) -> str:
        """Why no run of this diffzoo adds to a group of another metrics version (its records are
        of this version: another group); "" for a group of this version or of no record."""
        if self.metrics_version in (METRICS_VERSION, ""):
            return ""
        return (f"a run of a diffzoo writing metrics v{self.metrics_version} (this one writes metrics "
                f"v{METRICS_VERSION} records, a group of their own)")

    def run_command(self, detector: str, suite: str, like: ResultRecord | None = None) -> str:
        """The ``diffzoo run`` whose record of ``detector`` and ``suite`` lands in this group: on its
        dataset, under its recipe (a run on the default dataset or recipe makes another group's),
        and in the row of ``like`` (a record of it): with its released weights and its threshold rule.
        For a group of another metrics version, :attr:`other_version`: no such run is."""
        if self.other_version:
            return self.other_version
        where = ["--dataset", self.dataset] if self.fingerprint else []  # a group of no record: any data
        recipe = ["--recipe", self.recipe] if self.recipe == "paper" else []
        release = like.body.detector.release_name if like is not None else None
        weights = ["--weights", f"released:{release}"] if release else []
        rule = ["--thresholds", "calibrated"] if like is not None and like.body.calibrated else []
        # shell-quoted: a record's names (`mini & co`, `x; rm -rf ~`) pasted into a shell stay one argument
        return shlex.join(["diffzoo", "run", "--detector", detector, *weights, "--suite", suite, *where, *recipe,
                           *rule])


@dataclass(frozen=True)
class SuiteVersion:
    version: str
    definition_hash: str

    def __str__(self) -> str:
        return f"v{self.version}" + (f" ({self.definition_hash[:8]})" if self.definition_hash else "")


@dataclass
class Group:
    """The records of one :class:`GroupKey` and one version of each suite (``suites``), the
    newest per case and row; ``depth`` 0 holds the newest version of every suite."""

    key: GroupKey
    suites: dict[str, SuiteVersion]
    records: list[ResultRecord]
    depth: int = 0
    order: dict[str, int] = field(default_factory=dict)  # row name -> its place (first appearance)

    @property
    def newest(self) -> bool:
        return self.depth == 0

    @property
    def place(self) -> str:
        """The dataset (and the weights' kind) the group's records are of."""
        apart = f", {self.key.weights}" if self.key.weights else ""
        return f"{self.key.dataset} ({self.key.fingerprint[:12]}){apart}"

    @property
    def title(self) -> str:
        """:attr:`place`; of an older versions' group, with them: never the newest's heading over other numbers."""
        return self.place + ("".join(f", {s} v{v.version}" for s, v in self.suites.items()) if self.depth else "")

    @property
    def conditions(self) -> dict[str, str]:
        """Every condition, the suites' versions included (a header line)."""
        return {**self.key.conditions, "suites": ", ".join(f"{s} {v}" for s, v in self.suites.items())}

    @property
    def name(self) -> str:
        """The place and every condition: ``mini (fp) · label map X · split Y · ...``."""
        return " · ".join([self.place, *(f"{k} {v}" for k, v in self.conditions.items())])

    def of(self, suite: str, tasks: Iterable[str] | None = None) -> list[ResultRecord]:
        """The records of ``suite`` (of cases of ``tasks``: None for all)."""
        wanted = None if tasks is None else set(tasks)
        return [r for r in self.records if r.body.suite.name == suite and (wanted is None or r.body.task in wanted)]

    def rows(self, suite: str, tasks: Iterable[str] | None = None) -> list[str]:
        """The row names with records of ``suite`` (of cases of ``tasks``), in the order of the selection."""
        return self.ordered(r.body.row_name for r in self.of(suite, tasks))

    def ordered(self, names: Iterable[str]) -> list[str]:
        """``names``, each once, in the order of the selection (:attr:`order`; then by name)."""
        return sorted(set(names), key=lambda n: (self.order.get(n, len(self.order)), n))

    def find(self, suite: str, row: str, *, task: str | None = None, setting: str | None = None,
             held: bool | None = None, sliced: bool = False) -> ResultRecord | None:
        """The record of ``suite`` and ``row`` whose case has these facts (None: any): its task,
        its setting, whether its model held editors out, whether it reports per slice."""
        for r in self.of(suite):
            b = r.body
            if (b.row_name == row and (task is None or b.task == task) and (setting is None or b.setting == setting)
                    and (held is None or held_out(r) == held) and bool(b.case.get("slice_by")) == sliced):
                return r
        return None


class RecordIndex:
    """The records of a selection, grouped (:meth:`groups`) by the one key of this module."""

    def __init__(self, records: Iterable[ResultRecord]):
        self.records = list(records)
        self.order = {name: i for i, name in enumerate(dict.fromkeys(r.body.row_name for r in self.records))}

    def groups(self) -> list[Group]:
        """One :class:`Group` per key and depth, keys sorted (dataset names naturally: ``d2`` before
        ``d10``); within a key the newest version
        (and definition hash) of every suite first (by version, then by its newest record)."""
        by_key: dict[GroupKey, dict[str, dict[SuiteVersion, list[ResultRecord]]]] = {}
        for r in self.records:
            s = r.body.suite
            by_key.setdefault(GroupKey.of(r), {}).setdefault(s.name, {}).setdefault(
                SuiteVersion(s.version, s.definition_hash), []).append(r)
        out = []
        for key, suites in sorted(by_key.items(), key=lambda kv: (natural_key(kv[0].dataset), kv[0])):
            ordered = {name: _newest_first(versions) for name, versions in suites.items()}
            for depth in range(max(len(v) for v in ordered.values())):
                chosen = {s: v[depth] for s, v in sorted(ordered.items()) if len(v) > depth}
                records = [r for s, v in chosen.items() for r in suites[s][v]]
                out.append(Group(key, chosen, list(newest(records, key=case_identity).values()), depth, self.order))
        return out


def version_order(version: str) -> tuple:
    """A sort key for version texts and names: ``2`` before ``10``, ``v2`` before ``v10``, numbers
    before words; ``.`` and ``-`` only separate."""
    # Not registry.natural_key, which orders "-" before "." as text (v2-rc1 before v2.1): one key for both would
    # reorder published version lists or name lists. It ties v1.2 and v1-2: a caller adds a second key.
    return tuple((0, int(n), "") if n else (1, 0, w) for n, w in re.findall(r"([0-9]+)|([^0-9.-]+)", version))


def _newest_first(versions: dict[SuiteVersion, list[ResultRecord]]) -> list[SuiteVersion]:
    """A suite's versions, newest first: by version, then by the newest record of each."""
    return sorted(versions, reverse=True,
                  key=lambda v: (version_order(v.version), max(record_date(r) for r in versions[v])))
