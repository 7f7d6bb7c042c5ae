"""Core value types: label spaces, samples, edit records, detector outputs."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from diffzoo.harness.core.errors import ConfigError, DataError, did_you_mean

if TYPE_CHECKING:  # annotations only: `import diffzoo` (and `diffzoo list`) loads no numpy
    import numpy as np

IGNORE_INDEX = 255
"""Label value that metrics and losses skip (docs/metrics.md)."""

SLICE_SEPARATOR = "@"
"""Slice metrics are named ``<metric>@<key>=<value>`` (e.g. ``mIoU@turns=2``), so no class or
registered name holds it: ``IoU.a@b`` would read as ``IoU.a`` sliced by ``b``."""
SLICED = "which names a metric's slice (IoU.a@b reads as IoU.a sliced by b)"
"""Why a name may not hold :data:`SLICE_SEPARATOR`, as refusals say it."""

MAX_SEED = 2**63 - 1
"""Seeds are integers in [0, MAX_SEED]: every RNG diffzoo seeds (torch, numpy,
Python) takes them, and they survive JSON readers that use signed 64-bit ints."""

MAX_BOOTSTRAP = 100_000
"""The most bootstrap resamples taken: a 95% interval settles within a few thousand, and each
resample is a row of every metric held until the end (10**9 of them are 171 GiB)."""


def nfc(text: str) -> str:
    """``text`` in Unicode NFC, the one form names are read in (macOS stores an accent
    decomposed, most other systems composed); ASCII text is unchanged."""
    return unicodedata.normalize("NFC", text)


def shareable(array: np.ndarray) -> np.ndarray:
    """``array`` as one ``torch.from_numpy`` may share: C-contiguous and writable (a read-only
    array, such as ``np.asarray(PIL image)`` a plugin's adapter or distortion returns, is copied:
    torch warns on every use of one)."""
    import numpy  # here: importing the types loads no numpy (the CLI's start)

    array = numpy.ascontiguousarray(array)
    return array if array.flags.writeable else array.copy()


def check_seed(seed: object, what: str = "--seed") -> int:
    """``seed`` if it is an integer in [0, MAX_SEED]; else a ConfigError naming ``what``."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise ConfigError(f"{what} {seed!r} is not a valid seed: give an integer from 0 to 2**63 - 1 "
                          f"({MAX_SEED}), e.g. {what} 0")
    return seed


class Task(StrEnum):
    """What a model is trained for and predicts: a card's ``tasks``, ``TrainSpec.task``,
    ``Detector.task``.  Members are their JSON values (``Task.BINARY == "binary"``)."""

    BINARY = "binary"  # edited or not, per pixel
    SEMANTIC = "semantic"  # which editor, per pixel
    CLASSIFICATION = "classification"  # edited or not, per image (no pixel output)


TASKS: tuple[str, ...] = tuple(Task)
PIXEL_TASKS: tuple[str, ...] = (Task.BINARY, Task.SEMANTIC)


def check_task(task: str) -> None:
    """A ConfigError naming ``--task`` unless ``task`` is one of :data:`TASKS`."""
    if task not in TASKS:
        raise ConfigError(f"--task {task!r} is not a task.{did_you_mean(task, [str(t) for t in TASKS])} "
                          f"Tasks: {', '.join(TASKS)}")


class CaseTask(StrEnum):
    """What a case reports: ``Case.task``, and so a record's ``case.task``."""

    BINARY = "binary"  # pixel metrics of edited vs unedited
    SEMANTIC = "semantic"  # pixel metrics per editor, attribution
    IMAGE = "image"  # image-level detection


class StateKey(StrEnum):
    """The metric states one pass fills, by what they score."""

    BINARY = "binary"  # pixels edited or not; images judged by the predicted edited area (a classifier: its score)
    SEMANTIC = "semantic"  # pixels per editor
    OWN_SCORE = "binary+score"
    """The same pixels as ``binary``, images judged by the detector's own image score: filled for a
    detector that gives both (``DetectorCard.gives_image_score``)."""


class JudgedBy(StrEnum):
    """How a case's images are judged edited: by the case's own rule (pixels; an image case by
    the predicted edited area, a classifier by its score), or by the own image score of a
    detector that also gives pixels (the second image row, ``NAME (own image score)``)."""

    RULE = "rule"
    OWN_SCORE = "own_score"


@dataclass(frozen=True)
class LabelSpace:
    """Ordered class names: ``background`` first, then one class per editor.

    The index of a name is the value it has in label maps.  The binary view
    maps every editor to ``edited``.
    """

    names: tuple[str, ...]

    def __post_init__(self) -> None:
        names = tuple(self.names)
        object.__setattr__(self, "names", names)
        if not names or names[0] != "background":
            raise DataError(f"a label space starts with 'background', got {list(names)}")
        if len(set(names)) != len(names):
            raise DataError(f"label space has duplicate names: {list(names)}")
        if len(names) > IGNORE_INDEX:
            raise DataError(f"at most {IGNORE_INDEX} classes fit in a uint8 label map")

    @classmethod
    def from_editors(cls, editors: Sequence[str]) -> LabelSpace:
        """``background``, then one class per editor named as read: spaces stripped, Unicode NFC.
        A DataError for a name that is empty, the background class in any case, one holding a control
        character (a line break would split every line that names the class) or :data:`SLICE_SEPARATOR`,
        or another's."""
        read: dict[str, str] = {}  # the name read -> the name as given
        for given in editors:
            name = cls.read(given)
            why = ("it is empty" if not name
                   else "it holds a control character (a line break, a tab)"
                   if any(unicodedata.category(c) == "Cc" for c in name)
                   else "background is label 0, the unedited pixels" if name.casefold() == "background"
                   else f"it holds {SLICE_SEPARATOR!r}, {SLICED}" if SLICE_SEPARATOR in name else None)
            if why:
                raise DataError(f"editor {given!r} cannot name a class: {why}")
            if name in read:
                raise DataError(f"editors {ascii(read[name])} and {ascii(given)} are one class, {name!r} (read with "
                                "spaces stripped, in Unicode NFC): name each editor once")
            read[name] = given
        return cls(("background", *read))

    @staticmethod
    def read(name: str) -> str:
        """A class name as label spaces read it: spaces stripped, Unicode NFC."""
        return nfc(name.strip())

    @property
    def editors(self) -> tuple[str, ...]:
        return self.names[1:]

    def has_editor(self, name: str) -> bool:
        """Whether ``name``, read as :meth:`read` reads it, is one of the editors."""
        return self.read(name) in self.editors

    @property
    def num_classes(self) -> int:
        return len(self.names)

    @property
    def is_binary(self) -> bool:
        return self.names == BINARY.names

    def index(self, name: str) -> int:
        """The value of class ``name``, read as :meth:`read` reads it."""
        try:
            return self.names.index(self.read(name))
        except ValueError:
            raise DataError(f"{name!r} is not in the label space {list(self.names)}") from None

    def to_binary_map(self, label_map: np.ndarray) -> np.ndarray:
        """Every editor -> 1, background stays 0, ignore stays 255."""
        out = (label_map > 0).astype("uint8")
        out[label_map == IGNORE_INDEX] = IGNORE_INDEX
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"names": list(self.names)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LabelSpace:
        return cls(tuple(d["names"]))


BINARY = LabelSpace(("background", "edited"))


@dataclass(frozen=True)
class EditRecord:
    """One edit turn: who edited, with what prompt, what kind of edit, where.

    ``region`` is a bounding box ``[x0, y0, x1, y1]`` in pixels (exclusive end)
    or ``None`` when unknown.
    """

    editor: str
    prompt: str = ""
    edit_type: str = "unknown"
    region: tuple[int, int, int, int] | None = None
    seed: int | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["region"] = list(self.region) if self.region is not None else None
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EditRecord:
        region = d.get("region")
        return cls(
            editor=d["editor"],
            prompt=d.get("prompt", ""),
            edit_type=d.get("edit_type", "unknown"),
            region=tuple(region) if region is not None else None,
            seed=d.get("seed"),
        )


@dataclass(frozen=True)
class SampleMeta:
    """What is known about a sample besides its pixels.

    ``base`` is ``real``, ``ai`` or ``unknown`` (DiffSeg30k does not ship it).
    ``turns`` is empty for authentic images and when per-edit metadata is absent.
    """

    id: str
    base: str = "unknown"
    turns: tuple[EditRecord, ...] = ()
    source: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "turns": [t.to_dict() for t in self.turns]}  # the fields in order, turns as JSON

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SampleMeta:
        return cls(
            id=str(d["id"]),
            base=d.get("base", "unknown"),
            turns=tuple(EditRecord.from_dict(t) for t in d.get("turns", ())),
            source=d.get("source", ""),
        )


def check_image(image: np.ndarray, what: str) -> None:
    """A DataError unless ``image`` is a non-empty H x W x 3 uint8 RGB array (``what`` names it)."""
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != "uint8" or not image.size:
        raise DataError(f"{what} must be a non-empty H x W x 3 uint8 RGB array, got {image.shape} {image.dtype}")


@dataclass
class Sample:
    """An image (H x W x 3 uint8 RGB), its label map (H x W uint8) and metadata."""

    image: np.ndarray
    label: np.ndarray
    meta: SampleMeta

    def __post_init__(self) -> None:
        check_image(self.image, f"sample {self.meta.id}: image")
        if self.label.shape != self.image.shape[:2]:
            raise DataError(
                f"sample {self.meta.id}: mask size {self.label.shape[::-1]} differs from "
                f"image size {self.image.shape[1::-1]} (W x H); masks must match their image"
            )

    @property
    def is_edited(self) -> bool:
        return bool(((self.label > 0) & (self.label != IGNORE_INDEX)).any())


@dataclass(frozen=True)
class DetectionOutput:
    """What a detector returns for a batch of B images of H x W.

    One pixel output, in the form the detector has (the harness checks it,
    see diffzoo/harness/core/outputs.py and docs/plugins.md):

    - ``mask_logits``: B x C x H x W float logits at the input resolution
      (C = 1 for a binary detector: the logit of ``edited``; C = number of
      classes for a semantic one);
    - ``mask_probs``: the same shape, probabilities in [0, 1];
    - ``labels``: B x H x W integer class indices (hard masks only).

    ``image_score``: B probabilities that the image is edited (required for
    a classification detector).  At least one output is set.
    """

    mask_logits: Any = None  # torch.Tensor; typed loosely so this module needs no torch
    image_score: Any = None
    extras: dict[str, Any] = field(default_factory=dict)
    mask_probs: Any = None
    labels: Any = None

    def __post_init__(self) -> None:
        if all(v is None for v in (self.mask_logits, self.mask_probs, self.labels, self.image_score)):
            raise ValueError("DetectionOutput needs mask_logits, mask_probs, labels or image_score")
