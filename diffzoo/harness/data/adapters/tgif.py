"""TGIF + TGIF2 (Mareen et al., WIFS 2024, arXiv 2407.11566; Journal on Information
Security 2026, arXiv 2603.28613; github IDLabMedia/tgif-dataset; CC BY-SA 4.0): 3,124 MS-COCO
photos and 271k fakes made by text-guided inpainting with SD2, SDXL, Adobe Photoshop/Firefly
and FLUX.1 schnell / dev / Fill dev, with a segmentation, bounding-box or random-rectangle mask.

Confirmed from the repository's README (commit fc5c557): one folder per subset, each split in
``training/``, ``validation/``, ``testing/``::

    original/testing/208901_orig.png                  the COCO photo (authentic)
    original/testing/208901_orig_512.png              a crop (not read: the photo already is)
    masks/testing/208901_mask_segm.png                mask at the photo's size
    masks/testing/208901_mask_segm.png_ps_mask.png    Photoshop's mask (extra border)
    masks/testing/208901_mask_segm_512.png            mask of the 512 / 1024 crop
    SD2-sp/testing/208901_mask_segm.png_ps_mask.png_sd2_0.png
    PS-sp/testing/208901_mask_bbox.png_ps_1.png
    SD2-fr/testing/208901_mask_segm.png_sd2-512_2.png
    SDXL-fr/testing/208901_mask_bbox.png_sdxl-1024_0.png
    flux1dev-sp/..., flux1dev-fr/... (also schnell, filldev); masks-flux/, original-flux/

TGIF2's random-mask download holds ``sd2-sp``, ``sd2-fr``, ``sdxl-fr``, ``flux1*-sp|fr`` and
``masks-sd2``, ``masks-sdxl``, ``masks-flux`` (names ``<coco>_mask_random.png_<gen>[-<res>]_<var>.png``);
its folder names equal TGIF2 FLUX's, so each download is its own folder: the path given is one
download, or a folder holding several (``TGIF/``, ``TGIF2-flux/``, ``TGIF2-random/``).

Pairing (the mask is named by the fake's file name; which mask TGIF's benchmark scores against
is not stated in any public source):

- a spliced fake (``-sp``, at the photo's size): the mask its name starts with, ``<coco>_mask_
  <type>.png`` or, when the name carries it, ``<coco>_mask_<type>.png_ps_mask.png``;
- a fully regenerated fake (``-fr``, a ``<res>`` x ``<res>`` crop): ``<coco>_mask_<type>_<res>.png``;
- the mask is looked up in the same split of ``masks-<family>/`` (``flux`` for every FLUX.1
  model, else the generator), then ``masks/``.

Labels: binary ``("background", "edited")``, mask binarised by the field's rule (mean over RGB
> 127.5).  A fully regenerated image is synthetic everywhere, yet TGIF's benchmark scores
localization against the inpainting mask for sp and fr alike, so by default (``regenerated=
mask``) its edited pixels are the inpainted region; ``regenerated=whole`` marks every pixel
edited instead (another fingerprint).  Every fake carries one turn: editor the generator
(``sd2``, ``sdxl``, ``ps``, ``flux1schnell``, ``flux1dev``, ``flux1filldev``; from its folder),
edit type ``sp`` / ``fr`` (``edit_type=mask``: ``segm`` / ``bbox`` / ``random``; ``both``:
``sp-segm``), prompt from the metadata CSVs when present; base ``real``.  Authentic samples:
``<coco>_orig.png`` of ``original*/`` (one per photo and split).

Metadata CSVs (the repository's ``metadata*/`` folders, copied anywhere under the path): a CSV
with columns ``image_id`` and ``prompt`` (``orig_<split>.csv``) gives each photo's prompt; the
per-generator score CSVs (``nima_mean``, ``giqa_score``, ...) carry no label and are not read.

Splits: the ``training`` / ``validation`` / ``testing`` folders (-> train / val / test), or
``split=NAME`` for everything in one split.
"""

from __future__ import annotations

import logging
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from diffzoo.harness.core.errors import DataError
from diffzoo.harness.core.types import EditRecord
from diffzoo.harness.data.adapters.generic import _PairListDataset
from diffzoo.harness.data.authentic import image_files_in
from diffzoo.harness.data.base import (
    child_dir,
    chosen_names,
    files_by_stem,
    not_a_choice,
    read_csv,
    report_unpaired,
    require_path,
    sniff_quietly,
)
from diffzoo.harness.data.fingerprint import combine, fingerprint_files
from diffzoo.harness.data.splits import ids_by_split
from diffzoo.harness.data.walk import canonical_name, files_in, ids_of, log_unused, subfolders

log = logging.getLogger(__name__)

GENERATORS = ("sd2", "sdxl", "ps", "flux1schnell", "flux1dev", "flux1filldev")
VARIANTS = ("sp", "fr")
MASK_TYPES = ("segm", "bbox", "random")
SPLIT_DIRS = {"training": "train", "validation": "val", "testing": "test"}
EDIT_TYPES = ("variant", "mask", "both")
REGENERATED = ("mask", "whole")
SPLIT_RULE = "tgif-folders"
FOLDER = re.compile(r"^(?P<gen>sd2|sdxl|ps|flux1schnell|flux1dev|flux1filldev)(?:-random)?-(?P<variant>sp|fr)$",
                    re.IGNORECASE)
FAKE = re.compile(r"^(?P<coco>\d+)_mask_(?P<mask>segm|bbox|random)\.png(?P<ps>_ps_mask\.png)?"
                  r"_(?P<gen>[a-z0-9]+?)(?:-(?P<res>\d+))?_(?P<var>\d+)\.png$", re.IGNORECASE)
ORIG = re.compile(r"^(?P<coco>\d+)_orig\.(?:png|jpe?g)$", re.IGNORECASE)
LAYOUT_HELP = ("expected TGIF's folders: <generator>-sp / <generator>-fr (SD2-sp, PS-sp, SD2-fr, SDXL-fr, "
               "flux1dev-sp, ...), masks/ (or masks-flux, masks-sd2, masks-sdxl) and original/, each with "
               "training/, validation/, testing/")


class Fake(NamedTuple):
    """What a fake's folder and file name say."""

    generator: str
    variant: str
    mask_type: str
    resolution: str
    """``orig`` (spliced, the photo's size) or the crop size (``512``, ``1024``)."""
    coco_id: str


def parse_fake(folder: str, file_name: str) -> Fake | None:
    """A fake's generator and variant (from its folder), mask type, resolution and COCO id (from
    its name); None when either name is not TGIF's."""
    f, m = FOLDER.match(folder), FAKE.match(file_name)
    if f is None or m is None:
        return None
    return Fake(f["gen"].lower(), f["variant"].lower(), m["mask"].lower(), m["res"] or "orig", m["coco"])


def mask_name(fake: Fake, file_name: str) -> str:
    """The mask a fake was made with: ``<coco>_mask_<type>_<res>.png`` for a regenerated crop, else
    the mask file its name starts with (``..._mask_segm.png`` or ``..._mask_segm.png_ps_mask.png``);
    either way ``<coco>_mask_<type>`` as the fake's name writes it (a stem keeps its letter case)."""
    m = FAKE.match(file_name)
    assert m is not None  # parse_fake accepted the name
    if fake.variant == "fr" and fake.resolution != "orig":
        return f"{file_name[: m.end('mask')]}_{fake.resolution}.png"
    return file_name[: m.end("ps") if m["ps"] else m.end("mask") + len(".png")]


def _is_download(folder: Path) -> bool:
    """A folder holding TGIF generator folders and a masks folder."""
    names = [p.name.lower() for p in subfolders(folder)]
    return any(FOLDER.match(n) for n in names) and any(n == "masks" or n.startswith("masks-") for n in names)


def downloads(root: Path) -> list[Path]:
    """The TGIF downloads at ``root``: itself, or its subfolders that are one."""
    if not root.is_dir():
        return []
    if _is_download(root):
        return [root]
    return [p for p in subfolders(root) if _is_download(p)]


def _split_dirs(folder: Path) -> list[tuple[str, Path]]:
    return [(SPLIT_DIRS[p.name.lower()], p) for p in subfolders(folder) if p.name.lower() in SPLIT_DIRS]


class TgifDataset(_PairListDataset):
    """TGIF / TGIF2 downloads (module doc).

    ``generators``, ``variants`` (sp, fr), ``mask_types`` (segm, bbox, random): read only those
    fakes (default all).  ``regenerated``: ``mask`` (default, TGIF's benchmark) or ``whole``, the
    label of a fully regenerated fake.  ``edit_type``: ``variant`` (default), ``mask`` or ``both``,
    what the metadata's edit type says.  ``authentic``: read ``original*/`` photos (default True).
    """

    edited_base = "real"

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        split: str | None = None,
        generators: list[str] | str | None = None,
        variants: list[str] | str | None = None,
        mask_types: list[str] | str | None = None,
        regenerated: str = "mask",
        edit_type: str = "variant",
        authentic: bool = True,
        skip_unpaired: bool = False,
        name: str | None = None,
    ) -> None:
        root = require_path(path, "TgifDataset")
        if regenerated not in REGENERATED:
            raise not_a_choice("TGIF", "regenerated", regenerated, REGENERATED)
        if edit_type not in EDIT_TYPES:
            raise not_a_choice("TGIF", "edit_type", edit_type, EDIT_TYPES)
        wanted = (_choice("generators", generators, GENERATORS), _choice("variants", variants, VARIANTS),
                  _choice("mask_types", mask_types, MASK_TYPES))
        found = downloads(root)
        if not found:
            raise DataError(f"{root}: no TGIF data found; {LAYOUT_HELP}")
        self._regenerated, self._edit_type = regenerated, edit_type
        self._fakes: dict[str, Fake] = {}
        self._split_of: dict[str, str] = {}
        entries: dict[str, tuple[Path, Path | None]] = {}
        unpaired: list[str] = []
        for dl in found:
            unpaired += self._add_fakes(root, dl, wanted, entries)
        report_unpaired(str(root), unpaired, "fake(s) have no mask", skip_unpaired)
        if not entries:
            raise DataError(f"{root}: no TGIF fakes of the chosen generators / variants / mask types; {LAYOUT_HELP}")
        if authentic:
            self._add_authentic(root, found, entries)
        self._prompts, self._csvs = read_prompts(root, found)
        super().__init__(name or "tgif", root, entries, val_fraction=None, split_seed=None, split=split)
        if regenerated == "mask" and any(f.variant == "fr" for f in self._fakes.values()):
            self.notice = ("TGIF: a fully regenerated (fr) image is labelled by its inpainting mask, as TGIF's "
                           "benchmark scores it, though every pixel is synthetic; --dataset-option "
                           "regenerated=whole marks it edited everywhere, variants=sp reads spliced images only")

    def _add_fakes(self, root: Path, dl: Path, wanted: tuple[set[str], set[str], set[str]],
                   entries: dict[str, tuple[Path, Path | None]]) -> list[str]:
        index: dict[tuple[str, str], dict[str, Path]] = {}
        unpaired: list[str] = []
        unnamed: list[str] = []
        for folder in subfolders(dl):
            f = FOLDER.match(folder.name)
            if f is None or f["gen"].lower() not in wanted[0] or f["variant"].lower() not in wanted[1]:
                continue
            gen = f["gen"].lower()
            family = "flux" if gen.startswith("flux") else gen
            where = [m for n in (f"masks-{family}", "masks") if (m := child_dir(dl, n)) is not None]
            for split_name, split_dir in _split_dirs(folder):
                for sid, img in ids_of(root, image_files_in(split_dir)).items():
                    fake = parse_fake(folder.name, img.name)
                    if fake is None:
                        unnamed.append(sid)
                        continue
                    if fake.mask_type not in wanted[2]:
                        continue
                    mask = _find_mask(index, where, split_dir.name, mask_name(fake, img.name))
                    if mask is None:
                        unpaired.append(f"{sid} (wants {mask_name(fake, img.name)} in "
                                        f"{' or '.join(m.name for m in where) or 'a masks folder'}/{split_dir.name})")
                        continue
                    entries[sid] = (img, mask)
                    self._fakes[sid] = fake
                    self._split_of[sid] = split_name
        log_unused(dl, unnamed, "image(s) in generator folders are not named like TGIF fakes and are not used")
        return unpaired

    def _add_authentic(self, root: Path, found: list[Path], entries: dict[str, tuple[Path, Path | None]]) -> None:
        seen: set[tuple[str, str]] = set()
        crops = 0
        for dl in found:
            for folder in subfolders(dl):
                low = folder.name.lower()
                if low != "original" and not low.startswith("original-"):
                    continue
                for split_name, split_dir in _split_dirs(folder):
                    for sid, img in ids_of(root, image_files_in(split_dir)).items():
                        m = ORIG.match(img.name)
                        if m is None:
                            crops += 1
                            continue
                        if (split_name, m["coco"]) in seen:  # one authentic sample per photo and split
                            continue
                        seen.add((split_name, m["coco"]))
                        entries[sid] = (img, None)
                        self._split_of[sid] = split_name
        if crops:
            log.info("%s: %d crop(s) of the originals (<coco>_orig_<size>.png) are not read: each photo is "
                     "read once, at its own size", root, crops)

    def _split_scheme(self, ids: list[str], val_fraction: float,
                      seed: int) -> tuple[dict[str, list[str]], dict[str, str]]:
        info = {"id": SPLIT_RULE, "source": "TGIF's own training / validation / testing folders"}
        return ids_by_split((sid, self._split_of[sid]) for sid in ids), info

    def _edited(self, sample_id: str, mask: Path, size: tuple[int, int]) -> np.ndarray:
        if self._fakes[sample_id].variant == "fr" and self._regenerated == "whole":
            return np.ones((size[1], size[0]), np.uint8)  # its mask is not read
        return super()._edited(sample_id, mask, size)

    def _turn(self, sample_id: str) -> EditRecord | None:
        fake = self._fakes[sample_id]
        kind = {"variant": fake.variant, "mask": fake.mask_type,
                "both": f"{fake.variant}-{fake.mask_type}"}[self._edit_type]
        return EditRecord(fake.generator, prompt=self._prompts.get(fake.coco_id, ""), edit_type=kind)

    def fake_info(self, sample_id: str) -> Fake | None:
        """A fake's generator, variant, mask type, resolution and COCO id; None for an authentic photo."""
        self._lookup(self._entries, sample_id)
        return self._fakes.get(sample_id)

    def _content_fingerprint(self) -> str:
        return combine(super()._content_fingerprint(), fingerprint_files(self.root, self._csvs),
                       {"regenerated": self._regenerated, "edit_type": self._edit_type})

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        fakes = list(self._fakes.values())
        d["generators"] = {g: n for g in GENERATORS if (n := sum(f.generator == g for f in fakes))}
        for field in ("variant", "mask_type", "resolution"):
            d[f"{field}s"] = dict(sorted(Counter(getattr(f, field) for f in fakes).items()))
        d["regenerated"] = self._regenerated
        d["prompts"] = len(self._prompts)
        return d

    @classmethod
    def sniff(cls, path: str | os.PathLike) -> bool:
        """A folder (or a folder of folders) holding a TGIF generator folder (``SD2-sp``,
        ``flux1dev-fr``, ...) beside a ``masks`` / ``masks-*`` folder."""
        return sniff_quietly(lambda p: bool(downloads(p)), path)


def _choice(option: str, value: list[str] | str | None, valid: tuple[str, ...]) -> set[str]:
    return set(chosen_names(value, valid, lambda bad: not_a_choice("TGIF", option, value, valid, bad), str.lower))


def _find_mask(index: dict[tuple[str, str], dict[str, Path]], where: list[Path], split_dir: str,
               file_name: str) -> Path | None:
    for masks in where:
        key = (str(masks), split_dir.lower())
        if key not in index:
            folder = child_dir(masks, split_dir)
            index[key] = {} if folder is None else files_by_stem(folder, image_files_in(folder))
        if (mask := index[key].get(canonical_name(Path(file_name).stem))) is not None:
            return mask
    return None


def read_prompts(root: Path, found: list[Path]) -> tuple[dict[str, str], list[Path]]:
    """COCO id -> prompt from the CSVs with ``image_id`` and ``prompt`` columns in the
    ``metadata*`` folders of ``root`` and of each download (first non-empty prompt wins), and the
    CSVs read."""
    prompts: dict[str, str] = {}
    used: list[Path] = []
    folders = {p for base in {root, *found} for p in subfolders(base) if p.name.lower().startswith("metadata")}
    for csv_path in sorted(p for folder in folders for p in files_in(folder, (".csv",)) if p.is_file()):
        _, rows = read_csv(csv_path, ("image_id", "prompt"), lower=True)
        if rows is None:
            continue
        for _, row in rows:
            if row["prompt"].strip():
                prompts.setdefault(row["image_id"].strip(), row["prompt"].strip())
        used.append(csv_path)
    return prompts, used
