"""Fault suite: pretrained weight files that are not weights, and full disks inside the writers of
`diffzoo predict` and of the generators.

A weights file that is not a plain tensor file (a malicious pickle, a truncated or empty file, a
damaged safetensors header, a folder) is refused in one line naming the file, why, and where the
right file comes from, exit 2; nothing in it runs, and its sha256 is never recorded as its first-use
hash, so the right file put there afterwards is accepted.  A full disk inside any writer names the
file being written and the free space of the filesystem that holds it, exit 2.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from torch import nn

from diffzoo import create_detector
from diffzoo.harness.core.errors import WeightsFileError
from diffzoo.harness.core.fsutil import free_space, sha256_file
from diffzoo.harness.core.plugins import get_registry

from helpers.cli import cli, one_line_exit_2
from helpers.hub import TINY_SEGFORMER_REPO, hub_segformer

pytestmark = pytest.mark.isolated_cache  # records first-use hashes and checkpoints of its own


# -- weight files that are not weights ---------------------------------------------------------

class _Evil:
    """Runs a shell command when unpickled: what a malicious weights file holds."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def _malicious(path: Path, marker: Path, how: str) -> Path:
    """A pickle whose loading would run ``touch marker``: raw (pickle.dump) or a torch.save archive."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if how == "pickle":
        path.write_bytes(pickle.dumps(_Evil(marker)))
    else:
        torch.save({"state_dict": {"w": torch.zeros(2)}, "extra": _Evil(marker)}, path)
    return path


def _refused(message: str, path: Path, *, pickled: bool = True) -> None:
    assert f"refusing to load weights file {path}: " in message, message
    assert ("not a plain tensor file: it holds a pickled object of type posix.system" in message) == pickled, message
    assert "replace it with the file from" in message, message
    assert "weights_only" not in message, message  # never torch's advice to load it unsafely


def _records() -> list[Path]:
    return list(Path(os.environ["DIFFZOO_CACHE"], "weights").rglob("*.json"))


def _card(**fields):
    card = get_registry().get("detector", "segformer.tiny").card
    return dataclasses.replace(card, name="weights.test", **fields)


URL = "https://example.org/weights/backbone-0123abcd.pth"


def _hub_file(monkeypatch, tmp_path) -> Path:
    """Where url_state finds URL's file: the torch hub cache under TORCH_HOME (offline: never downloaded)."""
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return tmp_path / "torch" / "hub" / "checkpoints" / "backbone-0123abcd.pth"


@pytest.mark.parametrize("how", ["pickle", "torch.save"])
def test_a_malicious_pickle_as_pretrained_weights_is_refused_never_run_and_never_recorded(tmp_path, monkeypatch,
                                                                                          how):
    """The reader every torch-file detector shares (url_state, and url_into: CNNSpot, FCN-8s, the mmseg backbones)."""
    from diffzoo.harness.models.weights import url_state

    marker = tmp_path / "MARKER"
    target = _malicious(_hub_file(monkeypatch, tmp_path), marker, how)
    with pytest.raises(WeightsFileError) as exc:
        url_state(_card(), URL)
    assert exc.value.exit_code == 2
    _refused(str(exc.value), target)
    assert URL in str(exc.value)  # where the right file comes from
    assert not marker.exists() and _records() == []
    good = {"w": torch.arange(4.0)}
    torch.save(good, target)  # the right file put in its place: accepted, not "changed since"
    assert torch.equal(url_state(_card(), URL)["w"], good["w"])
    [record] = _records()
    assert json.loads(record.read_text())["sha256"] == sha256_file(target)
    assert not marker.exists()


@pytest.mark.parametrize("damage", ["truncated", "empty", "not a torch file", "a folder"])
def test_an_unreadable_weights_file_is_one_user_error_and_never_recorded(tmp_path, monkeypatch, damage):
    from diffzoo.harness.models.weights import url_state

    target = _hub_file(monkeypatch, tmp_path)
    target.parent.mkdir(parents=True)
    torch.save({"w": torch.zeros(64)}, tmp_path / "whole.pth")
    whole = (tmp_path / "whole.pth").read_bytes()
    if damage == "a folder":
        target.mkdir()
    else:
        target.write_bytes({"truncated": whole[: len(whole) // 2], "empty": b"",
                            "not a torch file": b"<html>404 Not Found</html>"}[damage])
    with pytest.raises(WeightsFileError) as exc:
        url_state(_card(), URL)
    message = str(exc.value)
    _refused(message, target, pickled=False)
    assert (f"{target}: it is a folder;" if damage == "a folder" else "could not be read as weights") in message
    assert exc.value.exit_code == 2 and _records() == []


@pytest.mark.parametrize("change", ["another model's file", "a tensor of another shape", "a tensor missing",
                                    "not a state dict"])
def test_a_torch_hub_file_that_does_not_fit_the_model_is_one_line_and_never_recorded(tmp_path, monkeypatch, change):
    """url_into (CNNSpot's ResNet-50, FCN-8s's VGG, the mmseg backbones): never torch's load_state_dict
    dump reported as the plugin's bug, nor the wrong file's hash recorded."""
    from diffzoo.harness.models.weights import url_into

    def model():
        return nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Conv2d(4, 1, 1))  # [2]: the head, new

    target = _hub_file(monkeypatch, tmp_path)
    target.parent.mkdir(parents=True)
    torch.manual_seed(1)
    good = {k: v for k, v in model().state_dict().items() if not k.startswith("2.")}
    bad = {"another model's file": {"fc.weight": torch.zeros(2, 2)},
           "a tensor of another shape": {**good, "0.weight": torch.zeros(4, 3)},
           "a tensor missing": {k: v for k, v in good.items() if k != "1.running_var"},
           "not a state dict": {"model": good}}[change]
    torch.save(bad, target)
    net = model()
    with pytest.raises(WeightsFileError) as exc:
        url_into(_card(), net, URL, new=("2.",))
    said = {"another model's file": "it does not fit the model: 7 tensor(s) missing from the checkpoint: 0.weight, "
                                    "0.bias, 1.weight, 1.bias, 1.running_mean and 2 more; 1 unexpected tensor(s): "
                                    "fc.weight;",
            "a tensor of another shape": "it does not fit the model: 1 tensor shape(s) differ: 0.weight is [4, 3] in "
                                         "the checkpoint, [4, 3, 3, 3] in the model",
            "a tensor missing": "it does not fit the model: 1 tensor(s) missing from the checkpoint: 1.running_var",
            "not a state dict": "it does not fit the model: 7 tensor(s) missing from the checkpoint: 0.weight, "
                                "0.bias, 1.weight, 1.bias, 1.running_mean and 2 more; 1 unexpected tensor(s): model;"
            }[change]
    assert str(exc.value).startswith(f"detector weights.test: refusing to load weights file {target}: {said}"), \
        str(exc.value)
    assert str(exc.value).endswith(f"; replace it with the file from {URL}") and exc.value.exit_code == 2
    assert _records() == []
    torch.save({**good, "fc.weight": torch.zeros(2)}, target)  # the right file (a classifier besides): loads
    with pytest.raises(WeightsFileError, match="1 unexpected tensor"):
        url_into(_card(), net, URL, new=("2.",))
    url_into(_card(), net, URL, new=("2.",), others=True)
    assert torch.equal(net.state_dict()["0.weight"], good["0.weight"])
    assert [json.loads(r.read_text())["sha256"] for r in _records()] == [sha256_file(target)]


@pytest.mark.parametrize("said", [
    "Cannot reach the server (see the root cause in the stacktrace above)",
    "Cannot reach the server, see the root cause in the stacktrace above",
    "Cannot reach the server. See the stack trace above for details.",
])
def test_a_failed_download_keeps_the_librarys_words_but_not_its_pointer_to_a_stack_trace(tmp_path, monkeypatch,
                                                                                          said):
    """The CLI prints one line and no stack trace: a hub library's "see ... the stacktrace above" is dropped."""
    from diffzoo.harness.core.errors import WeightsUnavailableError
    from diffzoo.harness.models.weights import url_state

    _hub_file(monkeypatch, tmp_path)
    monkeypatch.delenv("HF_HUB_OFFLINE")

    def unreachable(*args, **kwargs):
        raise OSError(said)

    monkeypatch.setattr(torch.hub, "download_url_to_file", unreachable)
    with pytest.raises(WeightsUnavailableError) as exc:
        url_state(_card(), URL, detail="or pass --no-pretrained")
    message = str(exc.value)
    assert "Cannot reach the server" in message and "or pass --no-pretrained" in message, message
    assert "above" not in message and "stack" not in message, message


def test_offline_hub_weights_name_the_hub_cache_this_machine_reads(offline_empty_hub, tmp_path):
    """HF_HOME / HF_HUB_CACHE moved the cache: the message names where the files go, not the default place."""
    from diffzoo.harness.core.errors import WeightsUnavailableError

    with pytest.raises(WeightsUnavailableError) as exc:
        create_detector("segformer.b0", "binary", pretrained=True)
    assert ("e.g. `hf download nvidia/mit-b0`, then copy that machine's hub cache (~/.cache/huggingface/hub) into "
            f"{tmp_path / 'hf' / 'hub'} here (HF_HUB_CACHE or HF_HOME moves it)") in str(exc.value), str(exc.value)


def test_the_plan_looks_for_an_open_mmlab_backbone_as_its_url_and_refuses_it_missing_offline(capsys, offline_empty_hub,
                                                                                             tmp_path, monkeypatch):
    """An mmseg card's `open-mmlab://NAME` (mmengine's model table, here a stand-in: no mmcv) was said unchecked, and
    offline the run failed only once the model was built; the plan names what to download and where it goes."""
    import sys
    import types

    from helpers.cli import one_line

    url = "https://download.openmmlab.com/pretrain/third_party/resnet50_v1c-2cccc1ad.pth"
    table = types.ModuleType("mmengine.runner.checkpoint")
    table.get_external_models = lambda: {"resnet50_v1c": url}  # type: ignore[attr-defined]
    for name in ("mmengine", "mmengine.runner"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "mmengine.runner.checkpoint", table)
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    plan = ["run", "--detector", "mmseg.fcn-r50", "--suite", "standard", "--pretrained", "--device", "cpu", "--plan",
            "--out", tmp_path / "out"]
    target = tmp_path / "torch" / "hub" / "checkpoints" / "resnet50_v1c-2cccc1ad.pth"
    code, out, err = cli(capsys, *plan)
    assert code == 1 and one_line(err) == (
        "error: detector mmseg.fcn-r50: weights 'open-mmlab://resnet50_v1c' are not in the local cache and could not "
        f"be downloaded. Fetch them on a machine with network access, e.g. download {url} to {target} (the torch hub "
        "cache; TORCH_HOME moves it) (or pass --no-pretrained to train from random initialisation)"), out + err
    target.parent.mkdir(parents=True)
    target.write_bytes(b"looked for, never read")
    code, out, err = cli(capsys, *plan)
    assert code == 0 and f"pretrained weights open-mmlab://resnet50_v1c (in {target})" in " ".join(out.split()), out


def test_the_plan_says_where_pretrained_weights_are_and_refuses_those_missing_offline(capsys, offline_empty_hub,
                                                                                     tmp_path, monkeypatch):
    """Hub, torch hub and hand-placed files are looked for, not read: one line naming every file to fetch."""
    from helpers.cli import one_line

    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    plan = ["run", "--suite", "standard", "--pretrained", "--device", "cpu", "--plan", "--out", tmp_path / "out"]
    hub = tmp_path / "hf" / "hub"
    code, out, err = cli(capsys, *plan, "--detector", "segformer.b0")
    assert code == 1 and one_line(err) == (
        "error: detector segformer.b0: weights 'nvidia/mit-b0' are not in the local cache and could not be "
        "downloaded. Fetch them on a machine with network access, e.g. `hf download nvidia/mit-b0`, then copy that "
        f"machine's hub cache (~/.cache/huggingface/hub) into {hub} here (HF_HUB_CACHE or HF_HOME moves it) (or pass "
        "--no-pretrained to train from random initialisation)"), out + err
    code, out, err = cli(capsys, *plan, "--detector", "cnnspot.r50")
    checkpoints = tmp_path / "torch" / "hub" / "checkpoints"
    assert code == 1 and "e.g. download https://download.pytorch.org/models/resnet50-0676ba61.pth to " \
        f"{checkpoints / 'resnet50-0676ba61.pth'} (the torch hub cache" in one_line(err), err
    code, out, err = cli(capsys, *plan, "--detector", "opensdi.maskclip")  # two repos: both named, once
    assert code == 1 and "`hf download timm/vit_large_patch14_clip_224.openai` and `hf download " \
        "timm/vit_base_patch16_224.mae`, then copy" in one_line(err), err
    code, out, err = cli(capsys, *plan, "--detector", "benco.mesorch")  # put by hand: never downloaded
    placed = Path(os.environ["DIFFZOO_CACHE"]) / "weights" / "benco" / "mit_b3.pth"
    assert code == 1 and "weights 'mit_b3.pth' are missing (diffzoo downloads none): put mit_b3.pth at " \
        f"{placed} (the card's recipe: seg_pretrain_path: mit_b3.pth (NVlabs/SegFormer" in one_line(err), err
    snapshot = hub / "models--nvidia--mit-b0" / "snapshots" / "0123"
    snapshot.mkdir(parents=True)
    (snapshot / "model.safetensors").write_bytes(b"")  # looked for, never read by a plan
    code, out, err = cli(capsys, *plan, "--detector", "segformer.b0")
    said = f"trained now, pretrained weights nvidia/mit-b0 (in {snapshot.parent})"
    assert code == 0 and " ".join(out.split()).count(said) == 2, out + err


def test_the_plan_looks_for_every_weights_file_a_card_names(capsys, offline_empty_hub, tmp_path):
    """TruFor's constructor reads noiseprint.pth and mit_b2.pth: the plan names both, then the one still missing."""
    from helpers.cli import one_line

    plan = ["run", "--detector", "benco.trufor", "--suite", "standard", "--pretrained", "--device", "cpu", "--plan",
            "--out", tmp_path / "out"]
    placed = Path(os.environ["DIFFZOO_CACHE"]) / "weights" / "benco"
    code, out, err = cli(capsys, *plan)
    assert code == 1 and "weights 'noiseprint.pth and mit_b2.pth' are missing (diffzoo downloads none): put " \
        f"noiseprint.pth at {placed / 'noiseprint.pth'} (the card's recipe" in one_line(err), err
    assert f"; put mit_b2.pth at {placed / 'mit_b2.pth'} (the card's recipe" in one_line(err), err
    placed.mkdir(parents=True)
    (placed / "noiseprint.pth").write_bytes(b"")  # looked for, never read by a plan
    code, out, err = cli(capsys, *plan)
    assert code == 1 and "weights 'mit_b2.pth' are missing (diffzoo downloads none)" in one_line(err), err


def test_a_model_loaded_from_the_cache_reads_no_pretrained_weights(capsys, offline_empty_hub, tmp_path, monkeypatch):
    """The cached checkpoint holds every weight: the pretrained ones, gone since it was trained, are neither
    looked for by the plan nor read by the build, offline."""
    import shutil

    from diffzoo.harness.core.cards import RecipeValue

    entry = get_registry().get("detector", "segformer.tiny")  # as a full card: its training starts from hub weights
    monkeypatch.setattr(entry, "card", dataclasses.replace(
        entry.card, weights=TINY_SEGFORMER_REPO, recipe={**entry.card.recipe, "pretrained": RecipeValue(True, "")}))
    hub = tmp_path / "hf" / "hub"
    hub_segformer(hub, seed=0)
    run = ["run", "--detector", "segformer.tiny", "--suite", "standard", "--pretrained", "--iterations", "2",
           "--batch-size", "2", "--bootstrap", "0", "--device", "cpu", "--out", tmp_path / "out"]
    code, out, err = cli(capsys, *run, "--plan")
    assert code == 0 and "trained now, pretrained weights diffzoo-test/tiny-segformer (in " in " ".join(out.split()), err
    code, out, err = cli(capsys, *run)
    assert code == 0, err
    shutil.rmtree(hub)
    code, out, err = cli(capsys, *run, "--plan")
    assert code == 0 and out.count("loaded from the cache\n") == 2 and "pretrained weights" not in out, out + err
    code, out, err = cli(capsys, *run)
    assert code == 0, err
    assert offline_empty_hub == []


def test_a_checkpoint_of_a_model_whose_build_reads_weight_files_still_needs_them(capsys, offline_empty_hub, tmp_path,
                                                                                 monkeypatch):
    """IMDL-BenCo's TruFor reads noiseprint.pth and mit_b2.pth whatever --pretrained says: a checkpoint
    loaded into it does not spare them, so the plan still looks for them.  IML-ViT's MAE weights, read
    only when pretrained, the checkpoint holds: they are not looked for."""
    from safetensors.torch import save_file

    from helpers.cli import one_line

    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))  # no MAE weights in the torch hub cache
    for name in ("benco.trufor", "benco.iml-vit"):
        folder = tmp_path / name
        folder.mkdir()
        save_file({"w": torch.zeros(1)}, str(folder / "model.safetensors"))
        (folder / "card.json").write_text(json.dumps({"card": {"name": name}, "task": "binary"}))
    run = ["run", "--suite", "standard", "--pretrained", "--device", "cpu", "--plan", "--out", tmp_path / "out"]
    code, out, err = cli(capsys, *run, "--detector", "benco.trufor", "--checkpoint", tmp_path / "benco.trufor")
    assert code == 1 and "weights 'noiseprint.pth and mit_b2.pth' are missing" in one_line(err), out + err
    code, out, err = cli(capsys, *run, "--detector", "benco.iml-vit", "--checkpoint", tmp_path / "benco.iml-vit")
    assert code == 0 and "); checkpoint " in " ".join(out.split()) and "pretrained weights" not in out, out + err


def test_no_pretrained_still_looks_for_the_files_a_build_always_reads(capsys, offline_empty_hub, tmp_path):
    """TruFor's constructor reads noiseprint.pth and mit_b2.pth whatever --pretrained says: with --no-pretrained
    the plan still looks for them, and its refusal does not offer --no-pretrained."""
    from helpers.cli import one_line

    plan = ["run", "--detector", "benco.trufor", "--suite", "standard", "--device", "cpu", "--plan",
            "--out", tmp_path / "out"]
    placed = Path(os.environ["DIFFZOO_CACHE"]) / "weights" / "benco"
    for option in ("--no-pretrained", "--pretrained"):
        code, out, err = cli(capsys, *plan, option)
        assert code == 1 and one_line(err).startswith(
            f"error: detector benco.trufor: weights 'noiseprint.pth and mit_b2.pth' are missing (diffzoo downloads "
            f"none): put noiseprint.pth at {placed / 'noiseprint.pth'} (the card's recipe"), out + err
        assert one_line(err).endswith(" (its build reads them even with --no-pretrained)"), err
    placed.mkdir(parents=True)
    for name in ("noiseprint.pth", "mit_b2.pth"):
        (placed / name).write_bytes(b"")  # looked for, never read by a plan
    code, out, err = cli(capsys, *plan, "--no-pretrained")
    said = f"trained now, weights it always reads noiseprint.pth (in {placed / 'noiseprint.pth'}), mit_b2.pth (in "
    assert code == 0 and said in " ".join(out.split()), out + err


def test_the_plan_names_weights_of_a_form_it_does_not_know_without_looking_for_them(offline_empty_hub):
    from diffzoo.harness.models.weights import pretrained_place

    for weights in ("Nope_Weights.IMAGENET1K_V1", "ResNet50_Weights.NOPE", "open-mmlab://resnet50_v1c"):
        assert pretrained_place(_card(weights=weights)) == f"pretrained weights {weights}"


def test_a_damaged_safetensors_file_from_the_hub_is_refused_and_never_recorded(offline_empty_hub, tmp_path):
    """SegFormer reads its hub weights through transformers: the file is checked first."""
    weights = hub_segformer(tmp_path / "hf" / "hub", seed=0)
    good = weights.read_bytes()
    weights.unlink()  # the HF cache links to a blob: write a new file, not through the link
    weights.write_bytes(b"\xff" * 8 + good[8:])  # an impossible header length
    with pytest.raises(WeightsFileError) as exc:
        _segformer()
    message = str(exc.value)
    assert f"refusing to load weights file {weights}: could not be read as weights" in message
    assert f"replace it with the file from hf://{TINY_SEGFORMER_REPO}" in message and _records() == []
    weights.write_bytes(good)
    _segformer()  # the right file: accepted, and its hash recorded
    assert [json.loads(r.read_text())["sha256"] for r in _records()] == [sha256_file(weights)]


def test_a_malicious_pytorch_model_bin_in_the_hub_cache_is_refused_and_never_run(offline_empty_hub, tmp_path):
    hub = tmp_path / "hf" / "hub"
    snapshot = hub_segformer(hub, seed=0).parent
    (snapshot / "model.safetensors").unlink()  # transformers then reads pytorch_model.bin
    marker = tmp_path / "MARKER"
    weights = _malicious(snapshot / "pytorch_model.bin", marker, "torch.save")
    with pytest.raises(WeightsFileError) as exc:
        _segformer()
    _refused(str(exc.value), weights)
    assert not marker.exists() and _records() == []


@pytest.mark.parametrize("name", ["benco.iml-vit.tiny", "benco.mantra-net", "cnnspot.tiny", "deeplabv3plus.tiny",
                                  "dinov3iml.tiny", "fcn8s.tiny", "opensdi.maskclip.tiny", "segformer.tiny",
                                  "universalfakedet.tiny"])
def test_pretrained_weights_asked_of_a_card_without_any_are_refused_in_one_message(offline_empty_hub, name,
                                                                                    monkeypatch):
    """Every family refuses alike, naming the card and the fix, never a download of weights '(none)'
    (nor, for IMDL-BenCo's, a model built with random weights)."""
    from diffzoo.plugin import ModelError, WeightsUnavailableError
    from diffzoo.plugins.benco import model

    monkeypatch.setattr(model, "benco_class", lambda spec: _LoadsLikeBenco)  # as with IMDL-BenCo installed
    with pytest.raises(ModelError) as exc:
        create_detector(name, get_registry().get("detector", name).card.tasks[0], pretrained=True)
    assert not isinstance(exc.value, WeightsUnavailableError)
    assert str(exc.value) == f"detector {name} has no pretrained weights; build it with pretrained=False"


def test_hub_pretrained_says_which_card_has_no_weights_and_which_folder_its_loader_cannot_read(offline_empty_hub,
                                                                                               tmp_path):
    from diffzoo.plugin import ModelError, WeightsUnavailableError, hub_pretrained

    with pytest.raises(ModelError, match="^detector weights.test has no pretrained weights; build it with "
                                         "pretrained=False$"):
        hub_pretrained(_card(weights=None), Path, ("model.safetensors",), detail="or not")
    folder = hub_segformer(tmp_path / "hf" / "hub", seed=0).parent

    def unreadable(path, output_loading_info):
        raise OSError("no tokenizer here")

    def read(path, output_loading_info):  # as transformers' from_pretrained answers it
        return path, {"missing_keys": [], "mismatched_keys": []}

    assert hub_pretrained(_card(weights=TINY_SEGFORMER_REPO), read, ("model.safetensors",), detail="") == folder
    with pytest.raises(WeightsUnavailableError) as exc:
        hub_pretrained(_card(weights=TINY_SEGFORMER_REPO), unreadable, ("model.safetensors",), detail="or not")
    assert f"{folder} is incomplete (no tokenizer here); or not" in str(exc.value), str(exc.value)


@pytest.mark.parametrize("change", ["a tensor missing", "a tensor of another shape", "another model's names"])
def test_a_hub_file_that_leaves_part_of_the_model_random_is_refused_and_never_recorded(offline_empty_hub, tmp_path,
                                                                                      change):
    """transformers builds what the file lacks with random weights and only warns: never a run of that model.
    The task's head (new by design: the hub holds an encoder) and a BatchNorm counter may be missing."""
    from safetensors.torch import load_file, save_file

    weights = hub_segformer(tmp_path / "hf" / "hub", seed=0)
    good = weights.read_bytes()
    state = load_file(str(weights))
    key = "segformer.encoder.block.0.0.attention.self.query.weight"
    assert key in state and any(k.startswith("decode_head.") for k in state)
    if change == "a tensor missing":
        del state[key]
    elif change == "a tensor of another shape":
        state[key] = torch.zeros(3, 3)
    else:
        state = {k.replace("segformer.", "encoder."): v for k, v in state.items()}
    state = {k: v for k, v in state.items() if not k.startswith("decode_head.")}  # the head: always new
    weights.unlink()  # the HF cache links to a blob: write a new file, not through the link
    save_file(state, str(weights))
    with pytest.raises(WeightsFileError) as exc:
        _segformer()
    message = str(exc.value)
    assert f"refusing to load weights file {weights}: " in message and "tensor(s) of the model are missing from it " \
        "or of another shape (" in message and f"it is not {TINY_SEGFORMER_REPO}'s model; replace it with the file " \
        f"from hf://{TINY_SEGFORMER_REPO}" in message and "decode_head" not in message, message
    assert exc.value.exit_code == 2 and _records() == []
    weights.unlink()
    weights.write_bytes(good)
    _segformer()  # the right file put in its place: built, its hash recorded
    assert [json.loads(r.read_text())["sha256"] for r in _records()] == [sha256_file(weights)]


def test_a_hub_file_open_clip_cannot_build_from_is_never_recorded(offline_empty_hub, tmp_path, monkeypatch):
    """UniversalFakeDetect's (and OpenSDI's) CLIP file is checked, then read by open_clip: its first use is
    recorded once open_clip has built the model from it, so the right file put in its place then loads."""
    import open_clip
    from safetensors.torch import save_file

    from diffzoo.plugin import ModelError
    from diffzoo.plugins.universalfakedet.model import open_clip_model

    snapshot = tmp_path / "hf" / "hub" / "models--timm--vit_large_patch14_clip_224.openai" / "snapshots" / "0123"
    snapshot.mkdir(parents=True)
    (snapshot.parent.parent / "refs").mkdir()
    (snapshot.parent.parent / "refs" / "main").write_text("0123")
    weights = snapshot / "open_clip_model.safetensors"
    save_file({"w": torch.zeros(2)}, str(weights))  # loads as weights, but is no CLIP
    card = get_registry().get("detector", "universalfakedet.vit-l14").card

    def refuses(name, pretrained, force_quick_gelu):
        raise RuntimeError("Error(s) in loading state_dict for CLIP: Missing key(s)")

    monkeypatch.setattr(open_clip, "create_model", refuses)
    with pytest.raises(ModelError, match=f"open_clip cannot load {weights} as 'ViT-L-14'"):
        open_clip_model(card, True)
    assert _records() == []
    monkeypatch.setattr(open_clip, "create_model", lambda name, pretrained, force_quick_gelu: nn.Linear(1, 1))
    open_clip_model(card, True)  # the right file: built, and only now recorded
    assert [json.loads(r.read_text())["sha256"] for r in _records()] == [sha256_file(weights)]


def test_an_smp_encoder_file_smp_cannot_build_from_is_never_recorded(offline_empty_hub, tmp_path, monkeypatch):
    """DeepLabv3+'s encoder file is checked, then read by smp itself: recorded once smp built the model."""
    import segmentation_models_pytorch as smp
    from safetensors.torch import save_file
    from segmentation_models_pytorch.encoders import encoders

    from diffzoo.harness.core.protocols import DetectorBuild
    from diffzoo.plugins.deeplabv3plus.model import DeepLabV3PlusDetector

    card = get_registry().get("detector", "deeplabv3plus.r50").card
    settings = encoders[card.arch["encoder"]]["pretrained_settings"]
    revision = next(s["revision"] for s in settings.values() if s.get("repo_id") == card.weights)
    snapshot = tmp_path / "hf" / "hub" / f"models--{card.weights.replace('/', '--')}" / "snapshots" / revision
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    weights = snapshot / "model.safetensors"
    save_file({"w": torch.zeros(2)}, str(weights))  # loads as weights, but is no ResNet-50

    def refuses(**kwargs):
        raise RuntimeError("Error(s) in loading state_dict for ResNetEncoder: Missing key(s)")

    monkeypatch.setattr(smp, "DeepLabV3Plus", refuses)
    with pytest.raises(RuntimeError, match="Missing key"):
        DeepLabV3PlusDetector(DetectorBuild(card, "binary", pretrained=True))
    assert _records() == []
    monkeypatch.setattr(smp, "DeepLabV3Plus", lambda **kwargs: nn.Conv2d(3, 1, 1))  # the right file: smp built
    DeepLabV3PlusDetector(DetectorBuild(card, "binary", pretrained=True))
    assert [json.loads(r.read_text())["sha256"] for r in _records()] == [sha256_file(weights)]


def test_a_hub_config_of_another_decode_head_builds_the_cards_model(offline_empty_hub, tmp_path):
    """config.json, which no hash checks, set a decode head of another width (new by design, so no tensor is
    missing): the model was built, trained and cached as another architecture than its card, which could
    not load its checkpoint."""
    from diffzoo.harness.core.protocols import DetectorBuild
    from diffzoo.plugins.segformer.model import SegformerDetector

    config = hub_segformer(tmp_path / "hf" / "hub", seed=0).parent / "config.json"
    held = json.loads(config.read_text())
    held["decoder_hidden_size"] = 16
    config.write_text(json.dumps(held))
    built = _segformer()
    assert built.model.net.segformer.config.decoder_hidden_size == 32
    folder = tmp_path / "ckpt"
    built.save(folder)
    SegformerDetector(DetectorBuild(_card(weights=TINY_SEGFORMER_REPO), "binary", pretrained=False)).load(folder)


def _segformer():
    from diffzoo.harness.core.protocols import DetectorBuild
    from diffzoo.plugins.segformer.model import SegformerDetector

    return SegformerDetector(DetectorBuild(_card(weights=TINY_SEGFORMER_REPO), "binary", pretrained=True))


# -- the IMDL-BenCo backend's weight files (the backend itself is optional) -----------------------

class _LoadsLikeBenco(nn.Module):
    """Stands in for an IMDL-BenCo model class: its constructor torch.loads the weight file it is
    given, as IMDL-BenCo's do (torch's default, weights_only=True)."""

    loaded: list[str] = []

    def __init__(self, weight_path: str | None = None, **kwargs):
        super().__init__()
        if weight_path is not None:
            torch.load(weight_path, map_location="cpu")
            _LoadsLikeBenco.loaded.append(weight_path)
        self.conv = nn.Conv2d(3, 1, 1)

    def forward(self, image, mask, **kwargs):
        return {"pred_mask": torch.sigmoid(self.conv(image)), "backward_loss": self.conv.weight.sum()}


@pytest.fixture
def benco_without_backend(monkeypatch, tmp_path):
    """benco.span built without IMDL-BenCo: its model class is :class:`_LoadsLikeBenco`, its one
    required weight file (IMTFEv4.pt) is read from ``$DIFFZOO_CACHE/weights/benco/``."""
    from diffzoo.plugins.benco import model

    monkeypatch.setattr(model, "benco_class", lambda spec: _LoadsLikeBenco)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(_LoadsLikeBenco, "loaded", [])
    return Path(os.environ["DIFFZOO_CACHE"], "weights", "benco", "IMTFEv4.pt")


@pytest.mark.parametrize("how", ["pickle", "torch.save"])
def test_a_malicious_benco_weight_file_is_one_line_exit_2_and_never_poisons_its_hash(
        capsys, tmp_path, diffseg_folder, benco_without_backend, how):
    marker = tmp_path / "MARKER"
    weights = _malicious(benco_without_backend, marker, how)
    code, stdout, stderr = cli(capsys, "train", "--detector", "benco.span", "--dataset", diffseg_folder,
                               "--iterations", "1", "--batch-size", "2", "--device", "cpu")
    line = one_line_exit_2(code, stdout, stderr, "detector benco.span")
    _refused(line, weights)
    assert "RonyAbecidan/ManTraNet-pytorch" in line  # where IMTFEv4.pt comes from (specs.py)
    assert not marker.exists() and _records() == [] and _LoadsLikeBenco.loaded == []
    torch.save({"w": torch.zeros(3)}, weights)  # the right file put in its place afterwards: accepted
    create_detector("benco.span", "binary", pretrained=False)
    assert _LoadsLikeBenco.loaded == [str(weights)]
    assert [json.loads(r.read_text())["sha256"] for r in _records()] == [sha256_file(weights)]


def test_a_benco_weight_file_its_constructor_cannot_read_is_never_recorded(benco_without_backend, monkeypatch):
    """A file that loads as weights but is not the one IMDL-BenCo's constructor wants (its strict
    load_state_dict fails) is not taken for the card's: the right file put in its place then builds."""
    from diffzoo.plugins.benco import model

    weights = benco_without_backend
    weights.parent.mkdir(parents=True)
    torch.save({"w": torch.zeros(3)}, weights)

    class Strict(_LoadsLikeBenco):
        def __init__(self, weight_path=None, **kwargs):
            raise RuntimeError("Error(s) in loading state_dict for ManTraNet: Missing key(s)")

    monkeypatch.setattr(model, "benco_class", lambda spec: Strict)
    from diffzoo.harness.core.errors import PluginError

    with pytest.raises(PluginError, match="its factory raised RuntimeError: Error.s. in loading state_dict for "
                                          "ManTraNet: Missing key"):
        create_detector("benco.span", "binary", pretrained=False)
    assert _records() == []
    monkeypatch.setattr(model, "benco_class", lambda spec: _LoadsLikeBenco)
    create_detector("benco.span", "binary", pretrained=False)
    assert [json.loads(r.read_text())["sha256"] for r in _records()] == [sha256_file(weights)]


def test_a_malicious_benco_backbone_in_the_torch_hub_cache_is_refused(tmp_path, monkeypatch,
                                                                      benco_without_backend):
    """MVSS-Net's ResNet-50, which its constructor fetches through torch.hub's cache."""
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    marker = tmp_path / "MARKER"
    weights = _malicious(tmp_path / "torch" / "hub" / "checkpoints" / "resnet50-19c8e357.pth", marker, "pickle")
    with pytest.raises(WeightsFileError) as exc:
        create_detector("benco.mvss-net", "binary", pretrained=True)
    _refused(str(exc.value), weights)
    assert "https://download.pytorch.org/models/resnet50-19c8e357.pth" in str(exc.value)
    assert not marker.exists() and _records() == []


# -- released weights' files ------------------------------------------------------------------------

def test_a_release_file_holding_nan_is_refused_as_the_authors_file_not_a_diverged_training(capsys, tmp_path):
    from helpers.dinov3iml import RELEASE, reference_model, released

    state = reference_model().state_dict()
    state["seg_head.6.weight"][0] = float("nan")
    path = released(tmp_path / "dl", state)
    code, out, err = cli(capsys, "run", "--detector", "dinov3iml.tiny", "--suite", "standard", "--device", "cpu",
                         "--weights", f"released:{RELEASE}", "--checkpoint", path, "--out", tmp_path / "out")
    source = get_registry().get("detector", "dinov3iml.tiny").card.release(RELEASE).source
    assert one_line_exit_2(code, out, err) == (
        f"error: release {RELEASE} ({path}) holds NaN or inf weights (seg_head.6.weight): the file is damaged or "
        f"not the release; replace it with the file from {source}")
    assert not list(Path(os.environ["DIFFZOO_CACHE"], "checkpoints").rglob("model.safetensors"))


@pytest.mark.parametrize("model, found", [({}, "an empty dict"), ([torch.zeros(1)], "list")])
def test_a_release_file_without_tensors_under_its_wrapper_says_what_it_found(capsys, tmp_path, model, found):
    from helpers.dinov3iml import RELEASE, released

    path = released(tmp_path / "dl", model)  # {"model": <this>, "epoch": ..., "args": ...}
    code, out, err = cli(capsys, "run", "--detector", "dinov3iml.tiny", "--suite", "standard", "--device", "cpu",
                         "--weights", f"released:{RELEASE}", "--checkpoint", path, "--out", tmp_path / "out")
    assert one_line_exit_2(code, out, err) == (
        f"error: release {RELEASE}: {path} holds no name -> tensor dict (found {found})")


def test_a_missing_release_file_names_the_releases_file_and_never_a_failed_download(capsys, tmp_path):
    from helpers.dinov3iml import FILE, RELEASE

    run = ["run", "--detector", "dinov3iml.tiny", "--suite", "standard", "--device", "cpu",
           "--weights", f"released:{RELEASE}", "--out", tmp_path / "out"]
    source = get_registry().get("detector", "dinov3iml.tiny").card.release(RELEASE).source
    head = f"error: detector dinov3iml.tiny: weights 'released:{RELEASE} ({source})' are missing (diffzoo downloads none): "
    typo = tmp_path / "Downloads" / "cat_vitl_lora.pth"  # a path the user mistyped: the fix is on the command line
    assert one_line_exit_2(*cli(capsys, *run, "--checkpoint", typo)) == (
        f"{head}--checkpoint {typo} is not the file; download {FILE} from {source} and give its path "
        f"(missing: {typo})")
    folder = Path(os.environ["DIFFZOO_CACHE"]) / "weights" / "released" / "dinov3iml.tiny" / RELEASE
    code, _, err = cli(capsys, *run)
    assert code == 1 and err.strip() == (
        f"{head}download {FILE} from {source} into {folder} (diffzoo run also takes them as --checkpoint PATH) "
        f"(missing: {folder / FILE})"), err
    named = tmp_path / "empty"  # a folder the user named that lacks the file: a usage error too
    named.mkdir()
    assert one_line_exit_2(*cli(capsys, *run, "--checkpoint", named)) == (  # never told to give what was given
        f"{head}download {FILE} from {source} into {named} (missing: {named / FILE})")


@pytest.mark.parametrize("how", ["legacy whole", "zip cut short", "legacy cut short",
                                 "torch.save under a .safetensors name"])
def test_a_release_file_cut_short_or_under_the_other_formats_name_is_one_line_saying_so(capsys, tmp_path, how):
    """A file of either torch.save layout (zip or legacy) loads whole; cut short, it says so, never torch's
    "failed finding central directory"; a torch.save file named .safetensors says what it is."""
    from helpers.dinov3iml import FILE, RELEASE, released

    whole = released(tmp_path / "dl")
    legacy = tmp_path / "legacy" / FILE
    legacy.parent.mkdir()
    torch.save(torch.load(whole, weights_only=False), legacy, _use_new_zipfile_serialization=False)
    run = ["run", "--detector", "dinov3iml.tiny", "--suite", "standard", "--device", "cpu", "--bootstrap", "0",
           "--weights", f"released:{RELEASE}", "--out", tmp_path / "out", "--checkpoint"]
    if how == "legacy whole":
        code, _, err = cli(capsys, *run, legacy)
        assert code == 0, err
        return
    bad = tmp_path / "bad" / (FILE.replace(".pth", ".safetensors") if "safetensors" in how else FILE)
    bad.parent.mkdir()
    data = (legacy if how.startswith("legacy") else whole).read_bytes()
    bad.write_bytes(data if "safetensors" in how else data[:len(data) // 2])
    line = one_line_exit_2(*cli(capsys, *run, bad), f"refusing to load weights file {bad}: ")
    said = ("it is a torch.save file under a safetensors file's name (cat_vitl_lora_r32.safetensors): give it its "
            ".pth name" if "safetensors" in how else "it ends early (truncated)")
    assert f"{bad}: could not be read as weights: {said}; replace it with the file from released:{RELEASE} (" in line


@pytest.mark.parametrize("archive", ["zip", "gztar"])
def test_a_release_file_packed_in_an_archive_says_to_unpack_it(capsys, tmp_path, archive):
    """The release downloaded as an archive (a Drive folder's zip, a .tar.gz), under its file's name or its own:
    never torch's "[enforce fail at inline_container.cc:180]" nor "it starts with b'\\x1f\\x8b'"."""
    import shutil

    from helpers.dinov3iml import FILE, RELEASE, released

    packed = Path(shutil.make_archive(str(tmp_path / "download"), archive, released(tmp_path / "dl").parent))
    kind = "a zip archive holding cat_vitl_lora_r32.pth" if archive == "zip" else "a gzip file"
    for given in (packed, tmp_path / "named" / FILE):
        given.parent.mkdir(exist_ok=True)
        given.write_bytes(packed.read_bytes())
        line = one_line_exit_2(*cli(capsys, "run", "--detector", "dinov3iml.tiny", "--suite", "standard", "--device",
                                    "cpu", "--weights", f"released:{RELEASE}", "--checkpoint", given, "--out",
                                    tmp_path / "out"))
        assert f"refusing to load weights file {given}: could not be read as weights: it is {kind}, not a weights " \
               f"file: unpack it and give the file inside; replace it with the file from released:{RELEASE} (" in line


def test_a_file_that_is_no_weights_says_so_where_a_first_use_hash_is_recorded(capsys, tmp_path):
    """What the file is, not "the file changed since ... if the new weights are intended, delete the record":
    deleting it would not make an archive, an empty file or half a download load."""
    from helpers.dinov3iml import FILE, RELEASE, released

    run = ["run", "--detector", "dinov3iml.tiny", "--suite", "standard", "--device", "cpu", "--bootstrap", "0",
           "--weights", f"released:{RELEASE}", "--out", tmp_path / "out", "--checkpoint"]
    whole = released(tmp_path / "dl")
    code, _, err = cli(capsys, *run, whole)  # its sha256 recorded at this first use
    assert code == 0, err
    bad = tmp_path / "bad" / FILE
    bad.parent.mkdir()
    for data, said in ((b"", "it is empty"), (whole.read_bytes()[:1000], "it ends early (truncated)")):
        bad.write_bytes(data)
        assert one_line_exit_2(*cli(capsys, *run, bad), f"{bad}: could not be read as weights: {said};")


def test_a_folder_named_as_the_release_file_is_said_to_be_a_folder_in_its_place(capsys, tmp_path):
    """Never "download FILE into .../FILE" (the folder taken for one holding the release's files)."""
    from helpers.dinov3iml import FILE, RELEASE

    source = get_registry().get("detector", "dinov3iml.tiny").card.release(RELEASE).source
    named = tmp_path / "dl" / FILE  # e.g. an archive unpacked under the file's name
    named.mkdir(parents=True)
    for plan in ([], ["--plan"]):
        assert one_line_exit_2(*cli(capsys, "run", "--detector", "dinov3iml.tiny", "--suite", "standard", "--device",
                                    "cpu", "--weights", f"released:{RELEASE}", "--checkpoint", named, *plan, "--out",
                                    tmp_path / "out")) == (
            f"error: detector dinov3iml.tiny: weights 'released:{RELEASE} ({source})' are missing (diffzoo downloads "
            f"none): --checkpoint {named} is not the file; download {FILE} from {source} and give its path "
            f"(a folder: {named})")


# -- full disks inside the remaining writers --------------------------------------------------------

def _enospc(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")  # no file name, as write() raises it


@pytest.fixture
def checkpoint(tmp_path):
    """An (untrained) segformer.tiny checkpoint and an image to predict."""
    torch.manual_seed(0)
    det = create_detector("segformer.tiny", "binary")
    det.save(tmp_path / "ckpt")
    image = tmp_path / "img1.png"
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (40, 48, 3), dtype=np.uint8)).save(image)
    return tmp_path / "ckpt", image


class _FullFile:
    """An open text file on a full disk: every write fails as the OS says it, with no file name."""

    def __init__(self, fh):
        self._fh = fh

    def write(self, text):
        _enospc()

    def __getattr__(self, name):
        return getattr(self._fh, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._fh.close()


@pytest.mark.parametrize("full", ["predictions.jsonl", "img1.labels.png"])
def test_a_full_disk_during_predict_names_the_file_and_its_free_space(capsys, tmp_path, monkeypatch, checkpoint,
                                                                      full):
    from diffzoo.harness.run import prediction
    from diffzoo.leaderboard.outdir import claim_output_dir

    ckpt, image = checkpoint
    out = tmp_path / "pred"
    claim_output_dir(out)  # its marker is written while the disk still has room
    if full == "predictions.jsonl":
        monkeypatch.setattr(prediction, "open", lambda *a, **k: _FullFile(open(*a, **k)), raising=False)
    else:  # the atomic PNG write's sync; predict's list of its outputs is written first, with room
        sync = os.fsync
        monkeypatch.setattr(os, "fsync", lambda fd: _enospc() if full in os.readlink(f"/proc/self/fd/{fd}")
                            else sync(fd))
    result = cli(capsys, "predict", "--checkpoint", ckpt, "--out", out, "--device", "cpu", image)
    line = one_line_exit_2(*result, f"disk full while writing {out / full} (")
    assert f"{free_space(out / full)} on that filesystem" in line


def test_a_full_disk_while_building_mini_names_the_png_and_leaves_no_folder(capsys, tmp_path, monkeypatch):
    from pathlib import Path as PathClass

    root = tmp_path / "mini"
    real = PathClass.write_bytes

    def full_under_tmp(self, data):
        if str(self).startswith(str(tmp_path)):
            _enospc()
        return real(self, data)

    monkeypatch.setattr(PathClass, "write_bytes", full_under_tmp)
    result = cli(capsys, "data", "build", "mini", "--root", root)
    line = one_line_exit_2(*result, "disk full while writing ", ".image.png (", "free on that filesystem")
    written = Path(line.split("disk full while writing ", 1)[1].split(" (", 1)[0])
    assert written.parent.name == "train_copy" and written.is_relative_to(tmp_path)
    assert not root.exists() and not any(p.name.startswith(".mini.tmp") for p in tmp_path.iterdir())
    assert not (tmp_path / ".mini.lock").exists()  # a --root's lock is the cache's, never beside the user's folders


def test_a_full_disk_writing_the_mini_manifest_names_it(tmp_path, monkeypatch):
    from pathlib import Path as PathClass

    from diffzoo.generators.datasets.mini import build_mini
    from diffzoo.harness.core.errors import StorageError

    real = PathClass.write_bytes

    def full_manifest(self, data):
        if self.name == "manifest.jsonl":
            _enospc()
        return real(self, data)

    monkeypatch.setattr(PathClass, "write_bytes", full_manifest)
    with pytest.raises(StorageError) as exc:
        build_mini(tmp_path / "mini", n_images=2, size=32, seed=0)
    message = str(exc.value)
    assert message.startswith("disk full while writing ") and "manifest.jsonl (" in message
    assert "free on that filesystem" in message and exc.value.exit_code == 2
    assert not (tmp_path / "mini").exists()


def test_a_fifo_in_place_of_a_benco_weight_file_is_refused_by_name_unopened(benco_without_backend):
    weights = benco_without_backend
    weights.parent.mkdir(parents=True)
    os.mkfifo(weights)  # opening it to read would block for ever
    with pytest.raises(WeightsFileError) as exc:
        create_detector("benco.span", "binary", pretrained=False)
    assert f"refusing to load weights file {weights}: it is a FIFO (named pipe);" in str(exc.value)
    assert exc.value.exit_code == 2 and _records() == [] and _LoadsLikeBenco.loaded == []


def test_the_hub_is_unreachable_on_its_clients_transport_errors_and_a_library_bug_propagates(monkeypatch):
    """The installed hub client's own errors for no answer (a refused port, offline mode) read as unreachable;
    any other error in the hub library is a bug of its own, never taken for "offline"."""
    import huggingface_hub

    from diffzoo.harness.core.hub import hub_unreachable

    monkeypatch.setattr(huggingface_hub, "repo_info", huggingface_hub.HfApi(endpoint="http://127.0.0.1:9").repo_info)
    assert hub_unreachable("someone/weights")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    assert hub_unreachable("someone/weights")

    def broken(repo_id, **kwargs):
        raise TypeError("repo_info() got an unexpected keyword argument 'timeout'")

    monkeypatch.setattr(huggingface_hub, "repo_info", broken)
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        hub_unreachable("someone/weights")


def test_a_detector_hub_download_with_no_hub_answering_reads_the_cache_only(monkeypatch):
    """With HF_HUB_OFFLINE unset and no network, the hub library retried each file for minutes; the hub
    is asked once, and the files come from the cache or the one-line 'not in the local cache'."""
    import huggingface_hub
    from huggingface_hub.errors import LocalEntryNotFoundError

    from diffzoo.harness.core.errors import WeightsUnavailableError
    from diffzoo.harness.models.weights import hub_weights

    asked, local = [], []

    def no_answer(repo_id, **kwargs):
        asked.append(repo_id)
        raise ConnectionError("[Errno -2] Name or service not known")

    def download(repo_id, filename, revision=None, local_files_only=False):
        local.append(local_files_only)
        raise LocalEntryNotFoundError(f"{filename} is not in the cache")

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub, "repo_info", no_answer)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    card = get_registry().get("detector", "segformer.tiny").card
    with pytest.raises(WeightsUnavailableError) as exc:
        hub_weights(card, "someone/weights", ["model.safetensors"])
    assert (asked, local) == (["someone/weights"], [True])
    assert str(exc.value).startswith("detector segformer.tiny: weights 'someone/weights' are not in the local cache")
