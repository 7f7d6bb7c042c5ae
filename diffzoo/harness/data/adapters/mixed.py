"""What OpenSDI and SID-Set share: datasets that mix real, fully generated and locally
edited images, read under one label rule so that their numbers mean the same.

The label rule (``mixed-v1``, named in every record: ``describe()["label_rule"]`` and
the label map's source):

- a **real** image: no edited pixel (a mask the data carries for it is not read);
- an edited image **with a mask**: edited where the mean over the mask's RGB channels
  exceeds 127.5 (:func:`.imageio.read_binary_mask`), those pixels in its generator's class;
- a **fully generated** image (no mask): every pixel edited, in its generator's class.

So a fully generated image counts at the image level as an edited image and at the pixel
level as a wholly edited one.  diffzoo's ignore value (255) cannot say "image level only":
an image whose every pixel is 255 is *unknown* to the metrics (docs/metrics.md), counted
in ``num_images`` and nowhere else, image level included.  The benchmarks' own pixel
protocols (OpenSDI: partial fakes only; SIDA: tampered images only) are therefore the
``edit_type`` slice of the local edits, or the dataset opened with ``kinds=`` those
images (docs/datasets.md).  Every edited image carries one turn: its generator (or
``unknown``) and edit type ``full_synthetic`` (fully generated) or the dataset's word for
a local edit (``partial``, ``tampered``); ``base`` is ``real`` for real images and
``unknown`` otherwise (neither dataset says per image what a fake was made from).
"""

from __future__ import annotations

import logging
import os
from abc import abstractmethod
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from diffzoo.harness.core.errors import CorruptSampleError, DataError
from diffzoo.harness.core.types import EditRecord, LabelSpace, Sample, SampleMeta
from diffzoo.harness.data.base import SplitDataset, chosen_names, empty_split, not_a_choice
from diffzoo.harness.data.fingerprint import combine
from diffzoo.harness.data.hfsource import (
    HFRows,
    Ref,
    Table,
    hf_columns,
    load_tables,
    looks_like_hf_dir,
    row_layout,
    unique_ids,
)
from diffzoo.harness.data.imageio import read_labelled
from diffzoo.harness.data.splits import CANONICAL_SPLITS, canonical_split, ids_by_split
from diffzoo.harness.data.walk import by_canonical_name, subfolders

log = logging.getLogger(__name__)

REAL, FULL, LOCAL = "real", "full", "local"
"""The roles of an image: real, fully generated, locally edited."""
FULL_EDIT_TYPE = "full_synthetic"
UNKNOWN_EDITOR = "unknown"
RULE_VERSION = "mixed-v1"
RULE = ("real image: no edited pixel; edited image with a mask: edited where mean(mask RGB) > 127.5; "
        "fully generated image (no mask): every pixel edited; edited pixels take the generator's class")


def table_rows(tables: Sequence[Table], root: str | os.PathLike, values: Sequence[str]) -> HFRows:
    """The rows of ``tables`` (found under ``root``): an image cell, a mask cell that real and
    fully generated images may leave empty, and the ``values`` columns."""
    return HFRows({t.name: t.data for t in tables}, str(root), values, optional=("mask",),
                  files=[f for t in tables for f in t.files], cache_key=os.path.abspath(root))


def table_where(t: Table) -> str:
    """A table in messages: its file (or folder of files) and its split."""
    return f"{t.files[0] if len(t.files) == 1 else t.folder} (split {t.split})"


def has_row_layout(path: Path, layout: str) -> bool:
    """Whether ``path`` holds tables whose columns are the :data:`.hfsource.ROW_LAYOUTS` entry ``layout``."""
    columns = hf_columns(path) if path.exists() else None
    return columns is not None and row_layout(columns) == layout


@dataclass(frozen=True)
class Item:
    """One sample: its kind in the dataset's own words, its role, generator and split,
    and where its files are (``where``: the adapter's own handle)."""

    kind: str
    role: str
    editor: str
    split: str
    where: Any


class MixedDataset(SplitDataset):
    """Samples given as :class:`Item` per id; the subclass finds them and reads their files
    (:meth:`_refs`, :meth:`_cell_digests`); this class applies the label rule, builds the
    metadata, and describes and fingerprints them."""

    KINDS: dict[str, str] = {}
    """The dataset's kinds, in its own words, -> role (REAL / FULL / LOCAL), in display order."""
    LOCAL_NEEDS_MASK = False
    """True: a locally edited image without a mask is a corrupt sample (SID-Set's tampered
    images); False: it is read as fully generated (OpenSDI's rule for a fake without a mask)."""
    repository = ""
    title = ""
    """The dataset's name in messages and in the label map's source (``OpenSDI``)."""
    notice: str | None = None
    """Said once where a run and ``data stats`` print the dataset."""
    PIXEL_PROTOCOL = ""
    """Which images the benchmark scores pixels on (``SIDA scores localization on tampered images
    only``): the notice of a dataset read with both fully generated and locally edited images."""

    def __init__(self, name: str, label_space: LabelSpace, items: dict[str, Item], kinds: Sequence[str]) -> None:
        super().__init__(name, label_space)
        self.kinds = tuple(kinds)
        self.label_source = f"{self.title} label rule {RULE_VERSION}"
        # ids as walk.canonical_name reads the names and keys they come from; two reading as one are refused
        self._items = by_canonical_name(name, ((sid, it) for sid, it in items.items() if it.kind in self.kinds))
        if not self._items:
            raise DataError(f"{name}: no samples of kind {', '.join(self.kinds)}")
        local = next((k for k in self.kinds if self.KINDS[k] == LOCAL), None)
        if local is not None and any(self.KINDS[k] == FULL for k in self.kinds):
            self.notice = (f"{self.title}: fully generated images are edited everywhere (label rule {RULE_VERSION}); "
                           f"{self.PIXEL_PROTOCOL}: read the edit_type={local} slice, or open it with "
                           f"--dataset-option kinds={local}")

    @classmethod
    def parse_kinds(cls, kinds: Sequence[str] | str | None) -> tuple[str, ...]:
        """The kinds asked for (``"partial"``, ``"real,partial"``), in :data:`KINDS` order."""
        names = chosen_names(kinds, tuple(cls.KINDS),
                             lambda bad: not_a_choice(cls.title, "kinds", kinds, cls.KINDS, bad))
        return tuple(k for k in cls.KINDS if k in names)

    def _by_split(self) -> dict[str, list[str]]:
        return ids_by_split((sid, item.split) for sid, item in self._items.items())

    # -- reading ----------------------------------------------------------------
    @abstractmethod
    def _refs(self, sample_id: str, item: Item) -> tuple[Ref, Ref | None]:
        """The image and the mask (None: the data has none) of ``item``."""

    @abstractmethod
    def _cell_digests(self) -> dict[str, str]:
        """``<id>.image`` / ``<id>.mask`` -> sha256 of the file's bytes (or
        :data:`.hfsource.NULL_CELL` for no mask), for every sample: the same
        for the same files in any container."""

    def _load(self, sample_id: str) -> Sample:
        item = self._lookup(self._items, sample_id)
        (image_src, image_name), mask = self._refs(sample_id, item)
        if mask is None and item.role == LOCAL and self.LOCAL_NEEDS_MASK:
            raise CorruptSampleError(sample_id, f"{image_name}: a {item.kind} image without a mask", "missing-file")
        mask_src, mask_name = mask if mask is not None and item.role != REAL else (None, None)
        value = 1 if self.label_space.is_binary else self.label_space.index(item.editor)
        image, label = read_labelled(image_src, mask_src, sample_id, value, full=item.role != REAL,
                                     name=image_name, mask_name=mask_name)
        return Sample(image, label, self._meta(sample_id, item))

    def _meta(self, sample_id: str, item: Item) -> SampleMeta:
        if item.role == REAL:
            return SampleMeta(sample_id, "real", (), self.name)
        edit_type = FULL_EDIT_TYPE if item.role == FULL else item.kind
        return SampleMeta(sample_id, "unknown", (EditRecord(item.editor, edit_type=edit_type),), self.name)

    # -- identity -----------------------------------------------------------------
    def _content_fingerprint(self) -> str:
        """The files' bytes by sample id, each sample's kind and generator, and the kinds read:
        not the container (parquet, save_to_disk, folder, zip) nor where it sits."""
        return combine(RULE_VERSION, combine("cells", sorted(self._cell_digests().items())),
                       sorted((sid, it.kind, it.editor) for sid, it in self._items.items()), list(self.kinds))

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        fakes = Counter(it.editor for it in self._items.values() if it.role != REAL)
        d.update(
            repository=self.repository,
            label_rule={"version": RULE_VERSION, "rule": RULE},
            kinds=list(self.kinds),
            samples={k: sum(it.kind == k for it in self._items.values()) for k in self.kinds},
            samples_per_split={s: dict(Counter(self._items[i].kind for i in ids)) for s, ids in self._splits.items()},
            generators=dict(sorted(fakes.items())),
        )
        return d


def by_unique_id(found: dict[str, dict[str, Item]]) -> dict[str, Item]:
    """Items found per split (split -> id -> item) by id, each id prefixed with its split
    where two splits share it (:func:`.hfsource.unique_ids`)."""
    ids = unique_ids({s: sorted(v) for s, v in found.items()})
    return {new: found[s][old] for s, olds in found.items() for old, new in zip(sorted(olds), ids[s])}


class RowsDataset(MixedDataset):
    """A :class:`MixedDataset` whose samples are rows of the hub's tables (``self._rows``),
    each item's ``where`` its ``(table, row)`` (:meth:`_row_of`)."""

    source_kind = "datasets"
    _rows: HFRows | None

    def _tables(self, root: Path, layout_help: str) -> list[Table]:
        """The tables at ``root``; none is a DataError saying what was expected (``layout_help``)."""
        tables = load_tables(root)
        if not tables:
            raise DataError(f"{root}: no {self.title} data found; {layout_help}")
        for folder in subfolders(root, depth=2) if root.is_dir() else []:
            if (split := self._split_of_folder(folder.name)) is not None and not looks_like_hf_dir(folder):
                raise empty_split(folder, f"{self.title} data (parquet, arrow or a save_to_disk folder)", split)
        return tables

    def _split_of_folder(self, name: str) -> str | None:
        """The split a folder so named holds (``validation/`` -> ``val``), None for a folder of no split:
        a split folder holding no table is refused, never passed over."""
        split = canonical_split(name)
        return split if split in CANONICAL_SPLITS else None

    def _row_of(self, item: Item) -> tuple[str, int] | None:
        """The ``(table, row)`` ``item`` is read from; None for one that is no row (a subclass that
        reads files too)."""
        return item.where

    def _refs(self, sample_id: str, item: Item) -> tuple[Ref, Ref | None]:
        where = self._row_of(item)
        assert self._rows is not None and where is not None  # an item of no row has its own _refs
        return self._rows.read(*where, sample_id)

    def _cell_digests(self) -> dict[str, str]:
        rows = {sid: where for sid, it in self._items.items() if (where := self._row_of(it)) is not None}
        return self._rows.digests(rows) if rows and self._rows is not None else {}
