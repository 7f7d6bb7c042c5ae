"""``example.residual``: a fixed high-pass residual, then a small dilated CNN.

Locally edited regions re-synthesised by a diffusion model carry different
high-frequency statistics from the camera (or generator) pixels around them;
a fixed high-pass filter removes the image content so that a small network can
look at those statistics directly.

Only the network is written here: diffzoo's ``SegmentationDetector`` does
normalisation, padding, prediction at the input resolution, training with the
shared trainer (``fit``) and safetensors checkpoints.
"""

from __future__ import annotations

from collections import OrderedDict

import torch
import torch.nn.functional as F
from torch import nn

from diffzoo import SegmentationDetector

# The 5x5 "KV" residual kernel of the spatial rich model (Fridrich &
# Kodovsky 2012), divided by 12 as in RGB-N.  It sums to zero, so flat and
# smoothly shaded areas give a zero residual.
KV_KERNEL = (
    (-1, 2, -2, 2, -1),
    (2, -6, 8, -6, 2),
    (-2, 8, -12, 8, -2),
    (2, -6, 8, -6, 2),
    (-1, 2, -2, 2, -1),
)


class HighPass(nn.Module):
    """Fixed depthwise KV filter on each colour channel (no parameters)."""

    def __init__(self, channels: int = 3):
        super().__init__()
        kernel = torch.tensor(KV_KERNEL, dtype=torch.float32) / 12.0
        # Not persistent: it is a constant of the architecture, not a weight.
        self.register_buffer("kernel", kernel.expand(channels, 1, 5, 5).clone(), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.conv2d(x, self.kernel, padding=2, groups=x.shape[1])


def residual_network(num_outputs: int, width: int, dilations: list[int]) -> nn.Sequential:
    """High-pass -> 3x3 conv + ReLU per dilation (receptive field grows) -> 1x1 head."""
    layers: list[nn.Module] = []
    channels = 3
    for d in dilations:
        layers += [nn.Conv2d(channels, width, 3, padding=d, dilation=d), nn.ReLU(inplace=True)]
        channels = width
    return nn.Sequential(
        OrderedDict(
            residual=HighPass(3),
            body=nn.Sequential(*layers),
            head=nn.Conv2d(width, num_outputs, 1),
        )
    )


class ResidualDetector(SegmentationDetector):
    """Binary (1 logit) or semantic (one logit per class) residual segmenter."""

    head_prefixes = ("head",)

    def build_network(self, num_outputs: int, pretrained: bool) -> nn.Module:
        # ``pretrained`` is ignored: the card has no weights (card.weights is
        # None), so the runner always asks for a from-scratch model.
        arch = self.card.arch
        return residual_network(num_outputs, int(arch["width"]), list(arch["dilations"]))
