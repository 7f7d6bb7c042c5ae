"""Format parity: does a detector's image-level verdict move when every image,
authentic and edited alike, is re-encoded?

A detector that learnt "PNG means edited, JPEG means authentic" (DiffSeg30k's
edited images are PNGs; many authentic sources are JPEGs) flips its verdicts
under a re-encoding that changes nothing a person would see.  Computed from
the per-image verdicts of two evaluations of the same images (the native
files and a re-encoded copy), matched by image id:

- verdict_flip_rate: fraction of images whose verdict differs;
- flip_rate_authentic / flip_rate_edited: the same among authentic / edited images;
- delta_img_Acc: image accuracy re-encoded minus native, on the shared images;
- format_shortcut: 1.0 when verdict_flip_rate > tolerance, else 0.0.
"""

from __future__ import annotations

import math

from diffzoo.harness.core.errors import DataError
from diffzoo.harness.metrics.state import EvalState


def parity_metrics(native: EvalState, reencoded: EvalState, tolerance: float) -> dict[str, float]:
    """The format-parity metrics of ``reencoded`` against ``native`` (see module doc)."""
    a, b = native.verdicts(), reencoded.verdicts()
    shared = sorted(set(a) & set(b))
    if not shared:
        raise DataError("format parity: the two evaluations share no image with a verdict")
    flips: dict[bool, list[bool]] = {True: [], False: []}  # edited? -> moved per image
    correct_a = correct_b = 0
    for sid in shared:
        (label, va), (_, vb) = a[sid], b[sid]
        flips[bool(label)].append(va != vb)
        correct_a += va == bool(label)
        correct_b += vb == bool(label)

    def rate(values: list[bool]) -> float:
        return sum(values) / len(values) if values else math.nan

    moved = rate(flips[True] + flips[False])
    return {
        "verdict_flip_rate": moved,
        "flip_rate_authentic": rate(flips[False]),
        "flip_rate_edited": rate(flips[True]),
        "delta_img_Acc": (correct_b - correct_a) / len(shared),
        "format_shortcut": float(moved > tolerance),
    }
