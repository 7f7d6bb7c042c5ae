"""The PAPE adapter on a tiny copy of its real layout, and the files it must refuse."""

from __future__ import annotations

import json
import shutil
import sys
import unicodedata
from pathlib import Path

import numpy as np
import pytest

from diffzoo.harness.core.errors import ConfigError, CorruptSampleError, DataError
from diffzoo.harness.core.fsutil import FileRefused
from diffzoo.harness.data.adapters.pape import PAPE_EDITORS, PapeDataset

from helpers.data import accented_copies, assert_read_alike
from helpers.images import save_image as save

EDITORS = ("flux2_dev", "qwen_image_edit_2511")  # created in this order; label order is the card's
IDS = {"COCO": ["000000000139", "000000000285", "000000000632"], "Places": ["Places365_val_00000007"]}
SIZE = 32

# -- reads audit: every file/folder the process opens or lists while a test watches ---------------
_WATCH: list[str] | None = None


def _audit(event: str, args: tuple) -> None:
    if _WATCH is not None and event in ("open", "os.scandir", "os.listdir") and args:
        if isinstance(args[0], (str, bytes, Path)):
            _WATCH.append(str(args[0] if not isinstance(args[0], bytes) else args[0].decode()))


sys.addaudithook(_audit)


def opened_during(fn) -> list[str]:
    global _WATCH
    _WATCH = []
    try:
        fn()
        return list(_WATCH)
    finally:
        _WATCH = None


# -- fixture -------------------------------------------------------------------------------------
def picture(seed: int, h: int = SIZE, w: int = SIZE) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)


def square(k: int, h: int = SIZE, w: int = SIZE) -> np.ndarray:
    """A 0/255 mask whose edited square depends on ``k``."""
    m = np.zeros((h, w), np.uint8)
    m[k : k + 8, 2 * k : 2 * k + 6] = 255
    return m


def make_pape(root: Path, outside: Path | None = None) -> Path:
    """PAPE's layout: <subset>/<editor>/{manifest.jsonl, source, normal, abnormal, masks/...};
    COCO's split file inside the subset, Places' at the root (nested by subset)."""
    for s, (subset, ids) in enumerate(IDS.items()):
        for e, editor in enumerate(EDITORS):
            folder = root / subset / editor
            rows = []
            for i, image_id in enumerate(ids):
                seed = 100 * s + 10 * e + i
                save(folder / "source" / f"{image_id}.png", picture(seed))
                save(folder / "normal" / f"{image_id}.png", picture(seed + 1000))
                save(folder / "abnormal" / f"{image_id}.jpg", picture(seed + 2000))
                save(folder / "masks" / "normal" / f"{image_id}.png", square(i + e))
                save(folder / "masks" / "abnormal" / f"{image_id}_mask.png", square(i + e + 1))
                builder = outside or Path("/home/builder/pape_export")
                for prompt in (f"add a red hat to object {i}", f"给物体{i}加一顶红帽子"):
                    rows.append({
                        "image_id": image_id,
                        "normal_prompt": prompt,
                        "abnormal_prompt": "abnormal " + prompt,
                        "source_paths": [str(builder / f"{image_id}.png"), f"../../outside/{image_id}.png"],
                        "export_paths": {"normal": str(builder / "normal" / f"{image_id}.png")},
                    })
            (folder / "manifest.jsonl").write_text(
                "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
            )
    coco = IDS["COCO"]
    write_json(root / "COCO" / "splits" / "split_seed2026.json",
               {"train": [coco[0]], "validation": [coco[1]], "test": [coco[2]]})
    write_json(root / "splits" / "split_seed2026.json", {"Places": {"test": IDS["Places"]}})
    return root


def write_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


@pytest.fixture
def pape(tmp_path) -> Path:
    return make_pape(tmp_path / "PAPE_Dataset")


# -- reading -------------------------------------------------------------------------------------
def test_reads_the_layout_with_editor_classes_and_splits(pape):
    assert PapeDataset.sniff(pape) and not PapeDataset.sniff(pape / "COCO")
    ds = PapeDataset(pape)
    assert ds.label_space.names == ("background", "qwen_image_edit_2511", "flux2_dev")
    assert ds.splits() == ["train", "val", "test"]
    # one sample per image file: en + zh rows do not duplicate; edited + source per editor
    all_ids = [i for s in ds.splits() for i in ds.ids(s)]
    assert len(all_ids) == len(set(all_ids)) == sum(len(v) for v in IDS.values()) * len(EDITORS) * 2
    coco = IDS["COCO"]
    assert ds.ids("train") == sorted(
        f"COCO/{e}/{kind}/{coco[0]}.png" for e in EDITORS for kind in ("normal", "source")
    )
    assert all(i.startswith("Places/") for i in ds.ids("test") if not i.endswith(f"{coco[2]}.png"))

    sid = f"COCO/flux2_dev/normal/{coco[1]}.png"
    s = ds.load(sid)
    assert s.image.shape == (SIZE, SIZE, 3)
    np.testing.assert_array_equal(s.image, picture(100 * 0 + 10 * 0 + 1 + 1000))
    assert set(np.unique(s.label)) == {0, 2}  # flux2_dev is class 2
    np.testing.assert_array_equal(s.label > 0, square(1) > 0)
    assert s.meta.base == "real" and s.meta.source == "COCO"
    (turn,) = s.meta.turns
    assert (turn.editor, turn.edit_type, turn.prompt) == ("flux2_dev", "normal", "add a red hat to object 1")
    assert ds.prompts(sid) == {"en": "add a red hat to object 1", "zh": "给物体1加一顶红帽子"}
    q = ds.load(f"COCO/qwen_image_edit_2511/normal/{coco[1]}.png")
    np.testing.assert_array_equal(q.label, (square(2) > 0).astype(np.uint8))  # class 1

    src = ds.load(f"Places/qwen_image_edit_2511/source/{IDS['Places'][0]}.png")
    assert not src.label.any() and src.meta.turns == () and src.meta.base == "real"
    assert ds.prompts(f"Places/qwen_image_edit_2511/source/{IDS['Places'][0]}.png") == {}
    d = ds.describe()
    assert d["samples"] == {"edited": 8, "source": 8} and d["edits"] == "normal"
    assert sorted(Path(f).relative_to(pape).as_posix() for f in d["split_files"]) == [
        "COCO/splits/split_seed2026.json", "splits/split_seed2026.json"]


def test_options_select_edits_editors_subsets_and_split(pape):
    ab = PapeDataset(pape, edits="abnormal", include_source=False, prompt_language="zh")
    sid = f"COCO/qwen_image_edit_2511/abnormal/{IDS['COCO'][0]}.jpg"
    assert all("/abnormal/" in i for s in ab.splits() for i in ab.ids(s))
    s = ab.load(sid)
    np.testing.assert_array_equal(s.label > 0, square(2) > 0)  # masks/abnormal/<id>_mask.png
    assert s.meta.turns[0].edit_type == "abnormal" and s.meta.turns[0].prompt == "abnormal 给物体0加一顶红帽子"

    one = PapeDataset(pape, editors="flux2_dev", subsets=["Places"], split="test")
    assert one.label_space.names == ("background", "flux2_dev") and one.splits() == ["test"]
    assert len(one.ids("test")) == 2
    sid = f"Places/flux2_dev/normal/{IDS['Places'][0]}.png"
    assert set(np.unique(one.load(sid).label)) == {0, 1}
    # the caller's editor order is the label order
    rev = PapeDataset(pape, editors=["flux2_dev", "qwen_image_edit_2511"], split="test")
    assert rev.label_space.editors == ("flux2_dev", "qwen_image_edit_2511")


def test_fingerprint_follows_content_not_location(pape, tmp_path):
    fp = PapeDataset(pape).fingerprint()
    copy = shutil.copytree(pape, tmp_path / "elsewhere" / "PAPE_Dataset")
    assert PapeDataset(copy).fingerprint() == fp
    assert PapeDataset(copy, edits="abnormal").fingerprint() != fp
    save(copy / "COCO" / "flux2_dev" / "masks" / "normal" / f"{IDS['COCO'][0]}.png", square(5))
    assert PapeDataset(copy).fingerprint() != fp


def test_builder_paths_in_the_manifest_are_never_read(tmp_path):
    outside = tmp_path / "builder_machine"
    for name in [*IDS["COCO"], *IDS["Places"]]:
        save(outside / f"{name}.png", picture(7))
        save(outside / "normal" / f"{name}.png", picture(8))
    root = make_pape(tmp_path / "data" / "PAPE_Dataset", outside=outside)
    (tmp_path / "data" / "outside").mkdir()  # where the relative "../../outside/..." would lead

    def use() -> None:
        ds = PapeDataset(root)
        for split in ds.splits():
            for sid in ds.ids(split):
                ds.load(sid)
        ds.fingerprint()

    seen = opened_during(use)
    assert seen, "the audit hook saw nothing"
    assert not [p for p in seen if str(outside) in p or "outside" in Path(p).parts]
    assert any(str(root) in p for p in seen)


def test_an_image_id_that_escapes_the_folder_is_refused(pape, tmp_path):
    secret = tmp_path / "secret.png"
    save(secret, picture(9))
    manifest = pape / "COCO" / "flux2_dev" / "manifest.jsonl"
    lines = manifest.read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[2])
    row["image_id"] = "../../../../secret"
    lines[2] = json.dumps(row)
    manifest.write_text("\n".join(lines) + "\n", encoding="utf-8")

    def attempt() -> None:
        with pytest.raises(DataError, match=r"manifest.jsonl, line 3: field 'image_id' is '\.\./\.\./\.\./\.\./secret'"):
            PapeDataset(pape)

    seen = opened_during(attempt)
    assert seen and not [p for p in seen if "secret" in p]
    row["image_id"] = "/etc/passwd"
    manifest.write_text(json.dumps(row) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match="line 1: field 'image_id'.*no '/'"):
        PapeDataset(pape)


# -- refusals ------------------------------------------------------------------------------------
def _edit_manifest(root: Path, fn) -> Path:
    m = root / "COCO" / "qwen_image_edit_2511" / "manifest.jsonl"
    m.write_text(fn(m.read_text(encoding="utf-8")), encoding="utf-8")
    return m


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda r: (r / "COCO/qwen_image_edit_2511/manifest.jsonl").unlink(),
         r"qwen_image_edit_2511: missing manifest\.jsonl; each <subset>/<editor>/ folder holds"),
        (lambda r: shutil.rmtree(r / "COCO/qwen_image_edit_2511/masks/normal"),
         r"missing masks/normal/"),
        (lambda r: _edit_manifest(r, lambda t: t.replace("}\n", "\n", 1)),
         r"qwen_image_edit_2511/manifest\.jsonl, line 1: not valid JSON \(Expecting ',' delimiter"),
        (lambda r: _edit_manifest(r, lambda t: t.replace('"normal_prompt"', '"prompt_n"', 2)),
         r"manifest\.jsonl, line 1: missing field 'normal_prompt'"),
        (lambda r: _edit_manifest(r, lambda t: "[1, 2]\n" + t),
         r"manifest\.jsonl, line 1: expected a JSON object, got list"),
        (lambda r: (r / "splits" / "split_seed2026.json").unlink(),
         r"no split file for subset Places; looked for Places/splits/split_seed2026\.json and "
         r"splits/split_seed2026\.json\. Pass split='test'"),
        (lambda r: write_json(r / "COCO/splits/split_seed2026.json",
                              {"train": [IDS["COCO"][0], "000000999999"], "test": IDS["COCO"][1:]}),
         r"split_seed2026\.json: 1 image id\(s\) are not in the data \(subset COCO.*e\.g\. 000000999999"),
        (lambda r: write_json(r / "COCO/splits/split_seed2026.json",
                              {"train": IDS["COCO"], "test": IDS["COCO"][:1]}),
         r"image id 000000000139 is in both 'train' and 'test'"),
        (lambda r: write_json(r / "COCO/splits/split_seed2026.json", {"train": [], "validation": [], "test": []}),
         r"COCO/splits/split_seed2026\.json: it names no image id \(every split list is empty\)$"),
        (lambda r: write_json(r / "splits/split_seed2026.json", {"Places": {"test": []}}),
         r"splits/split_seed2026\.json: subset 'Places' names no image id \(every split list is empty\)$"),
        (lambda r: write_json(r / "splits/split_seed2026.json", {"COCO": {"test": IDS["COCO"]}}),
         r"no entry for subset 'Places' \(it has COCO\)"),
        (lambda r: (r / "splits/split_seed2026.json").write_text("{oops"),
         r"PAPE split file .*split_seed2026\.json: not readable JSON"),
        (lambda r: (r / "COCO/flux2_dev/normal" / f"{IDS['COCO'][1]}.png").unlink(),
         r"1 manifest row\(s\) have no image or mask \(e\.g\. COCO/flux2_dev/normal/000000000285\.\* "
         r"\(image\)\); `--dataset-option skip_unpaired=true` skips them"),
        (lambda r: save(r / "COCO/flux2_dev/normal" / f"{IDS['COCO'][1]}.jpg", picture(3)),
         r"flux2_dev/normal: several files for '000000000285': 000000000285\.jpg, 000000000285\.png"),
        (lambda r: save(r / "COCO/flux2_dev/masks/normal" / f"{IDS['COCO'][1]}_mask.png", square(0)),
         r"masks/normal: several files for '000000000285': 000000000285\.png, 000000000285_mask\.png"),
    ],
)
def test_malformed_variants_are_refused(pape, damage, message):
    damage(pape)
    with pytest.raises(DataError, match=message):
        PapeDataset(pape)


@pytest.mark.parametrize("lists", [(0, 1), (0, 0)])
def test_val_beside_validation_in_a_split_file_is_refused_naming_both(pape, lists):
    """Their ids were merged into val unsaid; one id under both was said to be "in both 'val' and 'validation'"."""
    split_file = pape / "COCO/splits/split_seed2026.json"
    coco = IDS["COCO"]
    write_json(split_file, {"train": [coco[2]], "val": [coco[lists[0]]], "validation": [coco[lists[1]]]})
    with pytest.raises(DataError) as err:
        PapeDataset(pape)
    assert str(err.value) == (f"PAPE split file {split_file}: splits 'val' and 'validation' both read as split val; "
                              "rename or leave out one of them")


def test_a_split_given_twice_in_a_split_file_is_refused(pape):
    """json kept the last "train" list: the first list's images were in no split, said at info level only."""
    split_file = pape / "COCO/splits/split_seed2026.json"
    split_file.write_text(f'{{"train": {json.dumps(IDS["COCO"][:2])}, "train": {json.dumps(IDS["COCO"][2:])}}}')
    with pytest.raises(FileRefused) as err:
        PapeDataset(pape)
    assert str(err.value) == f"PAPE split file {split_file} gives 'train' twice in one object; keep one"


def test_an_image_id_listed_twice_in_one_split_is_one_sample_there(pape):
    """"train": [id, id]: each of that image's samples was in train twice, counted twice in every score."""
    once = PapeDataset(pape).ids("train")
    split_file = pape / "COCO/splits/split_seed2026.json"
    coco = IDS["COCO"]
    write_json(split_file, {"train": [coco[0], coco[0]], "validation": [coco[1]], "test": [coco[2]]})
    ds = PapeDataset(pape)
    assert ds.ids("train") == once and len(set(once)) == len(once) == 4


def test_split_option_and_skip_unpaired_open_what_the_defaults_refuse(pape):
    (pape / "splits" / "split_seed2026.json").unlink()
    assert PapeDataset(pape, split="test").splits() == ["test"]
    (pape / "COCO/flux2_dev/masks/normal" / f"{IDS['COCO'][1]}.png").unlink()
    ds = PapeDataset(pape, split="test", skip_unpaired=True)
    assert f"COCO/flux2_dev/normal/{IDS['COCO'][1]}.png" not in ds.ids("test")
    assert f"COCO/qwen_image_edit_2511/normal/{IDS['COCO'][1]}.png" in ds.ids("test")
    # an image skipped for every editor is still a known id of the COCO split file
    (pape / "COCO/qwen_image_edit_2511/normal" / f"{IDS['COCO'][1]}.png").unlink()
    write_json(pape / "splits" / "split_seed2026.json", {"Places": {"test": IDS["Places"]}})
    ds = PapeDataset(pape, skip_unpaired=True, include_source=False)
    assert ds.splits() == ["train", "test"] and not [i for i in ds.ids("train") if IDS["COCO"][1] in i]


def test_option_and_folder_errors(pape, tmp_path):
    with pytest.raises(ConfigError) as err:  # one wording for every adapter's choice option (base.not_a_choice)
        PapeDataset(pape, edits="both")
    assert str(err.value) == "PAPE edits='both' is not one of normal, abnormal"
    with pytest.raises(DataError, match="has no editor 'gpt'; editors present: qwen_image_edit_2511, flux2_dev"):
        PapeDataset(pape, editors=["gpt"])
    with pytest.raises(DataError, match="has no subset 'ImageNet'; subsets present: COCO, Places"):
        PapeDataset(pape, subsets="ImageNet")
    (tmp_path / "plain" / "x").mkdir(parents=True)
    with pytest.raises(DataError, match="not a PAPE folder; expected <subset>/<editor>/ folders"):
        PapeDataset(tmp_path / "plain")
    with pytest.raises(DataError, match="needs a dataset path"):
        PapeDataset(None)  # type: ignore[arg-type]
    assert PAPE_EDITORS[0] == "qwen_image_edit_2511"


def test_a_mask_of_another_size_is_a_corrupt_sample(pape):
    save(pape / "COCO/flux2_dev/masks/normal" / f"{IDS['COCO'][0]}.png", square(1, SIZE, SIZE + 8))
    ds = PapeDataset(pape)
    with pytest.raises(CorruptSampleError, match=r"000000000139\.png: mask size 40x32 differs from image size 32x32"):
        ds.load(f"COCO/flux2_dev/normal/{IDS['COCO'][0]}.png")
    ds.load(f"COCO/qwen_image_edit_2511/normal/{IDS['COCO'][0]}.png")  # the others still load


def test_open_dataset_sniffs_pape(pape):
    from diffzoo import open_dataset

    ds = open_dataset(str(pape), split="test")  # a path: the registered adapters sniff it
    assert isinstance(ds, PapeDataset) and ds.splits() == ["test"]


def test_an_accented_image_name_gives_one_set_of_ids_and_one_fingerprint_in_either_unicode_form(pape, tmp_path):
    """The ids kept the file name as stored: decomposed (macOS) and composed differed."""
    name = IDS["Places"][0]
    copies = accented_copies(pape, tmp_path, name)
    assert_read_alike(PapeDataset(copies["NFC"]), PapeDataset(copies["NFD"]), name, hashed_list=True)


def test_a_manifest_naming_an_image_composed_finds_it_stored_decomposed(pape, tmp_path):
    """manifest.jsonl (and the split file) written with `café` composed, the files copied from macOS (decomposed):
    "manifest row(s) have no image or mask"."""
    name = IDS["Places"][0]
    copies = accented_copies(pape, tmp_path, name, lists="NFC")
    assert_read_alike(PapeDataset(copies["NFC"]), PapeDataset(copies["NFD"]), name)


def test_an_accented_editor_folder_is_one_label_in_either_unicode_form(pape, tmp_path):
    """The label names kept an editor folder's name as stored: each Unicode form gave another label_map_sha256."""
    copies = accented_copies(pape, tmp_path, "flux2_dev", lists="NFC")
    nfc, nfd = (PapeDataset(copies[form]) for form in ("NFC", "NFD"))
    assert_read_alike(nfc, nfd, "flux2_dev")
    editor = unicodedata.normalize("NFC", "caféflux2_dev")
    assert nfd.label_space.names == nfc.label_space.names and editor in nfd.label_space.names
    assert nfd.provenance()["label_map"] == nfc.provenance()["label_map"]
    chosen = PapeDataset(copies["NFD"], editors=unicodedata.normalize("NFD", "caféflux2_dev"))
    assert chosen.label_space.editors == (editor,)
