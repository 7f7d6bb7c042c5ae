"""A base class for image-level detectors (task ``classification``).

Subclasses build a network mapping [0, 1] RGB images to one logit per image;
this class turns it into image scores, trains it with BCE through the shared
loop, and writes safetensors checkpoints with a card that is checked on load
(:class:`~.detector.TorchDetector`).

Training samples are *views* of the training images (a random crop, an
augmented copy, the centre a CLIP model sees).  A view is labelled edited
if it holds an edited pixel: docs/metrics.md's rule for an edited image, applied
to what the network is shown, so a crop that misses a local edit is not
called edited.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from diffzoo.harness.core.errors import ConfigError, ModelError
from diffzoo.harness.core.protocols import DetectorBuild, Report
from diffzoo.harness.core.train_config import TrainConfig
from diffzoo.harness.core.types import BINARY, DetectionOutput, Sample
from diffzoo.harness.models.detector import TorchDetector
from diffzoo.harness.models.train_data import CropDataset, TrainData, as_float_chw, crop_view, make_loader
from diffzoo.harness.models.trainer import train_loop

View = Callable[[np.ndarray, np.ndarray, np.random.Generator], tuple[np.ndarray, np.ndarray]]
"""(image H x W x 3 uint8, binary label map, rng) -> (view pixels, view label map)."""


class ImageLabelDataset(CropDataset):
    """Training view for classifiers: sample -> (view as float tensor, 0/1 label).

    The random generator of each item (seeded from the config's seed and the
    item's key) and the skipping of corrupt samples are :class:`CropDataset`'s.
    """

    def __init__(self, dataset, ids: list[str], cfg: TrainConfig, view: View):
        super().__init__(dataset, ids, "binary", cfg)
        self.view = view

    def _example(self, sample: Sample, rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        image, label = self.view(sample.image, self.dataset.label_space.to_binary_map(sample.label), rng)
        # a binary label map (255 = ignore) shows an edit if any pixel is 1
        return as_float_chw(image), torch.tensor(float((label == 1).any()))


def bce_loss(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Binary cross-entropy of one logit per image against 0/1 labels."""
    return F.binary_cross_entropy_with_logits(logits.reshape(-1).float(), target.reshape(-1).float())


class ClassifierDetector(TorchDetector):
    """An image-level detector: one probability per image that it is edited.

    Subclasses implement :meth:`build_network` and may override
    :meth:`train_view` (augmentation), :meth:`saved_module` (which weights a
    checkpoint holds, e.g. only a probe over a frozen backbone) and
    :meth:`frozen_meta` (what an unsaved frozen part must match on load).
    """

    card_checked = ("arch", "weights")

    def __init__(self, build: DetectorBuild | None = None, *legacy: Any, **legacy_keywords: Any) -> None:
        super().__init__(build, *legacy, **legacy_keywords)
        if self.task != "classification" or self.task not in self.card.tasks:
            raise ConfigError(
                f"detector {self.card.name} gives image-level scores only (task 'classification'), not {self.task!r}"
            )
        self.label_space = BINARY
        self.model = self.build_network(self.pretrained)
        self.model.eval()

    @abstractmethod
    def build_network(self, pretrained: bool) -> nn.Module:
        """Network mapping B x 3 x H x W images in [0, 1] to B x 1 logits."""

    def recipe(self, cfg: TrainConfig, key: str) -> Any:
        """A recipe value that is not a TrainConfig field: the config's, else the card's."""
        if key in cfg.extra:
            return cfg.extra[key]
        if key not in self.card.recipe:
            raise ConfigError(f"{self.card.name}: the training recipe has no {key!r}")
        return self.card.recipe[key].value

    def train_view(self, cfg: TrainConfig) -> View:
        """The training view of an image: by default a random crop + flip."""
        return partial(crop_view, size=cfg.crop_size, hflip=cfg.hflip)

    def frozen_meta(self) -> dict[str, Any]:
        return {}

    # -- inference -------------------------------------------------------
    @torch.no_grad()
    def predict(self, images: torch.Tensor) -> DetectionOutput:
        self.model.eval()
        logits = self.model(images.to(self.device, torch.float32))
        score = torch.sigmoid(logits.float().reshape(images.shape[0], -1)[:, 0])
        return DetectionOutput(image_score=score.cpu())

    # -- training --------------------------------------------------------
    def fit(self, train: TrainData, config: TrainConfig, progress: Report | None = None) -> dict[str, Any]:
        torch.manual_seed(config.seed)
        data = ImageLabelDataset(train.dataset, train.ids, config, self.train_view(config))
        groups = [{"params": [p for p in self.model.parameters() if p.requires_grad], "lr": config.lr}]
        return train_loop(self.model, make_loader(data, config), bce_loss, groups, config, self.device, progress,
                          train.hooks, data_name=train.dataset.name)

    # -- checkpoints -----------------------------------------------------
    def checkpoint_meta(self) -> dict[str, Any]:
        return {**super().checkpoint_meta(), "frozen": self.frozen_meta()}

    def check_checkpoint(self, path: Path, meta: dict[str, Any]) -> None:
        super().check_checkpoint(path, meta)
        frozen = meta.get("frozen", self.frozen_meta())
        if frozen != self.frozen_meta():
            raise ModelError(
                f"checkpoint {path} was trained on a frozen part {frozen}, this model has {self.frozen_meta()}; "
                "build it the same way (e.g. the same --pretrained choice)"
            )
