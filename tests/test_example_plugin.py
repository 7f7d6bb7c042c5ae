"""The third-party plugin path end to end.

``examples/diffzoo-plugin-example`` is installed from its folder and driven
through the CLI (``plugins``, ``run``, ``leaderboard publish``), and its own
tests run against the installed copy.  The hook examples of docs/plugins.md
are assembled into the package they describe, installed and run, so the
plugin guide cannot drift from the hook specs and the registry.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from diffzoo.harness.core import hookspecs

from helpers.cli import diffzoo  # `python -m diffzoo ...` with PYTHONPATH=site
from helpers.plugin_guide import EXAMPLE, GUIDE, guide_files

HOOKS = sorted(name for name in vars(hookspecs) if name.startswith("register_"))
SMALL = ("--iterations", "3", "--batch-size", "2", "--crop-size", "32", "--bootstrap", "0", "--device", "cpu")

def pip_install(site: Path, *packages: Path) -> None:
    """``pip install --no-deps --target site``, offline (the venv's setuptools builds)."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
         "--target", str(site), *map(str, packages)],
        capture_output=True, text=True,
    )
    assert done.returncode == 0, done.stderr


def table_rows(text: str) -> list[list[str]]:
    """Cells of a rich table printed to a pipe; wrapped cells are joined."""
    rows: list[list[str]] = []
    for line in text.splitlines():
        if not line.startswith("│"):
            continue
        cells = [c.strip() for c in line.strip().strip("│").split("│")]
        if cells[0] or not rows:
            rows.append(cells)
        else:
            rows[-1] = [f"{a} {b}".strip() for a, b in zip(rows[-1], cells)]
    return rows


def records(out: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((out / "records").glob("*.json"))]


@dataclass
class Installed:
    site: Path
    example: Path  # a copy of the example folder (its tests run from here)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    root = tmp_path_factory.mktemp("plugins")
    # Build from copies so that nothing (build/, *.egg-info) is written into the repository.
    example = shutil.copytree(EXAMPLE, root / "example",
                              ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", ".pytest_cache"))
    mylab = root / "mylab"
    for name, code in guide_files("The hooks").items():
        (mylab / name).parent.mkdir(parents=True, exist_ok=True)
        (mylab / name).write_text(code, encoding="utf-8")
    site = root / "site"
    pip_install(site, example, mylab)
    return Installed(site, example)


@pytest.fixture(autouse=True)
def _all_entry_points(monkeypatch):
    monkeypatch.delenv("DIFFZOO_PLUGINS", raising=False)


# -- the guide ----------------------------------------------------------------------------------
def test_guide_has_a_working_example_for_every_hook():
    files = guide_files("The hooks")
    hooks_module = files["mylab/__init__.py"]
    for hook in HOOKS:
        assert f"\n### {hook}\n" in GUIDE.read_text(encoding="utf-8"), f"no section for {hook}"
        assert f"def {hook}(" in hooks_module, f"no example for {hook}"
    assert '[project.entry-points.diffzoo]\nmylab = "mylab"' in files["pyproject.toml"]


def test_tutorial_excerpts_match_the_example_package():
    excerpts = guide_files("Tutorial: from an empty folder to a leaderboard row")
    assert {"pyproject.toml", "src/diffzoo_plugin_example/__init__.py"} <= set(excerpts)
    for name, code in excerpts.items():
        source = {line.strip() for line in (EXAMPLE / name).read_text(encoding="utf-8").splitlines()}
        missing = [line for line in code.splitlines() if line.strip() not in source | {"", "..."}]
        assert not missing, f"{name}: the guide shows lines the file does not have: {missing}"


# -- the example package ------------------------------------------------------------------------
def test_plugins_command_lists_the_installed_packages(installed):
    shown = diffzoo(installed.site, "plugins")
    assert shown.returncode == 0, shown.stderr
    assert not re.search(r"plugin '(example|mylab)'", shown.stderr), shown.stderr
    rows = {cells[0]: cells for cells in table_rows(shown.stdout) if cells[2] != "failed"}
    assert rows["example"][1:] == ["0.1.0", "installed", "register_detectors"]
    assert rows["mylab"][1:3] == ["0.1.0", "installed"]
    assert sorted(rows["mylab"][3].split(", ")) == HOOKS


def test_example_runs_and_publishes(installed, diffseg_folder, tmp_path):
    run_dir, pub, site = tmp_path / "run", tmp_path / "pub", tmp_path / "site"
    ran = diffzoo(installed.site, "run", "--detector", "example", "--suite", "standard",
                  "--dataset", str(diffseg_folder), *SMALL, "--out", str(run_dir))
    assert ran.returncode == 0, ran.stderr
    recs = records(run_dir)
    assert {r["detector"]["name"] for r in recs} == {"example.residual"}
    assert {r["detector"]["plugin"] for r in recs} == {"example"}
    assert {r["case"]["name"] for r in recs} == {"binary", "semantic", "image"}

    md = diffzoo(installed.site, "leaderboard", "publish", "--store", str(run_dir), "--format", "md",
                 "--out", str(pub))
    assert md.returncode == 0, md.stderr
    text = (pub / "leaderboard.md").read_text(encoding="utf-8")
    assert re.search(r"^\|[ :-]+\|", text, re.M), "no Markdown table"
    assert re.search(r"^\|.*\bexample\.residual\b.*\|$", text, re.M), "no row for the example detector"

    html = diffzoo(installed.site, "leaderboard", "publish", "--store", str(run_dir), "--format", "html",
                   "--out", str(site))
    assert html.returncode == 0, html.stderr
    index = (site / "index.html").read_text(encoding="utf-8")
    assert re.search(r"<td[^>]*>(?:(?!</td>).)*example\.residual", index, re.S), "no table cell names it"
    pages = list((site / "detectors").glob("*.html"))
    assert any("example.residual" in p.read_text(encoding="utf-8") for p in pages)


def test_example_package_own_tests_pass_when_installed(installed):
    env = dict(os.environ, PYTHONPATH=str(installed.site), PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs"],
                          cwd=installed.example, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"\b\d+ passed\b", done.stdout) and "skipped" not in done.stdout, done.stdout


# -- the guide's package, through the CLI --------------------------------------------------------
def pairs_dataset(diffseg_folder: Path, root: Path) -> Path:
    """The guide's `mylab.pairs` layout, from the shared DiffSeg30k-layout fixture."""
    images = sorted((diffseg_folder / "train_copy").glob("*.image.png"))
    for i, image in enumerate(images):
        split = "val" if i % 3 == 0 else "train"
        stem = image.name.split(".")[0]
        for kind in ("images", "masks"):
            (root / split / kind).mkdir(parents=True, exist_ok=True)
        shutil.copy(image, root / split / "images" / f"{stem}.png")
        mask = np.asarray(Image.open(image.with_name(f"{stem}.mask.png")))
        Image.fromarray(np.where(mask > 0, 255, 0).astype(np.uint8)).save(root / split / "masks" / f"{stem}.png")
    return root


def test_guide_examples_run_through_the_cli(installed, diffseg_folder, tmp_path):
    data = pairs_dataset(diffseg_folder, tmp_path / "pairs")
    out = tmp_path / "run"
    ran = diffzoo(installed.site, "run", "--detector", "mylab", "--suite", "mylab.resize",
                  "--dataset", str(data), *SMALL, "--out", str(out))
    assert ran.returncode == 0, ran.stderr
    assert "Warning" not in ran.stderr, ran.stderr  # np.asarray(Image.open(...)) is read-only: torch warned
    recs = {r["case"]["name"]: r for r in records(out)}
    assert set(recs) == {"scale75", "scale50"}
    n_val = len(list((data / "val" / "images").glob("*.png")))
    for name, scale in (("scale75", 0.75), ("scale50", 0.5)):
        r = recs[name]
        assert r["detector"]["name"] == "mylab.conv" and r["detector"]["plugin"] == "mylab"
        assert r["dataset"]["name"] == "pairs" and r["label_space"] == ["background", "edited"]
        assert r["case"]["distortion"] == "mylab.resize" and r["case"]["distortion_params"] == {"scale": scale}
        assert r["counts"]["evaluated"] == n_val
        assert r["metrics"]["mIoU"] is not None

    image = data / "val" / "images" / sorted(p.name for p in (data / "val" / "images").iterdir())[0]
    mask = np.zeros((32, 32), np.uint8)
    mask[8:20, 4:16] = 255
    Image.fromarray(mask).save(tmp_path / "mask.png")
    edited = tmp_path / "edited.png"
    filled = diffzoo(installed.site, "mylab", "fill", str(image), str(tmp_path / "mask.png"),
                     "--out", str(edited), "--seed", "3")
    assert filled.returncode == 0, filled.stderr
    assert "144 pixels changed" in filled.stdout
    before, after = np.asarray(Image.open(image).convert("RGB")), np.asarray(Image.open(edited))
    changed = (before != after).any(-1)
    assert not changed[mask == 0].any() and changed[mask > 0].mean() > 0.9


def test_guide_distortion_and_editor_in_process(installed, monkeypatch):
    monkeypatch.syspath_prepend(str(installed.site))
    from diffzoo import create_generator
    from diffzoo.harness.core.plugins import get_registry

    registry = get_registry()
    resize = registry.get("distortion", "mylab.resize").load()
    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, (40, 60, 3), dtype=np.uint8)
    label = rng.choice(np.array([0, 1, 2, 255], np.uint8), (40, 60))
    small, small_label = resize(image, label, scale=0.5)
    assert small.shape == (20, 30, 3) and small.dtype == np.uint8 and small_label.shape == (20, 30)
    assert set(np.unique(small_label)) <= {0, 1, 2, 255}  # nearest: no invented class values
    again = resize(image, label, scale=0.5)
    assert np.array_equal(again[0], small) and np.array_equal(again[1], small_label)

    editor = create_generator("mylab.fill", noise=10)
    mask = np.zeros((40, 60), bool)
    mask[5:15, 10:30] = True
    a, b = editor.edit(image, mask, "noise", seed=1), editor.edit(image, mask, "noise", seed=1)
    assert np.array_equal(a.image, b.image) and np.array_equal(a.changed, mask)
    assert np.array_equal(a.image[~mask], image[~mask])
    assert not np.array_equal(editor.edit(image, mask, "noise", seed=2).image, a.image)
