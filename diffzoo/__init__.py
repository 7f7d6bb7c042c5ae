"""diffzoo: localize and attribute diffusion-model image edits.

Public API: :func:`evaluate` (run suites end to end, as ``diffzoo run``) and
:func:`train`; ``hookimpl`` for plugins, the protocols and value types, and
the ``create_*`` factories.  Everything a plugin uses is in
:mod:`diffzoo.plugin` (docs/plugins.md); everything else lives in
subpackages (docs/architecture.md).
"""

from __future__ import annotations

import logging

from diffzoo.harness.core.lazy import lazy_exports
from diffzoo.harness.suites import Case, Suite, TrainSpec
from diffzoo.plugin import (
    ConfigError,
    CorruptSampleError,
    DataError,
    Dataset,
    DetectionOutput,
    Detector,
    DetectorBuild,
    DetectorCard,
    DetectorError,
    DiffzooError,
    EditRecord,
    EditResult,
    Generator,
    GeneratorCard,
    LabelSpace,
    ModelError,
    RecipeValue,
    Sample,
    SampleMeta,
    TrainConfig,
    WeightsUnavailableError,
    hookimpl,
    register_cards,
)
from diffzoo.version import __version__

# A library logs; the application (the CLI) decides where logs go.
logging.getLogger(__name__).addHandler(logging.NullHandler())

# The entry points import torch, and the factories the dataset adapters and numpy; the plugin
# authoring names that need torch load through diffzoo.plugin: all on first use, so that
# `import diffzoo` (and `diffzoo --help`, `diffzoo list`) stays light.
_LAZY = {
    "create_detector": ".harness.run.factories",
    "create_generator": ".harness.run.factories",
    "open_dataset": ".harness.run.factories",
    "evaluate": ".api",
    "train": ".api",
    "Evaluation": ".api",
    "RunRequest": ".harness.run.request",
    "Plan": ".harness.run.plan",
    "CheckpointInfo": ".harness.run.model_source",
    "TrainOutput": ".harness.run.runner",
    "ResultRecord": ".harness.records.document",
    "AddOutcome": ".leaderboard.store",
    "RecordStore": ".leaderboard.store",
    "Summary": ".leaderboard.layouts.paper",
    # the types evaluate()'s answer holds: its plans and its summary's tables
    "Job": ".harness.run.plan",
    "PassSpec": ".harness.run.plan",
    "CaseSpec": ".harness.run.plan",
    "CaseKey": ".harness.run.plan",
    "SkippedCase": ".harness.run.plan",
    "JudgedBy": ".harness.core.types",
    "StateKey": ".harness.core.types",
    "Section": ".leaderboard.layouts.paper",
    "Group": ".leaderboard.index",
    "GroupKey": ".leaderboard.index",
    "SuiteVersion": ".leaderboard.index",
    "TableKey": ".leaderboard.index",
    "Table": ".leaderboard.table",
    "Column": ".leaderboard.table",
    "Row": ".leaderboard.table",
    "Cell": ".leaderboard.table",
    "Note": ".leaderboard.table",
    "MetricInfo": ".harness.metrics.catalog",
    "Progress": ".harness.core.progress",
    "ProgressTask": ".harness.core.progress",
    "SegmentationDetector": ".plugin",
    "TrainData": ".plugin",
    "load_checkpoint": ".plugin",
    "save_checkpoint": ".plugin",
}


__getattr__ = lazy_exports(__name__, _LAZY)


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
    "TrainConfig",
    "DetectorBuild",
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
    *_LAZY,
]
