"""A base class for segmentation detectors.

Subclasses only build their network; this class does normalisation, padding,
prediction at the input resolution, training through the shared trainer, and
safetensors checkpoints with a card that is checked on load.
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from diffzoo.harness.core.cards import DetectorCard
from diffzoo.harness.models.checkpoints import describe_mismatch, load_checkpoint, save_checkpoint
from diffzoo.harness.core.errors import ConfigError, ModelError
from diffzoo.harness.core.protocols import Dataset, Detector
from diffzoo.harness.models.monitor import TrainMonitor
from diffzoo.harness.models.resume import Resume
from diffzoo.harness.core.train_config import TrainConfig
from diffzoo.harness.models.trainer import AuxLogits, train_segmenter
from diffzoo.harness.core.types import DetectionOutput, LabelSpace

log = logging.getLogger(__name__)


@dataclass
class TrainData:
    """The training input of :meth:`Detector.fit`: a dataset and sample ids,
    where the shared training loop saves its state to resume after a kill
    (the runner sets it; None: no saves) and what watches it (``monitor``)."""

    dataset: Dataset
    ids: list[str]
    resume: Resume | None = None
    preparing: Callable[[int, int], None] | None = None
    """Called as ``preparing(done, total)`` by a detector doing work of its own
    before its training steps (UniversalFakeDetect's feature extraction), so
    that the run's progress shows it; None: nobody listens."""

    monitor: TrainMonitor | None = None
    """The log, TensorBoard events, validation and loss check of the training
    (:mod:`.monitor`; the runner sets it): pass it on to ``train_loop``."""

    def prepared(self, done: int, total: int) -> None:
        if self.preparing is not None:
            self.preparing(done, total)


class Normalized(nn.Module):
    """Wrap a network: [0, 1] RGB in, mean/std normalised, padded to a multiple."""

    def __init__(self, net: nn.Module, mean, std, multiple: int = 32):
        super().__init__()
        self.net = net
        self.multiple = multiple
        self.register_buffer("mean", torch.tensor(mean).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(std).view(1, 3, 1, 1), persistent=False)

    def forward(self, images: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, AuxLogits]:
        """Logits; in training, a network may also return auxiliary heads'
        logits, ``(logits, [(aux_logits, weight), ...])`` (see segmentation_loss)."""
        h, w = images.shape[-2:]
        x = (images - self.mean) / self.std
        ph, pw = (-h) % self.multiple, (-w) % self.multiple
        if ph or pw:
            x = F.pad(x, (0, pw, 0, ph), mode="reflect" if min(h, w) > max(ph, pw) else "constant")
            if images.dim() == 4 and not images.is_contiguous() and images.is_contiguous(
                    memory_format=torch.channels_last):
                x = x.contiguous(memory_format=torch.channels_last)  # padding drops NHWC
        out = self.net(x)
        if not (ph or pw):
            return out

        def crop(logits: torch.Tensor) -> torch.Tensor:  # drop the padding, at the map's own stride
            scale_h = logits.shape[-2] / x.shape[-2]
            scale_w = logits.shape[-1] / x.shape[-1]
            # at least one row and column: a 1 x 1 input at stride 4 must not crop to nothing
            return logits[..., : max(1, round(h * scale_h)), : max(1, round(w * scale_w))]

        if isinstance(out, tuple):
            main, aux = out
            return crop(main), [(crop(a), weight) for a, weight in aux]
        return crop(out)


class SegmentationDetector(Detector):
    """Binary (1 logit channel) or semantic (one channel per class) segmenter."""

    head_prefixes: tuple[str, ...] = ("decode_head",)
    no_decay_keywords: tuple[str, ...] = ("norm",)

    def __init__(
        self,
        card: DetectorCard,
        task: str,
        label_space: LabelSpace,
        pretrained: bool = False,
    ):
        if task not in card.tasks:
            raise ConfigError(f"detector {card.name} does not support task {task!r} (it does {card.tasks})")
        self.card, self.task, self.label_space = card, task, label_space
        self.pretrained = pretrained
        self.num_outputs = 1 if task == "binary" else label_space.num_classes
        self.model = Normalized(self.build_network(self.num_outputs, pretrained), card.mean, card.std)
        self.device = torch.device("cpu")
        self.model.eval()

    @abstractmethod
    def build_network(self, num_outputs: int, pretrained: bool) -> nn.Module:
        """Network mapping normalised B x 3 x H x W images to logits (any stride).

        In training mode it may return ``(logits, [(aux_logits, weight), ...])``
        to add auxiliary heads' losses; in eval mode only the logits."""

    # -- inference -------------------------------------------------------
    def to(self, device: str | torch.device) -> SegmentationDetector:
        self.device = torch.device(device)
        self.model.to(self.device)
        return self

    @torch.no_grad()
    def predict(self, images: torch.Tensor) -> DetectionOutput:
        self.model.eval()
        images = images.to(self.device, torch.float32)
        logits = self.model(images)
        if logits.shape[-2:] != images.shape[-2:]:
            logits = F.interpolate(logits, size=images.shape[-2:], mode="bilinear", align_corners=False)
        return DetectionOutput(mask_logits=logits.float())

    # -- training --------------------------------------------------------
    def param_groups(self, head_lr_mult: float | None = None) -> list[dict[str, Any]]:
        """Parameter groups: the head at ``head_lr_mult`` (default: the
        card's), norms and biases named in ``no_decay_keywords`` without decay."""
        head_mult = self.card_head_mult() if head_lr_mult is None else float(head_lr_mult)
        groups: dict[tuple[bool, bool], list[nn.Parameter]] = {}
        for name, p in self.model.named_parameters():
            if not p.requires_grad:
                continue
            head = any(f".{h}" in f".{name}" for h in self.head_prefixes)
            no_decay = any(k in name for k in self.no_decay_keywords)
            groups.setdefault((head, no_decay), []).append(p)
        out = []
        for (head, no_decay), params in groups.items():
            name = ("head" if head else "backbone") + (".no_decay" if no_decay else "")  # the log's lr/<name>
            g: dict[str, Any] = {"params": params, "lr_mult": head_mult if head else 1.0, "name": name}
            if no_decay:
                g["weight_decay"] = 0.0
            out.append(g)
        return out

    def card_head_mult(self) -> float:
        mult = self.card.recipe.get("head_lr_mult")
        return float(mult.value) if mult is not None else 1.0

    def fit(
        self,
        train: TrainData,
        config: TrainConfig,
        progress: Callable[[int, float], None] | None = None,
    ) -> dict[str, Any]:
        if self.task == "semantic" and train.dataset.label_space != self.label_space:
            raise ConfigError("training data and detector have different label spaces")
        return train_segmenter(
            self.model, self.param_groups(config.head_lr_mult), train.dataset, train.ids, self.task, config,
            self.device, progress, train.resume, train.monitor,
        )

    # -- checkpoints -----------------------------------------------------
    def checkpoint_meta(self) -> dict[str, Any]:
        return {
            "format": "diffzoo-checkpoint-1",
            "card": self.card.to_dict(),
            "task": self.task,
            "label_space": self.label_space.to_dict(),
        }

    def save(self, path: Path, extra: dict[str, Any] | None = None) -> Path:
        meta = {**self.checkpoint_meta(), **(extra or {})}
        return save_checkpoint(Path(path), self.model.net.state_dict(), meta)

    def load(self, path: Path) -> dict[str, Any]:
        state, meta = load_checkpoint(path)
        card = meta.get("card", {}).get("name")
        if card is not None and card != self.card.name:
            raise ModelError(f"checkpoint {path} is for detector {card!r}, not {self.card.name!r}")
        if meta.get("task", self.task) != self.task:
            raise ModelError(f"checkpoint {path} was trained for task {meta['task']!r}, not {self.task!r}")
        names = meta.get("label_space", {}).get("names")
        if names is not None and self.task == "semantic" and tuple(names) != self.label_space.names:
            raise ModelError(
                f"checkpoint {path} has classes {names}, the dataset has {list(self.label_space.names)}"
            )
        problem = describe_mismatch(self.model.net.state_dict(), state)
        if problem:
            raise ModelError(f"checkpoint {path} does not fit {self.card.name}: {problem}")
        try:
            self.model.net.load_state_dict(state, strict=True)
        except RuntimeError as exc:
            first = str(exc).strip().splitlines()[:3]
            raise ModelError(f"checkpoint {path} does not fit {self.card.name}: {' '.join(first)}") from exc
        self.model.to(self.device).eval()
        return meta
