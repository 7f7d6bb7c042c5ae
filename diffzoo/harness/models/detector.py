"""The base of every in-tree torch detector: one module, its device, its checkpoints.

:class:`TorchDetector` is built from a :class:`~diffzoo.harness.core.protocols.DetectorBuild`
and holds one torch module, ``self.model``, which ``to`` moves.  ``save``
writes the weights of :meth:`~TorchDetector.saved_module` as a safetensors
checkpoint whose metadata names the card, the task and the label space;
``load`` refuses a checkpoint made for another detector, task or label
space, or whose tensors do not fit, with a ModelError that says which.
:class:`~.segmenter.SegmentationDetector`, :class:`~.classifier.ClassifierDetector`
and IMDL-BenCo's adapter build on it; a subclass builds ``self.model`` and
writes ``predict`` and ``fit``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn

from diffzoo.harness.core.errors import ModelError
from diffzoo.harness.core.protocols import Detector, DetectorBuild, as_build
from diffzoo.harness.core.types import LabelSpace
from diffzoo.harness.models.checkpoints import FORMATS, describe_mismatch, load_checkpoint, save_checkpoint


class TorchDetector(Detector):
    """A detector around one torch module, ``self.model`` (see the module docstring)."""

    model: nn.Module

    card_checked: tuple[str, ...] = ()
    """Card fields a checkpoint must agree on, besides the name."""

    whole_checkpoint = True
    """A checkpoint holds every weight, the pretrained ones too: a model about to load one is built
    without its pretrained weights, never fetched (but for the files a static ``weights_read_always(card)``
    names: read whatever ``pretrained`` says).  False where :meth:`saved_module` leaves out a pretrained
    part the card names."""

    def __init__(self, build: DetectorBuild | None = None, *legacy: Any, **legacy_keywords: Any) -> None:
        build = as_build(type(self), build, *legacy, **legacy_keywords)
        self.card, self.task, self.label_space = build.card, build.task, build.label_space
        self.pretrained = build.pretrained
        self.device = torch.device("cpu")

    def to(self, device: str | torch.device) -> TorchDetector:
        self.device = torch.device(device)
        self.model.to(self.device)
        return self

    # -- checkpoints -----------------------------------------------------
    def saved_module(self) -> nn.Module:
        """The module whose weights a checkpoint holds (a part of ``self.model``, e.g. only
        a probe over a frozen backbone the card names)."""
        return self.model

    def checkpoint_meta(self) -> dict[str, Any]:
        return {
            "format": FORMATS[0],
            "card": self.card.to_dict(),
            "task": self.task,
            "label_space": self.label_space.to_dict(),
            "pretrained": self.pretrained,  # how a model loading it is built, where it is not whole_checkpoint
        }

    def save(self, path: Path, extra: dict[str, Any] | None = None) -> Path:
        meta = {**self.checkpoint_meta(), **(extra or {})}
        return save_checkpoint(Path(path), self.saved_module().state_dict(), meta)

    def check_checkpoint(self, path: Path, meta: dict[str, Any]) -> None:
        """A ModelError when the checkpoint ``path`` with metadata ``meta`` was made for another
        detector, task or label space, or with other :attr:`card_checked` fields."""
        card = meta.get("card") or {}
        if (error := other_detector(path, meta, self.card.name)) is not None:
            raise error
        if meta.get("task", self.task) != self.task:
            raise ModelError(f"checkpoint {path} was trained for task {meta['task']!r}, not {self.task!r}")
        if (error := other_classes(path, meta, self.task, self.label_space)) is not None:
            raise error
        mine = self.card.to_dict()
        for key in self.card_checked:
            if key in card and card[key] != mine[key]:
                raise ModelError(
                    f"checkpoint {path} was made with {key} {card[key]!r}; card {self.card.name} has {mine[key]!r}"
                )

    def load(self, path: Path) -> dict[str, Any]:
        state, meta = load_checkpoint(path)
        self.check_checkpoint(path, meta)
        module = self.saved_module()
        problem = describe_mismatch(module.state_dict(), state)
        if problem:
            raise ModelError(f"checkpoint {path} does not fit {self.card.name}: {problem}")
        try:
            module.load_state_dict(state, strict=True)
        except RuntimeError as exc:
            first = str(exc).strip().splitlines()[:3]
            raise ModelError(f"checkpoint {path} does not fit {self.card.name}: {' '.join(first)}") from exc
        self.model.to(self.device).eval()
        return meta


def other_detector(path: Path, meta: dict[str, Any], name: str) -> ModelError | None:
    """The error of a checkpoint (``path``, its card's ``meta``) made for another detector than
    ``name``; None for one of ``name`` or one whose card names none."""
    made = (meta.get("card") or {}).get("name", name)
    return None if made == name else ModelError(f"checkpoint {path} is for detector {made!r}, not {name!r}")


def other_classes(path: Path, meta: dict[str, Any], task: str, label_space: LabelSpace) -> ModelError | None:
    """The error of a semantic checkpoint (``path``, its card's ``meta``) of other classes than ``label_space``'s,
    scored as a ``task`` model; None for one of those classes, of another task, or one whose card names none."""
    names = (meta.get("label_space") or {}).get("names")
    if names is None or task != "semantic" or tuple(names) == label_space.names:
        return None
    return ModelError(f"checkpoint {path} has classes {names}, the dataset has {list(label_space.names)}")
