"""SID-Set (saberzl/SID_Set and SIDA's folders / zips) from copies the tests make in those layouts."""

from __future__ import annotations

import json
import zipfile

import datasets
import numpy as np
import pytest
from PIL import Image

from diffzoo import open_dataset
from diffzoo.harness.core.errors import ConfigError, CorruptSampleError, DataError
from diffzoo.harness.core.types import BINARY
from diffzoo.harness.data import DiffSeg30kDataset
from diffzoo.harness.data.adapters.pixar import PixarDataset
from diffzoo.harness.data.adapters.sidset import SidSetDataset

from helpers.cli import cli
from helpers.data import recognised_as
from helpers.sidset import FEATURES, SIZE, hub_rows, samples, write_folder

FAST = ["--iterations", "3", "--batch-size", "2", "--crop-size", "32", "--bootstrap", "0", "--device", "cpu"]


@pytest.fixture(autouse=True)
def _private_hf_cache(tmp_path, monkeypatch):
    """Keep `datasets`' conversion cache out of the user's home."""
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-cache")


@pytest.fixture
def parts():
    return {"train": samples(12, seed=1), "validation": samples(6, seed=2)}


@pytest.fixture
def sida(tmp_path, parts):
    root = tmp_path / "SID_Set"
    for split, items in parts.items():
        write_folder(root / split, items)
    return root


def test_reads_sida_folders_with_the_label_rule(sida, tmp_path):
    write_folder(sida / "test", samples(3, seed=3))
    ds = open_dataset(str(sida))
    assert isinstance(ds, SidSetDataset) and ds.label_space == BINARY
    assert ds.splits() == ["train", "val", "test"] and len(ds.ids("val")) == 6
    assert ds.describe()["samples"] == {"real": 7, "full_synthetic": 7, "tampered": 7}
    assert ds.describe()["source_kind"] == "folder"
    assert ds.provenance()["split"] == {"id": "native", "source": "SID-Set's own splits (test, train, val)"}
    assert ds.provenance()["label_map"]["source"] == "SID-Set label rule mixed-v1"
    tampered = ds.load("tampered_010002")
    assert set(np.unique(tampered.label)) == {0, 1} and tampered.label.sum() == (SIZE // 3) ** 2
    assert [(t.editor, t.edit_type) for t in tampered.meta.turns] == [("unknown", "tampered")]
    full = ds.load("full_synthetic_010001")
    assert (full.label == 1).all() and full.meta.turns[0].edit_type == "full_synthetic"
    real = ds.load("01009f2c2560a7")
    assert not real.label.any() and real.meta.base == "real" and real.meta.turns == ()
    assert "edit_type=tampered" in ds.notice
    # the mask rule: mean over RGB > 127.5
    m = np.zeros((SIZE, SIZE, 3), np.uint8)
    m[:, 0], m[:, 1] = (127, 127, 128), (127, 128, 128)
    Image.fromarray(m).save(sida / "test" / "masks" / "tampered_030002_mask.png")
    edge = SidSetDataset(sida).load("tampered_030002").label
    assert edge[:, 0].max() == 0 and (edge[:, 1] == 1).all() and edge[:, 2:].max() == 0
    assert SidSetDataset(sida.parent).fingerprint() == SidSetDataset(sida).fingerprint()  # SID_Set/<split>/
    # the test folder alone, named as SIDA ships it or not
    assert SidSetDataset(sida / "test").splits() == ["test"]
    assert SidSetDataset(sida / "validation").splits() == ["val"]


def test_folder_zip_parquet_and_saved_forms_share_one_fingerprint(sida, parts, tmp_path):
    with zipfile.ZipFile(tmp_path / "SID_Set.zip", "w") as zf:
        for f in sorted(sida.rglob("*")):
            if f.is_file():
                zf.write(f, f.relative_to(sida).as_posix())
    hub = tmp_path / "hub" / "data"
    hub.mkdir(parents=True)
    for split, items in parts.items():
        hub_rows(items).to_parquet(str(hub / f"{split}-00000-of-00001.parquet"))
    datasets.DatasetDict({s: hub_rows(items) for s, items in parts.items()}).save_to_disk(str(tmp_path / "saved"))
    forms = [sida, tmp_path / "SID_Set.zip", tmp_path / "hub", hub / "train-00000-of-00001.parquet",
             tmp_path / "saved"]
    assert all(SidSetDataset.sniff(p) for p in forms)
    opened = [open_dataset(str(p)) for p in forms]
    assert all(isinstance(d, SidSetDataset) for d in opened)
    assert [d.source_kind for d in opened] == ["folder", "zip", "datasets", "datasets", "datasets"]
    assert opened[3].splits() == ["train"]
    whole = [d for i, d in enumerate(opened) if i != 3]
    assert len({d.fingerprint() for d in whole}) == 1
    assert len({tuple(d.ids("val")) for d in whole}) == 1
    assert (opened[1].load("tampered_020002").label == opened[2].load("tampered_020002").label).all()
    with zipfile.ZipFile(tmp_path / "windows.zip", "w") as zf:  # a zip made on Windows: `train\\tampered\\x.png`
        for f in sorted(sida.rglob("*")):
            if f.is_file():
                zf.write(f, "\\".join(f.relative_to(sida).parts))
    windows = open_dataset(str(tmp_path / "windows.zip"))
    assert isinstance(windows, SidSetDataset) and windows.fingerprint() == opened[1].fingerprint()
    assert windows.ids("val") == opened[1].ids("val")
    Image.fromarray(np.zeros((SIZE, SIZE, 3), np.uint8)).save(sida / "train" / "real" / "01009f2c2560a7.jpg")
    assert SidSetDataset(sida).fingerprint() != opened[0].fingerprint()
    assert SidSetDataset(tmp_path / "saved", kinds="tampered").fingerprint() != opened[4].fingerprint()


def test_hub_rows_beside_the_separate_test_folder(parts, tmp_path):
    root = tmp_path / "SID_Set"
    (root / "data").mkdir(parents=True)
    for split, items in parts.items():
        hub_rows(items).to_parquet(str(root / "data" / f"{split}-00000-of-00001.parquet"))
    write_folder(root / "test", samples(6, seed=3))
    ds = open_dataset(str(root))
    assert ds.splits() == ["train", "val", "test"] and ds.describe()["source_kind"] == "datasets+folder"
    assert ds.describe()["samples_per_split"]["test"] == {"real": 2, "full_synthetic": 2, "tampered": 2}
    write_folder(root / "validation", parts["validation"][:1])  # the hub's first validation row, again
    with pytest.raises(DataError, match=f"{parts['validation'][0]['stem']} appears twice in split val"):
        SidSetDataset(root)


def test_refusals_and_skips(sida, parts, tmp_path):
    (sida / "train" / "masks" / "tampered_010002_mask.png").unlink()
    with pytest.raises(DataError, match=r"1 tampered image\(s\) have no masks/<name>_mask.png .*tampered_010002"):
        SidSetDataset(sida)
    ds = SidSetDataset(sida, skip_unpaired=True)
    assert "tampered_010002" not in ds.ids("train") and len(ds.ids("train")) == 11
    rows = hub_rows(parts["validation"]).to_list()
    rows[2]["mask"] = None  # a tampered row without its mask
    datasets.Dataset.from_list(rows, features=FEATURES).to_parquet(str(tmp_path / "validation-00000-of-00001.parquet"))
    ds = SidSetDataset(tmp_path / "validation-00000-of-00001.parquet")
    with pytest.raises(CorruptSampleError, match="a tampered image without a mask") as err:
        ds.load(rows[2]["img_id"])
    assert err.value.kind == "missing-file"
    black = sida / "train" / "masks" / "tampered_010005_mask.png"  # a tampered image's all-black mask
    Image.fromarray(np.zeros((SIZE, SIZE, 3), np.uint8)).save(black)
    with pytest.raises(CorruptSampleError, match=f"{black}: the mask marks no pixel as edited") as err:
        SidSetDataset(sida, skip_unpaired=True).load("tampered_010005")
    assert err.value.kind == "mask-empty"
    rows[2]["label"] = 5
    datasets.Dataset.from_list(rows, features=FEATURES).to_parquet(str(tmp_path / "bad.parquet"))
    with pytest.raises(DataError, match="label 5; SID-Set's labels are 0 .real., 1 .full synthetic., 2 .tampered."):
        SidSetDataset(tmp_path / "bad.parquet")
    with pytest.raises(ConfigError) as err:
        SidSetDataset(sida, kinds="partial")
    assert str(err.value) == "SID-Set kinds='partial': partial is not one of real, full_synthetic, tampered"
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="no SID-Set data found"):
        SidSetDataset(tmp_path / "empty")


def test_val_beside_validation_is_refused_naming_both(sida, parts):
    """val/ beside validation/: their samples were merged into val unsaid."""
    write_folder(sida / "val", samples(3, seed=5))
    with pytest.raises(DataError) as err:
        SidSetDataset(sida)
    assert str(err.value) == f"{sida}: splits 'val' and 'validation' both read as split val; rename or leave out one of them"


def test_two_masks_for_one_tampered_image_are_refused(sida):
    """``masks/x_mask.png`` beside ``masks/x_mask.jpg`` (or ``masks/x.png``): one was used as the ground truth, unsaid."""
    masks = sida / "train" / "masks"
    Image.open(masks / "tampered_010002_mask.png").convert("RGB").save(masks / "tampered_010002_mask.jpg")
    with pytest.raises(DataError) as err:
        open_dataset(str(sida))  # recognised, then refused
    assert str(err.value) == (f"{sida}: two masks for tampered_010002: train/masks/tampered_010002_mask.jpg and "
                              "train/masks/tampered_010002_mask.png")


def test_kinds_split_option_and_sniffing(sida, parts, tmp_path):
    tampered = SidSetDataset(sida, kinds="tampered")
    assert tampered.describe()["samples"] == {"tampered": 6} and tampered.notice is None
    assert SidSetDataset(sida, split="test").splits() == ["test"]
    assert SidSetDataset(sida, split="test").provenance()["split"]["source"] == "every sample in test"
    assert not PixarDataset.sniff(sida)  # SID-Set's folders have tampered/ and masks/ like PIXAR's
    hub_rows(parts["train"]).to_parquet(str(tmp_path / "train-00000-of-00001.parquet"))
    assert not DiffSeg30kDataset.sniff(tmp_path / "train-00000-of-00001.parquet")  # left to SID-Set
    pixar = tmp_path / "pixar"
    for d in ("real", "full_synthetic", "tampered", "soft_masks", "masks", "metadata"):
        (pixar / "train" / d).mkdir(parents=True)
    (pixar / "mapping.json").write_text("{}")
    assert PixarDataset.sniff(pixar) and not SidSetDataset.sniff(pixar)


def test_run_standard_data_stats_and_info(sida, tmp_path, capsys):
    code, out, err = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "standard",
                         "--dataset", sida, "--out", tmp_path / "out", *FAST)
    assert code == 0, err
    records = [json.loads(p.read_text()) for p in (tmp_path / "out" / "records").glob("*.json")]
    assert {r["case"]["name"] for r in records} == {"binary", "image"}  # binary masks: no semantic case
    assert {r["dataset"]["label_map"]["source"] for r in records} == {"SID-Set label rule mixed-v1"}
    code, text, err = cli(capsys, "data", "stats", sida, "--no-plots", "--json")
    assert code == 0, err
    stats = json.loads(text)
    assert stats["images"] == 18 and stats["authentic"] == 6
    assert stats["edit_types"] == {"full_synthetic": 6, "none": 6, "tampered": 6}
    assert stats["editors"]["edited"]["images"] == 12
    assert stats["edited_area"]["editors"]["edited"]["count"] == 12
    code, text, err = cli(capsys, "data", "info", sida)
    assert code == 0 and "'tampered': 6" in text and "samples_per_split" in text, err


def test_each_layout_is_recognised_by_its_own_adapter(sida, parts, tmp_path, diffseg_folder):
    from helpers.hub import hub_copy, split_rows

    hub_copy(tmp_path / "opensdi", "OpenSDI_test", {"sd2": split_rows("sd2", 3)})
    (tmp_path / "sid_hub" / "data").mkdir(parents=True)
    hub_rows(parts["train"]).to_parquet(str(tmp_path / "sid_hub" / "data" / "train-00000-of-00001.parquet"))
    copy = tmp_path / "copy" / "data"
    copy.mkdir(parents=True)
    hub_rows(parts["train"]).select_columns(["image", "mask"]).filter(lambda r: r["mask"] is not None) \
        .to_parquet(str(copy / "cross_test-00000-of-00001.parquet"))
    with zipfile.ZipFile(tmp_path / "test.zip", "w") as zf:
        for f in sorted((sida / "validation").rglob("*")):
            if f.is_file():
                zf.write(f, "test/" + f.relative_to(sida / "validation").as_posix())
    pixar = tmp_path / "pixar"
    for d in ("real", "full_synthetic", "tampered", "soft_masks", "masks", "metadata"):
        (pixar / "validation" / d).mkdir(parents=True)
    (pixar / "mapping.json").write_text("{}")
    layouts = {"opensdi": tmp_path / "opensdi", "sidset": sida, "sidset-hub": tmp_path / "sid_hub",
               "sidset-zip": tmp_path / "test.zip", "sidset-test": sida / "validation",
               "diffseg30k-copy": tmp_path / "copy", "pixar": pixar, "diffseg30k": diffseg_folder}
    assert {name: recognised_as(p) for name, p in layouts.items()} == {
        "opensdi": "opensdi", "sidset": "sidset", "sidset-hub": "sidset", "sidset-zip": "sidset",
        "sidset-test": "sidset", "diffseg30k-copy": "diffseg30k", "pixar": "pixar", "diffseg30k": "diffseg30k"}


def test_a_mask_matching_no_tampered_image_is_logged_and_an_unread_suffix_named(sida, caplog):
    """train/tampered/x.jfif beside train/masks/x_mask.png: the image was left out unsaid (Tp/Gt, CASIA,
    IMD2020 and Columbia name it); and a mask whose image is gone was not logged at all."""
    tampered = sida / "train" / "tampered" / "tampered_010002.png"
    tampered.rename(tampered.with_suffix(".jfif"))
    (sida / "validation" / "tampered" / "tampered_020002.png").unlink()
    with caplog.at_level("INFO"):
        ds = SidSetDataset(sida)
    assert ds.describe()["samples"]["tampered"] == 4
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == [
        f"{sida}: 1 image(s) with a mask here are not read, their suffix being none of .png, .jpg, .jpeg, .tif, "
        ".tiff, .bmp, .webp (e.g. train/tampered/tampered_010002.jfif); convert them to one of those to score them"]
    assert f"{sida}: 1 mask(s) match no tampered image (e.g. train/masks/tampered_010002_mask.png)" in caplog.messages
    assert (f"{sida}: 1 mask(s) match no tampered image (e.g. validation/masks/tampered_020002_mask.png)"
            in caplog.messages)
