"""Dataset adapters, safe image/mask decoding, label maps, splits, metadata,
fingerprints, provenance.

See docs/datasets.md for the layouts each adapter reads.
"""

from diffzoo.harness.core.lazy import lazy_exports

# Each name is imported from its module on first use: importing one submodule (e.g. labelmaps)
# does not load every adapter and Pillow with it.
_EXPORTS = {
    "AUTHENTIC_PREFIX": ".authentic",
    "AuthenticFolder": ".authentic",
    "CANONICAL_SPLITS": ".splits",
    "DIFFSEG30K_EDITORS": ".labelmaps",
    "DIFFSEG30K_HUB_ID": ".hfsource",
    "DIFFSEG30K_LABELS": ".labelmaps",
    "DIFFSEG30K_LABELS_VERIFIED": ".labelmaps",
    "DIFFSEG30K_PAPER_NAMES": ".labelmaps",
    "DiffSeg30kDataset": ".adapters.diffseg30k",
    "JsonListDataset": ".adapters.generic",
    "LABEL_MAP_FILES": ".labelmaps",
    "LabelMap": ".labelmaps",
    "SplitDataset": ".base",
    "TpGtDataset": ".adapters.generic",
    "WithAuthentic": ".authentic",
    "canonical_split": ".splits",
    "check_mask_values": ".labelmaps",
    "fingerprint_files": ".fingerprint",
    "hash_split_id": ".splits",
    "label_map_sha256": ".labelmaps",
    "load_label_space": ".labelmaps",
    "pair_fingerprint": ".fingerprint",
    "provenance_of": ".provenance",
    "read_binary_mask": ".imageio",
    "read_image": ".imageio",
    "read_label_file": ".labelmaps",
    "read_mask": ".imageio",
    "read_metadata_file": ".metadata",
    "split_ids": ".splits",
}
__getattr__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
