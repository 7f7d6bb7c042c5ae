"""What a run is asked to do: :class:`RunRequest`, the one declaration of a run's options.

Each field is an option: its name is the flag's (``batch_size`` is ``--batch-size``), and its
metadata carry the help text and, where the command line spells a value as text
(``--dataset-option KEY=VALUE``, ``--holdout sd2,glide``), how the text is read.  ``diffzoo
run`` and ``diffzoo train`` build their options from these fields, ``diffzoo.evaluate`` and
``diffzoo.train`` take them as keywords (:meth:`RunRequest.of`), ``diffzoo run --config``
reads them from a file (:meth:`RunRequest.from_dict`), and every record stores them
(:meth:`RunRequest.to_dict`) so that ``diffzoo reproduce`` can run its row again.

This module imports no torch and no numpy: the command line reads it for ``--help``.
"""

from __future__ import annotations

import functools
import json
import numbers
import os
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from diffzoo.harness.core.errors import ConfigError, did_you_mean_each, no_value
from diffzoo.harness.core.registry import Entry
from diffzoo.harness.core.types import MAX_BOOTSTRAP, check_seed

POLICIES = ("fixed", "calibrated")
"""``--thresholds``: the card's fixed thresholds, or thresholds calibrated on ``--calibration-split``."""
DEFAULT_CALIBRATION_SPLIT = "calib"
ALLOW_TRAIN_OVERLAP = "--allow-train-overlap"
"""The flag that scores an evaluation split overlapping the model's training data instead of refusing it."""
TRAINING_ONLY = ("train", "iterations", "batch_size", "save_every", "log_every", "val_every", "pretrained")
"""The options only a training reads: released weights (``--weights released:NAME``) train nothing
and hold every tensor (no pretrained backbone is built for them)."""


def parse_options(items: list[str] | Mapping[str, Any], what: str) -> dict[str, Any]:
    """``["a=1", "b=x"]`` -> ``{"a": 1, "b": "x"}`` (JSON values where they parse); a mapping is kept.
    A key given twice is a ConfigError: which value was meant cannot be told."""
    if isinstance(items, Mapping):
        if blank := [key for key in items if not str(key).strip()]:  # as KEY=VALUE's: no key names no option
            raise ConfigError(f"{what} takes KEY=VALUE, got the key {blank[0]!r} in {dict(items)!r}")
        return dict(items)
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = str(item).partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{what} takes KEY=VALUE, got {item!r}")
        if key.strip() in out:
            raise ConfigError(f"{what} {key.strip()} is given twice; give each key once")
        try:
            out[key.strip()] = json.loads(value)
        except ValueError:
            out[key.strip()] = value
    return out


def option_keys(data: Mapping[Any, Any], where: str) -> dict[str, Any]:
    """``data``'s values by option name, a key spelt as the flag (``batch-size``, ``--batch-size``)
    or as the field (``batch_size``) alike; one option under two spellings is a ConfigError
    naming ``where``, since which value was meant cannot be told."""
    options: dict[str, Any] = {}
    spelt: dict[str, str] = {}
    for key, value in data.items():
        name = str(key).lstrip("-").replace("-", "_")
        if name in options:
            raise ConfigError(f"{where}: {spelt[name]!r} and {str(key)!r} are one option; keep one")
        options[name], spelt[name] = value, str(key)
    return options


OWN_FLAGS = {"label_space": "--labels", "extra_authentic": "--extra-authentic"}
"""Adapter options that have a command-line option of their own (:func:`with_own_flags`)."""


def with_own_flags(options: Mapping[str, Any], **given: Any) -> dict[str, Any]:
    """``options`` (``--dataset-option``) with the adapter options given by a flag of their own
    (:data:`OWN_FLAGS`; None: not given).  One given both ways is a ConfigError, as a key given
    twice is: which value was meant cannot be told."""
    # None: not given; "" (an unset variable) is refused with the other empty options, never dropped
    given = {k: v for k, v in given.items() if v is not None}
    if both := sorted(set(options) & set(given)):
        raise ConfigError(f"{OWN_FLAGS[both[0]]} and --dataset-option {both[0]}= name one option; give it once")
    return {**options, **given}


def parse_pairs(items: list[Any]) -> list[tuple[str, str]]:
    """``--holdout`` values (``sd2,glide``, ``sd2+glide`` or a pair) as editor pairs."""
    pairs = []
    for item in items:
        given = item.replace("+", ",").split(",") if isinstance(item, str) else item
        names = tuple(str(n).strip() for n in given if str(n).strip()) if isinstance(given, (list, tuple)) else ()
        if len(set(names)) != 2 or len(names) != 2:  # one pair given whole, ('sd2', 'glide'): its names are items
            raise ConfigError(f"--holdout takes two different editor names, e.g. sd2,glide; got {item!r}" + (
                f" in {items!r}: each item is one pair, as in [('sd2', 'glide')]" if len(items) > 1 else ""))
        pairs.append(names)
    return pairs


def option(default: Any = MISSING, help: str = "", *, flags: tuple[str, ...] = (), text: Any = None,
           parse: Callable[[Any], Any] | None = None) -> Any:
    """A :class:`RunRequest` field: its default, its help text, the command line's spelling
    (``flags``, default ``--field-name``; ``text``: the type the command line reads when it is
    not the field's own, and ``parse`` how that text becomes the field's value)."""
    meta = {"help": help, "flags": flags, "text": text, "parse": parse}
    if isinstance(default, (list, dict)):
        return field(default_factory=functools.partial(type(default), default), metadata=meta)  # a fresh copy
    return field(default=default, metadata=meta)


@dataclass
class RunRequest:
    detector: str | None = option(None, "Detector name (family or family.tag); required, here or in --config.",
                           flags=("--detector", "-d"))  # None: a ConfigError saying so, as --config may give it
    suite: str = option("all", "Suite name, wildcard (e.g. 'dist*'), or 'all'.", flags=("--suite", "-s"))
    dataset: str = option("mini", "Registered dataset name or a path.")
    checkpoint: list[Path] = option([], "Use this checkpoint (folder or .safetensors); one per task. With "
                                    "--weights released:NAME: the release's own file(s), or the folder holding them.")
    weights: str | None = option(
        None, "released:NAME: score the trained weights the detector's authors released, read as released and "
        "never trained (diffzoo list detectors --released); the files are found in the folder "
        "weights/released/DETECTOR/NAME of $DIFFZOO_CACHE, or given by --checkpoint.")
    train: bool | None = option(None, "Train when no checkpoint is given or cached (default: train).",
                                flags=("--train/--no-train",))
    seed: int = option(0, "Random seed, an integer from 0 to 2**63 - 1.")
    device: str = option("auto", "auto, cpu, cuda, cuda:1, ... (under torchrun: one GPU per rank).")
    strict: bool = option(False, "Stop at the first corrupt sample instead of skipping it.")
    pretrained: bool | None = option(None, "Start from the card's pretrained weights (default: card/dataset).",
                                     flags=("--pretrained/--no-pretrained",))
    iterations: int | None = option(None, "Override training iterations.")
    batch_size: int | None = option(None, "Override training batch size (global under torchrun).")
    crop_size: int | None = option(None, "Override training crop size.")
    recipe: str = option(
        "native",
        "native (default): train on crop-size crops at the images' own scale, evaluate at native size. paper: as "
        "the DiffSeg30k paper (mmseg): train on the shorter side resized to crop x 0.5-2.0 then cropped, evaluate "
        "with the shorter side at the crop size; uses --dataset-option extra_authentic=DIR (COCO negatives) when "
        "given. Use paper to reproduce the paper's Table 3. Part of the cache key and the record.")
    labels: str | None = option(None, "Label map: JSON file {'names': [...]} or comma-separated editor names.")
    extra_authentic: Path | None = option(None, "Folder of authentic images added to training with all-zero masks.")
    dataset_option: dict[str, Any] = option(
        {}, "KEY=VALUE passed to the dataset adapter (e.g. calib_fraction=0.05; a key the dataset does not take "
        "is refused, listing those it takes); repeatable.",
        text=list[str], parse=lambda items: parse_options(items, "--dataset-option"))
    save_every: int | None = option(
        None, "Training steps between resume saves (default: a tenth of the iterations; 0: never). A killed "
        "training resumes from the last one. Not part of the cache key.")
    log_every: int | None = option(
        None, "Training steps between lines of the training log and TensorBoard events (default: 50, or about "
        "100 lines for a shorter training). Not part of the cache key: the model is the same.")
    val_every: int | None = option(
        None, "Training steps between validations on the calib (else val) split, logged and plotted, never used "
        "to pick a checkpoint (default: 16000 with --recipe paper, else 0: off). Not part of the cache key.")
    workers: int | None = option(
        None, "Loader processes that read, decode and distort images while the model runs (default: "
        "$DIFFZOO_WORKERS, else min(4, CPU cores) with a GPU and the cores the model's threads leave free on the "
        "CPU, so 0 for a CPU model; 0: all in the main process). Results are the same for any number.")
    bootstrap: int = option(1000, "Bootstrap resamples for 95% CIs (0: none).")
    thresholds: str = option(
        "fixed", "fixed (the card's thresholds and the 1% area rule, docs/metrics.md) or calibrated (on "
        "--calibration-split, never an evaluated one).")
    calibration_split: str = option(DEFAULT_CALIBRATION_SPLIT, "Split to calibrate thresholds on.")
    holdout: list[tuple[str, str]] = option(
        [], "Held-out editor pair for unseen-generators, e.g. sd2,glide; repeatable (replaces the paper's pairs).",
        text=list[str], parse=parse_pairs)
    generator: dict[str, str] = option(
        {}, "NAME=CARD: use generator card CARD where a suite names NAME (e.g. the LoRA suite's "
        "sdxl.hyper-sd-8step); repeatable.",
        text=list[str], parse=lambda items: parse_options(items, "--generator"))  # each card's name as text
    eval_dataset: list[str] = option(
        [], "PATH[:SPLIT]: a dataset the cross-dataset suite evaluates the model on (default split: test, else "
        "val); repeatable. catalog:ROOT: every dataset `diffzoo data find ROOT` lists, except the run's own "
        "--dataset (same fingerprint).")
    eval_dataset_option: dict[str, Any] = option(
        {}, "KEY=VALUE: an adapter option for every --eval-dataset (e.g. kinds=partial for OpenSDI); repeatable.",
        text=list[str], parse=lambda items: parse_options(items, "--eval-dataset-option"))
    allow_train_overlap: bool = option(
        False, "Score an evaluation split that holds images the model was trained on (the same samples, or the "
        "same image content) instead of refusing it: its records say held_out false and every table marks their "
        "rows (not held out), never ranked with held-out ones.", flags=(ALLOW_TRAIN_OVERLAP,))

    def __post_init__(self) -> None:
        """Values read and checked field by field (:func:`field_value`), then every check of
        several fields that needs no dataset (a ConfigError naming the flags), before any work."""
        if self.detector is None:
            raise ConfigError("a run needs a detector: --detector NAME (or detector: NAME in --config)")
        for f in fields(self):
            setattr(self, f.name, field_value(f, getattr(self, f.name)))
        self.dataset_options()  # an adapter option given both as its own flag and as --dataset-option
        if self.eval_dataset_option and not self.eval_dataset:
            raise ConfigError("--eval-dataset-option was given, but no --eval-dataset to pass it to")
        if self.thresholds != "calibrated" and self.calibration_split != DEFAULT_CALIBRATION_SPLIT:
            raise ConfigError(f"--calibration-split {self.calibration_split} is read only with --thresholds "
                              f"calibrated (they are {self.thresholds} here)")  # never given and left unread

    # -- what the harness reads ------------------------------------------------------------
    def detector_entry(self) -> Entry:
        """The registry's entry of :attr:`detector` (an unknown name: the registry's error)."""
        from diffzoo.harness.core.plugins import get_registry

        assert self.detector is not None  # __post_init__ refuses a request without one
        return get_registry().get("detector", self.detector)

    def train_overrides(self) -> dict[str, Any]:
        """The training options given (None: not given), as the training config reads them."""
        return {name: getattr(self, name) for name in TRAIN_FIELDS}

    def check_trains_nothing(self, release: str) -> None:
        """ConfigError naming the training options given (:data:`TRAINING_ONLY`), for a run that
        scores the released weights ``release`` and trains no model (no reference detector does)."""
        values = {f: getattr(self, f.name) for f in fields(self) if f.name in TRAINING_ONLY}
        # --no-train, --no-pretrained ask what a release does anyway (False, never 0: --save-every 0 is given)
        given = [flag_of(f) for f, value in values.items() if value is not None and value is not False]
        if given:
            one = len(given) == 1
            raise ConfigError(f"{', '.join(given)} {'is' if one else 'are'} read only by a training, and none is run "
                              f"here: released weights {release} are scored as they are; "
                              f"drop {'it' if one else 'them'}")

    def dataset_options(self) -> dict[str, Any]:
        """The dataset adapter's options: ``--dataset-option`` with ``--labels`` (``label_space``)
        and ``--extra-authentic``."""
        return with_own_flags(self.dataset_option, label_space=self.labels, extra_authentic=self.extra_authentic)

    def dataset_paths(self) -> list[tuple[str, str]]:
        """``(flag, path)`` of each dataset the request names by a path (``--dataset`` first, then
        each ``--eval-dataset``, a catalog's by its folder), not by a registered name or hub id."""
        from diffzoo.harness.core.plugins import get_registry
        from diffzoo.harness.data.hfsource import is_hub_id

        datasets = [("--dataset", self.dataset)] + [
            ("--eval-dataset", root if (root := catalog_root(spec)) is not None else eval_dataset_spec(spec)[0])
            for spec in self.eval_dataset]
        return [(flag, spec) for flag, spec in datasets
                if not get_registry().has("dataset", spec) and not is_hub_id(spec)]

    def dataset_home(self) -> Path | None:
        """The folder of a ``--dataset`` given as a path (a zip's: the folder it lies in), from
        which an adapter option's relative path is read too; None for a name or hub id."""
        named = self.dataset_paths()[:1] == [("--dataset", self.dataset)]
        data = Path(os.path.expanduser(self.dataset)) if named else None
        return None if data is None else data if data.is_dir() else data.parent

    def paths_not_found(self) -> list[tuple[str, Path]]:
        """The paths the request names that are not found: each as ``--flag VALUE`` and as the
        path.  A registered dataset name and a hub id are not paths; ``--extra-authentic`` and a
        ``--labels`` file (or their ``--dataset-option``) are looked for from the dataset's folder
        too, by the rule the adapter reads them by (:func:`~diffzoo.harness.data.base.option_places`);
        another dataset option's value is one where it is absolute (``split_file=/data/s.json``: a
        relative one may name a file of the dataset's folder, which only its adapter reads)."""
        from diffzoo.harness.core.fsutil import given_as
        from diffzoo.harness.data.base import option_places
        from diffzoo.harness.data.labelmaps import names_a_file

        named, home = self.dataset_paths(), self.dataset_home()
        # --labels and --extra-authentic, given as their flag or as --dataset-option KEY=
        adapter = self.dataset_options()
        own = [(f"--dataset-option {key}=" if key in self.dataset_option else flag, os.fspath(value), home)
               for key, flag in OWN_FLAGS.items()
               if isinstance(value := adapter.get(key), (str, os.PathLike)) and os.fspath(value)
               and (key != "label_space" or names_a_file(value, home))]
        options = [(f"{flag} {key}=", value, None)
                   for flag, given in (("--dataset-option", self.dataset_option),
                                       ("--eval-dataset-option", self.eval_dataset_option))
                   for key, value in given.items() if not (given is self.dataset_option and key in OWN_FLAGS)
                   and isinstance(value, str) and value and Path(os.path.expanduser(value)).is_absolute()]
        paths: list[tuple[str, str, Path | None]] = [
            *((flag, spec, None) for flag, spec in named), *options, *own,
            *(("--checkpoint", str(c), None) for c in self.checkpoint)]
        return [(given_as(flag, value), Path(os.path.expanduser(value)))
                for flag, value, at in paths if value and not option_places(value, at)[1]]

    # -- as data ---------------------------------------------------------------------------
    @classmethod
    def of(cls, **options: Any) -> RunRequest:
        """A request from keyword options (the flag names); an unknown one is a ConfigError
        naming the closest option and listing them all."""
        check_known(options, [f.name for f in fields(cls)])  # first: detectors= is a misspelt detector=, not none
        return cls(**options)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], **changes: Any) -> RunRequest:
        """A request from :meth:`to_dict`'s form (a record's ``request``, a ``--config`` file), with ``changes``."""
        if not isinstance(data, Mapping):  # dict() would read a list of pairs, or an empty one as no detector
            raise ConfigError("RunRequest.from_dict takes a mapping of option names to values (to_dict's form), "
                              f"got {type(data).__name__}")
        return cls.of(**{**dict(data), **changes})

    def to_dict(self) -> dict[str, Any]:
        """Flag name -> value, JSON-able (paths as text, pairs as lists)."""
        return json.loads(json.dumps(asdict(self), default=str))


def check_known(options: Iterable[str], valid: Iterable[str]) -> None:
    """A ConfigError naming each of ``options`` that is none of ``valid`` (a request's fields, an
    entry point's own keywords), the closest of ``valid`` to it, and listing them all."""
    valid = sorted(set(valid))
    if unknown := sorted(set(options) - set(valid)):
        raise ConfigError(f"unknown option(s) {', '.join(unknown)}; options are: {', '.join(valid)}."
                          f"{did_you_mean_each(unknown, valid)}")


def check_threshold_policy(policy: str) -> str:
    """``policy`` if it is one of :data:`POLICIES`; else a ConfigError naming ``--thresholds``."""
    if policy not in POLICIES:
        raise ConfigError(f"--thresholds {policy!r}: choose one of {', '.join(POLICIES)}")
    return policy


def check_suite_given(suite: str) -> None:
    """ConfigError for an empty ``--suite`` (an unset shell variable): a run of no suite is never
    what was meant, and no default stands in for it.  (A request of no suite, ``""``, is
    ``diffzoo train``'s, which evaluates nothing.)"""
    if not suite.replace(",", "").strip():
        raise ConfigError("--suite is empty: give a suite name, a pattern or all (diffzoo list suites)")


def _listed(value: Any) -> Any:
    """A repeatable option's value: one given alone (``holdout: sd2,glide`` in a file) as a list of it."""
    return [value] if isinstance(value, (str, Path)) else value


def flags_of(f: Any) -> tuple[str, ...]:
    """The command line's flags of :class:`RunRequest` field ``f`` (default ``--field-name``)."""
    return f.metadata["flags"] or (f"--{f.name.replace('_', '-')}",)


def flag_of(f: Any) -> str:
    """The flag that names :class:`RunRequest` field ``f`` in a message: ``--train`` of ``--train/--no-train``."""
    return flags_of(f)[0].split("/")[0]


def as_text(value: Any) -> str | None:
    """A value given where text is asked, as the command line spells it: a path or a number as
    its text, a list of numbers or texts as its comma-separated text (``--suite
    standard,distortions``); None for any other kind."""
    if isinstance(value, os.PathLike):  # diffzoo.evaluate(dataset=Path(...))
        return os.fspath(value) if isinstance(os.fspath(value), str) else None
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in value):
        return ",".join(map(str, value))
    return str(value) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else None


@functools.cache
def _field_types() -> dict[str, Any]:
    return typing.get_type_hints(RunRequest)


_KINDS = {str: "text", int: "an integer", float: "a number", bool: "true or false", Path: "a path", list: "a list",
          tuple: "a pair", dict: "KEY=VALUE options (a mapping)"}
"""The kinds of value :func:`typed_value` checks, and what each is called when a value of another
kind is refused."""


TRAIN_FIELDS = ("iterations", "batch_size", "crop_size", "recipe")
"""The request fields that override the card's training config (:meth:`RunRequest.train_overrides`),
each checked by the config's own rule."""


def field_value(f: Any, value: Any) -> Any:
    """``value`` of :class:`RunRequest` field ``f`` as the field holds it: text as the command line
    or a --config file gives it, parsed where the field parses text, then read into the field's
    type (:func:`typed_value`) and checked by the field's own rule (:func:`_check_value`); a
    ConfigError naming its flag for a value of another kind or one the rule refuses."""
    flag, hint = flag_of(f), _field_types()[f.name]
    # a mapping is the parsed form of a field holding one alone: holdout={} is refused by its kind, never read by keys
    if f.metadata["parse"] is not None and not (isinstance(value, Mapping) and typing.get_origin(hint) is not dict):
        value = _listed(value)
        if not isinstance(value, (list, tuple, Mapping)):
            raise ConfigError(f"{flag} takes {_KINDS[list]}, got {value!r}")
        value = f.metadata["parse"](value)
    value = typed_value(flag, value, hint)
    _check_value(f.name, flag, value)
    return value


def _check_value(name: str, flag: str, value: Any) -> None:
    """A ConfigError naming ``flag`` where ``value`` of :class:`RunRequest` field ``name`` (of the
    field's type) breaks the rule of the code that uses it (seeds, devices, training configs,
    loader workers, the training loop's cadence); fields of no rule of their own pass."""
    from diffzoo.harness.core.device import device_form
    from diffzoo.harness.core.parallel import check_workers
    from diffzoo.harness.core.train_config import TrainConfig
    from diffzoo.harness.data.imageio import MAX_PIXELS_ENV, max_pixels
    from diffzoo.harness.models.releases import release_name
    from diffzoo.harness.models.resume import check_every

    if name == "seed":
        check_seed(value, flag)
    elif name == "device":  # its form alone: the machine that runs it may be another (a sweep's job)
        device_form(value)
    elif name == "weights":
        release_name(value)  # released:NAME, or nothing
    elif name == "thresholds":
        check_threshold_policy(value)
    elif name == "calibration_split" and not value.strip():  # an unset variable: no split is named so
        raise no_value(f"{flag} {value!r}")
    elif name == "bootstrap" and not 0 <= value <= MAX_BOOTSTRAP:
        raise ConfigError(f"{flag} {value}: give the number of resamples, 0 to {MAX_BOOTSTRAP:,} "
                          "(0: no confidence intervals; a 95% interval settles within a few thousand)")
    elif name in TRAIN_FIELDS:
        TrainConfig().with_overrides(**{name: value})
        if name == "crop_size" and value is not None and value**2 > max_pixels():  # no image could fill it
            raise ConfigError(f"{flag} {value}: a {value} x {value} px crop exceeds "
                              f"the {max_pixels():,}-pixel limit on images (${MAX_PIXELS_ENV})")
    elif name == "workers" and value is not None:  # a bad --workers fails before torchrun's group is joined
        check_workers(value, flag)
    elif name in ("save_every", "log_every", "val_every"):
        check_every(value, flag, minimum=int(name == "log_every"))


def typed_value(flag: str, value: Any, hint: Any) -> Any:
    """``value`` as a parameter of type ``hint`` holds it (where text is asked, :func:`as_text`;
    text where a path is, as that path; one value where a list is, as a list of it); a
    ConfigError naming ``flag`` for a value of another kind (text where a number is asked, a
    mapping where text is), which a --config file, a keyword or a ``KEY=VALUE`` option can give
    and no code after this would name.  An annotation of another kind (a union of several
    kinds, a callable, a class) takes the value as given."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):  # X | None
        arms = [a for a in args if a is not type(None)]
        if value is None and len(arms) < len(args):
            return None
        kinds = tuple(typing.get_origin(a) or a for a in arms)
        if len(arms) != 1 and (str not in kinds or not all(isinstance(k, type) for k in kinds)
                               or isinstance(value, kinds)):
            return value  # a value of one of its kinds, or a union typed_value does not check
        # str | os.PathLike (a dataset option's path): another value is read as text is (split_file=2024)
        hint = arms[0] if len(arms) == 1 else str
        args = typing.get_args(hint)
    kind = typing.get_origin(hint) or hint
    if kind not in _KINDS:
        return value
    if kind is list:
        listed, each = _listed(value), args[0] if args else Any
        if isinstance(listed, (set, frozenset)):  # evaluate(only={...}): a set, in one fixed order
            listed = sorted(listed, key=repr)
        pairs = typing.get_origin(each) is tuple  # one pair alone, ('sd2', 'glide'), is no list of pairs
        if isinstance(listed, (list, tuple)) and (not pairs or all(isinstance(v, (list, tuple)) for v in listed)):
            return [typed_value(flag, v, each) for v in listed]
        raise ConfigError(f"{flag} takes {_KINDS[list]}{' of pairs' if pairs else ''}, got {value!r}")
    elif kind is tuple:
        if isinstance(value, (list, tuple)) and args and args[-1] is Ellipsis:
            return tuple(typed_value(flag, v, args[0]) for v in value)
        if isinstance(value, (list, tuple)) and len(value) == len(args):
            return tuple(typed_value(flag, v, a) for v, a in zip(value, args))
    elif kind is dict:
        if isinstance(value, Mapping):
            return {str(k): typed_value(flag, v, args[1] if len(args) == 2 else Any) for k, v in value.items()}
    elif kind is bool and isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"  # KEY=True, as Python spells it (JSON reads true alone)
    elif isinstance(value, bool):  # true or false: never a number, never text
        if kind is bool:
            return value
    elif kind in (int, float):
        if isinstance(value, numbers.Integral):  # numpy's too, held as Python's: a record stores it as JSON
            return int(value)
        if kind is float and isinstance(value, float):
            return value
    elif kind is str:
        if (text := as_text(value)) is not None:
            return text
    elif kind is Path:
        if value == "":  # an unset variable: pathlib would read it as the current folder
            raise no_value(f"{flag} ''")
        if isinstance(value, (str, Path)):
            return Path(value)
    raise ConfigError(f"{flag} takes {_KINDS[kind]}, got {value!r}")


CATALOG_PREFIX = "catalog:"
"""``--eval-dataset catalog:ROOT``: every dataset found under ROOT (diffzoo/harness/run/catalog.py)."""


def catalog_root(spec: str) -> str | None:
    """ROOT of an ``--eval-dataset catalog:ROOT`` value; None for any other value (a path
    that exists is taken whole, even one named ``catalog:...``)."""
    if not spec.startswith(CATALOG_PREFIX) or os.path.exists(os.path.expanduser(spec)):
        return None
    return spec[len(CATALOG_PREFIX):]


def eval_dataset_spec(spec: str) -> tuple[str, str | None]:
    """An ``--eval-dataset`` value, ``PATH_OR_NAME[:SPLIT]``, as (dataset, split or None):
    a path that exists is taken whole (its name may hold a colon); nothing before or after the
    colon (``$DATA:$SPLIT``, a variable unset) is a ConfigError, never the default split unsaid."""
    if os.path.exists(os.path.expanduser(spec)) or ":" not in spec:
        return spec, None
    head, _, split = spec.rpartition(":")
    if not head.strip() or not split.strip():
        side = "no dataset before" if not head.strip() else "no split after"
        raise ConfigError(f"--eval-dataset {spec!r} names {side} its ':' (an unset shell variable?); give "
                          "PATH_OR_NAME:SPLIT, or PATH_OR_NAME alone for its default split")
    return head, split
