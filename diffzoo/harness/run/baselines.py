"""The constant predictors' metric states (all background, all edited), cached.

They depend on the ground truth alone, so every pass over the same images
whose distortion keeps the labels (JPEG, blur, resize-and-back, ...) would
compute the same states again: each is computed once per dataset
fingerprint, split and image list in a process (the main detector's and
every reference detector's runner share them) and handed out as copies.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from diffzoo.harness.core.types import BINARY, SampleMeta
from diffzoo.harness.metrics import EvalState

NAMES = ("all_background", "all_edited")


def empty() -> dict[str, EvalState]:
    """Fresh baseline states."""
    return {name: EvalState(BINARY, "binary") for name in NAMES}


def update(states: dict[str, EvalState], meta: SampleMeta, binary_gt: np.ndarray) -> None:
    """Score both constant predictions of one image against its binary ground truth."""
    for name, state in states.items():
        const = np.full_like(binary_gt, 1 if name == "all_edited" else 0)
        state.update(meta, binary_gt, const, const.astype(np.float32))


def _copy(states: dict[str, EvalState]) -> dict[str, EvalState]:
    return {name: EvalState.from_state_dict(state.state_dict()) for name, state in states.items()}


class BaselineCache:
    """Baseline states of one dataset by (split, ids a pass read), with the
    ids they scored (those not skipped as unreadable)."""

    def __init__(self) -> None:
        self._states: dict[tuple[str, tuple[str, ...]], tuple[dict[str, EvalState], list[str]]] = {}

    def get(self, split: str, ids: Sequence[str]) -> tuple[dict[str, EvalState], list[str]] | None:
        """(copies of the states, the ids they scored), or None."""
        found = self._states.get((split, tuple(ids)))
        return None if found is None else (_copy(found[0]), list(found[1]))

    def put(self, split: str, ids: Sequence[str], states: dict[str, EvalState], scored: Sequence[str]) -> None:
        self._states[(split, tuple(ids))] = (_copy(states), list(scored))


_CACHES: dict[str, BaselineCache] = {}


def baseline_cache(fingerprint: str) -> BaselineCache:
    """The process's cache for the dataset with ``fingerprint``."""
    return _CACHES.setdefault(fingerprint, BaselineCache())
