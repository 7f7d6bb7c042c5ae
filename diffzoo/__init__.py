"""diffzoo: localize and attribute diffusion-model image edits.

Public API: ``hookimpl`` for plugins, the protocols and value types, and the
``create_*`` factories.  Everything else lives in subpackages.
"""

from __future__ import annotations

__version__ = "0.1.0"

import importlib
import logging

from .harness.cards import DetectorCard, GeneratorCard, RecipeValue, register_cards
from .harness.checkpoints import load_checkpoint, save_checkpoint
from .harness.errors import (
    ConfigError, CorruptSampleError, DataError, DetectorError, DiffzooError, ModelError, WeightsUnavailableError,
)
from .harness.factories import create_detector, create_generator, open_dataset
from .harness.hookspecs import hookimpl
from .harness.protocols import Dataset, Detector, EditResult, Generator
from .harness.suites import Case, Suite, TrainSpec
from .harness.types import DetectionOutput, EditRecord, LabelSpace, Sample, SampleMeta

# A library logs; the application (the CLI) decides where logs go.
logging.getLogger(__name__).addHandler(logging.NullHandler())

# Base classes for plugin authors; they import torch, so they load on first use.
_LAZY = {
    "SegmentationDetector": ".harness.segmenter",
    "TrainData": ".harness.segmenter",
    "TrainConfig": ".harness.trainer",
}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module 'diffzoo' has no attribute {name!r}")


__all__ = [
    "__version__",
    "hookimpl",
    "register_cards",
    "DiffzooError",
    "ConfigError",
    "CorruptSampleError",
    "DataError",
    "DetectorError",
    "ModelError",
    "WeightsUnavailableError",
    "Case",
    "Suite",
    "TrainSpec",
    "SegmentationDetector",
    "TrainData",
    "TrainConfig",
    "create_detector",
    "create_generator",
    "open_dataset",
    "save_checkpoint",
    "load_checkpoint",
    "Detector",
    "Generator",
    "Dataset",
    "EditResult",
    "DetectionOutput",
    "DetectorCard",
    "GeneratorCard",
    "RecipeValue",
    "LabelSpace",
    "Sample",
    "SampleMeta",
    "EditRecord",
]
