"""The PIXAR adapter (VILA-Lab/PIXAR, MIT): pixel-difference labels for VLM editors.

Layout of one PIXAR folder (docs/datasets.md, from the repository's README and build script
``preprocess_raw/2_construct_dataset``)::

    <folder>/mapping.json                      {"tampered_<id>.png": {entry, real, type, bg}}
    <folder>/{train,validation,test}/real/           original_<hash>.png (authentic)
                                    /full_synthetic/ fully generated images (empty in the release)
                                    /tampered/       tampered_<id>.png
                                    /soft_masks/     tampered_<id>_mask.png  pixel-difference label
                                    /masks/          tampered_<id>_mask.png  editor's guiding mask
                                    /metadata/       tampered_<id>_cls.json  {"cls": [...], "text": "..."}

Labels come from ``soft_masks/`` (``labels="soft"``) or ``masks/``
(``labels="guide"``), binarised as mean over RGB / 255 > ``mask_threshold``
(default 0.5, the field's 127.5 rule; the released soft masks are 0/255).
Each split folder is a split (``validation`` -> ``val``).

The per-editor test sets (qwen, gemini2.5, gemini3, flux2, gpt, seedream)
are separate archives whose top folder name is UNCONFIRMED.  Documented
default: ``path`` is either one PIXAR folder (its editor given by
``editor=``, else unknown and the label space binary), or a root holding
one PIXAR folder per editor, named ``<editor>`` or ``test_<editor>_<tau>``;
the label space is then background + those editors.  ``editor_from_type``
takes each tampered image's editor from the prefix of its mapping ``type``
(``qwen_coco_val_addition`` -> ``qwen``), for the combined test set.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from diffzoo.harness.core.errors import ConfigError, CorruptSampleError, DataError
from diffzoo.harness.core.fsutil import read_json
from diffzoo.harness.core.types import BINARY, EditRecord, LabelSpace, Sample, SampleMeta
from diffzoo.harness.data.authentic import image_files_in
from diffzoo.harness.data.base import (
    SplitDataset,
    chosen_names,
    files_by_stem,
    folder_name,
    name_list,
    not_a_choice,
    report_unpaired,
    require_path,
    sniff_quietly,
)
from diffzoo.harness.data.fingerprint import combine, fingerprint_files
from diffzoo.harness.data.imageio import read_labelled
from diffzoo.harness.data.metadata import data_json
from diffzoo.harness.data.splits import by_canonical_split, native_splits
from diffzoo.harness.data.walk import (
    by_canonical_name,
    canonical_name,
    files_in,
    ids_of,
    log_unused,
    mask_once,
    subfolders,
)

log = logging.getLogger(__name__)

PIXAR_REPO = "VILA-Lab/PIXAR"
MAPPING_FILE = "mapping.json"
LABEL_DIRS = {"soft": "soft_masks", "guide": "masks"}
REQUIRED_DIRS = ("real", "full_synthetic", "tampered", "metadata")
METADATA_FIELDS = {"cls": list, "text": str}
UNKNOWN_EDITOR = "unknown"
_EDITOR_DIR = re.compile(r"^(?:test_)?(?P<editor>.+?)(?:_\d+(?:\.\d+)?)?$")


def editor_from_folder(name: str) -> str:
    """``test_gemini2.5_0.05`` -> ``gemini2.5``; ``qwen`` -> ``qwen``."""
    m = _EDITOR_DIR.match(name)
    return m.group("editor") if m else name


def _split_dirs(folder: Path) -> list[Path]:
    """Subfolders that hold ``tampered/`` (train/, validation/, test/)."""
    return [p for p in subfolders(folder) if (p / "tampered").is_dir()]


def read_mapping(file: Path) -> dict[str, dict[str, Any]]:
    """``mapping.json``: tampered file name (:func:`.walk.canonical_name`) -> {entry, real, type, bg}."""
    if not file.exists():
        raise DataError(
            f"PIXAR {file.parent}: {MAPPING_FILE} is missing; expected it beside the split "
            f"folders, mapping each tampered_<id>.png to {{entry, real, type, bg}}"
        )
    data = data_json(file, f"PIXAR {file}")
    if not isinstance(data, dict):
        raise DataError(f"PIXAR {file}: expected a JSON object {{tampered file: {{...}}}}")
    for key, value in data.items():
        if not isinstance(value, dict):
            raise DataError(
                f"PIXAR {file}: entry {key!r} is {value!r}; expected an object {{entry, real, type, bg}}"
            )
        if "type" in value and not isinstance(value["type"], str):
            raise DataError(
                f"PIXAR {file}: entry {key!r}: field 'type' is {value['type']!r}; expected a string"
            )
    return by_canonical_name(file, data.items())


def read_metadata(file: Path, sample_id: str) -> tuple[list[str], str]:
    """A ``tampered_<id>_cls.json``: (COCO class names, description)."""
    try:
        data = read_json(file)
    except FileNotFoundError:
        raise CorruptSampleError(
            sample_id, f"{file}: metadata file not found", "missing-file"
        ) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptSampleError(sample_id, f"{file}: metadata is not readable JSON ({exc})") from None
    if not isinstance(data, dict):
        raise CorruptSampleError(sample_id, f'{file}: expected {{"cls": [...], "text": "..."}}')
    for field, kind in METADATA_FIELDS.items():
        if field not in data:
            raise CorruptSampleError(
                sample_id,
                f'{file}: missing field {field!r}; expected {{"cls": [class names], "text": "..."}}',
            )
        if not isinstance(data[field], kind) or (
            kind is list and not all(isinstance(c, str) for c in data[field])
        ):
            what = "a list of class names" if kind is list else "a string"
            raise CorruptSampleError(
                sample_id, f"{file}: field {field!r} is {data[field]!r}; expected {what}"
            )
    return list(data["cls"]), data["text"]


@dataclass(frozen=True)
class _Entry:
    image: Path
    kind: str  # "real", "tampered" or "full_synthetic"
    editor: str = UNKNOWN_EDITOR
    mask: Path | None = None
    metadata: Path | None = None  # every tampered image has its metadata file, no other image one
    edit_type: str = "unknown"  # a tampered image's mapping type, any other image's kind (full_synthetic)
    base: str = "unknown"


class PixarDataset(SplitDataset):
    """PIXAR as a :class:`Dataset`; see the module docstring and docs/datasets.md.

    ``labels``: ``soft`` (pixel-difference, default) or ``guide`` masks.
    ``mask_threshold``: a mask pixel is edited when its mean over RGB / 255
    exceeds it.  ``include_real`` / ``full_synthetic``: add ``real/`` images
    (all-zero label) / fully generated images (every pixel edited).
    ``editor``: the editor of a single folder; ``editors``: which per-editor
    subfolders (or type prefixes) to use, in label order.  ``split``: every
    sample in that one split (e.g. ``test`` for a per-editor test set).
    ``skip_unpaired``: skip tampered images lacking a mask, metadata or
    mapping entry instead of refusing to open.
    """

    source_kind = "folder"

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        name: str | None = None,
        labels: str = "soft",
        mask_threshold: float = 0.5,
        include_real: bool = True,
        full_synthetic: bool = False,
        editor: str | None = None,
        editors: Sequence[str] | str | None = None,
        editor_from_type: bool = False,
        split: str | None = None,
        skip_unpaired: bool = False,
    ) -> None:
        root = require_path(path, "PixarDataset")
        if labels not in LABEL_DIRS:
            raise not_a_choice("PIXAR", "labels", labels, LABEL_DIRS)
        if not 0.0 <= float(mask_threshold) < 1.0:
            raise ConfigError(f"PIXAR mask_threshold={mask_threshold}; expected a fraction in [0, 1)")
        wanted = name_list(editors)
        wanted = None if wanted is None else [canonical_name(w) for w in wanted]  # as labels are read
        editor = None if editor is None else canonical_name(editor)
        folders = self._folders(root, editor, wanted, editor_from_type)
        self.root, self.path = root, str(root)
        self.labels, self.mask_threshold = labels, float(mask_threshold)
        self.include_real, self.full_synthetic = include_real, full_synthetic
        self.editor_from_type = editor_from_type
        self._entries: dict[str, _Entry] = {}
        self._files: list[Path] = []
        native: dict[str, list[str]] = {}
        missing: list[str] = []
        for folder, folder_editor in folders:
            self._add_folder(folder, folder_editor, native, missing)
        report_unpaired(str(root), missing, "tampered image(s) lack a mask, metadata or mapping entry",
                        skip_unpaired)
        if editor_from_type:
            found = sorted({e.editor for e in self._entries.values() if e.kind == "tampered"})
            names = wanted if wanted is not None else found
            dropped = [s for s, e in self._entries.items() if e.kind != "real" and e.editor not in names]
            if dropped:
                log.info("PIXAR %s: %d image(s) of editors not in %s left out", root, len(dropped), names)
            for sid in dropped:
                del self._entries[sid]
            native = {k: [i for i in v if i in self._entries] for k, v in native.items()}
        else:
            names = [e for _, e in folders if e is not None]
        super().__init__(name or folder_name(root), LabelSpace.from_editors(names) if names else BINARY)
        if not self._entries:
            raise DataError(f"PIXAR {root}: no samples")
        self._split_by(split, self._entries, lambda: native_splits(native, "the dataset's own split folders"))

    # -- building -------------------------------------------------------------
    @staticmethod
    def _folders(
        root: Path, editor: str | None, wanted: list[str] | None, from_type: bool
    ) -> list[tuple[Path, str | None]]:
        """(PIXAR folder, its editor or None) pairs under ``root``."""
        expected = (
            f"expected split folders (train/, validation/, test/) holding {', '.join(REQUIRED_DIRS)}, "
            f"soft_masks/, masks/ beside {MAPPING_FILE}, or one such folder per editor"
        )
        if not root.is_dir():
            raise DataError(f"PIXAR {root}: not a folder; {expected}")
        if _split_dirs(root):
            if wanted is not None and not from_type:
                raise ConfigError(
                    f"PIXAR {root} is a single test set: name its editor with editor=, not editors="
                )
            if editor is not None and from_type:
                raise ConfigError("PIXAR: editor= and editor_from_type=True exclude each other")
            return [(root, editor)]
        if editor is not None or from_type:
            raise ConfigError(
                f"PIXAR {root} holds one folder per editor: the editors are the folder names "
                f"(choose with editors=), so editor= and editor_from_type do not apply"
            )
        found: dict[str, Path] = {}
        for sub in subfolders(root):
            if not _split_dirs(sub):
                continue
            name = editor_from_folder(canonical_name(sub.name))  # a label: one name in either Unicode form
            if name == "full" and (wanted is None or "full" not in wanted):
                log.warning("PIXAR %s: %s aggregates the per-editor test sets; left out (open it "
                            "on its own with editor_from_type=True)", root, sub.name)
                continue
            if name in found:
                raise DataError(
                    f"PIXAR {root}: folders {found[name].name} and {sub.name} are both editor {name!r}"
                )
            found[name] = sub
        if not found:
            hint = " (this looks like a split folder: pass the folder holding it)" if (
                root / "tampered").is_dir() else ""
            raise DataError(f"PIXAR {root}: no PIXAR layout found{hint}; {expected}")
        names = chosen_names(wanted, sorted(found), lambda unknown: DataError(
            f"PIXAR {root} has no test set for editor(s) {', '.join(unknown) or '(none given)'}; "
            f"present: {', '.join(sorted(found))}"))
        return [(found[n], n) for n in names]

    def _add_folder(
        self, folder: Path, editor: str | None, native: dict[str, list[str]], missing: list[str]
    ) -> None:
        mapping_file = folder / MAPPING_FILE
        mapping = read_mapping(mapping_file)
        self._files.append(mapping_file)
        label_dir = LABEL_DIRS[self.labels]
        # val/ beside validation/: one split, whose two folders' files would be taken for one another's
        split_dirs = by_canonical_split(f"PIXAR {folder}", ((d.name, d) for d in _split_dirs(folder)))
        unnamed = set(mapping)  # entries whose tampered image no split folder holds: the copy is short of it
        for split, split_dir in split_dirs.items():
            absent = [d + "/" for d in (*REQUIRED_DIRS, label_dir) if not (split_dir / d).is_dir()]
            if absent:
                raise DataError(
                    f"PIXAR {split_dir}: missing {', '.join(absent)}; each split folder holds "
                    f"real/, full_synthetic/, tampered/, soft_masks/, masks/, metadata/"
                )
            ids = native.setdefault(split, [])
            masks = files_by_stem(split_dir / label_dir, image_files_in(split_dir / label_dir))
            metas = files_by_stem(split_dir / "metadata", files_in(split_dir / "metadata", (".json",)))
            tampered = ids_of(self.root, image_files_in(split_dir / "tampered"))
            if not tampered:  # an extraction cut short: the split would be its real images alone, unsaid
                raise DataError(f"PIXAR {split_dir}: tampered/ holds no image; the split would be its real images "
                                "alone")
            for sid, image in tampered.items():
                stem = canonical_name(image.stem)
                mask, meta = masks.get(f"{stem}_mask"), metas.get(f"{stem}_cls")
                info = mapping.get(canonical_name(image.name))
                unnamed.discard(canonical_name(image.name))
                lacks = [w for w, v in ((f"{label_dir}/{image.stem}_mask.png", mask),
                                        (f"metadata/{image.stem}_cls.json", meta),
                                        (f"{MAPPING_FILE} entry", info)) if v is None]
                if lacks:
                    missing.append(f"{sid} (no {', '.join(lacks)})")
                    continue
                assert mask is not None and meta is not None and info is not None
                kind = info.get("type")
                who = editor or UNKNOWN_EDITOR
                if self.editor_from_type:
                    if not kind:
                        raise DataError(
                            f"PIXAR {mapping_file}: entry {image.name!r} has no field 'type'; "
                            f"editor_from_type needs it (e.g. 'qwen_coco_val_addition')"
                        )
                    who = canonical_name(kind.split("_", 1)[0])
                bg = info.get("bg")
                base = bg if bg in ("real", "ai") else "unknown"
                self._entries[sid] = _Entry(image, "tampered", who, mask, meta, kind or "unknown", base)
                self._files += [image, mask, meta]
                ids.append(sid)
            pairs = {s: (self._entries[s].image, self._entries[s].mask) for s in ids}
            mask_once(split_dir / label_dir, pairs, lambda p: p.name)
            kinds = [("real", self.include_real), ("full_synthetic", self.full_synthetic)]
            for kind, wanted in kinds:
                if not wanted:
                    continue
                for sid, image in ids_of(self.root, image_files_in(split_dir / kind)).items():
                    self._entries[sid] = _Entry(image, kind, editor or UNKNOWN_EDITOR, edit_type=kind,
                                                base="real" if kind == "real" else "unknown")
                    self._files.append(image)
                    ids.append(sid)
        log_unused(f"PIXAR {mapping_file}", sorted(unnamed), "entry(ies) name a tampered image no split folder holds")

    # -- reading --------------------------------------------------------------
    def _load(self, sample_id: str) -> Sample:
        e = self._lookup(self._entries, sample_id)
        value = 0 if e.kind == "real" else 1 if self.label_space.is_binary else self.label_space.index(e.editor)
        image, label = read_labelled(e.image, e.mask, sample_id, value, full=True, threshold=self.mask_threshold)
        if e.kind == "real":
            return Sample(image, label, SampleMeta(sample_id, "real", source=self.name))
        prompt = read_metadata(e.metadata, sample_id)[1] if e.metadata is not None else ""
        turn = EditRecord(editor=e.editor, prompt=prompt, edit_type=e.edit_type)
        return Sample(image, label, SampleMeta(sample_id, e.base, (turn,), self.name))

    def classes(self, sample_id: str) -> list[str]:
        """The COCO class names of the tampered object(s) (metadata ``cls``); ``[]`` for
        real and fully synthetic images."""
        e = self._lookup(self._entries, sample_id)
        return read_metadata(e.metadata, sample_id)[0] if e.metadata is not None else []

    @classmethod
    def sniff(cls, path: str | os.PathLike) -> bool:
        """True for a folder (or a folder of folders) with ``<split>/tampered/`` and
        ``<split>/soft_masks/`` or ``<split>/masks/``, and ``mapping.json`` or a
        ``<split>/metadata/`` or ``<split>/soft_masks/`` (SID-Set's folders hold
        ``tampered/`` and ``masks/`` too, but neither of these)."""
        def is_pixar(p: Path) -> bool:
            splits = [s for s in _split_dirs(p) if any((s / d).is_dir() for d in LABEL_DIRS.values())]
            return bool(splits) and ((p / MAPPING_FILE).is_file() or any(
                (s / "metadata").is_dir() or (s / LABEL_DIRS["soft"]).is_dir() for s in splits))

        def holds_pixar(p: Path) -> bool:
            return p.is_dir() and (is_pixar(p) or any(is_pixar(s) for s in subfolders(p)))

        return sniff_quietly(holds_pixar, path, (OSError,))

    # -- identity -------------------------------------------------------------
    def _content_fingerprint(self) -> str:
        return combine(
            "pixar", fingerprint_files(self.root, sorted(set(self._files))),
            self.labels, self.mask_threshold, self.editor_from_type,
        )

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        kinds = ("real", "tampered", "full_synthetic")
        counts = {k: sum(e.kind == k for e in self._entries.values()) for k in kinds}
        d.update(
            repository=PIXAR_REPO,
            labels=self.labels,
            mask_threshold=self.mask_threshold,
            editors=list(self.label_space.editors) if not self.label_space.is_binary else [],
            editor_from_type=self.editor_from_type,
            samples=counts,
        )
        return d
