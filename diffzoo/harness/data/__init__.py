"""Dataset adapters, safe image/mask decoding, label maps, splits, metadata,
fingerprints, provenance.

See docs/datasets.md for the layouts each adapter reads.
"""

from diffzoo.harness.data.authentic import AUTHENTIC_PREFIX, AuthenticFolder, WithAuthentic
from diffzoo.harness.data.base import SplitDataset
from diffzoo.harness.data.diffseg30k import DiffSeg30kDataset
from diffzoo.harness.data.fingerprint import fingerprint_files, pair_fingerprint
from diffzoo.harness.data.generic import JsonListDataset, TpGtDataset
from diffzoo.harness.data.hfsource import DIFFSEG30K_HUB_ID
from diffzoo.harness.data.imageio import read_binary_mask, read_image, read_mask
from diffzoo.harness.data.labelmaps import (
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
from diffzoo.harness.data.metadata import read_metadata_file
from diffzoo.harness.data.provenance import provenance_of
from diffzoo.harness.data.splits import CANONICAL_SPLITS, canonical_split, hash_split_id, split_ids

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
