"""Distortions applied to an image (and its label) before the detector.

Each is a function ``(image, label, **params) -> (image, label)``, registered
through ``register_distortions``.  They must be deterministic.
"""

from __future__ import annotations

import numpy as np


def identity(image: np.ndarray, label: np.ndarray, **params) -> tuple[np.ndarray, np.ndarray]:
    """No distortion."""
    return image, label
