"""CAT-Net's extra inputs (diffzoo/plugins/benco/catnet.py): JPEG DCT coefficients and quantisation tables.

Needs IMDL-BenCo and jpegio (``bash scripts/install-benco.sh``): skipped without
them, unless DIFFZOO_REQUIRE_BENCO=1 (CI's backend venv), where they fail.
CAT-Net itself is CUDA only upstream (``.cuda()`` in its constructor and
forward); the last test builds a small one on CPU by making ``.cuda()`` a no-op
inside the test only.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from diffzoo.harness.core.errors import ModelError

from helpers.backends import require_benco

IJG_LUMINANCE = np.array([  # the JPEG standard's luminance table (ITU T.81 Annex K), natural order
    [16, 11, 10, 16, 24, 40, 51, 61], [12, 12, 14, 19, 26, 58, 60, 55], [14, 13, 16, 24, 40, 57, 69, 56],
    [14, 17, 22, 29, 51, 87, 80, 62], [18, 22, 37, 56, 68, 109, 103, 77], [24, 35, 55, 64, 81, 104, 113, 92],
    [49, 64, 78, 87, 103, 121, 120, 101], [72, 92, 95, 98, 112, 100, 103, 99]])


@pytest.fixture
def catnet():
    require_benco("jpegio")
    from diffzoo.plugins.benco import catnet

    return catnet


def images(seed: int, h: int, w: int) -> np.ndarray:
    """A smooth image with texture and noise: coefficients of every size, some clipped at 0 and 255."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w] / max(h, w)
    base = np.stack([np.sin(6 * x + c) * np.cos(4 * y - c) for c in range(3)], -1) * 120 + 128
    return np.clip(base + rng.normal(0, 25, (h, w, 3)), 0, 255).astype(np.uint8)


def idct_matrix() -> np.ndarray:
    k, n = np.mgrid[0:8, 0:8]
    c = np.where(k == 0, np.sqrt(1 / 8), np.sqrt(2 / 8))
    return c * np.cos((2 * n + 1) * k * np.pi / 16)  # orthonormal DCT-II: the JPEG DCT


def test_without_jpegio_building_the_inputs_says_how_to_install_it(monkeypatch):
    from diffzoo.plugins.benco import catnet

    monkeypatch.setitem(sys.modules, "jpegio", None)  # import jpegio -> ImportError
    with pytest.raises(ModelError, match=r"jpegio, which is not installed: run `bash scripts/install-benco.sh`"):
        catnet.jpeg_dct(images(0, 16, 16))


@pytest.mark.parametrize("h, w", [(64, 64), (72, 40), (30, 44)])
def test_coefficients_decode_to_the_jpeg_luminance_and_the_table_is_pils(tmp_path, catnet, h, w):
    """Independent of jpegio: dequantised coefficients -> inverse DCT + 128 = the Y plane PIL's
    libjpeg-turbo decodes from the same JPEG (within its integer IDCT's rounding), and the table is
    the standard one scaled to PIL's default quality 75, as PIL reads it from the file."""
    from PIL import Image

    pixels = images(h * w, h, w)
    coef, qtable = catnet.jpeg_dct(pixels)
    # libjpeg's Y array is the image rounded up to 8 (72 x 40 stays 72 x 40: not padded to the 4:2:0 MCU of 16)
    assert coef.shape == (-(-h // 8) * 8, -(-w // 8) * 8) and coef.dtype == np.float64
    assert qtable.shape == (8, 8) and qtable.dtype == np.float64
    assert np.array_equal(coef, np.round(coef)) and np.abs(coef).max() > catnet.T  # integers, some past T

    Image.fromarray(pixels).save(tmp_path / "x.jpg", format="JPEG")  # the same encoding: PIL's defaults
    with Image.open(tmp_path / "x.jpg") as im:
        scaled = np.clip((IJG_LUMINANCE * 50 + 50) // 100, 1, 255)  # IJG quality scaling, q = 75: 200 - 2q = 50
        assert np.array_equal(qtable, scaled)
        # Pillow 13 gives the tables in natural (row-major) order, as libjpeg stores them
        assert np.array_equal(qtable, np.array(im.quantization[0]).reshape(8, 8))
        im.draft("YCbCr", im.size)  # decode without colour conversion: the Y plane as coded
        assert im.mode == "YCbCr"
        y_plane = np.asarray(im)[..., 0].astype(np.float64)

    m = idct_matrix()
    blocks = coef.reshape(coef.shape[0] // 8, 8, coef.shape[1] // 8, 8).transpose(0, 2, 1, 3) * qtable
    spatial = np.einsum("ki,abkl,lj->abij", m, blocks, m) + 128  # M^T (Q * C) M per block
    spatial = spatial.transpose(0, 2, 1, 3).reshape(coef.shape)[:h, :w]
    diff = np.abs(np.clip(np.round(spatial), 0, 255) - y_plane)
    assert diff.max() <= 1 and diff.mean() < 0.05, (diff.max(), diff.mean())


def test_coefficients_equal_imdl_bencos_post_function_on_uint8_pixels(catnet):
    """IMDL-BenCo's own cat_net_post_func, given the uint8 pixels it means to encode, gives the same arrays."""
    from IMDLBenCo.model_zoo.cat_net.cat_net_post_function import cat_net_post_func

    for seed, (h, w) in enumerate([(64, 64), (48, 80)]):
        pixels = images(seed, h, w)
        data = {"image": torch.from_numpy(pixels).permute(2, 0, 1)}
        cat_net_post_func(data)
        coef, qtable = catnet.jpeg_dct(pixels)
        assert np.array_equal(coef, data["DCT_coef"]) and data["DCT_coef"].dtype == coef.dtype
        assert np.array_equal(qtable, data["qtables"]) and data["qtables"].dtype == qtable.dtype


def test_batch_inputs_are_pixels_coefficients_and_tables(catnet):
    x = torch.from_numpy(np.stack([images(s, 64, 64) for s in range(2)])).permute(0, 3, 1, 2).float() / 255
    out = catnet.catnet_inputs(x)
    assert set(out) == {"image", "DCT_coef", "qtables"}
    assert out["image"].shape == (2, 3, 64, 64) and out["image"].dtype == torch.float32
    assert torch.equal(out["image"], (x * 255).round())  # 0..255 pixels: CAT-Net maps them to [-1, 1]
    assert out["DCT_coef"].shape == (2, 64, 64) and out["qtables"].shape == (2, 8, 8)
    for i in range(2):
        coef, qtable = catnet.jpeg_dct(images(i, 64, 64))
        assert np.array_equal(out["DCT_coef"][i].numpy(), coef) and np.array_equal(out["qtables"][i].numpy(), qtable)
    with pytest.raises(ModelError, match="multiple of 8"):
        catnet.catnet_inputs(torch.rand(1, 3, 60, 64))


def small_config(path: Path) -> Path:
    """IMDL-BenCo's CAT_full.yaml with every stage one module of one block and a few channels
    (the DCT stem's 64/4/96 widths are fixed in network_CAT.py), and no pretrained files."""
    import yaml

    from diffzoo.plugins.benco.model import package_file

    source = Path(package_file("IMDLBenCo/statics/model_zoo/configs/CAT_full.yaml"))
    cfg = yaml.safe_load(source.read_text())
    cfg["MODEL"]["PRETRAINED_RGB"] = cfg["MODEL"]["PRETRAINED_DCT"] = ""
    widths = {"STAGE1": [8], "STAGE2": [8, 16], "STAGE3": [8, 16, 32], "STAGE4": [8, 16, 32, 64],
              "DC_STAGE3": [16, 32], "DC_STAGE4": [16, 32, 64], "STAGE5": [8, 16, 32, 64]}
    for stage, channels in widths.items():
        cfg["MODEL"]["EXTRA"][stage].update(NUM_MODULES=1, NUM_CHANNELS=channels, NUM_BLOCKS=[1] * len(channels))
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_cat_net_trains_on_cpu_from_these_inputs(tmp_path, catnet, monkeypatch):
    """A small CAT-Net (CUDA calls made no-ops) takes the inputs: its RGB stream sees [-1, 1] as the
    original CAT-Net's, its DCT volume is one-hot, the loss is finite and gradients reach both streams."""
    monkeypatch.setattr(torch.Tensor, "cuda", lambda self, *args, **kwargs: self)
    monkeypatch.setattr(torch.nn.Module, "cuda", lambda self, *args, **kwargs: self)
    from IMDLBenCo.model_zoo.cat_net.cat_net import Cat_Net

    torch.manual_seed(0)
    model = Cat_Net(str(small_config(tmp_path / "cat_small.yaml")))
    seen = {}
    model.model.register_forward_pre_hook(lambda module, args: seen.update(x=args[0], q=args[1]))

    x = torch.from_numpy(np.stack([images(s, 64, 64) for s in range(2)])).permute(0, 3, 1, 2).float() / 255
    mask = torch.zeros(2, 1, 64, 64)
    mask[0, :, 8:40, 16:48] = 1
    out = model(mask=mask, **catnet.catnet_inputs(x))

    rgb, volume = seen["x"][:, :3], seen["x"][:, 3:]
    assert rgb.min() >= -1 and rgb.max() <= 1 and rgb.min() < -0.5 < 0.5 < rgb.max()
    assert volume.shape == (2, catnet.T + 1, 64, 64) and torch.equal(volume.sum(1), torch.ones(2, 64, 64))
    assert seen["q"].shape == (2, 1, 8, 8)
    loss, pred = out["backward_loss"], out["pred_mask"]
    assert torch.isfinite(loss) and loss.ndim == 0
    assert pred.shape == (2, 1, 64, 64) and torch.isfinite(pred).all()
    assert pred.min() > -0.1 and pred.max() < 1.1  # softmax, bicubically upsampled (may overshoot a little)
    loss.backward()
    for layer in (model.model.conv1, model.model.dc_layer0_dil[0], model.model.last_layer[-1]):
        assert torch.isfinite(layer.weight.grad).all() and layer.weight.grad.abs().sum() > 0


def test_the_adapter_trains_and_scores_cat_net_from_these_inputs(tmp_path, catnet, monkeypatch):
    """benco.cat-net through diffzoo's adapter (CUDA calls made no-ops, the small config): it trains
    in the shared loop, predicts at any image size, and equals IMDL-BenCo's forward on the inputs."""
    from dataclasses import replace

    from diffzoo.harness.core.plugins import get_registry
    from diffzoo.harness.models.conformance import FixtureDataset
    from diffzoo.plugin import DetectorBuild, TrainConfig, TrainData
    from diffzoo.plugins.benco import model as benco

    monkeypatch.setattr(torch.Tensor, "cuda", lambda self, *args, **kwargs: self)
    monkeypatch.setattr(torch.nn.Module, "cuda", lambda self, *args, **kwargs: self)
    monkeypatch.setitem(benco.SPEC, "cat-net", replace(benco.SPEC["cat-net"], needs_cuda=False))
    card = get_registry().get("detector", "benco.cat-net").card
    card = replace(card, input_size=64, arch={**card.arch, "kwargs": {"cfg_file": str(small_config(
        tmp_path / "cat_small.yaml"))}})
    torch.manual_seed(0)
    det = benco.BencoDetector(DetectorBuild(card, "binary", pretrained=False))
    data = FixtureDataset(size=64)
    config = TrainConfig.from_recipe(card.recipe_values(), iterations=2, batch_size=2, crop_size=64,
                                     pretrained=False, seed=0, num_workers=0, warmup_iters=0)
    losses = []
    det.fit(TrainData(data, data.ids("train")), config, progress=lambda step, loss: losses.append(loss))
    assert len(losses) == 2 and all(np.isfinite(losses))
    probs = det.predict(torch.rand(1, 3, 50, 70)).mask_probs
    assert probs.shape == (1, 1, 50, 70) and 0 <= float(probs.min()) <= float(probs.max()) <= 1

    theirs = benco.construct(card, pretrained=False)
    theirs.load_state_dict(det.model.model.state_dict())
    theirs.eval()
    x = torch.from_numpy(np.stack([images(s, 64, 64) for s in range(2)])).permute(0, 3, 1, 2).float() / 255
    with torch.no_grad():
        expected = theirs(mask=torch.zeros(2, 1, 64, 64), **catnet.catnet_inputs(x))["pred_mask"]
    torch.testing.assert_close(det.predict(x).mask_probs, expected.clamp(0, 1), atol=1e-5, rtol=0)
