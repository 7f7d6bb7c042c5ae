"""Label spaces as data: the DiffSeg30k default, label files, mask value checks.

How DiffSeg30k's mask PNGs encode the eight editors is not documented
(shared/DATA.md: UNCONFIRMED), so the class order is never hard-wired: it is a
:class:`LabelSpace` that a user can pass (``--labels FILE`` or a comma list),
read from a ``labels.json`` beside the data, or, as a last resort, the paper's
editor order below, with a warning that the order is unverified.  Every mask
is checked against the label space it is read with, so a wrong guess fails
loudly instead of training on mislabelled classes.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import CorruptSampleError, DataError
from ..types import IGNORE_INDEX, LabelSpace

log = logging.getLogger(__name__)

DIFFSEG30K_EDITORS: tuple[str, ...] = (
    "sd2",
    "sd3.5",
    "sdxl",
    "flux1",
    "glide",
    "kolors",
    "hunyuandit1.1",
    "kandinsky2.2",
)
"""The eight editors in the order the DiffSeg30k paper lists them (arXiv 2511.19111)."""

DIFFSEG30K_PAPER_NAMES: dict[str, str] = {
    "sd2": "SD2",
    "sd3.5": "SD3.5",
    "sdxl": "SDXL",
    "flux1": "Flux.1",
    "glide": "Glide",
    "kolors": "Kolors",
    "hunyuandit1.1": "HunyuanDiT 1.1",
    "kandinsky2.2": "Kandinsky 2.2",
}
"""Short (label-space) name -> the name the paper uses."""

DIFFSEG30K_LABELS = LabelSpace.from_editors(DIFFSEG30K_EDITORS)
"""Default DiffSeg30k label space: background = 0, then the editors in paper order.

UNVERIFIED: the dataset does not document which mask value is which editor;
this order is the paper's listing order, a guess.  Pass your own label map if
you know the real encoding.
"""

DIFFSEG30K_LABELS_VERIFIED = False

_warned_default = False

LabelSpec = LabelSpace | str | os.PathLike | None


def default_diffseg30k_labels() -> LabelSpace:
    """The default DiffSeg30k label space; logs the 'unverified order' warning once."""
    global _warned_default
    if not _warned_default:
        _warned_default = True
        log.warning(
            "DiffSeg30k: using the default label map %s; the mask value -> editor order is "
            "the paper's listing order and is UNVERIFIED. Pass --labels FILE (JSON "
            '{"names": ["background", ...]}) if your masks use another encoding.',
            ",".join(DIFFSEG30K_LABELS.names),
        )
    return DIFFSEG30K_LABELS


def _from_json(data: Any, where: str) -> tuple[LabelSpace, bool]:
    if isinstance(data, list):
        names, verified = data, False
    elif isinstance(data, dict) and isinstance(data.get("names"), list):
        names, verified = data["names"], bool(data.get("verified", False))
    else:
        raise DataError(
            f'{where}: a label file holds {{"names": ["background", ...]}} or a JSON list '
            f"of class names"
        )
    if not all(isinstance(n, str) and n for n in names):
        raise DataError(f"{where}: class names must be non-empty strings, got {names}")
    return LabelSpace(tuple(names)), verified


def read_label_file(path: str | os.PathLike) -> tuple[LabelSpace, bool]:
    """Read ``{"names": [...], "verified": bool}`` (or a bare JSON list).

    Returns the label space and whether the file says its order is verified
    (default False).
    """
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(f"label file {p} does not exist") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"label file {p} is not readable JSON ({exc})") from None
    return _from_json(data, f"label file {p}")


def parse_label_spec(spec: LabelSpec) -> tuple[LabelSpace, bool] | None:
    """Like :func:`load_label_space`, also returning whether the order is verified.

    A label space given explicitly by the user (object or comma list) counts
    as verified: the user vouched for it.  ``None`` gives ``None``.
    """
    if spec is None:
        return None
    if isinstance(spec, LabelSpace):
        return spec, True
    text = os.fspath(spec)
    if isinstance(spec, os.PathLike) or text.endswith(".json") or Path(text).is_file():
        return read_label_file(text)
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise DataError(f"empty label specification {text!r}; give a JSON file or names")
    if names[0] != "background":
        names.insert(0, "background")
    return LabelSpace(tuple(names)), True


def load_label_space(spec: LabelSpace | str | os.PathLike) -> LabelSpace:
    """A label space from a LabelSpace, a JSON file path, or ``"sd2,sdxl,..."``.

    In the comma form ``background`` is prepended unless it is given first.
    """
    parsed = parse_label_spec(spec)
    if parsed is None:
        raise DataError("no label space given")
    return parsed[0]


def check_mask_values(
    mask: np.ndarray, label_space: LabelSpace, sample_id: str, where: str
) -> None:
    """Raise CorruptSampleError if ``mask`` holds a value outside ``label_space``.

    Value 255 (ignore) is always allowed.  ``where`` names the mask file.
    """
    counts = np.bincount(mask.ravel(), minlength=256)
    counts[IGNORE_INDEX] = 0
    bad = np.flatnonzero(counts[label_space.num_classes :]) + label_space.num_classes
    if bad.size == 0:
        return
    shown = ", ".join(label_space.names[:6]) + (", ..." if label_space.num_classes > 6 else "")
    values = ", ".join(str(v) for v in bad[:5]) + (" ..." if bad.size > 5 else "")
    noun = "value" if bad.size == 1 else "values"
    verb = "is" if bad.size == 1 else "are"
    raise CorruptSampleError(
        sample_id,
        f"{where}: mask {noun} {values} {verb} not in the label map "
        f"({label_space.num_classes} classes: {shown}); pass --labels FILE if your "
        f"masks use another encoding",
        "mask-values",
    )
