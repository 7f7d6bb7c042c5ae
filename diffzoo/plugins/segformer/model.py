"""The SegFormer network, built with transformers."""

from __future__ import annotations

from functools import partial

from torch import nn

from diffzoo.plugin import NO_PRETRAINED, SegmentationDetector, hub_pretrained


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
            # the card's arch over the hub's config.json (which no hash checks): the model is the card's, and
            # weights of another encoder are refused as tensors of another shape
            model = hub_pretrained(self.card, partial(SegformerForSemanticSegmentation.from_pretrained,
                                                      num_labels=num_outputs, ignore_mismatched_sizes=True,
                                                      **self.card.arch),
                                   ("model.safetensors", "pytorch_model.bin"),
                                   detail=NO_PRETRAINED, head=self.head_prefixes)
        else:
            config = SegformerConfig(**self.card.arch, num_labels=num_outputs)
            model = SegformerForSemanticSegmentation(config)
        return _Logits(model)
