"""The optional IMDL-BenCo backend (diffzoo/plugins/benco): IMDL-BenCo's localizers as detectors.

The first tests run everywhere: every card is listed, and building one without
IMDL-BenCo says how to install it.  The rest need IMDL-BenCo
(``bash scripts/install-benco.sh``) and are skipped without it, unless
DIFFZOO_REQUIRE_BENCO=1 (CI's backend venv), where they fail.
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import torch

from diffzoo import create_detector
from diffzoo.harness.core.errors import ConfigError, ModelError, WeightsUnavailableError
from diffzoo.harness.core.plugins import get_registry
from diffzoo.plugins.benco import specs as benco_specs
from diffzoo.plugins.benco.specs import INSTALL, SPECS

from helpers.backends import require_benco
from helpers.cli import cli

MODELS = ["iml-vit", "mvss-net", "cat-net", "pscc-net", "trufor", "objectformer", "sparsevit", "mesorch", "span",
          "mantra-net", "mscdi-net"]
TINY = [f"benco.{s.key}.tiny" for s in SPECS if s.tiny is not None]
FAST = ["--iterations", "3", "--batch-size", "2", "--bootstrap", "0", "--device", "cpu"]


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
                         "benco.sparsevit.tiny", "benco.mesorch.tiny", "benco.mantra-net.tiny"}
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
    scored = get_registry().get("detector", name).card.arch["benco"] in ("pscc-net", "mvss-net")  # pred_label
    assert sorted((r["case"]["name"], (r["case"].get("options") or {}).get("image_score", "")) for r in records) == [
        ("binary", ""), ("image", ""), *([("image", "detector")] if scored else [])]
    assert all(r["detector"]["name"] == name and r["config"]["train"]["extra"]["input_rule"] for r in records)
    if scored:
        assert f"{name} (own image score)" in text
    code, stdout, _ = cli(capsys, "leaderboard", "verify", "--store", out)
    assert code == 0 and f"{len(records)} good, 0 bad" in stdout


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
    albumentations' Normalize as its transforms do, an empty mask (at the size of a
    fixed-size head's output), its EdgeMaskGenerator."""
    import albumentations as albu
    from IMDLBenCo.transforms.edge_mask_generator import EdgeMaskGenerator

    normalize = albu.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    image = torch.stack([torch.from_numpy(normalize(image=(img.permute(1, 2, 0).numpy() * 255).astype(np.float32))[
        "image"]).permute(2, 0, 1) for img in images])
    m = spec.out_size or size
    mask = torch.zeros(len(images), 1, m, m)
    edge = torch.from_numpy(EdgeMaskGenerator(7)(np.zeros((m, m)))).float().expand(len(images), 1, m, m)
    return {"image": image, "mask": mask, "edge_mask": edge.contiguous(), "label": torch.zeros(len(images)).long(),
            "shape": torch.tensor([[size, size]] * len(images))}


def assert_parity(benco, det, batch=2):
    """Same weights, same input: the adapter's probabilities (and image scores, where the model
    has them) are what IMDL-BenCo's own model(**data) returns."""
    spec, size = det.spec, det.card.input_size
    theirs = benco.construct(det.card, pretrained=False)
    if spec.key == "span":  # its head is built anew in every forward upstream: give it ours
        theirs.last_layer = benco._SpanHead()
    theirs.load_state_dict(det.model.model.state_dict())
    theirs.eval()
    images = torch.rand(batch, 3, size, size, generator=torch.Generator().manual_seed(0))
    ours = det.predict(images)
    with torch.no_grad():
        expected = theirs(**_their_data(benco, spec, size, images))
    want = expected["pred_mask"].float()
    if want.shape[-1] != size:  # a fixed-size head, brought to the image's size
        want = torch.nn.functional.interpolate(want, size=(size, size), mode="bilinear", align_corners=False)
    assert ours.mask_probs.shape == want.shape
    torch.testing.assert_close(ours.mask_probs, want.clamp(0, 1), atol=1e-4, rtol=0)
    if spec.has_label:
        torch.testing.assert_close(ours.image_score.float(), expected["pred_label"].float().reshape(-1),
                                   atol=1e-4, rtol=0)


@pytest.mark.parametrize("name", TINY)
def test_probabilities_equal_imdl_bencos_own_forward(benco, name):
    assert_parity(benco, create_detector(name, "binary", pretrained=False))


def test_pixel_f1_agrees_with_imdl_bencos_on_edited_images(benco):
    """diffzoo's per-image F1 and IMDL-BenCo's PixelF1 ('origin' mode, threshold 0.5) agree on
    edited images; on authentic ones IMDL-BenCo scores 0 whatever the prediction (docs/metrics.md)."""
    import importlib.util

    import IMDLBenCo

    from diffzoo.harness.metrics.confusion import confusion_counts

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
    # computed both ways: diffzoo's F1_benco is IMDL-BenCo's mean, authentic images at 0 included
    from diffzoo.harness.core.types import BINARY, SampleMeta
    from diffzoo.harness.metrics import EvalState

    state = EvalState(BINARY, "binary")
    for i in range(6):
        state.update(SampleMeta(f"s{i}"), masks[i, 0].astype(np.uint8), (probs[i, 0] > 0.5).astype(np.uint8), None)
    metrics = state.compute()
    assert abs(metrics["F1_benco"] - float(theirs.mean())) < 1e-6
    assert metrics["F1_benco"] < metrics["F1"]  # the pooled F1 does not score the authentic image 0


def test_fixed_quirks_predict_repeatably(tmp_path, benco, monkeypatch):
    """ManTra-Net's forward rewrites its Bayar filter, SPAN's built random layers every call:
    both predict the same twice (SPAN from an IMTFE weight file the test writes)."""
    monkeypatch.setenv("DIFFZOO_CACHE", str(tmp_path / "cache"))
    from helpers.benco_weights import write_random_weights

    write_random_weights("span")
    images = torch.rand(1, 3, 40, 56)
    for name in ("benco.mantra-net.tiny", "benco.span"):
        det = create_detector(name, "binary", pretrained=False)
        first, second = det.predict(images).mask_probs, det.predict(images).mask_probs
        assert torch.equal(first, second), name
    assert "last_layer" in dict(det.model.model.named_children())  # SPAN's head is a trained, saved layer


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


def _small(name: str, size: int, **kwargs):
    """``name``'s detector at a small input size (and constructor arguments), for a CPU test."""
    from dataclasses import replace

    card = get_registry().get("detector", name).card
    return replace(card, input_size=size, arch={**card.arch, "kwargs": {**card.arch["kwargs"], **kwargs}})


# The models whose constructor needs a weight file or a download, at a small size: built from
# files the test writes, trained two steps, scored, and equal to IMDL-BenCo's forward.
WEIGHTED = {
    "benco.mvss-net": (64, {}),
    "benco.trufor": (64, {}),
    "benco.span": (48, {"layers_steps": [1, 3]}),
    "benco.mscdi-net": (64, {"backbone": "mit_bit2", "glca": 0}),
}


@pytest.mark.parametrize("name", sorted(WEIGHTED))
def test_models_that_need_weight_files_build_train_and_match_from_files_the_test_writes(tmp_path, benco,
                                                                                         monkeypatch, name):
    from diffzoo.harness.models.conformance import FixtureDataset
    from diffzoo.plugin import DetectorBuild, TrainConfig, TrainData

    monkeypatch.setenv("DIFFZOO_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    size, kwargs = WEIGHTED[name]
    card = _small(name, size, **kwargs)
    spec = benco_specs.SPECS[[s.key for s in SPECS].index(card.arch["benco"])]
    from helpers.benco_weights import write_random_weights

    assert {p.name for p in write_random_weights(spec.key)} == {w.name for w in spec.weights if w.required}
    torch.manual_seed(0)
    # pretrained where the first weight file has a URL (MVSS-Net's ResNet-50)
    det = benco.BencoDetector(DetectorBuild(card, "binary", pretrained=bool(spec.weights[0].url)))
    before = {k: v.clone() for k, v in det.model.model.state_dict().items()}
    data = FixtureDataset(size=size)
    config = TrainConfig.from_recipe(card.recipe_values(), iterations=2, batch_size=2, crop_size=size,
                                     pretrained=False, seed=0, num_workers=0, warmup_iters=0)
    losses = []
    det.fit(TrainData(data, data.ids("train")), config, progress=lambda step, loss: losses.append(loss))
    assert len(losses) == 2 and all(np.isfinite(losses))
    after = det.model.model.state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before if after[k].is_floating_point())
    probs = det.predict(torch.rand(1, 3, size + 8, size - 8)).mask_probs  # any image size comes back as it was
    assert probs.shape == (1, 1, size + 8, size - 8) and 0 <= float(probs.min()) <= float(probs.max()) <= 1
    assert_parity(benco, det)


def test_published_tables_and_site_show_benco_rows_beside_the_papers_models(capsys, tmp_path, benco):
    """A BenCo tiny card and one of the paper's models in one store: the Markdown tables rank them
    together, and the site's BenCo page shows its card: paper, licence, weights and their sources."""
    import shutil

    store = tmp_path / "store"
    for name, out in (("benco.pscc-net.tiny", store), ("fcn8s.tiny", tmp_path / "fcn")):
        code, _, stderr = cli(capsys, "run", "--detector", name, "--suite", "standard", "--out", out, *FAST)
        assert code == 0, stderr
    for folder in ("records", "states"):
        for file in (tmp_path / "fcn" / folder).iterdir():
            shutil.copy(file, store / folder / file.name)
    code, _, stderr = cli(capsys, "leaderboard", "publish", "--store", store, "-f", "md,html", "--out",
                          tmp_path / "board")
    assert code == 0, stderr
    markdown = "\n".join(p.read_text() for p in (tmp_path / "board").rglob("*.md"))
    binary = next(block for block in markdown.split("\n#") if "standard v2 / binary" in block)
    assert "benco.pscc-net.tiny" in binary and "fcn8s.tiny" in binary
    assert "benco.pscc-net.tiny (own image score)" in markdown
    index = (tmp_path / "board" / "index.html").read_text()
    assert "benco.pscc-net.tiny" in index and "fcn8s.tiny" in index
    page = (tmp_path / "board" / "detectors" / "benco.pscc-net.tiny.html").read_text()
    card = get_registry().get("detector", "benco.pscc-net").card
    for text in ("PSCC-Net: Progressive Spatio-Channel Correlation Network", "CC-BY-4.0", "weight sources",
                 "tiny test card: random weights"):
        assert text in page, text
    assert card.paper.split(",")[0] in page
