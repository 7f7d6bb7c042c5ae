"""Fixtures of the fault suite."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from diffzoo.harness.core.plugins import reset_plugins

from helpers.detectors import Scripted, faulty_card, register_test_detector


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
