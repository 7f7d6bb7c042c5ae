"""What a dataset's numbers were made under: label map, split, per-sample metadata.

Records and tables carry this so that rows made under different label maps
or splits are never ranked as if comparable (docs/datasets.md, "Provenance").
The shape, for every dataset::

    {"label_map": {"names": [...], "sha256": <64 hex>, "source": str, "verified": bool},
     "split": {"id": str, "source": str},
     "metadata": {"source": str | None, "keys": [...]}}
"""

from __future__ import annotations

from typing import Any

from diffzoo.harness.core.protocols import Dataset
from diffzoo.harness.data.authentic import WithAuthentic
from diffzoo.harness.data.base import folder_name
from diffzoo.harness.data.labelmaps import LabelMap
from diffzoo.harness.data.splits import own_splits, with_extra_authentic


def provenance_of(dataset: Dataset) -> dict[str, Any]:
    """The provenance of any dataset.

    A dataset with a ``provenance()`` method (every :class:`SplitDataset`)
    gives its own; a :class:`WithAuthentic` view gives its base's plus the
    extra images; any other (a plugin's) gets its ``label_space.names`` with
    source ``"dataset"`` (verified unless it says ``labels_verified = False``),
    split id ``"dataset"`` and no metadata.
    """
    if isinstance(dataset, WithAuthentic):
        out = provenance_of(dataset.base)
        return {**out, "split": with_extra_authentic(out["split"], dataset.split, len(dataset.extra.ids()),
                                                     folder_name(dataset.extra.root))}
    method = getattr(dataset, "provenance", None)
    if callable(method):
        return method()
    verified = bool(getattr(dataset, "labels_verified", True))
    return {
        "label_map": LabelMap(dataset.label_space, verified, "dataset").provenance(),
        "split": own_splits(type(dataset).__name__),
        "metadata": {"source": None, "keys": []},
    }
