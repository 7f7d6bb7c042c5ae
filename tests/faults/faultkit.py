"""Shared pieces of the fault suite: a detector whose answers a test
scripts, registered as plugin ``faulty`` (detector ``faulty.x``), so a run
needs no training and each test chooses exactly what comes back."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from conftest import register_test_detector
from diffzoo import DetectionOutput, DetectorCard, Detector
from diffzoo.harness.core.plugins import reset_plugins
from diffzoo.harness.core.types import BINARY

REPO = Path(__file__).resolve().parents[2]


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


@pytest.fixture
def faulty(monkeypatch) -> Callable[..., None]:
    """Register detector ``faulty.x``; call the fixture's value with an
    ``answer(images)`` to script its predictions (default: well formed), or
    a ``bias`` added to the default heuristic's logits (other numbers, same
    weights), or a ``score(images)`` it also gives as its own image score."""
    script: dict = {"answer": None, "bias": 0.0, "score": None}

    def register(score: bool) -> None:  # trainable=False: used as built, a run never trains it
        register_test_detector(
            monkeypatch, faulty_card(trainable=False, gives_image_score=score),
            lambda build: Scripted(build.task, build.label_space, script["answer"], build.card, script["bias"],
                                   script["score"]))

    register(False)

    def use(answer: Callable | None = None, bias: float = 0.0, score: Callable | None = None) -> None:
        script.update(answer=answer, bias=bias, score=score)
        if score is not None:  # a detector that gives its own image score says so on its card
            reset_plugins()
            register(True)

    return use
