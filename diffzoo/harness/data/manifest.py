"""Per-sample metadata files (``manifest.jsonl``) beside a dataset.

DiffSeg30k itself ships no per-edit metadata; the demo dataset and
``diffzoo generate`` write one JSON object per line in
:meth:`SampleMeta.to_dict` form, so that suites can filter by editor, turn
count or real/AI base.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from diffzoo.harness.core.errors import DataError
from diffzoo.harness.core.types import SampleMeta

log = logging.getLogger(__name__)

MANIFEST_FILE = "manifest.jsonl"
LABELS_FILE = "labels.json"


def read_manifest(path: Path) -> dict[str, SampleMeta]:
    """Read ``manifest.jsonl``: id -> SampleMeta.  Blank lines are skipped."""
    out: dict[str, SampleMeta] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"manifest {path} is not readable ({exc})") from None
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            meta = SampleMeta.from_dict(json.loads(line))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise DataError(
                f"manifest {path}, line {lineno}: not a sample record "
                f'({type(exc).__name__}: {exc}); expected {{"id", "base", "turns", "source"}}'
            ) from None
        if meta.id in out:
            raise DataError(f"manifest {path}, line {lineno}: id {meta.id} appears twice")
        out[meta.id] = meta
    return out


def restrict_manifest(
    manifest: dict[str, SampleMeta], ids: set[str], path: Path
) -> dict[str, SampleMeta]:
    """Drop manifest rows whose sample is not in the data (logged, not an error)."""
    extra = [k for k in manifest if k not in ids]
    if extra:
        log.info(
            "manifest %s: %d record(s) have no sample in the data (e.g. %s); ignored",
            path,
            len(extra),
            ", ".join(extra[:3]),
        )
    return {k: v for k, v in manifest.items() if k in ids}
