"""The TGIF / TGIF2 adapter on a tiny copy of its layout (IDLabMedia/tgif-dataset README)."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import numpy as np
import pytest

from diffzoo.harness.core.errors import ConfigError, DataError
from diffzoo.harness.core.types import BINARY
from diffzoo.harness.data.adapters.tgif import Fake, TgifDataset
from diffzoo.harness.run.factories import open_dataset

from helpers.cli import cli
from helpers.data import accented_copies, assert_read_alike, make_cocoglide, make_tpgt
from helpers.images import save_image as save

H, W, CROP = 40, 48, 32
FAST = ["--iterations", "2", "--batch-size", "2", "--crop-size", "32", "--bootstrap", "0", "--device", "cpu"]
RNG = np.random.default_rng(7)
PHOTOS = {"training": ["111", "222"], "validation": ["444"], "testing": ["333"]}
PROMPTS = {"111": "dog, A dog on a sofa", "222": "cat, A cat in a box", "333": "airplane, A jet in the sky",
           "444": "boat, A boat on a lake"}


def _mask(h: int, w: int, top: int, rows: int) -> np.ndarray:
    m = np.zeros((h, w), np.uint8)
    m[top:top + rows] = 255
    return m


def _img(h: int, w: int) -> np.ndarray:
    return RNG.integers(0, 256, (h, w, 3), dtype=np.uint8)


def make_tgif(root: Path) -> Path:
    """TGIF's folders for four photos: a segm and a bbox mask each (bands of 4 / 6 rows at the
    photo's size, Photoshop's extra-border mask 10 rows, the 512 crop's 3 / 5 rows), SD2-sp
    (ps_mask), PS-sp, SD2-fr (sd2-512), SDXL-fr (sdxl-1024, no 1024 mask for bbox: only segm
    written), one variation each, originals with a crop, and the metadata CSVs."""
    for split, ids in PHOTOS.items():
        for coco in ids:
            save(root / "original" / split / f"{coco}_orig.png", _img(H, W))
            save(root / "original" / split / f"{coco}_orig_512.png", _img(CROP, CROP))
            for mtype, rows in (("segm", 4), ("bbox", 6)):
                masks = root / "masks" / split
                save(masks / f"{coco}_mask_{mtype}.png", _mask(H, W, 2, rows))
                save(masks / f"{coco}_mask_{mtype}.png_ps_mask.png", _mask(H, W, 2, 10))
                save(masks / f"{coco}_mask_{mtype}_512.png", _mask(CROP, CROP, 1, rows - 1))
                save(masks / f"{coco}_mask_{mtype}_1024.png", _mask(CROP, CROP, 0, rows + 1))
                stem = f"{coco}_mask_{mtype}.png"
                save(root / "SD2-sp" / split / f"{stem}_ps_mask.png_sd2_0.png", _img(H, W))
                save(root / "PS-sp" / split / f"{stem}_ps_1.png", _img(H, W))
                save(root / "SD2-fr" / split / f"{stem}_sd2-512_2.png", _img(CROP, CROP))
                save(root / "SDXL-fr" / split / f"{stem}_sdxl-1024_0.png", _img(CROP, CROP))
    meta = root / "metadata"
    meta.mkdir()
    for split, ids in PHOTOS.items():
        rows = [f'x,{c},{W},{H},"{PROMPTS[c]}","[0, 0, 32, 32]",31,8.5,{c}' for c in ids]
        (meta / f"orig_{split}.csv").write_text(
            "category,image_id,width,height,prompt,bbox_512,num_inference_steps,guidance_scale,seed\n"
            + "\n".join(rows) + "\n", encoding="utf-8")
        scores = [f"x,{c},{m},0,5.1,1.5,-300.0,0.3,0.4" for c in ids for m in ("bbox", "segm")]
        (meta / f"flux1dev_{split}.csv").write_text(
            "category,image_id,mask_variation,gen_variation_id,nima_mean,nima_std,giqa_score,itm,cos\n"
            + "\n".join(scores) + "\n", encoding="utf-8")
    return root


def make_random(root: Path) -> Path:
    """TGIF2's random-mask download: masks-sd2, sd2-sp and sd2-fr for photo 333 (testing)."""
    save(root / "masks-sd2" / "testing" / "333_mask_random.png", _mask(H, W, 20, 7))
    save(root / "masks-sd2" / "testing" / "333_mask_random_512.png", _mask(CROP, CROP, 10, 7))
    save(root / "sd2-sp" / "testing" / "333_mask_random.png_sd2_0.png", _img(H, W))
    save(root / "sd2-fr" / "testing" / "333_mask_random.png_sd2-512_1.png", _img(CROP, CROP))
    return root


@pytest.fixture
def tgif(tmp_path) -> Path:
    return make_tgif(tmp_path / "TGIF")


def _edited_rows(label: np.ndarray) -> list[int]:
    return [int(r) for r in np.flatnonzero(label.any(axis=1))]


def test_reads_fakes_masks_splits_and_metadata(tgif, caplog):
    caplog.set_level("INFO")
    ds = TgifDataset(tgif)
    assert ds.label_space == BINARY and ds.splits() == ["train", "val", "test"]
    assert ds.split_info == {"id": "tgif-folders", "source": "TGIF's own training / validation / testing folders"}
    test = ds.ids("test")
    assert test == sorted([
        "original/testing/333_orig.png",
        *(f"SD2-sp/testing/333_mask_{m}.png_ps_mask.png_sd2_0.png" for m in ("segm", "bbox")),
        *(f"PS-sp/testing/333_mask_{m}.png_ps_1.png" for m in ("segm", "bbox")),
        *(f"SD2-fr/testing/333_mask_{m}.png_sd2-512_2.png" for m in ("segm", "bbox")),
        *(f"SDXL-fr/testing/333_mask_{m}.png_sdxl-1024_0.png" for m in ("segm", "bbox")),
    ])
    assert len(ds.ids("train")) == 2 * 9 and len(ds.ids("val")) == 9
    assert "crop(s) of the originals" in caplog.text  # the 512 crops are no second authentic sample

    # the mask each fake names: Photoshop's border for SD2-sp, the plain one for PS-sp, the crop's for fr
    expect = {"SD2-sp/testing/333_mask_segm.png_ps_mask.png_sd2_0.png": list(range(2, 12)),
              "PS-sp/testing/333_mask_segm.png_ps_1.png": list(range(2, 6)),
              "PS-sp/testing/333_mask_bbox.png_ps_1.png": list(range(2, 8)),
              "SD2-fr/testing/333_mask_segm.png_sd2-512_2.png": list(range(1, 4)),
              "SDXL-fr/testing/333_mask_bbox.png_sdxl-1024_0.png": list(range(0, 7)),
              "original/testing/333_orig.png": []}
    for sid, rows in expect.items():
        s = ds.load(sid)
        assert _edited_rows(s.label) == rows, sid
        assert set(np.unique(s.label)) <= {0, 1}

    fake = ds.load("SD2-fr/testing/333_mask_bbox.png_sd2-512_2.png").meta
    assert fake.base == "real" and len(fake.turns) == 1
    turn = fake.turns[0]
    assert (turn.editor, turn.edit_type, turn.prompt) == ("sd2", "fr", PROMPTS["333"])
    assert ds.load("PS-sp/testing/333_mask_bbox.png_ps_1.png").meta.turns[0].editor == "ps"
    real = ds.load("original/testing/333_orig.png").meta
    assert real.base == "real" and real.turns == ()
    assert ds.fake_info("SDXL-fr/testing/333_mask_segm.png_sdxl-1024_0.png") == Fake("sdxl", "fr", "segm", "1024", "333")
    assert ds.fake_info("SD2-sp/testing/333_mask_bbox.png_ps_mask.png_sd2_0.png").resolution == "orig"
    assert ds.fake_info("original/testing/333_orig.png") is None
    with pytest.raises(DataError, match="no sample"):
        ds.fake_info("nope.png")

    d = ds.describe()
    assert d["generators"] == {"sd2": 16, "sdxl": 8, "ps": 8}
    assert d["variants"] == {"fr": 16, "sp": 16} and d["mask_types"] == {"bbox": 16, "segm": 16}
    assert d["resolutions"] == {"1024": 8, "512": 8, "orig": 16}
    assert d["authentic"] == 4 and d["prompts"] == 4 and d["regenerated"] == "mask"


def test_options_choose_fakes_labels_and_edit_types(tgif):
    fr = "SD2-fr/testing/333_mask_segm.png_sd2-512_2.png"
    whole = TgifDataset(tgif, regenerated="whole")
    assert whole.load(fr).label.all()  # a fully regenerated image is synthetic everywhere
    sp = "SD2-sp/testing/333_mask_segm.png_ps_mask.png_sd2_0.png"
    assert _edited_rows(whole.load(sp).label) == list(range(2, 12))  # a spliced one keeps its mask
    assert whole.fingerprint() != TgifDataset(tgif).fingerprint()
    assert whole.notice is None and TgifDataset(tgif, variants="sp").notice is None

    both = TgifDataset(tgif, edit_type="both")
    assert both.load(fr).meta.turns[0].edit_type == "fr-segm"
    assert TgifDataset(tgif, edit_type="mask").load(fr).meta.turns[0].edit_type == "segm"

    some = TgifDataset(tgif, generators="sdxl,ps", variants=["fr"], mask_types="bbox", authentic=False)
    assert some.ids("test") == ["SDXL-fr/testing/333_mask_bbox.png_sdxl-1024_0.png"]
    assert TgifDataset(tgif, split="test").splits() == ["test"]
    for bad, said in (({"regenerated": "all"}, "regenerated='all' is not one of mask, whole"),
                      ({"edit_type": "kind"}, "edit_type='kind' is not one of variant, mask, both"),
                      ({"generators": "sd3,sd2"}, "generators='sd3,sd2': sd3 is not one of "
                                                  "sd2, sdxl, ps, flux1schnell, flux1dev, flux1filldev"),
                      ({"variants": "xx"}, "variants='xx': xx is not one of sp, fr")):
        with pytest.raises(ConfigError) as err:  # one wording for every adapter's choice option
            TgifDataset(tgif, **bad)
        assert str(err.value) == f"TGIF {said}"
    with pytest.raises(DataError, match="no TGIF fakes"):
        TgifDataset(tgif, generators="flux1dev")


def test_fingerprint_is_stable_and_follows_content(tgif, tmp_path):
    first = TgifDataset(tgif).fingerprint()
    assert TgifDataset(tgif).fingerprint() == first
    moved = tmp_path / "elsewhere" / "TGIF"
    shutil.copytree(tgif, moved)
    assert TgifDataset(moved).fingerprint() == first  # content, not location
    save(moved / "masks" / "testing" / "333_mask_segm_512.png", _mask(CROP, CROP, 5, 3))
    assert TgifDataset(moved).fingerprint() != first
    (tgif / "metadata" / "orig_testing.csv").write_text(
        "category,image_id,prompt\nx,333,another prompt\n", encoding="utf-8")
    changed = TgifDataset(tgif)
    assert changed.fingerprint() != first
    assert changed.load("PS-sp/testing/333_mask_segm.png_ps_1.png").meta.turns[0].prompt == "another prompt"


APPLEDOUBLE = b"\0\x05\x16\x07\0\x02\0\0Mac OS X        \0\x02\0\0\0\x09\0\0\0\x32\0\0\x0e\xb0\xff\x80"
"""The head of a ``._name`` file a macOS copy writes beside each file (AppleDouble): not UTF-8."""


def test_a_macos_copy_with_appledouble_files_and_an_upper_case_csv_reads_as_the_clean_one(tgif):
    clean = TgifDataset(tgif)
    fr = "SD2-fr/testing/333_mask_segm.png_sd2-512_2.png"
    meta = tgif / "metadata"
    (meta / "orig_testing.csv").rename(meta / "ORIG_TESTING.CSV")
    for name in ("._orig_testing.csv", "._flux1dev_testing.csv", ".DS_Store"):
        (meta / name).write_bytes(APPLEDOUBLE)
    (tgif / "__MACOSX" / "metadata").mkdir(parents=True)
    (tgif / "__MACOSX" / "metadata" / "._orig_training.csv").write_bytes(APPLEDOUBLE)
    copy = TgifDataset(tgif)
    assert {s: copy.ids(s) for s in copy.splits()} == {s: clean.ids(s) for s in clean.splits()}
    assert copy.load(fr).meta.turns[0].prompt == PROMPTS["333"] and copy.describe()["prompts"] == 4


def test_an_empty_metadata_csv_is_refused_naming_it_never_read_as_no_prompts(tgif):
    empty = tgif / "metadata" / "orig_testing.csv"
    empty.write_bytes(b"")
    with pytest.raises(DataError) as err:
        TgifDataset(tgif)
    assert str(err.value) == f"{empty}: empty CSV file (no header line); expected the columns image_id,prompt"


def test_a_fake_without_its_mask_is_refused_or_skipped(tgif, caplog):
    (tgif / "masks" / "testing" / "333_mask_bbox_1024.png").unlink()
    with pytest.raises(DataError, match=r"1 fake\(s\) have no mask .*333_mask_bbox_1024\.png in masks/testing"):
        TgifDataset(tgif)
    ds = TgifDataset(tgif, skip_unpaired=True)
    assert "SDXL-fr/testing/333_mask_bbox.png_sdxl-1024_0.png" not in ds.ids("test")
    assert "skipping them" in caplog.text


def test_malformed_prompt_csv_and_missing_layout_are_data_errors(tgif, tmp_path):
    (tgif / "metadata" / "orig_testing.csv").write_text("image_id,prompt\n333,a,extra\n", encoding="utf-8")
    with pytest.raises(DataError, match="line 2 has more fields than the header image_id,prompt"):
        TgifDataset(tgif)
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="no TGIF data found"):
        TgifDataset(tmp_path / "empty")


def test_a_folder_of_downloads_reads_each_with_its_own_masks(tmp_path):
    top = tmp_path / "all"
    make_tgif(top / "TGIF")
    make_random(top / "TGIF2-random")
    ds = TgifDataset(top)
    sp = "TGIF2-random/sd2-sp/testing/333_mask_random.png_sd2_0.png"
    fr = "TGIF2-random/sd2-fr/testing/333_mask_random.png_sd2-512_1.png"
    assert {sp, fr, "TGIF/original/testing/333_orig.png"} <= set(ds.ids("test"))
    assert _edited_rows(ds.load(sp).label) == list(range(20, 27))
    assert _edited_rows(ds.load(fr).label) == list(range(10, 17))
    assert ds.fake_info(fr) == Fake("sd2", "fr", "random", "512", "333")
    assert ds.load(fr).meta.turns[0].prompt == PROMPTS["333"]
    assert ds.describe()["mask_types"] == {"bbox": 16, "random": 2, "segm": 16}


def test_a_link_to_a_download_listed_already_is_not_read_twice(tmp_path, caplog):
    """A folder link repeating a download was read as a second download: every fake twice, under two ids."""
    top = tmp_path / "all"
    make_tgif(top / "TGIF")
    (top / "TGIF-copy").symlink_to(top / "TGIF", target_is_directory=True)
    with caplog.at_level(logging.INFO):
        ds = TgifDataset(top)
    assert {i.split("/", 1)[0] for s in ds.splits() for i in ds.ids(s)} == {"TGIF"}
    assert (f"{top / 'TGIF-copy'}: folder link to {top / 'TGIF'} not followed (a loop, or a folder listed already)"
            in caplog.messages)


def test_registry_sniffing_picks_tgif_and_only_tgif(tgif, tmp_path, diffseg_folder):
    from diffzoo.harness.core.plugins import get_registry
    assert isinstance(open_dataset(str(tgif)), TgifDataset)
    others = {"cocoglide": make_cocoglide(tmp_path / "CocoGlide"), "tpgt": make_tpgt(tmp_path / "plain"),
              "diffseg30k": diffseg_folder}
    claims = []
    for entry in get_registry().list("dataset"):
        sniff = getattr(entry.load(), "sniff", None)
        if sniff is not None and sniff(tgif):
            claims.append(entry.name)
    assert claims == ["tgif"]
    assert not any(TgifDataset.sniff(p) for p in others.values())
    assert not TgifDataset.sniff(tmp_path / "missing") and not TgifDataset.sniff(tgif / "metadata" / "orig_testing.csv")
    lone = tmp_path / "lone"  # a generator folder without any masks folder is no TGIF download
    save(lone / "SD2-sp" / "testing" / "333_mask_segm.png_sd2_0.png", _img(8, 8))
    assert not TgifDataset.sniff(lone)


def test_stats_and_run_from_the_cli(tgif, tmp_path, capsys):
    code, out, err = cli(capsys, "data", "stats", tgif, "--no-plots", "--json")
    assert code == 0, err
    stats = json.loads(out)
    assert stats["splits"] == {"train": 18, "val": 9, "test": 9} and stats["authentic"] == 4
    per_generator = {name: e["images_from_turns"] for name, e in stats["editors"].items() if e["value"] is None}
    assert per_generator == {"ps": 8, "sd2": 16, "sdxl": 8}

    code, out, err = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "standard",
                         "--dataset", tgif, "--out", tmp_path / "out", *FAST)
    assert code == 0, err
    assert "on tgif" in out and "labelled by its inpainting mask" in out
    records = [json.loads(p.read_text()) for p in (tmp_path / "out" / "records").glob("*.json")]
    assert records and {r["dataset"]["split"]["id"] for r in records} == {"tgif-folders"}
    assert {r["dataset"]["fingerprint"] for r in records} == {TgifDataset(tgif).fingerprint()}


def test_a_model_scored_on_tgif_gets_a_column_per_generator_on_the_board(tgif, tmp_path, capsys):
    out = tmp_path / "out"
    code, _, err = cli(capsys, "run", "--detector", "segformer.tiny", "--suite", "cross-dataset", "--eval-dataset",
                       tgif, "--out", out, *FAST)
    assert code == 0, err
    code, _, err = cli(capsys, "leaderboard", "publish", "--store", out, "--format", "md", "--out", tmp_path / "pub")
    assert code == 0, err
    header = next(line for line in (tmp_path / "pub" / "overview.md").read_text().splitlines()
                  if line.startswith("|") and "detector" in line)
    for g in ("ps", "sd2", "sdxl"):  # the fixture's SD2-sp, PS-sp, SD2-fr and SDXL-fr folders
        assert f"test: {g} F1" in header, (g, header)


def test_an_accented_folder_gives_one_set_of_ids_and_one_fingerprint_in_either_unicode_form(tmp_path):
    """The ids kept the download folder's name as stored: decomposed (macOS) and composed differed."""
    make_tgif(tmp_path / "src" / "downloads" / "tgifdl")
    copies = accented_copies(tmp_path / "src" / "downloads", tmp_path, "tgifdl")
    assert_read_alike(TgifDataset(copies["NFC"]), TgifDataset(copies["NFD"]), "tgifdl")


def test_two_masks_folders_in_another_letter_case_are_refused_naming_both(tgif):
    """``masks/`` beside ``Masks/``: the one the listing gave last was read, the other passed over unsaid."""
    (tgif / "Masks").mkdir()
    with pytest.raises(DataError) as err:
        TgifDataset(tgif)
    assert str(err.value) == f"{tgif}: Masks and masks are both the masks/ folder, in another letter case; keep one of them"


def test_a_mask_is_found_by_its_suffix_in_any_case_and_its_stem_as_stored(tgif):
    """As every adapter pairing by name reads them (Tp/Gt's ``Gt/x.PNG``): ``333_mask_segm.PNG`` was "wants
    333_mask_segm.png". The stem keeps its letter case: ``333_MASK_SEGM_512.png`` is no mask of an SD2-fr fake."""
    expected = TgifDataset(tgif).ids("test")
    for mask in (tgif / "masks" / "testing").iterdir():
        mask.rename(mask.with_suffix(".PNG"))
    assert TgifDataset(tgif).ids("test") == expected
    crop = tgif / "masks" / "testing" / "333_mask_segm_512.PNG"
    crop.rename(crop.with_name(crop.name.upper()))
    with pytest.raises(DataError, match=r"SD2-fr/testing/333_mask_segm\.png_sd2-512_2\.png \(wants 333_mask_segm_512"):
        TgifDataset(tgif)


def test_a_regenerated_fakes_crop_mask_is_named_in_the_letter_case_of_the_fakes_own_name(tgif):
    """A release writing ``333_MASK_SEGM.png_sd2-512_2.png`` beside ``333_MASK_SEGM_512.png``: the crop's mask
    name was built in lower case ("wants 333_mask_segm_512.png"), the spliced ones' kept the name's case."""
    fake = tgif / "SD2-fr" / "testing" / "333_mask_segm.png_sd2-512_2.png"
    fake.rename(fake.with_name("333_MASK_SEGM.png_sd2-512_2.png"))
    crop = tgif / "masks" / "testing" / "333_mask_segm_512.png"
    crop.rename(crop.with_name("333_MASK_SEGM_512.png"))
    ds = TgifDataset(tgif)
    sid = "SD2-fr/testing/333_MASK_SEGM.png_sd2-512_2.png"
    assert ds.fake_info(sid) == Fake("sd2", "fr", "segm", "512", "333")
    assert _edited_rows(ds.load(sid).label) == [1, 2, 3]
