"""Fault suite: the plugin API stays stable.

What a plugin may import is ``diffzoo.__all__`` and ``diffzoo.plugin.__all__``;
no name of either may disappear without a deprecation period, and a factory
of the keyword form keeps working for one release, warning (docs/plugins.md,
"What a plugin may import")."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import pytest
import torch

import diffzoo
import diffzoo.plugin
from diffzoo.harness.core.plugins import get_plugin_system, reset_plugins
from diffzoo.plugin import DetectorCard, hookimpl

from helpers.detectors import Scripted

PUBLIC_API = frozenset({
    "__version__", "evaluate", "train", "Evaluation", "hookimpl", "register_cards", "DiffzooError", "ConfigError",
    "CorruptSampleError", "DataError", "DetectorError", "ModelError", "WeightsUnavailableError", "Case", "Suite",
    "TrainSpec", "SegmentationDetector", "TrainData", "TrainConfig", "create_detector", "create_generator",
    "open_dataset", "save_checkpoint", "load_checkpoint", "Detector", "Generator", "Dataset", "EditResult",
    "DetectionOutput", "DetectorCard", "GeneratorCard", "RecipeValue", "LabelSpace", "Sample", "SampleMeta",
    "EditRecord",
})
"""diffzoo 0.1.0's public surface (docs/plugins.md).  A name leaves it only after a release
in which it warned, with a changelog line; adding names is free."""


def test_no_public_name_disappears_and_each_resolves():
    missing = PUBLIC_API - set(diffzoo.__all__)
    assert not missing, f"public names removed without a deprecation period: {sorted(missing)}"
    for name in diffzoo.__all__:
        assert getattr(diffzoo, name) is not None, name


def test_the_public_api_check_fails_when_a_name_goes(monkeypatch):
    monkeypatch.setattr(diffzoo, "__all__", [n for n in diffzoo.__all__ if n != "load_checkpoint"])
    with pytest.raises(AssertionError, match="load_checkpoint"):
        test_no_public_name_disappears_and_each_resolves()


PLUGIN_API = frozenset({
    "hookimpl", "register_cards", "DetectorCard", "GeneratorCard", "RecipeValue", "Detector", "DetectorBuild",
    "Generator", "Dataset", "EditResult", "LabelSpace", "BINARY", "IGNORE_INDEX", "Sample", "SampleMeta", "EditRecord",
    "DetectionOutput", "DiffzooError", "ConfigError", "CorruptSampleError", "DataError", "DetectorError", "ModelError",
    "WeightsUnavailableError", "TorchDetector", "SegmentationDetector", "Normalized", "ClassifierDetector", "View",
    "crop_view", "ImageLabelDataset", "bce_loss", "TrainData", "TrainConfig", "Report", "train_loop", "CropDataset",
    "make_loader", "shard", "all_gather", "hub_weights", "url_weights", "url_state", "check_weights", "hub_offline",
    "cache_root", "save_checkpoint", "load_checkpoint", "describe_mismatch", "read_image", "read_mask",
    "read_binary_mask", "read_labelled",
})
"""What ``diffzoo.plugin`` gives a plugin author (docs/plugins.md): under the same policy."""


def test_no_plugin_authoring_name_disappears_and_each_resolves():
    missing = PLUGIN_API - set(diffzoo.plugin.__all__)
    assert not missing, f"plugin names removed without a deprecation period: {sorted(missing)}"
    for name in diffzoo.plugin.__all__:
        assert getattr(diffzoo.plugin, name) is not None, name
    for name in PUBLIC_API & set(diffzoo.plugin.__all__):
        assert getattr(diffzoo, name) is getattr(diffzoo.plugin, name), name  # one object, two doors


def test_importing_the_plugin_surface_loads_no_torch():
    """An entry-point module takes its cards and hookimpl from diffzoo.plugin; `diffzoo list` stays light."""
    code = ("import sys, diffzoo.plugin; "
            "print(sorted(m for m in ('torch', 'numpy', 'safetensors') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "[]", (done.stdout, done.stderr)


KEYWORD_PLUGIN = '''
"""A detector plugin whose factory takes the keyword form (card=, task=, label_space=, pretrained=)."""
from diffzoo.plugin import DetectorCard, SegmentationDetector, hookimpl

CARD = DetectorCard(name="oldstyle.x", description="a factory of the keyword form", tasks=("binary",))


class OldStyle(SegmentationDetector):
    def __init__(self, card, task, label_space, pretrained=False):
        super().__init__(card, task, label_space, pretrained)

    def build_network(self, num_outputs, pretrained):
        from torch import nn

        return nn.Conv2d(3, num_outputs, 1)


@hookimpl
def register_detectors(register):
    register(CARD.name, "oldstyle_plugin:OldStyle", card=CARD)
'''


def _install_old_plugin(site):
    """``oldstyle_plugin`` as an installed distribution with a ``diffzoo`` entry point (no pip)."""
    site.mkdir(parents=True)
    (site / "oldstyle_plugin.py").write_text(KEYWORD_PLUGIN)
    info = site / "oldstyle_plugin-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: oldstyle-plugin\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text("[diffzoo]\noldstyle = oldstyle_plugin\n")
    return site


def test_a_factory_of_the_keyword_form_still_builds_and_warns(tmp_path, monkeypatch):
    """For one release (docs/plugins.md, changelog) a factory taking (card=, task=, label_space=,
    pretrained=) is called that way, and a base class still takes those arguments; both warn."""
    site = _install_old_plugin(tmp_path / "site")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delenv("DIFFZOO_PLUGINS", raising=False)
    monkeypatch.delitem(sys.modules, "oldstyle_plugin", raising=False)
    reset_plugins()
    try:
        with pytest.warns(DeprecationWarning, match=r"oldstyle_plugin\.OldStyle takes the keyword form "
                                                    r"\(card=, task=, label_space=, pretrained=\)"):
            det = diffzoo.create_detector("oldstyle.x", "binary")
        assert (det.card.name, det.task, det.pretrained) == ("oldstyle.x", "binary", False)
        assert det.label_space == diffzoo.plugin.BINARY
        assert det.predict(torch.rand(1, 3, 8, 8)).mask_logits.shape == (1, 1, 8, 8)
    finally:
        reset_plugins()


def test_a_factory_is_given_one_detector_build():
    seen = []

    class Plugin:
        @hookimpl
        def register_detectors(self, register):
            card = DetectorCard(name="buildform.x", description="records what it is given", tasks=("binary",))
            register(card.name, lambda build: seen.append(build) or Scripted(card=build.card), card=card)

    reset_plugins()
    get_plugin_system().pm.register(Plugin(), name="buildform")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)
            assert diffzoo.create_detector("buildform.x", "binary", pretrained=True).card.name == "buildform.x"
    finally:
        reset_plugins()
    [build] = seen
    assert build == diffzoo.DetectorBuild(build.card, "binary", diffzoo.plugin.BINARY, pretrained=True)
    assert build.card.name == "buildform.x"


def test_docs_state_the_policy_and_list_the_public_names():
    guide = (os.path.dirname(__file__) + "/../../docs/plugins.md")
    text = open(guide, encoding="utf-8").read()
    section = text.split("## What a plugin may import", 1)[1].split("\n## ", 1)[0]
    for name in (PUBLIC_API | PLUGIN_API) - {"__version__"}:
        assert f"`{name}`" in section, name
    assert "DetectorBuild" in section and "keyword form" in section  # the changelog of this release
