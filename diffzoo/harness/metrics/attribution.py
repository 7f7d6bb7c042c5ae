"""Per-image Top-k attribution (which editor made the edit).

Definition (docs/metrics.md): rank editors by predicted pixel count; a hit if any
GT editor of that image is in the top k.  Denominator: edited images.

Details fixed by diffzoo:

- GT editors of an image are the classes 1..N present in its GT map.
- Ranked by predicted pixel count (over pixels whose GT is not 255), an
  editor with zero predicted pixels is never ranked: a prediction of pure
  background hits nothing.  Ties go to the lower class index.
- When the detector gives ``class_scores`` (length N+1 including background,
  or N), editors are ranked by those instead, ties to the lower class index.
"""

from __future__ import annotations

import numpy as np

from diffzoo.harness.core.errors import DataError


def editor_scores(where: str, class_scores: np.ndarray, num_classes: int) -> np.ndarray:
    """The editors' scores of a detector's ``class_scores``: one finite value per class
    (background first) or per editor, in a 1-D array; a DataError naming ``where`` otherwise."""
    n_editors = num_classes - 1
    scores = np.asarray(class_scores, dtype=np.float64)
    if scores.ndim != 1 or scores.size not in (num_classes, n_editors):
        raise DataError(f"{where}: class_scores has shape {scores.shape}; expected ({num_classes},) "
                        f"(background + editors) or ({n_editors},) (editors)")
    if not np.isfinite(scores).all():
        raise DataError(f"{where}: class_scores must be finite")
    return scores[1:] if scores.size == num_classes else scores


def editor_ranking(num_classes: int, pred_counts: np.ndarray | None,
                   scores: np.ndarray | None) -> np.ndarray:
    """Class indices (1..N) of ranked editors, best first, by the editors' ``scores``
    (:func:`editor_scores`) when given, else by their predicted pixel counts."""
    n_editors = num_classes - 1
    if scores is not None:
        eligible = np.ones(n_editors, dtype=bool)
    elif pred_counts is not None:
        scores = np.asarray(pred_counts, dtype=np.float64)[1:]
        eligible = scores > 0
    else:
        raise DataError("Top-k needs a predicted label map or class_scores")
    order = np.lexsort((np.arange(n_editors), -scores))  # score desc, index asc
    return order[eligible[order]] + 1


def topk_hits(ranking: np.ndarray, gt_classes: np.ndarray, ks: tuple[int, ...]) -> list[int]:
    """1 if any class of ``gt_classes`` is among the first k of ``ranking``, else 0, per k."""
    return [int(np.isin(ranking[:k], gt_classes).any()) for k in ks]
