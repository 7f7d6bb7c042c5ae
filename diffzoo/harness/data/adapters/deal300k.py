"""DEAL-300K (Zhang et al., arXiv 2511.23377; github ymhzyj/DEAL-300K): COCO
photos edited by InstructPix2Pix with instructions written by a fine-tuned
Qwen-VL, and change-detection masks of the edits.

Confirmed from the repository (README and ``assets/examples/`` at commit
e4da3e6, and the README's later revision): the download is four zips,
``train.zip``, ``val.zip``, ``test.zip`` (images) and ``label.zip`` (masks);
``<cocoid>.jpg`` is the source photo (resized: 512 x 384 in the examples),
``<cocoid>_qwen<ckpt>.jpg`` an edit of it, ``<cocoid>_qwen<ckpt>.png`` that
edit's mask, mode L with values 0 and 255, the size of the image.  ``<ckpt>``
(120, 180) is the Qwen-VL checkpoint that wrote the instruction
(``instructions/checkpoint-<ckpt>_*_results.json``); every edit is by
InstructPix2Pix.

Not confirmed (no listing of the archives is public): the folders inside the
zips.  So nothing here depends on them: an image's split is the zip (or
extracted folder) it comes from, and masks are matched by file name anywhere
in ``label.zip`` / ``label/`` (or beside the images).

Samples: every edited image with its mask, and (``originals=True``, the
default) every source photo as authentic, all-zero mask; ``originals=False``
keeps the edited images only (the paper's later "DEAL-E edited-only" test
subset).  Ids ``<split>/<file name>``.  Labels: binary; up to 32 masks are
read at open (:mod:`..mask_encoding`): 0 and 255 is the rule ``binary-255``
(255 = edited), 0 and 1 only ``binary-1``, neither 255 nor 1 refuses the data;
a mask holding another value is a corrupt sample when loaded (``mask-values``), as is
one with no edited pixel (``mask-empty``).
Metadata of an edit: ``base="real"``, one turn with editor ``instructpix2pix``
and edit type ``instruction-qwen<ckpt>``.

Splits: the data's own (``train``, ``val``, ``test``: the zips present), or
``split_file=`` / ``splits.json`` beside the data.
"""

from __future__ import annotations

import logging
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from diffzoo.harness.core.errors import DataError, not_found
from diffzoo.harness.core.types import BINARY, EditRecord, Sample, SampleMeta
from diffzoo.harness.data.base import (
    SplitDataset,
    child_dir,
    empty_split,
    masks_by_stem,
    one_name,
    option_path,
    report_unpaired,
    require_path,
)
from diffzoo.harness.data.fingerprint import combine
from diffzoo.harness.data.imageio import edited_region, read_image, read_mask
from diffzoo.harness.data.mask_encoding import BINARY_1, BINARY_255, MaskEncoding, sample_values
from diffzoo.harness.data.sources import FolderMembers, ZipMembers, open_zip, posix_names
from diffzoo.harness.data.splits import SPLITS_FILE, ids_by_split, native_splits, resolve_split_scheme
from diffzoo.harness.data.walk import log_unused, mask_once

log = logging.getLogger(__name__)

EDITOR = "instructpix2pix"
SPLIT_NAMES = {"train": ("train",), "val": ("val", "valid", "validation"), "test": ("test",)}
MASK_FOLDERS = ("label", "labels")
NAME_RE = re.compile(r"^(?P<coco>\d+)(?:_(?P<tag>qwen\d+))?\.(?P<ext>jpe?g|png)$", re.IGNORECASE)
"""``<cocoid>.jpg`` (source), ``<cocoid>_qwen<ckpt>.jpg`` (edit), ``<cocoid>_qwen<ckpt>.png`` (mask)."""
LAYOUT_HELP = ("expected DEAL-300K's train.zip / val.zip / test.zip (or the folders they extract to) "
               "beside label.zip (or label/), or one of those zips / folders with label.zip beside it")

Members = ZipMembers | FolderMembers
Ref = tuple[Members, str]


def classify(name: str) -> tuple[str, str, str | None] | None:
    """``(kind, key, tag)`` of a file name: kind ``source`` / ``edit`` / ``mask``, key
    ``<cocoid>`` or ``<cocoid>_qwen<ckpt>``; None for any other file."""
    m = NAME_RE.match(name.rsplit("/", 1)[-1])
    if m is None:
        return None
    tag, png = m["tag"], m["ext"].lower() == "png"
    if tag is None:
        return "source", m["coco"], None
    return ("mask" if png else "edit"), f"{m['coco']}_{tag.lower()}", tag.lower()


def _child(folder: Path, names: tuple[str, ...]) -> Path | None:
    """The first of ``names`` in ``folder`` (any letter case): a folder (:func:`..base.child_dir`), else
    a ``.zip`` of that name (an extracted copy is read rather than its archive)."""
    try:
        zips = [c for c in folder.iterdir() if c.name.lower().endswith(".zip")]
    except OSError as exc:
        raise DataError(f"{folder}: cannot list the folder ({exc})") from None
    for n in names:
        if (found := child_dir(folder, n)) is not None:
            if any(z.name.lower() == f"{n}.zip" for z in zips):
                log.info("%s: reading the folder %s, not %s.zip", folder, found.name, n)
            return found
    for n in names:
        if zip_name := one_name(folder, sorted(z.name for z in zips if z.name.lower() == f"{n}.zip" and z.is_file()),
                                f"{n}.zip"):
            return folder / zip_name
    return None


def locate(path: Path, masks: str | os.PathLike | None) -> tuple[list[tuple[str, Path]], Path | None, Path]:
    """``([(split, zip or folder of images)], zip or folder of masks, sidecar folder)`` for ``path``:
    a folder holding the split zips / folders, or one of them (masks then beside it); no images
    for any other path."""
    if path.is_dir():
        images = [(s, c) for s, aliases in SPLIT_NAMES.items() if (c := _child(path, aliases)) is not None]
        home = path
    else:
        images, home = [], path.parent
    if not images:
        key = path.name.lower().removesuffix(".zip")
        split = next((s for s, aliases in SPLIT_NAMES.items() if key in aliases), None)
        if split is None or not (path.is_dir() or path.suffix.lower() == ".zip"):
            return [], None, home
        images, home = [(split, path)], path.parent
    if masks is not None:
        return images, option_path(masks, home, "masks"), home
    return images, _child(home, MASK_FOLDERS), home


def _members(path: Path) -> Members:
    if not path.exists():
        raise not_found(DataError(f"{path} does not exist"))
    return ZipMembers(path) if path.is_file() else FolderMembers(path)


class Deal300kDataset(SplitDataset):
    """DEAL-300K from its zips or their extracted folders (module doc)."""

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        masks: str | os.PathLike | None = None,
        originals: bool = True,
        split_file: str | os.PathLike | None = None,
        name: str | None = None,
        skip_unpaired: bool = False,
    ) -> None:
        """``masks``: the zip or folder of masks when it is not ``label.zip`` / ``label/``
        beside the images (relative to the dataset folder unless absolute)."""
        root = require_path(path, "Deal300kDataset")
        placed, mask_path, home = locate(root, masks)
        if not placed:
            raise DataError(f"{root}: not a DEAL-300K download; {LAYOUT_HELP}")
        super().__init__(name or "deal300k", BINARY)
        self.path = str(root)
        self.source_kind = "+".join(sorted({"zip" if p.is_file() else "folder" for _, p in placed}))
        self._sources = {"images": [str(p) for _, p in placed], "masks": str(mask_path) if mask_path else None}
        self._images: dict[str, Ref] = {}
        self._masks: dict[str, Ref] = {}  # sample id of an edit -> its mask
        self._tags: dict[str, str] = {}
        native = self._index(placed, mask_path, originals, skip_unpaired, root)
        self.mask_encoding = self._sniff_masks()
        self.label_source = f"binary masks ({self.mask_encoding.kind})"
        if split_file is not None or (home / SPLITS_FILE).is_file():
            given = option_path(split_file, home, "split_file") if split_file is not None else None
            self._splits, self.split_info = resolve_split_scheme(native, home / SPLITS_FILE, 0.2, 0, split_file=given)
        else:
            names = ", ".join(p.name for _, p in placed)
            self._splits, self.split_info = native_splits(native, f"the data's own splits ({names})")

    # -- indexing -----------------------------------------------------------
    def _index(self, placed: list[tuple[str, Path]], mask_path: Path | None, originals: bool,
               skip_unpaired: bool, root: Path) -> dict[str, list[str]]:
        """Fill the image and mask tables; the ids of each split."""
        masks: dict[str, Ref] = {}
        label_sources = [_members(mask_path)] if mask_path is not None else []
        image_sources = [(split, _members(p)) for split, p in placed]
        for members in [*label_sources, *(m for _, m in image_sources)]:
            stems = ((c[1], n) for n in members.names if (c := classify(n)) is not None and c[0] == "mask")
            for stem, n in masks_by_stem(members.location, stems).items():
                masks.setdefault(stem, (members, n))  # the label archive first; masks beside images fill gaps
        native: list[tuple[str, str]] = []  # (id, split)
        where: dict[str, str] = {}
        no_mask: list[str] = []
        for split, members in image_sources:
            named = [(n, c) for n in members.names if (c := classify(n)) is not None and c[0] != "mask"]
            if not named:  # an extraction cut short (val/ left empty): the split would be gone, unsaid
                raise empty_split(members.location, "DEAL-300K image (<cocoid>.jpg, <cocoid>_qwen<ckpt>.jpg)", split)
            for n, c in named:
                if c[0] == "source" and not originals:
                    continue
                sid = f"{split}/{n.rsplit('/', 1)[-1]}"
                if sid in where:
                    raise DataError(f"{members.location}: {sid} appears twice: {where[sid]} and {n}")
                where[sid] = n
                if c[0] == "edit":
                    if c[1] not in masks:
                        no_mask.append(sid)
                        continue
                    self._masks[sid] = masks[c[1]]
                    self._tags[sid] = c[2] or ""
                self._images[sid] = (members, n)
                native.append((sid, split))
        paired = mask_once(root, {sid: (None, ref) for sid, ref in self._masks.items()}, lambda ref: ref[1])
        report_unpaired(str(root), no_mask,
                        f"edited image(s) have no mask <cocoid>_qwen<ckpt>.png in "
                        f"{mask_path or 'label.zip / label/ (none found)'}", skip_unpaired)
        log_unused(root, sorted(k for k, r in masks.items() if r not in paired), "mask(s) match no edited image read")
        if not self._images:
            raise DataError(f"{root}: no DEAL-300K images (<cocoid>.jpg, <cocoid>_qwen<ckpt>.jpg) found; {LAYOUT_HELP}")
        return ids_by_split(native)

    def _stored_mask(self, sample_id: str) -> np.ndarray:
        members, n = self._masks[sample_id]
        src, shown = members.read(n, sample_id)
        return read_mask(src, sample_id, name=shown)

    def _sniff_masks(self) -> MaskEncoding:
        """The label rule, from up to 32 masks: 0/1 only is ``binary-1``; 255 found (or
        nothing but 0) is ``binary-255``, whose other values make corrupt samples when
        loaded; masks with neither 1 nor 255 are not DEAL-300K's (a DataError)."""
        values, read = sample_values(self._stored_mask, sorted(self._masks))
        kind = BINARY_1 if values <= {0, 1} and 1 in values else BINARY_255 if values <= {0} or 255 in values else None
        if kind is None:
            raise DataError(
                f"{self.path}: DEAL-300K masks hold 0 (unedited) and 255 (edited), but the {read} mask(s) "
                f"read hold the values {', '.join(map(str, sorted(values)))}; these are not DEAL-300K's masks")
        return MaskEncoding(kind, tuple(sorted(values)), read)

    # -- samples ------------------------------------------------------------
    def _load(self, sample_id: str) -> Sample:
        members, n = self._lookup(self._images, sample_id)
        src, shown = members.read(n, sample_id)
        image = read_image(src, sample_id, name=shown)
        if sample_id not in self._masks:
            label = np.zeros(image.shape[:2], np.uint8)
            return Sample(image, label, SampleMeta(sample_id, base="real", source=self.name))
        mask_members, mask_name = self._masks[sample_id]
        src, shown = mask_members.read(mask_name, sample_id)
        stored = read_mask(src, sample_id, name=shown, size=(image.shape[1], image.shape[0]))
        mask = edited_region(self.mask_encoding.remap(stored, sample_id, shown), sample_id, shown)
        turn = EditRecord(EDITOR, edit_type=f"instruction-{self._tags[sample_id]}")
        return Sample(image, mask, SampleMeta(sample_id, base="real", turns=(turn,), source=self.name))

    # -- identity -----------------------------------------------------------
    def _content_fingerprint(self) -> str:
        """sha256 of every image and mask, keyed ``<id>.image`` / ``<id>.mask``: the same
        for the zips and their extracted folders, wherever they are."""
        refs = [(f"{sid}.image", ref) for sid, ref in self._images.items()]
        refs += [(f"{sid}.mask", ref) for sid, ref in self._masks.items()]
        by_source: dict[int, tuple[Members, list[str]]] = {}
        for _, (members, n) in refs:
            by_source.setdefault(id(members), (members, []))[1].append(n)
        digests = {(key, n): sha for key, (members, names) in by_source.items()
                   for n, sha in members.digests(names).items()}
        rows = sorted((k, digests[id(members), n]) for k, (members, n) in refs)
        return combine("deal300k", rows, self.mask_encoding.kind)

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d["edited"] = len(self._masks)
        d["authentic"] = len(self._images) - len(self._masks)
        d["instruction_checkpoints"] = dict(sorted(Counter(self._tags.values()).items()))
        d["mask_encoding"] = self.mask_encoding.describe(self.label_space)
        d["sources"] = self._sources
        return d

    @classmethod
    def sniff(cls, path: str | os.PathLike) -> bool:
        """A DEAL-300K folder, split zip or split folder whose masks (``label.zip`` /
        ``label/``) hold ``<cocoid>_qwen<ckpt>.png`` files; an unreadable ``label.zip``
        is claimed too, so that opening says what is wrong with it."""
        try:
            images, mask_path, _ = locate(Path(path), None)
        except OSError:
            return False
        if not images or mask_path is None:
            return False
        if mask_path.is_file():
            try:
                with open_zip(mask_path) as zf:
                    return any(_is_mask(n) for n in posix_names(zf))
            except DataError:
                return True
        return any(_is_mask(f) for _, _, files in os.walk(mask_path) for f in files)


def _is_mask(name: str) -> bool:
    c = classify(name)
    return c is not None and c[0] == "mask"
