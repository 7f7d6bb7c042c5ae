"""Adapters for the classic image-manipulation localization layouts.

Two generic forms cover most of the field's extra benchmarks (docs/datasets.md):

- :class:`TpGtDataset`: a folder with ``Tp/`` (tampered images) and ``Gt/``
  (masks), plus optionally ``Au/`` (authentic images, all-zero masks), as
  CASIA v2 and many re-packs ship;
- :class:`JsonListDataset`: a JSON list of ``[image_path, mask_path]`` or
  ``[image_path, "Negative"]`` (authentic), IMDL-BenCo's format.

Masks are binarised by the field's rule: mean over the RGB channels > 127.5
is edited.  A mask stored as 0/1 values therefore reads as all background (a
warning says so), and a tampered image whose mask marks no pixel is a corrupt
sample (``mask-empty``), as is one whose mask's size differs from its image's
(never resized).  Labels use the binary label space
``("background", "edited")``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from diffzoo.harness.core.errors import ConfigError, DataError
from diffzoo.harness.core.fsutil import read_json
from diffzoo.harness.core.types import BINARY, EditRecord, Sample, SampleMeta
from diffzoo.harness.data.authentic import list_image_files
from diffzoo.harness.data.base import (
    SplitDataset,
    child_dir,
    folder_name,
    listed_once,
    masks_by_stem,
    report_unpaired,
    require_path,
    warn_unread_images,
)
from diffzoo.harness.data.fingerprint import fingerprint_files
from diffzoo.harness.data.imageio import edited_region, read_binary_mask, read_image
from diffzoo.harness.data.metadata import data_json
from diffzoo.harness.data.splits import SPLITS_FILE, resolve_split_scheme
from diffzoo.harness.data.walk import StoredPaths, canonical_name, ids_of, mask_once, walk_files

log = logging.getLogger(__name__)

NEGATIVE = "Negative"
MASK_SUFFIXES = ("", "_gt", "_mask")


class _PairListDataset(SplitDataset):
    """Samples given as id -> (image file, mask file or None for authentic)."""

    source_kind = "files"

    def __init__(
        self,
        name: str,
        root: Path,
        entries: dict[str, tuple[Path, Path | None]],
        *,
        val_fraction: float | None,
        split_seed: int | None,
        split: str | None,
        default_split: str | None = None,
    ) -> None:
        """``split``: every sample in that one split.  Otherwise ``splits.json``
        in ``root``; otherwise every sample in ``default_split`` if given (a
        test-only set) and no ``val_fraction`` was asked for, else train/val
        by id hash (``val_fraction``, default 0.2; ``split_seed``, default 0).
        ``val_fraction`` or ``split_seed`` given where no hash split is made
        from them (beside ``split``, or ``split_seed`` alone on a test-only set)
        is a ConfigError: neither is ever taken and then ignored."""
        super().__init__(name, BINARY)
        self.root = root
        self.path = str(root)
        self._entries = entries
        why = f"split={split} was given; give one or the other"
        if split is None and default_split is not None and val_fraction is None and not (root / SPLITS_FILE).is_file():
            split, why = default_split, f"{name} is a test set, split by hash with val_fraction=F; give both or neither"
        if split is not None and (hashed := [f"{k}={v}" for k, v in (("val_fraction", val_fraction),
                                                                       ("split_seed", split_seed)) if v is not None]):
            raise ConfigError(f"{' and '.join(hashed)} {'choose' if len(hashed) > 1 else 'chooses'} a train/val split "
                              f"by id hash, but every sample is in {split}: {why}")
        fraction = 0.2 if val_fraction is None else val_fraction
        self._split_by(split, entries, lambda: self._split_scheme(sorted(entries), fraction, split_seed or 0))

    def _split_scheme(self, ids: list[str], val_fraction: float,
                      seed: int) -> tuple[dict[str, list[str]], dict[str, str]]:
        """The splits when none is fixed: ``splits.json`` in the folder, else train/val by id
        hash; an adapter that knows its data's own splits overrides this."""
        return resolve_split_scheme({"train": ids}, self.root / SPLITS_FILE, val_fraction, seed)

    def _load(self, sample_id: str) -> Sample:
        image_path, mask_path = self._lookup(self._entries, sample_id)
        image = read_image(image_path, sample_id)
        h, w = image.shape[:2]
        if mask_path is None:
            label = np.zeros((h, w), np.uint8)
        else:
            label = edited_region(self._edited(sample_id, mask_path, (w, h)), sample_id, str(mask_path))
        return Sample(image, label, self._meta(sample_id, authentic=mask_path is None))

    def _edited(self, sample_id: str, mask: Path, size: tuple[int, int]) -> np.ndarray:
        """The 0/1 edited map of a tampered image's mask (the field's rule: mean over channels > 127.5)."""
        return read_binary_mask(mask, sample_id, size=size)

    #: ``base`` of an edited sample (``real`` where the adapter knows the
    #: edits were made on real photos).
    edited_base = "unknown"

    def _meta(self, sample_id: str, *, authentic: bool) -> SampleMeta:
        """A sample's metadata: authentic images are ``real``; an edited one
        has :attr:`edited_base` and the turn :meth:`_turn` gives, if any."""
        if authentic:
            return SampleMeta(sample_id, base="real", source=self.name)
        turn = self._turn(sample_id)
        turns = (turn,) if turn is not None else ()
        return SampleMeta(sample_id, base=self.edited_base, turns=turns, source=self.name)

    def _turn(self, sample_id: str) -> EditRecord | None:
        """The edit of an edited sample; adapters that know its editor,
        prompt or edit type override this."""
        return None

    def _content_fingerprint(self) -> str:
        files = {p for pair in self._entries.values() for p in pair if p is not None}
        return fingerprint_files(self.root, sorted(files))

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d["authentic"] = sum(1 for _, m in self._entries.values() if m is None)
        return d


class _TestSetDataset(_PairListDataset):
    """A test set of edits made on real photos: named :attr:`DEFAULT_NAME` unless given
    a name, every sample in ``test`` unless ``split``, ``splits.json`` or ``val_fraction``
    says otherwise.  A tampered image's turn has editor ``unknown`` and its edit type from
    ``self._edit_types`` (id -> edit type); an adapter that knows more overrides :meth:`_turn`."""

    edited_base = "real"
    DEFAULT_NAME = ""
    _edit_types: dict[str, str]

    def __init__(
        self,
        root: Path,
        entries: dict[str, tuple[Path, Path | None]],
        *,
        name: str | None,
        split: str | None,
        val_fraction: float | None,
        split_seed: int | None,
    ) -> None:
        super().__init__(name or self.DEFAULT_NAME, root, entries, val_fraction=val_fraction,
                         split_seed=split_seed, split=split, default_split="test")

    def _turn(self, sample_id: str) -> EditRecord | None:
        return EditRecord("unknown", edit_type=self._edit_types[sample_id])


def add_authentic(entries: dict[str, tuple[Path, Path | None]], au: Path) -> None:
    """Add every image under ``au`` as authentic (no mask), with id ``<au name>/<path inside it>``
    (:func:`.walk.canonical_name`)."""
    entries.update((sid, (img, None)) for sid, img in ids_of(au, list_image_files(au), f"{au.name}/").items())


def pair_folders(
    folders: Sequence[Path], gt: Path, *, by_name: bool = False
) -> tuple[dict[str, tuple[Path, Path | None]], list[str]]:
    """Pair every image under each of ``folders`` with its mask under ``gt``.

    The mask of ``<folder>/<stem>.<ext>`` is ``gt/<stem><s>.*`` for ``s`` in
    :data:`MASK_SUFFIXES`, ``stem`` being the path relative to the folder
    (``by_name``: the file name's stem alone, the mask anywhere under ``gt``).
    Ids are ``<folder name>/<path inside it>``; ids and stems are read by
    :func:`.walk.canonical_name`, so an accent stored decomposed (macOS) matches one stored
    composed, and two images whose names read as one are refused.  Returns the pairs and the ids
    of images without a mask; masks matching no image are logged, and two
    masks for one stem, or for one image (``x`` and ``x_gt``), or two images for one mask
    (``x.png`` and ``x.jpg``), are a :class:`DataError`.
    """
    def shown(mask: Path) -> str:
        return mask.relative_to(gt).as_posix()

    masks = masks_by_stem(gt, ((m.stem if by_name else shown(m.with_suffix("")), m)
                               for m in list_image_files(gt)), shown)
    entries: dict[str, tuple[Path, Path | None]] = {}
    no_mask: list[str] = []
    for folder in folders:
        for sid, img in ids_of(folder, list_image_files(folder), f"{folder.name}/").items():
            stem = canonical_name(img.stem if by_name else img.relative_to(folder).with_suffix("").as_posix())
            # x.png and x_gt.png: two masks for the image, refused as two of one stem are
            found = masks_by_stem(gt, ((sid, masks[stem + s]) for s in MASK_SUFFIXES if stem + s in masks), shown)
            if not found:
                no_mask.append(sid)
                continue
            entries[sid] = (img, found[sid])
    paired = mask_once(gt, entries, shown)
    listed = ((f"{folder.name}/{n}", canonical_name(PurePosixPath(n).stem if by_name else
                                                    PurePosixPath(n).with_suffix("").as_posix()))
              for folder in folders for n in walk_files(folder))
    warn_unread_images(gt, sorted(k for k, m in masks.items() if m not in paired), "mask(s) match no image", listed,
                       lambda s: any(s + x in masks for x in MASK_SUFFIXES))
    return entries, no_mask


class TpGtDataset(_PairListDataset):
    """A ``Tp/`` + ``Gt/`` (+ ``Au/``) folder.

    The mask of ``Tp/x.jpg`` is ``Gt/x.*``, ``Gt/x_gt.*`` or ``Gt/x_mask.*``
    (relative sub-paths kept).  Ids are ``Tp/<file>`` and ``Au/<file>``.
    Splits: ``split`` if given (all samples in that one split, e.g.
    ``test``), else ``splits.json`` in the folder, else train/val by id hash.
    """

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        val_fraction: float | None = None,
        split_seed: int | None = None,
        split: str | None = None,
        name: str | None = None,
        skip_unpaired: bool = False,
    ) -> None:
        root = require_path(path, "TpGtDataset")
        tp, gt, au = child_dir(root, "Tp"), child_dir(root, "Gt"), child_dir(root, "Au", without="")
        if tp is None or gt is None:
            raise DataError(
                f"{root}: expected subfolders Tp/ (images) and Gt/ (masks), Au/ optional"
            )
        entries, no_mask = pair_folders([tp], gt)
        if not entries and not no_mask and au is not None:  # an emptied Tp/: no edited image left to score
            raise DataError(f"{root}: Tp/ holds no image (Gt/ holds {len(list_image_files(gt))} masks); the dataset "
                            "would be its Au/ images alone")
        report_unpaired(str(root), no_mask, "Tp image(s) have no mask in Gt/", skip_unpaired)
        if au is not None:
            add_authentic(entries, au)
        if not entries:
            raise DataError(f"{root}: no images in Tp/ (or Au/)")
        super().__init__(
            name or folder_name(root),
            root,
            entries,
            val_fraction=val_fraction,
            split_seed=split_seed,
            split=split,
        )

    @classmethod
    def sniff(cls, path: str | os.PathLike) -> bool:
        p = Path(path)
        return child_dir(p, "Tp") is not None and child_dir(p, "Gt") is not None


class JsonListDataset(_PairListDataset):
    """A JSON list of ``[image, mask | "Negative"]``; paths relative to the JSON file.

    Ids are the image paths as written in the file, read as :func:`.walk.canonical_name`
    reads a stored name; a listed file is found on disk as it reads too.  Splits as for
    :class:`TpGtDataset` (``split``, else ``splits.json`` beside the JSON
    file, else train/val by id hash).
    """

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        val_fraction: float | None = None,
        split_seed: int | None = None,
        split: str | None = None,
        name: str | None = None,
    ) -> None:
        file = require_path(path, "JsonListDataset")
        items = _read_list(file)
        root = file.parent
        find = StoredPaths(root)
        entries: dict[str, tuple[Path, Path | None]] = {}
        listed: dict[str, str] = {}  # the file an image names (a/./b.png and a/b.png are one) -> as written
        missing: list[str] = []
        for i, (image, mask) in enumerate(items):
            image_path, sid = find(image), canonical_name(image)
            same = listed.setdefault(os.path.normpath(image_path), image)
            if sid in entries or same != image:  # two ids of one file would be split apart: train and val
                twice = f"image {image}" if same == image else f"image {image} (as {same} before)"
                raise DataError(f"{file}: item {i}: {twice} is listed twice")
            mask_path = None if mask == NEGATIVE else find(mask)
            missing += [f"{find(n)}{hint}" for n in (image, mask)
                        if n != NEGATIVE and (hint := find.absent(n)) is not None]
            entries[sid] = (image_path, mask_path)
        masked: dict[str, tuple[str, str]] = {}
        for i, ((_, n), (_, m)) in enumerate(zip(items, entries.values())):
            if m:
                listed_once(masked, os.path.normpath(m), file, f"item {i}", f"mask {n}", f"mask {n}",
                            "each image and mask file belongs to one item")
        if both := sorted(set(listed) & set(masked)):  # a mask read as a picture, or a picture as a ground truth
            at, mask = masked[both[0]]
            raise DataError(f"{file}: {at}: {mask} is listed as an image too ({listed[both[0]]}); a file is "
                            "an image or a mask, never both")
        if missing:
            spelled = sorted({m for _, m in items if m != NEGATIVE and m.strip().lower() == NEGATIVE.lower()})
            raise DataError(
                f"{file}: {len(missing)} listed file(s) do not exist "
                f"(e.g. {', '.join(missing[:3])}); paths are relative to the JSON file's folder"
                + (f'; an authentic image\'s mask is written "{NEGATIVE}", not {spelled[0]!r}' if spelled else "")
            )
        super().__init__(
            name or file.stem,
            root,
            entries,
            val_fraction=val_fraction,
            split_seed=split_seed,
            split=split,
        )
        self.path = str(file)

    @classmethod
    def sniff(cls, path: str | os.PathLike) -> bool:
        """A ``.json`` file holding a list; also one that is not readable JSON at all, so
        that opening it says where it breaks instead of "no adapter recognises"."""
        p = Path(path)
        if not (p.is_file() and p.suffix.lower() == ".json"):
            return False
        try:
            return isinstance(read_json(p), list)
        except (OSError, UnicodeDecodeError, ValueError):
            return True


def _read_list(file: Path, raw: bytes | None = None) -> list[tuple[str, str]]:
    """The ``[image, mask | "Negative"]`` items of the JSON list ``file`` (parsed from ``raw``, its bytes, if given)."""
    data = data_json(file, str(file), data=raw)
    if not isinstance(data, list) or not data:
        raise DataError(f'{file}: expected a non-empty JSON list of [image, mask | "{NEGATIVE}"]')
    out = []
    for i, item in enumerate(data):
        if not (
            isinstance(item, (list, tuple))
            and len(item) == 2
            and all(isinstance(x, str) and x for x in item)
        ):
            raise DataError(f'{file}: item {i} is {item!r}, expected [image, mask | "{NEGATIVE}"]')
        out.append((item[0], item[1]))
    return out
