"""Fault suite, issue 23 section 5: the plugin API stays stable.

What a plugin may import is ``diffzoo.__all__``; no name of it may disappear
without a deprecation period.  Modules that moved (issue 14's regroup, and
metrics.boundary -> boundaries) stay importable by their old names with one
MovedModuleWarning naming the new import (docs/plugins.md, "What a plugin
may import")."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap
import warnings

import pytest

import diffzoo
from diffzoo.harness.core.moved import MOVED, REMOVED_IN, MovedModuleWarning
from diffzoo.harness.core.plugins import get_plugin_system, reset_plugins

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


@pytest.mark.parametrize("old", sorted(MOVED))
def test_every_moved_module_imports_by_its_old_name_and_names_the_new_one(old):
    """Each old name gives the module at its new place (the same object), warning once."""
    sys.modules.pop(old, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        __import__(old)  # an import statement's own call
        __import__(old)  # a second import: no second warning
    module = sys.modules[old]
    assert module is importlib.import_module(MOVED[old])
    moved = [w for w in caught if issubclass(w.category, MovedModuleWarning)]
    assert len(moved) == 1, [str(w.message) for w in caught]
    text = str(moved[0].message)
    assert f"{old} moved to {MOVED[old]}" in text and REMOVED_IN in text
    assert moved[0].filename == __file__  # points at the importing line, not at importlib


def test_a_moved_module_that_cannot_be_aliased_says_where_it_went():
    """metrics.boundary is metrics.boundaries: an alias would replace the function
    ``diffzoo.harness.metrics.boundary`` with the module, so the old import names the new one."""
    from diffzoo.harness.metrics import boundary

    with pytest.raises(ModuleNotFoundError, match="diffzoo.harness.metrics.boundaries"):
        __import__("diffzoo.harness.metrics.boundary")
    from diffzoo.harness import metrics

    assert metrics.boundary is boundary and callable(boundary)


def test_the_old_records_module_names_still_resolve():
    from diffzoo.harness.records.document import ResultRecord

    with pytest.warns(MovedModuleWarning, match="diffzoo.harness.records.ResultRecord moved to "
                                                "diffzoo.harness.records.document.ResultRecord"):
        from diffzoo.harness.records import ResultRecord as old
    assert old is ResultRecord


OLD_PLUGIN = '''
"""A detector plugin written against the first release: it imports moved modules."""
from diffzoo.harness.checkpoints import load_checkpoint, save_checkpoint  # now harness.models.checkpoints
from diffzoo.harness.segmenter import SegmentationDetector  # now harness.models.segmenter
from diffzoo import DetectorCard, hookimpl

CARD = DetectorCard(name="oldstyle.x", description="written for diffzoo 0.1 before the regroup",
                    tasks=("binary",))


@hookimpl
def register_detectors(register):
    register(CARD.name, "oldstyle_plugin:SegmentationDetector", card=CARD)
'''


def _install_old_plugin(site):
    """``oldstyle_plugin`` as an installed distribution with a ``diffzoo`` entry point (no pip)."""
    site.mkdir(parents=True)
    (site / "oldstyle_plugin.py").write_text(OLD_PLUGIN)
    info = site / "oldstyle_plugin-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: oldstyle-plugin\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text("[diffzoo]\noldstyle = oldstyle_plugin\n")
    return site


def test_a_plugin_written_against_the_first_release_still_loads(tmp_path, monkeypatch):
    site = _install_old_plugin(tmp_path / "site")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delenv("DIFFZOO_PLUGINS", raising=False)
    for name in ("oldstyle_plugin", "diffzoo.harness.checkpoints", "diffzoo.harness.segmenter"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    reset_plugins()
    try:
        with pytest.warns(MovedModuleWarning, match="diffzoo.harness.checkpoints moved to "
                                                    "diffzoo.harness.models.checkpoints"):
            system = get_plugin_system()
            assert system.registry.has("detector", "oldstyle.x")
        assert not [f for f in system.failures if f.plugin == "oldstyle"], system.failures
    finally:
        reset_plugins()


def test_the_cli_shows_the_moved_module_warning_of_a_plugin(tmp_path):
    """The CLI sends third-party deprecation notices to the debug log, but this one is diffzoo's:
    the plugin's user sees what to tell its author, once, and the command still works."""
    site = _install_old_plugin(tmp_path / "site")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    env.pop("DIFFZOO_PLUGINS", None)
    done = subprocess.run([sys.executable, "-m", "diffzoo", "list", "detectors", "oldstyle*"], capture_output=True,
                          text=True, timeout=120, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "oldstyle.x" in done.stdout
    assert done.stderr.count("MovedModuleWarning: diffzoo.harness.checkpoints moved to "
                             "diffzoo.harness.models.checkpoints") == 1, done.stderr
    assert "oldstyle_plugin.py" in done.stderr  # names the plugin's file and line


def test_docs_state_the_policy_and_list_the_public_names():
    guide = (os.path.dirname(__file__) + "/../../docs/plugins.md")
    text = open(guide, encoding="utf-8").read()
    section = text.split("## What a plugin may import", 1)[1].split("\n## ", 1)[0]
    for name in PUBLIC_API - {"__version__"}:
        assert f"`{name}`" in section, name
    assert REMOVED_IN in section and "MovedModuleWarning" in section
    assert textwrap.dedent("""diffzoo.harness.checkpoints""") in section
