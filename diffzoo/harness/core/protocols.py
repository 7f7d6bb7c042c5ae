"""The extension protocols: detectors, generators and datasets.

Plugins implement these; the harness only ever talks to these interfaces.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from diffzoo.harness.core.cards import DetectorCard, GeneratorCard
from diffzoo.harness.core.types import DetectionOutput, LabelSpace, Sample

if TYPE_CHECKING:  # pragma: no cover - annotations only: `import diffzoo` loads neither
    import numpy as np
    import torch

    from diffzoo.harness.core.train_config import TrainConfig


class Detector(ABC):
    """A model that localizes (and optionally attributes) edits.

    What the harness calls, and nothing else (docs/plugins.md, "The
    Detector protocol"; ``diffzoo plugins check NAME`` tests each point):

    - ``card``, ``task`` and ``label_space`` attributes, fixed at construction;
      ``task`` is ``binary`` (one output channel), ``semantic`` (one per class
      of ``label_space``) or ``classification`` (image score only);
    - ``predict(images)``: a float tensor B x 3 x H x W, RGB in [0, 1], any
      H and W; returns a :class:`DetectionOutput` for exactly those B images
      at that H x W (checked by the harness before any metric sees it);
    - ``fit(train, config, progress)``: ``train`` is a
      :class:`~diffzoo.harness.models.segmenter.TrainData` (dataset + ids),
      ``config`` a TrainConfig; calls ``progress(step, loss)`` once per
      step; returns a JSON-able dict (the training log).  Not called for a
      card with ``trainable=False``;
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
    def fit(
        self,
        train: Any,
        config: TrainConfig,
        progress: Callable[[int, float], None] | None = None,
    ) -> dict[str, Any]:
        """Train on ``train`` (dataset + ids); return a JSON-able training log."""

    @abstractmethod
    def save(self, path: Path, extra: dict[str, Any] | None = None) -> Path:
        """Write weights (safetensors) and metadata JSON (with ``extra``) into
        folder ``path``; return the weights file."""

    @abstractmethod
    def load(self, path: Path) -> dict[str, Any]:
        """Load weights written by :meth:`save` (never unpickles); return the
        metadata, including ``"sha256"`` of the weights file."""

    def to(self, device: str) -> Detector:  # pragma: no cover - trivial default
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

    def iter_split(self, split: str) -> Iterator[Sample]:
        for sid in self.ids(split):
            yield self.load(sid)
