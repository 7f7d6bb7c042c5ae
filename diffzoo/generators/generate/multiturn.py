"""Multi-turn editing with exact labels: the core shared by ``mini`` and ``diffzoo generate``.

:func:`edit_sample` runs a sample's turns in order, each editing the previous
turn's output; every turn's editor class overwrites the pixels it changed in
the label map (later turns win, background 0).  A turn may offer several
tries (other region, prompt, seed); the first that passes the quality check
is kept, and a sample whose turn fails every try is rejected.  An object
addition is two editor calls on one region (removal, then addition in
place); both count as the turn's edit.  Instruction editors ignore the
region and report the pixels they changed; the label follows what each
editor reports as changed, and their own rejection (``EditRejectedError``)
counts as a failed try.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from diffzoo.generators.generate.regions import Region
from diffzoo.harness.core.cards import family_of
from diffzoo.harness.core.errors import ConfigError
from diffzoo.harness.core.protocols import Generator
from diffzoo.harness.core.types import EditRecord, LabelSpace, SampleMeta
from diffzoo.harness.data.labelmaps import DIFFSEG30K_EDITORS, editor_label

log = logging.getLogger(__name__)

Check = Callable[[np.ndarray, np.ndarray, np.ndarray, str, str], "str | None"]


@dataclass(frozen=True)
class TurnPlan:
    """One try of one turn: editor (label class), edit type, region, ``(prompt, seed)`` per editor call."""

    editor: str
    edit_type: str
    region: Region
    steps: tuple[tuple[str, int], ...]
    attempt: int = 0

    @property
    def prompt(self) -> str:
        return self.steps[-1][0]

    def record(self) -> dict[str, Any]:
        """The manifest entry of this turn: an EditRecord plus area, object, try and earlier calls."""
        prompt, seed = self.steps[-1]
        row = EditRecord(self.editor, prompt, self.edit_type, self.region.bbox, int(seed)).to_dict()
        row.update(area=self.region.area, object=self.region.label, attempt=self.attempt)
        if len(self.steps) > 1:  # object addition: removal first
            row["before"] = [{"prompt": p, "seed": int(s)} for p, s in self.steps[:-1]]
        return row


TurnSource = Callable[[np.ndarray, Sequence[TurnPlan]], Iterable[TurnPlan]]
"""Tries of one turn, given the current image and the turns accepted so far."""


@dataclass
class Edited:
    """The outcome of :func:`edit_sample`; ``rejected`` is None when every turn passed."""

    image: np.ndarray
    label: np.ndarray
    turns: list[TurnPlan] = field(default_factory=list)
    rejected: str | None = None


def edit_sample(
    image: np.ndarray,
    turns: Sequence[TurnSource],
    editors: Mapping[str, Generator] | Callable[[str], Generator],
    label_space: LabelSpace,
    check: Check | None = None,
) -> Edited:
    """Run the turns in order on ``image``; each edits the previous turn's output.

    For every turn, tries are run until one passes ``check(before, after,
    mask, prompt, edit_type)`` (None = pass); the pixels its editor calls
    changed then take the editor's class in the label map, overwriting
    earlier turns.  When all tries of a turn fail, the sample is rejected.
    """
    from diffzoo.generators.editors.instruct import EditRejectedError

    get = editors if callable(editors) else editors.__getitem__
    label = np.zeros(image.shape[:2], dtype=np.uint8)
    done: list[TurnPlan] = []
    for number, source in enumerate(turns, start=1):
        reasons = []
        for plan in source(image, tuple(done)):
            edited, changed = image, np.zeros(image.shape[:2], dtype=bool)
            try:
                for prompt, seed in plan.steps:
                    result = get(plan.editor).edit(edited, plan.region.mask, prompt, int(seed))
                    edited, changed = result.image, changed | result.changed
            except EditRejectedError as exc:  # an instruction editor's own no-op / global-repaint check
                reasons.append(str(exc))
                continue
            reason = check(image, edited, plan.region.mask, plan.prompt, plan.edit_type) if check else None
            if reason is None:
                label[changed] = label_space.index(plan.editor)
                image = edited
                done.append(plan)
                break
            reasons.append(reason)
        else:
            kinds: dict[str, list[str]] = {}  # a kind of reason (its numbers aside) said once, as first met
            for said in reasons:
                kinds.setdefault(re.sub(r"\d+(\.\d+)?", "#", said), []).append(said)
            why = "; ".join(r[0] if len(r) == 1 else f"{r[0]} ({len(r)} tries)" if len(set(r)) == 1 else
                            f"{r[0]} ({len(r)} tries alike, the first shown)" for r in kinds.values()) or \
                "no region to edit (none within the area bounds)"
            return Edited(image, label, done, f"turn {number}: {why}")
    return Edited(image, label, done)


@contextlib.contextmanager
def torch_threads(n: int | None) -> Iterator[None]:
    """torch intra-op threads set to ``n`` inside the block (None: unchanged)."""
    import torch

    before = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def class_names(editors: Sequence[str]) -> tuple[str, ...]:
    """Label class of each editor: its family as a label map reads it back (``sdxl.tiny`` ->
    ``sdxl``, ``sd35.tiny`` -> ``sd3.5``: :func:`editor_label`), or the full name where two
    chosen editors share a family; two editors of one label name are a ConfigError."""
    # a name that spells a DiffSeg30k editor (sd3.5) is its own family: no card's family holds a dot
    families = [e if editor_label(e) in DIFFSEG30K_EDITORS else family_of(e) for e in editors]
    names = tuple(editor_label(f) if families.count(f) == 1 else e for f, e in zip(families, editors))
    for i, name in enumerate(names):
        if name in names[:i]:  # one class for two editors: the label map could not tell their pixels apart
            first = editors[names.index(name)]
            raise ConfigError(f"editors {first!r} and {editors[i]!r} have the same label name {name!r}; give one "
                              "another name")
    return names


def sample_row(sample_id: str, base: Any, turns: Sequence[TurnPlan]) -> dict[str, Any]:
    """The manifest row: :class:`SampleMeta` fields plus per-turn area/object and ``base_info``."""
    row = SampleMeta(sample_id, base=base.kind, source=base.source).to_dict()
    row["turns"] = [t.record() for t in turns]
    row["base_info"] = base.info
    return row
