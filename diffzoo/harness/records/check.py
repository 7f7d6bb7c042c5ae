"""Recompute a record's numbers from its own metric state.

Every metric of a record is recomputed from the per-image state saved with
it, by the same :func:`~.case_summary.summarize` and
:func:`~.case_summary.case_metrics` that wrote it: the headline metrics (and
a format-parity case's metrics against the compared state), ``counts.evaluated``,
the confusion matrix, every slice and the predictions digest.  A number that
disagrees is named (``metrics.mIoU is 0.9, recomputed from the state it is
0.6``).  Bootstrap CIs and baselines are not recomputed (the former costs a
bootstrap, the latter come from trivial predictors that are not stored):
their digests and a frozen version's content digest protect them.

Tolerance: JSON round-trips floats exactly, so on one machine recomputation
is bit-exact; :data:`REL_TOL` only absorbs summation-order differences
between numpy builds and CPUs (~1e-16 per operation), far below any edit a
person would make to a published number (tables show 0.1%).  Counts and
integers are compared exactly.
"""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from diffzoo.harness.core.errors import ConfigError, DiffzooError, RecordError
from diffzoo.harness.core.fsutil import parse_json
from diffzoo.harness.metrics import METRICS_VERSION, EvalState
from diffzoo.harness.records.binding import binding_of, binding_problems
from diffzoo.harness.records.case_summary import case_from_dict, case_metrics, summarize
from diffzoo.harness.records.document import ResultRecord, clean_json, read_state_bytes
from diffzoo.harness.records.fields import is_number
from diffzoo.harness.records.model import RECORDS_DIR, RecordBody, StateRef

REL_TOL = 1e-9
ABS_TOL = 1e-12


class StateSource:
    """Finds, checks (sha256) and parses the states records name: in-memory
    attachments first, then ``root/states/<sha256>.json`` under each root.
    The last few parsed states are kept (records of one pass share one)."""

    def __init__(self, roots: Iterable[Path] = (), attachments: dict[str, bytes] | None = None, keep: int = 4):
        self.roots = [Path(r) for r in roots]
        self.attachments = dict(attachments or {})
        self._cache: OrderedDict[str, EvalState] = OrderedDict()
        self._keep = keep

    def blob(self, ref: StateRef) -> bytes:
        """The state's bytes, checked against its sha256."""
        if ref.file in self.attachments:
            blob = self.attachments[ref.file]
            if hashlib.sha256(blob).hexdigest() != ref.sha256:
                raise RecordError(f"the state carried for {ref.file} does not have the sha256 the record names")
            return blob
        paths = [root / ref.file for root in self.roots]
        for root, path in zip(self.roots, paths, strict=True):
            if path.exists() or path.is_symlink():
                return read_state_bytes(path, ref.sha256, within=root)[0]
        where = ", ".join(str(p.parent) for p in paths) or "nowhere (no store given)"
        raise RecordError(f"state file {ref.file} that the record names is missing (looked in {where}); "
                          "its numbers cannot be checked: copy the store's states/ folder with its records/")

    def load(self, ref: StateRef) -> EvalState:
        if ref.sha256 in self._cache:
            self._cache.move_to_end(ref.sha256)
            return self._cache[ref.sha256]
        blob = self.blob(ref)
        try:
            state = EvalState.from_state_dict(parse_json(blob, f"state file {ref.file}"))
        except (DiffzooError, ValueError) as exc:  # ValueError: not JSON
            raise RecordError(f"state file {ref.file} is not a metric state this diffzoo reads: {exc}") from exc
        self._cache[ref.sha256] = state
        while len(self._cache) > self._keep:
            self._cache.popitem(last=False)
        return state


def record_roots(path: Path) -> list[Path]:
    """Where the states of the record file at ``path`` live: the store root
    for ``<store>/records/<id>.json``, and the file's own folder."""
    path = Path(path)
    return ([path.parent.parent] if path.parent.name == RECORDS_DIR else []) + [path.parent]


def same(a: Any, b: Any) -> bool:
    """Equal as record numbers: None and NaN alike, ints exactly, floats to REL_TOL."""
    a_none, b_none = (v is None or (isinstance(v, float) and math.isnan(v)) for v in (a, b))
    if a_none or b_none:
        return a_none and b_none
    numbers = [is_number(v) for v in (a, b)]
    if not all(numbers) or (isinstance(a, int) and isinstance(b, int)):
        return a == b
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL)


def _compare(where: str, stored: dict[str, Any], expected: dict[str, Any]) -> list[str]:
    out = []
    for name in sorted(set(stored) | set(expected), key=str):
        if name not in expected:
            out.append(f"field {where}.{name} is not a number this case computes from its state")
        elif name not in stored:
            out.append(f"field {where}.{name} is missing (recomputed from the state it is {expected[name]!r})")
        elif isinstance(expected[name], dict) and isinstance(stored[name], dict):
            out.extend(_compare(f"{where}.{name}", stored[name], expected[name]))
        elif not same(stored[name], expected[name]):
            out.append(f"field {where}.{name} is {stored[name]!r}, but recomputed from the state it is "
                       f"{expected[name]!r}")
    return out


def recomputed(case: dict[str, Any], label_space: tuple[str, ...], state: EvalState,
               compared: EvalState | None = None) -> dict[str, Any]:
    """What ``state`` gives for a record of ``case``: ``metrics``, ``slices``
    and ``confusion`` (the writer's code path; NaN as None)."""
    summary = summarize(state)
    metrics, _ = case_metrics(case_from_dict(case), summary, tuple(label_space), lambda name: compared)
    return clean_json({"metrics": metrics, "slices": summary.slices,
                   "confusion": state.confusion_matrix().tolist()})


def number_problems(body: RecordBody, state: EvalState, compared: EvalState | None) -> list[str]:
    """Every number of ``body`` that its state does not reproduce."""
    problems = []
    if body.metrics_version != METRICS_VERSION:
        return [f"field metrics_version is {body.metrics_version!r}; this diffzoo computes version "
                f"{METRICS_VERSION!r} and cannot recompute the record's numbers"]
    if list(state.label_space.names) != list(body.label_space):
        problems.append(f"field label_space is {list(body.label_space)}, the state's is "
                        f"{list(state.label_space.names)}")
    if body.counts.evaluated != state.num_images:
        problems.append(f"field counts.evaluated is {body.counts.evaluated}, but the state holds "
                        f"{state.num_images} images")
    if body.predictions_digest is not None and body.predictions_digest != state.predictions_digest():
        problems.append("field predictions_digest does not match the state's per-image predictions")
    if body.case.get("compare_to") and compared is None:
        problems.append("field compared_state_file is missing: a format-parity record needs the compared "
                        "case's state to recompute its metrics")
    try:
        expected = recomputed(body.case, body.label_space, state, compared)
    except (ConfigError, KeyError, TypeError) as exc:
        return problems + [f"field case cannot be read back as a case ({exc}); its numbers cannot be checked"]
    problems += _compare("metrics", body.metrics, expected["metrics"])
    if body.slices is not None:
        problems += _compare("slices", body.slices, expected["slices"])
    stored, wanted = body.confusion, expected["confusion"]
    if stored is not None and len(stored) != len(wanted):
        problems.append(f"field confusion is {len(stored)} x {len(stored)}, the state's is "
                        f"{len(wanted)} x {len(wanted)}")
    elif stored is not None and stored != wanted:
        i, j = next((i, j) for i, row in enumerate(stored) for j, v in enumerate(row) if v != wanted[i][j])
        problems.append(f"field confusion[{i}][{j}] is {stored[i][j]}, the state gives {wanted[i][j]}")
    return problems


def state_problems(record: ResultRecord, source: StateSource) -> list[str]:
    """Why ``record``'s numbers cannot be trusted against its state (empty: they match).

    A record without a state cannot be checked and says so; a missing state
    file or one whose sha256 differs is named."""
    body = record.body
    if body.state is None:
        return ["record has no metric state (state_file is null), so its numbers cannot be recomputed; "
                "re-run the evaluation with this diffzoo to get a verifiable record"]
    try:
        state = source.load(body.state)
        compared = source.load(body.compared_state) if body.compared_state else None
    except RecordError as exc:
        return [str(exc)]
    bound = binding_of(record.data)  # a state moved from another run (seed, checkpoint, data, ...) is refused
    problems = binding_problems(state.binding, bound)
    if compared is not None:  # the other case's pass, the same run
        problems += binding_problems(compared.binding, bound, "compared state", skip=("pass",))
    if problems:
        return [f"state file {body.state.file} belongs to another run: {p}" for p in problems]
    try:
        return number_problems(body, state, compared)
    except (DiffzooError, ValueError, KeyError, TypeError, IndexError) as exc:  # a state made to break the metrics
        return [f"the numbers of state file {body.state.file} cannot be recomputed: {exc}"]
