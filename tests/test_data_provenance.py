"""Label maps read from the download, split ids, metadata sidecars, provenance."""

from __future__ import annotations

import hashlib
import json
import logging
import pathlib
import re
import unicodedata
import zipfile

import numpy as np
import pytest

from diffzoo import open_dataset
from diffzoo.harness.core import runlog
from diffzoo.harness.core.errors import ConfigError, DataError
from diffzoo.harness.core.fsutil import FileRefused
from diffzoo.harness.core.protocols import Dataset
from diffzoo.harness.core.types import EditRecord, LabelSpace, Sample, SampleMeta
from diffzoo.harness.data import DIFFSEG30K_EDITORS, DiffSeg30kDataset, WithAuthentic, labelmaps
from diffzoo.harness.data.provenance import provenance_of
from diffzoo.harness.run.request import RunRequest

from helpers.data import make_pairs, write_folder, write_zip

REVERSED = ["background", *reversed(DIFFSEG30K_EDITORS)]
DEFAULT = ["background", *DIFFSEG30K_EDITORS]


def sha(names: list[str]) -> str:
    return hashlib.sha256(json.dumps(names, separators=(",", ":")).encode()).hexdigest()


def file_sha16(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


@pytest.fixture
def pairs():
    return make_pairs()


# -- label maps from the download ------------------------------------------------


def test_permuted_label_map_inside_the_zip_changes_hash_and_fingerprint(tmp_path, pairs):
    default = DiffSeg30kDataset(write_zip(tmp_path / "a" / "train.zip", pairs))
    yaml_map = "".join(f"{v}: {n}\n" for v, n in enumerate(REVERSED))
    permuted = DiffSeg30kDataset(
        write_zip(tmp_path / "b" / "train.zip", pairs, extra={"train_copy/labels.yaml": yaml_map}))
    assert default.provenance()["label_map"] == {
        "names": DEFAULT, "sha256": sha(DEFAULT), "source": "default (unverified)", "verified": False}
    assert permuted.provenance()["label_map"] == {
        "names": REVERSED, "sha256": sha(REVERSED), "source": "archive:train_copy/labels.yaml",
        "verified": True}
    assert sha(REVERSED) != sha(DEFAULT)
    assert permuted.fingerprint() != default.fingerprint()  # same pixels, other map
    sid = permuted.ids("train")[0]
    assert np.array_equal(permuted.load(sid).label, default.load(sid).label)


@pytest.mark.parametrize("rel, text, source", [
    ("train_copy/classes.txt", "\n".join(REVERSED) + "\n", "folder:train_copy/classes.txt"),
    ("labels.csv", "value,name\n" + "".join(f"{v},{n}\n" for v, n in enumerate(REVERSED)), "folder:labels.csv"),
    ("label_map.json", json.dumps({n: v for v, n in enumerate(REVERSED)}), "folder:label_map.json"),
])
def test_label_map_file_inside_a_folder(tmp_path, pairs, rel, text, source):
    root = write_folder(tmp_path / "ds", pairs)
    (root / rel).write_text(text)
    label_map = DiffSeg30kDataset(root).provenance()["label_map"]
    assert (label_map["names"], label_map["source"], label_map["verified"]) == (REVERSED, source, True)


def test_label_map_precedence_and_paper_names(tmp_path, pairs):
    root = write_folder(tmp_path / "ds", pairs)
    (root / "classes.txt").write_text("\n".join(REVERSED))
    paper = ["background", "SD2", "SD3.5", "SDXL", "Flux.1", "Glide", "Kolors", "HunyuanDiT 1.1",
             "Kandinsky 2.2"]
    (root / "labels.json").write_text(json.dumps({"names": paper, "verified": True}))
    ds = DiffSeg30kDataset(root)
    assert ds.provenance()["label_map"]["source"] == "labels.json"
    assert list(ds.label_space.names) == DEFAULT  # paper names read as the short ones
    given = DiffSeg30kDataset(root, label_space="a,b,c,d,e,f,g,h").provenance()["label_map"]
    assert given["source"] == "--labels" and given["names"][1:3] == ["a", "b"]


@pytest.mark.parametrize("name, text, match", [
    ("labels.csv", "0,background\n1,sd2\n3,sdxl\n", r"mask values must be 0\.\.2 with no gap .*got \[0, 1, 3\]"),
    ("labels.yaml", "0: sd2\n1: background\n", "value 0 is named 'sd2'"),
    ("labels.json", '{"0": "background", "x": "sd2"}', "a value -> name map"),
])
def test_bad_label_map_in_the_archive_fails_naming_it(tmp_path, pairs, name, text, match):
    z = write_zip(tmp_path / "train.zip", pairs, extra={name: text})
    with pytest.raises(DataError, match=rf"archive:{name}.*{match}"):
        DiffSeg30kDataset(z)


def test_two_label_maps_that_disagree_are_refused(tmp_path, pairs):
    extra = {"labels.yaml": "\n".join(f"- {n}" for n in REVERSED), "train_copy/classes.txt": "\n".join(DEFAULT)}
    with pytest.raises(DataError, match=r"two label maps that disagree: archive:labels\.yaml .* "
                                        r"archive:train_copy/classes\.txt"):
        DiffSeg30kDataset(write_zip(tmp_path / "train.zip", pairs, extra=extra))


def test_default_warning_names_the_fix(tmp_path, pairs, monkeypatch, caplog):
    monkeypatch.setattr(runlog, "_SAID", set())
    with caplog.at_level(logging.WARNING):
        DiffSeg30kDataset(write_folder(tmp_path / "ds", pairs))
    assert "UNVERIFIED" in caplog.text and "Fix: pass --labels FILE" in caplog.text


# -- splits -------------------------------------------------------------------


def test_hash_split_ids(tmp_path, pairs):
    root = write_folder(tmp_path / "ds", pairs)
    assert DiffSeg30kDataset(root).provenance()["split"] == {
        "id": "diffzoo-hash-v1-seed0-val20", "source": "hash of each id (seed 0, val 20%)"}
    ds = DiffSeg30kDataset(root, split_seed=3, val_fraction=0.25, calib_fraction=0.1)
    assert ds.provenance()["split"]["id"] == "diffzoo-hash-v1-seed3-val25-calib10"


def test_splits_json_and_split_file_ids(tmp_path, pairs):
    root = write_folder(tmp_path / "ds", pairs)
    ids = sorted(pairs)
    (root / "splits.json").write_text(json.dumps({"train": ids[:8], "validation": ids[8:]}))
    ds = DiffSeg30kDataset(root)
    assert ds.provenance()["split"] == {"id": f"splits.json-{file_sha16(root / 'splits.json')}",
                                        "source": "splits.json beside the data"}
    tsv = tmp_path / "mine.tsv"
    tsv.write_text("# id\tsplit\n" + "".join(f"{i}\t{'test' if n < 3 else 'train'}\n" for n, i in enumerate(ids)))
    ds = open_dataset(str(root), split_file=str(tsv))  # wins over splits.json
    assert ds.splits() == ["train", "test"] and ds.ids("test") == ids[:3]
    assert ds.provenance()["split"] == {"id": f"file-{file_sha16(tsv)}", "source": "split_file=mine.tsv"}
    js = tmp_path / "mine.json"
    js.write_text(json.dumps({"train": ids[3:], "val": ids[:3]}))
    other = DiffSeg30kDataset(root, split_file=js)
    assert other.provenance()["split"]["id"] == f"file-{file_sha16(js)}"
    assert other.fingerprint() != ds.fingerprint()


@pytest.mark.parametrize("content, match", [
    ({"train": ["00000001", "99999999"]}, "split 'train' names 1 id.* not in the data, e.g. 99999999"),
    ({"train": ["00000001"], "val": ["00000001"]}, "id 00000001 is in both 'train' and 'val'"),
    ({"val": ["00000001"], "validation": ["00000002"]},  # merged into val, unsaid
     ": splits 'val' and 'validation' both read as split val; rename or leave out one of them$"),
    ("00000001\tval\n00000002\tvalidation\n", ": splits 'val' and 'validation' both read as split val"),
    ("00000001\ttrain\n00000002\n", r"line 2: expected 'id<TAB>split'"),
    ("# no line\n", r"is empty: give"),
    ({}, r"is empty: give"),  # JSON that assigns no sample gave a dataset of no split
    ({"train": [], "val": []}, r"is empty: give"),
])
def test_bad_split_file_fails(tmp_path, pairs, content, match):
    root = write_folder(tmp_path / "ds", pairs)
    f = tmp_path / "split.txt"
    f.write_text(content if isinstance(content, str) else json.dumps(content))
    with pytest.raises(DataError, match=rf"splits file .*split\.txt.*{match}"):
        DiffSeg30kDataset(root, split_file=f)
    with pytest.raises(DataError, match="split_file=.*nowhere.json does not exist"):
        DiffSeg30kDataset(root, split_file=tmp_path / "nowhere.json")


def test_a_path_in_a_dataset_option_is_read_from_the_current_or_the_dataset_folder(tmp_path, pairs, monkeypatch):
    """split_file= and metadata= were read from the current folder only, gt_dir=, masks= and split_files= from the
    dataset folder only: a relative path now names what it names from either, and one naming two files is refused."""
    root = write_folder(tmp_path / "ds", pairs)
    ids = sorted(pairs)
    (root / "s.json").write_text(json.dumps({"train": ids[3:], "val": ids[:3]}))
    (root / "meta.json").write_text(json.dumps({ids[0]: {"base": "real", "editors": []}}))
    here = tmp_path / "elsewhere"
    here.mkdir()
    monkeypatch.chdir(here)
    ds = DiffSeg30kDataset(root, split_file="s.json", metadata="meta.json")  # from the dataset folder
    assert ds.ids("val") == ids[:3] and ds.load(ids[0]).meta.base == "real"
    assert ds.provenance()["split"]["id"] == f"file-{file_sha16(root / 's.json')}"
    monkeypatch.chdir(root)  # the same files from the current folder too
    assert DiffSeg30kDataset(root, split_file="s.json").provenance()["split"] == ds.provenance()["split"]
    monkeypatch.chdir(here)
    (here / "s.json").write_text(json.dumps({"train": ids}))
    with pytest.raises(DataError) as err:
        DiffSeg30kDataset(root, split_file="s.json")
    assert str(err.value) == (f"split_file=s.json names both {here / 's.json'} (from the current folder) and "
                              f"{root / 's.json'} (from the dataset folder); give the absolute path of the one meant")
    with pytest.raises(DataError) as err:
        DiffSeg30kDataset(root, metadata="none.json")
    assert str(err.value) == f"metadata=none.json does not exist (looked for {here / 'none.json'} or {root / 'none.json'})"


def test_a_labels_file_is_read_from_the_current_or_the_dataset_folder(tmp_path, pairs, monkeypatch):
    """--labels FILE (label_space=) follows option_path as every other path-valued option does: a file of the
    dataset folder is found from any folder, never "label file mine.json does not exist"."""
    root = write_folder(tmp_path / "ds", pairs)
    names = list(labelmaps.default_diffseg30k_labels().names)
    (root / "mine.json").write_text(json.dumps({"names": names}))
    here = tmp_path / "elsewhere"
    here.mkdir()
    monkeypatch.chdir(here)
    label_map = DiffSeg30kDataset(root, label_space="mine.json").provenance()["label_map"]
    assert (label_map["names"], label_map["source"], label_map["verified"]) == (names, "--labels", True)
    (here / "mine.json").write_text(json.dumps({"names": names[:3]}))
    with pytest.raises(DataError) as err:
        DiffSeg30kDataset(root, label_space="mine.json")
    assert str(err.value) == (f"--labels=mine.json names both {here / 'mine.json'} (from the current folder) and "
                              f"{root / 'mine.json'} (from the dataset folder); give the absolute path of the one meant")
    with pytest.raises(DataError) as err:
        DiffSeg30kDataset(root, label_space="none.json")
    assert str(err.value) == f"--labels=none.json does not exist (looked for {here / 'none.json'} or {root / 'none.json'})"
    assert DiffSeg30kDataset(root, label_space="sd2,sdxl").label_space.names == ("background", "sd2", "sdxl")
    (here / "mine.json").unlink()  # reproduce and sweep look where the adapter reads it
    assert RunRequest.of(detector="segformer.tiny", dataset=str(root), labels="mine.json").paths_not_found() == []
    assert RunRequest.of(detector="segformer.tiny", dataset=str(root), labels="none.json").paths_not_found() == [
        ("--labels none.json", pathlib.Path("none.json"))]


def test_split_and_metadata_files_saved_with_a_byte_order_mark_are_read(tmp_path, pairs):
    """A Windows editor's BOM: the TSV's first id was '\\ufeff00000000', not in the data; the JSON was read as TSV."""
    root = write_folder(tmp_path / "ds", pairs)
    ids = sorted(pairs)
    tsv, js, meta = tmp_path / "s.tsv", tmp_path / "s.json", tmp_path / "meta.json"
    tsv.write_text("\ufeff" + "".join(f"{i}\t{'val' if n < 3 else 'train'}\r\n" for n, i in enumerate(ids)))
    js.write_text("\ufeff" + json.dumps({"train": ids[3:], "val": ids[:3]}))
    meta.write_text("\ufeff" + json.dumps({ids[0]: {"base": "real", "editors": []}}))
    for split_file in (tsv, js):
        ds = DiffSeg30kDataset(root, split_file=split_file, metadata=meta)
        assert ds.ids("val") == ids[:3] and ds.load(ids[0]).meta.base == "real"


def test_a_json_split_file_with_ids_padded_with_spaces_reads_as_its_tsv_form(tmp_path, pairs):
    """Spaces around an id were kept in JSON (refused: "not in the data") though id<TAB>split lines drop them."""
    root = write_folder(tmp_path / "ds", pairs)
    ids = sorted(pairs)
    js = tmp_path / "s.json"
    js.write_text(json.dumps({"train": [f" {i} " for i in ids[3:]], "val": [f"{i}\t" for i in ids[:3]]}))
    ds = DiffSeg30kDataset(root, split_file=js)
    assert ds.ids("val") == ids[:3] and ds.ids("train") == ids[3:]


def test_a_split_or_metadata_file_that_is_a_folder_is_said_to_be_one(tmp_path, pairs):
    """split_file=DIR / metadata=DIR said "split_file DIR does not exist", though DIR is there; then it said
    "DIR is a folder, ...", naming no option."""
    root = write_folder(tmp_path / "ds", pairs)
    for option in ("split_file", "metadata"):
        with pytest.raises(FileRefused) as err:
            DiffSeg30kDataset(root, **{option: tmp_path})
        assert str(err.value) == (f"{option}={tmp_path} is a folder, not a regular file; diffzoo reads only "
                                  "regular files")


def test_a_split_file_naming_accented_ids_decomposed_matches_the_ids_read_composed(tmp_path, pairs):
    """A splits.json or split_file= saved from a macOS copy writes `café` decomposed: "not in the data"."""
    nfc = {unicodedata.normalize("NFC", f"café{i}"): p for i, p in enumerate(pairs.values())}
    root = write_folder(tmp_path / "ds", nfc)
    ids = sorted(nfc)
    nfd = [unicodedata.normalize("NFD", i) for i in ids]
    tsv = tmp_path / "s.tsv"
    tsv.write_text("".join(f"{i}\t{'val' if n < 3 else 'train'}\n" for n, i in enumerate(nfd)), encoding="utf-8")
    (root / "splits.json").write_text(json.dumps({"train": nfd[3:], "val": nfd[:3]}), encoding="utf-8")
    for ds in (DiffSeg30kDataset(root), DiffSeg30kDataset(root, split_file=tsv)):
        assert ds.ids("val") == ids[:3] and ds.ids("train") == ids[3:]
    tsv.write_text(f"{ids[0]}\ttrain\n{nfd[0]}\tval\n", encoding="utf-8")
    with pytest.raises(DataError, match=f"id {ids[0]} is in both 'train' and 'val'"):
        DiffSeg30kDataset(root, split_file=tsv)


def test_split_names_in_another_letter_case_are_the_canonical_splits(tmp_path, pairs):
    """{"Train": ..., "Val": ...} kept "Train" and "Val": a run then said the dataset lacks 'val' (it has Train, Val)."""
    root = write_folder(tmp_path / "ds", pairs)
    ids = sorted(pairs)
    (root / "splits.json").write_text(json.dumps({"Train": ids[:8], "VAL": ids[8:10], "Cross_Test": ids[10:]}))
    ds = DiffSeg30kDataset(root)
    assert ds.splits() == ["train", "val", "Cross_Test"] and ds.ids("Val") == ids[8:10]


def test_a_split_named_twice_in_a_splits_file_is_refused(tmp_path, pairs):
    """json kept the last "train" list: the first list's samples were in no split, said at info level only."""
    root = write_folder(tmp_path / "ds", pairs)
    (root / "splits.json").write_text('{"train": ["00000001", "00000002"], "val": ["00000003"], '
                                      '"train": ["00000004"]}')
    with pytest.raises(FileRefused) as err:
        DiffSeg30kDataset(root)
    assert str(err.value) == f"splits file {root / 'splits.json'} gives 'train' twice in one object; keep one"


def test_unknown_dataset_option_still_fails(tmp_path, pairs):
    root = write_folder(tmp_path / "ds", pairs)
    with pytest.raises(ConfigError, match="does not take --dataset-option split_fil. Did you mean 'split_file'"):
        open_dataset(str(root), split_fil="x.json")


# -- metadata -------------------------------------------------------------------


def test_metadata_sidecar_fills_sample_meta(tmp_path, pairs):
    root = write_folder(tmp_path / "ds", pairs)
    ids = sorted(pairs)
    rows = {i: {"base": "real" if n % 2 else "ai", "editors": ["sdxl", "SD2"][: 1 + n % 2]}
            for n, i in enumerate(ids)}
    rows[ids[2]]["edit_types"] = ["object_removal"]  # ids[2]: an edited mask (ids[0]'s is all 0), base ai
    side = tmp_path / "meta.json"
    side.write_text(json.dumps(rows))
    plain = DiffSeg30kDataset(root)
    ds = open_dataset(str(root), metadata=str(side))
    assert ds.load(ids[2]).meta == SampleMeta(ids[2], base="ai", source="metadata",
                                              turns=(EditRecord("sdxl", edit_type="object_removal"),))
    assert [t.editor for t in ds.load(ids[1]).meta.turns] == ["sdxl", "sd2"]
    assert ds.provenance()["metadata"] == {"source": "metadata=meta.json", "keys": ["base", "turns", "editor"]}
    assert plain.provenance()["metadata"] == {"source": None, "keys": []}
    assert ds.fingerprint() != plain.fingerprint()
    jsonl = tmp_path / "meta.jsonl"
    jsonl.write_text("".join(json.dumps({"id": i, **r}) + "\n" for i, r in rows.items()))
    again = DiffSeg30kDataset(root, metadata=jsonl)
    assert again.load(ids[1]).meta == ds.load(ids[1]).meta
    assert again.fingerprint() != ds.fingerprint()  # the sidecar's bytes differ


@pytest.mark.parametrize("row, match", [
    ({"99999999": {"base": "ai", "editors": []}}, r"id 99999999: no sample with this id"),
    ({"00000001": {"base": "fake", "editors": []}}, r"id 00000001: field 'base' must be 'real' or 'ai', got 'fake'"),
    ({"00000001": {"base": "ai", "editors": "sd2"}}, r"id 00000001: field 'editors' must be a list"),
    ({"00000001": {"base": "ai", "editors": ["dalle"]}}, r"id 00000001: field 'editors' names 'dalle'"),
    ({"00000001": {"base": "ai", "editors": ["sd2"], "edit_types": []}},
     r"id 00000001: field 'edit_types' has 0 entries for 1 editors"),
])
def test_bad_metadata_sidecar_names_file_id_and_field(tmp_path, pairs, row, match):
    root = write_folder(tmp_path / "ds", pairs)
    side = tmp_path / "meta.json"
    side.write_text(json.dumps(row))
    with pytest.raises(DataError, match=rf"metadata file .*meta\.json, {match}"):
        DiffSeg30kDataset(root, metadata=side)


@pytest.mark.parametrize("content", ["", "\n", "{}", "[]"], ids=["empty", "blank", "object", "list"])
def test_a_metadata_sidecar_of_no_rows_is_refused_as_the_wrong_file(tmp_path, pairs, content):
    """It was accepted with a warning ("covers 0 of N samples"), every sample's base and turns unknown."""
    root = write_folder(tmp_path / "ds", pairs)
    side = tmp_path / "meta.json"
    side.write_text(content)
    with pytest.raises(ConfigError) as err:
        DiffSeg30kDataset(root, metadata=side)
    assert str(err.value) == (f"metadata file {side} holds no rows, so it covers none of the {len(pairs)} samples; "
                              "give this data's metadata file (--dataset-option metadata=FILE)")
    assert err.value.exit_code == 2


def test_a_metadata_sidecar_giving_one_id_twice_is_refused_in_json_as_in_jsonl(tmp_path, pairs):
    """The JSON form kept the id's last row, unsaid; the JSONL form already refused the id given twice."""
    root = write_folder(tmp_path / "ds", pairs)
    side = tmp_path / "meta.json"
    side.write_text('{"00000001": {"base": "ai", "editors": ["sd2"]}, "00000001": {"base": "real", "editors": []}}')
    with pytest.raises(FileRefused) as err:
        DiffSeg30kDataset(root, metadata=side)
    assert str(err.value) == f"metadata file {side} gives '00000001' twice in one object; keep one"


# -- provenance of whole datasets --------------------------------------------------


def test_provenance_of_a_generated_folder(diffseg_folder):
    ds = DiffSeg30kDataset(diffseg_folder)
    names = ["background", "sd2", "sdxl"]
    expected = {"label_map": {"names": names, "sha256": sha(names), "source": "labels.json", "verified": True},
                "split": {"id": "diffzoo-hash-v1-seed0-val20", "source": "hash of each id (seed 0, val 20%)"},
                "metadata": {"source": "manifest.jsonl", "keys": ["base", "turns", "editor", "edit_type"]}}
    assert ds.provenance() == expected and provenance_of(ds) == expected
    assert ds.describe()["provenance"] == expected


def test_extra_authentic_is_named_in_provenance(tmp_path, pairs):
    from helpers.images import save_image

    z = write_zip(tmp_path / "train.zip", pairs)
    for i in range(3):
        save_image(tmp_path / "coco" / f"{i}.png", np.full((6, 6, 3), i, np.uint8))
    ds = DiffSeg30kDataset(z, extra_authentic=tmp_path / "coco")
    split = ds.provenance()["split"]
    assert split == {"id": "diffzoo-hash-v1-seed0-val20",
                     "source": "hash of each id (seed 0, val 20%); train + 3 extra authentic images (coco)"}
    assert ds.describe()["extra_authentic"] == 3
    view = WithAuthentic(DiffSeg30kDataset(z), tmp_path / "coco")
    assert provenance_of(view)["split"]["source"].endswith("train + 3 extra authentic images (coco)")


def test_extra_authentic_holding_the_datasets_own_samples_is_refused(tmp_path, pairs):
    """extra_authentic naming the dataset's folder (or the extracted copy of its zip, or a folder above it)
    added every edited image and every mask to train as an unedited photo, with an all-zero label."""
    root = write_folder(tmp_path / "ds", pairs)
    z = write_zip(tmp_path / "train.zip", pairs)
    said = (r"^extra_authentic={}: 24 of its images are named as a DiffSeg30k sample's image or mask \(e\.g\. "
            r"{}train_copy/00000001\.image\.png\), which would be trained on as unedited photos; give a folder of "
            r"authentic images only$")
    for data, given, shown in ((root, root, ""), (z, root, ""), (root, tmp_path, "ds/")):
        with pytest.raises(DataError, match=said.format(re.escape(str(given)), shown)):
            DiffSeg30kDataset(data, extra_authentic=given)


def test_extra_authentic_given_as_dot_is_named_after_its_folder(tmp_path, pairs, monkeypatch):
    """`--extra-authentic .` was named '' in the split's source: "train + 3 extra authentic images ()"."""
    from helpers.images import save_image

    z = write_zip(tmp_path / "train.zip", pairs)
    for i in range(3):
        save_image(tmp_path / "coco" / f"{i}.png", np.full((6, 6, 3), i, np.uint8))
    monkeypatch.chdir(tmp_path / "coco")
    source = "hash of each id (seed 0, val 20%); train + 3 extra authentic images (coco)"
    assert DiffSeg30kDataset(z, extra_authentic=".").provenance()["split"]["source"] == source
    assert provenance_of(WithAuthentic(DiffSeg30kDataset(z), "."))["split"]["source"] == source


class PluginData(Dataset):
    name = "plugin"
    label_space = LabelSpace(("background", "edited"))

    def splits(self):
        return ["test"]

    def ids(self, split):
        return ["a"]

    def load(self, sample_id):
        return Sample(np.zeros((2, 2, 3), np.uint8), np.zeros((2, 2), np.uint8), SampleMeta(sample_id))

    def fingerprint(self):
        return "0" * 16


def test_provenance_of_a_plugin_dataset():
    names = ["background", "edited"]
    assert provenance_of(PluginData()) == {
        "label_map": {"names": names, "sha256": sha(names), "source": "dataset", "verified": True},
        "split": {"id": "dataset", "source": "PluginData's own splits"},
        "metadata": {"source": None, "keys": []}}


def test_label_map_files_outside_pair_folders_are_ignored(tmp_path, pairs):
    z = write_zip(tmp_path / "train.zip", pairs, extra={"docs/labels.yaml": "- background\n- x\n"})
    with zipfile.ZipFile(z) as zf:
        assert "docs/labels.yaml" in zf.namelist()
    assert DiffSeg30kDataset(z).provenance()["label_map"]["source"] == "default (unverified)"


def test_a_label_file_you_pass_counts_as_verified_unless_it_says_not(tmp_path, pairs):
    root = write_folder(tmp_path / "ds", pairs)
    given = tmp_path / "mine.json"
    given.write_text(json.dumps({"names": REVERSED}))
    assert DiffSeg30kDataset(root, label_space=given).provenance()["label_map"]["verified"] is True
    given.write_text(json.dumps({"names": REVERSED, "verified": False}))
    assert DiffSeg30kDataset(root, label_space=given).provenance()["label_map"]["verified"] is False
    with pytest.raises(DataError, match=r"metadata=.*none\.json does not exist \(looked for .*none\.json\)"):
        DiffSeg30kDataset(root, metadata=tmp_path / "none.json")


def test_metadata_editors_are_read_as_the_label_space_reads_names(tmp_path):
    from diffzoo.harness.data.metadata import read_metadata_file
    space = LabelSpace.from_editors(["café", "sdxl"])
    side = tmp_path / "meta.json"
    side.write_text(json.dumps({"a": {"base": "ai", "editors": [" sdxl", unicodedata.normalize("NFD", "Café")]}}))
    metas = read_metadata_file(side, ["a"], space)
    assert [t.editor for t in metas["a"].turns] == ["sdxl", "café"]
