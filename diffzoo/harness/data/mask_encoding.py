"""How a dataset's masks encode their classes, read off the masks themselves.

diffzoo reads a mask pixel as an index into the label map, with 255 meaning
"ignore" (docs/metrics.md).  Many copies and loaders of DiffSeg30k store binary
masks instead: 0 unedited, 255 edited (``mean(RGB) > 127`` binarisation), or
0 and 1.  Read by the class-index rule, a 0/255 mask is all background and
ignore: a split of them has no edited pixel, training sees no label and the
binary numbers come out zero or undefined, with no warning.  So an adapter
samples some masks when it opens the data (:func:`sniff`):

- 0 and 255, nothing else: **binary**, 255 = edited, whatever label map
  was found (its editor order cannot apply: the masks name no editor); a
  ``--labels`` with editors is refused;
- 0 and 1, nothing else, under a label map nobody vouched for (no
  ``--labels``, no label file in the data): **binary**, 1 = edited; with a
  vouched map, 1 is that map's first editor;
- 0, 1 and 255 under an unvouched map: refused (0/1 and 0/255 masks mixed, or
  class indices with ignore: ``--labels`` says which);
- 0 and 255 with values the unvouched map has no class for (254, 128...): refused
  (0/255 masks resized with interpolation or once saved as JPEG: read as class
  indices, their clean masks' edits would be ignore);
- anything else: class indices, as the label map says.

A binary dataset has the label space (background, edited); its semantic
task (per-editor labels) is refused.  ``diffzoo data info`` and ``data
stats`` say what was found and how it is read.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from diffzoo.harness.core.errors import CorruptSampleError, DataError
from diffzoo.harness.core.types import IGNORE_INDEX, LabelSpace

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

CLASS_INDEX, BINARY_255, BINARY_1 = "class-index", "binary-255", "binary-1"
WANTED = 8
"""Masks with an edited (non-zero) pixel a sniff looks for ..."""
MAX_READ = 32
"""... reading at most this many masks (never an image), spread over the sorted ids: opening
DiffSeg30k's 21 GB zip reads about a megabyte for it."""


@dataclass(frozen=True)
class MaskEncoding:
    """What the sampled masks held (``values``, from ``read`` masks) and how they are read."""

    kind: str = CLASS_INDEX
    values: tuple[int, ...] = ()
    read: int = 0

    @property
    def binary(self) -> bool:
        return self.kind != CLASS_INDEX

    def remap(self, mask: np.ndarray, sample_id: str, where: str) -> np.ndarray:
        """A stored mask (the file ``where``) as class indices: for 0/255 masks, 255 (edited) -> 1.  A
        binary mask holding a value other than its two is sample ``sample_id`` skipped (``mask-values``):
        a 1 in a 0/255 mask (JPEG or interpolation noise) is no edited pixel, a 255 in a 0/1 one no ignore."""
        import numpy as np

        if not self.binary:
            return mask
        allowed = (0, 255) if self.kind == BINARY_255 else (0, 1)
        if bad := [int(v) for v in np.flatnonzero(np.bincount(mask.ravel(), minlength=256)) if v not in allowed]:
            raise CorruptSampleError(sample_id, f"{where}: mask values {', '.join(map(str, bad[:5]))} are neither of "
                                     f"{allowed[0]} (unedited) and {allowed[1]} (edited)", "mask-values")
        if self.kind != BINARY_255:
            return mask
        out = mask.copy()
        out[mask == IGNORE_INDEX] = 1
        return out

    def describe(self, label_space: LabelSpace) -> str:
        """One line: the values found and what diffzoo takes each to mean."""
        found = f"values {', '.join(map(str, self.values)) or 'none'} in {self.read} mask(s) read"
        if self.binary:
            return f"binary masks: 0 unedited, {255 if self.kind == BINARY_255 else 1} edited ({found})"
        names = ", ".join(f"{i} {n}" for i, n in enumerate(label_space.names))
        return f"class indices: {names}; 255 ignore ({found})"

    def to_dict(self) -> dict:
        return {"kind": self.kind, "values": list(self.values), "masks_read": self.read}


def sample_values(read_mask: Callable[[str], np.ndarray], ids: Sequence[str]) -> tuple[set[int], int]:
    """The values of masks spread over ``ids`` (until :data:`WANTED` masks with a non-zero
    pixel were seen, at most :data:`MAX_READ` read) and how many were read; unreadable
    masks are passed over (loading them says why)."""
    import numpy as np

    if not ids:
        return set(), 0
    values: set[int] = set()
    read = edited = 0
    for sid in spread(ids, MAX_READ):
        try:
            mask = read_mask(sid)
        except CorruptSampleError:
            continue
        found = np.flatnonzero(np.bincount(mask.ravel(), minlength=256))
        values.update(int(v) for v in found)
        read += 1
        edited += bool((found > 0).any())
        if edited >= WANTED:
            break
    return values, read


def spread(ids: Sequence[str], n: int) -> list[str]:
    """Up to ``n`` of ``ids``, evenly spaced, in an order that covers the whole list early
    (first, middle, quarters, eighths, ...: van der Corput), so that a sniff stopping early
    has still seen every part of it (a split stored in one block, say)."""
    k = min(n, len(ids))
    picks = [round(i * (len(ids) - 1) / max(k - 1, 1)) for i in range(k)]
    bits = max(1, (k - 1).bit_length())
    order = [int(format(i, f"0{bits}b")[::-1], 2) for i in range(1 << bits)]  # 0, half, quarters, ...
    return [ids[picks[j]] for j in order if j < k]


def sniff(values: set[int], read: int, vouched: bool, where: object, classes: int = 0) -> MaskEncoding:
    """The encoding of masks holding ``values`` (see the module doc); ``vouched``: the
    label map was given by the user or found in the data, else it is one of ``classes`` names.
    Under an unvouched map, 0, 1 and 255 and nothing else, or 0 and 255 with values past its
    classes, are a DataError naming ``where``: read as class indices, the 0/255 masks' edits
    would be ignore, never scored."""
    shown = tuple(sorted(values))
    if values == {0, IGNORE_INDEX}:  # (all 255 alone is no evidence: it reads as ignore, an error)
        return MaskEncoding(BINARY_255, shown, read)
    if not vouched and values == {0, 1, IGNORE_INDEX}:
        raise DataError(f"{where}: the {read} mask(s) read hold 0, 1 and 255 and no label map says what they mean: "
                        "binary masks of 0/1 and of 0/255 mixed (re-save them all as 0/255), or class indices with "
                        "255 = ignore (pass --labels FILE)")
    if not vouched and {0, IGNORE_INDEX} <= values and (odd := [v for v in shown if classes <= v < IGNORE_INDEX]):
        raise DataError(f"{where}: the {read} mask(s) read hold 0 and 255 and also {', '.join(map(str, odd[:5]))}, "
                        f"which no class of the {classes}-class default label map has: 0/255 binary masks resized "
                        "with interpolation or once saved as JPEG? Read as class indices, 255 would be ignore and "
                        "their edits never scored; re-save the masks with 0 and 255 only (or, for class indices with "
                        "255 = ignore, pass --labels FILE)")
    return MaskEncoding(BINARY_1 if not vouched and values == {0, 1} else CLASS_INDEX, shown, read)


ALMOST_ALL = 0.99
"""A split (or the first training batches) whose label pixels are at least this share
'ignore' has nothing to score or learn: an error, not a row of zeros."""


def all_ignore_error(dataset: str, what: str, ignored: int, pixels: int) -> DataError | None:
    """The error for ``what`` of ``dataset`` (a split, training batches) when (almost) all
    its ``pixels`` label pixels are 255; None otherwise."""
    if pixels == 0 or ignored < ALMOST_ALL * pixels:
        return None
    return DataError(
        f"dataset {dataset}, {what}: {ignored / pixels:.1%} of {pixels} label pixels are 255, diffzoo's "
        "'ignore' value, so there is nothing to score or learn; masks that mark edited pixels with 255 are "
        "binary masks: give them 0 and 255 only (read as binary), or pass --labels for a class-index encoding"
    )
