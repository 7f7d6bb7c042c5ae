"""DiffSeg30k adapter on zip and folder layouts: loading, sidecars, refusals,
fingerprints, extra authentic images."""

from __future__ import annotations

import json
import logging
import pickle
import shutil
import unicodedata
import zipfile

import numpy as np
import pytest
from PIL import Image

from diffzoo import open_dataset
from diffzoo.harness.core import runlog
from diffzoo.harness.core.errors import CorruptSampleError, DataError
from diffzoo.harness.core.types import EditRecord, SampleMeta
from diffzoo.harness.data import DiffSeg30kDataset

from helpers.data import DIFFSEG_PAIRS as N
from helpers.data import make_diffseg_folder, make_pairs, write_folder, write_zip
from helpers.images import png_bytes


@pytest.fixture
def pairs():
    return make_pairs()


# -- reading -------------------------------------------------------------------


@pytest.mark.parametrize("prefix", ["train_copy/", "", "deep/inner/"])
def test_zip_reads_pairs_lazily(tmp_path, pairs, prefix):
    z = write_zip(tmp_path / "train.zip", pairs, prefix)
    assert DiffSeg30kDataset.sniff(z)
    ds = DiffSeg30kDataset(z)
    assert ds.splits() == ["train", "val"]
    ids = ds.ids("train") + ds.ids("val")
    assert sorted(ids) == sorted(pairs)
    sid = ids[0]
    s = ds.load(sid)
    assert np.array_equal(s.image, pairs[sid][0]) and np.array_equal(s.label, pairs[sid][1])
    assert s.meta == SampleMeta(sid, base="unknown")
    d = ds.describe()
    assert d["source_kind"] == "zip" and d["name"] == tmp_path.name  # the zip's folder
    assert d["splits"] == {"train": len(ds.ids("train")), "val": len(ds.ids("val"))}
    assert d["label_space"][0] == "background" and d["labels_verified"] is False


@pytest.mark.parametrize("sub", ["train_copy", ""])
def test_folder_layouts(tmp_path, pairs, sub):
    root = write_folder(tmp_path / "ds", pairs, sub)
    assert DiffSeg30kDataset.sniff(root)
    ds = DiffSeg30kDataset(root, val_fraction=0.25, split_seed=3, name="mine")
    assert ds.name == "mine" and ds.describe()["source_kind"] == "folder"
    assert DiffSeg30kDataset(root).name == "ds"  # default: the data's folder
    assert sorted(ds.ids("train") + ds.ids("validation")) == sorted(pairs)
    for sid in ds.ids("val"):
        assert np.array_equal(ds.load(sid).label, pairs[sid][1])


def test_zip_dataset_pickles_for_worker_processes(tmp_path, pairs):
    ds = DiffSeg30kDataset(write_zip(tmp_path / "train.zip", pairs))
    ds.load(ds.ids("train")[0])
    clone = pickle.loads(pickle.dumps(ds))
    sid = clone.ids("train")[1]
    assert np.array_equal(clone.load(sid).image, pairs[sid][0])


def test_sidecar_files_beside_zip(tmp_path, pairs):
    z = write_zip(tmp_path / "train.zip", pairs)
    names = ["background", "a", "b", "c", "d", "e", "f", "g", "h"]
    (tmp_path / "labels.json").write_text(json.dumps({"names": names, "verified": True}))
    ids = sorted(pairs)
    (tmp_path / "splits.json").write_text(json.dumps({"train": ids[:9], "validation": ids[9:]}))
    meta = SampleMeta(  # ids[1]: its mask marks an edit (ids[0]'s is all 0)
        ids[1], base="ai", turns=(EditRecord("sdxl", "a cat", "add", (1, 2, 3, 4), 7),)
    )
    (tmp_path / "manifest.jsonl").write_text(json.dumps(meta.to_dict()) + "\n\n")
    ds = DiffSeg30kDataset(z)
    assert ds.label_space.names == tuple(names) and ds.labels_verified is True
    assert ds.ids("train") == ids[:9] and ds.ids("val") == ids[9:]
    assert ds.load(ids[1]).meta == meta
    assert ds.load(ids[0]).meta.base == "unknown"
    assert ds.describe()["manifest"] is True


def test_label_space_argument_wins_and_default_warns(tmp_path, pairs, monkeypatch, caplog):
    root = write_folder(tmp_path / "ds", pairs)
    monkeypatch.setattr(runlog, "_SAID", set())
    with caplog.at_level(logging.WARNING):
        ds = DiffSeg30kDataset(root)
    assert "UNVERIFIED" in caplog.text and ds.labels_verified is False
    custom = "e1,e2,e3,e4,e5,e6,e7,e8"
    ds = DiffSeg30kDataset(root, label_space=custom)
    assert ds.label_space.names[1] == "e1" and ds.labels_verified is True


def test_a_manifest_naming_no_sample_is_warned_not_only_logged(tmp_path, pairs, caplog):
    root = write_folder(tmp_path / "ds", pairs)
    manifest = root / "manifest.jsonl"
    manifest.write_text("".join(json.dumps({"id": f" {i} ", "base": "ai", "turns": []}) + "\n" for i in sorted(pairs)))
    with caplog.at_level(logging.WARNING):
        ds = DiffSeg30kDataset(root)
    assert ds.describe()["manifest"] is False
    shown = ", ".join(repr(f" {i} ") for i in sorted(pairs)[:3])
    assert (f"manifest {manifest}: {len(pairs)} of its {len(pairs)} record(s) have no sample in the data (e.g. "
            f"{shown}); ignored") in caplog.messages


def test_bad_manifest_and_splits_files(tmp_path, pairs):
    root = write_folder(tmp_path / "ds", pairs)
    (root / "manifest.jsonl").write_text('{"id": "00000001"}\nnot json\n')
    with pytest.raises(DataError, match="manifest .*line 2"):
        DiffSeg30kDataset(root)
    (root / "manifest.jsonl").unlink()
    (root / "splits.json").write_text(json.dumps({"train": ["99999999"]}))
    with pytest.raises(DataError, match="not in the data, e.g. 99999999"):
        DiffSeg30kDataset(root)


# -- refusals ----------------------------------------------------------------


def test_missing_path_and_empty_folder(tmp_path):
    with pytest.raises(DataError, match="DiffSeg30k needs a dataset path"):
        DiffSeg30kDataset(None)
    with pytest.raises(DataError, match=r"dataset path .*nowhere does not exist"):
        DiffSeg30kDataset(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match=r"no DiffSeg30k data found; expected DiffSeg30k pairs"):
        DiffSeg30kDataset(tmp_path / "empty")
    (tmp_path / "x.txt").write_text("hi")
    with pytest.raises(DataError, match="not a DiffSeg30k source"):
        DiffSeg30kDataset(tmp_path / "x.txt")
    (tmp_path / "bad.zip").write_bytes(b"not a zip")
    with pytest.raises(DataError, match="not a readable zip file"):
        DiffSeg30kDataset(tmp_path / "bad.zip")


def test_unmatched_image_and_mask(tmp_path, pairs):
    root = write_folder(tmp_path / "ds", pairs)
    (root / "train_copy" / "00000003.mask.png").unlink()
    (root / "train_copy" / "00000099.mask.png").write_bytes(png_bytes(pairs["00000001"][1]))
    with pytest.raises(DataError) as err:
        DiffSeg30kDataset(root)
    msg = str(err.value)
    assert msg == (f"{root}: 1 image(s) have no <id>.mask.png (e.g. 00000003) and 1 mask(s) have no <id>.image.png "
                   "(e.g. 00000099); `--dataset-option skip_unpaired=true` skips them")
    ds = DiffSeg30kDataset(root, skip_unpaired=True)
    assert len(ds.ids("train") + ds.ids("val")) == N - 1
    (root / "train_copy" / "00000099.mask.png").unlink()  # one half alone: no "0 mask(s) ... (e.g. -)"
    with pytest.raises(DataError, match=r"ds: 1 image\(s\) have no <id>\.mask\.png \(e\.g\. 00000003\); "
                                        r"`--dataset-option skip_unpaired=true` skips them$"):
        DiffSeg30kDataset(root)


def test_corrupt_and_truncated_members(tmp_path, pairs):
    good = png_bytes(pairs["00000002"][0])
    extra = {
        "train_copy/00000100.image.png": b"garbage" * 10,
        "train_copy/00000100.mask.png": png_bytes(pairs["00000001"][1]),
        "train_copy/00000101.image.png": good[: len(good) // 2],
        "train_copy/00000101.mask.png": png_bytes(pairs["00000001"][1]),
    }
    ds = DiffSeg30kDataset(write_zip(tmp_path / "train.zip", pairs, extra=extra), val_fraction=0.0)
    with pytest.raises(
        CorruptSampleError,
        match=r"sample 00000100: train\.zip:train_copy/00000100\.image\.png: corrupt or truncated image",
    ):
        ds.load("00000100")
    with pytest.raises(
        CorruptSampleError, match=r"00000101\.image\.png: corrupt or truncated image \(.*truncated"
    ):
        ds.load("00000101")
    ds.load("00000001")  # others still load


def test_mask_checks_on_load(tmp_path, pairs):
    image = pairs["00000001"][0]
    bad_value = np.zeros((16, 16), dtype=np.uint8)
    bad_value[0, 0] = 12
    colour = np.zeros((16, 16, 3), dtype=np.uint8)
    colour[0, 0] = (9, 0, 200)
    extra = {
        "c/00000200.image.png": png_bytes(image),
        "c/00000200.mask.png": png_bytes(bad_value),
        "c/00000201.image.png": png_bytes(image),
        "c/00000201.mask.png": png_bytes(np.zeros((8, 16), dtype=np.uint8)),
        "c/00000202.image.png": png_bytes(image),
        "c/00000202.mask.png": png_bytes(colour),
    }
    ds = DiffSeg30kDataset(write_zip(tmp_path / "train.zip", pairs, extra=extra), val_fraction=0.0)
    with pytest.raises(
        CorruptSampleError,
        match=r"00000200\.mask\.png: mask value 12 is not in the label map \(9 classes",
    ):
        ds.load("00000200")
    with pytest.raises(
        CorruptSampleError,
        match=r"00000201\.mask\.png: mask size 16x8 differs from image size 16x16",
    ):
        ds.load("00000201")
    with pytest.raises(CorruptSampleError, match="masks must be single-channel class-index maps") as err:
        ds.load("00000202")  # one ambiguous mask is one skipped sample, not the end of the run
    assert err.value.kind == "mask-ambiguous"
    with pytest.raises(DataError, match="has no sample 'nope'"):
        ds.load("nope")
    with pytest.raises(DataError, match="has no split 'test'; splits: train"):
        ds.ids("test")


def test_a_mask_with_no_edited_pixel_of_an_image_the_manifest_edits_is_skipped(tmp_path):
    """An image whose manifest lists turns is edited: an all-zero mask is skipped as ``mask-empty``,
    never read as an authentic image; an image of no turns keeps its all-zero mask."""
    root = make_diffseg_folder(tmp_path / "ds", n=3, size=24)  # 00000000: no turns; 00000001: one
    blank = png_bytes(np.zeros((24, 24), np.uint8))
    (root / "train_copy" / "00000001.mask.png").write_bytes(blank)
    ds = DiffSeg30kDataset(root)
    with pytest.raises(CorruptSampleError, match="00000001.mask.png: the mask marks no pixel as edited") as err:
        ds.load("00000001")
    assert err.value.kind == "mask-empty"
    assert not ds.load("00000000").label.any() and ds.load("00000000").meta.turns == ()


# -- fingerprints --------------------------------------------------------------


def test_folder_fingerprint(tmp_path, pairs):
    root = write_folder(tmp_path / "a", pairs)
    fp = DiffSeg30kDataset(root).fingerprint()
    assert len(fp) == 16 and int(fp, 16) >= 0
    assert not list(root.rglob(".diffzoo*"))  # the digest cache lives in the diffzoo cache
    assert DiffSeg30kDataset(root).fingerprint() == fp  # re-open, cached digests
    copy = tmp_path / "elsewhere" / "b"
    shutil.copytree(root, copy)
    assert DiffSeg30kDataset(copy).fingerprint() == fp
    image, mask = pairs["00000005"]
    image = image.copy()
    image[0, 0, 0] ^= 1
    (copy / "train_copy" / "00000005.image.png").write_bytes(png_bytes(image))
    assert DiffSeg30kDataset(copy).fingerprint() != fp
    assert DiffSeg30kDataset(root, split_seed=1).fingerprint() != fp  # split moved


def test_zip_fingerprint(tmp_path, pairs):
    fp = DiffSeg30kDataset(write_zip(tmp_path / "a" / "train.zip", pairs)).fingerprint()
    assert DiffSeg30kDataset(write_zip(tmp_path / "b" / "train.zip", pairs)).fingerprint() == fp
    mask = pairs["00000004"][1].copy()
    mask[15, 15] = 1
    changed = {**pairs, "00000004": (pairs["00000004"][0], mask)}
    assert DiffSeg30kDataset(write_zip(tmp_path / "c" / "train.zip", changed)).fingerprint() != fp


def test_zip_fingerprint_ignores_the_member_folder_and_compression(tmp_path, pairs):
    fp = DiffSeg30kDataset(write_zip(tmp_path / "a" / "train.zip", pairs, "train_copy/")).fingerprint()
    other = write_zip(tmp_path / "b" / "train.zip", pairs, "other/")
    assert DiffSeg30kDataset(other).fingerprint() == fp
    stored = tmp_path / "c" / "train.zip"
    stored.parent.mkdir()
    with zipfile.ZipFile(stored, "w", zipfile.ZIP_STORED) as zf:
        for sid, (image, mask) in pairs.items():
            zf.writestr(f"{sid}.image.png", png_bytes(image))
            zf.writestr(f"{sid}.mask.png", png_bytes(mask))
    assert DiffSeg30kDataset(stored).fingerprint() == fp


def test_second_open_of_an_unchanged_zip_reads_no_image_member(tmp_path, pairs, monkeypatch):
    from diffzoo.harness.data.mask_encoding import MAX_READ

    z = write_zip(tmp_path / "train.zip", pairs)
    fp = DiffSeg30kDataset(z).fingerprint()
    from diffzoo.harness.core.fsutil import cache_root

    assert len(list((cache_root() / "fingerprints").glob("*.json"))) == 1
    opened = []
    real = zipfile.ZipFile.open

    def counting_open(self, *args, **kwargs):
        opened.append(args[0])
        return real(self, *args, **kwargs)

    monkeypatch.setattr(zipfile.ZipFile, "open", counting_open)
    assert DiffSeg30kDataset(z).fingerprint() == fp
    sniffed = list(opened)  # the mask encoding is read off a few masks at open (mask_encoding.py)
    assert sniffed and all(name.endswith(".mask.png") for name in sniffed) and len(sniffed) <= MAX_READ
    z.write_bytes(z.read_bytes())  # same bytes, new mtime: read again, same fingerprint
    assert DiffSeg30kDataset(z).fingerprint() == fp and len(opened) == 2 * len(sniffed) + 2 * N


def test_unreadable_zip_member_keeps_the_fingerprint_defined(tmp_path, pairs):
    z = write_zip(tmp_path / "train.zip", pairs)
    with zipfile.ZipFile(z) as zf:
        info = zf.getinfo("train_copy/00000003.image.png")
    data = bytearray(z.read_bytes())
    start = info.header_offset + 30 + len(info.filename)  # the member's compressed bytes
    data[start : start + 20] = bytes(20)
    z.write_bytes(bytes(data))
    ds = DiffSeg30kDataset(z, val_fraction=0.0)
    assert len(ds.fingerprint()) == 16
    with pytest.raises(CorruptSampleError, match="corrupt zip member") as err:
        ds.load("00000003")
    assert err.value.kind == "corrupt"
    ds.load("00000004")


def test_sidecar_files_enter_the_fingerprint(tmp_path, pairs):
    root = write_folder(tmp_path / "ds", pairs)
    base = DiffSeg30kDataset(root).fingerprint()
    names = ["background", "a", "b", "c", "d", "e", "f", "g", "h"]
    (root / "labels.json").write_text(json.dumps({"names": names}))
    with_labels = DiffSeg30kDataset(root).fingerprint()
    assert with_labels != base
    (root / "manifest.jsonl").write_text(json.dumps(SampleMeta("00000001", base="ai").to_dict()) + "\n")
    with_manifest = DiffSeg30kDataset(root).fingerprint()
    assert with_manifest != with_labels
    ids = sorted(pairs)
    (root / "splits.json").write_text(json.dumps({"train": ids[:6], "val": ids[6:]}))
    assert DiffSeg30kDataset(root).fingerprint() != with_manifest


def test_zip_dataset_writes_nothing_beside_the_zip(tmp_path, pairs):
    z = write_zip(tmp_path / "data" / "train.zip", pairs)
    before = sorted((p.name, p.stat().st_mtime_ns) for p in z.parent.iterdir())
    ds = DiffSeg30kDataset(z)
    ds.fingerprint()
    ds.load(ds.ids("train")[0])
    assert sorted((p.name, p.stat().st_mtime_ns) for p in z.parent.iterdir()) == before


# -- extra authentic -------------------------------------------------------------


def test_extra_authentic_goes_to_train_only(tmp_path, pairs):
    z = write_zip(tmp_path / "train.zip", pairs)
    auth = tmp_path / "coco"
    (auth / "sub").mkdir(parents=True)
    rng = np.random.default_rng(1)
    for name in ("000001.jpg", "000002.png", "sub/000003.png"):
        Image.fromarray(rng.integers(0, 256, (10, 14, 3), dtype=np.uint8)).save(auth / name)
    plain = DiffSeg30kDataset(z)
    ds = DiffSeg30kDataset(z, extra_authentic=auth)
    added = sorted(set(ds.ids("train")) - set(plain.ids("train")))
    assert added == ["authentic/000001.jpg", "authentic/000002.png", "authentic/sub/000003.png"]
    assert ds.ids("val") == plain.ids("val")
    s = ds.load("authentic/000002.png")
    assert s.image.shape == (10, 14, 3) and s.label.shape == (10, 14) and not s.label.any()
    assert s.meta.base == "real" and s.meta.turns == () and not s.is_edited
    assert ds.describe()["extra_authentic"] == 3
    assert ds.fingerprint() != plain.fingerprint()
    with pytest.raises(DataError, match="extra_authentic=.*missing does not exist"):
        DiffSeg30kDataset(z, extra_authentic=tmp_path / "missing")
    with pytest.raises(DataError, match="extra authentic folder .*000001.jpg is a file, not a folder"):
        DiffSeg30kDataset(z, extra_authentic=next(auth.glob("*.jpg")))
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(DataError, match="extra authentic folder .*dangling is a broken symbolic link, not a folder"):
        DiffSeg30kDataset(z, extra_authentic=tmp_path / "dangling")


def test_open_dataset_path_finds_diffseg30k(tmp_path, pairs):
    z = write_zip(tmp_path / "train.zip", pairs)
    ds = open_dataset(str(z), val_fraction=0.5)
    assert isinstance(ds, DiffSeg30kDataset)


def test_accented_names_zipped_on_macos_give_the_ids_and_fingerprint_of_the_extracted_folder(tmp_path):
    """macOS stores `café` decomposed (NFD), an extraction elsewhere composed (NFC): the ids and the
    fingerprint were another's; two names reading as one are refused."""
    pairs = {unicodedata.normalize("NFD", f"café{i}"): p for i, p in enumerate(make_pairs(4).values())}
    zipped = DiffSeg30kDataset(write_zip(tmp_path / "mac" / "train.zip", pairs))
    folder = DiffSeg30kDataset(write_folder(tmp_path / "x" / "ds", {unicodedata.normalize("NFC", k): v
                                                                     for k, v in pairs.items()}))
    nfd_folder = DiffSeg30kDataset(write_folder(tmp_path / "nfd" / "ds", pairs))
    assert zipped.ids("train") == folder.ids("train") == nfd_folder.ids("train")
    assert unicodedata.normalize("NFC", "café0") in zipped.ids("train") + zipped.ids("val")
    assert zipped.fingerprint() == folder.fingerprint() == nfd_folder.fingerprint()
    assert np.array_equal(nfd_folder.load("café1").label, folder.load("café1").label)
    write_folder(tmp_path / "x" / "ds", {unicodedata.normalize("NFD", "café0"): pairs[next(iter(pairs))]})
    with pytest.raises(DataError) as err:
        DiffSeg30kDataset(tmp_path / "x" / "ds")
    nfc, nfd = (unicodedata.normalize(form, "train_copy/café0.image.png") for form in ("NFC", "NFD"))
    assert str(err.value) == (f"{tmp_path / 'x' / 'ds'}: {nfc} is stored twice, as {nfd!r} and {nfc!r} (another "
                              "folder separator or Unicode form); keep one of them")


def test_a_zip_with_windows_separators_gives_the_same_ids_and_fingerprint(tmp_path):
    """`train_copy\\00000001.image.png` gave the id `train_copy\\00000001` and another fingerprint."""
    pairs = make_pairs()
    windows = DiffSeg30kDataset(write_zip(tmp_path / "w" / "train.zip", pairs, prefix="train_copy\\"))
    native = DiffSeg30kDataset(write_zip(tmp_path / "p" / "train.zip", pairs))
    assert windows.ids("train") == native.ids("train") and windows.fingerprint() == native.fingerprint()


def test_a_zip_of_encrypted_members_is_refused_on_opening(tmp_path):
    """A password-protected zip opened, then every sample was skipped as corrupt ("password required")."""
    z = write_zip(tmp_path / "train.zip", make_pairs(2))
    data = bytearray(z.read_bytes())
    for header, flags in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):  # the encrypted bit, as a zip tool sets it
        at = data.find(header)
        while at >= 0:
            data[at + flags] |= 1
            at = data.find(header, at + 4)
    z.write_bytes(bytes(data))
    with pytest.raises(DataError) as err:
        open_dataset(str(z))
    assert str(err.value) == (f"{z}: 4 member(s) are encrypted (e.g. 'train_copy/00000001.image.png'); diffzoo "
                              "reads no password: extract the archive with its password and give the folder")


def test_a_zip_member_stored_twice_under_one_name_is_not_said_to_differ_in_form(tmp_path):
    """A member appended again (``zip -u`` on a copy, two archives joined) was "stored twice, as 'X' and 'X'
    (another folder separator or Unicode form)": the same name twice, no other form."""
    z = write_zip(tmp_path / "train.zip", make_pairs(2))
    with pytest.warns(UserWarning, match="Duplicate name"), zipfile.ZipFile(z, "a") as zf:
        zf.writestr("train_copy/00000001.mask.png", zf.read("train_copy/00000001.mask.png"))
    with pytest.raises(DataError) as err:
        open_dataset(str(z))
    assert str(err.value) == f"{z}: train_copy/00000001.mask.png is stored twice, under that one name; keep one of them"
