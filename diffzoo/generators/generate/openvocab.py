"""Open-vocabulary regions: Grounding DINO boxes + SAM masks, through transformers.

:class:`OpenVocabRegions` asks a detector for boxes of named objects (the
80 COCO class names, or names a VLM lists for the image, ``vlm.py``), turns
every box into a mask with a box-prompted segmenter, and drops
near-duplicate masks (IoU > 0.7).  The detector and segmenter are plain
objects (``detect(image, names) -> [Detection]``, ``segment(image, boxes) ->
[bool mask]``), so others can be swapped in; the defaults load
``GroundingDinoForObjectDetection`` and ``SamModel``.  Weights that are not in
the local cache while offline raise :class:`WeightsUnavailableError` naming
the hub id to download.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from diffzoo.generators.editors.diffusers_editor import HubModel
from diffzoo.generators.generate.defaults import DEFAULT_DETECTOR, DEFAULT_SAM
from diffzoo.generators.generate.regions import Region, dedupe_overlaps, regions_of

log = logging.getLogger(__name__)

COCO_CLASSES: tuple[str, ...] = (
    "person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat",
    "traffic light", "fire hydrant", "stop sign", "parking meter", "bench", "bird", "cat", "dog",
    "horse", "sheep", "cow", "elephant", "bear", "zebra", "giraffe", "backpack", "umbrella",
    "handbag", "tie", "suitcase", "frisbee", "skis", "snowboard", "sports ball", "kite",
    "baseball bat", "baseball glove", "skateboard", "surfboard", "tennis racket", "bottle",
    "wine glass", "cup", "fork", "knife", "spoon", "bowl", "banana", "apple", "sandwich", "orange",
    "broccoli", "carrot", "hot dog", "pizza", "donut", "cake", "chair", "couch", "potted plant",
    "bed", "dining table", "toilet", "tv", "laptop", "mouse", "remote", "keyboard", "cell phone",
    "microwave", "oven", "toaster", "sink", "refrigerator", "book", "clock", "vase", "scissors",
    "teddy bear", "hair drier", "toothbrush",
)  # fmt: skip


@dataclass(frozen=True)
class Detection:
    """A box ``(x0, y0, x1, y1)`` in pixels, the object name, the detector's score."""

    box: tuple[float, float, float, float]
    label: str
    score: float


class GroundingDinoDetector(HubModel):
    """Boxes of named objects from Grounding DINO (``model``/``processor`` may be given built)."""

    what, default = "open-vocabulary detector", DEFAULT_DETECTOR
    classes = ("AutoProcessor", "GroundingDinoForObjectDetection")

    def __init__(self, model_id: str | None = None, device: str = "cpu", *, box_threshold: float = 0.35,
                 text_threshold: float = 0.25, **built: Any):
        super().__init__(model_id, device, **built)
        self.box_threshold, self.text_threshold = box_threshold, text_threshold

    def detect(self, image: np.ndarray, names: Sequence[str]) -> list[Detection]:
        import torch
        from PIL import Image

        model, processor = self._load()
        text = ". ".join(n.strip().lower() for n in names if n.strip()) + "."
        inputs = processor(images=Image.fromarray(image), text=text, return_tensors="pt").to(self.device)
        with torch.inference_mode():
            outputs = model(**inputs)
        result = processor.post_process_grounded_object_detection(
            outputs, inputs["input_ids"], threshold=self.box_threshold, text_threshold=self.text_threshold,
            target_sizes=[image.shape[:2]],
        )[0]  # fmt: skip
        labels = result["text_labels"] if "text_labels" in result else result["labels"]
        return [
            Detection(tuple(float(v) for v in box.tolist()), str(label), float(score))
            for box, label, score in zip(result["boxes"], labels, result["scores"])
        ]


class SamSegmenter(HubModel):
    """One mask per box from SAM (``model``/``processor`` may be given built)."""

    what, default, classes = "segmenter (SAM)", DEFAULT_SAM, ("SamProcessor", "SamModel")

    def segment(self, image: np.ndarray, boxes: Sequence[Sequence[float]]) -> list[np.ndarray]:
        import torch
        from PIL import Image

        if not boxes:
            return []
        model, processor = self._load()
        inputs = processor(images=Image.fromarray(image), input_boxes=[[list(map(float, b)) for b in boxes]],
                           return_tensors="pt").to(self.device)
        with torch.inference_mode():
            outputs = model(**inputs, multimask_output=False)
        masks = processor.image_processor.post_process_masks(
            outputs.pred_masks.cpu(), inputs["original_sizes"].cpu(), inputs["reshaped_input_sizes"].cpu()
        )[0]  # (boxes, 1, H, W)
        return [m[0].numpy().astype(bool) for m in masks]


class OpenVocabRegions:
    """Region source: detect named objects, segment each box, drop near-duplicates.

    ``namer(image) -> [names]`` (e.g. :class:`~diffzoo.generators.generate.vlm.VlmObjectNamer`)
    replaces the fixed ``vocabulary`` when given.  At most ``max_regions``
    detections (highest scores) are segmented.
    """

    name = "open-vocab"

    def __init__(self, detector: Any, segmenter: Any, *, namer: Any = None,
                 vocabulary: Sequence[str] = COCO_CLASSES, max_regions: int = 10):
        self.detector, self.segmenter, self.namer = detector, segmenter, namer
        self.vocabulary, self.max_regions = tuple(vocabulary), max_regions

    def candidates(self, base: Any, rng: np.random.Generator) -> list[Region]:
        image = base.image
        names = list(self.namer(image)) if self.namer is not None else list(self.vocabulary)
        if not names:
            return []
        found = sorted(self.detector.detect(image, names), key=lambda d: -d.score)[: self.max_regions]
        masks = self.segmenter.segment(image, [d.box for d in found])
        kept = dedupe_overlaps(regions_of(((m, d.label) for d, m in zip(found, masks)), "open-vocab"))
        log.debug("open-vocab: %d detection(s), %d region(s) kept", len(found), len(kept))
        return kept
