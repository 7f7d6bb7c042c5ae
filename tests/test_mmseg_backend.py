"""The optional MMSegmentation backend (diffzoo/plugins/mmseg).

The first tests run everywhere: the cards are listed and building one
without the backend says how to install it.  The rest need mmsegmentation
and mmcv with compiled ops (``bash scripts/install-mmseg.sh``) and are
skipped without them, unless DIFFZOO_REQUIRE_MMSEG=1 (CI's backend venv),
where they fail; they build the real configs at tiny input sizes.
"""

from __future__ import annotations

import json
import sys

import pytest
import torch

from diffzoo import create_detector, open_dataset
from diffzoo.harness.core.errors import ModelError, WeightsUnavailableError
from diffzoo.harness.core.plugins import PluginSystem, get_registry
from diffzoo.harness.core.train_config import TrainConfig
from diffzoo.harness.core.types import LabelSpace
from diffzoo.plugin import TrainData

from helpers.backends import REQUIRE_MMSEG as REQUIRE
from helpers.backends import require_backend

NAMES = ["mmseg.segformer-b2", "mmseg.deeplabv3plus-r50", "mmseg.fcn-r50"]
TRAINER_KEYS = ("optimizer", "lr", "weight_decay", "iterations", "batch_size", "crop_size", "warmup_iters",
                "poly_power", "min_lr", "hflip", "augmentation", "pretrained", "head_lr_mult")


@pytest.fixture
def backend():
    return require_backend()


def card(name):
    return get_registry().get("detector", name).card


def tiny_config(name, **overrides):
    """The card's recipe at a CPU-test size."""
    return TrainConfig.from_recipe(
        card(name).recipe_values(),
        **{"iterations": 2, "batch_size": 2, "crop_size": 64, "warmup_iters": 0, "seed": 0, **overrides},
    )


# -- without the backend ------------------------------------------------------
def test_cards_are_listed_with_recipes_from_their_configs():
    system = PluginSystem()
    system.load()
    assert not system.failures, [str(f) for f in system.failures]
    assert [e.name for e in system.registry.list("detector", "mmseg.*")] == sorted(NAMES)
    assert system.registry.resolve("detector", "mmseg") == "mmseg.segformer-b2"
    for name in NAMES:
        c = card(name)
        assert c.tasks == ("binary", "semantic") and c.weights
        for key in TRAINER_KEYS:
            assert key in c.recipe and c.recipe[key].source.strip(), (name, key)
        config = TrainConfig.from_recipe(c.recipe_values())
        assert config.optimizer == c.recipe["optimizer"].value and config.pretrained is True
        sources = [c.recipe[k].source for k in ("lr", "iterations", "batch_size", "pretrained")]
        assert all(c.arch["config"] in s for s in sources), sources


def test_the_cards_do_not_import_the_backend():
    import subprocess

    code = ("import json, sys; from diffzoo.harness.core.plugins import get_registry; "
            "print(get_registry().get('detector', 'mmseg.fcn-r50').card.name); "
            "print(json.dumps(sorted(m for m in ('mmseg', 'mmcv', 'mmengine') if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["mmseg.fcn-r50", "[]"]


@pytest.mark.parametrize("name", NAMES)
def test_creating_one_without_the_backend_says_how_to_install_it(name, monkeypatch):
    for module in ("mmseg", "mmcv", "mmcv.ops"):
        monkeypatch.setitem(sys.modules, module, None)  # import fails, installed or not
    with pytest.raises(ModelError) as exc:
        create_detector(name, "binary")
    message = str(exc.value)
    assert "pip install 'diffzoo[mmseg]'" in message and "scripts/install-mmseg.sh" in message
    assert "mmcv 2.1.0 with ops" in message


def test_the_cli_reports_the_missing_backend_in_one_line(diffseg_folder, tmp_path, monkeypatch, capsys):
    from diffzoo.cli import main

    monkeypatch.setitem(sys.modules, "mmseg", None)
    with pytest.raises(SystemExit) as exc:
        main(["run", "--detector", "mmseg.fcn-r50", "--suite", "standard", "--dataset", str(diffseg_folder),
              "--out", str(tmp_path / "out"), "--iterations", "1", "--no-pretrained", "--device", "cpu"])
    err = capsys.readouterr().err
    assert exc.value.code != 0 and "scripts/install-mmseg.sh" in err and "Traceback" not in err


def test_a_missing_backend_skips_but_fails_where_it_is_required(monkeypatch):
    monkeypatch.setitem(sys.modules, "mmseg", None)
    monkeypatch.delenv(REQUIRE, raising=False)
    with pytest.raises(pytest.skip.Exception, match="install-mmseg.sh"):
        require_backend()
    monkeypatch.setenv(REQUIRE, "1")
    with pytest.raises(pytest.fail.Exception, match=f"{REQUIRE}=1 but optional MMSeg backend not installed"):
        require_backend()


# -- with the backend ---------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_recipes_match_the_installed_configs(name, backend):
    c = card(name)
    cfg = backend.load_config(c)
    implied = backend.recipe_from_config(cfg, c.arch["config"])
    assert {k: c.recipe[k].value for k in implied} == implied
    assert backend.backbone_checkpoint(cfg.model) == c.weights


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("task", ["binary", "semantic"])
def test_the_config_model_gives_input_sized_logits(name, task, backend):
    labels = LabelSpace.from_editors(["a", "b", "c"])
    det = create_detector(name, task, labels)
    segmentor = det.model.net.segmentor
    cfg = backend.load_config(card(name)).model
    assert type(segmentor.backbone).__name__ == cfg.backbone.type
    assert type(segmentor.decode_head).__name__ == cfg.decode_head.type
    assert not any("SyncBatchNorm" in type(m).__name__ for m in segmentor.modules())
    channels = 1 if task == "binary" else labels.num_classes
    assert segmentor.decode_head.conv_seg.out_channels == channels
    if "auxiliary_head" in cfg:
        assert type(segmentor.auxiliary_head).__name__ == cfg.auxiliary_head.type
        assert segmentor.auxiliary_head.conv_seg.out_channels == channels
        assert segmentor.auxiliary_head.in_index == cfg.auxiliary_head.in_index
    else:
        assert not segmentor.with_auxiliary_head
    for h, w in [(64, 64), (40, 56)]:
        logits = det.predict(torch.rand(2, 3, h, w)).mask_logits
        assert logits.shape == (2, channels, h, w) and torch.isfinite(logits).all()


@pytest.mark.parametrize("name", ["mmseg.deeplabv3plus-r50", "mmseg.fcn-r50"])
def test_the_training_loss_is_mmsegs_decode_plus_auxiliary_loss(name, backend):
    """diffzoo's loss on the (logits, [(aux, 0.4)]) output = mmseg's EncoderDecoder.loss."""
    from mmengine.structures import PixelData
    from mmseg.structures import SegDataSample

    from diffzoo.harness.models.trainer import segmentation_loss

    labels = LabelSpace.from_editors(["a", "b", "c"])
    det = create_detector(name, "semantic", labels)
    det.model.train()
    images = torch.rand(2, 3, 64, 64)
    target = torch.randint(0, labels.num_classes, (2, 64, 64))  # no ignored pixels: mmseg averages over all
    torch.manual_seed(3)  # the heads' dropout draws the same masks in both forwards
    out = det.model(images)
    main, aux = out
    assert main.shape[:2] == (2, labels.num_classes)  # 1/8 (FCN) or 1/4 (DeepLabv3+'s c1 skip)
    assert [(a.shape, w) for a, w in aux] == [((2, labels.num_classes, 8, 8), 0.4)]  # stage 3: 1/8
    ours = segmentation_loss(out, target, "semantic")
    samples = [SegDataSample(gt_sem_seg=PixelData(data=t[None])) for t in target]
    for s in samples:
        s.set_metainfo({"img_shape": (64, 64)})
    torch.manual_seed(3)
    theirs = det.model.net.segmentor.loss((images - det.model.mean) / det.model.std, samples)
    assert ours.item() == pytest.approx((theirs["decode.loss_ce"] + theirs["aux.loss_ce"]).item(), rel=1e-5)
    assert theirs["aux.loss_ce"].item() > 0
    det.model.eval()
    assert isinstance(det.model(images), torch.Tensor)


@pytest.mark.parametrize("name", NAMES)
def test_param_groups_give_mmengines_lr_and_decay(name, backend):
    """diffzoo's parameter groups = what mmengine builds from the config's optim_wrapper."""
    from mmengine.optim import build_optim_wrapper

    det = create_detector(name, "binary")
    cfg = backend.load_config(card(name))
    wrapper = build_optim_wrapper(det.model.net.segmentor, cfg.optim_wrapper)
    expected = {id(p): (g["lr"], g["weight_decay"]) for g in wrapper.optimizer.param_groups for p in g["params"]}
    train = TrainConfig.from_recipe(card(name).recipe_values())
    ours = {
        id(p): (train.lr * g["lr_mult"], g.get("weight_decay", train.weight_decay))
        for g in det.param_groups() for p in g["params"]
    }
    assert ours.keys() == expected.keys()
    wrong = [(n, ours[id(p)], expected[id(p)]) for n, p in det.model.net.segmentor.named_parameters()
             if ours[id(p)] != pytest.approx(expected[id(p)])]
    assert not wrong, wrong[:5]


@pytest.mark.parametrize("name", NAMES)
def test_a_few_training_steps_run_with_finite_loss(name, backend, diffseg_folder):
    ds = open_dataset(str(diffseg_folder))
    torch.manual_seed(0)
    det = create_detector(name, "semantic", ds.label_space)
    before = {k: v.clone() for k, v in det.model.state_dict().items()}
    log = det.fit(TrainData(ds, ds.ids("train")), tiny_config(name, iterations=3))
    assert len(log["losses"]) == 3 and all(torch.isfinite(torch.tensor(log["losses"])))
    after = det.model.state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before if "decode_head.conv_seg" in k)
    assert any(not torch.equal(before[k], after[k]) for k in before if "backbone" in k)
    aux = [k for k in before if "auxiliary_head.conv_seg" in k]
    assert bool(aux) == card(name).recipe["auxiliary_head"].value  # R50-D8: trained too
    assert all(not torch.equal(before[k], after[k]) for k in aux)


@pytest.mark.parametrize("name", NAMES)
def test_save_then_load_gives_identical_predictions(name, backend, diffseg_folder, tmp_path):
    ds = open_dataset(str(diffseg_folder))
    torch.manual_seed(0)
    det = create_detector(name, "binary")
    det.fit(TrainData(ds, ds.ids("train")), tiny_config(name, iterations=1))  # moves weights and BN stats
    images = torch.rand(2, 3, 48, 64)
    expected = det.predict(images).mask_logits
    det.save(tmp_path / "ckpt")
    torch.manual_seed(1)
    fresh = create_detector(name, "binary")
    assert not torch.equal(fresh.predict(images).mask_logits, expected)
    fresh.load(tmp_path / "ckpt")
    assert torch.equal(fresh.predict(images).mask_logits, expected)


def test_a_checkpoint_without_the_auxiliary_head_is_a_clear_error(backend, tmp_path):
    """Checkpoints saved before the R50-D8 auxiliary head was built."""
    from diffzoo.harness.models.checkpoints import save_checkpoint

    det = create_detector("mmseg.fcn-r50", "binary")
    state = {k: v for k, v in det.model.net.state_dict().items() if ".auxiliary_head." not in k}
    assert len(state) < len(det.model.net.state_dict())
    save_checkpoint(tmp_path / "old", state, det.checkpoint_meta())
    hint = "missing from the checkpoint: segmentor.auxiliary_head.*train mmseg.fcn-r50 again"
    with pytest.raises(ModelError, match=hint):
        det.load(tmp_path / "old")


def _cache_file(backend, name, tmp_path, monkeypatch):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    url = backend.checkpoint_url(card(name).weights)
    target = tmp_path / "torch" / "hub" / "checkpoints" / url.rsplit("/", 1)[1]
    target.parent.mkdir(parents=True)
    return url, target


@pytest.mark.parametrize("name", ["mmseg.segformer-b2", "mmseg.fcn-r50"])
def test_pretrained_backbone_is_read_from_the_torch_hub_cache(name, backend, tmp_path, monkeypatch):
    _, target = _cache_file(backend, name, tmp_path, monkeypatch)
    torch.manual_seed(0)
    backbone = create_detector(name, "binary").model.net.segmentor.backbone
    weights = {f"backbone.{k}": torch.randn_like(v) if v.is_floating_point() else v
               for k, v in backbone.state_dict().items()}
    torch.save({"state_dict": {**weights, "head.fc.weight": torch.zeros(2, 2)}, "meta": {"note": "test"}}, target)
    loaded = create_detector(name, "binary", pretrained=True).model.net.segmentor.backbone.state_dict()
    assert all(torch.equal(loaded[k.removeprefix("backbone.")], v) for k, v in weights.items())


@pytest.mark.parametrize("name", NAMES)
def test_pretrained_offline_names_the_weights_and_the_fix(name, backend, tmp_path, monkeypatch):
    url, target = _cache_file(backend, name, tmp_path, monkeypatch)  # empty cache; conftest: offline
    with pytest.raises(WeightsUnavailableError) as exc:
        create_detector(name, "binary", pretrained=True)
    message = str(exc.value)
    assert card(name).weights in message and url in message and str(target) in message
    assert "--no-pretrained" in message


class _NotATensor:
    pass


def test_a_checkpoint_holding_other_objects_is_refused_not_unpickled(backend, tmp_path, monkeypatch):
    _, target = _cache_file(backend, "mmseg.fcn-r50", tmp_path, monkeypatch)
    torch.save({"state_dict": {"stem.0.weight": torch.zeros(1)}, "extra": _NotATensor()}, target)
    with pytest.raises(ModelError, match="refusing to load"):
        create_detector("mmseg.fcn-r50", "binary", pretrained=True)


def test_cli_run_writes_a_record_per_standard_case(backend, diffseg_folder, tmp_path, capsys):
    from diffzoo.cli import main

    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exc:
        main(["run", "--detector", "mmseg.fcn-r50", "--suite", "standard", "--dataset", str(diffseg_folder),
              "--out", str(out), "--iterations", "2", "--batch-size", "2", "--crop-size", "64",
              "--bootstrap", "0", "--no-pretrained", "--device", "cpu"])
        raise SystemExit(0)
    assert (exc.value.code or 0) == 0, capsys.readouterr().err
    records = [json.loads(p.read_text()) for p in (out / "records").glob("*.json")]
    cases = {c.name for c in get_registry().get("suite", "standard").load().cases}
    assert sorted(r["case"]["name"] for r in records) == sorted(cases)
    assert {r["detector"]["name"] for r in records} == {"mmseg.fcn-r50"}
    assert all(r["config"]["train"]["optimizer"] == "SGD" for r in records)
    assert all(r["config"]["train"]["crop_size"] == 64 for r in records)
