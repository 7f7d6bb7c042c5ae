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
from diffzoo.version import __version__

# A library logs; the application (the CLI) decides where logs go.
logging.getLogger(__name__).addHandler(logging.NullHandler())

# The entry points import torch, and the factories the dataset adapters and numpy; the plugin
# authoring names most plugins need come from diffzoo.plugin: all on first use, so that
# `import diffzoo` (and `diffzoo --help`, `diffzoo list`) stays light.  By module: the names it gives,
# the types evaluate()'s answer holds (its plans, its summary's tables) among them.
_LAZY_BY_MODULE = {
    ".harness.run.factories": ("create_detector", "create_generator", "open_dataset"),
    ".api": ("evaluate", "train", "Evaluation"),
    ".harness.run.request": ("RunRequest",),
    ".harness.run.plan": ("Plan", "Job", "PassSpec", "CaseSpec", "CaseKey", "SkippedCase"),
    ".harness.run.model_source": ("CheckpointInfo",),
    ".harness.run.runner": ("TrainOutput",),
    ".harness.records.document": ("ResultRecord",),
    ".leaderboard.store": ("AddOutcome", "RecordStore"),
    ".leaderboard.layouts.paper": ("Summary", "Section"),
    ".harness.core.types": ("JudgedBy", "StateKey"),
    ".leaderboard.index": ("Group", "GroupKey", "SuiteVersion", "TableKey"),
    ".leaderboard.table": ("Table", "Column", "Row", "Cell", "Note"),
    ".harness.metrics.catalog": ("MetricInfo",),
    ".harness.core.progress": ("Progress", "ProgressTask"),
    ".plugin": ("hookimpl", "register_cards", "DiffzooError", "ConfigError", "CorruptSampleError", "DataError",
                "DetectorError", "ModelError", "WeightsUnavailableError", "TrainConfig", "DetectorBuild", "Detector",
                "Generator", "Dataset", "EditResult", "DetectionOutput", "DetectorCard", "GeneratorCard",
                "RecipeValue", "LabelSpace", "Sample", "SampleMeta", "EditRecord",
                "SegmentationDetector", "TrainData", "load_checkpoint", "save_checkpoint"),
}
_LAZY = {name: module for module, names in _LAZY_BY_MODULE.items() for name in names}


__getattr__ = lazy_exports(__name__, _LAZY)


__all__ = ["__version__", "Case", "Suite", "TrainSpec", *_LAZY]
