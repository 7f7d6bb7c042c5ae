"""The quality filter of ``diffzoo generate``: area bounds, no-op edits, an optional scorer.

- **area bounds**: a region is used only when its area fraction lies in
  [``min_area``, ``max_area``] (applied when regions are chosen);
- **no-op**: an edit that visibly changed fewer than ``min_changed`` of its
  masked pixels is rejected; "visibly" is the pixel-difference rule of
  :func:`diffzoo.generators.editors.labels.difference_label` (mean over RGB of
  |before - after| > ``tau``, unaligned, no cleanup);
- **scorer** (default off): any callable ``scorer(before, after, mask,
  prompt, edit_type) -> float`` on a 0-5 scale, e.g. the VLM judge in
  ``vlm.py``; edits scoring below ``min_score`` (3) are rejected.

A rejected edit is retried with another region, prompt and seed (``tries``
times in all); a sample whose turn fails every try is left out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from diffzoo.generators.editors.labels import DEFAULT_TAU, difference_label, shown_share
from diffzoo.generators.generate.defaults import GenerateConfig
from diffzoo.harness.core.errors import ConfigError

Scorer = Callable[[np.ndarray, np.ndarray, np.ndarray, str, str], float]


def changed_fraction(before: np.ndarray, after: np.ndarray, mask: np.ndarray, tau: float = DEFAULT_TAU) -> float:
    """Fraction of ``mask``'s pixels that visibly changed from ``before`` to ``after``."""
    n = int(mask.sum())
    if n == 0:
        return 0.0
    diff = difference_label(before, after, tau, min_area=0, max_area=1, cleanup=0, align_images=False)
    return float(((diff.mask == 1) & mask).sum() / n)


@dataclass
class QualityFilter:
    """Settings of the filter; calling it checks one edit (None = accepted, else the reason)."""

    min_area: float = GenerateConfig.min_area
    max_area: float = GenerateConfig.max_area
    min_changed: float = GenerateConfig.min_changed
    tau: float = DEFAULT_TAU
    scorer: Scorer | None = None
    min_score: float = GenerateConfig.min_score
    tries: int = GenerateConfig.tries

    def __post_init__(self) -> None:
        if not 0.0 <= self.min_area <= self.max_area <= 1.0:
            raise ConfigError("--min-area and --max-area need 0 <= --min-area <= --max-area <= 1, "
                              f"got {self.min_area}, {self.max_area}")
        if not 0.0 <= self.min_changed <= 1.0:
            raise ConfigError(f"--min-changed must be in [0, 1], got {self.min_changed}")
        if self.tries < 1:
            raise ConfigError(f"--tries must be at least 1, got {self.tries}")

    def __call__(self, before: np.ndarray, after: np.ndarray, mask: np.ndarray, prompt: str,
                 edit_type: str) -> str | None:
        changed = changed_fraction(before, after, mask, self.tau)
        if changed < self.min_changed:
            shown = shown_share(changed, self.min_changed)
            return f"no-op ({shown} of the region changed, below {self.min_changed * 100:g}%)"
        if self.scorer is not None:
            score = float(self.scorer(before, after, mask, prompt, edit_type))
            if score < self.min_score:
                return f"score {score:g} below {self.min_score:g}"
        return None

    def settings(self) -> dict[str, Any]:
        """What decides acceptance, as recorded in the run's config."""
        return {
            "min_area": self.min_area,
            "max_area": self.max_area,
            "min_changed": self.min_changed,
            "tau": self.tau,
            "scorer": getattr(self.scorer, "name", type(self.scorer).__name__) if self.scorer else None,
            "min_score": self.min_score if self.scorer else None,
            "tries": self.tries,
        }
