"""Image-level detectors (CNNSpot, UniversalFakeDetect): training, scores,
checkpoints, offline weights, CNNSpot's augmentation, and suites that use
them for image-level cases only."""

from __future__ import annotations

import io
import json
import urllib.error
from dataclasses import replace

import numpy as np
import pytest
import torch
from PIL import Image

from diffzoo import create_detector, open_dataset
from diffzoo.harness.core.errors import ConfigError, ModelError, WeightsUnavailableError
from diffzoo.harness.core.plugins import get_registry
from diffzoo.harness.core.train_config import TrainConfig
from diffzoo.harness.models.train_data import TrainHooks
from diffzoo.harness.run.plan import make_plan
from diffzoo.harness.suites import STANDARD, Case, Suite, TrainSpec
from diffzoo.plugin import TrainData
from diffzoo.plugins.cnnspot.augment import BlurJpeg, encode_jpeg
from diffzoo.plugins.cnnspot.model import blur_jpeg_view

from helpers.cli import cli

TINY = ["cnnspot.tiny", "universalfakedet.tiny"]


def _detector(name: str, seed: int = 0):
    torch.manual_seed(seed)
    return create_detector(name, "classification")


def _config(det, **overrides) -> TrainConfig:
    values = {"iterations": 30, "batch_size": 8, "crop_size": 32, "lr": 1e-2, "pretrained": False, **overrides}
    return TrainConfig.from_recipe(det.card.recipe_values(), **values)


@pytest.fixture
def dataset(diffseg_folder):
    return open_dataset(str(diffseg_folder))


@pytest.mark.parametrize("name", TINY)
def test_training_lowers_the_loss_and_scores_are_probabilities(name, dataset):
    det = _detector(name)
    log = det.fit(TrainData(dataset, dataset.ids("train")), _config(det))
    losses = log["losses"]
    assert len(losses) == 30
    assert np.mean(losses[-8:]) < np.mean(losses[:8]), losses
    images = torch.rand(3, 3, 40, 56)
    out = det.predict(images)
    assert out.mask_logits is None
    score = out.image_score
    assert score.shape == (3,) and torch.isfinite(score).all()
    assert ((score >= 0) & (score <= 1)).all()
    # scores depend on the image, not only on the bias
    assert det.predict(torch.zeros(1, 3, 40, 56)).image_score != det.predict(torch.ones(1, 3, 40, 56)).image_score


@pytest.mark.parametrize("name", TINY)
def test_same_seed_same_model(name, dataset):
    logs, scores = [], []
    images = torch.rand(2, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    for _ in range(2):
        det = _detector(name)
        logs.append(det.fit(TrainData(dataset, dataset.ids("train")), _config(det, iterations=4))["losses"])
        scores.append(det.predict(images).image_score)
    assert logs[0] == logs[1]
    assert torch.equal(scores[0], scores[1])


@pytest.mark.parametrize("name", TINY)
def test_save_then_load_gives_identical_scores(name, dataset, tmp_path):
    det = _detector(name)
    det.fit(TrainData(dataset, dataset.ids("train")), _config(det, iterations=2))
    det.save(tmp_path / "ckpt", extra={"note": "test"})
    images = torch.rand(2, 3, 36, 44)
    other = _detector(name, seed=123)  # different initial weights
    assert not torch.equal(other.predict(images).image_score, det.predict(images).image_score)
    meta = other.load(tmp_path / "ckpt")
    assert meta["task"] == "classification" and meta["note"] == "test"
    assert torch.equal(other.predict(images).image_score, det.predict(images).image_score)


def test_loading_checks_the_card_and_the_frozen_backbone(tmp_path):
    _detector("cnnspot.tiny").save(tmp_path / "cnn")
    with pytest.raises(ModelError, match="is for detector 'cnnspot.tiny'"):
        _detector("universalfakedet.tiny").load(tmp_path / "cnn")
    _detector("universalfakedet.tiny").save(tmp_path / "ufd")
    card = tmp_path / "ufd" / "card.json"
    meta = json.loads(card.read_text())
    assert meta["frozen"] == {"backbone": "random init", "pretrained": False}
    meta["frozen"] = {"backbone": "timm/vit_large_patch14_clip_224.openai", "pretrained": True}
    card.write_text(json.dumps(meta))
    with pytest.raises(ModelError, match="frozen part"):
        _detector("universalfakedet.tiny").load(tmp_path / "ufd")


def test_pretrained_backbone_checkpoints_hold_only_the_probe(monkeypatch, tmp_path):
    import open_clip
    from safetensors.torch import load_file

    from diffzoo.plugins.universalfakedet import model as ufd

    config = get_registry().get("detector", "universalfakedet.tiny").card.arch["open_clip_config"]

    def downloaded(card, pretrained):  # stands in for the pretrained weights: the same every time
        with torch.random.fork_rng():
            torch.manual_seed(42)
            return open_clip.CLIP(**config).visual

    monkeypatch.setattr(ufd, "_open_clip_visual", downloaded)
    det = create_detector("universalfakedet.tiny", "classification", pretrained=True)
    det.save(tmp_path / "probe")
    assert set(load_file(str(tmp_path / "probe" / "model.safetensors"))) == {"weight", "bias"}
    images = torch.rand(2, 3, 32, 40)
    torch.manual_seed(5)  # another probe initialisation
    other = create_detector("universalfakedet.tiny", "classification", pretrained=True)
    assert not torch.equal(other.predict(images).image_score, det.predict(images).image_score)
    other.load(tmp_path / "probe")
    assert torch.equal(other.predict(images).image_score, det.predict(images).image_score)
    with pytest.raises(ModelError, match="frozen part"):
        create_detector("universalfakedet.tiny", "classification", pretrained=False).load(tmp_path / "probe")


def test_pretrained_resnet_offline_says_what_to_fetch(monkeypatch):
    def offline(*args, **kwargs):
        raise urllib.error.URLError("network unreachable")

    monkeypatch.setattr(torch.hub, "load_state_dict_from_url", offline)
    with pytest.raises(WeightsUnavailableError, match=r"IMAGENET1K_V1.*resnet50-.*\.pth.*--no-pretrained"):
        create_detector("cnnspot", "classification", pretrained=True)


def test_pretrained_clip_offline_says_what_to_fetch(monkeypatch, tmp_path):
    import huggingface_hub.constants as hub_constants

    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", True, raising=False)
    monkeypatch.setattr(hub_constants, "HF_HUB_CACHE", str(tmp_path / "hub"), raising=False)
    with pytest.raises(WeightsUnavailableError, match=r"vit_large_patch14_clip_224\.openai.*--no-pretrained"):
        create_detector("universalfakedet", "classification", pretrained=True)


def test_classifiers_refuse_pixel_tasks():
    with pytest.raises(ConfigError, match="image-level scores only"):
        create_detector("cnnspot.tiny", "binary")


# -- CNNSpot's Blur+JPEG augmentation ------------------------------------------------

def test_blur_jpeg_is_deterministic_per_seed_and_follows_the_recipe():
    image = np.random.default_rng(0).integers(0, 256, (48, 40, 3), dtype=np.uint8)
    aug = BlurJpeg()  # the card's Blur+JPEG (0.5)
    a = aug(image, np.random.default_rng(7))
    b = aug(image, np.random.default_rng(7))
    assert np.array_equal(a, b)
    draws = [aug.draw(np.random.default_rng(s)) for s in range(400)]
    outputs = {aug(image, np.random.default_rng(s)).tobytes() for s in range(20)}
    assert len(outputs) > 10  # seeds differ -> augmentations differ
    blurred = [d["sigma"] for d in draws if d["sigma"] is not None]
    compressed = [d for d in draws if d["quality"] is not None]
    assert 0.4 < len(blurred) / 400 < 0.6 and 0.4 < len(compressed) / 400 < 0.6
    assert all(0.0 <= s <= 3.0 for s in blurred)
    qualities = {d["quality"] for d in compressed}
    assert min(qualities) >= 30 and max(qualities) <= 100 and len(qualities) > 40
    assert {d["method"] for d in compressed} == {"cv2", "pil"}
    # the training view: same seed, same crop and flip and augmentation
    label = np.zeros((48, 40), np.uint8)
    label[:10, :10] = 1
    views = [blur_jpeg_view(image, label, np.random.default_rng(3), aug, 24, True) for _ in range(2)]
    assert np.array_equal(views[0][0], views[1][0]) and np.array_equal(views[0][1], views[1][1])
    assert views[0][0].shape == (24, 24, 3)


# JPEG standard (ITU T.81) Annex K tables K.1 / K.2, row-major
LUMA = np.array([
    16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55,
    14, 13, 16, 24, 40, 57, 69, 56, 14, 17, 22, 29, 51, 87, 80, 62,
    18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92,
    49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99,
])
CHROMA = np.full((8, 8), 99)
CHROMA[:4, :4] = [[17, 18, 24, 47], [18, 21, 26, 66], [24, 26, 56, 99], [47, 66, 99, 99]]


def ijg_table(base: np.ndarray, quality: int) -> np.ndarray:
    """libjpeg's jpeg_quality_scaling + jpeg_add_quant_table (baseline)."""
    scale = 5000 // quality if quality < 50 else 200 - 2 * quality
    return np.clip((base.ravel() * scale + 50) // 100, 1, 255)


@pytest.mark.parametrize("method", ["cv2", "pil"])
@pytest.mark.parametrize("quality", [30, 31, 64, 99, 100])
def test_jpeg_quality_is_exact(method, quality):
    image = np.random.default_rng(quality).integers(0, 256, (24, 32, 3), dtype=np.uint8)
    tables = Image.open(io.BytesIO(encode_jpeg(image, quality, method))).quantization
    assert np.array_equal(np.array(tables[0]), ijg_table(LUMA, quality))
    assert np.array_equal(np.array(tables[1]), ijg_table(CHROMA, quality))


# -- planning and the command line ------------------------------------------------------

def test_planning_skips_pixel_cases_for_classifiers_only(dataset):
    config = TrainConfig()
    card = get_registry().get("detector", "cnnspot.tiny").card
    plan = make_plan(card, [STANDARD], dataset, config, "fp")
    assert [(j.task, [c.case.name for c in j.cases]) for j in plan.jobs] == [("classification", ["image"])]
    assert [s.case.name for s in plan.skipped] == ["binary", "semantic"]
    assert any(line.startswith("skipped standard/binary: cnnspot.tiny has no pixel output")
               for line in plan.describe())
    pixel_only = Suite("pixels", "1", "", (STANDARD.cases[0],))
    with pytest.raises(ConfigError, match="can serve no case of suite.*image-level case"):
        make_plan(card, [pixel_only], dataset, config, "fp")
    # a segmenter skips a case needing a task it lacks, and fails if that is every case
    seg = get_registry().get("detector", "segformer.tiny").card
    needs = Suite("cls", "1", "", (Case("c", "image", TrainSpec("classification")),))
    with pytest.raises(ConfigError, match="this case needs a classification model"):
        make_plan(seg, [needs], dataset, config, "fp")
    binary_only = replace(seg, tasks=("binary",))
    plan = make_plan(binary_only, [STANDARD], dataset, config, "fp")
    assert [c.case.name for j in plan.jobs for c in j.cases] == ["binary", "image"]
    assert [(s.case.name, s.reason) for s in plan.skipped] == [
        ("semantic", "segformer.tiny supports binary; this case needs a semantic model")]


@pytest.mark.parametrize("name", TINY)
def test_run_standard_suite_gives_image_level_records(capsys, diffseg_folder, tmp_path, name):
    out_dir = tmp_path / "out"
    code, out, err = cli(capsys, "run", "--detector", name, "--suite", "standard", "--dataset",
                         str(diffseg_folder), "--iterations", "3", "--bootstrap", "0",
                         "--device", "cpu", "--out", str(out_dir))
    assert code == 0, err
    assert f"skipped standard/binary: {name} has no pixel output" in out.replace("\n", " ")
    assert "skipped standard/semantic" in out.replace("\n", " ")
    records = [json.loads(p.read_text()) for p in (out_dir / "records").glob("*.json")]
    assert len(records) == 1
    rec = records[0]
    assert rec["case"]["task"] == "image" and rec["detector"]["task"] == "classification"
    assert rec["config"]["train_subset"]["task"] == "classification"
    assert set(rec["metrics"]) == {"img_Acc", "img_real_Acc", "img_edited_Acc", "img_AP", "img_AUC", "img_Acc_oracle"}
    assert 0.0 <= rec["metrics"]["img_Acc"] <= 1.0
    policy = rec["threshold_policy"]
    assert policy["image"] == "fixed: edited if image probability > 0.5"
    assert policy["image_score_source"] == "detector"
    assert policy["pixel"].startswith("none")


def test_feature_extraction_reports_its_progress_before_the_probe_trains(dataset):
    """UniversalFakeDetect's pass over the training images (minutes with a real CLIP
    on a CPU) is reported through TrainData.prepared to the hooks' preparing, which the run's progress shows."""
    det = _detector("universalfakedet.tiny")
    seen, steps = [], []
    ids = dataset.ids("train")
    det.fit(TrainData(dataset, ids, TrainHooks(preparing=lambda done, total: seen.append((done, total)))),
            _config(det, iterations=3), progress=lambda step, loss: steps.append(step))
    assert seen and seen[-1] == (len(ids), len(ids)) and all(t == len(ids) for _, t in seen)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen) and steps == [1, 2, 3]
