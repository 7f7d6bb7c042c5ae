"""The SegFormer network, built with transformers."""

from __future__ import annotations

import logging

from torch import nn

from diffzoo.plugin import SegmentationDetector, WeightsUnavailableError, hub_weights

log = logging.getLogger(__name__)


class _Logits(nn.Module):
    """Return the logits tensor of a transformers segmentation model (H/4 x W/4)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.segformer = model

    def forward(self, x):
        return self.segformer(pixel_values=x).logits


class SegformerDetector(SegmentationDetector):
    head_prefixes = ("decode_head",)
    no_decay_keywords = ("norm",)

    def build_network(self, num_outputs: int, pretrained: bool) -> nn.Module:
        from transformers import SegformerConfig, SegformerForSemanticSegmentation

        if pretrained:
            if not self.card.weights:
                raise WeightsUnavailableError(self.card.name, "(none)", "this card has no pretrained weights")
            # resolved and hash-checked first; transformers then reads exactly those files
            path = hub_weights(self.card, self.card.weights, ("model.safetensors", "pytorch_model.bin"),
                               also=("config.json",),
                               detail="or pass --no-pretrained to train from random initialisation")
            try:
                model = SegformerForSemanticSegmentation.from_pretrained(
                    path.parent, num_labels=num_outputs, ignore_mismatched_sizes=True
                )
            except OSError as exc:
                raise WeightsUnavailableError(
                    f"detector {self.card.name}",
                    self.card.weights,
                    f"{path.parent} is incomplete ({exc}); or pass --no-pretrained to train from random "
                    "initialisation",
                ) from exc
            log.info("loaded pretrained encoder %s", self.card.weights)
        else:
            config = SegformerConfig(**self.card.arch, num_labels=num_outputs)
            model = SegformerForSemanticSegmentation(config)
        return _Logits(model)
