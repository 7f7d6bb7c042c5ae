"""diffzoo: localize and attribute diffusion-model image edits.

Public API: ``hookimpl`` for plugins, the protocols and value types, and the
``create_*`` factories.  Everything else lives in subpackages.
"""

from __future__ import annotations

__version__ = "0.1.0"

from .harness.cards import DetectorCard, GeneratorCard, RecipeValue
from .harness.errors import DiffzooError
from .harness.factories import create_detector, create_generator, open_dataset
from .harness.hookspecs import hookimpl
from .harness.protocols import Dataset, Detector, EditResult, Generator
from .harness.types import DetectionOutput, EditRecord, LabelSpace, Sample, SampleMeta

__all__ = [
    "__version__",
    "hookimpl",
    "DiffzooError",
    "create_detector",
    "create_generator",
    "open_dataset",
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
