"""CocoGlide: real/ + fake/ + mask/ paired through table.csv, in the real layout."""

from __future__ import annotations

import csv
import json
import os
import shutil
import unicodedata
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from diffzoo.harness.core.errors import DataError
from diffzoo.harness.core.fsutil import FileRefused
from diffzoo.harness.core.types import BINARY
from diffzoo.harness.data.adapters.cocoglide import CocoGlideDataset
from diffzoo.harness.run.factories import open_dataset

from helpers.data import COCOGLIDE_ROWS as ROWS
from helpers.data import make_cocoglide, write_table
from helpers.images import save_image as save


def table_rows(root: Path) -> list[list[str]]:
    with open(root / "table.csv", encoding="utf-8-sig", newline="") as f:
        return list(csv.reader(f))[1:]


def test_reads_pairs_through_the_table(tmp_path, caplog):
    root = make_cocoglide(tmp_path / "CocoGlide")
    save(root / "fake" / "glide_inpainting_val2017_999_up.png", np.zeros((48, 48, 3), np.uint8))
    assert CocoGlideDataset.sniff(root) and CocoGlideDataset.sniff(root / "table.csv")
    with caplog.at_level("INFO"):
        ds = CocoGlideDataset(root)
    assert "not in table.csv" in caplog.text  # the stray fake is reported, not used
    assert ds.name == "cocoglide" and ds.label_space == BINARY and ds.splits() == ["test"]
    ids = ds.ids("test")
    assert len(ids) == 6 and "fake/glide_inpainting_val2017_999_up.png" not in ids
    assert ds.describe()["authentic"] == 3 and ds.describe()["edited"] == 3
    for i, (cls, coco_id) in enumerate(ROWS):
        fake = ds.load(f"fake/glide_inpainting_val2017_{coco_id}_up.png")
        rows = np.flatnonzero(fake.label.any(axis=1))
        assert fake.label.dtype == np.uint8 and set(np.unique(fake.label)) == {0, 1}
        assert (rows.min(), rows.max()) == (i * 8, i * 8 + 7 + i)  # this row's own mask
        assert fake.meta.base == "real" and len(fake.meta.turns) == 1
        turn = fake.meta.turns[0]
        assert turn.editor == "glide" and turn.edit_type == "inpainting"
        assert turn.prompt == (cls if i < 2 else "a hot dog, grilled")
        real = ds.load(f"real/{cls}_{coco_id}.png")
        assert real.image.shape == (48, 48, 3) and not real.label.any()
        assert real.meta.base == "real" and real.meta.turns == ()


def test_splits_default_test_and_overrides(tmp_path):
    root = make_cocoglide(tmp_path / "CocoGlide")
    every = CocoGlideDataset(root).ids("test")
    assert CocoGlideDataset(root, split="validation").splits() == ["val"]
    hashed = CocoGlideDataset(root, val_fraction=0.5)
    assert set(hashed.splits()) <= {"train", "val"}
    assert sorted(i for s in hashed.splits() for i in hashed.ids(s)) == every
    (root / "splits.json").write_text(json.dumps({"train": every[:2], "test": every[2:]}))
    ds = CocoGlideDataset(root)
    assert ds.splits() == ["train", "test"] and ds.ids("train") == every[:2]


def test_fingerprint_follows_content_not_location(tmp_path):
    root = make_cocoglide(tmp_path / "a" / "CocoGlide")
    fp = CocoGlideDataset(root).fingerprint()
    copy = tmp_path / "b" / "CocoGlide"
    shutil.copytree(root, copy)
    assert CocoGlideDataset(copy).fingerprint() == fp
    mask = copy / "mask" / "teddy bear_563758_mask.png"
    m = np.asarray(Image.open(mask)).copy()
    m[-1, -1] = 255
    Image.fromarray(m).save(mask)
    assert CocoGlideDataset(copy).fingerprint() != fp


def _missing_column(root):
    rows = [[r, f, m] for r, f, m, _ in table_rows(root)]
    write_table(root, rows, header="real,fake,mask")


def _missing_file(root):
    (root / "mask" / "teddy bear_563758_mask.png").unlink()


def _escaping(root):
    rows = table_rows(root)
    rows[1][1] = "../outside/glide_inpainting_val2017_563758_up.png"
    write_table(root, rows)


def _absolute(root):
    rows = table_rows(root)
    rows[0][0] = str(root / "real" / "dining table_114871.png")
    write_table(root, rows)


def _duplicate(root):
    rows = table_rows(root)
    write_table(root, rows + [rows[1]])


def _shared_file(root):
    rows = table_rows(root)
    rows[2][2] = rows[0][2]  # two fakes claim one mask
    write_table(root, rows)


def _short_row(root):
    rows = table_rows(root)
    rows[1] = rows[1][:3]
    write_table(root, rows)


def _empty_cell(root):
    rows = table_rows(root)
    rows[0][2] = ""
    write_table(root, rows)


@pytest.mark.parametrize(
    ("break_it", "message"),
    [
        (lambda root: (root / "table.csv").unlink(), r"CocoGlide: no table\.csv; .*columns real,fake,mask,prompt"),
        (_missing_column, r"table\.csv: missing column\(s\) prompt; expected the header real,fake,mask,prompt"),
        (_missing_file, r"table\.csv: 1 file\(s\) named in the table do not exist \(e\.g\. line 3 mask: mask/teddy bear_563758_mask\.png\)"),
        (_escaping, r"table\.csv: line 3: fake: path '\.\./outside/.*' leaves the dataset folder"),
        (_absolute, r"table\.csv: line 2: real: path '/.*' leaves the dataset folder"),
        (_duplicate, r"table\.csv: line 5: real real/teddy bear_563758\.png is already listed on line 3 \(as real\)"),
        (_shared_file, r"table\.csv: line 4: mask mask/dining table_114871_mask\.png is already listed on line 2 \(as mask\)"),
        (_short_row, r"table\.csv: line 3 has fewer fields than the header real,fake,mask,prompt"),
        (_empty_cell, r"table\.csv: line 2: mask: empty cell"),
    ],
    ids=["no-table", "no-column", "missing-file", "escapes", "absolute", "duplicate-row",
         "shared-mask", "short-row", "empty-cell"],
)
def test_malformed_tables_are_refused(tmp_path, break_it, message):
    root = make_cocoglide(tmp_path / "CocoGlide")
    break_it(root)
    with pytest.raises(DataError, match=message):
        CocoGlideDataset(root)


def test_sniff_rejects_other_layouts(tmp_path, diffseg_folder):
    assert not CocoGlideDataset.sniff(tmp_path / "missing")
    assert not CocoGlideDataset.sniff(diffseg_folder)
    plain = tmp_path / "plain"
    save(plain / "Tp" / "a.png", np.zeros((8, 8, 3), np.uint8))
    save(plain / "Gt" / "a.png", np.zeros((8, 8), np.uint8))
    assert not CocoGlideDataset.sniff(plain)
    other = tmp_path / "other"
    other.mkdir()
    (other / "table.csv").write_text("image,label\na.png,1\n")
    assert not CocoGlideDataset.sniff(other)


@pytest.mark.parametrize(("make", "kind"), [(os.mkfifo, "a FIFO (named pipe)"),
                                            (lambda p: p.symlink_to(p.parent / "gone.csv"), "a broken symbolic link")])
def test_a_table_that_is_no_regular_file_is_named_for_what_it_is(tmp_path, make, kind):
    """Never "no table.csv" (nor "no adapter recognises") for a table that is there, nor a read blocked on a FIFO."""
    root = make_cocoglide(tmp_path / "CocoGlide")
    (root / "table.csv").unlink()
    make(root / "table.csv")
    with pytest.raises(FileRefused) as err:
        open_dataset(root)
    assert str(err.value) == f"{root / 'table.csv'} is {kind}, not a regular file; diffzoo reads only regular files"


def test_an_empty_table_is_named_never_no_adapter_recognises(tmp_path):
    root = make_cocoglide(tmp_path / "CocoGlide")
    (root / "table.csv").write_bytes(b"")
    with pytest.raises(DataError) as err:
        open_dataset(root)
    assert str(err.value) == f"{root / 'table.csv'}: empty CSV file (no header line); expected the columns " \
                             "real,fake,mask,prompt"


def test_a_listed_file_stored_again_under_its_name_in_the_other_unicode_form_is_refused(tmp_path):
    """The table names real/café.png; real/ holds it composed and decomposed: the one the table's
    spelling found was read and the other passed over unsaid, where every other layout refuses
    two files whose names read as one (which of them is meant cannot be told)."""
    root = make_cocoglide(tmp_path / "CocoGlide")
    rows = table_rows(root)
    nfc, nfd = (unicodedata.normalize(form, "real/café.png") for form in ("NFC", "NFD"))
    (root / rows[0][0]).rename(root / nfc)
    shutil.copy(root / nfc, root / nfd)
    write_table(root, [[nfc, *row[1:]] if i == 0 else row for i, row in enumerate(rows)])
    with pytest.raises(DataError) as err:
        CocoGlideDataset(root)
    assert str(err.value) == (f"{root}: {nfc} is stored twice, as {nfd!r} and {nfc!r} (another folder separator "
                              "or Unicode form); keep one of them")


def test_a_line_of_only_spaces_is_an_empty_line(tmp_path):
    """csv skips an empty line; one of only spaces or tabs (an editor's trailing line) is one too,
    and the rows after it keep their own line numbers."""
    root = make_cocoglide(tmp_path / "CocoGlide")
    with open(root / "table.csv", "a", encoding="utf-8") as f:
        f.write("   \n \t\n")
    assert len(open_dataset(root).ids("test")) == 6
    rows = table_rows(root)
    write_table(root, [rows[0], rows[1]])
    with open(root / "table.csv", "a", encoding="utf-8") as f:
        f.write("  \n" + ",".join(rows[1]) + "\n")
    with pytest.raises(DataError, match=r"table\.csv: line 5: real real/teddy bear_563758\.png is already listed "
                                        r"on line 3 \(as real\)"):
        CocoGlideDataset(root)


def test_blank_lines_before_the_header_are_empty_lines(tmp_path):
    """A table whose first lines are blank is read from its header on, as an empty line between
    rows is skipped; the rows keep their own line numbers."""
    root = make_cocoglide(tmp_path / "CocoGlide")
    rows, table = table_rows(root), (root / "table.csv").read_text(encoding="utf-8-sig")
    (root / "table.csv").write_text("\n \t\n" + table, encoding="utf-8")
    assert len(open_dataset(root).ids("test")) == 6
    write_table(root, [rows[0], rows[0]])
    (root / "table.csv").write_text("\n" + (root / "table.csv").read_text(encoding="utf-8-sig"), encoding="utf-8")
    with pytest.raises(DataError, match=r"table\.csv: line 4: real .* is already listed on line 3 \(as real\)"):
        CocoGlideDataset(root)


def test_a_table_saved_as_utf16_is_named_not_passed_over_as_no_layout(tmp_path):
    """Excel's "Unicode Text" saves UTF-16: the folder was "no dataset adapter recognises this layout"."""
    root = make_cocoglide(tmp_path / "cg")
    table = root / "table.csv"
    table.write_bytes(table.read_bytes().decode("utf-8-sig").encode("utf-16"))
    with pytest.raises(DataError) as err:
        open_dataset(str(root))
    assert str(err.value).startswith(f"{table}: not a readable UTF-8 CSV file (")


def test_a_listed_file_stored_in_another_letter_case_is_named_as_the_hint(tmp_path):
    """fake/..._up.PNG on disk for the table's fake/..._up.png (and a Mask/ folder for mask/): the file was
    "named in the table do not exist" with no word of the file that is there."""
    root = make_cocoglide(tmp_path / "CocoGlide")
    fake = root / "fake" / "glide_inpainting_val2017_563758_up.png"
    fake.rename(fake.with_suffix(".PNG"))
    (root / "mask").rename(root / "Mask")
    (root / "real" / "teddy bear_563758.png").unlink()
    with pytest.raises(DataError) as err:
        CocoGlideDataset(root)
    hint = "is there: a name is read in its own letter case"
    assert str(err.value) == (
        f"{root / 'table.csv'}: 5 file(s) named in the table do not exist (e.g. line 2 mask: "
        f"mask/dining table_114871_mask.png (Mask/dining table_114871_mask.png {hint}); line 3 real: "
        f"real/teddy bear_563758.png; line 3 fake: fake/glide_inpainting_val2017_563758_up.png "
        f"(fake/glide_inpainting_val2017_563758_up.PNG {hint})); paths are relative to {root}")
