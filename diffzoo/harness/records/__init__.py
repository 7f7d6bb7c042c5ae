"""Result records: the typed record model and its field readers, the JSON
document (identity, digests, metric-state files), what one case reports from
a metric state, and the recomputation that verifies a stored record."""

from diffzoo.harness.core.moved import moved_names

# Before issue 14 ``diffzoo.harness.records`` was one module; its names live in document.py now.
__getattr__ = moved_names(__name__, ".document", (
    "PACKAGES", "NOT_IDENTITY_CONFIG", "canonical", "clean_json", "git_hash", "environment", "identity",
    "record_id_of", "field_digests", "digest_problems", "content_digest", "record_problems", "store_lock",
    "state_blob", "write_state_file", "read_state_bytes", "ResultRecord",
))
