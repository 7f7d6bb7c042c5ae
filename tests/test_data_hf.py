"""DiffSeg30k through `datasets`: parquet, arrow, save_to_disk, hub id offline."""

from __future__ import annotations

import datasets
import numpy as np
import pytest
from PIL import Image

from diffzoo import open_dataset
from diffzoo.harness.core.errors import CorruptSampleError, DataError
from diffzoo.harness.data import DiffSeg30kDataset
from diffzoo.harness.data.hfsource import load_tables
from diffzoo.harness.data.labelmaps import label_map_sha256


@pytest.fixture(autouse=True)
def _private_hf_cache(tmp_path, monkeypatch):
    """Keep `datasets`' conversion cache out of the user's home."""
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-cache")


def rows(n: int = 10, seed: int = 0, with_key: bool = False, bad_value: bool = False):
    rng = np.random.default_rng(seed)
    images, masks = [], []
    for i in range(n):
        images.append(Image.fromarray(rng.integers(0, 256, (16, 16, 3), dtype=np.uint8)))
        m = np.zeros((16, 16), dtype=np.uint8)
        m[4:9, 4:9] = 12 if (bad_value and i == 0) else i % 9
        masks.append(Image.fromarray(m))
    data = {"image": images, "mask": masks}
    feats = {"image": datasets.Image(), "mask": datasets.Image()}
    if with_key:
        data["__key__"] = [f"train_copy/{i + 100:08d}" for i in range(n)]
        feats["__key__"] = datasets.Value("string")
    return datasets.Dataset.from_dict(data, features=datasets.Features(feats))


def test_parquet_file(tmp_path):
    src = rows()
    path = tmp_path / "data.parquet"
    src.to_parquet(str(path))
    assert DiffSeg30kDataset.sniff(path)
    ds = DiffSeg30kDataset(path)
    assert ds.describe()["source_kind"] == "datasets"
    ids = sorted(ds.ids("train") + ds.ids("val"))
    assert ids == [f"{i:08d}" for i in range(10)]
    s = ds.load("00000003")
    assert np.array_equal(s.image, np.asarray(src[3]["image"]))
    assert np.array_equal(s.label, np.asarray(src[3]["mask"]))
    fp = ds.fingerprint()
    assert DiffSeg30kDataset(path).fingerprint() == fp
    copy = tmp_path / "other" / "data.parquet"
    copy.parent.mkdir()
    copy.write_bytes(path.read_bytes())
    assert DiffSeg30kDataset(copy).fingerprint() == fp


def test_save_to_disk_folder_with_key_column(tmp_path):
    rows(with_key=True).save_to_disk(str(tmp_path / "saved"))
    assert DiffSeg30kDataset.sniff(tmp_path / "saved")
    ds = open_dataset(str(tmp_path / "saved"))
    assert isinstance(ds, DiffSeg30kDataset)
    assert sorted(ds.ids("train") + ds.ids("val"))[0] == "00000100"
    assert ds.load("00000105").label.max() == 5
    arrow = next((tmp_path / "saved").glob("*.arrow"))
    single = DiffSeg30kDataset(arrow)
    assert len(single.ids("train") + single.ids("val")) == 10


def test_folder_of_split_parquets(tmp_path):
    folder = tmp_path / "pq"
    folder.mkdir()
    rows(6, seed=1).to_parquet(str(folder / "train-00000-of-00001.parquet"))
    rows(4, seed=2).to_parquet(str(folder / "validation-00000-of-00001.parquet"))
    ds = DiffSeg30kDataset(folder)
    assert ds.splits() == ["train", "val"]  # hub "validation" is exposed as "val"
    assert len(ds.ids("train")) == 6 and len(ds.ids("validation")) == 4
    assert ds.ids("val")[0] == "val/00000000"  # row indices clash across splits: prefixed
    assert ds.load("val/00000001").image.shape == (16, 16, 3)


def test_val_beside_validation_parquet_is_refused_naming_both(tmp_path):
    """`datasets` merged val.parquet into validation.parquet's split, unsaid."""
    folder = tmp_path / "pq"
    folder.mkdir()
    rows(6, seed=1).to_parquet(str(folder / "train.parquet"))
    rows(4, seed=2).to_parquet(str(folder / "val.parquet"))
    rows(4, seed=3).to_parquet(str(folder / "validation.parquet"))
    with pytest.raises(DataError) as err:
        DiffSeg30kDataset(folder)
    assert str(err.value) == (f"{folder}: splits 'val' and 'validation' both read as split val; rename or leave out "
                              "one of them")


def test_a_parquet_file_named_in_upper_case_is_read_or_refused_never_passed_over(tmp_path):
    folder = tmp_path / "pq"
    folder.mkdir()
    rows(6, seed=1).to_parquet(str(folder / "train-00000-of-00001.parquet"))
    upper = folder / "VALIDATION-00000-OF-00001.PARQUET"
    rows(4, seed=2).to_parquet(str(upper))
    (folder / "._train-00000-of-00001.parquet").write_bytes(b"\0\x05\x16\x07\0\x02\0\0Mac OS X        \xff")
    assert [(t.split, len(t.data)) for t in load_tables(folder)] == [("VALIDATION", 4), ("train", 6)]
    with pytest.raises(DataError) as err:  # load_dataset, which reads DiffSeg30k's folder, would skip it
        DiffSeg30kDataset(folder)
    assert str(err.value) == (f"{upper}: `datasets` reads a folder's data files by their lower-case suffix and "
                              "would pass this one over; rename it to .parquet")


def test_a_data_file_lacking_the_mask_column_beside_full_ones_is_refused_naming_it(tmp_path):
    """validation-*.parquet with no mask column beside a full train shard: `datasets` gave it the train
    shard's columns, its masks empty cells, and the folder opened; every val sample was corrupt when loaded."""
    folder = tmp_path / "pq"
    folder.mkdir()
    rows(6, seed=1).to_parquet(str(folder / "train-00000-of-00001.parquet"))
    short = folder / "validation-00000-of-00001.parquet"
    rows(4, seed=2).remove_columns(["mask"]).to_parquet(str(short))
    with pytest.raises(DataError) as err:
        open_dataset(str(folder))
    assert str(err.value) == (f"{short}: rows need columns image, mask; missing mask (columns: image); move it out "
                              f"of {folder} or replace it")


def test_bad_rows_are_refused(tmp_path):
    rows(bad_value=True).to_parquet(str(tmp_path / "bad.parquet"))
    ds = DiffSeg30kDataset(tmp_path / "bad.parquet", val_fraction=0.0)
    with pytest.raises(CorruptSampleError, match="mask value 12 is not in the label map"):
        ds.load("00000000")
    datasets.Dataset.from_dict({"image": [b"x"], "label": [1]}).to_parquet(
        str(tmp_path / "cols.parquet")
    )
    assert not DiffSeg30kDataset.sniff(tmp_path / "cols.parquet")
    with pytest.raises(DataError, match="rows need columns image, mask; missing mask"):
        DiffSeg30kDataset(tmp_path / "cols.parquet")


def test_hub_id_offline_is_a_clear_error(tmp_path, monkeypatch):
    import huggingface_hub.constants as hub_constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(hub_constants, "HF_HUB_CACHE", str(tmp_path / "hf-home" / "hub"))
    assert DiffSeg30kDataset.sniff("Chaos2629/Diffseg30k")
    with pytest.raises(DataError) as err:
        DiffSeg30kDataset("Chaos2629/Diffseg30k")
    msg = str(err.value)
    assert "hf download Chaos2629/Diffseg30k --repo-type dataset" in msg
    assert "pass the local path" in msg


def test_hub_id_with_no_network_fails_at_once_without_retries(tmp_path, monkeypatch):
    """HF_HUB_OFFLINE unset and the hub unreachable: the offline message, with no retry waits before it."""
    import socket

    import huggingface_hub.constants as hub_constants
    from huggingface_hub.utils import _http

    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf-home" / "datasets"))

    def refuse(self, address, *args):
        raise OSError("network disabled by the test")

    waits: list[float] = []
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(_http.time, "sleep", waits.append)
    with pytest.raises(DataError) as err:
        DiffSeg30kDataset("hub:someorg/somedata")
    assert "hf download someorg/somedata --repo-type dataset" in str(err.value), str(err.value)
    assert waits == [] and datasets.config.HF_HUB_OFFLINE is False


def test_fingerprint_hashes_cell_bytes_once_and_follows_content(tmp_path, monkeypatch):
    from diffzoo.harness.data import hfsource

    path = tmp_path / "data.parquet"
    rows(with_key=True).to_parquet(str(path))
    fp = DiffSeg30kDataset(path).fingerprint()
    hashed = []
    real = hfsource._cell_digest
    monkeypatch.setattr(hfsource, "_cell_digest", lambda v: hashed.append(1) or real(v))
    assert DiffSeg30kDataset(path).fingerprint() == fp and hashed == []  # cached
    rows(with_key=True, seed=1).to_parquet(str(path))  # other pixels, same ids
    assert DiffSeg30kDataset(path).fingerprint() != fp and len(hashed) == 20


def class_label_rows(names, column="label", sequence=False):
    rng = np.random.default_rng(0)
    masks = [np.full((8, 8), i % len(names), np.uint8) for i in range(6)]
    values = [i % len(names) for i in range(6)]
    label = datasets.ClassLabel(names=names)
    return datasets.Dataset.from_dict(
        {"image": [Image.fromarray(rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)) for _ in masks],
         "mask": [Image.fromarray(m) for m in masks], column: [[v] for v in values] if sequence else values},
        features=datasets.Features({"image": datasets.Image(), "mask": datasets.Image(),
                                    column: datasets.Sequence(label) if sequence else label}))


def test_class_label_feature_names_the_mask_values(tmp_path):
    data = class_label_rows(["authentic", "SDXL", "sd2"])  # value 0 read as background, paper names as short
    data.to_parquet(str(tmp_path / "d.parquet"))
    data.save_to_disk(str(tmp_path / "saved"))
    names = ["background", "sdxl", "sd2"]
    for path in (tmp_path / "d.parquet", tmp_path / "saved"):
        assert DiffSeg30kDataset(path).provenance()["label_map"] == {
            "names": names, "sha256": label_map_sha256(names), "source": "ClassLabel:label", "verified": True}
    class_label_rows(["background", "x"], column="editors", sequence=True).to_parquet(str(tmp_path / "s.parquet"))
    label_map = DiffSeg30kDataset(tmp_path / "s.parquet").provenance()["label_map"]
    assert (label_map["names"], label_map["source"]) == (["background", "x"], "ClassLabel:editors")
    class_label_rows(["sd2", "sdxl"]).to_parquet(str(tmp_path / "bad.parquet"))
    with pytest.raises(DataError, match="ClassLabel feature 'label': value 0 is named 'sd2'"):
        DiffSeg30kDataset(tmp_path / "bad.parquet")
    assert DiffSeg30kDataset(tmp_path / "bad.parquet", label_space="sd2").label_space.names == ("background", "sd2")


def test_native_splits_keep_their_names_and_id(tmp_path):
    folder = tmp_path / "saved"
    datasets.DatasetDict({"train": rows(6, seed=1), "validation": rows(4, seed=2),
                          "cross_test": rows(3, seed=3)}).save_to_disk(str(folder))
    ds = DiffSeg30kDataset(folder)
    assert ds.splits() == ["train", "val", "cross_test"]
    assert ds.provenance()["split"] == {"id": "native",
                                        "source": "the data's own splits (cross_test, train, val)"}


def test_two_splits_named_as_one_are_refused_never_one_dropped(tmp_path):
    """``val`` and ``validation`` both read as split val: the rows of one of them were dropped unsaid."""
    folder = tmp_path / "saved"
    datasets.DatasetDict({"train": rows(6, seed=1), "val": rows(4, seed=2),
                          "validation": rows(3, seed=3)}).save_to_disk(str(folder))
    with pytest.raises(DataError, match=rf"^{folder}: splits 'val' and 'validation' both read as split val; "
                                        "rename or leave out one of them$"):
        DiffSeg30kDataset(folder)


def binary_rows(n: int = 8, seed: int = 0):
    """Rows as the KhangTruong/Diffseg30k re-upload holds them: image and a 0/255 mask, no key."""
    rng = np.random.default_rng(seed)
    images, masks = [], []
    for i in range(n):
        image = rng.integers(0, 256, (16, 16, 3), dtype=np.uint8)
        m = np.zeros((16, 16), dtype=np.uint8)
        if i % 2:
            m[4:10, 3:9] = 255
        images.append(Image.fromarray(image))
        masks.append(Image.fromarray(m))
    return datasets.Dataset.from_dict({"image": images, "mask": masks},
                                      features=datasets.Features({"image": datasets.Image(), "mask": datasets.Image()}))


def test_third_party_copy_reads_as_diffseg30k_with_binary_masks(tmp_path, capsys):
    import json

    from diffzoo.harness.core.types import BINARY

    from helpers.cli import cli

    rows = binary_rows()
    (tmp_path / "Diffseg30k" / "data").mkdir(parents=True)
    shard = tmp_path / "Diffseg30k" / "data" / "cross_test-00000-of-00001.parquet"
    rows.to_parquet(str(shard))
    datasets.DatasetDict({"cross_test": rows}).save_to_disk(str(tmp_path / "saved"))
    opened = [open_dataset(str(p)) for p in (tmp_path / "Diffseg30k", shard, tmp_path / "saved")]
    for ds in opened:
        assert isinstance(ds, DiffSeg30kDataset) and ds.splits() == ["cross_test"]
        assert ds.mask_encoding.kind == "binary-255" and ds.label_space == BINARY
        assert ds.provenance()["label_map"]["source"] == "binary masks (binary-255)"
        assert ds.provenance()["split"]["id"] == "native"
        assert set(np.unique(ds.load("00000001").label)) == {0, 1} and not ds.load("00000002").label.any()
    assert len({ds.fingerprint() for ds in opened}) == 1
    assert DiffSeg30kDataset.sniff("KhangTruong/Diffseg30k")

    code, text, err = cli(capsys, "data", "stats", tmp_path / "Diffseg30k", "--no-plots", "--json")
    assert code == 0, err
    stats = json.loads(text)
    assert stats["splits"] == {"cross_test": 8} and stats["authentic"] == 4
    assert stats["dataset"]["mask_encoding"]["kind"] == "binary-255"
    code, text, err = cli(capsys, "data", "info", shard)
    assert code == 0 and "cross_test" in text and "binary masks: 0 unedited, 255 edited" in text, err
    split_file = tmp_path / "splits.json"  # cross_test is an evaluation split: a split file lets a run train too
    split_file.write_text(json.dumps({"train": [f"{i:08d}" for i in range(5)], "val": [f"{i:08d}" for i in (5, 6, 7)]}))
    code, out, err = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "standard", "--dataset", shard,
                         "--dataset-option", f"split_file={split_file}", "--out", tmp_path / "out", "--iterations", "3",
                         "--batch-size", "2", "--crop-size", "16", "--bootstrap", "0", "--device", "cpu")
    assert code == 0, err
    records = [json.loads(p.read_text()) for p in (tmp_path / "out" / "records").glob("*.json")]
    assert {r["case"]["name"] for r in records} == {"binary", "image"}
    assert {r["dataset"]["label_map"]["source"] for r in records} == {"binary masks (binary-255)"}


def test_a_damaged_save_to_disk_folder_is_named_as_one(tmp_path):
    """DiffSeg30k reads a ``save_to_disk`` folder as the other `datasets` adapters do, and says so
    of one that `datasets` cannot read."""
    folder = tmp_path / "saved"
    datasets.DatasetDict({"train": rows(4)}).save_to_disk(str(folder))
    (folder / "dataset_dict.json").write_text("{")
    with pytest.raises(DataError, match=rf"^{folder}: a save_to_disk folder that `datasets` cannot read "
                                        r"\(JSONDecodeError: "):
        DiffSeg30kDataset(folder)
