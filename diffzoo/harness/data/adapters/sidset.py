"""The SID-Set adapter (SIDA, Huang et al., CVPR 2025; github hzlsaber/SIDA).

SID-Set mixes real COCO images, fully synthetic images and tampered (locally edited)
images with binary masks.  Two public forms, read alike:

- the Hugging Face copy ``saberzl/SID_Set`` (CC BY 4.0): splits ``train`` (210,000 rows)
  and ``validation`` (30,000), columns ``img_id, image, mask, width, height, label``,
  ``label`` 0 real / 1 full synthetic / 2 tampered, ``mask`` only on tampered rows;
  as the hub's parquet files (``data/train-00000-of-00NNN.parquet``), a
  ``save_to_disk`` folder, or a folder per split (:func:`.hfsource.load_tables`);
- the folders of SIDA's Google Drive zips (and the separately shipped ``test.zip``),
  read from the zip or extracted: ``<split>/real/*.jpg``, ``<split>/full_synthetic/*.png``,
  ``<split>/tampered/*.png`` and ``<split>/masks/<name>_mask.png`` (SIDA's
  ``utils/SID_Set.py``), ``<split>`` being ``train``, ``validation``, ``test``, or the
  folder given itself (its split then ``test`` unless named ``train`` / ``validation``).

A folder may hold both (the hub's parquet files beside the Drive ``test/`` folder).
Ids are ``img_id`` and the file stems (the hub's ``img_id`` look like the Drive's file
stems, ``tampered_29551``; see docs/datasets.md for what is not verified); prefixed
with their split only when two splits share one.  Labels: diffzoo's ``mixed-v1`` rule
(:mod:`.mixed`), the same as OpenSDI's: binary label space, a full synthetic image edited
everywhere, a tampered image by its mask (mean(RGB) > 127.5).  SIDA scores localization
on tampered images only: the ``edit_type=tampered`` slice, or ``kinds=tampered``.
"""

from __future__ import annotations

import logging
import os
import zipfile
from pathlib import Path, PurePosixPath
from typing import Any

from diffzoo.harness.core.errors import DataError
from diffzoo.harness.core.types import BINARY
from diffzoo.harness.data.adapters.mixed import (
    FULL,
    LOCAL,
    REAL,
    UNKNOWN_EDITOR,
    Item,
    RowsDataset,
    by_unique_id,
    has_row_layout,
    table_rows,
)
from diffzoo.harness.data.base import masks_by_stem, report_unpaired, require_path, warn_unread_images
from diffzoo.harness.data.hfsource import NULL_CELL, Ref, load_tables
from diffzoo.harness.data.imageio import is_image_file
from diffzoo.harness.data.sources import FolderMembers, ZipMembers, posix_names
from diffzoo.harness.data.splits import (
    CANONICAL_SPLITS,
    by_canonical_split,
    canonical_split,
    fixed_split,
    native_splits,
)
from diffzoo.harness.data.walk import canonical_name, subfolders

log = logging.getLogger(__name__)

SIDA_REPO = "hzlsaber/SIDA"
SIDSET_HUB = "saberzl/SID_Set"
LABELS = {0: "real", 1: "full_synthetic", 2: "tampered"}
"""The hub's ``label`` values and the Drive folders holding those images."""
MASKS_DIR, MASK_SUFFIX = "masks", "_mask"
PIXAR_DIRS = ("metadata", "soft_masks")
VALUE_COLUMNS = ("img_id", "label")
LAYOUT_HELP = (f"expected SID-Set: the hub's data ({SIDSET_HUB}: parquet files data/<split>-00000-of-00001.parquet "
               "or a save_to_disk folder, columns img_id, image, mask, label), or SIDA's folders "
               "<split>/{real,full_synthetic,tampered,masks}/ (a folder, or the zip)")


class SidSetDataset(RowsDataset):
    """SID-Set from the hub's copy and/or SIDA's folders (or zip); see the module docstring.

    ``kinds``: which images to read, of ``real``, ``full_synthetic``, ``tampered`` (default
    all; ``kinds=tampered`` is SIDA's localization test set).  ``split``: every sample in
    that one split.  ``skip_unpaired``: skip tampered images without a mask file instead of
    refusing to open (a hub row without its mask is a corrupt sample when loaded).
    """

    KINDS = {"real": REAL, "full_synthetic": FULL, "tampered": LOCAL}
    LOCAL_NEEDS_MASK = True
    repository = SIDA_REPO
    title = "SID-Set"
    PIXEL_PROTOCOL = "SIDA scores localization on tampered images only"

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        kinds: str | list[str] | None = None,
        split: str | None = None,
        name: str | None = None,
        skip_unpaired: bool = False,
    ) -> None:
        root = require_path(path, "SidSetDataset")
        chosen = self.parse_kinds(kinds)
        self._fixed = fixed_split(split) if split is not None else None
        found: dict[str, dict[str, Item]] = {}  # split -> id -> item (``where``: ("row", table, row) / ("file", ...))
        places: dict[tuple[str, str], str] = {}  # (split, id) -> where it was found, for messages
        self._rows = None
        self._members: ZipMembers | FolderMembers | None = None
        if root.is_file() and root.suffix.lower() == ".zip":
            self._members = ZipMembers(root)
        else:
            tables = load_tables(root)
            if tables:
                self._rows = table_rows(tables, root, VALUE_COLUMNS)
                for t in tables:
                    self._add_rows(t.name, canonical_split(t.split), found, places)
            if root.is_dir() and _split_folders(root):
                self._members = FolderMembers(root)
        if self._members is not None:
            self._add_files(root, found, places, skip_unpaired)
        if not any(found.values()):
            raise DataError(f"{root}: no SID-Set data found; {LAYOUT_HELP}")
        super().__init__(name or "sidset", BINARY, by_unique_id(found), chosen)
        self.path = str(root)
        forms = [("datasets", self._rows), (getattr(self._members, "kind", ""), self._members)]
        self.source_kind = "+".join(kind for kind, source in forms if source is not None)
        splits = self._by_split()
        self._splits, self.split_info = native_splits(splits, f"every sample in {self._fixed}" if self._fixed else
                                                      f"SID-Set's own splits ({', '.join(sorted(splits))})")

    def _put(self, split: str, sid: str, kind: str, handle: tuple[str, Any, Any], where: str,
             found: dict[str, dict[str, Item]], places: dict[tuple[str, str], str]) -> None:
        """Add sample ``sid`` of ``kind`` (its files: ``handle``, in messages: ``where``) to ``split``."""
        split = self._fixed or split
        if sid in found.setdefault(split, {}):
            raise DataError(f"SID-Set sample {sid} appears twice in split {split}: {places[split, sid]} and {where}")
        found[split][sid] = Item(kind, self.KINDS[kind], UNKNOWN_EDITOR, split, handle)
        places[split, sid] = where

    def _add_rows(self, table: str, split: str, found: dict[str, dict[str, Item]],
                  places: dict[tuple[str, str], str]) -> None:
        assert self._rows is not None
        rows = zip(self._rows.values(table, "img_id"), self._rows.values(table, "label"))
        for row, (img_id, label) in enumerate(rows):
            where = f"{self._rows.location} [{table} row {row}]"
            if label not in LABELS:
                raise DataError(f"{where}: label {label!r}; SID-Set's labels are 0 (real), 1 (full synthetic), "
                                "2 (tampered)")
            if not isinstance(img_id, str) or not img_id:
                raise DataError(f"{where}: no img_id ({img_id!r})")
            self._put(split, img_id, LABELS[label], ("row", table, row), where, found, places)

    def _add_files(self, root: Path, found: dict[str, dict[str, Item]], places: dict[tuple[str, str], str],
                   skip_unpaired: bool) -> None:
        assert self._members is not None
        groups = _groups(self._members.names)
        if not groups and self._rows is None:
            raise DataError(f"{root}: no SID-Set folders found; {LAYOUT_HELP}")
        missing: list[str] = []
        by_canonical_split(self._members.location, ((n, n) for n in dict.fromkeys(  # val beside validation
            p.rsplit("/", 1)[-1] for p in groups if p)))
        for prefix, folders in sorted(groups.items()):
            # a split folder's name (validation -> val); the dataset folder or zip itself: train / val when so
            # named, else test (SIDA's separate test set)
            own = canonical_split(prefix.rsplit("/", 1)[-1] if prefix else root.stem if root.is_file() else root.name)
            split = own if prefix or own in CANONICAL_SPLITS else "test"
            masks = masks_by_stem(self._members.location,
                                  ((Path(m).stem.removesuffix(MASK_SUFFIX), m) for m in folders.get(MASKS_DIR, [])))
            unused = set(masks)
            for kind in self.KINDS:
                for image in folders.get(kind, []):
                    stem, mask = Path(image).stem, None
                    if kind == "tampered":
                        mask = masks.get(canonical_name(stem))
                        unused.discard(canonical_name(stem))
                        if mask is None:
                            missing.append(image)
                            continue
                    where = f"{self._members.location}:{image}"
                    self._put(split, stem, kind, ("file", image, mask), where, found, places)
            names = (n for n in self._members.names if PurePosixPath(n).parent == PurePosixPath(prefix, "tampered"))
            listed = ((n, canonical_name(PurePosixPath(n).stem)) for n in names)
            warn_unread_images(self._members.location, sorted(masks[s] for s in unused),
                               "mask(s) match no tampered image", listed, unused.__contains__)
        report_unpaired(str(root), missing, f"tampered image(s) have no {MASKS_DIR}/<name>{MASK_SUFFIX}.png",
                        skip_unpaired)

    def _row_of(self, item: Item) -> tuple[str, int] | None:
        return item.where[1:] if item.where[0] == "row" else None

    def _refs(self, sample_id: str, item: Item) -> tuple[Ref, Ref | None]:
        if item.where[0] == "row":
            return super()._refs(sample_id, item)
        assert self._members is not None
        _, image, mask = item.where
        return self._members.read(image, sample_id), None if mask is None else self._members.read(mask, sample_id)

    def _cell_digests(self) -> dict[str, str]:
        out = super()._cell_digests()
        files = {sid: it.where[1:] for sid, it in self._items.items() if it.where[0] == "file"}
        if files and self._members is not None:
            digests = self._members.digests(n for pair in files.values() for n in pair if n is not None)
            for sid, (image, mask) in files.items():
                out[f"{sid}.image"] = digests[image]
                out[f"{sid}.mask"] = NULL_CELL if mask is None else digests[mask]
        return out

    @classmethod
    def sniff(cls, path: str | os.PathLike) -> bool:
        """SIDA's folders (the folder itself or its split folders hold ``tampered/``,
        ``masks/`` and ``real/`` or ``full_synthetic/``), a zip of them, or a parquet /
        arrow / ``save_to_disk`` copy whose rows have ``img_id, image, mask, label``."""
        p = Path(path)
        try:
            if p.is_file() and p.suffix.lower() == ".zip":
                with zipfile.ZipFile(p) as zf:
                    return any({"tampered", MASKS_DIR} <= set(g) for g in _groups(posix_names(zf)).values())
            if p.is_dir() and _split_folders(p):
                return True
        except (OSError, zipfile.BadZipFile, ValueError):
            return False
        return has_row_layout(p, "sidset")

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d["hub"] = SIDSET_HUB
        return d


def _is_split_folder(p: Path) -> bool:
    """``tampered/``, ``masks/`` and ``real/`` or ``full_synthetic/``, without PIXAR's
    ``metadata/`` and ``soft_masks/`` (PIXAR's split folders hold the others too)."""
    return (p / "tampered").is_dir() and (p / MASKS_DIR).is_dir() and (
        (p / "real").is_dir() or (p / "full_synthetic").is_dir()) and not any(
        (p / d).is_dir() for d in PIXAR_DIRS)


def _split_folders(root: Path) -> list[Path]:
    """``root`` if it is a SIDA split folder, else the folders up to two levels below it that are."""
    if _is_split_folder(root):
        return [root]
    return [p for p in subfolders(root, depth=2) if _is_split_folder(p)]


def _groups(names: list[str]) -> dict[str, dict[str, list[str]]]:
    """File names (``/``-separated) of SIDA split folders: folder prefix (``""`` for the root,
    ``test``, ``SID_Set/test``) -> kind folder (real, full_synthetic, tampered, masks) -> image
    files, keeping the prefixes that hold images of a kind."""
    groups: dict[str, dict[str, list[str]]] = {}
    for n in sorted(names):
        parts = n.split("/")
        if not 2 <= len(parts) <= 4 or parts[-2] not in (*LABELS.values(), MASKS_DIR) or not is_image_file(parts[-1]):
            continue
        groups.setdefault("/".join(parts[:-2]), {}).setdefault(parts[-2], []).append(n)
    return {k: v for k, v in groups.items() if set(v) & set(LABELS.values())}
