"""CocoGlide (TruFor, CVPR 2023): 512 COCO val2017 images with an object
region inpainted by GLIDE, plus their 512 authentic originals.

Layout, confirmed against public material (not against the archive itself)::

    CocoGlide/
        table.csv        columns real,fake,mask,prompt; one row per edit
        real/dining table_114871.png
        fake/glide_inpainting_val2017_114871_up.png
        mask/dining table_114871_mask.png

- file names and folders: grip-unina/TruFor ``test_docker/data_test/
  CocoGlide_{fake,real}.txt`` list ``fake/glide_inpainting_val2017_<coco
  id>_up.png,mask/<class>_<coco id>_mask.png`` and ``real/<class>_<coco
  id>.png`` (class names contain spaces);
- ``table.csv``: columns ``real,fake,mask,prompt``, 512 rows, UTF-8 with a
  byte-order mark, cell values relative paths such as
  ``fake/glide_inpainting_val2017_114871_up.png`` (public scripts that read
  the zip's ``table.csv``; docs/datasets.md).  Base names differ between the
  three folders, so rows are paired through the table, never by file name.

Documented defaults, not confirmed: the prompt is taken as given (reportedly
the COCO class name); all images are 256 x 256 PNG and masks 0/255, which
the adapter does not rely on.

Samples: every ``fake`` image with its mask (binarised by the field's rule,
mean over channels > 127.5), and every ``real`` image as authentic (all-zero
mask).  Ids are the table's paths (``fake/...``, ``real/...``).  Label space:
binary ``("background", "edited")``.  A ``("background", "glide")`` space
would not let a DiffSeg30k semantic model be scored for attribution: the
harness scores semantic predictions in the dataset's own label space and has
no mapping between spaces, so the class indices would not line up.  The
editor is kept in the metadata instead (``turns[0].editor == "glide"``), so
per-editor breakdowns see it.

Splits: ``split`` if given, else ``splits.json`` in the folder, else
``val_fraction`` (train/val by id hash) if given, else everything in
``test``: CocoGlide is a test set.
"""

from __future__ import annotations

import csv
import logging
import os
from pathlib import Path
from typing import Any

from diffzoo.harness.core.errors import DataError
from diffzoo.harness.core.types import EditRecord
from diffzoo.harness.data.adapters.generic import _TestSetDataset
from diffzoo.harness.data.authentic import list_image_files
from diffzoo.harness.data.base import child_dir, csv_table, listed_once, relative_cell, require_path
from diffzoo.harness.data.walk import StoredPaths, canonical_name, ids_of, log_unused

log = logging.getLogger(__name__)

TABLE = "table.csv"
COLUMNS = ("real", "fake", "mask", "prompt")
COCOGLIDE_ROWS = 512
EDITOR = "glide"
EDIT_TYPE = "inpainting"


class CocoGlideDataset(_TestSetDataset):
    """The CocoGlide folder (``table.csv`` + ``real/``, ``fake/``, ``mask/``)."""

    DEFAULT_NAME = "cocoglide"

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        split: str | None = None,
        val_fraction: float | None = None,
        split_seed: int | None = None,
        name: str | None = None,
    ) -> None:
        root = _root(require_path(path, "CocoGlideDataset"))
        find = StoredPaths(root)
        rows = read_table(root, find)
        entries: dict[str, tuple[Path, Path | None]] = {}
        self._prompts: dict[str, str] = {}
        for real, fake, mask, prompt in rows:
            entries[fake] = (find(fake), find(mask))
            entries[real] = (find(real), None)
            self._prompts[fake] = prompt
        listed = set(entries) | {r[2] for r in rows}  # images in real/, fake/, mask/ that no row names
        unlisted = [sid for folder in COLUMNS[:3] if (root / folder).is_dir()
                    for sid in ids_of(root, list_image_files(root / folder)) if sid not in listed]
        log_unused(root, unlisted, f"image(s) in real/, fake/ or mask/ are not in {TABLE} and are not used")
        super().__init__(root, entries, name=name, split=split, val_fraction=val_fraction, split_seed=split_seed)

    def _turn(self, sample_id: str) -> EditRecord:
        return EditRecord(EDITOR, prompt=self._prompts[sample_id], edit_type=EDIT_TYPE)

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d["edited"] = len(self._prompts)
        return d

    @classmethod
    def sniff(cls, path: str | os.PathLike) -> bool:
        """A folder (or its ``table.csv``) whose table header names real, fake and mask."""
        table = _root(Path(path)) / TABLE
        if not os.path.lexists(table):
            return False
        header: list[str] = []
        try:
            if table.is_file():
                with open(table, encoding="utf-8-sig", newline="") as f:
                    header = next(csv.reader(f), [])
        except OSError:
            return False
        except (UnicodeDecodeError, csv.Error):  # not UTF-8 (a table saved as UTF-16): read as one cut short
            header = []
        if not header:  # a table cut short (or a FIFO) beside CocoGlide's folders: opening it says what is there
            return all(child_dir(table.parent, d) is not None for d in COLUMNS[:3])
        return {"real", "fake", "mask"} <= {h.strip().lower() for h in header}


def _root(path: Path) -> Path:
    return path.parent if path.is_file() and path.name.lower() == TABLE else path


def read_table(root: Path, find: StoredPaths) -> list[tuple[str, str, str, str]]:
    """``(real, fake, mask, prompt)`` per row of ``root/table.csv``, paths
    normalised (``a/./b`` -> ``a/b``, read as :func:`.walk.canonical_name`: they are the ids)
    and checked: relative, inside ``root``, existing (``find``: :class:`.walk.StoredPaths`),
    each file named once."""
    table = root / TABLE
    if not os.path.lexists(table):  # anything else there is named by reading it
        raise DataError(
            f"{root}: no {TABLE}; CocoGlide pairs real/, fake/ and mask/ through {TABLE} "
            f"with columns {','.join(COLUMNS)}"
        )
    raw = csv_table(table, COLUMNS, f"the header {','.join(COLUMNS)}", "edited image", lower=True)
    rows: list[tuple[str, str, str, str]] = []
    seen: dict[str, tuple[str, str]] = {}
    absent: list[str] = []
    for line, row in raw:
        paths = []
        for col in COLUMNS[:3]:
            rel = relative_cell(row[col], f"{table}: line {line}: {col}", "the table's folder",
                                f"{TABLE} paths must be relative to the table's folder")
            key = canonical_name(rel)  # one file, however its name is written
            listed_once(seen, key, table, f"line {line}", f"{col} {rel}", col,
                        "each real, fake and mask file belongs to one row")
            if (hint := find.absent(rel)) is not None:
                absent.append(f"line {line} {col}: {rel}{hint}")
            paths.append(key)
        rows.append((paths[0], paths[1], paths[2], row["prompt"]))
    if absent:
        raise DataError(
            f"{table}: {len(absent)} file(s) named in the table do not exist "
            f"(e.g. {'; '.join(absent[:3])}); paths are relative to {root}"
        )
    if len(rows) != COCOGLIDE_ROWS:
        log.info("%s: %d rows (the full CocoGlide has %d)", table, len(rows), COCOGLIDE_ROWS)
    return rows

