"""Benchmark suites: versioned, declarative lists of cases (see :mod:`.model`)."""

from diffzoo.harness.suites.cross import CROSS_DATASET, EVAL_SPLITS, EVAL_SPLITS_OPTION, OPENSDI, is_cross
from diffzoo.harness.suites.model import SLICE_BY, Case, Suite, TrainSpec
from diffzoo.harness.suites.paper import (
    CLASSIFICATION,
    DISTORTIONS,
    FORMAT_PARITY,
    LORA,
    PAPER_DISTORTIONS,
    PAPER_PAIRS,
    PAPER_SETTING_NAMES,
    PAPER_SUITES,
    SLICE_CASE_METRICS,
    SLICES,
    UNSEEN_GENERATORS,
    distortion_cases,
    pair_name,
    unseen_generators_suite,
)
from diffzoo.harness.suites.standard import IMAGE_METRICS, PIXEL_METRICS, STANDARD

ALL_SUITES: tuple[Suite, ...] = (STANDARD, *PAPER_SUITES, CROSS_DATASET, OPENSDI)

__all__ = [
    "ALL_SUITES", "CLASSIFICATION", "CROSS_DATASET", "Case", "DISTORTIONS", "EVAL_SPLITS", "EVAL_SPLITS_OPTION",
    "OPENSDI", "FORMAT_PARITY", "IMAGE_METRICS", "LORA",
    "PAPER_DISTORTIONS", "PAPER_PAIRS", "PAPER_SETTING_NAMES", "PAPER_SUITES", "PIXEL_METRICS", "SLICES",
    "SLICE_BY", "SLICE_CASE_METRICS", "STANDARD", "Suite", "TrainSpec",
    "UNSEEN_GENERATORS", "distortion_cases", "is_cross", "pair_name", "unseen_generators_suite",
]
