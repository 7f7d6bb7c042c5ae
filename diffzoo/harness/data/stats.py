"""Dataset statistics: what the DiffSeg30k paper's dataset section shows.

:func:`dataset_stats` reads every sample of the chosen splits once and
returns one JSON-ready dict (keys below, stable; ``STATS_VERSION`` moves when
a key's meaning does).  Nothing here prints; ``diffzoo data stats`` renders
the dict as tables and plots (:mod:`diffzoo.leaderboard.render.stats_plots`).

Counting rules (docs/datasets.md, "Dataset statistics"):

- an image counts once for each editor whose label value is in its mask
  (``images``), and, where the sample carries per-edit metadata, once for
  each editor named in its turns (``images_from_turns``; ``None`` when no
  sample of the dataset carries turns);
- turns come from metadata; an image with no edited pixel has 0 turns, an
  edited image without turn metadata counts as ``unknown``;
- the edited-area fraction of an editor in an image is its pixels over the
  image's pixels (ignore pixels, 255, count in the image but for no editor);
  ``overall`` is every editor's pixels together, over edited images only;
  an editor named only in metadata (not in the label map, e.g. the inpainter
  of a binary dataset) gets the edited fraction of each edited image whose
  turns name it;
- an image counts once for each edit type named in its turns (``edit_types``;
  ``none`` for an image without turns), so real / fully generated / locally
  edited images are counted where an adapter names them (OpenSDI, SID-Set);
- a sample that cannot be loaded (``CorruptSampleError``: a mask value
  outside the label map is kind ``mask-values``) is counted by kind in
  ``skipped``, never fatal, as in a run.
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from diffzoo.harness.core.errors import ConfigError, CorruptSampleError
from diffzoo.harness.core.progress import NullProgress, Progress
from diffzoo.harness.core.protocols import Dataset
from diffzoo.harness.core.types import IGNORE_INDEX, LabelSpace, Sample
from diffzoo.harness.data.splits import canonical_split

log = logging.getLogger(__name__)

STATS_VERSION = 1
AREA_BINS = 20
"""Histogram bins of the edited-area fraction: [0, 0.05), ..., [0.95, 1]."""
UNKNOWN = "unknown"
BASES = ("real", "ai", UNKNOWN)
OUTSIDE_MAP = "(outside the label map)"
NO_TURNS = "none"
"""The ``edit_types`` key of images without turns (authentic, or no metadata)."""


def distribution(values: Iterable[float]) -> dict[str, Any]:
    """``count``, ``mean``, ``median``, ``p10``, ``p90`` (linear-interpolated
    percentiles, numpy's default) and a ``histogram`` of :data:`AREA_BINS`
    counts over [0, 1]; the statistics are None for no values."""
    arr = np.asarray(list(values), dtype=np.float64)
    hist = np.histogram(arr, bins=AREA_BINS, range=(0.0, 1.0))[0]
    if arr.size == 0:
        stats: dict[str, Any] = dict.fromkeys(("mean", "median", "p10", "p90"))
    else:
        p10, median, p90 = np.percentile(arr, [10, 50, 90])
        stats = {"mean": float(arr.mean()), "median": float(median), "p10": float(p10), "p90": float(p90)}
    return {"count": int(arr.size), **stats, "histogram": [int(c) for c in hist]}


class StatsAccumulator:
    """Counts of samples added one at a time; :meth:`result` is the stats dict."""

    def __init__(self, label_space: LabelSpace) -> None:
        self.label_space = label_space
        self.value_pixels = np.zeros(256, dtype=np.int64)
        self.value_images = np.zeros(256, dtype=np.int64)
        self.areas: dict[int, list[float]] = defaultdict(list)  # label value -> fractions
        self.turn_areas: dict[str, list[float]] = defaultdict(list)  # editor named in turns only -> fractions
        self.overall: list[float] = []
        self.turn_editors: Counter[str] = Counter()
        self.edit_types: Counter[str] = Counter()
        self.turns: Counter[str] = Counter()
        self.base: Counter[str] = Counter(dict.fromkeys(BASES, 0))
        self.resolutions: Counter[tuple[int, int]] = Counter()
        self.with_turns = 0
        self.read = 0
        self.authentic = 0
        self.skipped: list[dict[str, str]] = []

    def add(self, sample: Sample) -> None:
        label = sample.label
        h, w = label.shape
        pixels = h * w
        counts = np.bincount(label.ravel(), minlength=256)
        present = counts > 0
        self.value_pixels += counts
        self.value_images += present
        editors = [int(v) for v in np.flatnonzero(present) if 0 < v < self.label_space.num_classes]
        for v in editors:
            self.areas[v].append(counts[v] / pixels)
        edited = int(counts[1:IGNORE_INDEX].sum())
        if edited:
            self.overall.append(edited / pixels)
        else:
            self.authentic += 1
        turns = sample.meta.turns
        if turns:
            self.with_turns += 1
            self.turns[str(len(turns))] += 1
            named = {t.editor for t in turns}
            self.turn_editors.update(named)
            self.edit_types.update({t.edit_type for t in turns})
            if edited:
                for name in named - set(self.label_space.names):
                    self.turn_areas[name].append(edited / pixels)
        else:
            self.turns["0" if not edited else UNKNOWN] += 1
            self.edit_types[NO_TURNS] += 1
        self.base[sample.meta.base or UNKNOWN] += 1
        self.resolutions[(w, h)] += 1
        self.read += 1

    def skip(self, exc: CorruptSampleError) -> None:
        log.info("skipping %s", exc)
        self.skipped.append({"id": exc.sample_id, "kind": exc.kind, "reason": exc.reason})

    def _value_name(self, value: int) -> str:
        if value == IGNORE_INDEX:
            return "ignore"
        names = self.label_space.names
        return names[value] if value < len(names) else OUTSIDE_MAP

    def result(self) -> dict[str, Any]:
        names = self.label_space.names
        known_turns = self.with_turns > 0
        editors: dict[str, dict[str, Any]] = {}
        for value, name in enumerate(names[1:], start=1):
            editors[name] = {"value": value, "images": int(len(self.areas[value])),
                             "images_from_turns": self.turn_editors[name] if known_turns else None}
        for name in sorted(set(self.turn_editors) - set(names)):  # named in metadata, not in the label map
            editors[name] = {"value": None, "images": 0, "images_from_turns": self.turn_editors[name]}
        widths = [w for w, _ in self.resolutions]
        heights = [h for _, h in self.resolutions]
        return {
            "authentic": self.authentic,
            "editors": editors,
            "turns": {
                "counts": {k: self.turns[k] for k in sorted(
                    {*self.turns, UNKNOWN}, key=lambda k: (1, 0) if k == UNKNOWN else (0, int(k)))},
                "with_metadata": self.with_turns,
            },
            "base": dict(self.base),
            "edit_types": dict(sorted(self.edit_types.items())),
            "edited_area": {
                "bin_edges": [i / AREA_BINS for i in range(AREA_BINS + 1)],
                "overall": distribution(self.overall),
                "editors": {**{name: distribution(self.areas[v]) for v, name in enumerate(names[1:], start=1)},
                            **{name: distribution(self.turn_areas[name])
                               for name in sorted(set(self.turn_editors) - set(names))}},
            },
            "resolutions": {
                "counts": {f"{w}x{h}": n for (w, h), n in sorted(self.resolutions.items(),
                                                                  key=lambda kv: (-kv[1], kv[0]))},
                "width": {"min": min(widths, default=None), "max": max(widths, default=None)},
                "height": {"min": min(heights, default=None), "max": max(heights, default=None)},
            },
            "label_values": {
                str(v): {"name": self._value_name(v), "in_label_map": v < len(names) or v == IGNORE_INDEX,
                         "pixels": int(self.value_pixels[v]), "images": int(self.value_images[v])}
                for v in np.flatnonzero(self.value_images).tolist()
            },
            "skipped": {
                "count": len(self.skipped),
                "by_kind": dict(Counter(s["kind"] for s in self.skipped).most_common()),
                "samples": self.skipped,
            },
        }


def stats_notes(stats: dict[str, Any]) -> list[str]:
    """Plain sentences on what the numbers cannot say (missing metadata, skips)."""
    notes = []
    turns = stats["turns"]
    if turns["counts"][UNKNOWN]:
        what = ("the dataset carries no per-edit metadata, so images per editor come from the masks only"
                if not turns["with_metadata"] else f"only {turns['with_metadata']} image(s) carry per-edit metadata")
        notes.append(f"turns: {turns['counts'][UNKNOWN]} edited image(s) have an unknown number of turns ({what})")
    unknown_base = stats["base"].get(UNKNOWN, 0)
    if unknown_base:
        notes.append(f"base: {unknown_base} image(s) have no real/AI base in their metadata (counted as unknown)")
    bad = stats["skipped"]["by_kind"].get("mask-values", 0)
    if bad:
        notes.append(f"{bad} sample(s) have mask values outside the label map and were skipped "
                     "(pass --labels FILE if the masks use another encoding)")
    if stats["skipped"]["count"] > bad:
        other = "other " if bad else ""  # "other" than those outside the label map, said just above
        notes.append(f"{stats['skipped']['count'] - bad} {other}sample(s) could not be read and were skipped")
    oriented = stats["dataset"].get("exif_orientation")
    if oriented:
        notes.append(f"{oriented} image file(s) carry an EXIF orientation tag: scored as stored, not as a viewer "
                     "(or OpenCV's imread) rotates them; a mask drawn on the rotated view is misaligned")
    if not stats["dataset"]["labels_verified"]:
        notes.append("the label map is not verified: editor names may be in the wrong order "
                     "(pass --labels FILE; see docs/datasets.md, Label maps)")
    return notes


def dataset_stats(dataset: Dataset, splits: Sequence[str] | None = None,
                  progress: Progress | None = None) -> dict[str, Any]:
    """Statistics of ``splits`` (default: all) of ``dataset``, reading each
    sample once (an id in two splits is read and counted once).  An unknown
    split is a ConfigError (``--split``), before any image is read."""
    chosen = list(dict.fromkeys(map(canonical_split, splits))) if splits else list(dataset.splits())  # val = validation
    unknown = [s for s in chosen if canonical_split(s) not in dataset.splits()]
    if unknown:
        raise ConfigError(f"--split: dataset {dataset.name} has no split {unknown[0]!r}; its splits: "
                          f"{', '.join(dataset.splits())}")
    split_sizes = {split: len(dataset.ids(split)) for split in chosen}
    ids = list(dict.fromkeys(sid for split in chosen for sid in dataset.ids(split)))
    acc = StatsAccumulator(dataset.label_space)
    with (progress or NullProgress()).task(f"reading {dataset.name}", total=len(ids)) as task:
        for sid in ids:
            try:
                acc.add(dataset.load(sid))
            except CorruptSampleError as exc:
                acc.skip(exc)
            task.advance()
    stats = {
        "stats_version": STATS_VERSION,
        "dataset": {
            "name": dataset.name,
            "path": str(getattr(dataset, "path", "") or ""),
            "fingerprint": dataset.fingerprint(),  # first: it counts the EXIF orientation tags
            "label_space": list(dataset.label_space.names),
            "labels_verified": bool(getattr(dataset, "labels_verified", True)),
            # how the adapter reads the stored mask values and what it takes them to mean (None: not sniffed)
            "mask_encoding": None if (enc := getattr(dataset, "mask_encoding", None)) is None
            else {**enc.to_dict(), "meaning": enc.describe(dataset.label_space)},
            "exif_orientation": getattr(dataset, "exif_orientation", None),
        },
        "splits": split_sizes,
        "images": len(ids),
        "read": acc.read,
        **acc.result(),
    }
    notice = dataset.notice  # e.g. mini's "numbers prove nothing about real editors"
    stats["notes"] = [*([notice] if notice else []), *stats_notes(stats)]
    return stats
