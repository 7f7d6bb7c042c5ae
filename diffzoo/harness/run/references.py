"""Reference detectors a suite compares against (``Suite.references``).

``diffzoo run --detector segformer --suite classification`` also runs
CNNSpot and UniversalFakeDetect on that suite, with the same dataset,
seed and overrides, so the report can place the segmenter beside them.
A reference of the detector's own family is not run twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from diffzoo.harness.core.cards import family_of
from diffzoo.harness.core.errors import UnknownNameError
from diffzoo.harness.core.plugins import get_registry
from diffzoo.harness.run.request import RunRequest
from diffzoo.harness.suites.model import Suite


def reference_requests(request: RunRequest, suites: list[Suite],
                       substitutes: Mapping[str, str] | None = None) -> list[RunRequest]:
    """One request per reference detector, over the suites that name it.

    Given checkpoints and released weights (``--weights``) belong to the main
    detector, so references train (or reuse their cache) and ``--no-train``
    applies to them as well.  A
    reference no installed plugin provides is left out (logged by the CLI).
    ``substitutes``: reference name -> the detector to run instead, which a
    dataset may declare (``mini`` runs ``universalfakedet.tiny`` for
    ``universalfakedet``; the records name the detector that ran).
    """
    registry = get_registry()
    own = request.detector_entry().family
    substitutes = substitutes or {}
    wanted: dict[str, list[str]] = {}
    for suite in suites:
        for ref in suite.references:
            if family_of(ref) == own:
                continue
            ref = substitutes.get(ref, ref)
            wanted.setdefault(ref, []).append(suite.name)
    out = []
    for ref, names in wanted.items():
        try:
            registry.get("detector", ref)
        except UnknownNameError:
            continue
        out.append(replace(request, detector=ref, suite=",".join(names), checkpoint=[], weights=None, holdout=[]))
    return out
