"""What a metric state is bound to, so that a state moved to another record is refused.

A record's numbers are recomputed from its state by ``leaderboard verify``; without
a binding, any state of the same case (another seed, another checkpoint) would
verify under a record rewritten to carry it.  Each state therefore carries the
identity of the run that made it (:func:`binding_of`: the model, the data, the
seed, the config and the pass), set when its first record is created, and verify
compares it with every record that names the state (:func:`binding_problems`).
It cannot prove the state itself was computed by diffzoo: a state edited by hand
with a matching binding verifies; re-running from the checkpoint does (see
docs/leaderboard.md).  The record's predictions digest is checked against the
state's rows, so it is bound through the state.

Takes JSON-clean dicts (a record's ``data``), and imports nothing of the records
package: document.py uses it.
"""

from __future__ import annotations

import json
from typing import Any

BINDING_CONFIG_EXCLUDED = ("device", "strict", "cache_key", "distortion_params", "bootstrap")
"""Config keys a metric state does not depend on: those outside a record's identity
(document.NOT_IDENTITY_CONFIG), the pass's parameters (its ``pass``) and the bootstrap."""


def made_by(data: dict[str, Any], config_excluded: tuple[str, ...]) -> dict[str, Any]:
    """What made a record's numbers, from its fields: the model (detector card, task, plugin,
    checkpoint sha256), the data (fingerprint, label map, split scheme), the seed and the config
    but ``config_excluded``.  The part of a record's identity that its metric state shares."""
    det, dataset = data.get("detector") or {}, data.get("dataset") or {}
    return {
        "detector": {k: det.get(k) for k in ("name", "card", "task", "pretrained", "plugin", "plugin_version",
                                             "checkpoint_sha256")},
        "dataset_fingerprint": dataset.get("fingerprint"),
        "label_map": (dataset.get("label_map") or {}).get("sha256"),
        "split": (dataset.get("split") or {}).get("id"),
        "seed": data.get("seed"),
        "config": {k: v for k, v in (data.get("config") or {}).items() if k not in config_excluded},
    }


def binding_of(data: dict[str, Any]) -> dict[str, Any]:
    """What a metric state is bound to (:meth:`EvalState.bind`), from a record's fields: what
    made it (:func:`made_by`) and the pass (split, distortion and its parameters) the state
    scored.  Cases reading one pass (a suite's binary and image cases, a pass whose input
    equals the undistorted one) share one state, so nothing case-specific is in it; the
    record's numbers are checked against the state separately."""
    case, config = data.get("case") or {}, data.get("config") or {}
    used = config.get("distortion_params") or {}
    baseline = isinstance(used, dict) and used.get("same_input_as") == "baseline"  # the clean pass's state
    return {**made_by(data, BINDING_CONFIG_EXCLUDED),
            "pass": {"split": case.get("split"), "distortion": "none" if baseline else case.get("distortion"),
                     "params": {} if baseline else used}}


def binding_problems(state_binding: dict[str, Any] | None, record_binding: dict[str, Any],
                     what: str = "state", skip: tuple[str, ...] = ()) -> list[str]:
    """Where a state's binding and a record's disagree, named part by part (empty: they agree,
    or the state predates binding)."""
    if state_binding is None:
        return []
    out = []
    for key in sorted(set(state_binding) | set(record_binding)):
        mine, theirs = state_binding.get(key), record_binding.get(key)
        if key in skip or mine == theirs:
            continue
        if isinstance(mine, dict) and isinstance(theirs, dict):
            parts = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
            out += [f"the {what} was made with {key}.{k} {_short(mine.get(k))}, the record names "
                    f"{_short(theirs.get(k))}" for k in parts]
        else:
            out.append(f"the {what} was made with {key} {_short(mine)}, the record names {_short(theirs)}")
    return out


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 80 else text[:77] + "..."
