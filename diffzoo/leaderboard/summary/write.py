"""Writing a summary: ``summary.md`` and, per detector with distorted
results, its robustness curves as PNGs (computed by
:func:`diffzoo.leaderboard.robustness.robustness_series`)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from diffzoo.harness.core.fsutil import atomic_write_text
from diffzoo.leaderboard.render import plots
from diffzoo.leaderboard.robustness import robustness_series
from diffzoo.leaderboard.summary.build import Summary
from diffzoo.leaderboard.summary.model import RecordIndex
from diffzoo.leaderboard.summary.render import summary_markdown
from diffzoo.leaderboard.tables import slugify

log = logging.getLogger(__name__)

ROBUSTNESS_CURVES = (("binary", "mIoU", "binary mIoU"), ("semantic", "mIoU", "semantic mIoU"),
                     ("image", "img_Acc", "image-level Acc"))
"""(task, metric, label) of the robustness curves."""


def write_summary(summary: Summary, out_dir: Path, *, title: str,
                  notes: Sequence[str] = ()) -> dict[str, Path]:
    """Write ``out_dir/summary.md`` and ``out_dir/plots/<detector>-robustness-<metric>.png``
    (one per detector and robustness metric with distorted results) for a
    :func:`~.build.build_summary` result; returns relative path -> path of every file written."""
    out_dir = Path(out_dir)
    written = {"summary.md": atomic_write_text(out_dir / "summary.md",
                                               summary_markdown(summary, title=title, notes=notes))}
    used: set[str] = set()
    for group in summary.groups:
        suffix = f"-{group.dataset}-{group.fingerprint[:8]}" if len(summary.groups) > 1 else ""
        idx = RecordIndex(group.records, [])
        for det in idx.detectors("distortions"):
            recs = [r for r in idx.records("distortions") if r.body.row_name == det]
            for task, metric, label in ROBUSTNESS_CURVES:
                series, clean = robustness_series(recs, task, metric)
                if not any(y is not None for points in series.values() for _, y in points):
                    continue
                stem = slugify(f"{det}-robustness-{task}-{metric}{suffix}")
                name = stem
                while name in used:
                    name = f"{stem}-{len(used)}"
                used.add(name)
                path = plots.robustness_png(
                    series, out_dir / "plots" / f"{name}.png", xlabel="strength (1 = mildest setting)",
                    ylabel=label, title=f"{det}: {label} under distortions on {group.dataset}",
                    reference=clean, reference_label="clean", integer_x=True)
                written[f"plots/{name}.png"] = path
    log.info("wrote the summary and %d plot(s) to %s", len(written) - 1, out_dir)
    return written
