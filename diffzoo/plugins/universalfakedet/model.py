"""UniversalFakeDetect: open_clip image tower (frozen) + nn.Linear probe.

Training extracts the frozen backbone's features once per training image
(this rank's share under torchrun), keeps them in memory, and trains only the
probe on them, so a step costs a matrix product instead of a ViT-L pass.
Checkpoints hold the probe alone when the backbone is the card's pretrained
one (the card and the backbone's provenance are checked on load), and the
whole model when the backbone is randomly initialised (tests, --no-pretrained).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from diffzoo.plugin import (
    ClassifierDetector,
    ImageLabelDataset,
    ModelError,
    Report,
    TrainConfig,
    TrainData,
    View,
    all_gather,
    bce_loss,
    built_from,
    hub_weights,
    make_loader,
    shard,
    train_loop,
)

log = logging.getLogger(__name__)


def centre_view(image: np.ndarray, label: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The whole image (the model resizes and centre-crops it) and the label of the
    centre square it keeps: the shorter side scaled to the input size, then cropped."""
    h, w = label.shape
    s = min(h, w)
    y, x = (h - s) // 2, (w - s) // 2
    return image, label[y : y + s, x : x + s]


def clip_input(images: torch.Tensor, size: int) -> torch.Tensor:
    """open_clip's preprocessing on a [0, 1] batch: shorter side -> ``size`` (bicubic,
    antialiased), centre crop ``size`` x ``size``."""
    from torchvision.transforms.v2 import functional as TF

    x = TF.resize(images, size, interpolation=TF.InterpolationMode.BICUBIC, antialias=True)
    return TF.center_crop(x, [size, size]).clamp_(0.0, 1.0)


class ClipProbe(nn.Module):
    """[0, 1] images -> CLIP image embedding (frozen) -> one logit."""

    def __init__(self, visual: nn.Module, dim: int, size: int, mean, std, init_std: float):
        super().__init__()
        self.visual = visual.requires_grad_(False).eval()
        self.probe = nn.Linear(dim, 1)
        nn.init.normal_(self.probe.weight, 0.0, init_std)
        self.size = size
        self.register_buffer("mean", torch.tensor(mean).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(std).view(1, 3, 1, 1), persistent=False)

    def train(self, mode: bool = True) -> ClipProbe:
        super().train(mode)
        self.visual.eval()  # frozen: never in training mode
        return self

    def prepare(self, images: torch.Tensor) -> torch.Tensor:
        """[0, 1] images of any size -> normalised ``size`` x ``size`` CLIP input."""
        return (clip_input(images, self.size) - self.mean) / self.std

    @torch.no_grad()
    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """CLIP image embeddings of prepared input (float32)."""
        return self.visual(x).float()

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.probe(self.embed(self.prepare(images)))


def open_clip_weights(card, name: str, tag: str) -> Path:
    """The local file of open_clip's pretrained ``name``/``tag`` (the hub file open_clip
    itself would read, safetensors first), fetched unless offline and hash-checked."""
    import open_clip
    from open_clip.constants import HF_SAFE_WEIGHTS_NAME, HF_WEIGHTS_NAME

    hub = (open_clip.get_pretrained_cfg(name, tag) or {}).get("hf_hub", "")
    if not hub:
        raise ModelError(f"detector {card.name}: open_clip names no hub weights for {name!r}/{tag!r}")
    repo, filename = os.path.split(hub)  # "org/model/" means open_clip's default file name
    filename = filename or HF_WEIGHTS_NAME
    safe = HF_SAFE_WEIGHTS_NAME if filename == HF_WEIGHTS_NAME else filename.rsplit(".", 1)[0] + ".safetensors"
    return hub_weights(
        card, repo, (safe, filename),
        what=f"detector {card.name} (open_clip {name!r}, pretrained={tag!r})",
        detail="open_clip reads them from the HF cache; --no-pretrained gives random, useless features",
    )


def open_clip_model(card, pretrained: bool, path: Path | None = None) -> nn.Module:
    """The card's open_clip CLIP: a tiny one built from its ``open_clip_config`` (which has no
    pretrained weights), else open_clip's ``open_clip_model`` with its pretrained weights
    (``path``: their file when already fetched) or with random ones."""
    import open_clip

    arch = card.arch
    if "open_clip_config" in arch:
        card.check_pretrained(pretrained)
        return open_clip.CLIP(**arch["open_clip_config"])
    name, quick_gelu = arch["open_clip_model"], arch.get("quick_gelu", False)
    if not pretrained:
        return open_clip.create_model(name, pretrained=None, force_quick_gelu=quick_gelu)
    with built_from():  # the file's first use is recorded once open_clip has built the model from it
        path = path or open_clip_weights(card, name, arch["pretrained_tag"])
        try:
            return open_clip.create_model(name, pretrained=str(path), force_quick_gelu=quick_gelu)
        except (RuntimeError, OSError) as exc:
            raise ModelError(f"detector {card.name}: open_clip cannot load {path} as {name!r} ({exc}); "
                             "delete the file and fetch it again") from exc


def _open_clip_visual(card, pretrained: bool) -> nn.Module:
    if not pretrained and "open_clip_config" not in card.arch:
        log.warning("%s without pretrained CLIP weights: the probe reads random features", card.name)
    return open_clip_model(card, pretrained).visual


class UniversalFakeDetector(ClassifierDetector):
    whole_checkpoint = False  # a pretrained backbone is named by the card, not saved

    def build_network(self, pretrained: bool) -> nn.Module:
        visual = _open_clip_visual(self.card, pretrained)
        init_std = float(self.card.recipe["probe_init_std"].value)
        return ClipProbe(visual, self.card.arch["feature_dim"], self.card.input_size,
                         self.card.mean, self.card.std, init_std)

    def train_view(self, cfg: TrainConfig) -> View:
        return centre_view

    def saved_module(self) -> nn.Module:
        # a pretrained backbone is named by the card; a random one must travel with the probe
        return self.model.probe if self.pretrained else self.model

    def frozen_meta(self) -> dict[str, Any]:
        return {"backbone": self.card.weights if self.pretrained else "random init", "pretrained": self.pretrained}

    def fit(self, train: TrainData, config: TrainConfig, progress: Report | None = None) -> dict[str, Any]:
        torch.manual_seed(config.seed)
        feats, labels, skipped = self.extract_features(train, config)
        data = torch.utils.data.TensorDataset(feats, labels)
        loader = make_loader(data, config, shard=False)  # the features are this rank's share already
        groups = [{"params": list(self.model.probe.parameters()), "lr": config.lr}]
        # resuming after a kill extracts the (deterministic) features again, then continues the probe's training
        log_ = train_loop(self.model.probe, loader, bce_loss, groups, config, self.device, progress, train.hooks)
        log_["feature_images"] = sum(all_gather(len(labels)))
        log_["skipped_samples"] += sum(all_gather(skipped))
        log_["edited_view_fraction"] = float(labels.mean()) if len(labels) else float("nan")
        self.model.eval()
        return log_

    @torch.no_grad()
    def extract_features(self, train: TrainData, config: TrainConfig):
        """(N x D features, N labels, corrupt samples skipped) of this rank's training images,
        embedded 64 at a time on a GPU (8 on a CPU, where a larger batch is no faster and the
        progress would move once a minute)."""
        chunk = 64 if self.device.type == "cuda" else 8
        ids = shard(train.ids)
        data = ImageLabelDataset(train.dataset, ids, config, self.train_view(config))
        # one image at a time (sizes differ); each is resized before batching
        loader = torch.utils.data.DataLoader(data, batch_size=None, num_workers=config.num_workers)
        self.model.eval()
        feats: list[torch.Tensor] = []
        labels: list[torch.Tensor] = []
        pending: list[torch.Tensor] = []
        skipped = 0

        def flush() -> None:
            if pending:
                x = torch.cat(pending)
                feats.append(self.model.embed(x).cpu())
                pending.clear()
            train.prepared(sum(len(f) for f in feats) + skipped, len(ids))

        for item in loader:
            if item is None:
                skipped += 1
                continue
            image, label = item
            pending.append(self.model.prepare(image[None].to(self.device)))
            labels.append(label)
            if len(pending) >= chunk:
                flush()
        flush()
        log.info("extracted %d CLIP feature vectors (%d corrupt samples skipped)", len(labels), skipped)
        dim = self.card.arch["feature_dim"]
        out = torch.cat(feats) if feats else torch.zeros(0, dim)
        return out, torch.stack(labels) if labels else torch.zeros(0), skipped
