"""Columbia, COVERAGE, NIST16 and IMD2020 in their download layouts (names, folders, colour and
polarity conventions of the masks), and which registered adapter's sniff claims which layout."""

from __future__ import annotations

import json
import logging
import os
import shutil
import unicodedata
from pathlib import Path

import numpy as np
import pytest

from diffzoo.harness.core.errors import ConfigError, CorruptSampleError, DataError
from diffzoo.harness.core.fsutil import FileRefused
from diffzoo.harness.core.plugins import get_registry
from diffzoo.harness.core.types import BINARY
from diffzoo.harness.data.adapters.classic import ColumbiaDataset, CoverageDataset, Imd2020Dataset, Nist16Dataset
from diffzoo.harness.run.factories import open_dataset

from helpers.classic import AUTHENTIC, SPLICED, S, edgemask, make_columbia, photo, save_jpeg
from helpers.cli import cli
from helpers.data import (
    COCOGLIDE_ROWS,
    accented_copies,
    assert_read_alike,
    make_casia1,
    make_casia2,
    make_cocoglide,
    make_tpgt,
)
from helpers.images import save_image as save


def grey_mask(rows: slice, *, on: int = 255, off: int = 0) -> np.ndarray:
    m = np.full((S, S), off, np.uint8)
    m[rows] = on
    return m


def make_coverage(root: Path) -> Path:
    """``image/<N>.tif``, ``image/<N>t.tif``, ``mask/<N>{forged,copy,paste}.tif``; image N's
    forged region is rows 4N..4N+7."""
    for n in (1, 2):
        save(root / "image" / f"{n}.tif", photo(n))
        save(root / "image" / f"{n}t.tif", photo(20 + n))
        save(root / "mask" / f"{n}forged.tif", grey_mask(slice(4 * n, 4 * n + 8)))
        save(root / "mask" / f"{n}copy.tif", grey_mask(slice(0, 2)))
        save(root / "mask" / f"{n}paste.tif", grey_mask(slice(30, 32)))
    (root / "readme.txt").write_text("COVERAGE\n")
    return root


NIST_HEADER = ("TaskID|ProbeFileID|ProbeFileName|ProbeMaskFileName|DonorFileID|DonorFileName|DonorMaskFileName|"
               "IsTarget|ProbePostProcessed|DonorPostProcessed|ManipulationQuality|IsManipulationTypeRemoval|"
               "IsManipulationTypeSplice|IsManipulationTypeCopyClone|Collection|BaseFileName|Lighting|IsControl|"
               "CorrespondingControlFileName|SemanticConsistency")


def nist_row(probe: str, mask: str, target: str, kinds: str = "N|N|N") -> str:
    return f"manipulation|{probe}|probe/{probe}.jpg|{mask}||||{target}|none|||{kinds}|Nimble-SCI|||N||"


def make_nist16(root: Path) -> Path:
    """``probe/``, ``world/``, ``reference/{manipulation,splice}/``: NC2016_0001 has its region
    removed in rows 0..7, NC2016_0003 two spliced regions (rows 8..11 and 20..23, one mask per
    donor in the splice reference); NC2016_0002 is a non-target.  Masks are white with the
    manipulated pixels black, as NIST draws them."""
    for i, probe in enumerate(("NC2016_0001", "NC2016_0002", "NC2016_0003")):
        save_jpeg(root / "probe" / f"{probe}.jpg", photo(30 + i))
    save_jpeg(root / "world" / "NC2016_9999.jpg", photo(39))
    manip, splice = root / "reference" / "manipulation", root / "reference" / "splice"
    save(manip / "mask" / "NC2016_5001.png", grey_mask(slice(0, 8), on=0, off=255))
    both = grey_mask(slice(8, 12), on=0, off=255)
    both[20:24] = 0
    save(manip / "mask" / "NC2016_5003.png", both)
    save(splice / "mask" / "NC2016_6001.png", grey_mask(slice(8, 12), on=0, off=255))
    save(splice / "mask" / "NC2016_6002.png", grey_mask(slice(20, 24), on=0, off=255))
    (manip / "NC2016-manipulation-ref.csv").write_text("\n".join([
        NIST_HEADER,
        nist_row("NC2016_0001", "reference/manipulation/mask/NC2016_5001.png", "Y", "Y|N|N"),
        nist_row("NC2016_0002", "", "N"),
        nist_row("NC2016_0003", "reference/manipulation/mask/NC2016_5003.png", "Y", "N|Y|N"),
    ]) + "\n")
    (splice / "NC2016-splice-ref.csv").write_text("\n".join([
        NIST_HEADER.replace("manipulation", "splice"),
        nist_row("NC2016_0003", "reference/splice/mask/NC2016_6001.png", "Y", "N|Y|N"),
        nist_row("NC2016_0003", "reference/splice/mask/NC2016_6002.png", "Y", "N|Y|N"),
        nist_row("NC2016_0002", "", "N"),
    ]) + "\n")
    (root / "indexes").mkdir()
    return root


def make_imd2020(root: Path) -> Path:
    """Two source folders (one per photo) and CAT-Net's ``0jpg/`` of re-encoded copies."""
    folder = root / "1a1ogs"
    save_jpeg(folder / "1a1ogs_orig.jpg", photo(40))
    save_jpeg(folder / "c8tt7fg_0.jpg", photo(41))
    save(folder / "c8tt7fg_0_mask.png", grey_mask(slice(0, 6)))
    save(folder / "c8tt7fh_0.png", photo(42))
    save(folder / "c8tt7fh_0_mask.png", grey_mask(slice(10, 16)))
    save_jpeg(root / "z5" / "00022_orig.jpg", photo(43))
    save_jpeg(root / "z5" / "00022_fake.jpg", photo(44))
    save(root / "z5" / "00022_fake_mask.png", grey_mask(slice(20, 32)))
    save_jpeg(root / "0jpg" / "c8tt7fh_0.jpg", photo(42))
    return root


def edited_rows(label: np.ndarray) -> list[int]:
    return [int(r) for r in np.flatnonzero(label.any(axis=1))]


# -- Columbia -----------------------------------------------------------------------------


@pytest.mark.parametrize("nested", [False, True])
def test_columbia_reads_the_green_region_of_the_edge_mask(tmp_path, nested, caplog):
    root = make_columbia(tmp_path / "Columbia Uncompressed Image Splicing Detection", nested)
    with caplog.at_level(logging.WARNING):
        ds = ColumbiaDataset(root)
    assert ds.name == "columbia" and ds.label_space == BINARY and ds.splits() == ["test"]
    assert ds.ids("test") == [f"4cam_auth/{s}.tif" for s in AUTHENTIC] + [f"4cam_splc/{s}.tif" for s in SPLICED]
    spliced = ds.load(f"4cam_splc/{SPLICED[0]}.tif")
    assert spliced.image.shape == (S, S, 3)
    # green columns 16..31 are the spliced region; the blue single-edge band over rows 0..7 is not
    expected = np.zeros((S, S), np.uint8)
    expected[8:, 16:] = 1
    assert np.array_equal(spliced.label, expected)
    assert spliced.meta.base == "real" and [(t.editor, t.edit_type) for t in spliced.meta.turns] == [
        ("unknown", "splicing")]
    for stem in AUTHENTIC:
        real = ds.load(f"4cam_auth/{stem}.tif")
        assert not real.label.any() and real.meta.turns == ()
    d = ds.describe()
    assert d["authentic"] == 2 and d["edit_types"] == {"splicing": 2}
    assert d["expected"] == {"tampered": 180, "authentic": 183} and "Columbia_list.txt" in d["protocols"]["test"]
    assert "tampered 2 (published: 180)" in caplog.text and "authentic 2 (published: 183)" in caplog.text
    assert len(ColumbiaDataset(root, authentic=False).ids("test")) == 2


def test_columbia_grey_edge_mask_is_skipped_saying_why_never_read_as_unspliced(tmp_path):
    """A binarised edge mask (white = spliced) has no green: no pixel reads as spliced, so the sample
    is skipped (``mask-empty``), its reason saying why."""
    root = make_columbia(tmp_path / "columbia")
    grey = np.zeros((S, S, 3), np.uint8)
    grey[8:, 16:] = 255
    mask = root / "4cam_splc" / "edgemask" / f"{SPLICED[0]}_edgemask.jpg"
    save_jpeg(mask, grey)
    with pytest.raises(CorruptSampleError) as err:
        ColumbiaDataset(root).load(f"4cam_splc/{SPLICED[0]}.tif")
    assert err.value.kind == "mask-empty"
    assert str(err.value) == (f"sample 4cam_splc/{SPLICED[0]}.tif: {mask}: the mask marks no pixel as edited, but the "
                              "data lists the image as edited; read as it is, it would be labelled authentic (no "
                              "pixel is green: Columbia's edge masks are colour maps whose green region is the "
                              "spliced one; is it a grey or binarised copy? Read such masks as a Tp/ + Gt/ folder or "
                              "a JSON list (docs/datasets.md, Columbia))")


def test_columbia_misformed_copies(tmp_path):
    root = make_columbia(tmp_path / "columbia")
    (root / "4cam_splc" / "edgemask" / f"{SPLICED[1]}_edgemask.jpg").unlink()
    with pytest.raises(DataError, match=rf"1 spliced image\(s\) have no <stem>_edgemask mask .*4cam_splc/{SPLICED[1]}"
                                        r"\.tif\); `--dataset-option skip_unpaired=true`"):
        ColumbiaDataset(root)
    assert f"4cam_splc/{SPLICED[1]}.tif" not in ColumbiaDataset(root, skip_unpaired=True).ids("test")
    save_jpeg(root / "4cam_splc" / "edgemask" / f"{SPLICED[1]}_edgemask.jpg", edgemask()[:16])
    with pytest.raises(CorruptSampleError, match=r"mask size 32x16 differs from image size 32x32") as exc:
        ColumbiaDataset(root).load(f"4cam_splc/{SPLICED[1]}.tif")
    assert exc.value.kind == "mask-size"
    (root / "4cam_splc" / "edgemask" / f"{SPLICED[1]}_edgemask.jpg").write_bytes(b"\xff\xd8 not a jpeg")
    with pytest.raises(CorruptSampleError) as exc:
        ColumbiaDataset(root).load(f"4cam_splc/{SPLICED[1]}.tif")
    assert exc.value.kind == "corrupt"
    shutil.rmtree(root / "4cam_splc" / "edgemask")
    with pytest.raises(DataError, match=r"no edgemask/ folder in .*4cam_splc"):
        ColumbiaDataset(root)


# -- COVERAGE -----------------------------------------------------------------------------


def test_coverage_reads(tmp_path, caplog):
    ds = CoverageDataset(make_coverage(tmp_path / "COVERAGE"))
    assert ds.name == "coverage" and ds.splits() == ["test"]
    assert ds.ids("test") == ["image/1.tif", "image/1t.tif", "image/2.tif", "image/2t.tif"]
    for n in (1, 2):
        forged = ds.load(f"image/{n}t.tif")
        assert edited_rows(forged.label) == list(range(4 * n, 4 * n + 8))  # the forged mask, not copy/paste
        assert forged.label[4 * n].all() and [t.edit_type for t in forged.meta.turns] == ["copy_move"]
        assert not ds.load(f"image/{n}.tif").label.any()
    assert ds.describe()["edit_types"] == {"copy_move": 2}


def test_coverage_missing_mask(tmp_path):
    root = make_coverage(tmp_path / "COVERAGE")
    (root / "mask" / "2forged.tif").unlink()
    with pytest.raises(DataError, match=r"1 forged image\(s\) have no <N>forged mask .*\(e\.g\. image/2t\.tif\)"):
        CoverageDataset(root)
    assert CoverageDataset(root, skip_unpaired=True).ids("test") == ["image/1.tif", "image/1t.tif", "image/2.tif"]


def test_columbia_and_coverage_refuse_two_masks_for_one_image_as_imd2020_does(tmp_path):
    columbia = make_columbia(tmp_path / "columbia")
    edge = columbia / "4cam_splc" / "edgemask"
    save(edge / f"{SPLICED[1]}_edgemask.png", edgemask())
    with pytest.raises(DataError) as err:
        ColumbiaDataset(columbia)
    assert str(err.value) == (f"{edge}: two masks for {SPLICED[1]}: {SPLICED[1]}_edgemask.jpg and "
                              f"{SPLICED[1]}_edgemask.png")
    coverage = make_coverage(tmp_path / "COVERAGE")
    save(coverage / "mask" / "02forged.png", grey_mask(slice(0, 2)))  # <N> read as a number: 02 is image 2
    with pytest.raises(DataError) as err:
        CoverageDataset(coverage)
    assert str(err.value) == f"{coverage / 'mask'}: two masks for 2: 02forged.png and 2forged.tif"


# -- NIST16 -------------------------------------------------------------------------------


def test_nist16_black_is_manipulated(tmp_path):
    root = make_nist16(tmp_path / "NC2016_Test0613")
    ds = Nist16Dataset(root)
    assert ds.name == "nist16" and ds.task == "manipulation"
    assert ds.ids("test") == ["probe/NC2016_0001.jpg", "probe/NC2016_0002.jpg", "probe/NC2016_0003.jpg"]
    removed = ds.load("probe/NC2016_0001.jpg")
    assert edited_rows(removed.label) == list(range(8)) and removed.label[:8].all()
    assert [t.edit_type for t in removed.meta.turns] == ["removal"]
    spliced = ds.load("probe/NC2016_0003.jpg")
    assert edited_rows(spliced.label) == [*range(8, 12), *range(20, 24)]
    assert [t.edit_type for t in spliced.meta.turns] == ["splicing"]
    assert not ds.load("probe/NC2016_0002.jpg").label.any()
    d = ds.describe()
    assert d["task"] == "manipulation" and d["authentic"] == 1 and d["expected"] == {"tampered": 564}
    assert Nist16Dataset(root, authentic=False).ids("test") == ["probe/NC2016_0001.jpg", "probe/NC2016_0003.jpg"]


@pytest.mark.parametrize(("make", "kind"), [(os.mkfifo, "a FIFO (named pipe)"),
                                            (lambda p: p.symlink_to(p.parent / "gone.csv"), "a broken symbolic link")])
def test_a_nist16_reference_file_that_is_no_regular_file_is_named_for_what_it_is(tmp_path, make, kind):
    """Never "no such reference file" for a file that is there (nor a read blocked on a FIFO)."""
    root = make_nist16(tmp_path / "NC2016_Test0613")
    ref = root / "reference" / "manipulation" / "NC2016-manipulation-ref.csv"
    ref.unlink()
    make(ref)
    with pytest.raises(FileRefused) as err:
        open_dataset(root)
    assert str(err.value) == f"{ref} is {kind}, not a regular file; diffzoo reads only regular files"


def test_nist16_splice_task_unites_one_probes_masks(tmp_path):
    root = make_nist16(tmp_path / "NC2016_Test0613")
    by_option = Nist16Dataset(root, task="splice")
    by_file = Nist16Dataset(root / "reference" / "splice" / "NC2016-splice-ref.csv")
    for ds in (by_option, by_file):
        assert ds.task == "splice" and ds.ids("test") == ["probe/NC2016_0002.jpg", "probe/NC2016_0003.jpg"]
        assert edited_rows(ds.load("probe/NC2016_0003.jpg").label) == [*range(8, 12), *range(20, 24)]
    assert by_option.fingerprint() == by_file.fingerprint() != Nist16Dataset(root).fingerprint()


def test_nist16_two_probes_may_share_one_mask(tmp_path):
    """NIST's reference names one mask for a probe and its post-processed copy (NC2016_0128 and its
    rescaled NC2016_8714 share NC2016_3942.png): both are read, never refused as two images of one mask."""
    root = make_nist16(tmp_path / "NC2016_Test0613")
    save_jpeg(root / "probe" / "NC2016_0004.jpg", photo(40))
    ref = root / "reference" / "manipulation" / "NC2016-manipulation-ref.csv"
    with open(ref, "a") as f:
        f.write(nist_row("NC2016_0004", "reference/manipulation/mask/NC2016_5001.png", "Y", "Y|N|N") + "\n")
    ds = Nist16Dataset(root)
    for probe in ("probe/NC2016_0001.jpg", "probe/NC2016_0004.jpg"):
        assert edited_rows(ds.load(probe).label) == list(range(8))


def test_nist16_reference_file_named_from_its_own_folder(tmp_path, monkeypatch):
    """`data info NC2016-manipulation-ref.csv` in reference/manipulation/: "no dataset adapter recognises" it."""
    root = make_nist16(tmp_path / "NC2016_Test0613")
    monkeypatch.chdir(root / "reference")
    ds = open_dataset("manipulation/NC2016-manipulation-ref.csv")
    assert isinstance(ds, Nist16Dataset) and Path(ds.path) == root
    assert ds.ids("test") == ["probe/NC2016_0001.jpg", "probe/NC2016_0002.jpg", "probe/NC2016_0003.jpg"]


def test_nist16_misformed_references(tmp_path):
    root = make_nist16(tmp_path / "NC2016_Test0613")
    ref = root / "reference" / "manipulation" / "NC2016-manipulation-ref.csv"
    text = ref.read_text()
    ref.write_text(text.replace("|", ","))
    with pytest.raises(DataError, match=r"missing column\(s\) ProbeFileName, ProbeMaskFileName, IsTarget; "
                                        r"expected a '\|'-separated NIST reference"):
        Nist16Dataset(root)
    ref.write_text(text.replace("reference/manipulation/mask/NC2016_5001.png", ""))
    with pytest.raises(DataError, match=r"line 2: ProbeMaskFileName \(IsTarget=Y\): empty cell"):
        Nist16Dataset(root)
    ref.write_text(text.replace("mask/NC2016_5001.png", "../../outside.png"))
    with pytest.raises(DataError, match=r"leaves the dataset folder"):
        Nist16Dataset(root)
    # an empty IsTarget cell was read as N: the manipulated probe scored as authentic, unsaid
    first = nist_row("NC2016_0001", "reference/manipulation/mask/NC2016_5001.png", "Y", "Y|N|N")
    ref.write_text(text.replace(first, first.replace("|Y|none|", "||none|")))
    with pytest.raises(DataError) as err:
        Nist16Dataset(root)
    assert str(err.value) == (f"{ref}: line 2: IsTarget is ''; expected Y (a manipulated probe, scored against its "
                              "mask) or N (an authentic one)")
    ref.write_text(text)
    (root / "reference" / "manipulation" / "mask" / "NC2016_5001.png").unlink()
    with pytest.raises(DataError, match=r"1 file\(s\) named in NC2016-manipulation-ref\.csv do not exist .*"
                                        r"line 2: reference/manipulation/mask/NC2016_5001\.png"):
        Nist16Dataset(root)
    assert Nist16Dataset(root, skip_unpaired=True).ids("test") == ["probe/NC2016_0002.jpg", "probe/NC2016_0003.jpg"]
    with pytest.raises(ConfigError) as err:  # a choice option: exit 2, worded as every adapter's
        Nist16Dataset(root, task="copymove")
    assert str(err.value) == "NIST16 task='copymove' is not one of manipulation, splice, removal"
    with pytest.raises(DataError, match=r"NC2016-removal-ref\.csv: no such reference file"):
        Nist16Dataset(root, task="removal")


# -- IMD2020 ------------------------------------------------------------------------------


def test_imd2020_reads(tmp_path):
    ds = Imd2020Dataset(make_imd2020(tmp_path / "IMD2020"))
    assert ds.name == "imd2020"
    assert ds.ids("test") == ["1a1ogs/1a1ogs_orig.jpg", "1a1ogs/c8tt7fg_0.jpg", "1a1ogs/c8tt7fh_0.png",
                              "z5/00022_fake.jpg", "z5/00022_orig.jpg"]  # 0jpg/ holds no original, no mask
    assert edited_rows(ds.load("1a1ogs/c8tt7fg_0.jpg").label) == list(range(6))
    assert edited_rows(ds.load("1a1ogs/c8tt7fh_0.png").label) == list(range(10, 16))
    assert edited_rows(ds.load("z5/00022_fake.jpg").label) == list(range(20, 32))
    assert not ds.load("z5/00022_orig.jpg").label.any()
    assert ds.describe()["authentic"] == 2 and "IMD_valid_list.txt 141" in ds.describe()["protocols"]["test"]
    assert len(Imd2020Dataset(tmp_path / "IMD2020", authentic=False).ids("test")) == 3


def test_imd2020_missing_mask(tmp_path):
    root = make_imd2020(tmp_path / "IMD2020")
    (root / "z5" / "00022_fake_mask.png").unlink()
    with pytest.raises(DataError, match=r"1 tampered image\(s\) have no <stem>_mask file .*z5/00022_fake\.jpg"):
        Imd2020Dataset(root)
    assert "z5/00022_fake.jpg" not in Imd2020Dataset(root, skip_unpaired=True).ids("test")


def test_imd2020_a_mask_without_its_image_is_logged(tmp_path, caplog):
    """The four sets' rule (docs): a mask that matches no image is logged; IMD2020's said nothing."""
    root = make_imd2020(tmp_path / "IMD2020")
    (root / "z5" / "00022_fake.jpg").unlink()
    with caplog.at_level(logging.INFO):
        assert "z5/00022_fake.jpg" not in Imd2020Dataset(root).ids("test")
    assert f"{root}: 1 mask(s) match no tampered image (e.g. z5/00022_fake_mask.png)" in caplog.messages


@pytest.mark.parametrize("name", ["imd2020", "columbia"])
def test_an_image_of_a_suffix_never_read_beside_its_mask_is_named_in_a_warning(tmp_path, name, caplog):
    """IMD2020's src/t2.jfif beside src/t2_mask.png, Columbia's 4cam_splc/x.jfif beside its edge mask: the
    image was left out with only the general "partial copy" count; the warning Tp/Gt gives names it."""
    if name == "imd2020":
        root = make_imd2020(tmp_path / "IMD2020")
        folder, stem, where, mask = root / "z5", "t2", root, "z5/t2_mask.png"
        save(folder / "t2_mask.png", grey_mask(slice(0, 6)))
        (folder / "notes.txt").write_text("no image, no mask: not named")
    else:
        root = make_columbia(tmp_path / "columbia")
        folder, stem, where = root / "4cam_splc", "x", root / "4cam_splc" / "edgemask"
        mask = "x_edgemask.jpg"
        save_jpeg(where / mask, edgemask())
    save_jpeg(folder / f"{stem}.jfif", photo(50))
    with caplog.at_level(logging.INFO):
        ids = open_dataset(str(root)).ids("test")
    assert f"{folder.name}/{stem}.jfif" not in ids
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and "not read" in r.getMessage()]
    assert warned == [f"{where}: 1 image(s) with a mask here are not read, their suffix being none of .png, .jpg, "
                      f".jpeg, .tif, .tiff, .bmp, .webp (e.g. {folder.name}/{stem}.jfif); convert them to one of "
                      "those to score them"]
    assert any(m.endswith(f"(e.g. {mask})") for m in caplog.messages)  # the mask is still logged as unused


def test_imd2020_two_masks_for_one_image_are_refused(tmp_path):
    """A mask re-saved beside the original (``_mask.jpg`` and ``_mask.png``): the last one listed was used, unsaid."""
    root = make_imd2020(tmp_path / "IMD2020")
    save_jpeg(root / "1a1ogs" / "c8tt7fg_0_mask.jpg", grey_mask(slice(0, 2)))
    with pytest.raises(DataError) as err:
        open_dataset(str(root))  # recognised (the sniff only looks), then refused
    assert str(err.value) == f"{root / '1a1ogs'}: two masks for c8tt7fg_0: c8tt7fg_0_mask.jpg and c8tt7fg_0_mask.png"



def test_two_images_for_one_mask_are_refused_naming_both(tmp_path):
    """``1t.tif`` beside ``1t.png`` (IMD2020: ``y.jpg`` beside ``y.png``): both took the one mask, unsaid
    (Columbia: the second had "no mask"); which image it is of is not ours to guess, as for two masks of one image."""
    columbia = make_columbia(tmp_path / "columbia")
    save(columbia / "4cam_splc" / f"{SPLICED[1]}.png", photo(6))
    with pytest.raises(DataError) as err:
        ColumbiaDataset(columbia)
    assert str(err.value) == (f"{columbia / '4cam_splc' / 'edgemask'}: two images for {SPLICED[1]}_edgemask.jpg: "
                              f"4cam_splc/{SPLICED[1]}.png and 4cam_splc/{SPLICED[1]}.tif")
    coverage = make_coverage(tmp_path / "COVERAGE")
    save(coverage / "image" / "01t.png", photo(7))  # <N> read as a number: 01t is image 1
    with pytest.raises(DataError) as err:
        CoverageDataset(coverage)
    assert str(err.value) == f"{coverage / 'mask'}: two images for 1forged.tif: image/01t.png and image/1t.tif"
    imd = make_imd2020(tmp_path / "IMD2020")
    save(imd / "1a1ogs" / "c8tt7fg_0.png", photo(8))
    with pytest.raises(DataError) as err:
        Imd2020Dataset(imd)
    assert str(err.value) == f"{imd}: two images for 1a1ogs/c8tt7fg_0_mask.png: 1a1ogs/c8tt7fg_0.jpg and " \
                             "1a1ogs/c8tt7fg_0.png"



def test_a_4cam_auth_that_is_a_file_is_named_as_such(tmp_path, caplog):
    """``4cam_auth`` a file: the warning said "no 4cam_auth/ folder", as for none at all."""
    root = make_columbia(tmp_path / "columbia")
    shutil.rmtree(root / "4cam_auth")
    (root / "4cam_auth").write_bytes(b"")
    with caplog.at_level("WARNING"):
        assert ColumbiaDataset(root).describe()["authentic"] == 0
    assert f"{root}: 4cam_auth is a file where a folder is expected; the dataset holds spliced images only" \
        in caplog.messages


# -- all four: sniffing, CLI, fingerprints ------------------------------------------------

MAKERS = {"columbia": make_columbia, "coverage": make_coverage, "nist16": make_nist16, "imd2020": make_imd2020}


@pytest.fixture
def layouts(tmp_path, diffseg_folder) -> dict[str, Path]:
    return {
        **{name: make(tmp_path / name) for name, make in MAKERS.items()},
        "columbia-nested": make_columbia(tmp_path / "columbia-nested", nested=True),
        "casia1": make_casia1(tmp_path / "v1"), "casia2": make_casia2(tmp_path / "v2" / "CASIA2.0"),
        "cocoglide": make_cocoglide(tmp_path / "CocoGlide"), "tpgt": make_tpgt(tmp_path / "plain"),
        "diffseg30k": diffseg_folder,
    }


def test_registry_sniffing_names_one_adapter_per_layout(layouts):
    claims: dict[str, set[str]] = {name: set() for name in layouts}
    for entry in get_registry().list("dataset"):
        sniff = getattr(entry.load(), "sniff", None)
        if sniff is None:
            continue
        for name, path in layouts.items():
            if sniff(path):
                claims[name].add(entry.name)
    for name in MAKERS:
        assert claims[name] == {name}, name
    assert claims["columbia-nested"] == {"columbia"}
    ours = set(MAKERS)
    for name in ("casia1", "casia2", "cocoglide", "tpgt", "diffseg30k"):
        assert claims[name] and not claims[name] & ours, name
    for name, path in layouts.items():
        if name in MAKERS:
            assert open_dataset(str(path)).name == name


@pytest.mark.parametrize("name", list(MAKERS))
def test_cli_info_and_stats(name, tmp_path, capsys):
    root = MAKERS[name](tmp_path / name)
    code, out, err = cli(capsys, "data", "info", root)
    assert code == 0, err
    assert f"name: {name}" in out and f"fingerprint: {open_dataset(str(root)).fingerprint()}" in out
    code, out, err = cli(capsys, "data", "stats", root, "--no-plots", "--json")
    assert code == 0, err
    stats = json.loads(out)
    assert stats["dataset"]["name"] == name and stats["splits"] == {"test": len(open_dataset(str(root)).ids("test"))}


def test_cli_names_a_broken_reference_in_one_line(tmp_path, capsys):
    root = make_nist16(tmp_path / "NC2016_Test0613")
    ref = root / "reference" / "manipulation" / "NC2016-manipulation-ref.csv"
    ref.write_text(ref.read_text().replace("|", ","))
    code, out, err = cli(capsys, "data", "info", root)
    assert code != 0 and "Traceback" not in err
    assert len([line for line in err.splitlines() if line.strip()]) == 1 and "missing column(s)" in err


@pytest.mark.parametrize("name", list(MAKERS))
def test_fingerprint_is_stable_and_follows_the_masks(name, tmp_path):
    root = MAKERS[name](tmp_path / "a" / name)
    first = open_dataset(str(root)).fingerprint()
    assert open_dataset(str(root)).fingerprint() == first
    copy = shutil.copytree(root, tmp_path / "b" / name)
    assert open_dataset(str(copy)).fingerprint() == first
    mask = next(m for _, m in open_dataset(str(copy))._entries.values() if m is not None)
    mask.write_bytes(mask.read_bytes() + b"\0")
    assert open_dataset(str(copy)).fingerprint() != first


@pytest.mark.parametrize("make, name, hashed_list", [
    (make_columbia, SPLICED[0], False), (make_nist16, "NC2016_0001", True), (make_imd2020, "z5", False),
    (make_cocoglide, str(COCOGLIDE_ROWS[0][1]), False),
], ids=["columbia", "nist16", "imd2020", "cocoglide"])
def test_accented_names_give_one_set_of_ids_and_one_fingerprint_in_either_unicode_form(make, name, hashed_list,
                                                                                      tmp_path):
    """The ids kept a name as stored: a copy made on macOS (decomposed) gave other ids and another fingerprint."""
    copies = accented_copies(make(tmp_path / "src" / "set"), tmp_path, name)
    assert_read_alike(*(open_dataset(str(copies[form])) for form in ("NFC", "NFD")), name, hashed_list)


@pytest.mark.parametrize("make, name", [(make_nist16, "NC2016_0001"), (make_cocoglide, str(COCOGLIDE_ROWS[0][1]))],
                         ids=["nist16", "cocoglide"])
def test_a_list_naming_a_file_composed_finds_it_stored_decomposed(make, name, tmp_path):
    """The reference CSV or table.csv written with `café` composed, its files copied from macOS (decomposed):
    opening refused them as "file(s) named ... do not exist"."""
    copies = accented_copies(make(tmp_path / "src" / "set"), tmp_path, name, lists="NFC")
    assert_read_alike(*(open_dataset(str(copies[form])) for form in ("NFC", "NFD")), name)


def test_two_names_reading_as_one_are_refused_naming_both(tmp_path):
    """Two samples whose ids read alike: which one is meant cannot be told (they were two samples)."""
    root = make_imd2020(tmp_path / "imd")
    nfd, nfc = (unicodedata.normalize(form, "z5/café_orig.jpg") for form in ("NFD", "NFC"))
    for name in (nfd, nfc):
        shutil.copy(root / "z5" / "00022_orig.jpg", root / name)
    with pytest.raises(DataError) as err:
        Imd2020Dataset(root)
    assert str(err.value) == (f"{root}: {nfc} is stored twice, as {nfd!r} and {nfc!r} (another folder separator "
                              "or Unicode form); keep one of them")


def test_an_image_and_its_mask_named_in_two_unicode_forms_are_paired(tmp_path):
    """One file copied from macOS (decomposed), the other composed: Columbia and IMD2020 compared raw stems
    ("have no ..._mask"), as Tp/Gt, PIXAR and TGIF did not; every adapter pairing by stem reads it in NFC."""
    nfc, nfd = (unicodedata.normalize(form, "café") for form in ("NFC", "NFD"))
    imd = make_imd2020(tmp_path / "imd")
    (imd / "z5" / "00022_fake.jpg").rename(imd / "z5" / f"{nfc}.jpg")
    (imd / "z5" / "00022_fake_mask.png").rename(imd / "z5" / f"{nfd}_mask.png")
    assert edited_rows(Imd2020Dataset(imd).load(f"z5/{nfc}.jpg").label) == list(range(20, 32))
    columbia = make_columbia(tmp_path / "columbia")
    (columbia / "4cam_splc" / f"{SPLICED[0]}.tif").rename(columbia / "4cam_splc" / f"{nfc}.tif")
    edge = columbia / "4cam_splc" / "edgemask"
    (edge / f"{SPLICED[0]}_edgemask.jpg").rename(edge / f"{nfd}_edgemask.jpg")
    assert ColumbiaDataset(columbia).load(f"4cam_splc/{nfc}.tif").label.any()
