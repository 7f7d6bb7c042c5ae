"""Paired folders -> a labelled dataset: ``diffzoo data label-pairs``.

Each (original, edited) pair matched by file stem gets a label from
:func:`diffzoo.generators.editors.labels.difference_label`; accepted pairs are written
in the DiffSeg30k folder layout (so ``open_dataset(DIR)`` reads them back),
every pair gets a manifest row, and the folder is written under a temporary
name and renamed at the end.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from diffzoo.generators.editors.labels import (
    DEFAULT_CLEANUP,
    DEFAULT_MAX_AREA,
    DEFAULT_MIN_AREA,
    DEFAULT_TAU,
    FRAMES,
    STATUSES,
    difference_label,
    edited_class,
    label_options,
)
from diffzoo.generators.generate.layout import built_in_place_of, labels_text, manifest_text, save
from diffzoo.harness.core.errors import ConfigError, CorruptSampleError, DataError
from diffzoo.harness.core.fsutil import require_file, writing
from diffzoo.harness.core.types import EditRecord, SampleMeta
from diffzoo.harness.data.authentic import image_files_in
from diffzoo.harness.data.fingerprint import file_orientation
from diffzoo.harness.data.imageio import read_image
from diffzoo.harness.data.labelmaps import LABELS_FILE
from diffzoo.harness.data.metadata import MANIFEST_FILE
from diffzoo.harness.data.walk import canonical_name

log = logging.getLogger(__name__)

# -- paired folders ------------------------------------------------------------
PAIRS_DIR = "pairs"
SUMMARY_FILE = "label_pairs.json"
SOURCE = "label-pairs"


@dataclass
class PairsReport:
    """What :func:`label_pairs` wrote: counts per status, stems found on one side only."""

    out: Path
    counts: dict[str, int]
    orig_only: list[str]
    gen_only: list[str]


def _stems(folder: Path, what: str) -> dict[str, Path]:
    require_file(folder, f"{what} folder", folder=True)
    out: dict[str, Path] = {}
    for f in image_files_in(folder):
        stem = canonical_name(f.stem)  # pairs and ids: one stem in either Unicode form
        if stem in out:
            raise DataError(f"{folder}: two images with the stem {stem!r}: {out[stem].name!r}, {f.name!r}")
        out[stem] = f
    return out


def label_pairs(
    orig_dir: str | os.PathLike,
    gen_dir: str | os.PathLike,
    out: str | os.PathLike,
    *,
    tau: float = DEFAULT_TAU,
    min_area: float = DEFAULT_MIN_AREA,
    max_area: float = DEFAULT_MAX_AREA,
    cleanup: int = DEFAULT_CLEANUP,
    align_images: bool = True,
    editor: str | None = None,
    frame: str = "gen",
    force: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> PairsReport:
    """Label the images of ``gen_dir`` against those of ``orig_dir`` with the same file stem.

    Writes a folder :class:`DiffSeg30kDataset` opens: ``pairs/<stem>.image.<ext>``
    and ``pairs/<stem>.mask.png`` for accepted pairs, ``labels.json``
    (``background`` + ``editor``, or ``edited``), ``manifest.jsonl`` (every
    pair: sample metadata + status, changed fraction, alignment) and
    ``label_pairs.json`` (settings, counts, unmatched stems).  ``frame="gen"``
    keeps the generated file as it is and maps the label into its frame;
    ``"orig"`` stores the rectified image and the label as computed.  Built in
    a temporary sibling folder renamed at the end.
    """
    options, settings = label_options(tau, min_area, max_area, cleanup, align_images)
    if frame not in FRAMES:
        raise ConfigError(f"frame must be one of {', '.join(FRAMES)}, got {frame!r}")
    label_space, editor = edited_class(editor)
    out = Path(out)
    if out.is_dir() and any(out.iterdir()) and not force:
        raise ConfigError(f"{out} exists and is not an empty folder; pass --force (force=True) to replace the "
                          "labels an earlier label-pairs wrote there")
    if Path(orig_dir).resolve() == Path(gen_dir).resolve():
        raise ConfigError(f"ORIG_DIR and GEN_DIR are the same folder ({orig_dir}): every image would be compared "
                          "with itself and rejected as a no-op")
    origs, gens = _stems(Path(orig_dir), "original"), _stems(Path(gen_dir), "generated")
    stems = sorted(set(origs) & set(gens))
    if not stems:
        raise DataError(f"no file stem is in both {orig_dir} and {gen_dir}")
    report = PairsReport(out, dict.fromkeys((*STATUSES, "unreadable"), 0),
                         sorted(set(origs) - set(gens)), sorted(set(gens) - set(origs)))  # fmt: skip
    tags = {stem: {"orig": file_orientation(origs[stem]), "gen": file_orientation(gens[stem])} for stem in stems}
    if turned := [stem for stem in stems if tags[stem]["orig"] != tags[stem]["gen"]]:
        log.warning("%d pair(s) whose original and edit carry different EXIF orientation tags (e.g. %s: original "
                    "%s, edit %s) are compared as stored, as diffzoo reads every image; an edit made on the view a "
                    "tag asks for is then compared turned (docs/datasets.md, EXIF orientation)", len(turned),
                    turned[0], *(tags[turned[0]][k] or "none" for k in ("orig", "gen")))
    with built_in_place_of(out, (PAIRS_DIR, MANIFEST_FILE, LABELS_FILE, SUMMARY_FILE)) as tmp:
        (tmp / PAIRS_DIR).mkdir()
        rows = []
        for done, stem in enumerate(stems, start=1):
            rows.append(_label_one(stem, origs[stem], gens[stem], tmp / PAIRS_DIR, frame, editor, options))
            if any(tags[stem].values()):
                rows[-1]["exif_orientation"] = tags[stem]
            report.counts[rows[-1]["status"]] += 1
            if progress is not None:
                progress(done, len(stems))
        save(tmp / MANIFEST_FILE, manifest_text(rows))
        save(tmp / LABELS_FILE, labels_text(label_space))
        unmatched = {"orig_only": report.orig_only, "gen_only": report.gen_only}
        summary = {"orig_dir": str(orig_dir), "gen_dir": str(gen_dir), "frame": frame, "editor": editor,
                   "settings": settings, "counts": report.counts, "unmatched": unmatched}  # fmt: skip
        save(tmp / SUMMARY_FILE, json.dumps(summary, indent=2) + "\n")
    log.info("label-pairs: %s -> %s %s", gen_dir, out, report.counts)
    return report


def _label_one(
    stem: str, orig_path: Path, gen_path: Path, pairs_dir: Path, frame: str, editor: str | None,
    options: dict[str, Any],
) -> dict[str, Any]:  # fmt: skip
    """Label one pair and write its files if accepted; return its manifest row."""
    meta = SampleMeta(stem, turns=(EditRecord(editor=editor),) if editor else (), source=SOURCE)
    row: dict[str, Any] = {**meta.to_dict(), "orig": str(orig_path), "gen": str(gen_path)}
    try:
        orig, gen = read_image(orig_path, stem), read_image(gen_path, stem)
    except CorruptSampleError as exc:
        return {**row, "status": "unreadable", "error": str(exc)}
    res = difference_label(orig, gen, **options)
    row.update(status=res.status, changed_fraction=round(res.changed_fraction, 6),
               changed_pixels=res.changed_pixels, valid_pixels=res.valid_pixels,
               alignment=res.alignment.to_dict())  # fmt: skip
    if res.status == "ok":
        if frame == "gen":  # the generated file's pixels untouched, the label mapped to them
            mask = res.gen_frame_mask(gen.shape)
            copy = pairs_dir / f"{stem}.image{gen_path.suffix.lower()}"
            with writing(copy):
                shutil.copyfile(gen_path, copy)
        else:
            mask = res.mask
            save(pairs_dir / f"{stem}.image.png", res.rectified)
        save(pairs_dir / f"{stem}.mask.png", mask)
    return row
