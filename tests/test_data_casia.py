"""CASIA v1 and v2 in their real layouts (names, folders, quirks), and which
adapter's sniff recognises which layout."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from diffzoo.harness.core.errors import CorruptSampleError, DataError
from diffzoo.harness.core.types import BINARY
from diffzoo.harness.data import TpGtDataset
from diffzoo.harness.data.adapters.casia import Casia1Dataset, Casia2Dataset
from diffzoo.harness.data.adapters.cocoglide import CocoGlideDataset

from helpers.data import V1_CM, V1_NO_GT, V1_SP, V2_COPY, V2_SPLICE, make_casia1, make_casia2, make_cocoglide, make_tpgt
from helpers.data import casia_gt as gt
from helpers.data import casia_image as image
from helpers.images import save_image as save


def edited_rows(label: np.ndarray) -> tuple[int, int]:
    rows = np.flatnonzero(label.any(axis=1))
    return int(rows.min()), int(rows.max())


# -- CASIA v2 ---------------------------------------------------------------


def test_casia2_reads(tmp_path):
    root = make_casia2(tmp_path / "CASIA2.0_revised")
    ds = Casia2Dataset(root)
    assert ds.name == "casia2" and ds.label_space == BINARY and ds.splits() == ["test"]
    assert ds.ids("test") == [
        "Au/Au_ani_00001.jpg",
        "Au/Au_arc_00002.bmp",
        f"Tp/{V2_SPLICE}.jpg",
        f"Tp/{V2_COPY}.tif",
    ]
    splice, copy = ds.load(f"Tp/{V2_SPLICE}.jpg"), ds.load(f"Tp/{V2_COPY}.tif")
    assert edited_rows(splice.label) == (0, 9) and edited_rows(copy.label) == (20, 29)
    assert splice.label.sum() == 10 * 15  # the grey edge row stays background
    assert [t.edit_type for t in splice.meta.turns] == ["splicing"]
    assert [t.edit_type for t in copy.meta.turns] == ["copy_move"]
    assert splice.meta.base == "real" and splice.meta.turns[0].editor == "unknown"
    bmp = ds.load("Au/Au_arc_00002.bmp")
    assert bmp.image.shape == (32, 32, 3) and not bmp.label.any() and bmp.meta.turns == ()
    d = ds.describe()
    assert d["authentic"] == 2 and d["edit_types"] == {"copy_move": 1, "splicing": 1}


@pytest.mark.parametrize("gt_name", ["Gt", "groundtruth", "GT"])
def test_casia2_other_ground_truth_folders(tmp_path, gt_name):
    ds = Casia2Dataset(make_casia2(tmp_path / "CASIA2", gt_name))
    assert len(ds.ids("test")) == 4 and ds.load(f"Tp/{V2_COPY}.tif").label.any()


def test_casia2_ground_truth_beside_or_given(tmp_path):
    root = make_casia2(tmp_path / "CASIA2")
    (root / "CASIA 2 Groundtruth").rename(tmp_path / "CASIA 2 Groundtruth")
    assert Casia2Dataset(root).gt_root == tmp_path / "CASIA 2 Groundtruth"
    (tmp_path / "CASIA 2 Groundtruth").rename(tmp_path / "masks")
    with pytest.raises(DataError, match=r"no ground-truth folder; looked for .*CASIA 2 Groundtruth.*gt_dir="):
        Casia2Dataset(root)
    assert len(Casia2Dataset(root, gt_dir=tmp_path / "masks").ids("test")) == 4
    assert len(Casia2Dataset(root, gt_dir="../masks").ids("test")) == 4
    with pytest.raises(DataError, match=r"gt_dir=nope does not exist \(looked for .*nope or .*CASIA2/nope\)"):
        Casia2Dataset(root, gt_dir="nope")


def test_casia_gt_dir_is_read_from_the_current_folder_too(tmp_path, monkeypatch):
    """gt_dir= was read from the dataset folder only, where split_file= and metadata= are read from the current one."""
    root = make_casia2(tmp_path / "CASIA2")
    (root / "CASIA 2 Groundtruth").rename(tmp_path / "masks")
    monkeypatch.chdir(tmp_path)
    ds = Casia2Dataset(root, gt_dir="masks")
    assert len(ds.ids("test")) == 4 and ds.gt_root.absolute() == tmp_path / "masks"
    with pytest.raises(DataError) as err:
        Casia2Dataset(root, gt_dir="CASIA2/Tp/" + f"{V2_COPY}.tif")
    assert str(err.value) == (f"gt_dir=CASIA2/Tp/{V2_COPY}.tif: CASIA2/Tp/{V2_COPY}.tif is not a folder; "
                              "give the folder holding the *_gt masks")


def test_casia2_tp_without_mask(tmp_path, caplog):
    root = make_casia2(tmp_path / "CASIA2")
    save(root / "Tp" / "Tp_D_NNN_M_N_arc00010_nat00002_00230.tif", image())
    with pytest.raises(
        DataError, match=r"1 Tp image\(s\) have no \*_gt mask in .*\(e\.g\. Tp/Tp_D_NNN_M_N_arc00010_nat00002_00230\.tif\); `--dataset-option skip_unpaired=true`"
    ):
        Casia2Dataset(root)
    with caplog.at_level("WARNING"):
        ds = Casia2Dataset(root, skip_unpaired=True)
    assert "skipping them" in caplog.text and len(ds.ids("test")) == 4


def test_casia2_mask_size_mismatch_is_a_corrupt_sample(tmp_path):
    root = make_casia2(tmp_path / "CASIA2")
    save(root / "CASIA 2 Groundtruth" / f"{V2_COPY}_gt.png", gt(48, 40))  # rotated
    ds = Casia2Dataset(root)
    with pytest.raises(CorruptSampleError) as err:
        ds.load(f"Tp/{V2_COPY}.tif")
    assert str(err.value).endswith(
        f"{V2_COPY}_gt.png: mask size 40x48 differs from image size 48x40 (W x H); it is the image's size turned a "
        "quarter: a mask drawn on the view an EXIF orientation tag shows? diffzoo reads the stored pixels "
        "(docs/datasets.md, EXIF orientation); masks must match their image")
    save(root / "CASIA 2 Groundtruth" / f"{V2_COPY}_gt.png", gt(40, 40))  # not turned: no word of EXIF
    with pytest.raises(CorruptSampleError, match=r"mask size 40x40 differs from image size 48x40 \(W x H\); masks must"):
        ds.load(f"Tp/{V2_COPY}.tif")


def test_casia2_splits_and_fingerprint(tmp_path):
    root = make_casia2(tmp_path / "a" / "CASIA2")
    ds = Casia2Dataset(root, val_fraction=0.5, split_seed=1)
    assert set(ds.splits()) <= {"train", "val"}
    assert sorted(i for s in ds.splits() for i in ds.ids(s)) == Casia2Dataset(root).ids("test")
    assert Casia2Dataset(root, split="train").splits() == ["train"]
    fp = Casia2Dataset(root).fingerprint()
    shutil.copytree(root, tmp_path / "b" / "CASIA2")
    assert Casia2Dataset(tmp_path / "b" / "CASIA2").fingerprint() == fp
    save(tmp_path / "b" / "CASIA2" / "CASIA 2 Groundtruth" / f"{V2_COPY}_gt.png", gt(rows=slice(1, 30)))
    assert Casia2Dataset(tmp_path / "b" / "CASIA2").fingerprint() != fp


def test_casia2_refusals(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match=r"expected Tp/ \(tampered images\), Au/ .* 'CASIA 2 Groundtruth/'"):
        Casia2Dataset(tmp_path / "empty")
    root = make_casia2(tmp_path / "CASIA2")
    save(root / "CASIA 2 Groundtruth" / "extra" / f"{V2_COPY}_gt.png", gt())
    with pytest.raises(DataError, match=rf"two masks for {V2_COPY}_gt: {V2_COPY}_gt\.png and extra/{V2_COPY}_gt\.png"):
        Casia2Dataset(root)


# -- CASIA v1 ---------------------------------------------------------------


def test_casia1_reads(tmp_path):
    root = make_casia1(tmp_path)
    ds = Casia1Dataset(root)
    assert ds.name == "casia1" and ds.gt_root == tmp_path / "CASIA 1.0 groundtruth"
    assert ds.ids("test") == ["Au/Au/Au_ani_0001.jpg", f"CM/{V1_CM}.jpg", f"Sp/{V1_SP}.jpg"]
    cm, sp = ds.load(f"CM/{V1_CM}.jpg"), ds.load(f"Sp/{V1_SP}.jpg")
    assert edited_rows(cm.label) == (0, 9) and edited_rows(sp.label) == (20, 29)
    assert cm.meta.turns[0].edit_type == "copy_move" and sp.meta.turns[0].edit_type == "splicing"
    au = ds.load("Au/Au/Au_ani_0001.jpg")
    assert au.image.shape == (32, 40, 3) and not au.label.any() and au.meta.base == "real"


def test_casia1_layout_variants(tmp_path):
    # Tp/{CM,Sp} directly in the folder, masks inside it, flat (TruFor's groundtruth/)
    root = tmp_path / "CASIA1"
    save(root / "Au" / "Au_ani_0001.jpg", image())
    save(root / "Tp" / "CM" / f"{V1_CM}.jpg", image())
    save(root / "Tp" / "Sp" / f"{V1_SP}.jpg", image())
    save(root / "groundtruth" / f"{V1_CM}_gt.png", gt())
    save(root / "groundtruth" / f"{V1_SP}_gt.png", gt())
    assert Casia1Dataset.sniff(root)
    ds = Casia1Dataset(root)
    assert ds.ids("test") == ["Au/Au_ani_0001.jpg", f"CM/{V1_CM}.jpg", f"Sp/{V1_SP}.jpg"]
    # gt_dir points anywhere; no ground truth at all is a clear error
    moved = shutil.move(root / "groundtruth", tmp_path / "elsewhere")
    with pytest.raises(DataError, match=r"no ground-truth folder; looked for .*CASIA 1\.0 groundtruth.*gt_dir="):
        Casia1Dataset(root)
    assert len(Casia1Dataset(root, gt_dir=moved).ids("test")) == 3


def test_casia1_known_unpaired_image(tmp_path):
    root = make_casia1(tmp_path)
    save(root / "Modified Tp" / "Tp" / "Sp" / f"{V1_NO_GT}.jpg", image())
    with pytest.raises(DataError, match=rf"1 tampered image\(s\) have no \*_gt mask .*\(e\.g\. Sp/{V1_NO_GT}\.jpg\)"):
        Casia1Dataset(root)
    assert f"Sp/{V1_NO_GT}.jpg" not in Casia1Dataset(root, skip_unpaired=True).ids("test")


def test_casia1_refusals(tmp_path):
    root = tmp_path / "CASIA 1.0 dataset"
    save(root / "Au" / "Au_ani_0001.jpg", image())
    with pytest.raises(DataError, match=r"expected the tampered images in Modified Tp/Tp/CM and Modified Tp/Tp/Sp"):
        Casia1Dataset(root)
    make_casia1(tmp_path)
    save(tmp_path / "CASIA 1.0 groundtruth" / "Sp" / f"{V1_CM}_gt.png", gt())
    with pytest.raises(DataError, match=rf"two masks for {V1_CM}_gt: CM/{V1_CM}_gt\.png and Sp/{V1_CM}_gt\.png"):
        Casia1Dataset(root)


# -- which adapter recognises which layout -----------------------------------


def test_sniffs_accept_their_own_layout_only(tmp_path, diffseg_folder):
    layouts = {
        "casia1": make_casia1(tmp_path / "v1"),
        "casia2": make_casia2(tmp_path / "v2" / "CASIA2.0"),
        "casia2-Gt": make_casia2(tmp_path / "v2gt" / "CASIA2.0", "Gt"),
        "cocoglide": make_cocoglide(tmp_path / "CocoGlide"),
        "tpgt": make_tpgt(tmp_path / "plain"),
        "diffseg30k": diffseg_folder,
        "missing": tmp_path / "missing",
    }
    accepts = {
        Casia1Dataset: {"casia1"},
        Casia2Dataset: {"casia2", "casia2-Gt"},
        CocoGlideDataset: {"cocoglide"},
        # a CASIA v2 re-pack with Gt/ also fits tpgt; the registry asks casia2 first (name order)
        TpGtDataset: {"tpgt", "casia2-Gt"},
    }
    for adapter, expected in accepts.items():
        got = {name for name, path in layouts.items() if adapter.sniff(path)}
        assert got == expected, adapter.__name__
    # and the generic adapter still reads a plain Tp/ + Gt/ folder the CASIA sniffs refuse
    assert len(TpGtDataset(layouts["tpgt"], split="test").ids("test")) == 4


def test_an_au_that_is_a_file_is_named_as_such(tmp_path, caplog):
    """``Au`` a file: the warning said "no Au/ folder", as for none at all."""
    root = make_casia2(tmp_path / "CASIA2")
    shutil.rmtree(root / "Au")
    (root / "Au").write_bytes(b"")
    with caplog.at_level("WARNING"):
        assert Casia2Dataset(root).describe()["authentic"] == 0
    assert f"{root}: Au is a file where a folder is expected; the dataset holds tampered images only" in caplog.messages


def test_a_tp_folder_that_is_a_link_loop_is_named_in_the_one_line(tmp_path):
    """``Tp -> Tp``: the line said only that no adapter recognises the layout."""
    from diffzoo import open_dataset

    root = make_casia2(tmp_path / "c2")
    shutil.rmtree(root / "Tp")
    (root / "Tp").symlink_to("Tp")
    with pytest.raises(DataError) as err:
        open_dataset(str(root))
    assert str(err.value).startswith(f"{root}: no dataset adapter recognises this layout (Tp is a symbolic link loop "
                                     "where brgen, casia1, casia2, tpgt expect a folder). Adapters: ")
