"""DEAL-300K: train.zip / val.zip / test.zip + label.zip (or their folders), in the real names."""

from __future__ import annotations

import json
import logging
import pickle
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from diffzoo import open_dataset
from diffzoo.harness.core.errors import CorruptSampleError, DataError
from diffzoo.harness.core.types import BINARY
from diffzoo.harness.data.adapters.deal300k import Deal300kDataset

from helpers.cli import cli
from helpers.data import DEAL_SIZE as SIZE
from helpers.data import make_deal_zips

FAST = ["--iterations", "3", "--batch-size", "2", "--crop-size", "32", "--bootstrap", "0", "--device", "cpu"]


def extract(zips: Path, to: Path) -> Path:
    """The folder form: every zip extracted in place (train/, val/, test/, label/)."""
    to.mkdir(parents=True)
    for z in sorted(zips.glob("*.zip")):
        with zipfile.ZipFile(z) as zf:
            zf.extractall(to)
    return to


@pytest.fixture
def deal(tmp_path) -> Path:
    return make_deal_zips(tmp_path / "DEAL-300K")


def test_reads_splits_labels_and_metadata(deal):
    ds = Deal300kDataset(deal)
    assert ds.label_space == BINARY and ds.splits() == ["train", "val", "test"]
    assert ds.ids("val") == ["val/000000436603.jpg", "val/000000436603_qwen120.jpg",
                             "val/000000436603_qwen180.jpg", "val/000000436647.jpg", "val/000000436647_qwen120.jpg"]
    edit = ds.load("val/000000436603_qwen180.jpg")
    assert edit.image.shape == (SIZE, SIZE, 3) and edit.label.dtype == np.uint8
    assert set(np.unique(edit.label)) == {0, 1} and edit.label[4:12, 2:20].all() and edit.label.sum() == 8 * 18
    (turn,) = edit.meta.turns
    assert (edit.meta.base, turn.editor, turn.edit_type) == ("real", "instructpix2pix", "instruction-qwen180")
    source = ds.load("val/000000436603.jpg")
    assert not source.label.any() and source.meta.base == "real" and source.meta.turns == ()
    d = ds.describe()
    assert (d["edited"], d["authentic"], d["splits"]) == (10, 7, {"train": 7, "val": 5, "test": 5})
    assert d["instruction_checkpoints"] == {"qwen120": 5, "qwen180": 5}
    assert d["mask_encoding"].startswith("binary masks: 0 unedited, 255 edited")
    prov = ds.provenance()
    assert prov["label_map"]["source"] == "binary masks (binary-255)" and prov["label_map"]["verified"]
    assert prov["split"] == {"id": "native", "source": "the data's own splits (train.zip, val.zip, test.zip)"}
    edited_only = Deal300kDataset(deal, originals=False)
    assert edited_only.ids("test") == ["test/000000436795_qwen180.jpg", "test/000000436797_qwen120.jpg",
                                       "test/000000436797_qwen180.jpg"]
    assert edited_only.fingerprint() != ds.fingerprint()


def test_zip_and_folder_forms_have_one_fingerprint(deal, tmp_path):
    zipped = Deal300kDataset(deal)
    folder = Deal300kDataset(extract(deal, tmp_path / "extracted"))
    assert folder.source_kind == "folder" and zipped.source_kind == "zip"
    assert folder.fingerprint() == zipped.fingerprint()
    assert folder.ids("train") == zipped.ids("train")
    assert np.array_equal(folder.load("test/000000436797_qwen180.jpg").label,
                          zipped.load("test/000000436797_qwen180.jpg").label)
    revived = pickle.loads(pickle.dumps(zipped))  # loader workers reopen the zips
    assert np.array_equal(revived.load("val/000000436647.jpg").image, zipped.load("val/000000436647.jpg").image)
    moved = tmp_path / "elsewhere"
    shutil.copytree(deal, moved)
    assert Deal300kDataset(moved).fingerprint() == zipped.fingerprint()
    # the extracted folder wins over a zip of the same split beside it: same data, same fingerprint
    shutil.copy(deal / "val.zip", tmp_path / "extracted" / "val.zip")
    assert Deal300kDataset(tmp_path / "extracted").fingerprint() == zipped.fingerprint()
    mask = tmp_path / "extracted" / "label" / "000000436647_qwen120.png"
    Image.fromarray(np.full((SIZE, SIZE), 255, np.uint8)).save(mask)
    assert Deal300kDataset(tmp_path / "extracted").fingerprint() != zipped.fingerprint()


def test_one_split_with_its_labels_beside(deal, tmp_path, caplog):
    with caplog.at_level(logging.INFO):
        test = Deal300kDataset(deal / "test.zip")
    assert test.splits() == ["test"] and len(test.ids("test")) == 5
    assert "mask(s) match no edited image read" in caplog.text  # train's and val's masks
    folder = extract(deal, tmp_path / "x")
    assert Deal300kDataset(folder / "test").ids("test") == test.ids("test")
    # masks elsewhere: masks= (relative to the dataset folder)
    (folder / "label").rename(folder / "gt")
    with pytest.raises(DataError, match=r"10 edited image\(s\) have no mask"):
        Deal300kDataset(folder)
    assert Deal300kDataset(folder, masks="gt").fingerprint() == Deal300kDataset(deal).fingerprint()


def test_label_rule(tmp_path):
    ones = Deal300kDataset(make_deal_zips(tmp_path / "ones", mask_value=1))
    assert ones.provenance()["label_map"]["source"] == "binary masks (binary-1)"
    assert ones.load("train/000000000009_qwen120.jpg").label.sum() == 8 * 18
    with pytest.raises(DataError, match="DEAL-300K masks hold 0 .unedited. and 255 .edited., but .* values 0, 7"):
        Deal300kDataset(make_deal_zips(tmp_path / "sevens", mask_value=7))
    folder = extract(make_deal_zips(tmp_path / "z"), tmp_path / "grey")
    grey = np.zeros((SIZE, SIZE), np.uint8)
    grey[:3] = 128
    Image.fromarray(grey).save(folder / "label" / "000000000459_qwen120.png")
    ds = Deal300kDataset(folder)
    with pytest.raises(CorruptSampleError, match="mask values 128 are neither of 0 .unedited. and 255") as exc:
        ds.load("train/000000000459_qwen120.jpg")
    assert exc.value.kind == "mask-values"
    Image.fromarray(np.zeros((SIZE, SIZE + 1), np.uint8)).save(folder / "label" / "000000000632_qwen180.png")
    with pytest.raises(CorruptSampleError) as exc:
        ds.load("train/000000000632_qwen180.jpg")
    assert exc.value.kind == "mask-size"
    Image.fromarray(np.zeros((SIZE, SIZE), np.uint8)).save(folder / "label" / "000000000009_qwen180.png")
    with pytest.raises(CorruptSampleError, match="the mask marks no pixel as edited") as exc:  # never authentic
        ds.load("train/000000000009_qwen180.jpg")
    assert exc.value.kind == "mask-empty"


def test_unpaired_and_refused_layouts(deal, tmp_path, caplog):
    folder = extract(deal, tmp_path / "f")
    (folder / "label" / "000000000009_qwen180.png").unlink()
    with pytest.raises(DataError, match=r"1 edited image\(s\) have no mask .*train/000000000009_qwen180.jpg"):
        Deal300kDataset(folder)
    ds = Deal300kDataset(folder, skip_unpaired=True)
    assert "train/000000000009_qwen180.jpg" not in ds.ids("train") and "skipping them" in caplog.text
    with pytest.raises(DataError, match="not a DEAL-300K download"):
        Deal300kDataset(deal / "label.zip")
    (folder / "val" / "nested").mkdir()
    shutil.copy(folder / "val" / "000000436647.jpg", folder / "val" / "nested")
    with pytest.raises(DataError, match="val/000000436647.jpg appears twice"):
        Deal300kDataset(folder)
    shutil.rmtree(folder / "val" / "nested")
    (folder / "label" / "more").mkdir()
    shutil.copy(folder / "label" / "000000436603_qwen120.png", folder / "label" / "more")
    with pytest.raises(DataError) as err:
        Deal300kDataset(folder, skip_unpaired=True)
    assert str(err.value) == (f"{folder / 'label'}: two masks for 000000436603_qwen120: 000000436603_qwen120.png "
                              "and more/000000436603_qwen120.png")


def test_a_split_folder_holding_no_image_is_refused_never_left_out(deal, tmp_path):
    """val/ left empty by an extraction cut short: the dataset opened as train and test alone, its masks
    only "matching no edited image" at info level."""
    folder = extract(deal, tmp_path / "f")
    for p in (folder / "val").iterdir():
        p.unlink()
    (folder / "val" / "README.txt").write_text("not an image")
    with pytest.raises(DataError) as err:
        Deal300kDataset(folder)
    assert str(err.value) == (f"{folder / 'val'}: holds no DEAL-300K image (<cocoid>.jpg, <cocoid>_qwen<ckpt>.jpg); "
                              "the dataset would have no val split (a download or extraction cut short?): get it "
                              "again, or move it away")


def test_sniff_and_open_by_path(deal, tmp_path, diffseg_folder):
    folder = extract(deal, tmp_path / "f")
    for p in (deal, deal / "test.zip", folder, folder / "val"):
        assert Deal300kDataset.sniff(p), p
        assert isinstance(open_dataset(str(p)), Deal300kDataset)
    assert not Deal300kDataset.sniff(diffseg_folder)
    assert not Deal300kDataset.sniff(deal / "label.zip")
    (tmp_path / "other" / "train").mkdir(parents=True)
    (tmp_path / "other" / "label").mkdir()
    assert not Deal300kDataset.sniff(tmp_path / "other")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "test.zip").write_bytes(b"PK\x03\x04 truncated")
    (broken / "label.zip").write_bytes(b"PK\x03\x04 truncated")
    assert Deal300kDataset.sniff(broken)  # claimed, so that opening says what is wrong
    with pytest.raises(DataError, match="not a readable zip file"):
        open_dataset(str(broken))


def test_run_stats_and_info_from_the_cli(deal, tmp_path, capsys):
    code, out, err = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "standard",
                         "--dataset", deal, "--out", tmp_path / "out", *FAST)
    assert code == 0, err
    assert "standard v2 / binary on deal300k" in out
    records = [json.loads(p.read_text()) for p in (tmp_path / "out" / "records").glob("*.json")]
    assert records and {r["dataset"]["label_map"]["source"] for r in records} == {
        "binary masks (binary-255)"}
    assert {r["dataset"]["split"]["id"] for r in records} == {"native"}

    code, out, err = cli(capsys, "data", "stats", deal, "--split", "test", "--no-plots", "--json")
    assert code == 0, err
    stats = json.loads(out)
    assert stats["splits"] == {"test": 5} and stats["authentic"] == 2
    assert stats["editors"]["instructpix2pix"]["images_from_turns"] == 3
    assert stats["turns"]["counts"] == {"0": 2, "1": 3, "unknown": 0}
    assert stats["edited_area"]["overall"]["count"] == 3
    assert stats["edited_area"]["overall"]["mean"] == pytest.approx(8 * 18 / SIZE**2)
    assert stats["edited_area"]["editors"]["instructpix2pix"]["count"] == 3
    assert stats["dataset"]["mask_encoding"]["kind"] == "binary-255"

    code, out, err = cli(capsys, "data", "info", deal)
    assert code == 0, err
    assert "instruction_checkpoints: {'qwen120': 5, 'qwen180': 5}" in out
    assert f"fingerprint: {Deal300kDataset(deal).fingerprint()}" in out


def test_zips_with_windows_separators_give_the_same_ids_and_fingerprint(deal, tmp_path):
    """A zip made on Windows stores `val\\x.jpg`: its ids were `val\\x.jpg` and its fingerprint another."""
    windows = tmp_path / "windows"
    windows.mkdir()
    for z in sorted(deal.glob("*.zip")):
        with zipfile.ZipFile(z) as src, zipfile.ZipFile(windows / z.name, "w") as dst:
            for info in src.infolist():
                dst.writestr(info.filename.replace("/", "\\"), src.read(info))
    ds, native = Deal300kDataset(windows), Deal300kDataset(deal)
    assert ds.ids("val") == native.ids("val") and ds.fingerprint() == native.fingerprint()
    assert np.array_equal(ds.load("val/000000436603_qwen180.jpg").label, native.load("val/000000436603_qwen180.jpg").label)
    with zipfile.ZipFile(windows / "val.zip", "a") as zf:
        zf.writestr("val/000000436603.jpg", b"another")
    with pytest.raises(DataError) as err:
        Deal300kDataset(windows)
    assert str(err.value) == (f"{windows / 'val.zip'}: val/000000436603.jpg is stored twice, as "
                              "'val/000000436603.jpg' and 'val\\\\000000436603.jpg' (another folder separator or "
                              "Unicode form); keep one of them")


def test_two_edits_of_one_name_are_refused_naming_both(deal, tmp_path):
    """``x_qwen120.jpg`` beside ``x_qwen120.jpeg``: the first took the mask and the second "had no mask",
    though it was the other that was named; which edit the mask is of is not ours to guess."""
    folder = extract(deal, tmp_path / "f")
    shutil.copy(folder / "train" / "000000000009_qwen120.jpg", folder / "train" / "000000000009_qwen120.jpeg")
    with pytest.raises(DataError) as err:
        Deal300kDataset(folder)
    assert str(err.value) == (f"{folder}: two images for 000000000009_qwen120.png: train/000000000009_qwen120.jpeg "
                              "and train/000000000009_qwen120.jpg")


def test_two_split_folders_of_one_name_in_another_letter_case_are_refused(deal, tmp_path):
    """``val/`` beside ``Val/``: the one the listing gave last was read, the other passed over unsaid."""
    root = extract(deal, tmp_path / "extracted")
    shutil.copytree(root / "val", root / "Val")
    with pytest.raises(DataError) as err:
        Deal300kDataset(root)
    assert str(err.value) == f"{root}: Val and val are both the val/ folder, in another letter case; keep one of them"
    with pytest.raises(DataError) as err:  # the sniffer says it too, not "no adapter recognises"
        open_dataset(root)
    assert str(err.value) == f"{root}: Val and val are both the val/ folder, in another letter case; keep one of them"


def test_two_split_zips_of_one_name_in_another_letter_case_are_refused(deal):
    """``val.zip`` beside ``Val.zip``: the one the listing gave last was read, the other passed over unsaid."""
    shutil.copy(deal / "val.zip", deal / "Val.zip")
    with pytest.raises(DataError) as err:
        Deal300kDataset(deal)
    assert str(err.value) == f"{deal}: Val.zip and val.zip are both val.zip, in another letter case; keep one of them"
