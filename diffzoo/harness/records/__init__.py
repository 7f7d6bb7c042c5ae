"""Result records: the typed record model and its field readers, the JSON
document (identity, digests, metric-state files), what one case reports from
a metric state, and the recomputation that verifies a stored record."""
