"""A base class for segmentation detectors.

Subclasses only build their network; this class does normalisation, padding,
prediction at the input resolution, training through the shared trainer, and
safetensors checkpoints with a card that is checked on load
(:class:`~.detector.TorchDetector`).
"""

from __future__ import annotations

from abc import abstractmethod
from functools import partial
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from diffzoo.harness.core.errors import ConfigError
from diffzoo.harness.core.protocols import DetectorBuild, Report
from diffzoo.harness.core.train_config import TrainConfig
from diffzoo.harness.core.types import DetectionOutput
from diffzoo.harness.models.detector import TorchDetector
from diffzoo.harness.models.train_data import CropDataset, TrainData, make_loader
from diffzoo.harness.models.trainer import AuxLogits, segmentation_loss_terms, train_loop


class Normalized(nn.Module):
    """Wrap a network: [0, 1] RGB in, mean/std normalised, padded to a multiple."""

    mean: torch.Tensor  # 1 x 3 x 1 x 1 buffers
    std: torch.Tensor

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


class SegmentationDetector(TorchDetector):
    """Binary (1 logit channel) or semantic (one channel per class) segmenter."""

    model: Normalized
    head_prefixes: tuple[str, ...] = ("decode_head",)
    no_decay_keywords: tuple[str, ...] = ("norm",)

    def __init__(self, build: DetectorBuild | None = None, *legacy: Any, **legacy_keywords: Any) -> None:
        super().__init__(build, *legacy, **legacy_keywords)
        card, task = self.card, self.task
        if task not in card.tasks:
            raise ConfigError(f"detector {card.name} does not support task {task!r} (it does {card.tasks})")
        self.num_outputs = 1 if task == "binary" else self.label_space.num_classes
        self.model = Normalized(self.build_network(self.num_outputs, self.pretrained), card.mean, card.std)
        self.model.eval()

    @abstractmethod
    def build_network(self, num_outputs: int, pretrained: bool) -> nn.Module:
        """Network mapping normalised B x 3 x H x W images to logits (any stride).

        In training mode it may return ``(logits, [(aux_logits, weight), ...])``
        to add auxiliary heads' losses; in eval mode only the logits."""

    # -- inference -------------------------------------------------------
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
        head_mult = float(self.card.recipe_values().get("head_lr_mult", 1.0) if head_lr_mult is None else head_lr_mult)
        groups: dict[tuple[bool, bool], list[nn.Parameter]] = {}
        for name, p in self.model.named_parameters():
            if not p.requires_grad:
                continue
            head = any(f".{h}" in f".{name}" for h in self.head_prefixes)
            no_decay = any(k in name for k in self.no_decay_keywords)
            groups.setdefault((head, no_decay), []).append(p)
        # each named as the log's lr/<name>
        return [{"params": params, "lr_mult": head_mult if head else 1.0,
                 "name": ("head" if head else "backbone") + (".no_decay" if no_decay else ""),
                 **({"weight_decay": 0.0} if no_decay else {})} for (head, no_decay), params in groups.items()]

    def fit(self, train: TrainData, config: TrainConfig, progress: Report | None = None) -> dict[str, Any]:
        """The shared loop (:func:`~.trainer.train_loop`) on random crops of ``train``,
        each parameter group at ``lr x lr_mult``; the loss is :func:`~.trainer.segmentation_loss`."""
        if self.task == "semantic" and train.dataset.label_space != self.label_space:
            raise ConfigError("training data and detector have different label spaces")
        torch.manual_seed(config.seed)
        loader = make_loader(CropDataset(train.dataset, train.ids, self.task, config), config)
        groups = [{**{k: v for k, v in g.items() if k != "lr_mult"}, "lr": config.lr * g.get("lr_mult", 1.0)}
                  for g in self.param_groups(config.head_lr_mult)]
        return train_loop(self.model, loader, partial(segmentation_loss_terms, task=self.task), groups, config,
                          self.device, progress, train.hooks, data_name=train.dataset.name)

    # -- checkpoints -----------------------------------------------------
    def saved_module(self) -> nn.Module:
        return self.model.net  # the normalisation is the card's, not a weight
