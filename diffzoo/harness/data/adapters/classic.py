"""The four classic image-manipulation-localization test sets that released
localizers publish numbers on (CAT-Net, TruFor, MVSS-Net, IMDL-BenCo
protocols): Columbia, COVERAGE, NIST16 (NC2016) and IMD2020.

Each adapter reads the layout the dataset's own download unpacks to; the
layout facts, their public sources and what could not be confirmed are in
docs/datasets.md ("Columbia, COVERAGE, NIST16, IMD2020").  In short:

- Columbia Uncompressed: ``4cam_auth/*.tif`` (authentic), ``4cam_splc/*.tif``
  (spliced), ``4cam_splc/edgemask/<stem>_edgemask.jpg``: a colour map whose
  green region (bright or regular green) is the spliced one;
- COVERAGE: ``image/<N>.tif`` (original), ``image/<N>t.tif`` (copy-move
  forgery), ``mask/<N>forged.tif`` (white = forged region);
- NIST16 (NC2016_Test0613): ``probe/``, ``world/`` and the pipe-separated
  ``reference/<task>/NC2016-<task>-ref.csv`` naming each probe's mask;
  NIST masks are **black = manipulated** (white = untouched);
- IMD2020 (real-life manipulated images): one folder per source photo with
  ``<x>_orig.jpg`` (the original) and tampered images ``<y>.{jpg,png}`` with
  masks ``<y>_mask.png``.

Labels: binary ``("background", "edited")``; a tampered sample's metadata is
``base="real"`` with one turn by editor ``unknown`` and the dataset's edit type.
Authentic images (``authentic=True``, the default) are samples with all-zero
masks.  Splits as for CASIA: ``split`` if given, else ``splits.json`` in the
dataset folder, else ``val_fraction`` (train/val by id hash) if given, else
everything in ``test``.  ``describe()`` names the published protocol subsets
the ``test`` split corresponds to, and a copy whose counts differ from the
published ones gets a warning, never an error.
"""

from __future__ import annotations

import logging
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from diffzoo.harness.core.errors import DataError
from diffzoo.harness.data.adapters.generic import _TestSetDataset
from diffzoo.harness.data.authentic import image_files_in
from diffzoo.harness.data.base import (
    child_dir,
    csv_table,
    masks_by_stem,
    not_a_choice,
    relative_cell,
    report_unpaired,
    require_path,
    sniff_quietly,
    warn_unread_images,
)
from diffzoo.harness.data.fingerprint import fingerprint_files
from diffzoo.harness.data.imageio import check_mask_size, edited_region, read_binary_mask, read_image
from diffzoo.harness.data.walk import (
    StoredPaths,
    by_canonical_name,
    canonical_name,
    files_in,
    log_unused,
    mask_once,
    subfolders,
)

log = logging.getLogger(__name__)

SPLICING, COPY_MOVE, REMOVAL = "splicing", "copy_move", "removal"
Entries = dict[str, tuple[Path, Path | None]]


def _pair(entries: Entries, no_mask: list[str], sid: str, image: Path, mask: Path | None) -> None:
    """Tampered image ``sid`` with its ``mask`` into ``entries``; without one (None), into ``no_mask``."""
    if mask is None:
        no_mask.append(sid)
    else:
        entries[sid] = (image, mask)


class _ClassicDataset(_TestSetDataset):
    """Tampered images with one mask each, plus authentic images; a test set
    with published image counts and protocol subsets."""

    EXPECTED: dict[str, int] = {}
    """Published counts: ``tampered`` and ``authentic`` images of the full set."""
    PROTOCOLS: dict[str, str] = {}
    """Which published protocol subsets the ``test`` split (the whole set) corresponds to."""
    LAYOUT = ""
    """What the layout should look like, for errors."""

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        authentic: bool = True,
        split: str | None = None,
        val_fraction: float | None = None,
        split_seed: int | None = None,
        name: str | None = None,
        skip_unpaired: bool = False,
    ) -> None:
        root, entries, edit_types, originals = self._read(require_path(path, type(self).__name__), skip_unpaired)
        # ids as walk.canonical_name reads the names they come from; two names reading as one are refused
        entries, originals = by_canonical_name(root, entries.items()), by_canonical_name(root, originals.items())
        edit_types = {canonical_name(sid): kind for sid, kind in edit_types.items()}
        if authentic:
            entries.update(originals)
        if not edit_types:
            raise DataError(f"{root}: no tampered image with a mask found ({self.LAYOUT})")
        self._edit_types = edit_types
        counts = {"tampered": len(edit_types), "authentic": len(entries) - len(edit_types)}
        self._expected = self._expected_counts()
        off = [f"{k} {counts[k]} (published: {n})" for k, n in self._expected.items()
               if counts[k] != n and (k == "tampered" or counts["authentic"])]
        if off:
            log.warning("%s: %s; a partial or altered copy: numbers on it are not comparable with published "
                        "ones", root, ", ".join(off))
        super().__init__(root, entries, name=name, split=split, val_fraction=val_fraction, split_seed=split_seed)

    def _read(self, root: Path, skip_unpaired: bool) -> tuple[Path, Entries, dict[str, str], Entries]:
        """The dataset folder (``root``, the path given, unless the layout says otherwise), its
        tampered images with their masks, their edit types, and its authentic images (samples
        only with ``authentic=True``)."""
        raise NotImplementedError

    def _expected_counts(self) -> dict[str, int]:
        """The published counts the copy read is checked against."""
        return self.EXPECTED

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d["edit_types"] = dict(sorted(Counter(self._edit_types.values()).items()))
        d["expected"] = dict(self._expected)
        d["protocols"] = dict(self.PROTOCOLS)
        return d


# -- Columbia Uncompressed -----------------------------------------------------------------


def _nested(root: Path, name: str, without: str | None = None) -> tuple[Path | None, Path | None]:
    """``root/name`` (:func:`..base.child_dir`, ``without`` it) and the folder holding its images:
    ``root/name/name`` when the archive was unpacked into a folder of its own name, else ``root/name``."""
    outer = child_dir(root, name, without)
    if outer is None:
        return None, None
    inner = child_dir(outer, name)
    return outer, inner if inner is not None else outer


def _edgemask_folder(root: Path) -> tuple[Path | None, Path | None]:
    """The spliced-image folder and its ``edgemask/`` (inside it, or beside it when nested)."""
    outer, splc = _nested(root, "4cam_splc")
    if outer is None or splc is None:
        return None, None
    for parent in (splc, outer):
        edge = child_dir(parent, "edgemask")
        if edge is not None:
            return splc, edge
    return splc, None


EDGEMASK = re.compile(r"^(?P<stem>.+)_edgemask$", re.IGNORECASE)


class ColumbiaDataset(_ClassicDataset):
    """Columbia Uncompressed Image Splicing Detection (Hsu and Chang, ICME 2006).

    Pass the folder holding ``4cam_auth/`` and ``4cam_splc/`` (each may be
    nested once in a folder of its own name).  Ids ``4cam_splc/<file>`` and
    ``4cam_auth/<file>``.  The mask of ``4cam_splc/x.tif`` is
    ``edgemask/x_edgemask.*``; a spliced image without one is an error
    (``skip_unpaired=True`` skips it with a warning).
    """

    DEFAULT_NAME = "columbia"
    EXPECTED = {"tampered": 180, "authentic": 183}
    PROTOCOLS = {
        "test": "the whole set: CAT-Net Columbia_list.txt + Columbia_auth_list.txt, TruFor "
                "columbia_fake.txt + columbia_real.txt, MVSS-Net Columbia.txt (180 spliced, 183 authentic)",
    }
    LAYOUT = "expected 4cam_splc/ (spliced .tif), 4cam_splc/edgemask/ (*_edgemask.jpg) and 4cam_auth/"

    def _read(self, root: Path, skip_unpaired: bool) -> tuple[Path, Entries, dict[str, str], Entries]:
        splc, edge = _edgemask_folder(root)
        if splc is None:
            raise DataError(f"{root}: no 4cam_splc/ folder; {self.LAYOUT}")
        if edge is None:
            raise DataError(f"{root}: no edgemask/ folder in {splc}; {self.LAYOUT}")
        files = image_files_in(edge)
        masks = masks_by_stem(edge, ((hit["stem"], m) for m in files if (hit := EDGEMASK.match(m.stem))),
                              lambda p: p.name)
        # variants such as <stem>_edgemask_3.jpg are not the ground truth
        log_unused(edge, [m.name for m in files if not EDGEMASK.match(m.stem)],
                   "file(s) not named <stem>_edgemask.* are not used")
        entries: Entries = {}
        no_mask: list[str] = []
        for img in image_files_in(splc):
            _pair(entries, no_mask, f"4cam_splc/{img.name}", img, masks.get(canonical_name(img.stem)))
        paired = mask_once(edge, entries, lambda p: p.name)
        report_unpaired(str(root), no_mask, f"spliced image(s) have no <stem>_edgemask mask in {edge}", skip_unpaired)
        unused = {stem for stem, m in masks.items() if m not in paired}
        listed = ((f"4cam_splc/{f.name}", canonical_name(f.stem)) for d in (splc,) for f in files_in(d, ("",)))
        warn_unread_images(edge, sorted(masks[stem].name for stem in unused), "edge mask(s) match no image", listed,
                           unused.__contains__)
        edit_types = dict.fromkeys(entries, SPLICING)
        _, auth = _nested(root, "4cam_auth", "the dataset holds spliced images only")
        # image_files_in: directly in the folder, so an edgemask/ beside the authentic images is not read as one
        originals: Entries = {f"4cam_auth/{p.name}": (p, None) for p in image_files_in(auth)} if auth else {}
        return root, entries, edit_types, originals

    def _edited(self, sample_id: str, mask: Path, size: tuple[int, int]) -> np.ndarray:
        """The spliced region of an edge mask: green (bright 0,255,0 near the splicing boundary,
        regular 0,200,0 elsewhere) marks the spliced region, red (255,0,0 / 200,0,0) the host
        image, blue (0,0,200) a boundary of unknown side.  A pixel is edited when its green
        channel is above mid-grey and above its red channel; the mid-grey margin absorbs the
        JPEG noise of the colour-coded file."""
        rgb = read_image(mask, sample_id)
        check_mask_size(rgb, size, sample_id, str(mask))
        r, g = rgb[:, :, 0].astype(np.int16), rgb[:, :, 1].astype(np.int16)
        return edited_region(((g > 127) & (g > r)).astype(np.uint8), sample_id, str(mask), "no pixel is green: "
                             "Columbia's edge masks are colour maps whose green region is the spliced one; is it a "
                             "grey or binarised copy? Read such masks as a Tp/ + Gt/ folder or a JSON list "
                             "(docs/datasets.md, Columbia)")

    @classmethod
    def sniff(cls, path: str | os.PathLike) -> bool:
        """A folder with ``4cam_splc/`` holding an ``edgemask/`` folder (beside or inside)."""
        return sniff_quietly(lambda p: p.is_dir() and _edgemask_folder(p)[1] is not None, path)


# -- COVERAGE ------------------------------------------------------------------------------

COVERAGE_TAMPERED = re.compile(r"^(?P<n>\d+)t$", re.IGNORECASE)
COVERAGE_ORIGINAL = re.compile(r"^\d+$")
COVERAGE_MASK = re.compile(r"^(?P<n>\d+)forged$", re.IGNORECASE)


class CoverageDataset(_ClassicDataset):
    """COVERAGE (Wen et al., ICIP 2016): copy-move forgeries with similar-but-genuine objects.

    Pass the ``COVERAGE`` folder: ``image/<N>t.tif`` (forged), ``image/<N>.tif``
    (original), masks ``mask/<N>forged.tif`` (``<N>copy.tif`` and ``<N>paste.tif``,
    the source and pasted regions alone, are not used).  Ids ``image/<file>``.
    """

    DEFAULT_NAME = "coverage"
    EXPECTED = {"tampered": 100, "authentic": 100}
    PROTOCOLS = {
        "test": "the whole set: CAT-Net COVERAGE_tamp.txt + COVERAGE_auth.txt, TruFor coverage_fake.txt + "
                "coverage_real.txt, MVSS-Net COVERAGE.txt (100 forged, 100 original)",
    }
    LAYOUT = "expected image/<N>t.tif (forged), image/<N>.tif (original) and mask/<N>forged.tif"

    def _read(self, root: Path, skip_unpaired: bool) -> tuple[Path, Entries, dict[str, str], Entries]:
        image, mask = child_dir(root, "image"), child_dir(root, "mask")
        if image is None or mask is None:
            raise DataError(f"{root}: no image/ or mask/ folder; {self.LAYOUT}")
        # <N>copy / <N>paste, the two halves of the forged mask, are not read
        masks = masks_by_stem(mask, ((str(int(hit["n"])), m) for m in image_files_in(mask)
                                     if (hit := COVERAGE_MASK.match(m.stem))), lambda p: p.name)
        entries: Entries = {}
        originals: Entries = {}
        no_mask: list[str] = []
        ignored: list[str] = []
        for img in image_files_in(image):
            sid = f"image/{img.name}"
            hit = COVERAGE_TAMPERED.match(img.stem)
            if hit is not None:
                _pair(entries, no_mask, sid, img, masks.get(str(int(hit["n"]))))
            elif COVERAGE_ORIGINAL.match(img.stem):
                originals[sid] = (img, None)
            else:
                ignored.append(img.name)
        log_unused(image, ignored, "image(s) named neither <N>t nor <N> are not used")
        mask_once(mask, entries, lambda p: p.name)
        report_unpaired(str(root), no_mask, f"forged image(s) have no <N>forged mask in {mask}", skip_unpaired)
        return root, entries, dict.fromkeys(entries, COPY_MOVE), originals

    @classmethod
    def sniff(cls, path: str | os.PathLike) -> bool:
        """A folder with ``mask/`` and an ``image/`` directly holding a ``<N>t.*`` image."""
        def is_coverage(p: Path) -> bool:
            image, mask = child_dir(p, "image"), child_dir(p, "mask")
            return (image is not None and mask is not None
                    and any(COVERAGE_TAMPERED.match(f.stem) for f in image_files_in(image)))

        return sniff_quietly(is_coverage, path)


# -- NIST16 ---------------------------------------------------------------------------------

NIST_TASKS = ("manipulation", "splice", "removal")
NIST_COLUMNS = ("ProbeFileName", "ProbeMaskFileName", "IsTarget")
NIST_TYPES = (("IsManipulationTypeRemoval", REMOVAL), ("IsManipulationTypeSplice", SPLICING),
              ("IsManipulationTypeCopyClone", COPY_MOVE))
NIST_REF = re.compile(r"^NC2016-(?P<task>[a-z]+)-ref\.csv$", re.IGNORECASE)
_YES = {"y", "yes", "true", "1"}
_NO = {"n", "no", "false", "0"}


def _nist_ref(root: Path, task: str) -> Path:
    return root / "reference" / task / f"NC2016-{task}-ref.csv"


def _nist_root(path: Path) -> tuple[Path, str | None]:
    """The dataset folder and the task of ``path``: the folder itself, or a reference
    CSV ``<root>/reference/<task>/NC2016-<task>-ref.csv``."""
    hit = NIST_REF.match(path.name)
    full = Path(os.path.abspath(path))  # the file named from its own folder has no parents as written
    if path.is_file() and hit is not None and len(full.parents) >= 3:
        return full.parents[2], hit["task"].lower()
    return path, None


class Nist16Dataset(_ClassicDataset):
    """NIST Nimble 2016 (NC2016_Test0613), read through its reference CSV.

    Pass the ``NC2016_Test0613`` folder (or one reference CSV in it).  ``task``
    picks ``reference/<task>/NC2016-<task>-ref.csv``: ``manipulation`` (every
    manipulated probe, the default), ``splice`` or ``removal``.  Rows with
    ``IsTarget=Y`` are tampered probes with the row's ``ProbeMaskFileName``
    (several rows of one probe: the union of their masks); ``IsTarget=N`` rows
    are authentic.  Ids are the ``ProbeFileName`` values (``probe/NC2016_0048.jpg``).
    NIST masks are black where manipulated: a pixel is edited when the mean
    over its channels is below mid-grey (<= 127.5).
    """

    DEFAULT_NAME = "nist16"
    EXPECTED = {"tampered": 564}
    PROTOCOLS = {
        "test (task=manipulation)": "the 564 manipulated probes of MVSS-Net NIST16.txt and IMDL-BenCo's NIST16; "
                                    "with authentic=True the IsTarget=N probes are added",
        "test (task=splice)": "the splice task: CAT-Net NC16_splice.txt lists 288 of its probes "
                              "(292 probe/mask lines)",
        "not provided": "the 160-image test split of ManTra-Net / RGB-N / TruFor (NIST16_fake.txt): "
                        "give it as splits.json",
    }
    LAYOUT = "expected probe/ and reference/<task>/NC2016-<task>-ref.csv (pipe-separated)"

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        task: str | None = None,
        authentic: bool = True,
        split: str | None = None,
        val_fraction: float | None = None,
        split_seed: int | None = None,
        name: str | None = None,
        skip_unpaired: bool = False,
    ) -> None:
        self.task = task  # the option as given: _read settles it after require_path has checked the path
        super().__init__(path, authentic=authentic, split=split, val_fraction=val_fraction, split_seed=split_seed,
                         name=name, skip_unpaired=skip_unpaired)

    def _read(self, path: Path, skip_unpaired: bool) -> tuple[Path, Entries, dict[str, str], Entries]:
        root, from_file = _nist_root(path)
        task = (self.task or from_file or "manipulation").lower()
        if task not in NIST_TASKS:
            raise not_a_choice("NIST16", "task", task, NIST_TASKS)
        ref = _nist_ref(root, task)
        if not os.path.lexists(ref):  # anything else there is named by reading it
            raise DataError(f"{ref}: no such reference file; NIST16 {self.LAYOUT}")
        rows = csv_table(ref, NIST_COLUMNS, f"a '|'-separated NIST reference file with {', '.join(NIST_COLUMNS)}",
                         "probe", delimiter="|", what="'|'-separated")
        find = StoredPaths(root)
        targets: dict[str, list[Path]] = {}
        kinds: dict[str, set[str]] = {}
        originals: Entries = {}
        absent: list[str] = []
        gone: set[str] = set()  # the probes and masks named in absent
        for line, row in rows:
            probe = _relative(row["ProbeFileName"], f"{ref}: line {line}: ProbeFileName")
            flag = row["IsTarget"].strip().lower()
            if flag not in _YES | _NO:  # an empty or odd cell read as N made a manipulated probe authentic
                raise DataError(f"{ref}: line {line}: IsTarget is {row['IsTarget']!r}; expected Y (a manipulated "
                                "probe, scored against its mask) or N (an authentic one)")
            target = flag in _YES
            if (probe in originals and target) or (probe in targets and not target):
                raise DataError(f"{ref}: line {line}: probe {probe} is listed both as a target (IsTarget=Y) "
                                f"and as a non-target")
            if (hint := find.absent(probe)) is not None:
                absent.append(f"line {line}: {probe}{hint}")
                gone.add(probe)
            if not target:
                originals[probe] = (find(probe), None)
                continue
            mask = _relative(row["ProbeMaskFileName"], f"{ref}: line {line}: ProbeMaskFileName (IsTarget=Y)")
            if (hint := find.absent(mask)) is not None:
                absent.append(f"line {line}: {mask}{hint}")
                gone.add(mask)
            masks = targets.setdefault(probe, [])
            if find(mask) not in masks:
                masks.append(find(mask))
            flagged = {t for col, t in NIST_TYPES if (row.get(col) or "").strip().lower() in _YES}
            kinds[probe] = kinds.get(probe, set()) | flagged
        report_unpaired(str(ref), absent, f"file(s) named in {ref.name} do not exist (paths are relative to {root})",
                        skip_unpaired)
        # a probe flagged with several manipulation types (over its rows) is e.g. "removal+splicing"
        edit_types = {p: "+".join(t for _, t in NIST_TYPES if t in k) or "unknown" for p, k in kinds.items()}
        entries: Entries = {}
        self._more_masks: dict[str, list[Path]] = {}
        for probe, masks in targets.items():
            if probe in gone or any(m.relative_to(root).as_posix() in gone for m in masks):
                edit_types.pop(probe, None)
                continue
            entries[probe] = (find(probe), masks[0])
            self._more_masks[canonical_name(probe)] = masks[1:]  # keyed by the sample's id
        self.task = task
        self.reference = ref
        return root, entries, edit_types, {k: v for k, v in originals.items() if k not in gone}

    def _expected_counts(self) -> dict[str, int]:
        return self.EXPECTED if self.task == "manipulation" else {}

    def _edited(self, sample_id: str, mask: Path, size: tuple[int, int]) -> np.ndarray:
        """Black (mean <= 127.5) is manipulated in every mask of the probe; their union."""
        edited = 1 - read_binary_mask(mask, sample_id, size=size)
        for more in self._more_masks.get(sample_id, ()):
            edited |= 1 - read_binary_mask(more, sample_id, size=size)
        return edited

    def _content_fingerprint(self) -> str:
        files = {p for pair in self._entries.values() for p in pair if p is not None}
        files |= {m for masks in self._more_masks.values() for m in masks}
        # the reference decides which probe is a target and with which masks
        return fingerprint_files(self.root, sorted(files | {self.reference}))

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d["task"] = self.task
        d["reference"] = str(self.reference)
        return d

    @classmethod
    def sniff(cls, path: str | os.PathLike) -> bool:
        """A reference CSV ``NC2016-<task>-ref.csv``, or a folder with ``probe/`` and
        ``reference/manipulation/NC2016-manipulation-ref.csv``."""
        root, task = _nist_root(Path(path))  # without a task, root is the path itself

        def has_probe_and_reference(p: Path) -> bool:
            return (p.is_dir() and child_dir(p, "probe") is not None
                    and any(os.path.lexists(_nist_ref(p, t)) for t in NIST_TASKS))

        return task is not None or sniff_quietly(has_probe_and_reference, root)


def _relative(value: str, where: str) -> str:
    """``value`` as a relative POSIX path that stays inside the dataset folder."""
    return relative_cell(value, where, "the dataset folder", "reference paths are relative to it")


# -- IMD2020 ---------------------------------------------------------------------------------

IMD_MASK = re.compile(r"^(?P<stem>.+)_mask$", re.IGNORECASE)
IMD_ORIG = re.compile(r"_orig$", re.IGNORECASE)


def _imd_folder(folder: Path, refuse_twice: bool = True) -> tuple[list[Path], dict[str, Path], list[Path]]:
    """Tampered images, masks by image stem, and originals directly in one source folder; two
    masks for one stem are a DataError (``refuse_twice``; a sniff only looks)."""
    tampered: list[Path] = []
    found: list[tuple[str, Path]] = []
    originals: list[Path] = []
    for f in image_files_in(folder):
        hit = IMD_MASK.match(f.stem)
        if hit is not None:
            found.append((hit["stem"], f))
        elif IMD_ORIG.search(f.stem):
            originals.append(f)
        else:
            tampered.append(f)
    masks = masks_by_stem(folder, found, lambda p: p.name) if refuse_twice else dict(found)
    return tampered, masks, originals


class Imd2020Dataset(_ClassicDataset):
    """IMD2020, the real-life manipulated images (Novozamsky et al., WACV 2020 workshops).

    Pass the folder holding the per-source folders (``1a1ogs/``, ``z5/``...).  In
    each: ``<x>_orig.jpg`` (authentic original), tampered ``<y>.jpg`` / ``<y>.png``
    and their masks ``<y>_mask.png``.  Folders holding neither an original nor
    a mask (e.g. a ``0jpg/`` folder of re-encoded copies) are ignored.  Ids
    ``<folder>/<file>``.
    """

    DEFAULT_NAME = "imd2020"
    EXPECTED = {"tampered": 2010, "authentic": 414}
    PROTOCOLS = {
        "test": "the 2010 tampered images (IMDL-BenCo's IMD2020; CAT-Net IMD_train_list.txt 1869 + "
                "IMD_valid_list.txt 141); the 414 originals are added with authentic=True",
    }
    LAYOUT = "expected one folder per source photo with <x>_orig.jpg, <y>.jpg and <y>_mask.png"

    def _read(self, root: Path, skip_unpaired: bool) -> tuple[Path, Entries, dict[str, str], Entries]:
        if not root.is_dir():
            raise DataError(f"{root}: not a folder; IMD2020 {self.LAYOUT}")
        entries: Entries = {}
        originals: Entries = {}
        no_mask: list[str] = []
        ignored: list[str] = []
        orphans: list[str] = []
        unread: list[tuple[str, str]] = []  # (file, <folder>/<stem>) in folders holding a mask with no image
        lost: set[str] = set()  # <folder>/<stem> of those masks
        for folder in subfolders(root):
            tampered, masks, origs = _imd_folder(folder)
            if not masks and not origs:
                ignored.append(folder.name)
                continue
            for img in tampered:
                _pair(entries, no_mask, f"{folder.name}/{img.name}", img, masks.get(canonical_name(img.stem)))
            stems = {canonical_name(img.stem) for img in tampered}
            orphans += sorted(f"{folder.name}/{m.name}" for stem, m in masks.items() if stem not in stems)
            if not stems.issuperset(masks):  # an image of a suffix never read (x.jfif) leaves its mask with no image
                unread += [(f"{folder.name}/{f.name}", f"{folder.name}/{canonical_name(f.stem)}")
                           for f in files_in(folder, ("",))]
                lost |= {f"{folder.name}/{stem}" for stem in masks.keys() - stems}
            originals.update({f"{folder.name}/{o.name}": (o, None) for o in origs})
        log_unused(root, ignored, "folder(s) hold no *_orig image and no *_mask file and are not used")
        mask_once(root, entries, lambda p: p.relative_to(root).as_posix())
        # a mask without its image: that image deleted or renamed, the copy one tampered image short
        warn_unread_images(root, orphans, "mask(s) match no tampered image", unread, lost.__contains__)
        report_unpaired(str(root), no_mask, "tampered image(s) have no <stem>_mask file beside them", skip_unpaired)
        return root, entries, dict.fromkeys(entries, "unknown"), originals

    @classmethod
    def sniff(cls, path: str | os.PathLike) -> bool:
        """A folder one of whose first subfolders directly holds an ``*_orig`` image and a ``*_mask`` image."""
        def has_orig_and_mask(p: Path) -> bool:  # _imd_folder(f)[1:]: its masks and its originals
            return p.is_dir() and any(all(_imd_folder(f, False)[1:]) for f in subfolders(p)[:SNIFF_FOLDERS])

        return sniff_quietly(has_orig_and_mask, path)


SNIFF_FOLDERS = 32
"""Subfolders an IMD2020 sniff looks into (a full copy has 414; each one holds an original)."""
