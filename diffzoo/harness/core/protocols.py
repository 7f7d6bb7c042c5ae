"""The extension protocols: detectors (and what their factories are given),
generators and datasets.

Plugins implement these; the harness only ever talks to these interfaces.
"""

from __future__ import annotations

import inspect
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from diffzoo.harness.core.cards import DetectorCard, GeneratorCard
from diffzoo.harness.core.errors import PluginError, plugin_code
from diffzoo.harness.core.types import BINARY, DetectionOutput, LabelSpace, Sample

if TYPE_CHECKING:  # pragma: no cover - annotations only: `import diffzoo` loads neither
    import numpy as np
    import torch

    from diffzoo.harness.core.train_config import TrainConfig


Report = Callable[[int, float], None]
"""How a training reports each step: ``report(step, loss)`` (the harness checks the loss and
shows the progress); ``fit`` receives it as its ``progress`` argument."""


@dataclass(frozen=True)
class DetectorBuild:
    """What a registered detector factory is called with: ``factory(build) -> Detector``.

    One object rather than keyword arguments, so that a field added later reaches the
    factories that read it without breaking the others.  ``task`` is ``binary`` (one
    output channel), ``semantic`` (one per class of ``label_space``) or ``classification``
    (image score only); ``pretrained``: load the card's pretrained weights.
    """

    card: DetectorCard
    task: str
    label_space: LabelSpace = BINARY
    pretrained: bool = False


KEYWORD_FORM = "(card=, task=, label_space=, pretrained=)"
"""The factory form before :class:`DetectorBuild`, still called for one release, warning."""


def _deprecated(factory: object, what: str) -> None:
    name = f"{getattr(factory, '__module__', '?')}.{getattr(factory, '__qualname__', factory)}"
    warnings.warn(f"detector factory {name} {what} the keyword form {KEYWORD_FORM}, which goes in the next "
                  "release: take one diffzoo.DetectorBuild instead (docs/plugins.md, register_detectors)",
                  DeprecationWarning, stacklevel=4)


def takes_keyword_form(factory: Callable[..., Any]) -> bool:
    """Whether ``factory`` is written for :data:`KEYWORD_FORM`: it names a ``card``
    parameter, or takes nothing but ``**keywords``."""
    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):  # no signature to read (a C callable): the current form
        return False
    return any(p.name == "card" for p in params) or (any(p.kind is p.VAR_KEYWORD for p in params)
                                                     and all(p.kind in (p.VAR_KEYWORD, p.KEYWORD_ONLY) for p in params))


def build_detector(factory: Callable[..., Detector], build: DetectorBuild, what: str = "the factory") -> Detector:
    """``factory(build)``; a factory of the keyword form is called with keywords, warning
    (a DeprecationWarning naming it).  Anything but a Detector is a PluginError naming ``what``."""
    if takes_keyword_form(factory):
        _deprecated(factory, "takes")
        det = factory(card=build.card, task=build.task, label_space=build.label_space, pretrained=build.pretrained)
    else:
        det = factory(build)
    if not isinstance(det, Detector):
        missing = [m for m in ("predict", "fit", "save", "load") if not callable(getattr(det, m, None))]
        raise PluginError(f"{what} returned {type(det).__name__}, not a diffzoo.Detector"
                          + (f"; it lacks {', '.join(missing)}" if missing else ""))
    return det


def moved_detector(det: Detector, device: str | torch.device) -> Detector:
    """``det.to(device)``: a PluginError unless it returns a Detector (``return self``), so a
    ``to`` that returns None is named where it is called, not as a later AttributeError."""
    moved = det.to(device)
    if not isinstance(moved, Detector):
        raise PluginError(f"{type(det).__name__}.to({str(device)!r}) returned {type(moved).__name__}, "
                          "not the detector: end it with `return self`")
    return moved


def as_build(cls: type, build: DetectorBuild | DetectorCard | None = None, task: str | None = None,
             label_space: LabelSpace | None = None, pretrained: bool = False,
             card: DetectorCard | None = None) -> DetectorBuild:
    """``build``, for a base class's constructor: for one release it also accepts the keyword
    form's arguments (card, task, label_space, pretrained; by position or name), warning;
    ``task`` defaults to the card's first."""
    if isinstance(build, DetectorBuild):
        return build
    card = card or build
    if not isinstance(card, DetectorCard):
        raise TypeError(f"{cls.__name__} is built from one DetectorBuild, not {type(card).__name__}")
    _deprecated(cls, "was called with")
    return DetectorBuild(card, task or card.tasks[0], label_space or BINARY, pretrained)


class Detector(ABC):
    """A model that localizes (and optionally attributes) edits.

    What the harness calls, and nothing else (docs/plugins.md, "The
    Detector protocol"; ``diffzoo plugins check NAME`` tests each point):

    - built by its registered factory from a :class:`DetectorBuild`;
    - ``card``, ``task`` and ``label_space`` attributes, fixed at construction
      to the build's;
    - ``predict(images)``: a float tensor B x 3 x H x W, RGB in [0, 1], any
      H and W; returns a :class:`DetectionOutput` for exactly those B images
      at that H x W (checked by the harness before any metric sees it);
    - ``fit(train, config, progress)``: ``train`` is a
      :class:`~diffzoo.harness.models.train_data.TrainData` (dataset + ids),
      ``config`` a TrainConfig; calls ``progress(step, loss)`` (a
      :data:`Report`) once per step; returns a JSON-able dict (the training
      log).  Not called for a card with ``trainable=False``;
    - ``save(path, extra=None)``: writes the checkpoint into the folder
      ``path`` (safetensors weights + JSON metadata, with ``extra`` merged
      into the metadata) and returns the weights file;
    - ``load(path)``: reads what ``save`` wrote (never unpickles) and returns
      the metadata dict, which must hold ``"sha256"``: the hex sha256 of the
      weights file (:func:`~diffzoo.harness.models.checkpoints.save_checkpoint` and
      :func:`~diffzoo.harness.models.checkpoints.load_checkpoint` do both);
    - ``to(device)``: moves the model, returns the detector.
    """

    card: DetectorCard
    task: str
    label_space: LabelSpace

    @abstractmethod
    def predict(self, images: torch.Tensor) -> DetectionOutput: ...

    @abstractmethod
    def fit(self, train: Any, config: TrainConfig, progress: Report | None = None) -> dict[str, Any]:
        """Train on ``train`` (dataset + ids); return a JSON-able training log."""

    @abstractmethod
    def save(self, path: Path, extra: dict[str, Any] | None = None) -> Path:
        """Write weights (safetensors) and metadata JSON (with ``extra``) into
        folder ``path``; return the weights file."""

    @abstractmethod
    def load(self, path: Path) -> dict[str, Any]:
        """Load weights written by :meth:`save` (never unpickles); return the
        metadata, including ``"sha256"`` of the weights file."""

    def to(self, device: str | torch.device) -> Detector:  # pragma: no cover - trivial default
        return self


@dataclass
class EditResult:
    """An edited image, the region that really changed, and how it was made."""

    image: np.ndarray  # H x W x 3 uint8
    changed: np.ndarray  # H x W bool: pixels that may differ from the input
    metadata: dict[str, Any] = field(default_factory=dict)


class Generator(ABC):
    """An image editor.

    Mask editors change only ``mask`` (after compositing); instruction editors
    take ``mask=None`` and report the changed region they produced.
    """

    card: GeneratorCard

    @abstractmethod
    def edit(
        self, image: np.ndarray, mask: np.ndarray | None, prompt: str, seed: int
    ) -> EditResult: ...


class Dataset(ABC):
    """A labelled image collection with named splits.

    ``load`` raises :class:`~diffzoo.harness.core.errors.CorruptSampleError` for a
    sample that cannot be read, so that runs can skip and count it.
    """

    name: str
    label_space: LabelSpace

    # What a dataset may say about how a run should treat it; every run reads these, so each
    # has a default here and an adapter sets only what it needs.
    notice: str | None = None
    """One line a run prints with its results (e.g. ``mini``: its numbers say nothing about real editors)."""
    training_overrides: Mapping[str, Any] = MappingProxyType({})
    """Training options the dataset recommends over a card's recipe (``mini``: a CPU-sized budget;
    ``lr_scale`` multiplies the card's learning rate); the user's options override them."""
    generator_substitutes: Mapping[str, str] = MappingProxyType({})
    """Generator a suite names -> the card to run instead (``mini``: tiny offline stand-ins)."""
    reference_substitutes: Mapping[str, str] = MappingProxyType({})
    """Reference detector a suite names -> the detector to run instead (``mini``: a tiny stand-in)."""

    @abstractmethod
    def splits(self) -> list[str]: ...

    @abstractmethod
    def ids(self, split: str) -> list[str]: ...

    @abstractmethod
    def load(self, sample_id: str) -> Sample: ...

    @abstractmethod
    def fingerprint(self) -> str:
        """Stable content hash: equal data gives an equal fingerprint."""

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "label_space": list(self.label_space.names)}


def checked_dataset(dataset: Any, what: str) -> Dataset:
    """``dataset`` as a factory returned it, checked once where it is opened (``what``: the dataset
    and its plugin): a Dataset whose ``fingerprint()`` is a string, each split's ``ids()`` a list of
    strings and whose first sample loads as a Sample (a load that raises is the run's to skip or
    report).  Anything else is a PluginError naming ``what`` and the call, never a TypeError later,
    a detector's error or an invalid record after training."""
    if not isinstance(dataset, Dataset):
        raise PluginError(f"{what}: its factory returned {type(dataset).__name__}, not a diffzoo.Dataset")

    def refused(call: str, got: Any, want: str) -> PluginError:
        return PluginError(f"{what}: its {call} returned {type(got).__name__}, not {want}")
    with plugin_code(f"{what}: its dataset"):
        if not isinstance(fingerprint := dataset.fingerprint(), str):
            raise refused("fingerprint()", fingerprint, "a string")
        ids = {split: dataset.ids(split) for split in dataset.splits()}
        for split, got in ids.items():
            if not isinstance(got, (list, tuple)) or not all(isinstance(i, str) for i in got):
                raise refused(f"ids({split!r})", got, "a list of sample ids (strings)")
        first = next((got[0] for got in ids.values() if got), None)
        try:
            sample = None if first is None else dataset.load(first)
        except Exception:  # noqa: BLE001 - only what a load returns is checked here
            sample = None
        if sample is not None and not isinstance(sample, Sample):
            raise refused(f"load({first!r})", sample, "a diffzoo.Sample")
    return dataset
