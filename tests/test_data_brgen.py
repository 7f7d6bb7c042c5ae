"""BR-Gen: Au/ + Tp/<inpainter>_<Stuff|Background>_<photo> + Gt/<...>_mask.png, JSON split files."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import numpy as np
import pytest

from diffzoo import open_dataset
from diffzoo.harness.core.errors import DataError
from diffzoo.harness.core.fsutil import FileRefused
from diffzoo.harness.core.types import BINARY
from diffzoo.harness.data.adapters.brgen import BrGenDataset, parse_tp_name, split_of_file
from diffzoo.harness.data.adapters.generic import TpGtDataset

from helpers.cli import cli
from helpers.data import accented_copies, assert_read_alike
from helpers.images import save_image as save

SIZE = 32
FAST = ["--iterations", "3", "--batch-size", "2", "--crop-size", "32", "--bootstrap", "0", "--device", "cpu"]
# photo -> its forgeries (inpainter as written in the release's names, region); the README's two names first
PHOTOS = {
    "COCO_00000000520": (("MAT", "Stuff"), ("PowerPaint", "Background"), ("LaMa", "Stuff")),
    "ImageNet_n06359193_84719": (("PowerPaint", "Stuff"), ("SDXL", "Background")),
    "Places_00000042": (("BrushNet", "Background"), ("MAT", "Background")),
    "COCO_00000000632": (("SDXL", "Stuff"), ("LaMa", "Background"), ("BrushNet", "Stuff")),
}
TRAIN, VAL = ("COCO_00000000520", "ImageNet_n06359193_84719"), ("Places_00000042", "COCO_00000000632")


def make_brgen(root: Path) -> Path:
    """Au/<photo>.png, Tp/<inpainter>_<region>_<photo>.png, Gt/<same>_mask.png; forgery k of a
    photo edits rows 4k..4k+8 (mask 255 there, 100 elsewhere in its first row: below mid-grey)."""
    yy, xx = np.mgrid[0:SIZE, 0:SIZE]
    for n, (photo, forgeries) in enumerate(PHOTOS.items()):
        real = np.stack([(xx * 3 + n * 40) % 256, (yy * 5 + n * 20) % 256, np.full_like(xx, 60)], -1).astype(np.uint8)
        save(root / "Au" / f"{photo}.png", real)
        for k, (inpainter, region) in enumerate(forgeries):
            fake, mask = real.copy(), np.zeros((SIZE, SIZE), np.uint8)
            fake[4 * k: 4 * k + 8] = 255 - fake[4 * k: 4 * k + 8]
            mask[4 * k: 4 * k + 8] = 255
            mask[31, :5] = 100
            save(root / "Tp" / f"{inpainter}_{region}_{photo}.png", fake)
            save(root / "Gt" / f"{inpainter}_{region}_{photo}_mask.png", mask)
    return root


def write_split(root: Path, name: str, photos: tuple[str, ...], *, real: bool = True, fakes: bool = True,
                only: str | None = None, prefix: str = "/data1/cai/BR-Gen") -> Path:
    """An IMDL-BenCo JSON list as the builders write it: paths of their machine."""
    items = []
    for photo in photos:
        if real:
            items.append([f"{prefix}/Au/{photo}.png", "Negative"])
        for inpainter, region in PHOTOS[photo] if fakes else ():
            if only in (None, region, inpainter):
                stem = f"{inpainter}_{region}_{photo}"
                items.append([f"{prefix}/Tp/{stem}.png", f"{prefix}/Gt/{stem}_mask.png"])
    path = root / name
    path.write_text(json.dumps(items, indent=1))
    return path


@pytest.fixture
def brgen(tmp_path) -> Path:
    return make_brgen(tmp_path / "BR-Gen")


def test_reads_pairs_labels_and_inpainters(brgen):
    assert BrGenDataset.sniff(brgen)
    ds = BrGenDataset(brgen, split="test")
    assert ds.label_space == BINARY and ds.splits() == ["test"] and len(ds.ids("test")) == 14
    s = ds.load("Tp/PowerPaint_Background_COCO_00000000520.png")
    assert s.label[4:12].all() and s.label.sum() == 8 * SIZE  # 255 edited, 100 (below mid-grey) not
    (turn,) = s.meta.turns
    assert (s.meta.base, turn.editor, turn.edit_type) == ("real", "powerpaint", "background")
    au = ds.load("Au/Places_00000042.png")
    assert not au.label.any() and au.meta.base == "real" and au.meta.turns == ()
    d = ds.describe()
    assert d["authentic"] == 4
    assert d["editors"] == {"brushnet": 2, "lama": 2, "mat": 2, "powerpaint": 2, "sdxl": 2}
    assert d["regions"] == {"background": 5, "stuff": 5}
    assert parse_tp_name("lama_stuff_x.png") == ("lama", "stuff", "x")
    assert parse_tp_name("Tp_D_CRN_S_N_cha00063_art00014_11818.jpg") is None


def test_an_unknown_inpainter_is_binary_only(brgen):
    save(brgen / "Tp" / "Other_Stuff_COCO_1.png", np.zeros((SIZE, SIZE, 3), np.uint8))
    save(brgen / "Gt" / "Other_Stuff_COCO_1_mask.png", np.full((SIZE, SIZE), 255, np.uint8))
    ds = BrGenDataset(brgen, split="test")
    s = ds.load("Tp/Other_Stuff_COCO_1.png")
    assert s.label.all() and s.meta.turns == () and s.meta.base == "real"
    assert ds.describe()["editors"]["unknown"] == 1


def test_json_split_files(brgen, caplog):
    write_split(brgen, "br-gen_train.json", TRAIN)
    write_split(brgen, "real_val.json", VAL, fakes=False)
    write_split(brgen, "stuff_val.json", VAL, real=False, only="Stuff")
    write_split(brgen, "gan_val.json", VAL, real=False, only="MAT")
    write_split(brgen, "mani_val.json", VAL, real=False)
    ds = BrGenDataset(brgen)
    assert ds.splits() == ["train", "val", "val_gan", "val_mani", "val_real", "val_stuff"]
    assert len(ds.ids("train")) == 2 + 5 and len(ds.ids("val")) == 2 + 5
    assert ds.ids("val_stuff") == ["Tp/BrushNet_Stuff_COCO_00000000632.png", "Tp/SDXL_Stuff_COCO_00000000632.png"]
    assert ds.ids("val_gan") == ["Tp/MAT_Background_Places_00000042.png"]
    assert ds.ids("val_real") == ["Au/COCO_00000000632.png", "Au/Places_00000042.png"]
    split = ds.provenance()["split"]
    assert split["id"].startswith("brgen-json-") and "br-gen_train.json" in split["source"]
    # listed images that are not in the data (the release ships no real photos) are left out, said once
    for p in (brgen / "Au").iterdir():
        p.unlink()
    with caplog.at_level(logging.WARNING):
        no_au = BrGenDataset(brgen)
    assert "real_val.json: 2 of its 2 image(s) are not in the data" in caplog.text
    assert no_au.splits() == ["train", "val", "val_gan", "val_mani", "val_stuff"]
    assert no_au.ids("train") == [i for i in ds.ids("train") if i.startswith("Tp/")]
    with pytest.raises(DataError, match="none of the images listed in real_val.json is in the data"):
        BrGenDataset(brgen, split_files="real_val.json")


def test_images_no_split_file_names_are_counted_as_in_no_split(brgen, caplog):
    """Only br-gen_train.json beside the data: the images it does not name were in no split, said nowhere
    (splits.json says it of the ids it leaves out)."""
    write_split(brgen, "br-gen_train.json", TRAIN)
    with caplog.at_level(logging.INFO):
        ds = BrGenDataset(brgen)
    assert ds.splits() == ["train"] and len(ds.ids("train")) == 2 + 5
    assert ("BR-Gen split files (br-gen_train.json) leaves 7 sample(s) in no split (e.g. "
            "Au/COCO_00000000632.png)") in caplog.messages


def test_split_files_named_in_upper_case_are_found_and_appledouble_files_are_not(brgen):
    write_split(brgen, "BRGen_train.JSON", TRAIN)
    write_split(brgen, "mani_val.json", VAL)
    (brgen / "._mani_val.json").write_bytes(b"\0\x05\x16\x07\0\x02\0\0Mac OS X        \xff")
    ds = BrGenDataset(brgen)
    assert ds.splits() == ["train", "val", "val_mani"] and len(ds.ids("train")) == 2 + 5
    assert ds.provenance()["split"]["source"] == "BR-Gen split files (BRGen_train.JSON, mani_val.json)"


def test_a_split_file_is_read_once_so_its_split_id_hashes_the_lists_read(brgen, monkeypatch):
    given = write_split(brgen.parent, "mani_val.json", VAL)
    opened: list[str] = []
    real_open = os.open

    def counting_open(path, *args, **kwargs):
        opened.append(os.fspath(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", counting_open)
    ds = BrGenDataset(brgen, split_files=str(given))
    assert opened.count(str(given)) == 1 and len(ds.ids("val")) == 2 + 5


def test_a_split_file_cut_short_is_refused_naming_it_never_left_out(brgen):
    train = write_split(brgen, "br-gen_train.json", TRAIN)
    write_split(brgen, "mani_val.json", VAL)
    (brgen / "train_config.json").write_text('{"lr": 0.1}')  # a JSON object, not a list: no split file
    assert len(BrGenDataset(brgen).ids("train")) == 2 + 5
    train.write_bytes(train.read_bytes()[:100])
    with pytest.raises(DataError, match=rf"^{train}: not readable JSON \(Unterminated string"):
        BrGenDataset(brgen)


def test_a_split_file_holding_no_list_is_named_in_a_warning(brgen, caplog):
    """train.json holding {"a": 1} was passed over unsaid: the data fell back to a hash split."""
    (brgen / "train.json").write_text('{"a": 1}')
    with caplog.at_level(logging.WARNING):
        ds = BrGenDataset(brgen)
    assert (f"{brgen / 'train.json'}: holds an object, not a JSON list of [image, mask] pairs; not read as a "
            "split file") in caplog.text
    assert not ds.provenance()["split"]["id"].startswith("brgen-json-")


def test_split_files_with_a_bom_crlf_and_paths_padded_with_spaces_give_the_clean_splits(brgen):
    write_split(brgen, "br-gen_train.json", TRAIN)
    val = write_split(brgen, "mani_val.json", VAL)
    clean = BrGenDataset(brgen)
    items = [[f" {image} ", f"\t{mask} "] for image, mask in json.loads(val.read_text())]
    val.write_bytes(b"\xef\xbb\xbf" + json.dumps(items, indent=1).replace("\n", "\r\n").encode() + b"\r\n\r\n")
    padded = BrGenDataset(brgen)
    assert {s: padded.ids(s) for s in padded.splits()} == {s: clean.ids(s) for s in clean.splits()}


def test_an_image_listed_in_a_train_and_a_val_file_is_refused(brgen):
    """An image in br-gen_train.json and in a *_val.json was put in both splits: trained on and scored."""
    write_split(brgen, "br-gen_train.json", TRAIN)
    write_split(brgen, "mani_val.json", VAL + TRAIN[:1], real=False)
    with pytest.raises(DataError) as err:
        BrGenDataset(brgen)
    assert str(err.value) == (
        "3 image(s) are in both split train and split val of the BR-Gen split files (br-gen_train.json, "
        "mani_val.json), e.g. Tp/LaMa_Stuff_COCO_00000000520.png, Tp/MAT_Stuff_COCO_00000000520.png, "
        "Tp/PowerPaint_Background_COCO_00000000520.png; an image in two splits would be trained on and evaluated: "
        "list each image in one of them, or name the files to read with --dataset-option split_files=A.json,B.json")
    assert len(BrGenDataset(brgen, split_files="mani_val.json").ids("val")) == 8  # the fix the message gives


def test_split_precedence(brgen):
    write_split(brgen, "br-gen_train.json", TRAIN)
    write_split(brgen, "mani_val.json", VAL)
    other = write_split(brgen.parent, "my_test.json", VAL, prefix="D:\\BR-Gen")
    given = BrGenDataset(brgen, split_files=str(other))
    assert given.splits() == ["test", "test_my"] and len(given.ids("test")) == 7
    (brgen / "splits.json").write_text(json.dumps({"train": ["Tp/MAT_Stuff_COCO_00000000520.png"],
                                                    "val": ["Au/Places_00000042.png"]}))
    assert BrGenDataset(brgen).provenance()["split"]["source"] == "splits.json beside the data"
    assert BrGenDataset(brgen, split="test").splits() == ["test"]
    with pytest.raises(DataError, match="no split in the file name"):
        BrGenDataset(brgen, split_files=[str(brgen / "splits.json")])
    (brgen / "dir_val.json").mkdir()  # a folder, not a split file: never "does not exist"
    with pytest.raises(FileRefused, match=r"dir_val\.json is a folder, not a regular file"):
        BrGenDataset(brgen, split_files="dir_val.json")


def test_hash_split_keeps_a_photo_with_its_forgeries(brgen):
    ds = BrGenDataset(brgen, val_fraction=0.5, split_seed=1)
    assert ds.provenance()["split"] == {
        "id": "diffzoo-hash-v1-seed1-val50-by-photo",
        "source": "hash of each source photo (seed 1, val 50%): a photo and its forgeries share a split"}
    for split in ds.splits():
        photos = {sid.rsplit("/", 1)[1].removesuffix(".png") for sid in ds.ids(split) if sid.startswith("Au/")}
        for sid in ds.ids(split):
            parsed = parse_tp_name(sid)
            assert parsed is None or parsed[2] in photos
    assert sorted(ds.ids("train") + ds.ids("val")) == sorted(BrGenDataset(brgen, split="test").ids("test"))


def test_sniff_and_open_by_path(brgen, tmp_path, diffseg_folder):
    assert isinstance(open_dataset(str(brgen)), BrGenDataset)
    assert split_of_file(Path("BRGen_test.json")) == ("test", None)
    generic = tmp_path / "casia"
    save(generic / "Tp" / "a.png", np.zeros((8, 8, 3), np.uint8))
    save(generic / "Gt" / "a.png", np.zeros((8, 8), np.uint8))
    assert not BrGenDataset.sniff(generic) and not BrGenDataset.sniff(diffseg_folder)
    assert type(open_dataset(str(generic))) is TpGtDataset


def test_run_stats_and_info_from_the_cli(brgen, tmp_path, capsys):
    write_split(brgen, "br-gen_train.json", TRAIN)
    write_split(brgen, "mani_val.json", VAL)
    code, out, err = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "standard",
                         "--dataset", brgen, "--out", tmp_path / "out", *FAST)
    assert code == 0, err
    assert "standard v2 / binary on brgen" in out
    records = [json.loads(p.read_text()) for p in (tmp_path / "out" / "records").glob("*.json")]
    assert records and {r["dataset"]["split"]["id"] for r in records} == {BrGenDataset(brgen).split_info["id"]}

    code, out, err = cli(capsys, "data", "stats", brgen, "--no-plots", "--json")
    assert code == 0, err
    stats = json.loads(out)
    assert stats["splits"] == {"train": 7, "val": 7, "val_mani": 7} and stats["authentic"] == 4
    per_inpainter = {name: e["images_from_turns"] for name, e in stats["editors"].items() if e["value"] is None}
    assert per_inpainter == {"brushnet": 2, "lama": 2, "mat": 2, "powerpaint": 2, "sdxl": 2}
    assert stats["turns"]["counts"] == {"0": 4, "1": 10, "unknown": 0}
    assert stats["edited_area"]["overall"]["count"] == 10
    assert stats["edited_area"]["overall"]["mean"] == pytest.approx(8 / SIZE)
    # per inpainter (named in the metadata only): the edited area of its images
    assert {name: d["count"] for name, d in stats["edited_area"]["editors"].items()} == {
        "edited": 10, **per_inpainter}
    assert stats["edited_area"]["editors"]["lama"]["mean"] == pytest.approx(8 / SIZE)

    code, out, err = cli(capsys, "data", "info", brgen)
    assert code == 0, err
    assert "editors: {'brushnet': 2" in out and f"fingerprint: {BrGenDataset(brgen).fingerprint()}" in out


def test_new_sniffs_and_the_old_ones_keep_to_their_layouts(brgen, tmp_path, diffseg_folder):
    from diffzoo.harness.data.adapters.casia import Casia1Dataset, Casia2Dataset
    from diffzoo.harness.data.adapters.cocoglide import CocoGlideDataset
    from diffzoo.harness.data.adapters.deal300k import Deal300kDataset

    from helpers.data import make_casia1, make_casia2, make_cocoglide, make_deal_zips, make_tpgt

    layouts = {
        "brgen": brgen, "deal300k": make_deal_zips(tmp_path / "DEAL-300K"),
        "casia1": make_casia1(tmp_path / "v1"), "casia2": make_casia2(tmp_path / "v2" / "CASIA2.0"),
        "cocoglide": make_cocoglide(tmp_path / "CocoGlide"), "tpgt": make_tpgt(tmp_path / "plain"),
        "diffseg30k": diffseg_folder,
    }
    accepts = {BrGenDataset: {"brgen"}, Deal300kDataset: {"deal300k"}, Casia1Dataset: {"casia1"},
               Casia2Dataset: {"casia2"}, CocoGlideDataset: {"cocoglide"},
               TpGtDataset: {"tpgt", "brgen"}}  # the registry asks brgen first (name order)
    for adapter, expected in accepts.items():
        assert {name for name, path in layouts.items() if adapter.sniff(path)} == expected, adapter.__name__


def test_split_files_naming_accented_files_match_them_in_either_unicode_form(brgen, tmp_path):
    """The ids read the names in NFC, the split files' names were matched as written: a copy made on macOS
    (names and lists decomposed) left Places_00000042's images out of val, "not in the data"."""
    write_split(brgen, "br-gen_train.json", TRAIN)
    write_split(brgen, "mani_val.json", VAL)
    copies = accented_copies(brgen, tmp_path, "Places_00000042")
    nfc, nfd = (BrGenDataset(copies[form]) for form in ("NFC", "NFD"))
    assert len(nfc.ids("val")) == 2 + 5
    assert_read_alike(nfc, nfd, "Places_00000042")
