"""diffzoo: localize and attribute diffusion-model image edits.

Public API: :func:`evaluate` (run suites end to end, as ``diffzoo run``) and
:func:`train`; ``hookimpl`` for plugins, the protocols and value types, and
the ``create_*`` factories.  Everything else lives in subpackages
(docs/architecture.md).
"""

from __future__ import annotations

import importlib
import logging

from diffzoo.version import __version__
from diffzoo.harness.core.cards import DetectorCard, GeneratorCard, RecipeValue, register_cards
from diffzoo.harness.models.checkpoints import load_checkpoint, save_checkpoint
from diffzoo.harness.core.errors import (
    ConfigError, CorruptSampleError, DataError, DetectorError, DiffzooError, ModelError, WeightsUnavailableError,
)
from diffzoo.harness.run.factories import create_detector, create_generator, open_dataset
from diffzoo.harness.core.hookspecs import hookimpl
from diffzoo.harness.core.protocols import Dataset, Detector, EditResult, Generator
from diffzoo.harness.suites import Case, Suite, TrainSpec
from diffzoo.harness.core.types import DetectionOutput, EditRecord, LabelSpace, Sample, SampleMeta

# A library logs; the application (the CLI) decides where logs go.
logging.getLogger(__name__).addHandler(logging.NullHandler())

# The entry points and the base classes for plugin authors import torch, so they load on first use.
_LAZY = {
    "evaluate": ".api",
    "train": ".api",
    "Evaluation": ".api",
    "SegmentationDetector": ".harness.models.segmenter",
    "TrainData": ".harness.models.segmenter",
    "TrainConfig": ".harness.core.train_config",
}


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module 'diffzoo' has no attribute {name!r}")


__all__ = [
    "__version__",
    "evaluate",
    "train",
    "Evaluation",
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
