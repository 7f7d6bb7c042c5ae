"""Classic layouts (Tp/Gt folders, JSON lists), the authentic view, path sniffing."""

from __future__ import annotations

import json
import os
import shutil
import unicodedata

import numpy as np
import pytest

from diffzoo import open_dataset
from diffzoo.harness.core.errors import ConfigError, CorruptSampleError, DataError
from diffzoo.harness.core.types import BINARY
from diffzoo.harness.data import AuthenticFolder, JsonListDataset, TpGtDataset, WithAuthentic
from diffzoo.harness.data.stats import dataset_stats

from helpers.cli import cli, one_line_exit_2
from helpers.data import make_cocoglide, make_diffseg_folder, make_tpgt
from helpers.data import tpgt_gt as gt
from helpers.data import tpgt_image as image
from helpers.images import save_image as save


def test_tpgt_reads_and_binarises(tmp_path):
    root = make_tpgt(tmp_path / "casia")
    assert TpGtDataset.sniff(root)
    ds = TpGtDataset(root, split="test")
    assert ds.label_space == BINARY and ds.splits() == ["test"]
    assert ds.ids("test") == ["Au/real1.jpg", "Tp/a.png", "Tp/b.jpg", "Tp/c.tif"]
    for sid in ("Tp/a.png", "Tp/b.jpg", "Tp/c.tif"):
        s = ds.load(sid)
        assert s.label.dtype == np.uint8 and s.label.sum() == 16 and s.label[:4, :4].all()
    au = ds.load("Au/real1.jpg")
    assert au.image.shape == (12, 10, 3) and not au.label.any() and au.meta.base == "real"
    assert ds.describe()["authentic"] == 1
    split = TpGtDataset(root)
    assert sorted(i for name in split.splits() for i in split.ids(name)) == ds.ids("test")
    # every record names the split scheme: a fixed split is the dataset's own, the default one is hashed
    assert ds.provenance()["split"]["id"] == "native"
    assert split.provenance()["split"]["id"] == "diffzoo-hash-v1-seed0-val20"
    assert TpGtDataset(root, split_seed=3).provenance()["split"]["id"] == "diffzoo-hash-v1-seed3-val20"


@pytest.mark.parametrize("stored", [0, 1], ids=["all-zero", "0/1"])
def test_an_edited_image_whose_mask_marks_no_pixel_is_skipped_never_counted_authentic(tmp_path, stored):
    """A Tp image's all-zero (or 0/1-encoded) mask is skipped as ``mask-empty``: the data lists the
    image as edited, and read as it is it would be an authentic sample."""
    root = make_tpgt(tmp_path / "set")
    blank = np.zeros((16, 16), np.uint8)
    blank[:4, :4] = stored
    save(root / "Gt" / "a.png", blank)
    with pytest.raises(CorruptSampleError) as err:
        TpGtDataset(root, split="test").load("Tp/a.png")
    assert (err.value.kind, str(err.value)) == ("mask-empty", f"sample Tp/a.png: {root / 'Gt' / 'a.png'}: the mask "
                                                "marks no pixel as edited, but the data lists the image as edited; "
                                                "read as it is, it would be labelled authentic")
    stats = dataset_stats(TpGtDataset(root, split="test"))
    assert (stats["authentic"], stats["skipped"]["by_kind"]) == (1, {"mask-empty": 1})


def test_a_hash_split_option_no_hash_split_reads_is_refused_not_ignored(tmp_path, capsys):
    """split_seed and val_fraction choose the hash split: beside split=NAME, or split_seed alone on a
    test set that splits by no hash, they were taken and silently ignored (every sample in one split)."""
    root = make_tpgt(tmp_path / "tpgt")
    with pytest.raises(ConfigError, match=r"^split_seed=5 chooses a train/val split by id hash, but every sample is in "
                                          r"test: split=test was given; give one or the other$"):
        TpGtDataset(root, split="test", split_seed=5)
    with pytest.raises(ConfigError, match=r"^val_fraction=0.3 and split_seed=0 choose a train/val split by id hash"):
        TpGtDataset(root, split="test", val_fraction=0.3, split_seed=0)
    one_line_exit_2(*cli(capsys, "data", "info", str(root), "--dataset-option", "split=test", "--dataset-option",
                         "val_fraction=0.5"), "val_fraction=0.5 chooses a train/val split by id hash, but every")
    glide = make_cocoglide(tmp_path / "glide")
    with pytest.raises(ConfigError, match=r"^split_seed=5 chooses a train/val split by id hash, but every sample is in "
                                          r"test: cocoglide is a test set, split by hash with val_fraction=F; "
                                          r"give both or neither$"):
        open_dataset(str(glide), split_seed=5)
    assert open_dataset(str(glide), split_seed=5, val_fraction=0.5).provenance()["split"]["id"] == \
        "diffzoo-hash-v1-seed5-val50"
    assert TpGtDataset(root, split="test").splits() == ["test"]


def test_data_info_prints_names_and_paths_holding_markup_or_control_characters_as_text(tmp_path, capsys):
    """A folder `x[red]y` was shown as `xy`, one under `a[/` an internal error (rich's MarkupError), and a
    line break or an escape sequence in a name reached the terminal as it is."""
    for folder, shown in (("x[red]y", "name: x[red]y"), ("a[/]b", f"path: {tmp_path}/a[/]b"),
                          ("new\nline\x1b[31m", "name: new\\nline\\x1b[31m")):
        root = make_tpgt(tmp_path / folder)
        code, out, err = cli(capsys, "data", "info", str(root))
        assert code == 0, err
        assert shown in out.splitlines()


def test_tpgt_refusals(tmp_path):
    with pytest.raises(DataError, match="does not exist"):
        TpGtDataset(tmp_path / "nope")
    (tmp_path / "x" / "Tp").mkdir(parents=True)
    with pytest.raises(DataError, match="expected subfolders Tp/ .* and Gt/"):
        TpGtDataset(tmp_path / "x")
    root = make_tpgt(tmp_path / "d")
    save(root / "Tp" / "lonely.png", image())
    with pytest.raises(
        DataError, match=r"1 Tp image\(s\) have no mask in Gt/ \(e.g. Tp/lonely.png\)"
    ):
        TpGtDataset(root)
    assert "Tp/lonely.png" not in TpGtDataset(root, skip_unpaired=True, split="test").ids("test")
    (root / "Tp" / "lonely.png").unlink()
    save(root / "Gt" / "a.png", gt(8, 8))
    ds = TpGtDataset(root, split="test")
    with pytest.raises(
        CorruptSampleError, match=r"a\.png: mask size 8x8 differs from image size 16x16"
    ):
        ds.load("Tp/a.png")
    (root / "Tp" / "b.jpg").write_bytes(b"\xff\xd8 broken")
    with pytest.raises(CorruptSampleError, match="corrupt or truncated image"):
        ds.load("Tp/b.jpg")


def test_tpgt_two_masks_for_one_image_are_refused(tmp_path):
    """``Gt/a.png`` beside ``Gt/a_gt.png``: the first suffix found was the ground truth, unsaid."""
    root = make_tpgt(tmp_path / "d")
    save(root / "Gt" / "a_gt.png", gt())
    with pytest.raises(DataError) as err:
        open_dataset(str(root))
    assert str(err.value) == f"{root / 'Gt'}: two masks for Tp/a.png: a.png and a_gt.png"


def test_tpgt_pairs_an_accented_name_stored_composed_with_its_mask_stored_decomposed(tmp_path):
    """`Tp/café.png` (NFC) and `Gt/café_gt.png` (NFD, as macOS writes it) print the same, yet the image "had no mask"."""
    root = make_tpgt(tmp_path / "d")
    save(root / "Tp" / unicodedata.normalize("NFC", "café.png"), image())
    save(root / "Gt" / unicodedata.normalize("NFD", "café_gt.png"), gt())
    ds = TpGtDataset(root, split="test")
    sid = "Tp/" + unicodedata.normalize("NFC", "café.png")
    assert sid in ds.ids("test") and ds.load(sid).label.sum() == 16


def test_tpgt_and_authentic_ids_read_accented_names_in_one_unicode_form(tmp_path):
    """Ids kept names as stored: the same Tp/Gt folder copied from macOS (NFD) gave other ids and another
    fingerprint than one extracted elsewhere (NFC); so did an extra authentic folder."""
    root = make_tpgt(tmp_path / "NFC")
    names = [unicodedata.normalize("NFC", n) for n in ("Tp/café.png", "Gt/café_gt.png", "Au/été.png")]
    for name, pixels in zip(names, (image(), gt(), image())):
        save(root / name, pixels)
    shutil.copytree(root, tmp_path / "NFD")
    for name in names:  # the same files, their names decomposed as macOS stores them
        (tmp_path / "NFD" / name).rename(tmp_path / "NFD" / unicodedata.normalize("NFD", name))
    (nfc, nfc_au), (nfd, nfd_au) = ((TpGtDataset(tmp_path / form, split="test"), AuthenticFolder(tmp_path / form / "Au"))
                                    for form in ("NFC", "NFD"))
    assert nfd.ids("test") == nfc.ids("test") and "Tp/" + unicodedata.normalize("NFC", "café.png") in nfd.ids("test")
    assert nfd.fingerprint() == nfc.fingerprint()
    assert nfd_au.ids() == nfc_au.ids() and nfd_au.fingerprint() == nfc_au.fingerprint()
    save(tmp_path / "NFD" / "Tp" / unicodedata.normalize("NFC", "café.png"), image())
    with pytest.raises(DataError, match=r"Tp: Tp/café.png is stored twice, as 'Tp/cafe\u0301.png' and 'Tp/café.png'"):
        TpGtDataset(tmp_path / "NFD", split="test")


def test_json_list(tmp_path):
    save(tmp_path / "imgs" / "t1.png", image())
    save(tmp_path / "masks" / "t1.png", gt())
    save(tmp_path / "imgs" / "r1.png", image())
    listing = [["imgs/t1.png", "masks/t1.png"], ["imgs/r1.png", "Negative"]]
    f = tmp_path / "lists" / "set.json"
    f.parent.mkdir()
    f.write_text(json.dumps([["../" + a, b if b == "Negative" else "../" + b] for a, b in listing]))
    assert JsonListDataset.sniff(f)
    ds = JsonListDataset(f, split="test")
    assert ds.name == "set" and ds.ids("test") == ["../imgs/r1.png", "../imgs/t1.png"]
    assert ds.load("../imgs/t1.png").label.sum() == 16
    neg = ds.load("../imgs/r1.png")
    assert not neg.label.any() and neg.meta.base == "real"
    fp = ds.fingerprint()
    assert JsonListDataset(f, split="test").fingerprint() == fp


def test_a_json_list_reads_its_paths_as_canonical_ids_and_finds_files_stored_in_another_unicode_form(tmp_path):
    """The list wrote `café` composed, the files came from macOS (decomposed): "listed file(s) do not exist"; and
    an id kept the path as written, so a list written decomposed gave other ids."""
    nfc, nfd = (unicodedata.normalize(form, "imgs/café.png") for form in ("NFC", "NFD"))
    save(tmp_path / nfd, image())
    save(tmp_path / "masks" / unicodedata.normalize("NFD", "café.png"), gt())
    for listed in (nfc, nfd):
        f = tmp_path / "set.json"
        f.write_text(json.dumps([[listed, unicodedata.normalize("NFC", "masks/café.png")]]))
        ds = JsonListDataset(f, split="test")
        assert ds.ids("test") == [nfc] and ds.load(nfc).label.sum() == 16
    f.write_text(json.dumps([[nfc, "Negative"], [nfd, "Negative"]]))
    with pytest.raises(DataError, match=f"item 1: image {nfd} \\(as {nfc} before\\) is listed twice"):
        JsonListDataset(f, split="test")


def test_json_list_saved_with_a_byte_order_mark_is_read(tmp_path):
    """A list saved by a Windows editor: "not readable JSON (Unexpected UTF-8 BOM ...)", though a splits.json is read."""
    save(tmp_path / "Au" / "b.png", image())
    f = tmp_path / "l.json"
    f.write_bytes(b"\xef\xbb\xbf" + json.dumps([["Au/b.png", "Negative"]]).encode())
    assert JsonListDataset(f, split="test").ids("test") == ["Au/b.png"]


def test_json_list_refusals(tmp_path):
    f = tmp_path / "l.json"
    f.write_text(json.dumps([["missing.png", "Negative"]]))
    with pytest.raises(
        DataError, match=r"1 listed file\(s\) do not exist .*relative to the JSON file's folder"
    ):
        JsonListDataset(f)
    f.write_text(json.dumps([["a.png"]]))
    with pytest.raises(DataError, match=r"item 0 is \['a.png'\], expected \[image, mask"):
        JsonListDataset(f)
    assert JsonListDataset.sniff(f)  # a list is claimed: opening it names the bad item
    f.write_text(json.dumps({"names": ["background"]}))
    assert not JsonListDataset.sniff(f)  # another kind of JSON
    # one file under two spellings was two samples, which the id hash could put in train and in val
    save(tmp_path / "Au" / "b.png", image())
    f.write_text(json.dumps([["Au/b.png", "Negative"], ["./Au/b.png", "Negative"]]))
    with pytest.raises(DataError) as err:
        JsonListDataset(f)
    assert str(err.value) == f"{f}: item 1: image ./Au/b.png (as Au/b.png before) is listed twice"
    # "negative" was looked for as a mask file, and the error sent the user to check the paths
    f.write_text(json.dumps([["Au/b.png", "negative"]]))
    with pytest.raises(DataError) as err:
        JsonListDataset(f)
    assert str(err.value) == (f"{f}: 1 listed file(s) do not exist (e.g. {tmp_path / 'negative'}); paths are relative "
                              """to the JSON file's folder; an authentic image's mask is written "Negative", """
                              "not 'negative'")


def test_a_dataset_given_as_dot_or_dot_dot_is_named_after_its_folder(tmp_path, monkeypatch):
    """`--dataset .` named a Tp/Gt folder '' and a DiffSeg30k one 'diffseg30k'; `..` named it '..'."""
    tpgt = make_tpgt(tmp_path / "casia")
    monkeypatch.chdir(tpgt)
    assert open_dataset(".").name == "casia"
    pairs = make_diffseg_folder(tmp_path / "ds")
    monkeypatch.chdir(pairs)
    assert open_dataset(".").name == "ds"
    monkeypatch.chdir(pairs / "train_copy")
    assert open_dataset("..").name == "ds"


def test_with_authentic_view(tmp_path):
    ds = TpGtDataset(make_tpgt(tmp_path / "c"), val_fraction=0.0)
    save(tmp_path / "auth" / "x.png", image())
    view = WithAuthentic(ds, tmp_path / "auth")
    assert view.ids("train") == sorted(ds.ids("train") + ["authentic/x.png"])
    assert not view.load("authentic/x.png").label.any()
    assert view.load("Tp/a.png").label.any()
    assert view.describe()["splits"]["train"] == len(ds.ids("train")) + 1
    assert view.fingerprint() != ds.fingerprint()
    with pytest.raises(DataError, match="cannot add extra authentic images to split 'val'"):
        WithAuthentic(ds, AuthenticFolder(tmp_path / "auth"), split="val")


def test_open_dataset_path(tmp_path):
    assert isinstance(open_dataset(str(make_tpgt(tmp_path / "t")), split="test"), TpGtDataset)
    save(tmp_path / "i.png", image())
    (tmp_path / "j.json").write_text(json.dumps([["i.png", "Negative"]]))
    assert isinstance(open_dataset(str(tmp_path / "j.json")), JsonListDataset)
    with pytest.raises(DataError, match="dataset path .* does not exist"):
        open_dataset(str(tmp_path / "missing"))
    (tmp_path / "plain").mkdir()
    with pytest.raises(DataError, match=r"plain: no dataset adapter recognises this layout \(the folder is "
                       r"empty\)\. Adapters: .*diffseg30k, .*`diffzoo list datasets` says the layout each"):
        open_dataset(str(tmp_path / "plain"))
    (tmp_path / "plain" / "notes.txt").write_text("x")
    with pytest.raises(DataError, match="plain: no dataset adapter recognises this layout. Adapters: "):
        open_dataset(str(tmp_path / "plain"))
    for archive in ("4cam_splc.tar.bz2", "4cam_auth.tar.bz2"):  # a download left packed
        (tmp_path / "plain" / archive).write_bytes(b"BZh9")
    with pytest.raises(DataError, match=r"plain: no dataset adapter recognises this layout \(it holds archives not "
                       r"extracted: 4cam_auth\.tar\.bz2, 4cam_splc\.tar\.bz2; extract them first\)\. Adapters: "):
        open_dataset(str(tmp_path / "plain"))
    (tmp_path / "in_way" / "Gt").mkdir(parents=True)
    (tmp_path / "in_way" / "Tp").write_bytes(b"")  # the file in the way is named, not only "no adapter"
    with pytest.raises(DataError, match=r"in_way: no dataset adapter recognises this layout \(Tp is a file where "
                       r"brgen, casia1, casia2, tpgt expect a folder\)\. Adapters: "):
        open_dataset(str(tmp_path / "in_way"))
    (tmp_path / "in_way" / "Tp").unlink()
    (tmp_path / "in_way" / "train_copy").write_bytes(b"")
    with pytest.raises(DataError, match=r"\(train_copy is a file where diffseg30k expects a folder\)\. Adapters"):
        open_dataset(str(tmp_path / "in_way"))
    for empty in ("", "  "):  # an unset shell variable: never the current folder
        with pytest.raises(ConfigError, match="the dataset is given as an empty string"):
            open_dataset(empty)
    with pytest.raises(ConfigError, match=r"split='' names no split: give one \(e\.g\. split=test\)"):
        TpGtDataset(tmp_path / "t", split="")  # built directly: every sample went to a split named ''
    with pytest.raises(ConfigError, match=r"adapter 'tpgt' .* does not take --labels\. Valid options: name, skip"):
        open_dataset(str(tmp_path / "t"), label_space="a,b")  # named as typed: --labels, not a label_space option


def test_a_zip_of_a_layout_no_adapter_reads_packed_says_to_extract_it(tmp_path):
    """A Tp/Gt folder zipped: only DiffSeg30k, DEAL-300K and SID-Set read a zip in place; the line named no way on."""
    import zipfile

    root = make_tpgt(tmp_path / "tpgt")
    with zipfile.ZipFile(tmp_path / "tpgt.zip", "w") as zf:
        for f in sorted(root.rglob("*.*")):
            zf.write(f, f.relative_to(tmp_path).as_posix())
    with pytest.raises(DataError) as err:
        open_dataset(str(tmp_path / "tpgt.zip"))
    assert str(err.value).startswith(f"{tmp_path / 'tpgt.zip'}: no dataset adapter recognises this layout (an archive "
                                     "no adapter reads packed: extract it and give its folder). Adapters: ")
    zipfile.ZipFile(tmp_path / "empty.zip", "w").close()  # extracting it gives nothing to give
    with pytest.raises(DataError, match=r"empty\.zip: no dataset adapter recognises this layout \(the archive is "
                                        r"empty\)\. Adapters: "):
        open_dataset(str(tmp_path / "empty.zip"))


def test_two_masks_whose_names_print_alike_are_quoted_and_told_apart(tmp_path):
    """A mask stored under both Unicode forms of one name printed as 'two masks for café_gt: café_gt.png and
    café_gt.png', the same text twice; the names are quoted and the reason given."""
    root = make_tpgt(tmp_path / "d")
    save(root / "Tp" / "café.png", image())
    nfc, nfd = (unicodedata.normalize(form, "café_gt.png") for form in ("NFC", "NFD"))
    for name in (nfc, nfd):
        save(root / "Gt" / name, gt())
    with pytest.raises(DataError) as err:
        TpGtDataset(root, split="test")
    assert "two masks for" in str(err.value)
    assert any(str(err.value).endswith(f": {a!r} and {b!r} (another folder separator or Unicode form)")
               for a, b in ((nfc, nfd), (nfd, nfc)))


def test_an_au_that_is_a_file_is_named_not_passed_over(tmp_path, caplog):
    """``Au`` a file (a zip's name without its suffix, a download cut short): the layout is read
    without it, and a warning names it where nothing was said."""
    root = make_tpgt(tmp_path / "d")
    shutil.rmtree(root / "Au")
    (root / "AU").write_bytes(b"PK")
    with caplog.at_level("WARNING"):
        ds = TpGtDataset(root, split="test")
    assert ds.describe()["authentic"] == 0
    assert [r.getMessage() for r in caplog.records] == [f"{root}: AU is a file where a folder is expected; "
                                                        "read without it"]


def test_two_images_of_one_stem_are_refused_not_both_paired_with_its_mask(tmp_path):
    """``Tp/a.png`` beside ``Tp/a.jpg``: both took ``Gt/a.png``, unsaid; which image the mask is
    of is not ours to guess, as for two masks of one image."""
    root = make_tpgt(tmp_path / "d")
    save(root / "Tp" / "a.jpg", image())
    with pytest.raises(DataError) as err:
        open_dataset(str(root))
    assert str(err.value) == f"{root / 'Gt'}: two images for a.png: Tp/a.jpg and Tp/a.png"


def test_two_folders_of_one_name_in_another_letter_case_are_refused_naming_both(tmp_path):
    """``Gt/`` beside ``gt/``: which one was read hung on the folder's listing order (the other passed
    over unsaid, its masks "missing"); neither can be told to be the ground truth."""
    root = make_tpgt(tmp_path / "ds")
    (root / "gt").mkdir()
    with pytest.raises(DataError) as err:
        TpGtDataset(root)
    assert str(err.value) == f"{root}: Gt and gt are both the Gt/ folder, in another letter case; keep one of them"


def test_a_path_option_beside_a_dataset_path_is_one_line_never_a_type_error(capsys, tmp_path):
    root = make_tpgt(tmp_path / "ds")
    one_line_exit_2(*cli(capsys, "data", "info", root, "--dataset-option", f"path={tmp_path}"),
                    f"error: dataset adapter 'tpgt' (for {root}) reads the path given as the dataset: drop "
                    "--dataset-option path")


def test_a_layout_an_adapter_refuses_when_sniffing_is_its_reason_in_one_line(capsys, caplog, tmp_path):
    """The sniffer's DataError names what is wrong with its own layout: never "failed to look at it"
    and a warning, as a sniffer's crash is."""
    root = make_tpgt(tmp_path / "ds")
    (root / "gt").mkdir()
    code, _, stderr = cli(capsys, "data", "info", root)
    assert (code, stderr) == (1, f"error: {root}: Gt and gt are both the Gt/ folder, in another letter case; "
                                 "keep one of them\n")
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == []


def test_a_tp_folder_holding_no_image_is_refused_not_read_as_its_authentic_images_alone(tmp_path):
    """An emptied ``Tp/`` (an extraction cut short) beside ``Au/``: the dataset was its authentic images alone,
    listed and scored as the benchmark, the masks in ``Gt/`` matching no image logged only."""
    root = make_tpgt(tmp_path / "d")
    for f in (root / "Tp").iterdir():
        f.unlink()
    with pytest.raises(DataError) as err:
        open_dataset(str(root))
    assert str(err.value) == f"{root}: Tp/ holds no image (Gt/ holds 3 masks); the dataset would be its Au/ images alone"


def test_an_image_of_a_suffix_never_read_beside_its_mask_is_named_in_a_warning(tmp_path, caplog):
    """Tp/x.jfif (a JPEG under a suffix diffzoo does not read) with Gt/x.png: the image was left out unsaid
    (its mask only "matched no image" at info level), the copy scored on fewer images than it holds."""
    root = make_tpgt(tmp_path / "ds")
    shutil.copy(root / "Tp" / "b.jpg", root / "Tp" / "x.jfif")
    shutil.copy(root / "Gt" / "a.png", root / "Gt" / "x.png")
    (root / "Tp" / "README.txt").write_text("no image, no mask: not named")
    ds = TpGtDataset(root, split="test")
    assert "Tp/x.jfif" not in ds.ids("test")
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warned == [f"{root / 'Gt'}: 1 image(s) with a mask here are not read, their suffix being none of .png, "
                      ".jpg, .jpeg, .tif, .tiff, .bmp, .webp (e.g. Tp/x.jfif); convert them to one of those to "
                      "score them"]


def test_a_listed_absolute_path_missing_is_named_and_its_twin_in_another_letter_case_too(tmp_path):
    """An absolute path is read as written; missing, it is named (the letter-case hint read it relative to the
    list's folder: "ValueError: ... is not in the subpath of ..."), with the file stored in another case if one is."""
    save(tmp_path / "elsewhere" / "B.png", image())
    f = tmp_path / "list" / "l.json"
    f.parent.mkdir()
    f.write_text(json.dumps([[str(tmp_path / "elsewhere" / "a.png"), "Negative"],
                             [str(tmp_path / "elsewhere" / "b.png"), "Negative"]]))
    with pytest.raises(DataError) as err:
        JsonListDataset(f)
    assert str(err.value) == (f"{f}: 2 listed file(s) do not exist (e.g. {tmp_path / 'elsewhere' / 'a.png'}, "
                              f"{tmp_path / 'elsewhere' / 'b.png'} ({tmp_path / 'elsewhere' / 'B.png'} is there: a "
                              "name is read in its own letter case)); paths are relative to the JSON file's folder")


def test_a_file_name_that_is_not_utf8_is_named_in_one_line_never_an_internal_error(tmp_path, capsys):
    """Tp/\\xe9a.png with Gt/\\xe9a.png (Latin-1 names, as an old archive unpacks): "internal error:
    UnicodeEncodeError: ... surrogates not allowed", from the split hash of an id no text can hold."""
    root = make_tpgt(tmp_path / "ds")
    for folder in ("Tp", "Gt"):
        os.rename(root / folder / "a.png", os.fsencode(root / folder) + b"/\xe9a.png")
    code, out, err = cli(capsys, "data", "info", root)
    assert (code, err) == (1, f"error: {root / 'Gt'}: \\xe9a: a name that is not UTF-8; diffzoo's ids are UTF-8 "
                              "text: rename the file in UTF-8\n")


@pytest.mark.parametrize("second", [["Au/b.png", "Negative"], ["./Au/b.png", "Gt/a.png"]])
def test_a_file_listed_as_an_image_and_as_a_mask_is_refused(tmp_path, second):
    """[Tp/a.png, Au/b.png] with Au/b.png an authentic item (or an edited one, written ./Au/b.png): a photo
    was read as a ground truth, opened without a word."""
    save(tmp_path / "Tp" / "a.png", image())
    save(tmp_path / "Au" / "b.png", image())
    save(tmp_path / "Gt" / "a.png", gt())
    f = tmp_path / "l.json"
    f.write_text(json.dumps([["Tp/a.png", "Au/b.png"], second]))
    with pytest.raises(DataError) as err:
        JsonListDataset(f)
    assert str(err.value) == (f"{f}: item 0: mask Au/b.png is listed as an image too ({second[0]}); a file is an "
                              "image or a mask, never both")


@pytest.mark.parametrize("second_mask", ["m.png", "./m.png"])
def test_two_items_sharing_one_mask_file_are_refused_as_cocoglide_refuses_them(tmp_path, second_mask):
    """[[a.png, m.png], [b.png, m.png]]: one ground truth was read for two edited images, unsaid."""
    for name in ("a.png", "b.png"):
        save(tmp_path / name, image())
    save(tmp_path / "m.png", gt())
    f = tmp_path / "l.json"
    f.write_text(json.dumps([["a.png", "m.png"], ["b.png", second_mask]]))
    with pytest.raises(DataError) as err:
        JsonListDataset(f)
    assert str(err.value) == (f"{f}: item 1: mask {second_mask} is already listed on item 0 (as mask m.png); each "
                              "image and mask file belongs to one item")
