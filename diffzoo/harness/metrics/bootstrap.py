"""Bootstrap confidence intervals over images.

Definition (docs/metrics.md): 95% CI over images with a fixed seed, without
re-running inference.  Each replicate draws as many images as were
evaluated, with replacement (``numpy.random.default_rng(seed)``, images in
canonical order: sorted by id), and recomputes the dataset-level metrics
from the per-image rows (an image drawn k times counts k times in every sum).
The interval is the 2.5th and 97.5th percentile of the replicates, ignoring
replicates where the metric is undefined (NaN); it is NaN for fewer than two images
(every replicate of one image is that image).

``pixel_AUC``, ``F1_oracle`` and the counts are not resampled (the pixel histograms are
kept for the dataset only): asked for by name, their interval is (NaN, NaN).
"""

from __future__ import annotations

import logging
import warnings

import numpy as np

from diffzoo.harness.core.errors import ConfigError, did_you_mean
from diffzoo.harness.core.types import MAX_BOOTSTRAP, check_seed
from diffzoo.harness.metrics.aggregate import Aggregator
from diffzoo.harness.metrics.catalog import COUNT_METRICS

logger = logging.getLogger(__name__)

NOT_RESAMPLED: tuple[str, ...] = ("pixel_AUC", "F1_oracle", *COUNT_METRICS)


def bootstrap_ci(agg: Aggregator, available: list[str], n: int, seed: int,
                 metrics: list[str] | None) -> dict[str, tuple[float, float]]:
    """metric -> (2.5th, 97.5th percentile) over ``n`` bootstrap replicates."""
    if metrics is None:
        metrics = [m for m in available if m not in NOT_RESAMPLED]
    if isinstance(metrics, str):  # a name would be read letter by letter
        raise ConfigError(f"bootstrap metrics must be a list of metric names, got {metrics!r}")
    for m in metrics:
        if m not in available:
            raise ConfigError(f"unknown metric {m!r} for bootstrap.{did_you_mean(m, available, n=3)}")
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_BOOTSTRAP:
        raise ConfigError(f"bootstrap needs 1 to {MAX_BOOTSTRAP:,} replicates, got {n!r}")
    check_seed(seed, "bootstrap seed")
    nan = (float("nan"), float("nan"))
    if skipped := [m for m in metrics if m in NOT_RESAMPLED]:
        logger.info("bootstrap: %s not resampled; interval NaN", ", ".join(skipped))
    resampled = [m for m in metrics if m not in NOT_RESAMPLED]
    if agg.n < 2:  # one image resampled is that image: a zero-width interval would claim certainty
        logger.warning("bootstrap of %s: every interval is NaN", "an empty metric state" if agg.n == 0 else
                       "1 image (every replicate is that image)")
        return {m: nan for m in metrics}
    rng = np.random.default_rng(seed)
    values = np.empty((n, len(resampled)))
    for r in range(n):
        w = np.bincount(rng.integers(0, agg.n, size=agg.n), minlength=agg.n).astype(np.float64)
        summary = agg.summarize(w)
        values[r] = [summary[m] for m in resampled]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        lo, hi = np.nanpercentile(values, [2.5, 97.5], axis=0) if resampled else ([], [])
    ci = {m: (float(lo[i]), float(hi[i])) for i, m in enumerate(resampled)}
    return {m: ci.get(m, nan) for m in metrics}
