"""``diffzoo data label-pairs``: edit labels for folders of (original, edited) images."""

from __future__ import annotations

from pathlib import Path

import typer

from diffzoo.cli.console import console
from diffzoo.cli.progress import RichProgress
from diffzoo.generators.editors import label_rule as L
from diffzoo.harness.core.progress import counter_callback
from diffzoo.leaderboard.render.escape import term

SHOWN_UNMATCHED = 20


def label_pairs_cmd(
    orig_dir: Path = typer.Argument(..., help="Folder of original images."),
    gen_dir: Path = typer.Argument(..., help="Folder of edited images; paired with ORIG_DIR by file stem."),
    out: Path | None = typer.Option(None, "--out", help="Output folder (default: GEN_DIR-labels beside GEN_DIR)."),
    tau: float = typer.Option(L.DEFAULT_TAU, "--tau", help="Changed if mean |orig - gen| over RGB (in [0, 1]) > tau."),
    min_area: float = typer.Option(
        L.DEFAULT_MIN_AREA, "--min-area", help="Below: rejected as no-op. Fraction of compared pixels; > 1: pixels."
    ),
    max_area: float = typer.Option(
        L.DEFAULT_MAX_AREA, "--max-area", help="Above: rejected as global repaint. Fraction; > 1: pixels."
    ),
    editor: str | None = typer.Option(None, "--editor", help="Editor name: the label class (default: 'edited')."),
    frame: str = typer.Option(
        "gen", "--frame", help="gen: labels in the edited image's frame, its pixels untouched; orig: rectified image."
    ),
    cleanup: int = typer.Option(L.DEFAULT_CLEANUP, "--cleanup", help="Open+close square size in px; 0: off."),
    no_align: bool = typer.Option(False, "--no-align", help="Compare unaligned (no ORB + RANSAC homography)."),
    force: bool = typer.Option(
        False, "--force", help="Replace the labels an earlier label-pairs wrote into --out (never other files)."),
) -> None:
    """Label paired images by pixel difference; write a DiffSeg30k-layout folder diffzoo can open."""
    from diffzoo.generators.datasets import pairs  # Pillow and OpenCV: when the command runs

    out = out if out is not None else gen_dir.parent / f"{gen_dir.name}-labels"
    with counter_callback(RichProgress(console), "labelling pairs") as callback:
        report = pairs.label_pairs(
            orig_dir, gen_dir, out, tau=tau, min_area=min_area, max_area=max_area, cleanup=cleanup,
            align_images=not no_align, editor=editor, frame=frame, force=force, progress=callback,
        )  # fmt: skip
    counts = ", ".join(f"{k} {v}" for k, v in report.counts.items() if v or k == "ok")
    console.print(f"{sum(report.counts.values())} pair(s): {counts}")
    for what, names in (("only in ORIG_DIR", report.orig_only), ("only in GEN_DIR", report.gen_only)):
        if names:
            more = f" ... and {len(names) - SHOWN_UNMATCHED} more" if len(names) > SHOWN_UNMATCHED else ""
            console.print(f"unmatched, {what}: {len(names)}: {term(', '.join(names[:SHOWN_UNMATCHED]))}{more}")
    console.print(f"labels at {term(str(report.out))} (manifest.jsonl, {pairs.SUMMARY_FILE})")
