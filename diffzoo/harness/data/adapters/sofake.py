"""The So-Fake adapter (Huang et al., arXiv 2505.18660; github hzlsaber/So-Fake).

Two Hugging Face datasets: ``saberzl/So-Fake-Set`` (training set; splits ``train`` and
``validation``) and ``saberzl/So-Fake-OOD`` (test only, split ``test``; CC BY 4.0), read
from a local download: the hub's parquet files (``data/<split>-00000-of-000NN.parquet``),
a ``save_to_disk`` folder, or a folder per split (:func:`.hfsource.load_tables`).  Rows:
``image``, ``mask`` (a binary mask, on tampered rows only), ``label``, ``filename`` and,
from the cards' v2.0 on, ``generator``, ``source``, ``split``.

The label order changed between the revisions (the So-Fake-OOD cards):

- ``v1`` (So-Fake-OOD v1.0: 100,000 rows, columns ``image, label, mask, filename``):
  0 full synthetic / 1 real / 2 tampered;
- ``v2`` (So-Fake-OOD v2.0: 99,722 rows, columns ``image, mask, label, generator, source,
  filename, split``): 0 real / 1 tampered / 2 full synthetic.

Read with the wrong order, real and fake swap silently, so each table's order is placed
from its data: the ``label`` ClassLabel's names where the copy keeps them, and which label
value carries the masks (only tampered rows have one: value 2 is v1, value 1 is v2); the
two must agree, and ``label_order=`` must agree with them.  A table neither places (no
names, no mask, or masks under two values) is refused, naming the file and what was found.

Labels: diffzoo's ``mixed-v1`` rule (:mod:`.mixed`), as SID-Set's: a full synthetic image
edited everywhere, a tampered image by its mask (mean(RGB) > 127.5).  The v2 ``generator``
of a row is the editor of its sample (``unknown`` where empty, and for every v1 row), so
the label space is background + one class per generator and per-generator tables work;
a copy naming no generator is binary.  Ids: ``filename``, prefixed with the split when
two splits share one.  Splits: the tables' own (``validation`` -> ``val``).
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from pathlib import Path
from typing import Any

from diffzoo.harness.core.errors import DataError
from diffzoo.harness.core.types import BINARY, LabelSpace
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
    table_where,
)
from diffzoo.harness.data.base import not_a_choice, require_path
from diffzoo.harness.data.hfsource import Table
from diffzoo.harness.data.splits import canonical_split, native_splits

log = logging.getLogger(__name__)

SOFAKE_REPO = "hzlsaber/So-Fake"
TRAIN_HUB, OOD_HUB = "saberzl/So-Fake-Set", "saberzl/So-Fake-OOD"
LAYOUT = "sofake"
ORDERS = {
    "v1": {0: "full_synthetic", 1: "real", 2: "tampered"},
    "v2": {0: "real", 1: "tampered", 2: "full_synthetic"},
}
"""``label`` value -> kind, per revision of the hub's cards."""
REVISIONS = {
    "v1": f"{OOD_HUB} card v1.0 (README commit 5427870): 0 full_synthetic, 1 real, 2 tampered",
    "v2": f"{OOD_HUB} card v2.0 (README commit ebd1518): 0 real, 1 tampered, 2 full_synthetic",
}
"""The revision each order was read from (the one diffzoo pins: ``v2``, the cards' latest)."""
PINNED = "v2"
LAYOUT_HELP = (f"expected So-Fake's hub data ({TRAIN_HUB} / {OOD_HUB}): parquet files "
               "data/<split>-00000-of-000NN.parquet or a save_to_disk folder, with columns "
               "image, mask, label, filename (v2 also generator, source, split)")


class SoFakeDataset(RowsDataset):
    """So-Fake-Set and/or So-Fake-OOD from the hub's data; see the module docstring.

    ``kinds``: which images to read, of ``real``, ``full_synthetic``, ``tampered`` (default
    all).  ``label_order``: ``v1`` or ``v2``, for a copy whose data cannot say which
    (no ClassLabel names and no mask); refused where the data says otherwise.
    """

    KINDS = {"real": REAL, "full_synthetic": FULL, "tampered": LOCAL}
    LOCAL_NEEDS_MASK = True
    repository = SOFAKE_REPO
    title = "So-Fake"
    PIXEL_PROTOCOL = "localization is scored on tampered images"

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        kinds: str | list[str] | None = None,
        label_order: str | None = None,
        name: str | None = None,
    ) -> None:
        root = require_path(path, "SoFakeDataset")
        if label_order is not None and label_order not in ORDERS:
            raise not_a_choice("So-Fake", "label_order", label_order, ORDERS)
        chosen = self.parse_kinds(kinds)
        tables = self._tables(root, LAYOUT_HELP)
        self._rows = table_rows(tables, root, ("filename", "label"))
        self.orders: dict[str, tuple[str, str]] = {}  # table -> (order, what placed it)
        found: dict[str, dict[str, Item]] = {}
        for t in tables:
            self.orders[t.name] = _place_order(t, self._rows.values(t.name, "label"), label_order)
            self._add_table(t, found)
        items = by_unique_id(found)
        named = {it.editor for it in items.values()} - {UNKNOWN_EDITOR}
        editors = sorted(named, key=str.lower) + (
            [UNKNOWN_EDITOR] if any(it.editor == UNKNOWN_EDITOR and it.role != REAL for it in items.values()) else [])
        space = LabelSpace.from_editors(editors) if named else BINARY
        if named:  # a real image has no edited pixel, but its editor must still be a class of the space
            items = {sid: Item(it.kind, it.role, editors[0], it.split, it.where) if it.role == REAL else it
                     for sid, it in items.items()}
        super().__init__(name or "sofake", space, items, chosen)
        self.path = str(root)
        splits = self._by_split()
        self._splits, self.split_info = native_splits(splits, f"So-Fake's own splits ({', '.join(sorted(splits))})")

    def _add_table(self, t: Table, found: dict[str, dict[str, Item]]) -> None:
        order = ORDERS[self.orders[t.name][0]]
        split = canonical_split(t.split)
        has_generator = "generator" in t.data.column_names  # v2 only
        generators = t.data.select_columns(["generator"]).to_dict()["generator"] if has_generator else None
        assert self._rows is not None  # set before any table is read
        names, labels = self._rows.values(t.name, "filename"), self._rows.values(t.name, "label")
        for row, (filename, label) in enumerate(zip(names, labels)):
            where = f"{table_where(t)} row {row}"
            if not isinstance(filename, str) or not filename:
                raise DataError(f"{where}: no filename ({filename!r})")
            kind = order[label]
            editor = UNKNOWN_EDITOR
            if kind != "real" and generators is not None and isinstance(generators[row], str) and generators[row]:
                editor = generators[row]
            ids = found.setdefault(split, {})
            if filename in ids:
                raise DataError(f"{where}: filename {filename} appears twice in split {split}")
            ids[filename] = Item(kind, self.KINDS[kind], editor, split, (t.name, row))

    @classmethod
    def sniff(cls, path: str | os.PathLike) -> bool:
        """A parquet / arrow file, ``save_to_disk`` folder or folder of them whose rows have
        So-Fake's columns ``image, mask, label, filename`` and no other adapter's key column."""
        return has_row_layout(Path(path), LAYOUT)

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d["hub"] = {"train": TRAIN_HUB, "ood": OOD_HUB}
        d["revision"] = {"pinned": REVISIONS[PINNED],
                         "read": {t: f"{o} ({REVISIONS[o]}; placed by {how})" for t, (o, how) in self.orders.items()}}
        return d


def _mask_counts(t: Table, labels: list[Any]) -> Counter[Any]:
    """Label value -> rows whose mask cell holds an image (bytes or a path), read from the
    arrow validity of the column, so no mask is decoded."""
    import pyarrow as pa
    import pyarrow.compute as pc

    column = t.data.data.column("mask")
    present = pc.is_valid(column)
    if pa.types.is_struct(column.type):  # the Image feature's {bytes, path}: either one holds the image
        names = {column.type.field(i).name for i in range(column.type.num_fields)}
        filled = pc.is_valid(pc.struct_field(column, "bytes")) if "bytes" in names else None
        if "path" in names:
            path = pc.fill_null(pc.not_equal(pc.struct_field(column, "path"), ""), False)
            filled = path if filled is None else pc.or_(filled, path)
        if filled is not None:
            present = pc.and_(present, filled)
    flags = present.to_pylist()
    return Counter(label for label, has in zip(labels, flags) if has)


def _place_order(t: Table, labels: list[Any], given: str | None) -> tuple[str, str]:
    """(``v1`` / ``v2``, what placed it) for one table, from its ClassLabel names and from
    which label value has masks; a table neither places, or whose evidence disagrees, is a
    DataError naming the file and what was found."""
    import datasets

    where = table_where(t)
    bad = sorted({repr(v) for v in labels if v not in (0, 1, 2)})
    if bad:
        raise DataError(f"{where}: label values {', '.join(bad)}; So-Fake's labels are 0, 1, 2 "
                        f"(v1: {_order_text('v1')}; v2: {_order_text('v2')})")
    votes: dict[str, str] = {}
    feature = t.data.features.get("label")
    if isinstance(feature, datasets.ClassLabel):
        by_names = next((o for o, kinds in ORDERS.items() if list(kinds.values()) == list(feature.names)), None)
        if by_names is None:
            raise DataError(f"{where}: label names {', '.join(feature.names)} are neither So-Fake order "
                            f"(v1: {_order_text('v1')}; v2: {_order_text('v2')})")
        votes["ClassLabel names"] = by_names
    masked = _mask_counts(t, labels)
    counts = ", ".join(f"label {v}: {n}" for v, n in sorted(masked.items()))
    if len(masked) > 1:
        raise DataError(f"{where}: masks under more than one label value ({counts}); only So-Fake's tampered rows "
                        "carry masks, so this copy's label order cannot be placed")
    if masked:
        value = next(iter(masked))
        by_masks = next((o for o, kinds in ORDERS.items() if kinds[value] == "tampered"), None)
        if by_masks is None:
            raise DataError(f"{where}: masks under label {value} ({counts}); the tampered value is 2 in v1 "
                            "and 1 in v2, so this copy's label order cannot be placed")
        votes["masks"] = by_masks
    if given is not None:
        votes["label_order option"] = given
    if len(set(votes.values())) > 1:
        said = "; ".join(f"{how} say {o}" for how, o in votes.items())
        raise DataError(f"{where}: the label order is contradicted ({said}; v1: {_order_text('v1')}, "
                        f"v2: {_order_text('v2')})")
    if not votes:
        raise DataError(f"{where}: cannot place the label order: no ClassLabel names on label and no masks "
                        f"(labels {', '.join(map(str, sorted(set(labels))))}); pass --dataset-option "
                        f"label_order=v2 ({_order_text('v2')}) or label_order=v1 ({_order_text('v1')})")
    order = next(iter(votes.values()))
    log.info("So-Fake %s: label order %s (%s)", where, order, ", ".join(votes))
    return order, " + ".join(votes)


def _order_text(order: str) -> str:
    return ", ".join(f"{v} {k}" for v, k in ORDERS[order].items())
