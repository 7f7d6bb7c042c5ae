"""The FCN-8s network: a torchvision VGG backbone with the three-stream skip head.

torchvision and segmentation-models-pytorch ship no FCN-8s (torchvision's
``fcn_resnet50`` is a dilated FCN-32s-style head), so the head is written
here, after the authors' ``voc-fcn8s-atonce/net.py``.  One change: instead of
padding the input by 100 pixels and cropping with caffe's computed offsets,
fc6 is a padded 7x7 conv ("same"), so every map is aligned at the origin and
the skips are cropped at offset 0; with input sizes a multiple of 32 (the
detector pads to that) the output is exactly the input size.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from diffzoo.plugin import NO_PRETRAINED, ConfigError, DetectorCard, ModelError, SegmentationDetector, url_into


def bilinear_kernel(channels: int, size: int) -> torch.Tensor:
    """A ``channels x channels x size x size`` transposed-conv weight doing per-channel
    bilinear upsampling (the reference ``surgery.interp`` / ``upsample_filt``)."""
    factor = (size + 1) // 2
    center = factor - 1 if size % 2 == 1 else factor - 0.5
    taps = 1 - (torch.arange(size, dtype=torch.float32) - center).abs() / factor
    weight = torch.zeros(channels, channels, size, size)
    idx = torch.arange(channels)
    weight[idx, idx] = taps[:, None] * taps[None, :]
    return weight


def _crop(x: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """Crop ``x`` to ``like``'s size at offset 0 (the maps share their origin)."""
    return x[..., : like.shape[-2], : like.shape[-1]]


class FCN8s(nn.Module):
    """VGG features -> fc6/fc7 -> score_fr, fused with scored pool4 and pool3 at 2x, 2x, 8x."""

    def __init__(
        self,
        num_classes: int,
        features: list,
        fc_channels: int,
        dropout: float,
        pool4_scale: float,
        pool3_scale: float,
        learn_upsampling: bool,
    ):
        super().__init__()
        from torchvision.models.vgg import make_layers

        self.features = make_layers(features)  # the same parameter names as torchvision's vgg.features
        pools = [i for i, m in enumerate(self.features) if isinstance(m, nn.MaxPool2d)]
        pooled_width = [prev for prev, c in zip(features, features[1:]) if c == "M"]  # width at each pool
        if len(pools) != 5 or features[-1] != "M" or "M" in pooled_width:
            raise ModelError("FCN-8s needs a VGG layer list with 5 max-pools, the last one at the end")
        self.pool3_at, self.pool4_at = pools[2], pools[3]
        c3, c4, c5 = pooled_width[2:]
        self.fc6 = nn.Conv2d(c5, fc_channels, 7, padding=3)
        self.fc7 = nn.Conv2d(fc_channels, fc_channels, 1)
        self.drop = nn.Dropout(dropout)
        self.score_fr = nn.Conv2d(fc_channels, num_classes, 1)
        self.score_pool4 = nn.Conv2d(c4, num_classes, 1)
        self.score_pool3 = nn.Conv2d(c3, num_classes, 1)
        self.upscore2 = nn.ConvTranspose2d(num_classes, num_classes, 4, stride=2, padding=1, bias=False)
        self.upscore_pool4 = nn.ConvTranspose2d(num_classes, num_classes, 4, stride=2, padding=1, bias=False)
        self.upscore8 = nn.ConvTranspose2d(num_classes, num_classes, 16, stride=8, padding=4, bias=False)
        self.pool4_scale, self.pool3_scale = pool4_scale, pool3_scale
        # The paper zero-initialises the class scoring layers.
        for score in (self.score_fr, self.score_pool4, self.score_pool3):
            nn.init.zeros_(score.weight)
            nn.init.zeros_(score.bias)
        for up in (self.upscore2, self.upscore_pool4, self.upscore8):
            with torch.no_grad():
                up.weight.copy_(bilinear_kernel(num_classes, up.kernel_size[0]))
            up.weight.requires_grad_(learn_upsampling)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, layer in enumerate(self.features):
            x = layer(x)
            if i == self.pool3_at:
                pool3 = x
            elif i == self.pool4_at:
                pool4 = x
        x = self.drop(F.relu(self.fc6(x), inplace=True))
        x = self.drop(F.relu(self.fc7(x), inplace=True))
        x = self.upscore2(self.score_fr(x))
        x = x + _crop(self.score_pool4(pool4 * self.pool4_scale), x)
        x = self.upscore_pool4(x)
        x = x + _crop(self.score_pool3(pool3 * self.pool3_scale), x)
        return self.upscore8(x)

    def vgg_state(self, state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """A torchvision VGG state dict under FCN-8s's names: features as they are, the
        classifier's fc6/fc7 reshaped into convolutions ("convolutionalisation", paper Sec. 3.1)."""
        ours = {k: v for k, v in state.items() if k.startswith("features.")}
        ours["fc6.weight"] = state["classifier.0.weight"].reshape(self.fc6.weight.shape)
        ours["fc6.bias"] = state["classifier.0.bias"]
        ours["fc7.weight"] = state["classifier.3.weight"].reshape(self.fc7.weight.shape)
        ours["fc7.bias"] = state["classifier.3.bias"]
        return ours


def load_torchvision(card: DetectorCard, net: FCN8s) -> None:
    """The card's torchvision VGG weights (``"VGG16_Weights.IMAGENET1K_V1"``) loaded into ``net``
    but its head, from the torch hub cache or downloaded, hash-checked; a clear error when
    neither works or the file does not fit."""
    from torchvision.models import get_weight

    try:  # the name read as the plan reads it to look for the file
        weights = get_weight(card.weights or "")
    except (ValueError, KeyError) as exc:
        raise ModelError(f"detector {card.name}: torchvision has no weights {card.weights!r}") from exc
    url_into(card, net, weights.url, detail=f"torchvision {card.weights}; {NO_PRETRAINED}", state=net.vgg_state,
             new=FCN8sDetector.head_prefixes)


class FCN8sDetector(SegmentationDetector):
    head_prefixes = ("score", "upscore")
    no_decay_keywords = ()  # the reference decays every weight; biases are handled below

    def build_network(self, num_outputs: int, pretrained: bool) -> nn.Module:
        self.card.check_pretrained(pretrained)
        net = FCN8s(num_outputs, **self.card.arch)
        if pretrained:
            load_torchvision(self.card, net)
        return net

    def param_groups(self, *args, **kwargs) -> list[dict]:
        """The base groups with biases split off: their lr x ``bias_lr_mult`` and, when
        ``bias_decay_mult`` is 0, no weight decay (the reference: lr_mult 2, decay_mult 0)."""
        recipe = self.card.recipe
        bias_lr = float(recipe["bias_lr_mult"].value) if "bias_lr_mult" in recipe else 1.0
        bias_decay = float(recipe["bias_decay_mult"].value) if "bias_decay_mult" in recipe else 1.0
        if bias_decay not in (0.0, 1.0):
            raise ConfigError(f"detector {self.card.name}: bias_decay_mult must be 0 or 1, not {bias_decay}")
        bias_ids = {id(p) for n, p in self.model.named_parameters() if n.endswith(".bias")}
        groups = []
        for group in super().param_groups(*args, **kwargs):
            weights = [p for p in group["params"] if id(p) not in bias_ids]
            biases = [p for p in group["params"] if id(p) in bias_ids]
            if weights:
                groups.append({**group, "params": weights})
            if biases:
                bias_group = {**group, "params": biases, "lr_mult": group["lr_mult"] * bias_lr}
                if bias_decay == 0.0:
                    bias_group["weight_decay"] = 0.0
                groups.append(bias_group)
        return groups
