"""What a suite is: versioned, declarative lists of cases.

A case names the split it evaluates (optionally only the images holding
pixels of some editors), the task, the distortion applied before the
detector, and the training it needs.  Bump a suite's ``version`` and add a
changelog line whenever a change could move a number; a test pins the hash of
every suite definition to its version.

Fields added after a suite was first pinned are left out of ``to_dict`` while
they hold their defaults, so adding a field never moves an existing hash.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from diffzoo.harness.core.cards import stable_hash
from diffzoo.harness.core.errors import ConfigError, did_you_mean, name_some
from diffzoo.harness.core.types import TASKS, CaseTask

SLICE_BY = ("", "base", "turns", "multiturn", "editor", "edit_type")
DESCRIPTIVE = ("setting",)
"""Case fields that name a case for its tables and move no number: left out of the definition hash."""


@dataclass(frozen=True)
class TrainSpec:
    """Which data a case's model is trained on, and for which task.

    Equal specs are merged by the runner, so two cases that need the same
    model train it once.
    """

    task: str  # the model's: a Task (binary | semantic | classification)
    split: str = "train"
    exclude_editors: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"task": self.task, "split": self.split, "exclude_editors": list(self.exclude_editors)}


@dataclass(frozen=True)
class Case:
    """One evaluation: a split (or the part of it holding some editors), a
    task, a distortion, a model, metrics to report.

    - ``editors``: evaluate only the images with pixels of any of these
      editors, plus the authentic images when ``authentic`` is true.  Images
      are chosen from their label maps; the metrics are computed from the
      per-image counts of the (split, distortion) pass, so a subset costs no
      extra inference.
    - ``slice_by``: report every metric per value of this key (base, turns,
      multiturn, editor, edit_type) as ``<metric>@<key>=<value>``; none when
      no image carries the key's metadata (``metrics/slices.py``).
    - ``compare_to``: the name of another case of the same suite; this case
      then also reports how often the image-level verdict differs between
      the two (format parity), flagged above ``options['tolerance']``.
    - ``setting``: what the case stands for among its suite's cases, the row a
      table gives it: a distortion setting (``jpeg80``), a held-out pair
      (``Flux_Hunyuan``), a LoRA variant, an editor, a slice key, a format.
      Tables read it from here, never from the case's name.  It moves no
      number, so it is not part of the suite's definition hash.
    """

    name: str
    task: str  # what the case reports: a CaseTask (binary | semantic | image)
    train: TrainSpec
    split: str = "val"
    distortion: str = "none"
    distortion_params: tuple[tuple[str, Any], ...] = ()
    metrics: tuple[str, ...] = ()
    description: str = ""
    editors: tuple[str, ...] = ()
    authentic: bool = True
    slice_by: str = ""
    compare_to: str = ""
    options: tuple[tuple[str, Any], ...] = ()
    setting: str = ""

    def __post_init__(self) -> None:
        if self.task not in tuple(CaseTask):
            *first, last = CaseTask
            raise ConfigError(f"case {self.name!r}: task must be {', '.join(first)} or {last}")
        if self.train.task not in TASKS:
            raise ConfigError(f"case {self.name!r}: training task must be one of {TASKS}")
        if self.slice_by not in SLICE_BY:
            raise ConfigError(f"case {self.name!r}: slice_by must be one of {', '.join(SLICE_BY[1:])}")
        if self.compare_to == self.name:
            raise ConfigError(f"case {self.name!r} cannot be compared to itself")
        for what, pairs in (("distortion parameter", self.distortion_params), ("option", self.options)):
            seen: dict[str, Any] = {}
            for key, value in pairs:  # read as a dict, a second value would win unsaid
                if key in seen:
                    raise ConfigError(f"case {self.name!r} gives {what} {key} twice ({seen[key]!r} and {value!r}); "
                                      "give it once")
                seen[key] = value

    @property
    def subset_key(self) -> tuple[tuple[str, ...], bool]:
        """The images this case reads: (editors, authentic too); ``((), True)`` is all."""
        return (self.editors, self.authentic) if self.editors else ((), True)

    def option(self, name: str, default: Any = None) -> Any:
        return dict(self.options).get(name, default)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "name": self.name,
            "task": self.task,
            "train": self.train.to_dict(),
            "split": self.split,
            "distortion": self.distortion,
            "distortion_params": dict(self.distortion_params),
            "metrics": list(self.metrics),
        }
        if self.editors:
            d["editors"] = list(self.editors)
            d["authentic"] = self.authentic
        late = {"slice_by": self.slice_by, "compare_to": self.compare_to, "options": dict(self.options),
                "setting": self.setting}
        return {**d, **{key: value for key, value in late.items() if value}}


@dataclass(frozen=True)
class Suite:
    """A named, versioned list of cases.

    ``references``: detectors whose rows a report of this suite compares
    against (``diffzoo run`` runs them on this suite too, unless told not
    to); they do not change this detector's numbers, so they are not hashed.
    """

    name: str
    version: str
    description: str
    cases: tuple[Case, ...]
    changelog: tuple[str, ...] = field(default=())
    references: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.cases:  # a run of it would make no record and exit 0, as if it had passed
            raise ConfigError(f"suite {self.name!r} has no case; a suite is at least one case")
        names = [c.name for c in self.cases]
        if dupes := sorted({n for n in names if names.count(n) > 1}):
            raise ConfigError(f"suite {self.name!r} has duplicate case names: {', '.join(dupes)}")
        by_name = {c.name: c for c in self.cases}
        for case in (c for c in self.cases if c.compare_to):
            if (other := by_name.get(case.compare_to)) is None:
                raise ConfigError(
                    f"suite {self.name!r}: case {case.name!r} compares to {case.compare_to!r}, "
                    "which is not a case of this suite"
                )
            if (other.train, other.split, other.subset_key) != (case.train, case.split, case.subset_key):
                raise ConfigError(
                    f"suite {self.name!r}: case {case.name!r} and {other.name!r} must score the same "
                    "model on the same images to be compared"
                )

    def registry_names(self) -> set[tuple[str, str]]:
        """Every (kind, name) this suite asks the registry for: its distortions,
        the generators its cases' parameters name, its reference detectors.
        Names stay names here (the harness imports no plugin); the registry
        resolves them at run time, and tests/test_suites.py checks that every
        built-in suite's names resolve."""
        names = {("distortion", c.distortion) for c in self.cases}
        names |= {("generator", str(v)) for c in self.cases for k, v in c.distortion_params if k == "generator"}
        return names | {("detector", ref) for ref in self.references}

    def case(self, name: str) -> Case:
        for c in self.cases:
            if c.name == name:
                return c
        names = [c.name for c in self.cases]
        raise ConfigError(f"suite {self.name!r} has no case {name!r}; its cases: {name_some(names, 12)}."
                          f"{did_you_mean(name, names)}")

    def definition_hash(self) -> str:
        """Hash of everything that can move a number (not the description)."""
        cases = [{k: v for k, v in c.to_dict().items() if k not in DESCRIPTIVE} for c in self.cases]
        return stable_hash({"name": self.name, "cases": cases})

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "definition_hash": self.definition_hash(),
            "cases": [c.to_dict() for c in self.cases],
        }
