"""The DiffSeg30k adapter (arXiv 2511.19111; hub ``Chaos2629/Diffseg30k``).

Reads ``<id>.image.png`` + ``<id>.mask.png`` pairs from the hub's
``train.zip`` (lazily, no extraction), an extracted folder, or a ``datasets``
source (see :mod:`..sources` and :mod:`..hfsource`).

Optional files beside the data (the folder itself, or the zip's / parquet
file's folder), written by the demo dataset and ``diffzoo generate``;
DiffSeg30k itself ships none of them:

- ``labels.json``: ``{"names": ["background", ...], "verified": true}``, the
  label space when none is passed (then a label map file inside the download,
  then a ``ClassLabel`` feature, then the paper's order: :func:`resolve_label_map`);
- ``manifest.jsonl``: per-sample metadata (:meth:`SampleMeta.to_dict` lines);
  ``metadata=FILE`` replaces it with a sidecar (:mod:`..metadata`);
- ``splits.json``: ``{"train": [ids], "val": [ids]}``; ``split_file=FILE``
  wins over it; without either, the data's own splits, or a single split
  divided train/val 8:2 by a hash of each id (:func:`resolve_split_scheme`).

Mask values are checked against the label space sample by sample as samples
are loaded; nothing scans the whole dataset up front.  An image without a
mask (or a mask without an image) is an error at open time by default
(``skip_unpaired=True`` skips such ids with a warning instead): a silently
shrinking dataset would make results incomparable.
"""

from __future__ import annotations

import hashlib
import logging
import os
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from diffzoo.harness.core.errors import ConfigError, DataError
from diffzoo.harness.core.fsutil import TEXT_LIMIT, read_regular
from diffzoo.harness.core.types import BINARY, LabelSpace, Sample, SampleMeta
from diffzoo.harness.data.authentic import AUTHENTIC_PREFIX, AuthenticFolder
from diffzoo.harness.data.base import SplitDataset, folder_name, option_path
from diffzoo.harness.data.fingerprint import combine
from diffzoo.harness.data.hfsource import (
    DIFFSEG30K_HUB_ID,
    REQUIRED_COLUMNS,
    data_files,
    hf_columns,
    is_hub_id,
    row_layout,
)
from diffzoo.harness.data.imageio import edited_region, read_image, read_mask
from diffzoo.harness.data.labelmaps import (
    DEFAULT_SOURCE,
    DIFFSEG30K_LABELS,
    LabelMap,
    check_mask_values,
    default_diffseg30k_labels,
    names_a_file,
    resolve_label_map,
)
from diffzoo.harness.data.mask_encoding import MaskEncoding, sample_values, sniff
from diffzoo.harness.data.metadata import MANIFEST_FILE, carried_keys, read_manifest, read_metadata_file
from diffzoo.harness.data.sources import PAIR_RE, folder_has_pairs, inner_label_files, open_source, posix_names
from diffzoo.harness.data.splits import SPLITS_FILE, resolve_split_scheme
from diffzoo.harness.data.walk import subfolders

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)


class DiffSeg30kDataset(SplitDataset):
    """DiffSeg30k (or any data in its layout) as a :class:`Dataset`.

    ``label_space``: a LabelSpace, a label file, or ``"sd2,sdxl,..."``;
    default: ``labels.json`` beside the data, a label map file inside it, a
    ``ClassLabel`` feature, else the paper's editor order (UNVERIFIED, warned
    once).  ``extra_authentic``: a folder of authentic images added to
    ``train`` with all-zero masks (ids ``authentic/...``; the paper's 5k COCO
    images).  ``calib_fraction``: with the hash split, also carve a ``calib``
    split (for ``--thresholds calibrated``) from what would be train; val is
    unchanged.  ``split_file``: ids per split (JSON or ``id<TAB>split``),
    wins over ``splits.json`` and the data's own splits.  ``metadata``: a
    sidecar of base / editors per id (:mod:`..metadata`), replacing
    ``manifest.jsonl``.  ``name`` defaults to the data's folder (the folder
    given, or the one holding the zip / parquet file), or ``diffseg30k`` for
    the hub id.
    """

    def __init__(
        self,
        path: str | os.PathLike = DIFFSEG30K_HUB_ID,
        *,
        label_space: LabelSpace | str | os.PathLike | None = None,
        val_fraction: float = 0.2,
        calib_fraction: float = 0.0,
        split_seed: int = 0,
        split_file: str | os.PathLike | None = None,
        metadata: str | os.PathLike | None = None,
        extra_authentic: str | os.PathLike | None = None,
        name: str | None = None,
        skip_unpaired: bool = False,
    ) -> None:
        self._source = open_source(path, skip_unpaired)
        sidecars = self._source.sidecar_dir
        label_map, self.mask_encoding = self._label_map(label_space, sidecars)
        default_name = (folder_name(sidecars) if sidecars is not None else "") or "diffseg30k"
        super().__init__(name or default_name, label_map.space)
        if self.mask_encoding.binary:  # said once, where the run and `data stats` print the dataset
            self.notice = (f"{self.mask_encoding.describe(BINARY)}: {self.name} is read as a binary dataset "
                           "(class 'edited'); its semantic task (per-editor labels) is not available")
            log.info("%s", self.notice)
        self.labels_verified = label_map.verified
        self.label_source = label_map.source
        self.source_kind = self._source.kind
        self.path = self._source.location
        self._meta: dict[str, SampleMeta] = {}
        self._meta_source: str | None = None
        self._meta_hash: str | None = None
        self._read_metadata(sidecars, metadata)
        self._splits, self.split_info = resolve_split_scheme(
            self._source.native_splits(),
            sidecars / SPLITS_FILE if sidecars is not None else None,
            val_fraction,
            split_seed,
            calib_fraction,
            option_path(split_file, sidecars, "split_file") if split_file is not None else None,
        )
        if extra_authentic is not None:
            folder = AuthenticFolder(option_path(extra_authentic, sidecars, "extra_authentic"))
            # a DiffSeg30k sample's files (its edited image, its mask) are never an unedited photo to train on
            if samples := [i.removeprefix(AUTHENTIC_PREFIX) for i in folder.ids() if PAIR_RE.match(i.rsplit("/")[-1])]:
                raise DataError(f"extra_authentic={extra_authentic}: {len(samples)} of its images are named as a "
                                f"DiffSeg30k sample's image or mask (e.g. {samples[0]}), which would be trained on "
                                "as unedited photos; give a folder of authentic images only")
            self.add_authentic(folder)

    def _label_map(self, spec: Any, sidecars: Path | None) -> tuple[LabelMap, MaskEncoding]:
        """The label map and how the masks encode it (data/mask_encoding.py): masks holding only
        0 and 255 (or only 0 and 1, when no map was given or found) are binary masks."""
        class_label = getattr(self._source, "class_label", None)
        if isinstance(spec, (str, os.PathLike)) and names_a_file(spec, sidecars):
            spec = option_path(spec, sidecars, "--labels")
        found = resolve_label_map(spec, sidecars, lambda: inner_label_files(self._source), class_label)
        encoding = sniff(*sample_values(self._stored_mask, sorted(self._source.pairs)), vouched=found is not None,
                         where=self._source.location, classes=len(DIFFSEG30K_LABELS.names))
        if not encoding.binary:
            return found or LabelMap(default_diffseg30k_labels(), False, DEFAULT_SOURCE), encoding
        if found is not None and not found.space.is_binary:
            if found.source == "--labels":
                raise ConfigError(
                    f"--labels names the editors {', '.join(found.space.editors)}, but the masks of "
                    f"{self._source.location} are binary ({encoding.describe(found.space)}): they name no editor; "
                    "drop --labels to score them as binary masks")
            log.warning("%s names editors, but the masks are binary (%s): read as binary masks",
                        found.source, encoding.describe(found.space))
        return LabelMap(BINARY, True, f"binary masks ({encoding.kind})"), encoding

    def _stored_mask(self, sample_id: str) -> np.ndarray:
        """A mask as stored (before :meth:`MaskEncoding.remap`), for sniffing the encoding."""
        mask_src, mask_name = self._source.read_mask(sample_id)  # the mask alone: images stay unread
        return read_mask(mask_src, sample_id, name=mask_name)

    def _read_metadata(self, sidecars: Path | None, metadata: str | os.PathLike | None) -> None:
        """``metadata=FILE`` if given, else ``manifest.jsonl`` beside the data."""
        if metadata is not None:
            path = option_path(metadata, sidecars, "metadata")
            self._meta = read_metadata_file(path, self._source.pairs, self.label_space)
            self._meta_source = f"metadata={path.name}"
            if sidecars is not None and (sidecars / MANIFEST_FILE).is_file():
                log.info("metadata=%s given: %s beside the data is not read", path, MANIFEST_FILE)
        elif sidecars is not None and (sidecars / MANIFEST_FILE).is_file():
            path = sidecars / MANIFEST_FILE
            self._meta = read_manifest(path, self._source.pairs)
            self._meta_source = MANIFEST_FILE
        else:
            return
        self._meta_hash = hashlib.sha256(read_regular(path, TEXT_LIMIT)).hexdigest()

    @classmethod
    def sniff(cls, path: str | os.PathLike) -> bool:
        """True for a DiffSeg30k zip, folder, hub id, or parquet/arrow with image+mask.

        A ``.zip``, ``.parquet`` or ``.arrow`` file (or a folder's first such
        file) that cannot be read at all (empty, truncated, not that format) is
        claimed too, so that opening it raises an error saying what is wrong
        with the file instead of "no adapter recognises this layout"; not a
        folder that also holds a subfolder of no data file (a folder of
        datasets beside a stray file, which is named as a file of its own).  Rows in a
        layout another adapter reads (:data:`.hfsource.ROW_LAYOUTS`: OpenSDI,
        SID-Set) are left to it.
        """
        text = os.fspath(path)
        p = Path(text)
        if not p.exists():
            return is_hub_id(text)
        if p.is_file() and p.suffix.lower() == ".zip":
            try:
                with zipfile.ZipFile(p) as zf:
                    return any(PAIR_RE.match(n.rsplit("/", 1)[-1]) for n in posix_names(zf))
            except Exception:  # a broken zip: the constructor's open_zip says why
                return True
        try:
            if p.is_dir() and folder_has_pairs(p):
                return True
        except OSError:
            return False
        columns = hf_columns(p)
        if columns is None:  # an unreadable data file
            return p.is_file() or all(data_files(d) for d in subfolders(p))
        return set(REQUIRED_COLUMNS) <= columns and row_layout(columns) is None

    def _load(self, sample_id: str) -> Sample:
        self._lookup(self._source.pairs, sample_id)
        (image_src, image_name), (mask_src, mask_name) = self._source.read_pair(sample_id)
        image = read_image(image_src, sample_id, name=image_name)
        size = (image.shape[1], image.shape[0])
        mask = self.mask_encoding.remap(read_mask(mask_src, sample_id, name=mask_name, size=size), sample_id, mask_name)
        check_mask_values(mask, self.label_space, sample_id, mask_name)
        meta = self._meta.get(sample_id) or SampleMeta(sample_id, base="unknown")
        return Sample(image, edited_region(mask, sample_id, mask_name) if meta.turns else mask, meta)

    def _content_fingerprint(self) -> str:
        """Pairs + the sha256 of the metadata file read (``manifest.jsonl`` or ``metadata=FILE``)."""
        return combine("diffseg30k", self._source.fingerprint(), self._meta_hash)

    def _metadata_provenance(self) -> dict[str, Any]:
        # Extra authentic images always carry base (real) and turns (0): only the pairs decide.
        return {"source": self._meta_source, "keys": carried_keys(self._source.pairs, self._meta)}

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d["manifest"] = bool(self._meta)
        d["mask_encoding"] = self.mask_encoding.describe(self.label_space)
        d["extra_authentic_folder"] = str(self._authentic.root) if self._authentic else None
        return d
