"""A detector from a separately installed package (entry-point group
``diffzoo``) is listed and runs through ``diffzoo run``; a plugin that raises
is reported by name and skipped."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers.cli import diffzoo

PYPROJECT = """
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"
[project]
name = "{name}"
version = "0.3.0"
[project.entry-points.diffzoo]
{ep} = "{module}"
"""

GOOD = '''
from diffzoo import DetectorCard, hookimpl

CARD = DetectorCard(name="testplug.conv", description="a two-layer conv net from a third party",
                    tasks=("binary", "semantic"), input_size=32)

@hookimpl
def register_detectors(register):
    register(CARD.name, "testplug_pkg.model:ConvDetector", card=CARD, default=True,
             description=CARD.description)
'''

MODEL = '''
from torch import nn
from diffzoo.plugin import SegmentationDetector

class ConvDetector(SegmentationDetector):
    head_prefixes = ("2",)

    def build_network(self, num_outputs, pretrained):
        return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, num_outputs, 1))
'''

BROKEN = '''
from diffzoo import hookimpl

@hookimpl
def register_detectors(register):
    raise RuntimeError("this plugin is broken on purpose")
'''


def build_package(root: Path, name: str, module: str, files: dict[str, str]) -> Path:
    pkg = root / name
    (pkg / module).mkdir(parents=True)
    (pkg / "pyproject.toml").write_text(PYPROJECT.format(name=name, ep=name, module=module))
    for fname, text in files.items():
        (pkg / module / fname).write_text(textwrap.dedent(text))
    return pkg


@pytest.fixture
def site(tmp_path):
    site = tmp_path / "site"
    good = build_package(tmp_path, "diffzoo-testplug", "testplug_pkg", {"__init__.py": GOOD, "model.py": MODEL})
    broken = build_package(tmp_path, "diffzoo-broken", "broken_pkg", {"__init__.py": BROKEN})
    for pkg in (good, broken):
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
             "--target", str(site), str(pkg)],
            check=True, capture_output=True,
        )
    return site


def test_installed_plugin_is_listed_and_runs(site, diffseg_folder, tmp_path):
    listed = diffzoo(site, "list", "detectors")
    assert listed.returncode == 0, listed.stderr
    assert "testplug.conv" in listed.stdout
    assert "diffzoo-broken" in listed.stderr and "broken on purpose" in listed.stderr
    plugins = diffzoo(site, "plugins")
    assert "diffzoo-testplug" in plugins.stdout and "0.3.0" in plugins.stdout
    out = tmp_path / "out"
    ran = diffzoo(site, "run", "--detector", "testplug", "--suite", "standard", "--dataset", str(diffseg_folder),
                  "--iterations", "5", "--batch-size", "2", "--crop-size", "32", "--bootstrap", "0",
                  "--device", "cpu", "--out", str(out))
    assert ran.returncode == 0, ran.stderr
    records = [json.loads(p.read_text()) for p in (out / "records").glob("*.json")]
    assert {r["detector"]["name"] for r in records} == {"testplug.conv"}
    assert {r["detector"]["plugin"] for r in records} == {"diffzoo-testplug"}
    assert {r["case"]["name"] for r in records} == {"binary", "semantic", "image"}


def test_env_var_restricts_entry_point_plugins(site):
    only = diffzoo(site, "list", "detectors", env_extra={"DIFFZOO_PLUGINS": "diffzoo-testplug"})
    assert "testplug.conv" in only.stdout and "diffzoo-broken" not in only.stderr
    none = diffzoo(site, "list", "detectors", env_extra={"DIFFZOO_PLUGINS": ""})
    assert "testplug.conv" not in none.stdout and "segformer.b2" in none.stdout
    typo = diffzoo(site, "list", "detectors", env_extra={"DIFFZOO_PLUGINS": "diffzoo-testplgu,diffzoo.plugins.fcn8s"})
    assert typo.returncode == 0 and "testplug.conv" not in typo.stdout and "fcn8s.vgg16" in typo.stdout
    assert "plugin 'diffzoo-testplgu' is named in $DIFFZOO_PLUGINS but not installed (installed entry-point " \
           "plugins: diffzoo-broken, diffzoo-testplug)" in typo.stderr
    assert "fcn8s" not in typo.stderr  # an in-tree plugin always loads: naming it is no mistake
