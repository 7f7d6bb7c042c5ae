"""IMDL-BenCo models' released checkpoints, read as released (``--weights released:NAME``).

For every release of a ``benco.*`` card that has a tiny variant, a file is written with
exactly the release's structure (the model's own state dict, wrapped as its authors wrap
it: IMDL-BenCo's ``{"model": ..., "args": Namespace}``, PSCC-Net's three ``nn.DataParallel``
files), read through the release loader, and the detector's outputs are checked equal to the
model's with those weights.  Needs IMDL-BenCo (``bash scripts/install-benco.sh``): skipped
without it, unless DIFFZOO_REQUIRE_BENCO=1 (CI's backend venv), where it fails.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
import torch

from diffzoo import create_detector
from diffzoo.harness.core.fsutil import cache_root
from diffzoo.harness.core.plugins import get_registry

from helpers.backends import require_benco
from helpers.cli import cli

pytestmark = pytest.mark.isolated_cache

CASES = [(entry.name, release.name) for entry in get_registry().list("detector", "benco.*.tiny")
         for release in entry.card.releases]


def _state(name: str, seed: int = 5) -> dict[str, torch.Tensor]:
    """The tiny model's own state dict, every float perturbed (so a wrong mapping shows)."""
    torch.manual_seed(seed)
    det = create_detector(name, "binary", pretrained=False)
    out = {}
    for key, value in det.saved_module().state_dict().items():
        if value.is_floating_point() and not key.endswith(("running_var", "running_mean")):
            value = value + 0.01 * torch.randn_like(value)
        out[key] = value.clone()
    return out


def _write(release, state: dict[str, torch.Tensor], folder: Path) -> list[Path]:
    """The release's file(s) holding ``state``, in its authors' layout."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / name for name in release.files]
    if len(paths) == 1:
        inner = {k[len(release.prefixes[0]):] if release.prefixes else k: v for k, v in state.items()}
        blob = {"model": inner, "args": argparse.Namespace(model="x", lr=1e-4)} if release.unwrap == ("model",) \
            else {release.unwrap[0]: inner, "epoch": 3} if release.unwrap else inner
        torch.save(blob, paths[0])
        return paths
    for path, prefix in zip(paths, release.prefixes):  # one part per file, under nn.DataParallel's module.
        part = {f"module.{k[len(prefix):]}": v for k, v in state.items() if k.startswith(prefix)}
        assert part, f"no key of {release.name}'s part {prefix} in the model"
        torch.save(part, path)
    rest = [k for k in state if not k.startswith(tuple(release.prefixes)) and k not in release.built]
    assert not rest, f"keys of no part of release {release.name}: {rest[:5]}"
    return paths


@pytest.mark.parametrize("name,release_name", CASES, ids=[f"{n}:{r}" for n, r in CASES])
def test_a_release_file_loads_to_the_models_weights_and_scores_zero_shot(capsys, tmp_path, name, release_name):
    require_benco()
    release = get_registry().get("detector", name).card.release(release_name)
    state = _state(name)
    paths = _write(release, state, tmp_path / "download")
    out = tmp_path / "out"
    checkpoints = sum((["--checkpoint", str(p)] for p in paths), [])
    # the files under their released names say which release they are: no --weights needed
    code, _, err = cli(capsys, "run", "--detector", name, *checkpoints, "--no-train",
                       "--suite", "standard", "--bootstrap", "0", "--device", "cpu", "--out", out)
    assert code == 0, err
    records = [json.loads(p.read_text()) for p in (out / "records").glob("*.json")]
    assert records and all(r["detector"]["release"]["name"] == release_name for r in records)
    assert [f["name"] for f in records[0]["detector"]["release"]["files"]] == list(release.files)
    code, text, err = cli(capsys, "leaderboard", "verify", "--store", out)
    assert code == 0, text + err

    # the converted checkpoint holds exactly the released tensors: the same outputs as the model with them
    (folder,) = (cache_root() / "checkpoints" / name).glob(f"released-{release_name}-*")
    released_det = create_detector(name, "binary", pretrained=False)
    released_det.load(folder)
    reference = create_detector(name, "binary", pretrained=False)
    reference.saved_module().load_state_dict(state, strict=True)
    torch.manual_seed(0)
    size = get_registry().get("detector", name).card.input_size
    images = torch.rand(1, 3, size, size)
    got, want = vars(released_det.predict(images)), vars(reference.predict(images))
    compared = [k for k, v in want.items() if torch.is_tensor(v)]
    assert compared and all(torch.equal(got[k], want[k]) for k in compared), compared


@pytest.mark.parametrize("name,release_name", CASES[:1], ids=[f"{n}:{r}" for n, r in CASES[:1]])
def test_a_release_file_with_a_key_renamed_is_refused_naming_it(capsys, tmp_path, name, release_name):
    require_benco()
    release = get_registry().get("detector", name).card.release(release_name)
    state = _state(name)
    first = sorted(state)[0]
    state[f"{first}_renamed"] = state.pop(first)
    paths = _write(release, state, tmp_path / "download")
    code, _, err = cli(capsys, "run", "--detector", name, "--weights", f"released:{release_name}",
                       *sum((["--checkpoint", str(p)] for p in paths), []), "--suite", "standard", "--device", "cpu",
                       "--out", tmp_path / "out")
    assert code == 2 and first in err and f"{first}_renamed" in err, err
