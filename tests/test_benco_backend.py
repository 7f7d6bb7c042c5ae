"""The optional IMDL-BenCo backend (diffzoo/plugins/benco): IMDL-BenCo's localizers as detectors.

The first tests run everywhere: every card is listed, and building one without
IMDL-BenCo says how to install it.  The rest need IMDL-BenCo
(``bash scripts/install-benco.sh``) and are skipped without it, unless
DIFFZOO_REQUIRE_BENCO=1 (CI's backend venv), where they fail.
"""

from __future__ import annotations

import json
import os
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import cli
from diffzoo import create_detector
from diffzoo.harness.core.errors import ConfigError, ModelError, WeightsUnavailableError
from diffzoo.harness.core.plugins import get_registry
from diffzoo.plugins.benco import specs as benco_specs
from diffzoo.plugins.benco.specs import INSTALL, SPECS

REQUIRE = "DIFFZOO_REQUIRE_BENCO"
MODELS = ["iml-vit", "mvss-net", "cat-net", "pscc-net", "trufor", "objectformer", "sparsevit", "mesorch", "span",
          "mantra-net", "mscdi-net"]
TINY = [f"benco.{s.key}.tiny" for s in SPECS if s.tiny is not None]
FAST = ["--iterations", "3", "--batch-size", "2", "--bootstrap", "0", "--device", "cpu"]


def require_benco():
    if benco_specs.installed():
        return
    reason = f"optional IMDL-BenCo backend not installed: {INSTALL}"
    if os.environ.get(REQUIRE) == "1":
        pytest.fail(f"{REQUIRE}=1 but {reason}")
    pytest.skip(reason)


@pytest.fixture
def benco():
    require_benco()
    from diffzoo.plugins.benco import model

    return model


# -- everywhere ----------------------------------------------------------------------------------
def test_every_model_is_listed_with_its_licence_and_needs(capsys):
    names = {e.name for e in get_registry().list("detector", "benco*")}
    assert {f"benco.{m}" for m in MODELS} <= names and set(TINY) <= names
    assert set(TINY) == {"benco.iml-vit.tiny", "benco.pscc-net.tiny", "benco.objectformer.tiny",
                         "benco.sparsevit.tiny", "benco.mantra-net.tiny"}
    trufor = get_registry().get("detector", "benco.trufor")
    assert "NON-COMMERCIAL" in trufor.description and trufor.card.licence.startswith("NON-COMMERCIAL")
    assert "CUDA only" in get_registry().get("detector", "benco.cat-net").description
    code, out, _ = cli(capsys, "list", "detectors", "benco.trufor")
    assert code == 0 and "NON-COMMERCIAL" in " ".join(out.split())
    for spec in SPECS:  # every recipe number names its source
        card = get_registry().get("detector", f"benco.{spec.key}").card
        assert card.recipe["lr"].source.endswith(spec.recipe["lr"][1] + ")") and spec.script in card.recipe["lr"].source
        assert card.tasks == ("binary",) and card.paper and card.licence


def test_without_imdl_benco_the_cards_say_how_to_install_it(capsys, monkeypatch):
    from diffzoo.plugins import benco

    monkeypatch.setattr(benco, "installed", lambda: False)
    assert f"needs `{INSTALL}`" in benco.card(SPECS[0]).description
    from diffzoo.plugins.benco import model

    monkeypatch.setattr(model, "installed", lambda: False)
    with pytest.raises(ModelError, match=f"needs IMDL-BenCo, which is not installed: run `{INSTALL}`"):
        create_detector("benco.iml-vit.tiny", "binary", pretrained=False)


# -- with IMDL-BenCo -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", TINY)
def test_tiny_cards_train_score_and_verify_on_mini(capsys, tmp_path, benco, name):
    out = tmp_path / "out"
    code, stdout, stderr = cli(capsys, "run", "--detector", name, "--suite", "standard", "--out", out, *FAST)
    assert code == 0, stderr
    text = " ".join(stdout.split())
    assert f"skipped standard/semantic: {name} supports binary; this case needs a semantic model" in text
    records = [json.loads(p.read_text()) for p in (out / "records").glob("*.json")]
    assert {r["case"]["name"] for r in records} == {"binary", "image"}
    assert all(r["detector"]["name"] == name and r["config"]["train"]["extra"]["input_rule"] for r in records)
    code, stdout, _ = cli(capsys, "leaderboard", "verify", "--store", out)
    assert code == 0 and "2 good, 0 bad" in stdout


@pytest.mark.parametrize("name", TINY)
def test_tiny_cards_pass_plugins_check(capsys, benco, name):
    code, stdout, _ = cli(capsys, "plugins", "check", name)
    assert code == 0 and "0 failed" in stdout, stdout


def test_the_semantic_task_is_refused_with_one_line(benco):
    with pytest.raises(ConfigError, match="serves the binary task"):
        create_detector("benco.iml-vit.tiny", "semantic", pretrained=False)


def test_edge_masks_are_made_as_imdl_benco_makes_them(benco):
    from IMDLBenCo.transforms.edge_mask_generator import EdgeMaskGenerator

    rng = np.random.default_rng(0)
    for _ in range(20):
        h, w = rng.integers(10, 40, 2)
        mask = np.zeros((h, w), np.float32)
        y, x = rng.integers(0, h - 5), rng.integers(0, w - 5)
        mask[y:y + rng.integers(2, 9), x:x + rng.integers(2, 9)] = 1
        theirs = EdgeMaskGenerator(7)(mask)[0, 0]
        ours = benco.edge_mask(torch.from_numpy(mask)[None, None])[0, 0].numpy()
        assert np.array_equal(ours, theirs)


def _their_data(benco, spec, size, images):
    """IMDL-BenCo's own data dict for square images already at the model's size:
    albumentations' Normalize as its transforms do, an empty mask, its EdgeMaskGenerator."""
    import albumentations as albu
    from IMDLBenCo.transforms.edge_mask_generator import EdgeMaskGenerator

    normalize = albu.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    image = torch.stack([torch.from_numpy(normalize(image=(img.permute(1, 2, 0).numpy() * 255).astype(np.float32))[
        "image"]).permute(2, 0, 1) for img in images])
    mask = torch.zeros(len(images), 1, size, size)
    edge = torch.from_numpy(EdgeMaskGenerator(7)(np.zeros((size, size)))).float().expand(len(images), 1, size, size)
    return {"image": image, "mask": mask, "edge_mask": edge.contiguous(), "label": torch.zeros(len(images)).long(),
            "shape": torch.tensor([[size, size]] * len(images))}


@pytest.mark.parametrize("name", TINY)
def test_probabilities_equal_imdl_bencos_own_forward(benco, name):
    """Same weights, same input: the adapter's probabilities are what model(**data) returns."""
    det = create_detector(name, "binary", pretrained=False)
    spec, size = det.spec, det.card.input_size
    theirs = benco.benco_class(spec)(**{**det.card.arch["kwargs"], **(
        {"pretrain_path": ""} if spec.key == "pscc-net" else {}), **(
        {"device": torch.device("cpu")} if spec.key == "mantra-net" else {})})
    theirs.load_state_dict(det.net.model.state_dict())
    theirs.eval()
    images = torch.rand(2, 3, size, size, generator=torch.Generator().manual_seed(0))
    ours = det.predict(images).mask_probs
    with torch.no_grad():
        expected = theirs(**_their_data(benco, spec, size, images))["pred_mask"]
    assert ours.shape == expected.shape
    torch.testing.assert_close(ours, expected.float(), atol=1e-4, rtol=0)


def test_pixel_f1_agrees_with_imdl_bencos_on_edited_images(benco):
    """diffzoo's per-image F1 and IMDL-BenCo's PixelF1 ('origin' mode, threshold 0.5) agree on
    edited images; on authentic ones IMDL-BenCo scores 0 whatever the prediction (docs/metrics.md)."""
    import importlib.util

    from diffzoo.harness.metrics.confusion import confusion_counts

    import IMDLBenCo

    package = types.ModuleType("IMDLBenCo.evaluation")  # its __init__ imports grad-cam, which is not installed
    package.__path__ = [str(Path(IMDLBenCo.__file__).parent / "evaluation")]
    sys.modules.setdefault("IMDLBenCo.evaluation", package)
    f1_module = importlib.import_module("IMDLBenCo.evaluation.F1")
    rng = np.random.default_rng(0)
    probs = rng.random((6, 1, 24, 24)).astype(np.float32)
    masks = (rng.random((6, 1, 24, 24)) > 0.6).astype(np.float32)
    masks[5] = 0  # authentic
    theirs = f1_module.PixelF1(threshold=0.5, mode="origin").batch_update(torch.from_numpy(probs),
                                                                            torch.from_numpy(masks))
    for i in range(5):
        pred = (probs[i, 0] > 0.5).astype(np.uint8)
        conf = confusion_counts(masks[i, 0].astype(np.uint8), pred, 2)
        tp, fp, fn = conf[1, 1], conf[0, 1], conf[1, 0]
        ours = 2 * tp / (2 * tp + fp + fn)
        assert abs(ours - float(theirs[i])) < 1e-6
    assert float(theirs[5]) == 0.0


def test_fixed_quirks_predict_repeatably(tmp_path, benco, monkeypatch):
    """ManTra-Net's forward rewrites its Bayar filter, SPAN's built random layers every call:
    both predict the same twice (SPAN from an IMTFE weight file the test writes)."""
    monkeypatch.setenv("DIFFZOO_CACHE", str(tmp_path / "cache"))
    from IMDLBenCo.model_zoo.span.mantranet import IMTFE

    weights = tmp_path / "cache" / "weights" / "benco" / "IMTFEv4.pt"
    weights.parent.mkdir(parents=True)
    torch.save(IMTFE(device=torch.device("cpu")).state_dict(), weights)
    images = torch.rand(1, 3, 40, 56)
    for name in ("benco.mantra-net.tiny", "benco.span"):
        det = create_detector(name, "binary", pretrained=False)
        first, second = det.predict(images).mask_probs, det.predict(images).mask_probs
        assert torch.equal(first, second), name
    assert "last_layer" in dict(det.net.model.named_children())  # SPAN's head is a trained, saved layer


def test_models_needing_weights_fail_offline_naming_what_to_download(tmp_path, benco, monkeypatch):
    monkeypatch.setenv("DIFFZOO_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    cases = {"benco.trufor": "noiseprint.pth", "benco.mscdi-net": "mit_b4.pth", "benco.span": "IMTFEv4.pt",
             "benco.mvss-net": "resnet50-19c8e357.pth", "benco.iml-vit": "mae_pretrain_vit_base.pth"}
    for name, file in cases.items():
        with pytest.raises(WeightsUnavailableError, match=f"download .*{file}") as err:
            create_detector(name, "binary", pretrained=True)
        assert str(tmp_path) in str(err.value), name
    if not torch.cuda.is_available():
        with pytest.raises(ModelError, match="runs on CUDA only"):
            create_detector("benco.cat-net", "binary", pretrained=False)


def test_weight_files_the_test_writes_build_the_models_that_need_them(tmp_path, benco, monkeypatch):
    """MSCDI-Net loads its backbone file with strict=False: an empty state dict builds it."""
    monkeypatch.setenv("DIFFZOO_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "cache" / "weights" / "benco"
    folder.mkdir(parents=True)
    torch.save({}, folder / "mit_b4.pth")
    det = create_detector("benco.mscdi-net", "binary", pretrained=False)
    probs = det.predict(torch.rand(1, 3, 70, 90)).mask_probs
    assert probs.shape == (1, 1, 70, 90) and 0 <= float(probs.min()) <= float(probs.max()) <= 1
