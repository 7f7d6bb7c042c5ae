"""BR-Gen (Cai et al., AAAI 2026, arXiv 2504.11922; github clpbc/BR-Gen):
150,000 photos from COCO, ImageNet and Places with a "stuff" or "background"
region inpainted by one of five inpainters (LaMa, MAT: GAN-based; SDXL,
BrushNet, PowerPaint: diffusion-based), and region masks.

Confirmed from the repository's README (commit 4ced0e0) and its IMDL-BenCo
scripts: the folder layout, read like any ``Tp/`` + ``Gt/`` (+ ``Au/``) folder
(:class:`~.generic.TpGtDataset`)::

    Au/COCO_00000000520.png                          real photo (optional)
    Tp/MAT_Stuff_COCO_00000000520.png                <inpainter>_<Stuff|Background>_<photo>
    Gt/MAT_Stuff_COCO_00000000520_mask.png

and split files that IMDL-BenCo reads as JSON lists of ``[image, mask |
"Negative"]`` (``train.sh`` passes ``BRGen_train.json`` as ``--data_path``).
The release ships the forged images and masks but not the real photos
(copyright): ``Au/`` is what a user rebuilt from COCO / ImageNet / Places.

Not confirmed: the split files' names and paths (a user lists
``br-gen_train.json``, ``real_val.json``, ``background_val.json``,
``stuff_val.json``, ``diffusion_val.json``, ``gan_val.json``,
``mani_val.json`` in clpbc/BR-Gen#17; no test file is released), so a listed image
is found by its ``Tp/`` / ``Au/`` file name, never by the path written in the
file (paths of the builders' machine).

Samples and labels: as :class:`~.generic.TpGtDataset` (binary, mask pixel
edited when mean over RGB > 127.5; ``Au/`` all zero).  A tampered image's
metadata names its inpainter when the file name does: one turn with editor
``lama`` / ``mat`` / ``sdxl`` / ``brushnet`` / ``powerpaint`` and edit type
``stuff`` / ``background``, base ``real``; another name has no turn (binary
only).

Splits, in order: ``split=NAME`` (everything in it); ``split_files=`` (JSON
lists, relative to the folder unless absolute); ``splits.json`` in the
folder; JSON lists in the folder whose name says ``train`` / ``val`` /
``test``; else train/val by a hash of each source photo, so that a photo and
its ten forgeries share a split.  A split file ``<qualifier>_val.json`` adds
its images to ``val`` and to a split ``val_<qualifier>`` (``val_stuff``,
``val_gan``, ...).
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import os
import re
from collections import Counter
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from diffzoo.harness.core.errors import DataError
from diffzoo.harness.core.fsutil import TEXT_LIMIT, json_kind, read_regular, require_file
from diffzoo.harness.core.types import EditRecord
from diffzoo.harness.data.adapters.generic import NEGATIVE, TpGtDataset, _read_list
from diffzoo.harness.data.base import child_dir, name_list, option_path, require_path
from diffzoo.harness.data.metadata import data_json
from diffzoo.harness.data.splits import (
    SPLITS_FILE,
    canonical_split,
    hash_split_id,
    ids_by_split,
    log_unassigned,
    percent,
    split_ids,
)
from diffzoo.harness.data.walk import canonical_name, files_in

log = logging.getLogger(__name__)

INPAINTERS = ("lama", "mat", "sdxl", "brushnet", "powerpaint")
"""The editors, as a file name starts with one in any case (``LaMa``, ``MAT``, ``SDXL``, ``BrushNet``...)."""
REGIONS = ("stuff", "background")
TP_NAME = re.compile(r"^(?P<editor>[^_]+)_(?P<region>[^_]+)_(?P<photo>.+)$")
SPLIT_TOKENS = {"train": "train", "training": "train", "val": "val", "valid": "val", "validation": "val",
                "dev": "val", "test": "test", "testing": "test"}
NAME_TOKENS = {"br", "gen", "brgen", "split", "json"}
"""Tokens of a split file's name that say nothing about its subset."""
SNIFF_ENTRIES = 64


def parse_tp_name(file_name: str) -> tuple[str, str, str] | None:
    """``(editor, region, photo)`` of ``MAT_Stuff_COCO_00000000520.png``; None when the
    name does not start with a known inpainter (any case) and ``Stuff`` / ``Background``."""
    m = TP_NAME.match(PurePosixPath(file_name).stem)
    if m is None or m["editor"].lower() not in INPAINTERS or m["region"].lower() not in REGIONS:
        return None
    return m["editor"].lower(), m["region"].lower(), m["photo"]


def split_of_file(path: Path) -> tuple[str, str | None] | None:
    """``("val", "stuff")`` for ``stuff_val.json``, ``("train", None)`` for
    ``br-gen_train.json``; None when no token of the name is a split."""
    tokens = [t for t in re.split(r"[^a-z0-9]+", path.stem.lower()) if t]
    split = next((SPLIT_TOKENS[t] for t in tokens if t in SPLIT_TOKENS), None)
    if split is None:
        return None
    rest = [t for t in tokens if t not in SPLIT_TOKENS and t not in NAME_TOKENS]
    return split, "_".join(rest) or None


class BrGenDataset(TpGtDataset):
    """A BR-Gen folder (module doc): ``Tp/`` + ``Gt/`` (+ ``Au/``), JSON split files."""

    edited_base = "real"

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        split: str | None = None,
        split_files: list[str] | str | None = None,
        val_fraction: float | None = None,
        split_seed: int | None = None,
        name: str | None = None,
        skip_unpaired: bool = False,
    ) -> None:
        root = require_path(path, "BrGenDataset")
        listed = name_list(split_files)
        self._split_files = None if listed is None else [option_path(p, root, "split_files") for p in listed]
        super().__init__(root, val_fraction=val_fraction, split_seed=split_seed, split=split,
                         name=name or "brgen", skip_unpaired=skip_unpaired)

    def _turn(self, sample_id: str) -> EditRecord | None:
        parsed = parse_tp_name(sample_id)
        return None if parsed is None else EditRecord(parsed[0], edit_type=parsed[1])

    # -- splits -------------------------------------------------------------
    def _split_scheme(self, ids: list[str], val_fraction: float,
                      seed: int) -> tuple[dict[str, list[str]], dict[str, str]]:
        if self._split_files is None and (self.root / SPLITS_FILE).is_file():
            return super()._split_scheme(ids, val_fraction, seed)
        files = found_split_files(self.root) if self._split_files is None else self._split_files
        return json_splits(files, ids) if files else source_hash_split(ids, val_fraction, seed)

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        turns = [self._turn(sid) for sid, (_, mask) in self._entries.items() if mask is not None]
        d["editors"] = dict(sorted(Counter(t.editor if t else "unknown" for t in turns).items()))
        d["regions"] = dict(sorted(Counter(t.edit_type if t else "unknown" for t in turns).items()))
        return d

    @classmethod
    def sniff(cls, path: str | os.PathLike) -> bool:
        """``Tp/`` and ``Gt/`` whose first files include a BR-Gen name (``<inpainter>_<region>_...``)."""
        p = Path(path)
        tp = child_dir(p, "Tp")
        if tp is None or child_dir(p, "Gt") is None:
            return False
        with os.scandir(tp) as it:
            return any(parse_tp_name(entry.name) is not None for entry in itertools.islice(it, SNIFF_ENTRIES))


def found_split_files(root: Path) -> list[Path]:
    """JSON lists directly in ``root`` whose name says train / val / test (sorted); one so named
    that is not readable JSON (a download cut short) is a DataError naming it, never left out, and
    one holding JSON other than a list is left out with a warning naming it and what it holds."""
    found = []
    for p in files_in(root, (".json",)):
        if p.name == SPLITS_FILE or split_of_file(p) is None:
            continue
        if isinstance(data := data_json(p, str(p)), list):
            found.append(p)
        else:
            log.warning("%s: holds %s, not a JSON list of [image, mask] pairs; not read as a split file",
                        p, json_kind(data))
    return found


def json_splits(files: list[Path], ids: list[str]) -> tuple[dict[str, list[str]], dict[str, str]]:
    """Splits from IMDL-BenCo JSON lists: each listed image is found by ``<Tp|Au>/<file>``
    (or its file name alone) among ``ids``; listed images that are not in the data are
    counted and logged (a file naming none of them gives no split), and files that
    together name none of them are a DataError."""
    index: dict[str, str] = {}
    for sid in ids:
        folder, _, name = sid.partition("/")
        index[f"{folder.lower()}/{name}"] = sid
        index.setdefault(name, sid)
    splits: dict[str, set[str]] = {}
    digest = hashlib.sha256()
    for file in files:
        which = split_of_file(file)
        if which is None:
            raise DataError(f"{file}: no split in the file name (expected train, val or test, e.g. stuff_val.json)")
        require_file(file, "split file")
        raw = read_regular(file, TEXT_LIMIT)  # the bytes hashed are the bytes read as splits
        digest.update(file.name.encode() + b"\0" + raw)
        found: set[str] = set()
        missing: list[str] = []
        for image, mask in _read_list(file, raw):
            written = image.strip()  # spaces around a path are the list's
            parts = PureWindowsPath(written).parts if "\\" in written else PurePosixPath(written).parts
            # tp/x.png for /data/BR-Gen/Tp/x.png (folder in lower case), or x.png; as the ids read it
            key = canonical_name(f"{parts[-2].lower()}/{parts[-1]}" if len(parts) >= 2 else parts[-1])
            listed = index.get(key) or index.get(key.rpartition("/")[2])
            if listed is None:
                missing.append(f"{image} ({'authentic' if mask == NEGATIVE else 'tampered'})")
            else:
                found.add(listed)
        if missing:
            log.warning("%s: %d of its %d image(s) are not in the data and are left out (e.g. %s)",
                        file, len(missing), len(missing) + len(found), ", ".join(missing[:3]))
        if not found:
            continue
        split, qualifier = which
        splits.setdefault(split, set()).update(found)
        if qualifier:
            splits.setdefault(f"{split}_{qualifier}", set()).update(found)
    names = ", ".join(f.name for f in files)
    # an image in two of train / val / test would be trained on and evaluated (its qualified splits,
    # val_stuff..., are parts of their split and may share it)
    plain = sorted((s, ids) for s, ids in splits.items() if s in SPLIT_TOKENS.values())
    for (first, a), (second, b) in itertools.combinations(plain, 2):
        if shared := sorted(a & b):
            raise DataError(
                f"{len(shared)} image(s) are in both split {first} and split {second} of the BR-Gen split files "
                f"({names}), e.g. {', '.join(shared[:3])}; an image in two splits would be trained on and "
                "evaluated: list each image in one of them, or name the files to read with "
                "--dataset-option split_files=A.json,B.json")
    if not splits:
        raise DataError(f"none of the images listed in {names} is in the data; images are matched by their "
                        "Tp/ or Au/ file name (the release ships no real photos: Au/ is yours to fill)")
    info = {"id": f"brgen-json-{digest.hexdigest()[:16]}", "source": f"BR-Gen split files ({names})"}
    log_unassigned(info["source"], ids, (i for part in splits.values() for i in part))
    return {canonical_split(k): sorted(v) for k, v in splits.items()}, info


def source_photo(sample_id: str) -> str:
    """The photo a sample comes from: ``COCO_00000000520`` for ``Tp/MAT_Stuff_COCO_00000000520.png``
    and ``Au/COCO_00000000520.png``; a name that does not parse is its own photo."""
    folder, _, file = sample_id.partition("/")
    parsed = parse_tp_name(file) if folder.lower() == "tp" else None
    return parsed[2] if parsed else PurePosixPath(file).stem


def source_hash_split(ids: list[str], val_fraction: float, seed: int) -> tuple[dict[str, list[str]], dict[str, str]]:
    """train/val by a hash of each sample's source photo (:func:`source_photo`)."""
    photo_split = {p: s for s, photos in split_ids({source_photo(i) for i in ids}, val_fraction, seed).items()
                   for p in photos}
    info = {"id": f"{hash_split_id(seed, val_fraction)}-by-photo",
            "source": f"hash of each source photo (seed {seed}, val {percent(val_fraction)}%): "
                      "a photo and its forgeries share a split"}
    return ids_by_split((sid, photo_split[source_photo(sid)]) for sid in ids), info
