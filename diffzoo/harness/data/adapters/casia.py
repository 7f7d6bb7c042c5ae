"""CASIA v1.0 and v2.0 (Dong et al., ChinaSIP 2013), with the ground truth
released separately by Pham et al. (namtpham/casia1groundtruth,
namtpham/casia2groundtruth).

Confirmed against public material (READMEs and dataset readers of those
repositories, grip-unina/TruFor, CAT-Net, IMDL-BenCo's guide):

- names: authentic ``Au_<cat>_<n>.jpg``; v1 tampered ``Sp_D_...`` (region
  from a different image: splicing) and ``Sp_S_...`` (same image: copy-move);
  v2 tampered ``Tp_D_...`` / ``Tp_S_...`` with the same meaning; the mask
  of ``<stem>.<ext>`` is ``<stem>_gt.png``;
- v1: the corrected images are ``CASIA 1.0 dataset/Modified Tp/Tp/{CM,Sp}``
  (``Original Tp`` holds the misnamed originals), authentic ones in ``Au/``
  (sometimes ``Au/Au``); masks in ``CASIA 1.0 groundtruth/{CM,Sp}``, a
  separate download usually placed beside ``CASIA 1.0 dataset``;
  ``Sp/Sp_D_NRN_A_cha0011_sec0011_0542.jpg`` has no mask (921 images, 920
  masks);
- v2: ``Au/``, ``Tp/`` (JPEG and TIFF; ``Au/`` also holds a few BMP) and the
  masks in ``CASIA 2 Groundtruth/`` (Pham), ``groundtruth/`` (TruFor's
  revised copy) or ``Gt/`` (IMDL-BenCo's corrected copy); some Tp images have
  no mask, some masks do not match their image's size or orientation.

Documented defaults, not confirmed: the ground-truth folder names searched
(``gt_dir=`` points anywhere else), and that the name's D/S letter is the
tamper type (it decides over the CM/Sp folder; the folder is used only when
the name has no such letter).

Masks are binarised by the field's rule (mean over channels > 127.5);
labels are binary ``("background", "edited")``.  A tampered sample's
metadata: ``base="real"``, one turn with editor ``unknown`` and edit type
``splicing`` or ``copy_move``.  Non-image files (``Thumbs.db``, ``.txt``,
``.xlsx``) are ignored.  Splits: ``split`` if given, else ``splits.json``
in the dataset folder, else ``val_fraction`` (train/val by id hash) if
given, else everything in ``test``.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

from diffzoo.harness.core.errors import DataError
from diffzoo.harness.data.adapters.generic import _TestSetDataset, add_authentic, pair_folders
from diffzoo.harness.data.authentic import image_files_in
from diffzoo.harness.data.base import child_dir, option_path, report_unpaired, require_path, sniff_quietly
from diffzoo.harness.data.fingerprint import combine, fingerprint_files

SPLICING, COPY_MOVE = "splicing", "copy_move"
_TYPE_LETTER = {"D": SPLICING, "S": COPY_MOVE}
_TYPE_FOLDER = {"sp": SPLICING, "cm": COPY_MOVE}
V1_NAME = re.compile(r"^Sp_([DS])_", re.IGNORECASE)
V2_NAME = re.compile(r"^Tp_([DS])_", re.IGNORECASE)
V1_TAMPERED = (("Modified Tp", "Tp"), ("Tp",), ("Modified Tp",))
# Ground-truth folders looked for (any letter case) inside the dataset folder,
# then the first name beside it; ``gt_dir=`` overrides.
V1_GT = ("CASIA 1.0 groundtruth", "groundtruth", "Gt")
V2_GT = ("CASIA 2 Groundtruth", "groundtruth", "Gt")


def edit_type(file_name: str, folder: str = "") -> str:
    """``splicing`` / ``copy_move`` from a CASIA name (``Sp_D_``, ``Tp_S_``...),
    else from the v1 folder (``Sp``, ``CM``), else ``unknown``."""
    m = V1_NAME.match(file_name) or V2_NAME.match(file_name)
    return _TYPE_LETTER[m.group(1).upper()] if m else _TYPE_FOLDER.get(folder.lower(), "unknown")


class _CasiaDataset(_TestSetDataset):
    """Tampered images paired by file name with masks under a separate
    folder, plus ``Au/``; a version says where its tampered images and
    ground truth lie and how its tampered files are named."""

    TAMPERED = "tampered"
    """What the tampered images are called in messages."""
    LAYOUT = ""
    """The error when no tampered folder is found."""
    GT_NAMES: tuple[str, ...] = ()
    NAME: re.Pattern[str]
    """The file names of tampered images (what sniffing looks for)."""

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        gt_dir: str | os.PathLike | None = None,
        split: str | None = None,
        val_fraction: float | None = None,
        split_seed: int | None = None,
        name: str | None = None,
        skip_unpaired: bool = False,
    ) -> None:
        root = require_path(path, type(self).__name__)
        tampered = self._tampered(root)
        if not tampered:
            raise DataError(f"{root}: {self.LAYOUT}")
        gt = _gt_folder(root, gt_dir, self.GT_NAMES)
        entries, no_mask = pair_folders(tampered, gt, by_name=True)
        what = self.TAMPERED
        report_unpaired(str(root), no_mask, f"{what} image(s) have no *_gt mask in {gt}", skip_unpaired)
        if not entries:
            where = ", ".join(str(f) for f in tampered)
            raise DataError(f"{root}: no {what} image in {where} has a mask in {gt}")
        self.gt_root = gt
        self._edit_types = {sid: edit_type(img.name, img.parent.name) for sid, (img, _) in entries.items()}
        au = child_dir(root, "Au", without="the dataset holds tampered images only")
        if au is not None:
            add_authentic(entries, au)
        super().__init__(root, entries, name=name, split=split, val_fraction=val_fraction, split_seed=split_seed)

    @classmethod
    def _tampered(cls, root: Path) -> list[Path]:
        """The folders of tampered images under ``root`` (none: not this version's layout)."""
        raise NotImplementedError

    @classmethod
    def sniff(cls, path: str | os.PathLike) -> bool:
        """A folder whose tampered folders directly hold images named as this version names them."""
        return any(sniff_quietly(lambda f: any(cls.NAME.match(p.name) for p in image_files_in(f)), folder, (OSError,))
                   for folder in cls._tampered(Path(path)))

    def _content_fingerprint(self) -> str:
        # Images and masks each relative to their own folder: the ground truth
        # may lie outside the dataset folder, and a copy elsewhere must keep
        # its fingerprint.
        images = sorted(img for img, _ in self._entries.values())
        masks = sorted(m for _, m in self._entries.values() if m is not None)
        return combine(fingerprint_files(self.root, images), fingerprint_files(self.gt_root, masks))

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d["gt_dir"] = str(self.gt_root)
        d["edit_types"] = dict(sorted(Counter(self._edit_types.values()).items()))
        return d


def _gt_folder(root: Path, gt_dir: str | os.PathLike | None, names: tuple[str, ...]) -> Path:
    """``gt_dir`` (:func:`..base.option_path`), else the first of
    ``root/<name>`` and ``root/../<names[0]>`` that exists."""
    if gt_dir is not None:
        gt = option_path(gt_dir, root, "gt_dir")
        if not gt.is_dir():
            raise DataError(f"gt_dir={gt_dir}: {gt} is not a folder; give the folder holding the *_gt masks")
        return gt
    candidates = [(root, n) for n in names] + [(root.parent, names[0])]
    for base, n in candidates:
        found = child_dir(base, n)
        if found is not None:
            return found
    raise DataError(
        f"{root}: no ground-truth folder; looked for "
        f"{', '.join(str(b / n) for b, n in candidates)} (any letter case); "
        f"pass gt_dir=FOLDER holding the *_gt.png masks"
    )


class Casia1Dataset(_CasiaDataset):
    """CASIA v1.0: ``Au/`` and ``Modified Tp/Tp/{CM,Sp}`` (or ``Tp/{CM,Sp}``),
    masks ``<stem>_gt.png`` in ``CASIA 1.0 groundtruth/`` inside the dataset
    folder or beside it (``gt_dir=`` for elsewhere).

    Ids: ``CM/<file>``, ``Sp/<file>`` and ``Au/<file>``.  A tampered image
    without a mask is an error (``skip_unpaired=True`` skips it with a
    warning); the mask is matched by file name wherever it lies under the
    ground-truth folder.
    """

    DEFAULT_NAME = "casia1"
    LAYOUT = ("expected the tampered images in Modified Tp/Tp/CM and Modified Tp/Tp/Sp (or Tp/CM and Tp/Sp), "
              "authentic ones in Au/")
    GT_NAMES = V1_GT
    NAME = V1_NAME

    @classmethod
    def _tampered(cls, root: Path) -> list[Path]:
        """``CM/`` and ``Sp/`` of the first of :data:`V1_TAMPERED` that holds either."""
        for parts in V1_TAMPERED:
            tp: Path | None = root
            for part in parts:  # root/part/part/..., each part in any letter case
                tp = child_dir(tp, part) if tp is not None else None
            folders = [f for f in (child_dir(tp, sub) for sub in ("CM", "Sp")) if f is not None] if tp else []
            if folders:
                return folders
        return []


class Casia2Dataset(_CasiaDataset):
    """CASIA v2.0: ``Au/``, ``Tp/`` and masks ``<Tp stem>_gt.png`` in
    ``CASIA 2 Groundtruth/``, ``groundtruth/`` or ``Gt/`` (inside the dataset
    folder, or ``CASIA 2 Groundtruth/`` beside it; ``gt_dir=`` for elsewhere).

    Ids: ``Tp/<file>`` and ``Au/<file>``.  A Tp image without a mask is an
    error (``skip_unpaired=True`` skips it with a warning).
    """

    DEFAULT_NAME = "casia2"
    TAMPERED = "Tp"
    LAYOUT = "expected Tp/ (tampered images), Au/ (authentic) and a ground-truth folder such as 'CASIA 2 Groundtruth/'"
    GT_NAMES = V2_GT
    NAME = V2_NAME

    @classmethod
    def _tampered(cls, root: Path) -> list[Path]:
        tp = child_dir(root, "Tp")
        return [tp] if tp is not None else []
