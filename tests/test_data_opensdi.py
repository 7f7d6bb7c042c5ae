"""OpenSDI (nebula/OpenSDI_train, nebula/OpenSDI_test) from copies the tests make in the hub's layouts."""

from __future__ import annotations

import json
import shutil

import datasets
import numpy as np
import pytest
from PIL import Image

from diffzoo import open_dataset
from diffzoo.harness.core.errors import ConfigError, DataError
from diffzoo.harness.data import DiffSeg30kDataset
from diffzoo.harness.data.adapters.opensdi import OpenSdiDataset

from helpers.cli import cli
from helpers.hub import OPENSDI_FEATURES as FEATURES
from helpers.hub import OPENSDI_SIZE as SIZE
from helpers.hub import hub_copy, split_rows

FAST = ["--iterations", "3", "--batch-size", "2", "--crop-size", "32", "--bootstrap", "0", "--device", "cpu"]


@pytest.fixture(autouse=True)
def _private_hf_cache(tmp_path, monkeypatch):
    """Keep `datasets`' conversion cache out of the user's home."""
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-cache")


@pytest.fixture
def opensdi(tmp_path):
    """Both copies side by side: train (sd15, 12 rows), test (sd15 and sd2, 6 rows each)."""
    root = tmp_path / "opensdi"
    hub_copy(root, "OpenSDI_train", {"sd15": split_rows("sd15", 12, seed=1)})
    hub_copy(root, "OpenSDI_test", {"sd15": split_rows("sd15", 6, seed=2), "sd2": split_rows("sd2", 6, seed=3)})
    return root


def test_reads_both_copies_with_splits_per_generator(opensdi):
    ds = open_dataset(str(opensdi))
    assert isinstance(ds, OpenSdiDataset)
    assert ds.splits() == ["train", "val", "test", "sd15", "sd2"]
    assert ds.label_space.names == ("background", "sd15", "sd2")
    assert len(ds.ids("train")) == 12 and ds.ids("val") == ds.ids("sd15") and len(ds.ids("sd2")) == 6
    assert sorted(ds.ids("test")) == sorted(ds.ids("sd15") + ds.ids("sd2"))
    assert ds.ids("sd2")[0] == "test/full/sd2/fake/003000002.jpg" and ds.ids("train")[0].startswith("train/")
    assert ds.provenance()["split"]["id"] == "opensdi-v1"
    assert "val = the test copy's sd15" in ds.provenance()["split"]["source"]
    label_map = ds.provenance()["label_map"]
    assert (label_map["source"], label_map["verified"]) == ("OpenSDI label rule mixed-v1", True)
    info = ds.describe()
    assert info["label_rule"]["version"] == "mixed-v1" and info["samples"] == {"real": 8, "partial": 8, "full": 8}
    assert info["generators"] == {"sd15": 12, "sd2": 4}
    assert info["copies"] == {"test": "nebula/OpenSDI_test", "train": "nebula/OpenSDI_train"}
    assert "edit_type=partial" in ds.notice

    sid = next(i for i in ds.ids("sd2") if "/fake/" in i and i.startswith("test/partial/"))
    s = ds.load(sid)
    assert set(np.unique(s.label)) == {0, 2} and (s.label == 2).sum() == (SIZE // 3) ** 2  # sd2 is class 2
    assert [(t.editor, t.edit_type) for t in s.meta.turns] == [("sd2", "partial")] and s.meta.base == "unknown"
    full = ds.load(next(i for i in ds.ids("train") if i.startswith("train/full/")))
    assert (full.label == 1).all() and full.meta.turns[0].edit_type == "full_synthetic"
    real = ds.load(next(i for i in ds.ids("sd2") if "/real/" in i))
    assert not real.label.any() and real.meta.base == "real" and real.meta.turns == ()


def test_label_rule_threshold_real_masks_and_fakes_without_mask(tmp_path):
    m = np.zeros((SIZE, SIZE, 3), np.uint8)
    m[:, 0] = (127, 127, 128)  # mean 127.33: unedited
    m[:, 1] = (127, 128, 128)  # mean 127.67: edited
    m[:, 2] = 255
    image = Image.fromarray(np.full((SIZE, SIZE, 3), 80, np.uint8))
    extra = [{"key": "partial/sd2/fake/edge.jpg", "image": image, "mask": Image.fromarray(m), "label": 1},
             {"key": "partial/sd2/real/masked.jpg", "image": image, "mask": Image.fromarray(m), "label": 0},
             {"key": "partial/sd2/fake/nomask.jpg", "image": image, "mask": None, "label": 1}]
    hub_copy(tmp_path, "OpenSDI_test", {"sd2": split_rows("sd2", 3, rows=extra)})
    ds = OpenSdiDataset(tmp_path / "OpenSDI_test")
    edge = ds.load("test/partial/sd2/fake/edge.jpg").label
    assert edge[:, 0].max() == 0 and (edge[:, 1:3] == 1).all() and edge[:, 3:].max() == 0
    assert not ds.load("test/partial/sd2/real/masked.jpg").label.any()  # real images have empty masks
    nomask = ds.load("test/partial/sd2/fake/nomask.jpg")  # a fake without a mask is fully generated
    assert (nomask.label == 1).all() and nomask.meta.turns[0].edit_type == "partial"


def test_forms_of_one_copy_share_one_fingerprint(tmp_path):
    sd15, sd2 = split_rows("sd15", 6, seed=2), split_rows("sd2", 6, seed=3)
    hub_copy(tmp_path / "hub", "OpenSDI_test", {"sd15": sd15, "sd2": sd2})
    datasets.DatasetDict({"sd15": sd15, "sd2": sd2}).save_to_disk(str(tmp_path / "saved" / "OpenSDI_test"))
    for name, ds in (("sd15", sd15), ("sd2", sd2)):  # the hub's converted copy: a folder per split
        (tmp_path / "folders" / name).mkdir(parents=True)
        ds.to_parquet(str(tmp_path / "folders" / name / "0000.parquet"))
    forms = [tmp_path / "hub" / "OpenSDI_test", tmp_path / "hub", tmp_path / "saved" / "OpenSDI_test",
             tmp_path / "folders"]
    opened = [OpenSdiDataset(p) for p in forms]
    assert all(OpenSdiDataset.sniff(p) for p in forms)
    assert len({d.fingerprint() for d in opened}) == 1
    assert {d.describe()["splits"]["sd2"] for d in opened} == {6}
    shutil.copytree(tmp_path / "hub", tmp_path / "moved")
    assert OpenSdiDataset(tmp_path / "moved").fingerprint() == opened[0].fingerprint()
    other = split_rows("sd2", 6, seed=4)
    other.to_parquet(str(tmp_path / "hub" / "OpenSDI_test" / "data" / "sd2-00000-of-00001.parquet"))
    assert OpenSdiDataset(tmp_path / "hub").fingerprint() != opened[0].fingerprint()
    assert OpenSdiDataset(forms[2], kinds="partial").fingerprint() != opened[0].fingerprint()


def test_which_copy_sd15_data_is(tmp_path):
    folder = tmp_path / "dl"  # (pytest's own folder names say "test")
    folder.mkdir()
    split_rows("sd15", 3).to_parquet(str(folder / "sd15-00000-of-00001.parquet"))
    with pytest.raises(DataError, match="train copy .* or its test copy .*copy=train"):
        OpenSdiDataset(folder / "sd15-00000-of-00001.parquet")
    assert OpenSdiDataset(folder / "sd15-00000-of-00001.parquet", copy="train").splits() == ["train"]
    assert OpenSdiDataset(folder, copy="test").splits() == ["val", "test", "sd15"]
    hub = folder / "OpenSDI_train" / "data"
    hub.mkdir(parents=True)
    shutil.move(folder / "sd15-00000-of-00001.parquet", hub)
    assert OpenSdiDataset(hub).splits() == ["train"]  # the folder above data/ says train
    split_rows("sd2", 3).to_parquet(str(hub / "sd2-00000-of-00001.parquet"))
    assert OpenSdiDataset(hub).splits() == ["val", "test", "sd15", "sd2"]  # beside sd2: the test copy
    with pytest.raises(ConfigError) as err:
        OpenSdiDataset(folder, copy="both")
    assert str(err.value) == "OpenSDI copy='both' is not one of train, test"
    # one split named test (the hub once held data/test-000NN-of-00038.parquet): generators from the keys
    shards = tmp_path / "shards"
    shards.mkdir()
    datasets.concatenate_datasets([split_rows("sd15", 3), split_rows("sd2", 3, seed=1)]).to_parquet(
        str(shards / "test-00000-of-00001.parquet"))
    mixed = OpenSdiDataset(shards)
    assert mixed.splits() == ["val", "test", "sd15", "sd2"] and len(mixed.ids("sd2")) == 3
    # a generator named decomposed in its keys: one name, NFC, for its class and its split
    decomposed = tmp_path / "decomposed"
    decomposed.mkdir()
    split_rows("fe\u0301", 3).to_parquet(str(decomposed / "test-00000-of-00001.parquet"))
    cafe = OpenSdiDataset(decomposed)
    assert cafe.label_space.editors == ("f\u00e9",) and cafe.splits() == ["test", "f\u00e9"]
    assert "one split per generator (f\u00e9)" in cafe.provenance()["split"]["source"]


def test_kinds_and_val_fraction(opensdi):
    partial = OpenSdiDataset(opensdi, kinds="partial")
    assert {partial.load(i).meta.turns[0].edit_type for i in partial.ids("sd2")} == {"partial"}
    assert partial.describe()["samples"] == {"partial": 8} and partial.notice is None
    with pytest.raises(ConfigError) as err:  # one wording for every adapter's choice option (base.not_a_choice)
        OpenSdiDataset(opensdi, kinds="tampered,real")
    assert str(err.value) == "OpenSDI kinds='tampered,real': tampered is not one of real, partial, full"
    carved = OpenSdiDataset(opensdi, val_fraction=0.25)
    assert sorted(carved.ids("train") + carved.ids("val")) == sorted(OpenSdiDataset(opensdi).ids("train"))
    assert carved.provenance()["split"]["id"] == "opensdi-v1+diffzoo-hash-v1-seed0-val25"
    test_only = OpenSdiDataset(opensdi / "OpenSDI_test")
    with pytest.raises(ConfigError, match="carves val from the train copy"):
        OpenSdiDataset(opensdi / "OpenSDI_test", val_fraction=0.2)
    assert test_only.splits() == ["val", "test", "sd15", "sd2"]


def test_an_empty_copy_folder_is_refused_never_passed_over(opensdi):
    """OpenSDI_train/data/ left empty: the dataset opened as its test copy alone, unsaid."""
    for f in (opensdi / "OpenSDI_train" / "data").iterdir():
        f.unlink()
    with pytest.raises(DataError) as err:
        OpenSdiDataset(opensdi)
    assert str(err.value) == (f"{opensdi / 'OpenSDI_train'}: holds no OpenSDI data (parquet, arrow or a save_to_disk "
                              "folder); the dataset would have no train split (a download or extraction cut short?): "
                              "get it again, or move it away")


def test_sniffing_and_refusals(opensdi, tmp_path):
    data = opensdi / "OpenSDI_test" / "data"
    assert not DiffSeg30kDataset.sniff(data / "sd2-00000-of-00001.parquet")  # left to OpenSDI
    assert not OpenSdiDataset.sniff(tmp_path / "nothing")
    bad = tmp_path / "bad"
    bad.mkdir()
    rows = split_rows("sd2", 3).cast_column("label", datasets.Value("int64")).to_list()
    rows[1]["label"] = 7
    datasets.Dataset.from_list(rows, features=datasets.Features({**FEATURES, "label": datasets.Value("int64")})) \
        .to_parquet(str(bad / "sd2-00000-of-00001.parquet"))
    with pytest.raises(DataError, match="label 7; OpenSDI's labels are 0"):
        OpenSdiDataset(bad)
    (tmp_path / "dl").mkdir()
    split_rows("sd2", 3, rows=[{"key": "x.jpg", "image": Image.new("RGB", (8, 8)), "mask": None, "label": 1}]) \
        .to_parquet(str(tmp_path / "dl" / "data.parquet"))
    with pytest.raises(DataError, match=r"row 3 \(x.jpg\): its generator is unknown"):
        OpenSdiDataset(tmp_path / "dl" / "data.parquet", copy="test")
    split_rows("sd2", 3).remove_columns("key").to_parquet(str(tmp_path / "sd2-00000-of-00001.parquet"))
    assert not OpenSdiDataset.sniff(tmp_path / "sd2-00000-of-00001.parquet")
    with pytest.raises(DataError, match="rows need columns image, mask, key, label; missing key"):
        OpenSdiDataset(tmp_path / "sd2-00000-of-00001.parquet")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="no OpenSDI data found"):
        OpenSdiDataset(tmp_path / "empty")


def test_opensdi_rows_without_a_label_column_are_refused_never_read_as_diffseg30k(tmp_path, capsys):
    """A copy of OpenSDI's test data that lost its label column (key, image, mask) holds DiffSeg30k's
    columns too; its keys are OpenSDI's, so it is refused naming the missing column: read as image/mask
    pairs, every real image (no mask) would be a corrupt sample."""
    hub_copy(tmp_path, "OpenSDI_test", {"sd2": split_rows("sd2", 6, seed=3).remove_columns("label")})
    data = tmp_path / "OpenSDI_test"
    said = (f"{data} (split sd2): rows need columns image, mask, key, label; missing label (columns: key, image, "
            "mask); keys such as partial/sd2/real/003000000.jpg are OpenSDI's")
    with pytest.raises(DataError) as err:
        open_dataset(str(data))
    assert str(err.value) == said
    code, out, err_text = cli(capsys, "data", "info", str(data))
    assert (code, err_text.strip().splitlines()[-1]) == (1, f"error: {said}")
    # DiffSeg30k's own keys (train_copy/00000001) in a key column keep reading as its pairs
    rows = [dict(r, key=f"train_copy/{i:08d}") for i, r in enumerate(split_rows("sd2", 6).remove_columns("label"))
            if r["mask"] is not None]
    datasets.Dataset.from_list(rows, features=datasets.Features({k: v for k, v in FEATURES.items() if k != "label"})) \
        .to_parquet(str(tmp_path / "pairs.parquet"))
    ds = open_dataset(str(tmp_path / "pairs.parquet"))
    assert isinstance(ds, DiffSeg30kDataset) and sorted(ds.ids(ds.splits()[0])) == ["00000001", "00000004"]


def test_run_standard_data_stats_and_info(opensdi, tmp_path, capsys):
    code, out, err = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "standard",
                         "--dataset", opensdi, "--out", tmp_path / "out", *FAST)
    assert code == 0, err
    records = [json.loads(p.read_text()) for p in (tmp_path / "out" / "records").glob("*.json")]
    assert len(records) == 3
    assert {r["dataset"]["split"]["id"] for r in records} == {"opensdi-v1"}
    assert {r["dataset"]["label_map"]["source"] for r in records} == {"OpenSDI label rule mixed-v1"}
    assert all(r["dataset"]["description"]["label_rule"]["version"] == "mixed-v1" for r in records)

    code, text, err = cli(capsys, "data", "stats", opensdi, "--no-plots", "--json")
    assert code == 0, err
    stats = json.loads(text)
    assert stats["images"] == 24 and stats["authentic"] == 8
    assert {k: v["images"] for k, v in stats["editors"].items()} == {"sd15": 12, "sd2": 4}
    assert stats["edit_types"] == {"full_synthetic": 8, "none": 8, "partial": 8}
    assert stats["edited_area"]["overall"]["count"] == 16 and stats["edited_area"]["overall"]["p90"] == 1.0
    code, text, err = cli(capsys, "data", "stats", opensdi, "--split", "sd2", "--no-plots")
    assert code == 0 and "images per edit type" in text and "full_synthetic" in text, err
    code, text, err = cli(capsys, "data", "info", opensdi)
    assert code == 0 and "generators" in text and "'sd2': 4" in text and "fingerprint" in text, err


def test_the_opensdi_protocol_on_its_partial_fakes(opensdi, tmp_path, capsys):
    """OpenSDI's protocol end to end: train on OpenSDI_train, score each generator split of
    OpenSDI_test read with kinds=partial (OpenSDI's pixel set); every record names the set it read."""
    out = tmp_path / "out"
    code, _, err = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "opensdi", "--dataset",
                       opensdi / "OpenSDI_train", "--eval-dataset", opensdi / "OpenSDI_test",
                       "--eval-dataset-option", "kinds=partial", "--out", out, *FAST)
    assert code == 0, err
    records = [json.loads(p.read_text()) for p in (out / "records").glob("*.json")]
    assert sorted((r["case"]["split"], r["case"]["name"]) for r in records) == [
        (s, c) for s in ("sd15", "sd2") for c in ("binary", "image")]
    assert all(r["dataset"]["description"]["kinds"] == ["partial"] for r in records)
    assert all(r["config"]["train_dataset"]["name"] == "opensdi" for r in records)
    binary = next(r for r in records if r["case"]["name"] == "binary")
    assert {"F1_benco", "IoU_benco", "F1", "gIoU"} <= set(binary["metrics"])
    # on edited images only, IMDL-BenCo's per-image IoU is diffzoo's gIoU
    assert binary["metrics"]["IoU_benco"] == pytest.approx(binary["metrics"]["gIoU"])
