"""Dataset adapters, safe image/mask decoding, label maps, splits, metadata,
fingerprints, provenance.

See docs/datasets.md for the layouts each adapter reads.
"""

from .authentic import AUTHENTIC_PREFIX, AuthenticFolder, WithAuthentic
from .base import SplitDataset
from .diffseg30k import DiffSeg30kDataset
from .fingerprint import fingerprint_files, pair_fingerprint
from .generic import JsonListDataset, TpGtDataset
from .hfsource import DIFFSEG30K_HUB_ID
from .imageio import read_binary_mask, read_image, read_mask
from .labelmaps import (
    DIFFSEG30K_EDITORS,
    DIFFSEG30K_LABELS,
    DIFFSEG30K_LABELS_VERIFIED,
    DIFFSEG30K_PAPER_NAMES,
    LABEL_MAP_FILES,
    LabelMap,
    check_mask_values,
    label_map_sha256,
    load_label_space,
    read_label_file,
)
from .metadata import read_metadata_file
from .provenance import provenance_of
from .splits import CANONICAL_SPLITS, canonical_split, hash_split_id, split_ids

__all__ = [
    "AUTHENTIC_PREFIX",
    "AuthenticFolder",
    "CANONICAL_SPLITS",
    "DIFFSEG30K_EDITORS",
    "DIFFSEG30K_HUB_ID",
    "DIFFSEG30K_LABELS",
    "DIFFSEG30K_LABELS_VERIFIED",
    "DIFFSEG30K_PAPER_NAMES",
    "DiffSeg30kDataset",
    "JsonListDataset",
    "LABEL_MAP_FILES",
    "LabelMap",
    "SplitDataset",
    "TpGtDataset",
    "WithAuthentic",
    "canonical_split",
    "check_mask_values",
    "fingerprint_files",
    "hash_split_id",
    "label_map_sha256",
    "pair_fingerprint",
    "load_label_space",
    "provenance_of",
    "read_binary_mask",
    "read_image",
    "read_label_file",
    "read_metadata_file",
    "read_mask",
    "split_ids",
]
