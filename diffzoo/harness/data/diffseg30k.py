"""The DiffSeg30k adapter (arXiv 2511.19111; hub ``Chaos2629/Diffseg30k``).

Reads ``<id>.image.png`` + ``<id>.mask.png`` pairs from the hub's
``train.zip`` (lazily, no extraction), an extracted folder, or a ``datasets``
source (see :mod:`.sources` and :mod:`.hfsource`).

Optional files beside the data (the folder itself, or the zip's / parquet
file's folder), written by the demo dataset and ``diffzoo generate``;
DiffSeg30k itself ships none of them:

- ``labels.json``: ``{"names": ["background", ...], "verified": true}``, the
  label space when none is passed;
- ``manifest.jsonl``: per-sample metadata (:meth:`SampleMeta.to_dict` lines);
- ``splits.json``: ``{"train": [ids], "val": [ids]}``; without it a source with
  a single split is divided train/val 8:2 by a hash of each id.

Mask values are checked against the label space sample by sample as samples
are loaded; nothing scans the whole dataset up front.  An image without a
mask (or a mask without an image) is an error at open time by default
(``skip_unpaired=True`` skips such ids with a warning instead): a silently
shrinking dataset would make results incomparable.
"""

from __future__ import annotations

import hashlib
import os
import zipfile
from pathlib import Path
from typing import Any

from ..types import LabelSpace, Sample, SampleMeta
from .authentic import AuthenticFolder
from .base import SplitDataset, require_path
from .fingerprint import combine
from .hfsource import DIFFSEG30K_HUB_ID, REQUIRED_COLUMNS, hf_columns, is_hub_id
from .imageio import read_image, read_mask
from .labelmaps import (
    check_mask_values,
    default_diffseg30k_labels,
    parse_label_spec,
    read_label_file,
)
from .manifest import LABELS_FILE, MANIFEST_FILE, read_manifest, restrict_manifest
from .sources import PAIR_RE, folder_has_pairs, open_source
from .splits import SPLITS_FILE, resolve_splits


class DiffSeg30kDataset(SplitDataset):
    """DiffSeg30k (or any data in its layout) as a :class:`Dataset`.

    ``label_space``: a LabelSpace, a JSON label file, or ``"sd2,sdxl,..."``;
    default: ``labels.json`` beside the data, else the paper's editor order
    (UNVERIFIED, warned once).  ``extra_authentic``: a folder of authentic
    images added to ``train`` with all-zero masks (ids ``authentic/...``).
    ``calib_fraction``: without ``splits.json``, also carve a ``calib`` split
    (for ``--thresholds calibrated``) from what would be train; val is unchanged.
    ``name`` defaults to the data's folder (the folder given, or the one
    holding the zip / parquet file), or ``diffseg30k`` for the hub id.
    """

    def __init__(
        self,
        path: str | os.PathLike = DIFFSEG30K_HUB_ID,
        *,
        label_space: LabelSpace | str | os.PathLike | None = None,
        val_fraction: float = 0.2,
        calib_fraction: float = 0.0,
        split_seed: int = 0,
        extra_authentic: str | os.PathLike | None = None,
        name: str | None = None,
        skip_unpaired: bool = False,
    ) -> None:
        require_path(path, "DiffSeg30k", exists=False)  # hub ids do not exist locally
        self._source = open_source(path, skip_unpaired)
        sidecars = self._source.sidecar_dir
        labels, verified = self._label_space(label_space, sidecars)
        default_name = sidecars.name if sidecars is not None and sidecars.name else "diffseg30k"
        super().__init__(name or default_name, labels)
        self.labels_verified = verified
        self.source_kind = self._source.kind
        self.path = self._source.location
        self._meta: dict[str, SampleMeta] = {}
        self._manifest_hash: str | None = None
        if sidecars is not None and (sidecars / MANIFEST_FILE).is_file():
            manifest_path = sidecars / MANIFEST_FILE
            self._meta = restrict_manifest(
                read_manifest(manifest_path), set(self._source.pairs), manifest_path
            )
            self._manifest_hash = hashlib.sha256(manifest_path.read_bytes()).hexdigest()
        self._splits = resolve_splits(
            self._source.native_splits(),
            sidecars / SPLITS_FILE if sidecars is not None else None,
            val_fraction,
            split_seed,
            calib_fraction,
        )
        if extra_authentic is not None:
            self.add_authentic(AuthenticFolder(extra_authentic))

    @staticmethod
    def _label_space(spec: Any, sidecars: Path | None) -> tuple[LabelSpace, bool]:
        parsed = parse_label_spec(spec)
        if parsed is None and sidecars is not None and (sidecars / LABELS_FILE).is_file():
            parsed = read_label_file(sidecars / LABELS_FILE)
        if parsed is None:
            return default_diffseg30k_labels(), False
        return parsed

    @classmethod
    def sniff(cls, path: str | os.PathLike) -> bool:
        """True for a DiffSeg30k zip, folder, hub id, or parquet/arrow with image+mask.

        A ``.zip``, ``.parquet`` or ``.arrow`` file (or a folder's first such
        file) that cannot be read at all (empty, truncated, not that format) is
        claimed too, so that opening it raises an error saying what is wrong
        with the file instead of "no adapter recognises this layout".
        """
        text = os.fspath(path)
        p = Path(text)
        if not p.exists():
            return is_hub_id(text)
        if p.is_file() and p.suffix.lower() == ".zip":
            try:
                with zipfile.ZipFile(p) as zf:
                    return any(PAIR_RE.match(n.rsplit("/", 1)[-1]) for n in zf.namelist())
            except Exception:  # a broken zip: the constructor's open_zip says why
                return True
        try:
            if p.is_dir() and folder_has_pairs(p):
                return True
        except OSError:
            return False
        columns = hf_columns(p)
        return columns is None or set(REQUIRED_COLUMNS) <= columns  # None: unreadable data file

    def _load(self, sample_id: str) -> Sample:
        if sample_id not in self._source.pairs:
            raise self._unknown(sample_id)
        (image_src, image_name), (mask_src, mask_name) = self._source.read_pair(sample_id)
        image = read_image(image_src, sample_id, name=image_name)
        size = (image.shape[1], image.shape[0])
        mask = read_mask(mask_src, sample_id, name=mask_name, size=size)
        check_mask_values(mask, self.label_space, sample_id, mask_name)
        meta = self._meta.get(sample_id) or SampleMeta(sample_id, base="unknown")
        return Sample(image, mask, meta)

    def _content_fingerprint(self) -> str:
        return combine("diffseg30k", self._source.fingerprint(), self._manifest_hash)

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d["manifest"] = bool(self._meta)
        return d
