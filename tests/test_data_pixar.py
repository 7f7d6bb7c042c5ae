"""The PIXAR adapter on a tiny copy of its real layout, and the files it must refuse."""

from __future__ import annotations

import json
import shutil
import unicodedata
from pathlib import Path

import numpy as np
import pytest

from diffzoo.harness.core.errors import ConfigError, CorruptSampleError, DataError
from diffzoo.harness.core.types import BINARY
from diffzoo.harness.data.adapters.pixar import PixarDataset, editor_from_folder

from helpers.data import accented_copies, assert_read_alike
from helpers.images import save_image as save

SIZE = 32


def picture(seed: int, h: int = SIZE, w: int = SIZE) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)


def region(y0: int, x0: int, n: int, value: int = 255, h: int = SIZE, w: int = SIZE) -> np.ndarray:
    m = np.zeros((h, w), np.uint8)
    m[y0 : y0 + n, x0 : x0 + n] = value
    return m


def make_pixar(folder: Path, types: tuple[str, ...] = ("qwen_coco_val_addition", "qwen_coco_val_removal_1"),
               splits: tuple[str, ...] = ("train", "validation"), seed: int = 0) -> Path:
    """One PIXAR folder as the build script writes it: mapping.json beside the split
    folders, each with real/ full_synthetic/ tampered/ masks/ soft_masks/ metadata/."""
    mapping = {}
    for s, split in enumerate(splits):
        d = folder / split
        for sub in ("real", "full_synthetic", "tampered", "masks", "soft_masks", "metadata"):
            (d / sub).mkdir(parents=True, exist_ok=True)
        for t, kind in enumerate(types):
            tid = f"{seed:02d}{s}{t}0a1b2c3d4e5f60"[:16]
            name = f"tampered_{tid}"
            save(d / "tampered" / f"{name}.png", picture(seed * 100 + s * 10 + t))
            save(d / "soft_masks" / f"{name}_mask.png", region(4 + t, 4, 6))
            save(d / "masks" / f"{name}_mask.png", region(2, 2, 16))  # the coarse guiding mask
            (d / "metadata" / f"{name}_cls.json").write_text(
                json.dumps({"cls": ["dog", "frisbee"], "text": f"A dog was added ({kind})."}), encoding="utf-8")
            real = f"original_{seed:04d}{s}{t}abcdef0123"[:25] + ".png"
            save(d / "real" / real, picture(seed * 100 + s * 10 + t + 50))
            mapping[f"{name}.png"] = {"entry": f"0000{t}/ann_{t}", "real": real, "type": kind,
                                      "bg": kind.endswith("removal_1")}
        save(d / "full_synthetic" / "synthetic_0000.png", picture(seed + 77))
    (folder / "mapping.json").write_text(json.dumps(mapping, indent=2), encoding="utf-8")
    return folder


@pytest.fixture
def pixar(tmp_path) -> Path:
    return make_pixar(tmp_path / "train_0.05")


def tampered(ds: PixarDataset, split: str) -> list[str]:
    return [i for i in ds.ids(split) if "/tampered/" in i]


# -- reading -------------------------------------------------------------------------------------
def test_reads_soft_labels_real_images_and_metadata(pixar):
    assert PixarDataset.sniff(pixar) and PixarDataset.sniff(pixar.parent)
    ds = PixarDataset(pixar)
    assert ds.label_space == BINARY and ds.splits() == ["train", "val"]
    assert ds.ids("validation") == ds.ids("val")
    assert len(tampered(ds, "val")) == 2 and len([i for i in ds.ids("val") if "/real/" in i]) == 2
    assert not [i for s in ds.splits() for i in ds.ids(s) if "full_synthetic" in i]  # excluded by default

    sid = "validation/tampered/tampered_0011" + "0a1b2c3d4e5f60"[:12] + ".png"
    assert sid in ds.ids("val")
    s = ds.load(sid)
    np.testing.assert_array_equal(s.image, picture(11))
    np.testing.assert_array_equal(s.label, (region(5, 4, 6) > 0).astype(np.uint8))  # soft, not guide
    (turn,) = s.meta.turns
    assert (turn.editor, turn.edit_type) == ("unknown", "qwen_coco_val_removal_1")
    assert turn.prompt == "A dog was added (qwen_coco_val_removal_1)."
    assert s.meta.base == "unknown"  # mapping "bg" is a boolean flag, not real/ai
    assert ds.classes(sid) == ["dog", "frisbee"]

    real = next(i for i in ds.ids("train") if "/real/" in i)
    r = ds.load(real)
    assert not r.label.any() and r.meta.base == "real" and r.meta.turns == () and ds.classes(real) == []
    d = ds.describe()
    assert d["samples"] == {"real": 4, "tampered": 4, "full_synthetic": 0} and d["labels"] == "soft"

    guide = PixarDataset(pixar, labels="guide", include_real=False, full_synthetic=True)
    assert guide.load(sid).label.sum() == 16 * 16
    fs = guide.load("train/full_synthetic/synthetic_0000.png")
    assert fs.label.all() and fs.meta.turns[0].edit_type == "full_synthetic"
    assert guide.describe()["samples"] == {"real": 0, "tampered": 4, "full_synthetic": 2}


def test_editor_option_threshold_and_split(pixar):
    ds = PixarDataset(pixar, editor="qwen", split="test")
    assert ds.label_space.names == ("background", "qwen") and ds.splits() == ["test"]
    sid = tampered(ds, "test")[0]
    s = ds.load(sid)
    assert s.meta.turns[0].editor == "qwen" and set(np.unique(s.label)) == {0, 1}
    # a grey soft mask: 100/255 = 0.39 is edited only below the default threshold
    mask = pixar / sid.replace("tampered/", "soft_masks/").replace(".png", "_mask.png")
    save(mask, region(0, 0, 10, value=100))
    with pytest.raises(CorruptSampleError, match="marks no pixel as edited") as err:  # never labelled authentic
        PixarDataset(pixar).load(sid)
    assert err.value.kind == "mask-empty"
    low = PixarDataset(pixar, mask_threshold=0.3).load(sid).label
    np.testing.assert_array_equal(low, (region(0, 0, 10) > 0).astype(np.uint8))


def test_a_root_of_per_editor_test_sets_gives_editor_classes(tmp_path):
    root = tmp_path / "pixar_test"
    make_pixar(root / "test_qwen_0.05", ("qwen_coco_val_color",), ("validation",), seed=1)
    make_pixar(root / "test_gemini2.5_0.05", ("gemini_coco_val_motion",), ("validation",), seed=2)
    make_pixar(root / "test_full_0.05", ("gpt_coco_val_color",), ("validation",), seed=3)
    assert [editor_from_folder(n) for n in ("test_gemini2.5_0.05", "flux2", "test_qwen")] == [
        "gemini2.5", "flux2", "qwen"]
    assert PixarDataset.sniff(root)
    ds = PixarDataset(root, split="test")
    assert ds.label_space.names == ("background", "gemini2.5", "qwen")  # test_full left out
    labels = {}
    for sid in tampered(ds, "test"):
        s = ds.load(sid)
        labels[sid.split("/")[0]] = (s.meta.turns[0].editor, int(s.label.max()))
    assert labels == {"test_gemini2.5_0.05": ("gemini2.5", 1), "test_qwen_0.05": ("qwen", 2)}
    only = PixarDataset(root, editors=["qwen"])
    assert only.label_space.names == ("background", "qwen") and only.splits() == ["val"]
    assert all(i.startswith("test_qwen_0.05/") for i in only.ids("val"))
    with pytest.raises(ConfigError, match="holds one folder per editor"):
        PixarDataset(root, editor="qwen")
    with pytest.raises(DataError, match="no test set for editor\\(s\\) seedream; present: gemini2.5, qwen"):
        PixarDataset(root, editors="seedream")


def test_editor_from_type_for_the_combined_test_set(tmp_path):
    folder = make_pixar(tmp_path / "test_full_0.05", ("qwen_coco_val_color", "gpt_coco_val_removal_1",
                                                      "gpt_coco_val_addition"), ("validation",))
    ds = PixarDataset(folder, editor_from_type=True)
    assert ds.label_space.names == ("background", "gpt", "qwen")
    got = {ds.load(i).meta.turns[0].editor: int(ds.load(i).label.max()) for i in tampered(ds, "val")}
    assert got == {"gpt": 1, "qwen": 2}
    gpt = PixarDataset(folder, editor_from_type=True, editors=["gpt"])
    assert gpt.label_space.names == ("background", "gpt") and len(tampered(gpt, "val")) == 2
    with pytest.raises(ConfigError, match="exclude each other"):
        PixarDataset(folder, editor="qwen", editor_from_type=True)


def test_fingerprint_follows_content_and_label_options(pixar, tmp_path):
    fp = PixarDataset(pixar).fingerprint()
    copy = shutil.copytree(pixar, tmp_path / "moved" / "train_0.05")
    assert PixarDataset(copy).fingerprint() == fp
    assert PixarDataset(copy, labels="guide").fingerprint() != fp
    assert PixarDataset(copy, mask_threshold=0.2).fingerprint() != fp
    meta = next((copy / "train" / "metadata").iterdir())
    meta.write_text(json.dumps({"cls": ["cat"], "text": "changed"}), encoding="utf-8")
    assert PixarDataset(copy).fingerprint() != fp


# -- refusals ------------------------------------------------------------------------------------
def _first(root: Path, sub: str) -> Path:
    return sorted((root / "validation" / sub).iterdir())[0]


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda r: shutil.rmtree(r / "validation" / "metadata"),
         r"validation: missing metadata/; each split folder holds real/, full_synthetic/, tampered/"),
        (lambda r: shutil.rmtree(r / "train" / "soft_masks"), r"train: missing soft_masks/"),
        (lambda r: shutil.rmtree(r / "train" / "full_synthetic"), r"train: missing full_synthetic/"),
        (lambda r: (r / "mapping.json").unlink(), r"mapping\.json is missing; expected it beside the split"),
        (lambda r: (r / "mapping.json").write_text('{"tampered_x.png": {"type": "a"},\n oops}'),
         r"mapping\.json: not readable JSON \(Expecting property name enclosed in double quotes: line 2"),
        (lambda r: (r / "mapping.json").write_text('{"tampered_x.png": ["qwen"]}'),
         r"mapping\.json: entry 'tampered_x\.png' is \['qwen'\]; expected an object"),
        (lambda r: (r / "mapping.json").write_text('{"tampered_x.png": {"type": 3}}'),
         r"entry 'tampered_x\.png': field 'type' is 3; expected a string"),
        (lambda r: _first(r, "soft_masks").unlink(),
         r"1 tampered image\(s\) lack a mask, metadata or mapping entry \(e\.g\. validation/tampered/"
         r"tampered_\w+\.png \(no soft_masks/tampered_\w+_mask\.png\)\); `--dataset-option skip_unpaired=true` skips them"),
        (lambda r: _first(r, "metadata").unlink(), r"\(no metadata/tampered_\w+_cls\.json\)"),
        (lambda r: (r / "mapping.json").write_text(
            json.dumps({k: v for k, v in json.loads((r / "mapping.json").read_text()).items()
                        if not k.startswith("tampered_001")})),
         r"\(no mapping\.json entry\)"),
    ],
)
def test_malformed_variants_are_refused(pixar, damage, message):
    damage(pixar)
    with pytest.raises(DataError, match=message):
        PixarDataset(pixar)


def test_skip_unpaired_and_other_labels_open_what_the_defaults_refuse(pixar):
    _first(pixar, "soft_masks").unlink()
    ds = PixarDataset(pixar, skip_unpaired=True)
    assert len(tampered(ds, "val")) == 1 and len(tampered(ds, "train")) == 2
    assert len(tampered(PixarDataset(pixar, labels="guide"), "val")) == 2


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"cls": ["dog"],\n "text": }', r"_cls\.json: metadata is not readable JSON \(Expecting value: line 2"),
        ('{"cls": ["dog"]}', r"_cls\.json: missing field 'text'"),
        ('{"cls": "dog", "text": ""}', r"_cls\.json: field 'cls' is 'dog'; expected a list of class names"),
        ('["dog"]', r'_cls\.json: expected \{"cls": \[\.\.\.\], "text": "\.\.\."\}'),
    ],
)
def test_broken_metadata_makes_a_corrupt_sample(pixar, content, message):
    ds = PixarDataset(pixar)
    sid = tampered(ds, "val")[0]
    meta = pixar / sid.replace("tampered/", "metadata/").replace(".png", "_cls.json")
    meta.write_text(content, encoding="utf-8")
    with pytest.raises(CorruptSampleError, match=message):
        ds.load(sid)
    with pytest.raises(CorruptSampleError, match=message):
        ds.classes(sid)
    ds.load(tampered(ds, "val")[1])  # the others still load


@pytest.mark.parametrize("threshold", [0.5, 0.25])
def test_a_mask_of_another_size_is_a_corrupt_sample(pixar, threshold):
    ds = PixarDataset(pixar, mask_threshold=threshold)
    sid = tampered(ds, "train")[0]
    save(pixar / sid.replace("tampered/", "soft_masks/").replace(".png", "_mask.png"), region(0, 0, 4, h=24))
    with pytest.raises(CorruptSampleError, match=r"_mask\.png: mask size 32x24 differs from image size 32x32"):
        ds.load(sid)


def test_option_and_folder_errors(pixar, tmp_path):
    with pytest.raises(ConfigError) as err:  # one wording for every adapter's choice option (base.not_a_choice)
        PixarDataset(pixar, labels="hard")
    assert str(err.value) == "PIXAR labels='hard' is not one of soft, guide"
    with pytest.raises(ConfigError, match="mask_threshold=127.5; expected a fraction"):
        PixarDataset(pixar, mask_threshold=127.5)
    with pytest.raises(ConfigError, match="single test set: name its editor with editor="):
        PixarDataset(pixar, editors=["qwen"])
    with pytest.raises(DataError, match="looks like a split folder: pass the folder holding it"):
        PixarDataset(pixar / "validation")
    (tmp_path / "plain" / "x").mkdir(parents=True)
    assert not PixarDataset.sniff(tmp_path / "plain")
    with pytest.raises(DataError, match="no PIXAR layout found; expected split folders"):
        PixarDataset(tmp_path / "plain")
    with pytest.raises(DataError, match="does not exist"):
        PixarDataset(tmp_path / "nope")


def test_open_dataset_sniffs_pixar(pixar):
    from diffzoo import open_dataset

    ds = open_dataset(str(pixar), editor="qwen")  # a path: the registered adapters sniff it
    assert isinstance(ds, PixarDataset) and ds.label_space.editors == ("qwen",)


def test_an_accented_image_name_gives_one_set_of_ids_and_one_fingerprint_in_either_unicode_form(pixar, tmp_path):
    """The ids kept the file name as stored: decomposed (macOS) and composed differed."""
    copies = accented_copies(pixar, tmp_path, "synthetic_0000")  # a name mapping.json does not give
    assert_read_alike(*(PixarDataset(copies[form], full_synthetic=True) for form in ("NFC", "NFD")), "synthetic_0000")


def test_a_mapping_naming_an_image_composed_finds_it_stored_decomposed(pixar, tmp_path):
    """mapping.json written with `café` composed, the files copied from macOS (decomposed): "lack a ... mapping
    entry"."""
    name = "tampered_00110a1b2c3d4e"
    copies = accented_copies(pixar, tmp_path, name, lists="NFC")
    assert_read_alike(*(PixarDataset(copies[form]) for form in ("NFC", "NFD")), name)


def test_an_accented_per_editor_folder_is_one_label_in_either_unicode_form(tmp_path):
    """The label names kept a per-editor folder's name as stored: each Unicode form gave another label_map_sha256."""
    root = tmp_path / "pixar_test"
    make_pixar(root / "test_qwen_0.05", ("qwen_coco_val_color",), ("validation",), seed=1)
    make_pixar(root / "test_gemini2.5_0.05", ("gemini_coco_val_motion",), ("validation",), seed=2)
    copies = accented_copies(root, tmp_path, "qwen_0.05", lists="NFC")
    nfc, nfd = (PixarDataset(copies[form], split="test") for form in ("NFC", "NFD"))
    assert_read_alike(nfc, nfd, "qwen_0.05")
    editor = unicodedata.normalize("NFC", "caféqwen")
    assert nfd.label_space.names == ("background", editor, "gemini2.5") == nfc.label_space.names
    assert nfd.provenance()["label_map"] == nfc.provenance()["label_map"]
    chosen = PixarDataset(copies["NFD"], editors=unicodedata.normalize("NFD", "caféqwen"))
    assert chosen.label_space.editors == (editor,)


def test_an_image_and_its_mask_and_metadata_stored_in_two_unicode_forms_are_paired(pixar):
    """The mask and metadata were found by the image's name as stored: an image stored composed
    beside its mask stored decomposed was refused, "no soft_masks/..._mask.png"."""
    name = "tampered_00110a1b2c3d4e5f"
    nfc, nfd = (unicodedata.normalize(form, f"café{name}") for form in ("NFC", "NFD"))
    split = pixar / "validation"
    (split / "tampered" / f"{name}.png").rename(split / "tampered" / f"{nfc}.png")
    for sub, suffix in (("soft_masks", "_mask.png"), ("masks", "_mask.png"), ("metadata", "_cls.json")):
        (split / sub / f"{name}{suffix}").rename(split / sub / f"{nfd}{suffix}")
    mapping = pixar / "mapping.json"
    mapping.write_text(mapping.read_text(encoding="utf-8").replace(name, nfc), encoding="utf-8")
    ds = PixarDataset(pixar)
    s = ds.load(f"validation/tampered/{nfc}.png")
    np.testing.assert_array_equal(s.label, (region(5, 4, 6) > 0).astype(np.uint8))
    assert ds.classes(f"validation/tampered/{nfc}.png") == ["dog", "frisbee"]


def test_an_accented_editor_option_or_type_prefix_is_one_label_in_either_unicode_form(tmp_path):
    """editor= and a mapping type's prefix kept the name as given: each Unicode form gave another
    label_map_sha256, and editors= in one form left out the images of the other."""
    nfc, nfd = (unicodedata.normalize(form, "éditeur") for form in ("NFC", "NFD"))
    one = make_pixar(tmp_path / "one", ("qwen_coco_val_color",), ("validation",))
    by_option = [PixarDataset(one, editor=e) for e in (nfc, nfd)]
    assert by_option[1].label_space.names == ("background", nfc) == by_option[0].label_space.names
    assert by_option[1].provenance()["label_map"] == by_option[0].provenance()["label_map"]
    assert by_option[1].load(tampered(by_option[1], "val")[0]).meta.turns[0].editor == nfc
    combined = make_pixar(tmp_path / "combined", (f"{nfd}_coco_val_color", f"{nfc}_coco_val_addition",
                                                  "qwen_coco_val_color"), ("validation",))
    ds = PixarDataset(combined, editor_from_type=True)
    assert ds.label_space.names == ("background", "qwen", nfc)
    assert {ds.load(i).meta.turns[0].editor for i in tampered(ds, "val")} == {nfc, "qwen"}
    chosen = PixarDataset(combined, editor_from_type=True, editors=nfd)
    assert chosen.label_space.editors == (nfc,) and len(tampered(chosen, "val")) == 2


def test_two_images_stored_under_one_name_in_two_unicode_forms_are_refused(pixar):
    """Both real/ images read as one id: the second replaced the first, one sample fewer and no word of it."""
    real = pixar / "validation" / "real"
    nfc, nfd = (unicodedata.normalize(form, "café.png") for form in ("NFC", "NFD"))
    for name in (nfc, nfd):
        shutil.copy(next(real.glob("original_*.png")), real / name)
    with pytest.raises(DataError) as err:
        PixarDataset(pixar)
    assert str(err.value) == (f"{pixar}: validation/real/{nfc} is stored twice, as 'validation/real/{nfd}' and "
                              f"'validation/real/{nfc}' (another folder separator or Unicode form); keep one of them")


def test_two_tampered_images_of_one_stem_are_refused_not_both_given_its_mask(pixar):
    """``tampered_x.png`` beside ``tampered_x.jpg``, both in mapping.json: both took ``tampered_x_mask.png``,
    unsaid; which image it is of is not ours to guess, as in every other layout."""
    folder = pixar / "train" / "tampered"
    png = sorted(folder.iterdir())[0]
    shutil.copy(png, png.with_suffix(".jpg"))
    mapping = json.loads((pixar / "mapping.json").read_text())
    (pixar / "mapping.json").write_text(json.dumps({**mapping, png.stem + ".jpg": mapping[png.name]}))
    with pytest.raises(DataError) as err:
        PixarDataset(pixar)
    assert str(err.value) == (f"{pixar / 'train' / 'soft_masks'}: two images for {png.stem}_mask.png: "
                              f"train/tampered/{png.stem}.jpg and train/tampered/{png.name}")


def test_a_mask_or_metadata_file_is_found_by_its_suffix_in_any_case_and_its_stem_as_stored(pixar):
    """As every adapter pairing by name reads them (Tp/Gt's ``Gt/x.PNG``): ``_mask.PNG`` was "no soft_masks/..._mask.png".
    The stem keeps its letter case: ``A_mask.png`` is no mask of ``a.png`` (a case-sensitive disk holds both)."""
    expected = tampered(PixarDataset(pixar), "train")
    for folder, ext in (("soft_masks", ".PNG"), ("metadata", ".JSON")):
        for f in (pixar / "train" / folder).iterdir():
            f.rename(f.with_suffix(ext))
    assert tampered(PixarDataset(pixar), "train") == expected
    mask = next((pixar / "train" / "soft_masks").iterdir())
    mask.rename(mask.with_name(mask.name.upper()))
    with pytest.raises(DataError, match=r"1 tampered image\(s\) lack a mask"):
        PixarDataset(pixar)


def test_two_split_folders_reading_as_one_split_are_refused_naming_both(pixar):
    """validation/ beside a val/ copy of it: both are split val, and the refusal said "two images for
    tampered_..._mask.png", a soft mask of one folder matched with the image of the other."""
    shutil.copytree(pixar / "validation", pixar / "val")
    with pytest.raises(DataError) as err:
        PixarDataset(pixar)
    assert str(err.value) == (f"PIXAR {pixar}: splits 'val' and 'validation' both read as split val; rename or "
                              "leave out one of them")


def test_a_split_whose_tampered_folder_holds_no_image_is_refused(pixar):
    """train/tampered/ left empty: train opened as its real and fully synthetic images alone, unsaid."""
    for p in (pixar / "train" / "tampered").iterdir():
        p.unlink()
    with pytest.raises(DataError) as err:
        PixarDataset(pixar)
    assert str(err.value) == f"PIXAR {pixar / 'train'}: tampered/ holds no image; the split would be its real images alone"


def test_a_mapping_entry_whose_tampered_image_is_gone_is_logged(pixar, caplog):
    """A tampered image deleted (its mask, metadata and mapping entry left): the split was one image short
    with no word, though mapping.json names it."""
    gone = sorted((pixar / "train" / "tampered").iterdir())[0]
    gone.unlink()
    with caplog.at_level("INFO"):
        ds = PixarDataset(pixar)
    assert len(tampered(ds, "train")) == 1
    assert (f"PIXAR {pixar / 'mapping.json'}: 1 entry(ies) name a tampered image no split folder holds "
            f"(e.g. {gone.name})") in caplog.messages
