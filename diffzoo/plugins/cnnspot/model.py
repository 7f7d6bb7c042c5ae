"""The CNNSpot network (torchvision ResNet-50, or a tiny timm ResNet for tests)."""

from __future__ import annotations

from functools import partial

import numpy as np
from torch import nn

from diffzoo.plugin import ClassifierDetector, ModelError, Normalized, TrainConfig, View, crop_view, url_into
from diffzoo.plugins.cnnspot.augment import BlurJpeg


def blur_jpeg_view(
    image: np.ndarray, label: np.ndarray, rng: np.random.Generator, aug: BlurJpeg, size: int, hflip: bool
) -> tuple[np.ndarray, np.ndarray]:
    """The official order: blur/JPEG on the whole image, then random crop and flip."""
    return crop_view(aug(image, rng), label, rng, size, hflip)


class CNNSpotDetector(ClassifierDetector):
    def build_network(self, pretrained: bool) -> nn.Module:
        arch = self.card.arch
        self.card.check_pretrained(pretrained)
        if arch["backbone"] == "torchvision.resnet50":
            from torchvision.models import ResNet50_Weights, resnet50

            net = resnet50(weights=None)
            if pretrained:  # from the torch hub cache (or downloaded), hash-checked, read tensors-only, strictly
                url_into(self.card, net, ResNet50_Weights.IMAGENET1K_V1.url,
                         label="torchvision ResNet50_Weights.IMAGENET1K_V1",
                         detail="or pass --no-pretrained to train from scratch")
            net.fc = nn.Linear(net.fc.in_features, 1)
        elif arch["backbone"] == "timm.ResNet":
            from timm.models import resnet as timm_resnet

            net = timm_resnet.ResNet(
                getattr(timm_resnet, arch["block"]), tuple(arch["layers"]), num_classes=1,
                channels=tuple(arch["channels"]), stem_width=arch["stem_width"],
            )
        else:
            raise ModelError(f"{self.card.name}: unknown backbone {arch['backbone']!r}")
        nn.init.normal_(net.fc.weight, 0.0, float(self.card.recipe["fc_init_std"].value))
        # multiple=1: no padding; the ResNet pools globally, so any size >= 32 px works
        return Normalized(net, self.card.mean, self.card.std, multiple=1)

    def train_view(self, cfg: TrainConfig) -> View:
        aug = BlurJpeg(
            blur_prob=float(self.recipe(cfg, "blur_prob")),
            blur_sigma=tuple(self.recipe(cfg, "blur_sigma")),
            jpeg_prob=float(self.recipe(cfg, "jpeg_prob")),
            jpeg_quality=tuple(self.recipe(cfg, "jpeg_quality")),
            jpeg_methods=tuple(self.recipe(cfg, "jpeg_methods")),
        )
        return partial(blur_jpeg_view, aug=aug, size=cfg.crop_size, hflip=cfg.hflip)
