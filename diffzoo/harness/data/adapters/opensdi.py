"""The OpenSDI adapter (Wang et al., CVPR 2025; github iamwangyabin/OpenSDI).

OpenSDID ships as two Hugging Face datasets (CC BY-SA 4.0): ``nebula/OpenSDI_train``
(one split, ``sd15``) and ``nebula/OpenSDI_test`` (splits ``sd15``, ``sd2``, ``sdxl``,
``sd3``, ``flux``: one per generator), rows ``key, image, mask, label`` (``label`` a
ClassLabel 0 real / 1 fake; keys such as ``partial/sd15/fake/000651821.jpg``).  Read
from a local download: the hub's parquet files (``data/<split>-00000-of-00070.parquet``),
a ``save_to_disk`` folder, a folder per split, or a folder holding both copies
(:func:`.hfsource.load_tables`).

Label rule: OpenSDI's own (its ``data/hf_datasets.py``), which is diffzoo's ``mixed-v1``
(:mod:`.mixed`): real rows have no edited pixel, a fake's mask is binarised at
mean(RGB) > 127.5, a fake without a mask is fully generated (every pixel edited).  The
generator of a split is the editor of its samples, so the label space is background +
one class per generator present and per-generator tables work.  A fake whose key
contains ``partial`` is a local edit (kind ``partial``), any other fake kind ``full``:
OpenSDI's ``test.py`` scores pixels on exactly those ``partial`` fakes.

Splits: the train copy is ``train``; the test copy is ``test`` and one split per
generator (``sd2``, ...); ``val`` is the test copy's ``sd15`` (the in-distribution
test), unless ``val_fraction`` carves ``val`` from ``train`` by id hash instead.  A
table whose split names no generator (the hub once held ``data/test-000NN-of-00038``
files) takes each row's generator from its key (``partial/<generator>/fake/...``).
Which copy a ``sd15`` table is comes from its siblings (a folder holding other
generators is the test copy), or from the names of its folders up to the one given
(``OpenSDI_train``, ``OpenSDI_test``; above a given ``data/`` folder too), or ``copy=``.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Any

from diffzoo.harness.core.errors import ConfigError, DataError
from diffzoo.harness.core.types import LabelSpace
from diffzoo.harness.data.adapters.mixed import (
    FULL,
    LOCAL,
    REAL,
    Item,
    RowsDataset,
    has_row_layout,
    table_rows,
    table_where,
)
from diffzoo.harness.data.base import not_a_choice, require_path
from diffzoo.harness.data.hfsource import Table
from diffzoo.harness.data.splits import CANONICAL_SPLITS, SPLIT_ALIASES, canonical_split, hash_split_id, split_ids

log = logging.getLogger(__name__)

OPENSDI_REPO = "iamwangyabin/OpenSDI"
TRAIN_HUB, TEST_HUB = "nebula/OpenSDI_train", "nebula/OpenSDI_test"
OPENSDI_GENERATORS = ("sd15", "sd2", "sdxl", "sd3", "flux")
"""The generators in the order of OpenSDI's README table (SD1.5, SD2.1, SDXL, SD3, Flux.1)."""
TRAIN_GENERATOR = "sd15"
VALUE_COLUMNS = ("key", "label")
COPIES = ("train", "test")
SPLIT_RULE = "opensdi-v1"
_NOT_GENERATORS = {*CANONICAL_SPLITS, *SPLIT_ALIASES, "data", "default"}
_COPY_WORD = re.compile(r"(?<![a-z])(train|test)(?![a-z])")
LAYOUT_HELP = (f"expected OpenSDI's hub data ({TRAIN_HUB} / {TEST_HUB}): parquet files "
               "data/<generator>-00000-of-00001.parquet, a save_to_disk folder or a folder per generator, "
               "with columns key, image, mask, label")


class OpenSdiDataset(RowsDataset):
    """OpenSDI's train and/or test copy; see the module docstring and docs/datasets.md.

    ``copy``: ``train`` or ``test``, for ``sd15`` data whose folders name neither.
    ``kinds``: which images to read, of ``real``, ``partial``, ``full`` (default all;
    ``kinds=partial`` is OpenSDI's pixel-level test set).  ``val_fraction``: carve ``val``
    from ``train`` by id hash (seed ``split_seed``) instead of using the test copy's ``sd15``.
    """

    KINDS = {"real": REAL, "partial": LOCAL, "full": FULL}
    repository = OPENSDI_REPO
    title = "OpenSDI"
    PIXEL_PROTOCOL = "OpenSDI scores pixels on partial fakes only"

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        copy: str | None = None,
        kinds: str | list[str] | None = None,
        val_fraction: float | None = None,
        split_seed: int = 0,
        name: str | None = None,
    ) -> None:
        root = require_path(path, "OpenSdiDataset")
        if copy is not None and copy not in COPIES:
            raise not_a_choice("OpenSDI", "copy", copy, COPIES)
        chosen = self.parse_kinds(kinds)
        tables = self._tables(root, LAYOUT_HELP)
        self._copies = _copies(root, tables, copy)
        self._rows = table_rows(tables, root, VALUE_COLUMNS)
        items: dict[str, Item] = {}
        for t in tables:
            self._add_table(t, items)
        found = {it.editor for it in items.values()}
        generators = [g for g in OPENSDI_GENERATORS if g in found] + sorted(found - set(OPENSDI_GENERATORS))
        super().__init__(name or "opensdi", LabelSpace.from_editors(generators), items, chosen)
        self.path = str(root)
        self._splits, self.split_info = self._split_scheme(val_fraction, split_seed)

    def _split_of_folder(self, name: str) -> str | None:
        """A copy's folder (``OpenSDI_train``) holds that copy, a generator's (``sd15/``) that generator."""
        lowered = name.lower()
        if lowered in OPENSDI_GENERATORS:
            return lowered
        return m[1] if (m := _COPY_WORD.search(lowered)) else super()._split_of_folder(name)

    def _add_table(self, t: Table, items: dict[str, Item]) -> None:
        copy, generator = self._copies[t.name], _generator(t)
        where = table_where(t)
        if generator is not None and generator not in OPENSDI_GENERATORS:
            log.info("OpenSDI %s: split %r is none of OpenSDI's generators (%s); read as a generator of that name",
                     where, t.split, ", ".join(OPENSDI_GENERATORS))
        assert self._rows is not None  # set before any table is read
        keys, labels = self._rows.values(t.name, "key"), self._rows.values(t.name, "label")
        for row, (key, label) in enumerate(zip(keys, labels)):
            if not isinstance(key, str) or not key:
                raise DataError(f"{where}: row {row} has no key ({key!r}); OpenSDI keys look like "
                                "partial/sd15/fake/000651821.jpg")
            if label not in (0, 1):
                raise DataError(f"{where}: row {row} ({key}): label {label!r}; OpenSDI's labels are 0 (real), 1 (fake)")
            parts = key.split("/")  # keys seen: <subset>/<generator>/<real|fake>/<file> (partial/sd2/fake/x.jpg)
            gen = generator or (parts[1].lower() if len(parts) >= 3 and parts[1] else None)
            if gen is None:
                raise DataError(f"{where}: row {row} ({key}): its generator is unknown: the split names none and "
                                "the key does not start <subset>/<generator>/ (partial/sd2/fake/...)")
            gen = LabelSpace.read(gen)  # one name per generator for its class and its split
            sid = f"{copy}/{key}"
            if sid in items:
                raise DataError(f"{where}: key {key} appears twice in OpenSDI's {copy} copy")
            kind = "real" if label == 0 else "partial" if "partial" in key else "full"
            items[sid] = Item(kind, self.KINDS[kind], gen, "train" if copy == "train" else gen, (t.name, row))

    def _split_scheme(self, val_fraction: float | None, seed: int) -> tuple[dict[str, list[str]], dict[str, str]]:
        splits = self._by_split()
        test = sorted(sid for sid in self._items if sid.startswith("test/"))
        gens = [g for g in self.label_space.editors if g in splits]
        parts = [f"{TRAIN_HUB} -> train"] if "train" in splits else []
        parts += [f"{TEST_HUB} -> test and one split per generator ({', '.join(gens)})"] if test else []
        split_id = SPLIT_RULE
        if test:
            splits["test"] = test
        if val_fraction:
            if "train" not in splits:
                raise ConfigError("OpenSDI val_fraction carves val from the train copy, and none was found")
            splits.update(split_ids(splits.pop("train"), val_fraction, seed))
            split_id = f"{SPLIT_RULE}+{hash_split_id(seed, val_fraction)}"
            parts.append(f"val = {val_fraction:g} of train by id hash (seed {seed})")
        elif TRAIN_GENERATOR in splits:
            splits["val"] = list(splits[TRAIN_GENERATOR])
            parts.append(f"val = the test copy's {TRAIN_GENERATOR}")
        info = {"id": split_id, "source": "OpenSDI's own splits: " + "; ".join(parts)}
        return {k: v for k, v in splits.items() if v}, info

    @classmethod
    def sniff(cls, path: str | os.PathLike) -> bool:
        """A parquet / arrow file, ``save_to_disk`` folder or folder of them whose rows have
        OpenSDI's columns ``key, image, mask, label``."""
        return has_row_layout(Path(path), "opensdi")

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d["copies"] = {c: f"{TRAIN_HUB if c == 'train' else TEST_HUB}" for c in sorted(set(self._copies.values()))}
        return d


def _generator(t: Table) -> str | None:
    """The generator a table holds: its split name (OpenSDI names its splits after generators);
    None for a name that is no generator's (``test``, ``data``, a number)."""
    name = t.split.lower()
    return None if name in _NOT_GENERATORS or name.isdigit() else name


def _copy_hint(folder: Path, base: Path) -> str | None:
    """``train`` / ``test`` as the nearest folder name says, from ``folder`` up to ``base`` (the
    folder given, or the given file's), and up to its parent when ``base`` is the hub's ``data/``."""
    top = base.parent if base.name == "data" else base
    for p in (folder, *folder.parents):
        m = _COPY_WORD.search(p.name.lower())
        if m:
            return m[1]
        if p in (top, p.parent):
            return None
    return None


def _group(t: Table) -> Path:
    """The folder holding a table's copy: its own, or for a folder per split (``sd15/``), the parent."""
    return t.folder.parent if t.folder.name.lower() == t.split.lower() else t.folder


def _copies(path: Path, tables: list[Table], given: str | None) -> dict[str, str]:
    """Table name -> ``train`` / ``test``: a split named so is that copy; a table of another
    generator than sd15, or beside one (same folder; sibling folders of a folder per split), is
    the test copy; any other (sd15 alone, a split naming no generator) is what its folders'
    names say, else ``given``."""
    base = path if path.is_dir() else path.parent
    test_groups = {_group(t) for t in tables if _generator(t) not in (None, TRAIN_GENERATOR)}
    out: dict[str, str] = {}
    for t in tables:
        named = canonical_split(t.split.lower())
        if named in COPIES:
            out[t.name] = named
        elif _generator(t) not in (None, TRAIN_GENERATOR) or _group(t) in test_groups:
            out[t.name] = "test"
        elif (copy := _copy_hint(t.folder, base) or given) is not None:
            out[t.name] = copy
        else:
            raise DataError(
                f"{t.files[0] if len(t.files) == 1 else t.folder}: cannot tell whether this {t.split} data is "
                f"OpenSDI's train copy ({TRAIN_HUB}) or its test copy ({TEST_HUB}): no folder name above it says "
                "train or test; keep it in a folder named OpenSDI_train / OpenSDI_test, or pass --dataset-option "
                "copy=train (or copy=test)"
            )
    return out
