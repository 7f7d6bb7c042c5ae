"""diffzoo: localize and attribute diffusion-model image edits.

Public API: :func:`evaluate` (run suites end to end, as ``diffzoo run``) and
:func:`train`; ``hookimpl`` for plugins, the protocols and value types, and
the ``create_*`` factories.  Everything else lives in subpackages
(docs/architecture.md).
"""

from __future__ import annotations

import logging

from diffzoo.version import __version__
from diffzoo.harness.core.cards import DetectorCard, GeneratorCard, RecipeValue, register_cards
from diffzoo.harness.core.errors import (
    ConfigError, CorruptSampleError, DataError, DetectorError, DiffzooError, ModelError, WeightsUnavailableError,
)
from diffzoo.harness.core.hookspecs import hookimpl
from diffzoo.harness.core.lazy import lazy_exports
from diffzoo.harness.core.moved import install as install_moved_modules
from diffzoo.harness.core.protocols import Dataset, Detector, EditResult, Generator
from diffzoo.harness.suites import Case, Suite, TrainSpec
from diffzoo.harness.core.types import DetectionOutput, EditRecord, LabelSpace, Sample, SampleMeta

# A library logs; the application (the CLI) decides where logs go.
logging.getLogger(__name__).addHandler(logging.NullHandler())
# Modules that moved stay importable by their old names, with a FutureWarning (harness/core/moved.py).
install_moved_modules()

# The entry points and the base classes for plugin authors import torch, and the factories and
# checkpoint functions the dataset adapters and numpy: they load on first use, so that `import
# diffzoo` (and `diffzoo --help`, `diffzoo list`) stays light.
_LAZY = {
    "create_detector": ".harness.run.factories",
    "create_generator": ".harness.run.factories",
    "open_dataset": ".harness.run.factories",
    "load_checkpoint": ".harness.models.checkpoints",
    "save_checkpoint": ".harness.models.checkpoints",
    "evaluate": ".api",
    "train": ".api",
    "Evaluation": ".api",
    "SegmentationDetector": ".harness.models.segmenter",
    "TrainData": ".harness.models.segmenter",
    "TrainConfig": ".harness.core.train_config",
}


__getattr__ = lazy_exports(__name__, _LAZY)


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
