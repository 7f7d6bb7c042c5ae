"""Installed (``pip install -e .``), the package is found through its entry point."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata

import pytest
from diffzoo_plugin_example import CARD
from diffzoo_plugin_example.model import ResidualDetector

import diffzoo

installed = pytest.mark.skipif(
    not metadata.entry_points(group="diffzoo", name="example"),
    reason="diffzoo-plugin-example is not installed (pip install -e .)",
)


@installed
def test_listed_by_the_cli_with_its_plugin_name():
    listed = subprocess.run([sys.executable, "-m", "diffzoo", "list", "detectors", "example*"],
                            capture_output=True, text=True, env=dict(os.environ))
    assert listed.returncode == 0, listed.stderr
    row = next(line for line in listed.stdout.splitlines() if CARD.name in line)
    name, default, plugin = (cell.strip() for cell in row.strip().strip("│").split("│")[:3])
    assert (name, default, plugin) == (CARD.name, "*", "example")  # the entry point's name
    assert "plugin 'example'" not in listed.stderr  # no import or hook failure


@installed
def test_the_family_name_builds_the_detector_through_the_registry():
    det = diffzoo.create_detector("example", task="binary")
    assert isinstance(det, ResidualDetector)
    assert det.card == CARD
