"""The PAPE adapter (Plausible Anomalous Paired Edits; hub ``PatrickZZZ/PAPE_Dataset``).

Layout (docs/datasets.md, from the dataset card)::

    <root>/<subset>/<editor>/manifest.jsonl
                            /source/  normal/  abnormal/
                            /masks/normal/  masks/abnormal/
    <root>/<subset>/splits/split_seed2026.json   (or <root>/splits/...)

Subsets are COCO / ImageNet / Places, editors ``qwen_image_edit_2511``,
``firered_image_edit_1.1``, ``longcat_image_edit``, ``flux2_dev``.  One
sample per image file: the edited image chosen by ``edits`` (``normal`` or
``abnormal``) with its binary change mask mapped to the editor's class, and
(``include_source``) each editor folder's ``source/`` image as an authentic
sample.  The label space is background + one class per editor folder, so a
detector can attribute an edit to its editor.

Manifest rows carry ``image_id`` and the prompts; there may be one row per
language (en / zh) for the same image, merged into one sample.  Their
``source_paths`` / ``export_paths`` name files on the builder's machine and
are never opened: files are looked up inside the dataset folder by
``image_id`` only, and an ``image_id`` that is not a plain file-name stem is
refused.

UNCONFIRMED (documented defaults, clear errors when the data disagrees):
file naming inside ``normal/`` etc. (``<image_id>.<any image extension>``,
masks also ``<image_id>_mask.*`` / ``_gt.*``), the split file's location and
shape, the manifest's language field.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from diffzoo.harness.core.errors import DataError
from diffzoo.harness.core.types import EditRecord, LabelSpace, Sample, SampleMeta
from diffzoo.harness.data.adapters.generic import MASK_SUFFIXES
from diffzoo.harness.data.authentic import image_files_in
from diffzoo.harness.data.base import (
    SplitDataset,
    chosen_names,
    folder_name,
    not_a_choice,
    option_path,
    report_unpaired,
    require_path,
    sniff_quietly,
)
from diffzoo.harness.data.fingerprint import combine, fingerprint_files
from diffzoo.harness.data.imageio import read_labelled
from diffzoo.harness.data.metadata import MANIFEST_FILE, data_json, data_text, jsonl_rows
from diffzoo.harness.data.splits import by_canonical_split, canonical_split, native_splits
from diffzoo.harness.data.walk import by_canonical_name, canonical_name, ids_of, log_unused, subfolders

log = logging.getLogger(__name__)

PAPE_HUB_ID = "PatrickZZZ/PAPE_Dataset"
PAPE_SUBSETS = ("COCO", "ImageNet", "Places")
PAPE_EDITORS = ("qwen_image_edit_2511", "firered_image_edit_1.1", "longcat_image_edit", "flux2_dev")
"""Editor folders in the order of the dataset card; the default label order."""
EDIT_KINDS = ("normal", "abnormal")
SPLIT_FILE = "splits/split_seed2026.json"
REAL_SUBSETS = frozenset(s.lower() for s in PAPE_SUBSETS)
"""Subsets whose source images are real photographs (``base="real"``)."""

LANGUAGE_FIELDS = ("lang", "language")
_CJK = re.compile(r"[\u3400-\u9fff]")


# -- PAPE's own files: manifest rows (never the builder-machine paths they carry), split files --
def _safe_stem(value: Any, file: Path, lineno: int) -> str:
    """An ``image_id`` usable as a file-name stem inside the dataset folder."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise DataError(f"{file}, line {lineno}: field 'image_id' is {value!r}; expected a string or integer")
    text = str(value)
    if not text.strip() or text in (".", "..") or any(c in text for c in "/\\\x00") or os.path.isabs(text):
        raise DataError(
            f"{file}, line {lineno}: field 'image_id' is {text!r}, which would name a file "
            f"outside <editor>/<folder>/; expected a plain file-name stem (no '/', '\\' or '..'). "
            f"Files are only ever looked up inside the dataset folder"
        )
    return text


def read_pape_manifest(file: Path, edits: str) -> dict[str, dict[str, str]]:
    """``image_id`` -> {language: prompt of ``edits``}, rows of one image merged.

    Required per row: ``image_id`` and ``<edits>_prompt`` (a string).  Path
    fields (``source_paths``, ``export_paths``, ...) are ignored.
    """
    field = f"{edits}_prompt"
    out: dict[str, dict[str, str]] = {}
    for lineno, row in jsonl_rows(data_text(file, str(file)), str(file)):
        if not isinstance(row, dict):
            raise DataError(f"{file}, line {lineno}: expected a JSON object, got {type(row).__name__}")
        for key in ("image_id", field):
            if key not in row:
                raise DataError(
                    f"{file}, line {lineno}: missing field {key!r} (each row needs 'image_id', "
                    f"'normal_prompt' and 'abnormal_prompt')"
                )
        image_id = canonical_name(_safe_stem(row["image_id"], file, lineno))  # as _index reads the file names
        prompt = row[field]
        if not isinstance(prompt, str):
            raise DataError(f"{file}, line {lineno}: field {field!r} is {prompt!r}; expected a string")
        language = next((row[k].strip().lower() for k in LANGUAGE_FIELDS  # the row's own field, else by the script
                         if isinstance(row.get(k), str) and row[k].strip()), "zh" if _CJK.search(prompt) else "en")
        out.setdefault(image_id, {}).setdefault(language, prompt)
    if not out:
        raise DataError(f"{file}: no rows")
    return out


def read_split_json(file: Path) -> dict[str, Any]:
    """A split file: ``{split: [image ids]}`` or ``{subset: {split: [image ids]}}``, its ids as
    strings read as :func:`.walk.canonical_name` reads a manifest's ``image_id``."""
    # a split given twice is refused (json would keep its last list, the first one's ids in no split)
    data = data_json(file, f"PAPE split file {file}", unique_keys=True)
    flat = isinstance(data, dict) and all(isinstance(v, list) for v in data.values())
    nested = isinstance(data, dict) and all(
        isinstance(v, dict) and all(isinstance(x, list) for x in v.values()) for v in data.values()
    )
    if not data or not (flat or nested):
        raise DataError(
            f'PAPE split file {file}: expected {{"train": [image ids], "val": [...], "test": [...]}} '
            f'or {{"<subset>": {{"test": [image ids], ...}}, ...}}'
        )
    seen: dict[tuple[str, str], str] = {}
    for subset, part in (data.items() if nested else [("", data)]):
        if not any(part.values()):  # its samples would be in no split, the subset gone from every run unsaid
            raise DataError(f"PAPE split file {file}: {f'subset {subset!r}' if subset else 'it'} names no image id "
                            "(every split list is empty)")
        # val beside validation: two lists of one split, refused as native splits are, never merged
        by_canonical_split(f"PAPE split file {file}" + (f", subset {subset!r}" if subset else ""), part.items())
        for split_name, ids in part.items():
            # an id listed twice in one split is one sample there, never counted twice in a score
            part[split_name] = ids = list(dict.fromkeys(canonical_name(str(i)) for i in ids))
            for i in ids:
                first = seen.setdefault((subset, i), split_name)
                if first != split_name:
                    raise DataError(
                        f"PAPE split file {file}: image id {i} is in both {first!r} and {split_name!r}"
                    )
    return data


def _layout(root: Path) -> dict[str, dict[str, Path]]:
    """subset name -> editor name -> folder, for every folder that looks like PAPE; the names
    (labels, ids) as :func:`.walk.canonical_name` reads the folders'."""
    out: dict[str, dict[str, Path]] = {}
    for subset in subfolders(root):
        if subset.name == "splits":
            continue
        editors = by_canonical_name(subset, ((e.name, e) for e in subfolders(subset) if e.name != "splits" and (
            (e / MANIFEST_FILE).is_file() or any((e / k).is_dir() for k in (*EDIT_KINDS, "source")))))
        if editors:
            out[subset.name] = editors
    return by_canonical_name(root, out.items())


def _index(folder: Path) -> dict[str, list[Path]]:
    """file-name stem (:func:`.walk.canonical_name`) -> image files directly in ``folder``."""
    out: dict[str, list[Path]] = {}
    for name, path in ids_of(folder, image_files_in(folder)).items():
        out.setdefault(PurePosixPath(name).stem, []).append(path)
    return out


def _find(index: dict[str, list[Path]], stems: Sequence[str], folder: Path) -> Path | None:
    """The one file named by any of ``stems`` (``x``, ``x_mask``, ...); several are a DataError."""
    hits = [p for stem in stems for p in index.get(stem, [])]
    if len(hits) > 1:
        raise DataError(f"{folder}: several files for {stems[0]!r}: {', '.join(sorted(p.name for p in hits))}")
    return hits[0] if hits else None


@dataclass(frozen=True)
class _Entry:
    image: Path
    mask: Path | None  # None: a source (authentic) image
    subset: str
    editor: str
    prompt: str


class PapeDataset(SplitDataset):
    """PAPE as a :class:`Dataset`; see the module docstring and docs/datasets.md.

    ``edits``: which edited images and masks are the samples (``normal`` or
    ``abnormal``).  ``subsets`` / ``editors``: which to use (default: all
    present; ``editors`` also fixes the label order).  ``include_source``:
    add each ``source/`` image as an authentic sample.  ``split``: put every
    sample in that one split instead of reading the split file;
    ``splits_file``: another split file.  ``prompt_language``: the language
    whose prompt goes into the sample's EditRecord (all are kept, see
    :meth:`prompts`).  ``skip_unpaired``: skip manifest rows whose image or
    mask is missing instead of refusing to open.
    """

    source_kind = "folder"

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        name: str | None = None,
        edits: str = "normal",
        subsets: Sequence[str] | str | None = None,
        editors: Sequence[str] | str | None = None,
        include_source: bool = True,
        split: str | None = None,
        splits_file: str | os.PathLike | None = None,
        prompt_language: str = "en",
        skip_unpaired: bool = False,
    ) -> None:
        root = require_path(path, "PapeDataset")
        if edits not in EDIT_KINDS:
            raise not_a_choice("PAPE", "edits", edits, EDIT_KINDS)
        layout = _layout(root) if root.is_dir() else {}
        if not layout:
            raise DataError(
                f"{root}: not a PAPE folder; expected <subset>/<editor>/ folders holding "
                f"{MANIFEST_FILE}, source/, normal/, abnormal/, masks/normal/, masks/abnormal/"
            )
        chosen_subsets = self._choose("subset", subsets, sorted(layout), root)
        present = sorted({e for s in chosen_subsets for e in layout[s]})
        known = [e for e in PAPE_EDITORS if e in present] + [e for e in present if e not in PAPE_EDITORS]
        chosen_editors = self._choose("editor", editors, known, root)
        super().__init__(name or folder_name(root), LabelSpace.from_editors(chosen_editors))
        self.root, self.path = root, str(root)
        self.edits, self.include_source = edits, include_source
        self.prompt_language = prompt_language
        self.subsets = chosen_subsets
        self._present_subsets = sorted(layout)
        self._entries: dict[str, _Entry] = {}
        self._prompts: dict[str, dict[str, str]] = {}
        self._files: list[Path] = []
        self._split_files: list[Path] = []
        by_subset: dict[str, dict[str, list[str]]] = {}  # subset -> image_id -> sample ids
        missing: list[str] = []
        for subset in chosen_subsets:
            ids = by_subset.setdefault(subset, {})
            for editor in chosen_editors:
                folder = layout[subset].get(editor)
                if folder is None:
                    log.info("PAPE %s: subset %s has no editor folder %s", root, subset, editor)
                    continue
                for image_id, sid in self._add_editor(subset, editor, folder, missing):
                    ids.setdefault(image_id, []).extend([sid] if sid else [])
        report_unpaired(str(root), missing, "manifest row(s) have no image or mask", skip_unpaired)
        if not self._entries:
            raise DataError(f"{root}: no samples for subsets {chosen_subsets}, editors {chosen_editors}")
        self._split_by(split, self._entries, lambda: native_splits(self._assign_splits(by_subset, splits_file),
                                                                   "the dataset's split files"))

    # -- building -------------------------------------------------------------
    @staticmethod
    def _choose(kind: str, wanted: Sequence[str] | str | None, present: list[str], root: Path) -> list[str]:
        def refuse(unknown: list[str]) -> DataError:
            return DataError(f"PAPE {root} has no {kind} {', '.join(map(repr, unknown)) or '(none given)'}; "
                             f"{kind}s present: {', '.join(present)}")

        return chosen_names(wanted, present, refuse, canonical_name)  # as the folder names are read

    def _add_editor(
        self, subset: str, editor: str, folder: Path, missing: list[str]
    ) -> list[tuple[str, str | None]]:
        """Add one editor folder's samples; returns (image_id, sample id or None) pairs."""
        manifest = folder / MANIFEST_FILE
        needed = [self.edits, f"masks/{self.edits}"] + (["source"] if self.include_source else [])
        absent = [n + "/" for n in needed if not (folder / n).is_dir()]
        if not manifest.is_file():
            absent.insert(0, MANIFEST_FILE)
        if absent:
            raise DataError(
                f"PAPE {folder}: missing {', '.join(absent)}; each <subset>/<editor>/ folder holds "
                f"{MANIFEST_FILE}, source/, normal/, abnormal/, masks/normal/, masks/abnormal/"
            )
        rows = read_pape_manifest(manifest, self.edits)
        self._files.append(manifest)
        images, masks = _index(folder / self.edits), _index(folder / "masks" / self.edits)
        sources = _index(folder / "source") if self.include_source else {}
        out: list[tuple[str, str | None]] = [(image_id, None) for image_id in rows]
        for image_id, prompts in rows.items():
            image = _find(images, [image_id], folder / self.edits)
            mask = _find(masks, [image_id + s for s in MASK_SUFFIXES], folder / "masks" / self.edits)
            prefix = f"{subset}/{editor}/"
            if image is None or mask is None:
                what = "image" if image is None else "mask"
                where = f"{self.edits}/" if image is None else f"masks/{self.edits}/"
                missing.append(f"{prefix}{where}{image_id}.* ({what})")
                continue
            prompt = prompts.get(self.prompt_language, next(iter(prompts.values())))
            sid = canonical_name(f"{prefix}{self.edits}/{image.name}")
            self._entries[sid] = _Entry(image, mask, subset, editor, prompt)
            self._prompts[sid] = prompts
            self._files += [image, mask]
            out.append((image_id, sid))
            if self.include_source:
                src = _find(sources, [image_id], folder / "source")
                if src is None:
                    missing.append(f"{prefix}source/{image_id}.* (source image)")
                    continue
                src_id = canonical_name(f"{prefix}source/{src.name}")
                self._entries[src_id] = _Entry(src, None, subset, editor, "")
                self._files.append(src)
                out.append((image_id, src_id))
        log_unused(f"PAPE {folder}", sorted(set(images) - set(rows)), f"file(s) in {self.edits}/ have no manifest row")
        return out

    def _split_file(self, subset: str, explicit: str | os.PathLike | None) -> Path:
        if explicit is not None:
            return option_path(explicit, self.root, "splits_file")
        for candidate in (self.root / subset / SPLIT_FILE, self.root / SPLIT_FILE):
            if candidate.is_file():
                return candidate
        raise DataError(
            f"PAPE {self.root}: no split file for subset {subset}; looked for "
            f"{subset}/{SPLIT_FILE} and {SPLIT_FILE}. Pass split='test' to put every "
            f"sample in one split, or splits_file=PATH"
        )

    def _assign_splits(
        self, by_subset: dict[str, dict[str, list[str]]], explicit: str | os.PathLike | None
    ) -> dict[str, list[str]]:
        """Every sample goes to the split of its (subset, image id); ids are checked."""
        users: dict[Path, list[str]] = {}
        for subset in by_subset:
            users.setdefault(self._split_file(subset, explicit), []).append(subset)
        self._split_files = list(users)
        splits: dict[str, list[str]] = {}
        for file, subsets in users.items():
            data = read_split_json(file)
            nested = all(isinstance(v, dict) for v in data.values())
            if nested and (absent := [s for s in subsets if s not in data]):
                raise DataError(f"PAPE split file {file}: no entry for subset {absent[0]!r} "
                                f"(it has {', '.join(sorted(data))})")
            groups = [([s], data[s]) for s in subsets] if nested else [(subsets, data)]
            for group, part in groups:
                known = {i for s in group for i in by_subset[s]}
                unknown = sorted({i for ids in part.values() for i in ids} - known)
                if unknown and not nested and set(self.subsets) != set(self._present_subsets):
                    # a flat file shared by all subsets also names those not chosen
                    log.info("PAPE split file %s: %d id(s) not in subsets %s ignored",
                             file, len(unknown), ", ".join(group))
                elif unknown:
                    raise DataError(
                        f"PAPE split file {file}: {len(unknown)} image id(s) are not in the data "
                        f"(subset {', '.join(group)}, editors {', '.join(self.label_space.editors)}), "
                        f"e.g. {', '.join(unknown[:5])}"
                    )
                for subset in group:
                    ids, unassigned = by_subset[subset], set(by_subset[subset])
                    for split_name, image_ids in part.items():
                        for image_id in image_ids:
                            splits.setdefault(canonical_split(split_name), []).extend(ids.get(image_id, ()))
                            unassigned.discard(image_id)
                    if unassigned:
                        log.info("PAPE %s: %d image id(s) of %s are in no split of %s",
                                 self.root, len(unassigned), subset, file)
        return splits

    # -- reading --------------------------------------------------------------
    def _load(self, sample_id: str) -> Sample:
        e = self._lookup(self._entries, sample_id)
        image, label = read_labelled(e.image, e.mask, sample_id, self.label_space.index(e.editor))
        base = "real" if e.subset.lower() in REAL_SUBSETS else "unknown"
        turns = (EditRecord(editor=e.editor, prompt=e.prompt, edit_type=self.edits),) if e.mask else ()
        return Sample(image, label, SampleMeta(sample_id, base=base, turns=turns, source=e.subset))

    def prompts(self, sample_id: str) -> dict[str, str]:
        """Every language's prompt of an edited sample (``{}`` for a source image)."""
        self._lookup(self._entries, sample_id)
        return dict(self._prompts.get(sample_id, {}))

    @classmethod
    def sniff(cls, path: str | os.PathLike) -> bool:
        """True for a folder with ``<subset>/<editor>/manifest.jsonl`` and normal/ or abnormal/."""
        def has_editor_folders(p: Path) -> bool:
            return p.is_dir() and any(
                (e / MANIFEST_FILE).is_file() and any((e / k).is_dir() for k in EDIT_KINDS)
                for s in subfolders(p)
                for e in subfolders(s)
            )

        return sniff_quietly(has_editor_folders, path, (OSError,))

    # -- identity -------------------------------------------------------------
    def _content_fingerprint(self) -> str:
        """Images, masks and manifests; the split assignment is added by the base class."""
        return combine(
            "pape", fingerprint_files(self.root, sorted(set(self._files))),
            self.edits, self.include_source, self.prompt_language,
        )

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        n_source = sum(1 for e in self._entries.values() if e.mask is None)
        d.update(
            hub_id=PAPE_HUB_ID,
            edits=self.edits,
            subsets=list(self.subsets),
            editors=list(self.label_space.editors),
            include_source=self.include_source,
            samples={"edited": len(self._entries) - n_source, "source": n_source},
            split_files=[str(f) for f in self._split_files],
        )
        return d
