"""Detectors the tests define, and registering them as a third party's plugin would.

:class:`Scripted` answers what a test scripts (detector ``faulty.x``, see the ``faulty`` fixture
of ``tests/faults/conftest.py``), so a run needs no training and each test chooses exactly what
comes back."""

from __future__ import annotations

from pathlib import Path

import torch

from diffzoo import DetectionOutput, Detector, DetectorCard
from diffzoo.harness.core.types import BINARY


def register_test_detector(monkeypatch, card, make) -> None:
    """Register detector ``card.name`` as a third party's plugin would: a module (put in
    ``sys.modules`` for the test) whose ``make(card, task, label_space, pretrained)`` builds it,
    named by a hookimpl of ``register_detectors``.  The plugin system is reset after every
    test (the autouse ``_cache`` fixture of ``tests/conftest.py``), so nothing outlives the test."""
    import sys

    from diffzoo import hookimpl
    from diffzoo.harness.core.plugins import get_plugin_system

    module_name = "tests_detector_" + "".join(ch if ch.isalnum() else "_" for ch in card.name)
    module = type(sys)(module_name)
    module.make = make
    monkeypatch.setitem(sys.modules, module_name, module)

    class Plugin:
        @hookimpl
        def register_detectors(self, register):
            register(card.name, f"{module_name}:make", card=card, default=True)

    get_plugin_system().pm.register(Plugin(), name=module_name)


def faulty_card(**training) -> DetectorCard:
    return DetectorCard(name="faulty.x", description="a detector whose answers the test chooses",
                        tasks=("binary", "semantic", "classification"), **training)


class Scripted(Detector):
    """Answers ``answer(images)``; a working detector (a brightness
    heuristic) when ``answer`` is None.  Saves a real, constant checkpoint."""

    def __init__(self, task="binary", label_space=BINARY, answer=None, card=None, bias=0.0, score=None):
        self.card, self.task, self.label_space, self.answer = card or faulty_card(), task, label_space, answer
        self.bias, self.score = bias, score

    def predict(self, images):
        if self.answer is not None:
            return self.answer(images)
        b, _, h, w = images.shape
        if self.task == "classification":
            return DetectionOutput(image_score=images.mean((1, 2, 3)).clamp(0, 1))
        c = 1 if self.task == "binary" else self.label_space.num_classes
        return DetectionOutput(mask_logits=images.mean(1, keepdim=True).expand(b, c, h, w) * 4 - 2 + self.bias,
                               image_score=None if self.score is None else self.score(images))

    def fit(self, train, config, progress=None):
        return {}

    def save(self, path, extra=None):
        from diffzoo.harness.models.checkpoints import save_checkpoint

        return save_checkpoint(Path(path), {"w": torch.ones(3)},
                               {"card": self.card.to_dict(), "task": self.task, **(extra or {})})

    def load(self, path):
        from diffzoo.harness.models.checkpoints import load_checkpoint

        return load_checkpoint(path)[1]
