"""Post-processing of checked detector outputs (core/outputs.pixel_predictions)."""

import types

import numpy as np
import torch
import torch.nn.functional as F

from diffzoo.harness.core.outputs import pixel_predictions
from diffzoo.harness.core.types import DetectionOutput


def test_semantic_labels_are_the_first_most_probable_class_even_on_ties():
    det = types.SimpleNamespace(task="semantic")
    g = torch.Generator().manual_seed(3)
    logits = torch.randint(0, 3, (2, 9, 17, 23), generator=g).float()  # many exact ties
    logits[1] = torch.randn(9, 17, 23, generator=g)
    for size in ((17, 23), (30, 11)):
        got = pixel_predictions(det, DetectionOutput(mask_logits=logits), 0.5, size)
        x = logits if size == (17, 23) else F.interpolate(logits, size=size, mode="bilinear", align_corners=False)
        probs = torch.softmax(x, dim=1)
        for (binary, edited, semantic), want, p in zip(got, probs.argmax(1), probs):
            assert semantic.dtype == np.uint8 and np.array_equal(semantic, want.numpy().astype(np.uint8))
            assert np.array_equal(binary, (semantic > 0).astype(np.uint8))
            assert np.array_equal(edited, (1.0 - p[0]).numpy())
