"""What a plugin imports: diffzoo's whole authoring surface, in one module.

The in-tree plugins (``diffzoo/plugins/``) import nothing of diffzoo but this
module, so a third-party package can build whatever they build, CNNSpot and
UniversalFakeDetect included (docs/plugins.md, "What a plugin may import";
``tests/test_architecture.py`` holds them to it).  Everything below ``diffzoo``
other than this module and the package root is internal and may move.

- registering: ``hookimpl``, the cards (``DetectorCard``, ``GeneratorCard``,
  ``RecipeValue``, and a detector's released weights: ``Release``, ``Published``)
  and ``register_cards``;
- the protocols a plugin implements (``Detector``, ``Generator``, ``Dataset``,
  ``EditResult``), what a detector factory is given (``DetectorBuild``) and the
  value types (``LabelSpace``, ``BINARY``, ``IGNORE_INDEX``, ``Sample``,
  ``SampleMeta``, ``EditRecord``, ``DetectionOutput``);
- the errors a plugin raises, and ``name_some`` (the first few of a list, and how many more);
- base classes: ``TorchDetector`` (one torch module and its checkpoints),
  ``SegmentationDetector`` (a segmenter that only builds its network, with
  ``Normalized``) and ``ClassifierDetector`` (an image-level detector, with
  its training views ``View``, ``crop_view``, ``ImageLabelDataset`` and
  ``bce_loss``);
- training: ``TrainData`` (what ``fit`` is given), ``TrainConfig``, ``Report``
  (the ``progress(step, loss)`` callback of ``fit``), the shared loop
  ``train_loop`` with its crop dataset ``CropDataset`` and ``make_loader``, and
  under torchrun this rank's ``shard`` of a list and ``all_gather``;
- weights: ``hub_weights`` and ``url_weights`` (a hub or URL file, fetched
  unless offline, hash-checked), ``hub_pretrained`` (a hub folder, so checked,
  given to a loader such as ``from_pretrained``), ``url_state`` (a torch file's tensors),
  ``url_into`` (them loaded into a module, strictly), ``check_weights`` (a file by hand),
  ``placed_weights`` (one put in ``$DIFFZOO_CACHE/weights/<family>/``), ``load_weights`` (a
  file's tensors, read ``weights_only``), ``hub_offline``,
  ``hub_fetch`` (how to bring hub repositories here, for a ``WeightsUnavailableError``'s
  ``fetch``), ``built_from`` (files checked inside recorded once the model is built), ``cache_root``;
- checkpoints: ``save_checkpoint``, ``load_checkpoint``, ``describe_mismatch``;
- a dataset's files, decoded and refused per sample as the built-in adapters do: ``read_image``,
  ``read_mask``, ``read_binary_mask``, ``read_labelled``.

Importing this module loads no torch and no numpy, so that an entry-point
module can take its cards and ``hookimpl`` from here and ``diffzoo list``
stays fast; the names that need them load on first use.
"""

from __future__ import annotations

from diffzoo.harness.core.cards import DetectorCard, GeneratorCard, Published, RecipeValue, Release, register_cards
from diffzoo.harness.core.errors import (
    NO_PRETRAINED,
    ConfigError,
    CorruptSampleError,
    DataError,
    DetectorError,
    DiffzooError,
    ModelError,
    WeightsUnavailableError,
    hub_fetch,
    name_some,
)
from diffzoo.harness.core.fsutil import cache_root
from diffzoo.harness.core.hookspecs import hookimpl
from diffzoo.harness.core.lazy import lazy_exports
from diffzoo.harness.core.protocols import Dataset, Detector, DetectorBuild, EditResult, Generator, Report
from diffzoo.harness.core.train_config import TrainConfig
from diffzoo.harness.core.types import BINARY, IGNORE_INDEX, DetectionOutput, EditRecord, LabelSpace, Sample, SampleMeta

_MODELS = "diffzoo.harness.models."
_LAZY_BY_MODULE = {
    _MODELS + "detector": ("TorchDetector",),
    _MODELS + "segmenter": ("SegmentationDetector", "Normalized"),
    _MODELS + "classifier": ("ClassifierDetector", "ImageLabelDataset", "View", "bce_loss", "crop_view"),
    _MODELS + "train_data": ("TrainData", "CropDataset", "make_loader"),
    _MODELS + "trainer": ("train_loop",),
    _MODELS + "weights": ("hub_weights", "url_weights", "hub_pretrained", "url_state", "url_into", "built_from",
                          "check_weights", "placed_weights", "load_weights"),
    "diffzoo.harness.core.hub": ("hub_offline",),
    _MODELS + "checkpoints": ("save_checkpoint", "load_checkpoint", "describe_mismatch"),
    "diffzoo.harness.core.distributed": ("shard", "all_gather"),
    "diffzoo.harness.data.imageio": ("read_image", "read_mask", "read_binary_mask", "read_labelled"),
}
_LAZY = {name: module for module, names in _LAZY_BY_MODULE.items() for name in names}

__getattr__ = lazy_exports(__name__, _LAZY)

__all__ = [
    "hookimpl",
    "register_cards",
    "DetectorCard",
    "GeneratorCard",
    "RecipeValue",
    "Release",
    "Published",
    "Detector",
    "DetectorBuild",
    "Generator",
    "Dataset",
    "EditResult",
    "LabelSpace",
    "BINARY",
    "IGNORE_INDEX",
    "Sample",
    "SampleMeta",
    "EditRecord",
    "DetectionOutput",
    "DiffzooError",
    "ConfigError",
    "CorruptSampleError",
    "DataError",
    "DetectorError",
    "ModelError",
    "WeightsUnavailableError",
    "NO_PRETRAINED",
    "hub_fetch",
    "name_some",
    "TrainConfig",
    "Report",
    "cache_root",
    *_LAZY,
]
