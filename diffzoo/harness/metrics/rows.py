"""Per-image rows: the small per-image record that slices and bootstrap use.

One row per evaluated image: its C x C confusion counts, its per-class bF1
(NaN where skipped), the detector's image score (NaN if none), whether a
label map was predicted, its label (1 edited, 0 authentic, -1 unknown: no
pixel with a usable GT), its Top-k hits (-1 where not applicable), its
metadata (id, base, number of turns, editors, edit types) and a digest of
what the detector predicted for it (``""`` when not known), so that two
records claiming the same run can be compared prediction by prediction.

Numeric fields live in numpy arrays grown by doubling, so 30k images x 9
classes take ~20 MB and appending is amortised O(1).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from diffzoo.harness.core.errors import RecordError

_INITIAL_CAPACITY = 64
_TEXT_COLUMNS = {"ids": str, "bases": str, "editors": tuple, "edit_types": tuple, "digests": str}
"""The text columns, each with the type of its entries (editors and edit types: one name per turn)."""


class ImageRows:
    """Growable column store of per-image rows."""

    def __init__(self, num_classes: int, num_k: int):
        self.num_classes, self.num_k = num_classes, num_k
        self._specs: dict[str, tuple[tuple[int, ...], Any]] = {
            "conf": ((num_classes * num_classes,), np.int64),
            "bf1": ((num_classes - 1,), np.float64),
            "det_score": ((), np.float64),
            "has_pred": ((), np.bool_),
            "label": ((), np.int8),
            "topk": ((num_k,), np.int8),
            "n_turns": ((), np.int32),
        }
        self._arrays = {k: np.empty((0, *shape), dtype) for k, (shape, dtype) in self._specs.items()}
        self.n = 0
        self.ids: list[str] = []
        self.bases: list[str] = []
        self.editors: list[tuple[str, ...]] = []
        self.edit_types: list[tuple[str, ...]] = []
        self.digests: list[str] = []

    def __len__(self) -> int:
        return self.n

    def _reserve(self, extra: int) -> None:
        need = self.n + extra
        cap = len(self._arrays["label"])
        if need <= cap:
            return
        new_cap = max(need, 2 * cap, _INITIAL_CAPACITY)
        for key, (shape, dtype) in self._specs.items():
            grown = np.empty((new_cap, *shape), dtype)
            grown[: self.n] = self._arrays[key][: self.n]
            self._arrays[key] = grown

    def append(self, *, id: str, base: str, editors: tuple[str, ...], edit_types: tuple[str, ...],
               n_turns: int, conf: np.ndarray, bf1: np.ndarray, det_score: float,
               has_pred: bool, label: int, topk: list[int], digest: str = "") -> None:
        self._reserve(1)
        i = self.n
        a = self._arrays
        a["conf"][i] = np.asarray(conf).ravel()
        a["bf1"][i] = bf1
        a["det_score"][i] = det_score
        a["has_pred"][i] = has_pred
        a["label"][i] = label
        a["topk"][i] = topk
        a["n_turns"][i] = n_turns
        self.n += 1
        for name, value in zip(_TEXT_COLUMNS, (id, base, editors, edit_types, digest), strict=True):
            getattr(self, name).append(value)

    def extend(self, other: ImageRows) -> None:
        """Append all rows of ``other`` (same class count and k) after ours."""
        self._reserve(other.n)
        for key in self._specs:
            self._arrays[key][self.n : self.n + other.n] = other.array(key)
        self.n += other.n
        for name in _TEXT_COLUMNS:
            getattr(self, name).extend(getattr(other, name))

    def take(self, indices: np.ndarray) -> ImageRows:
        """A new store holding the rows at ``indices``, in that order."""
        out = ImageRows(self.num_classes, self.num_k)
        idx = np.asarray(indices, dtype=np.int64)
        out._reserve(idx.size)
        for key in self._specs:
            out._arrays[key][: idx.size] = self.array(key)[idx]
        out.n = int(idx.size)
        for name in _TEXT_COLUMNS:
            column = getattr(self, name)
            setattr(out, name, [column[i] for i in idx.tolist()])
        return out

    def array(self, key: str) -> np.ndarray:
        """The filled part of a numeric column (a view)."""
        return self._arrays[key][: self.n]

    def canonical_order(self) -> np.ndarray:
        """Row order sorted by image id (stable): the same for any shard/merge order."""
        return np.argsort(np.asarray(self.ids, dtype=str), kind="stable")

    # -- serialisation (JSON-able: lists of ints / floats / str / None) ---------

    def to_dict(self) -> dict[str, Any]:
        def column(key: str) -> list:
            x = self.array(key)
            if x.dtype.kind != "f":
                return x.tolist()
            out = x.astype(object)
            out[np.isnan(x)] = None  # strict JSON has no NaN
            return out.tolist()

        return {**{name: [list(v) if kind is tuple else v for v in getattr(self, name)]
                   for name, kind in _TEXT_COLUMNS.items()}, **{key: column(key) for key in self._specs}}

    @classmethod
    def from_dict(cls, d: dict[str, Any], num_classes: int, num_k: int) -> ImageRows:
        rows = cls(num_classes, num_k)
        try:
            n = len(d["ids"])
            rows._reserve(n)
            for key, (shape, dtype) in rows._specs.items():
                # numpy reads None as NaN for float columns
                arr = np.asarray(d[key], dtype=dtype).reshape((n, *shape))
                rows._arrays[key][:n] = arr
            rows.n = n
            for name, kind in _TEXT_COLUMNS.items():  # states written before digests have none
                setattr(rows, name, [kind(v) for v in (d.get(name, [""] * n) if name == "digests" else d[name])])
        except (KeyError, TypeError, ValueError, OverflowError) as exc:  # OverflowError: past a column's integer type
            raise RecordError(f"metric state: per-image rows are malformed ({exc})") from exc
        if any(len(getattr(rows, name)) != n for name in _TEXT_COLUMNS):
            raise RecordError("metric state: per-image rows have inconsistent lengths")
        return rows
