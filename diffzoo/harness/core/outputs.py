"""The detector boundary: every prediction is checked before a metric sees it.

A detector (built in or a third party's) returns a :class:`DetectionOutput`
for a batch of B images of H x W.  :func:`check_output` holds it to the
protocol (docs/plugins.md, "What predict must return") and raises a
:class:`DetectorError` naming the detector, the sample, what was expected
and what came back; :func:`pixel_predictions` then turns a checked output
into the label maps and probabilities the metric states take.

The pixel output comes in exactly one of three forms:

- ``mask_logits``: B x C x H x W finite floats (C = 1 for a binary detector:
  the logit of ``edited``; C = the label space's class count for a semantic
  one);
- ``mask_probs``: the same shape, probabilities in [0, 1] (a semantic
  detector's class probabilities sum to 1 per pixel);
- ``labels``: B x H x W integer class indices (0/1 for binary, 0..C-1 for
  semantic): a detector that only gives hard masks.  Its edited probability
  is then 0 or 1, so pixel AUC is that of a single threshold.

``image_score`` is B finite probabilities in [0, 1] (required for a
classification detector, optional otherwise).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from diffzoo.harness.core.errors import DetectorError
from diffzoo.harness.core.types import PIXEL_TASKS, DetectionOutput

PIXEL_FIELDS = ("mask_logits", "mask_probs", "labels")
PROB_SUM_TOLERANCE = 1e-3
"""How far a semantic detector's class probabilities may sum from 1 per pixel (float32 softmax noise);
for a coarser dtype its epsilon (bfloat16: 2**-7), as each probability is rounded to it."""


def _describe(value: Any) -> str:
    if isinstance(value, (torch.Tensor, np.ndarray)):
        return f"{type(value).__name__} of shape {list(value.shape)} and dtype {value.dtype}"
    return f"{type(value).__name__} {value!r}"[:120]


def _ids_text(ids: Sequence[str]) -> str:
    if len(ids) == 1:
        return ids[0]
    return f"{ids[0]} (batch of {len(ids)}: {', '.join(ids[:4])}{' ...' if len(ids) > 4 else ''})"


class _Checker:
    """Raises one DetectorError per violation, naming detector and sample."""

    def __init__(self, detector: Any, ids: Sequence[str]):
        self.detector = getattr(getattr(detector, "card", None), "name", None) or type(detector).__name__
        self.ids = list(ids)

    def fail(self, problem: str, expected: str, got: str, index: int | None = None) -> DetectorError:
        sample = self.ids[index] if index is not None else _ids_text(self.ids)
        return DetectorError(self.detector, problem, sample_id=sample, expected=expected, got=got)

    def tensor(self, field: str, value: Any) -> torch.Tensor:
        if isinstance(value, np.ndarray):
            if value.dtype == object:
                raise self.fail(f"{field} has the wrong dtype", "a numeric tensor", _describe(value))
            value = torch.from_numpy(np.ascontiguousarray(value))
        if not isinstance(value, torch.Tensor):
            raise self.fail(f"{field} is not a tensor", "a torch.Tensor", _describe(value))
        return value

    def first_bad(self, bad_per_item: torch.Tensor) -> int | None:
        """Index of the first batch item flagged in a B-long bool tensor, or None."""
        hits = torch.nonzero(bad_per_item.reshape(-1)).reshape(-1)
        return int(hits[0]) if hits.numel() else None


def check_output(detector: Any, out: Any, ids: Sequence[str], size: tuple[int, int]) -> DetectionOutput:
    """``out`` if it is a valid answer of ``detector`` to a batch of
    ``len(ids)`` images of ``size`` (H, W); else a DetectorError."""
    c = _Checker(detector, ids)
    batch, (h, w) = len(ids), size
    task = detector.task
    if out is None:
        raise c.fail("predict returned None", "a DetectionOutput", "None")
    if not isinstance(out, DetectionOutput):
        raise c.fail("predict returned the wrong type", "a diffzoo.DetectionOutput", _describe(out))
    given = [f for f in PIXEL_FIELDS if getattr(out, f, None) is not None]
    if len(given) > 1:
        raise c.fail("set more than one pixel output", f"one of {', '.join(PIXEL_FIELDS)}", ", ".join(given))
    if task in PIXEL_TASKS and not given:
        raise c.fail(f"a {task} detector returned no pixel output",
                     "mask_logits (B x C x H x W), mask_probs or labels", "None")
    if task == "classification" and out.image_score is None:
        raise c.fail("a classification detector returned no image_score", f"image_score of {batch} probabilities",
                     "None")
    if given:
        channels = 1 if task != "semantic" else detector.label_space.num_classes  # semantic: one per class
        _check_pixels(c, given[0], getattr(out, given[0]), batch, channels, (h, w))
    if out.image_score is not None:
        _check_scores(c, out.image_score, batch)
    return out


def _check_pixels(c: _Checker, field: str, value: Any, batch: int, channels: int, size: tuple[int, int]) -> None:
    x = c.tensor(field, value)
    labels = field == "labels"
    want = (f"{batch} x {size[0]} x {size[1]} (B x H x W)" if labels
            else f"{batch} x {channels} x {size[0]} x {size[1]} (B x C x H x W)")
    problem = None
    if x.dim() != (3 if labels else 4):
        problem = f"{field} has {x.dim()} dimension(s)"
    elif x.shape[0] != batch:
        problem = f"{field} holds a batch of {x.shape[0]} for {batch} input image(s)"
    elif not labels and x.shape[1] != channels:
        problem = f"{field} has {x.shape[1]} channel(s); the task needs {channels}"
    elif tuple(x.shape[-2:]) != tuple(size):
        problem = f"{field} is {x.shape[-2]} x {x.shape[-1]} (H x W) for an input of {size[0]} x {size[1]}"
    if problem:
        raise c.fail(problem, want, f"shape {list(x.shape)}")
    if field == "labels":
        if x.dtype == torch.bool:
            x = x.to(torch.uint8)
        if x.is_floating_point() or x.is_complex():
            raise c.fail("labels have the wrong dtype", "integer class indices", f"dtype {x.dtype}")
        classes = max(channels, 2)  # a binary detector's labels are 0/1
        if (index := c.first_bad(((x < 0) | (x >= classes)).flatten(1).any(1))) is not None:
            item = x[index]
            values = torch.unique(item[(item < 0) | (item >= classes)])[:8].tolist()
            raise c.fail("labels lie outside the label space", f"class indices 0..{classes - 1}",
                         f"values {values}", index)
        return
    if not x.is_floating_point():
        raise c.fail(f"{field} has the wrong dtype", "floating point", f"dtype {x.dtype}")
    if (index := c.first_bad((~torch.isfinite(x)).flatten(1).any(1))) is not None:
        item = x[index]
        what = "NaN" if torch.isnan(item).any() else "inf"
        raise c.fail(f"{field} holds {what}", "finite values",
                     f"{int((~torch.isfinite(item)).sum())} non-finite value(s)", index)
    if field == "mask_probs":
        if (index := c.first_bad(((x < 0) | (x > 1)).flatten(1).any(1))) is not None:
            item = x[index]
            raise c.fail("mask_probs lie outside [0, 1]", "probabilities in [0, 1]",
                         f"values from {float(item.min()):.4g} to {float(item.max()):.4g}", index)
        if channels > 1:
            drift = (x.float().sum(1) - 1).abs().flatten(1).amax(1)  # summed in float32: no rounding of its own
            tolerance = max(PROB_SUM_TOLERANCE, torch.finfo(x.dtype).eps)
            if (index := c.first_bad(drift > tolerance)) is not None:
                raise c.fail("class probabilities do not sum to 1", f"a sum of 1 per pixel (±{tolerance:.4g})",
                             f"sums off by up to {float(drift[index]):.4g}", index)


def _check_scores(c: _Checker, value: Any, batch: int) -> None:
    x = c.tensor("image_score", value)
    if x.numel() != batch or (x.dim() > 1 and tuple(x.shape) != (batch, 1)):
        raise c.fail("image_score holds the wrong number of scores", f"{batch} score(s), shape [B] or [B, 1]",
                     f"shape {list(x.shape)}")
    if not x.is_floating_point():
        raise c.fail("image_score has the wrong dtype", "floating-point probabilities", f"dtype {x.dtype}")
    x = x.reshape(-1)
    if (index := c.first_bad(~torch.isfinite(x) | (x < 0) | (x > 1))) is not None:
        raise c.fail("image_score is not a probability", "a finite value in [0, 1]", f"{float(x[index])!r}", index)


def has_pixels(out: DetectionOutput) -> bool:
    """True if ``out`` carries a pixel output (else: image scores only)."""
    return any(getattr(out, f) is not None for f in PIXEL_FIELDS)


def pixel_tensors(detector: Any, out: DetectionOutput, threshold: float, size: tuple[int, int]
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """(binary pred uint8 B x H x W, edited prob float B x H x W, semantic pred uint8 or None)
    of a checked output, at ``size`` (H, W), on the output's own device: when a distortion
    changed the image size but kept the label, probabilities are resized bilinearly and hard
    labels by nearest neighbour ("resize, and back for scoring")."""
    field = next(f for f in PIXEL_FIELDS if getattr(out, f) is not None)
    x = getattr(out, field)
    if isinstance(x, np.ndarray):
        x = torch.from_numpy(np.ascontiguousarray(x))
    semantic = detector.task == "semantic"
    if field == "labels":
        labels = x.to(torch.uint8)
        if tuple(labels.shape[-2:]) != tuple(size):
            labels = F.interpolate(labels[:, None].float(), size=size, mode="nearest")[:, 0].to(torch.uint8)
        edited = (labels > 0).to(torch.uint8)
        return edited, edited.float(), labels if semantic else None
    x = x.float()
    if tuple(x.shape[-2:]) != tuple(size):
        x = F.interpolate(x, size=size, mode="bilinear", align_corners=False)
    if field == "mask_logits":
        probs = torch.sigmoid(x) if not semantic else torch.softmax(x, dim=1)
    else:
        probs = x.clamp(0, 1)
    if not semantic:
        edited = probs[:, 0]
        return (edited > threshold).to(torch.uint8), edited, None
    # max(1).indices is argmax(1) (the first maximal class on ties) at about a fifth of
    # its cost on CPU, where argmax over the strided class dimension is slow (measured).
    classes = probs.max(1).indices.to(torch.uint8)
    return (classes > 0).to(torch.uint8), 1.0 - probs[:, 0], classes


def pixel_predictions(detector: Any, out: DetectionOutput, threshold: float, size: tuple[int, int]
                      ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray | None]]:
    """:func:`pixel_tensors` as numpy arrays, one (binary pred, edited prob, semantic pred or
    None) per batch item."""
    binary_t, edited_t, semantic_t = pixel_tensors(detector, out, threshold, size)
    binary, edited = binary_t.cpu().numpy(), edited_t.cpu().numpy()
    semantic = None if semantic_t is None else semantic_t.cpu().numpy()
    return [(b, e, None if semantic is None else semantic[i]) for i, (b, e) in enumerate(zip(binary, edited))]
