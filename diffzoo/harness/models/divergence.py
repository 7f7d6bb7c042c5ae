"""No diverged model is cached, loaded or scored, whoever wrote its ``fit``.

The shared trainer stops at the first non-finite loss; a plugin with its own
``fit`` reports its losses through the same ``progress(step, loss)`` callback
(docs/plugins.md), and the runner stops it there too
(:class:`LossWatch`).  Whatever trained a model, its weights pass
:func:`refuse_nonfinite` when they are saved (``save_checkpoint``), when the
runner caches them and when they are loaded: NaN or inf weights are never
written to the cache nor scored.
"""

from __future__ import annotations

import math
from typing import Any

from diffzoo.harness.core.errors import ModelError, name_some


def nonfinite(tensors: dict[str, Any]) -> list[str]:
    """The names of the floating-point tensors in ``tensors`` that hold NaN or inf."""
    import torch

    return [name for name, t in tensors.items()
            if torch.is_tensor(t) and t.is_floating_point() and not bool(torch.isfinite(t).all())]


def refuse_nonfinite(tensors: dict[str, Any], where: str) -> None:
    """ModelError naming the floating-point tensors of ``where`` that hold NaN or inf: such a
    model is never cached, loaded or scored, whoever trained it."""
    bad = nonfinite(tensors)
    if bad:
        raise ModelError(f"{where} holds NaN or inf weights ({name_some(bad)}): the training diverged; "
                         "such a model is never cached or scored (lower the learning rate and train again)")


class LossWatch:
    """Checks each loss a detector reports; the first that is not finite stops the training
    with a ModelError naming the detector, the step and the last finite loss."""

    def __init__(self, detector: str):
        self.detector = detector
        self.last: tuple[int, float] | None = None

    def check(self, step: int, loss: float, batch: list[str] | None = None) -> None:
        """``batch``: the ids of the samples of this step's batch (the shared trainer
        knows them), named in the error so that a bad sample can be found."""
        try:
            value = float(loss)
        except (TypeError, ValueError):
            raise ModelError(f"detector {self.detector!r} reported a loss that is not a number at step {step} "
                             f"({loss!r}); fit's progress(step, loss) takes a float") from None
        if math.isfinite(value):
            self.last = (step, value)
            return
        before = f"the last finite loss was {self.last[1]:.4g} at step {self.last[0]}" if self.last else \
            "no finite loss before it"
        if batch:
            before += f"; batch: {name_some(batch, 8)}"
        raise ModelError(f"detector {self.detector!r}: training diverged at step {step} (loss {value}; {before}); "
                         "nothing was cached or recorded (lower the learning rate and train again)")
