"""EvalState: the streaming, mergeable state of one evaluation.

``update`` is called once per evaluated image.  The state holds one dataset
pixel-AUC histogram pair (``auc_bins`` floats each) and one small row per
image (see :mod:`.rows`); dataset confusion matrices are sums of the rows.
``merge`` concatenates rows and adds histograms, and every result is computed
from the rows in canonical order (sorted by image id), so merging shards
gives exactly the numbers of a single pass, in any shard order.

Definitions of every metric are in docs/metrics.md and in the docstrings of
:mod:`.confusion`, :mod:`.boundaries`, :mod:`.pixel_auc`, :mod:`.image_level`,
:mod:`.attribution` and :mod:`.aggregate`.

Conventions fixed here:

- task ``binary``: classes are (background, edited) whatever ``label_space``
  is (``state.label_space`` is then ``BINARY``); ``gt`` and ``pred`` hold 0/1
  (``gt`` also 255).
- An image is edited if its GT has a pixel in 1..N, authentic if it has
  pixels and all are 0, and unknown (counted in ``num_images`` only) if every
  GT pixel is 255.
- The predicted edited-area fraction is taken over the pixels whose GT is
  not 255.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import math
from numbers import Real
from typing import Any, cast

import numpy as np

from diffzoo.harness.core.errors import ConfigError, DataError, RecordError
from diffzoo.harness.core.types import BINARY, LabelSpace, SampleMeta, StateKey
from diffzoo.harness.metrics.aggregate import Aggregator, MetricConfig
from diffzoo.harness.metrics.attribution import editor_ranking, editor_scores, topk_hits
from diffzoo.harness.metrics.bootstrap import bootstrap_ci
from diffzoo.harness.metrics.boundaries import bf1_of_counts
from diffzoo.harness.metrics.catalog import AREA_THRESHOLD, SCORE_THRESHOLD
from diffzoo.harness.metrics.confusion import check_label_map
from diffzoo.harness.metrics.pixel_auc import best_f1, bin_index, check_prob_map, histogram_auc
from diffzoo.harness.metrics.reduce import DIGEST_BINS, Reduced, reduce_numpy  # noqa: F401  (DIGEST_BINS: the digest's)
from diffzoo.harness.metrics.rows import ImageRows
from diffzoo.harness.metrics.slices import slice_masks
from diffzoo.harness.metrics.verdict import DETECTOR, EDITED_AREA, SOURCES

logger = logging.getLogger(__name__)

METRICS_VERSION = "2"
"""Bumped whenever a change could move a number (see docs/metrics.md)."""

EVAL_TASKS: tuple[str, ...] = (StateKey.BINARY, StateKey.SEMANTIC)



def prediction_digest(pred: np.ndarray | None, edited_prob: np.ndarray | None,
                      image_score: float | None, binned: np.ndarray | None = None) -> str:
    """A 16-hex-digit hash of what a detector predicted for one image: the
    label map's bytes and shape, the edited probability's pixel-AUC bin
    (:data:`DIGEST_BINS`, so float noise between machines does not change
    it) and the image score to 6 decimals.  ``binned``: those bins as uint16,
    when they were computed already (:attr:`.reduce.Reduced.bins16`)."""
    h = hashlib.sha256()
    if binned is None and edited_prob is not None:
        binned = bin_index(edited_prob, DIGEST_BINS).astype(np.uint16)
    for part in (pred, binned):
        if part is None:
            h.update(b"-")
        else:
            arr = np.ascontiguousarray(part)
            h.update(f"{arr.shape}{arr.dtype.str}".encode())
            h.update(arr.tobytes())
    h.update(b"-" if image_score is None else f"{float(image_score):.6f}".encode())
    return h.hexdigest()[:16]


class EvalState:
    """Streaming metric state of one evaluation (see docs/metrics.md).

    ``task`` is ``binary`` or ``semantic``; ``area_threshold`` is the
    image-level rule (edited if the predicted edited area > 1% of the image),
    ``score_threshold`` the rule for detectors' own image scores, ``auc_bins``
    the pixel-AUC histogram size and ``top_k`` the k of Top-k attribution.

    ``update(meta, gt, pred, edited_prob, image_score, class_scores)`` per
    image: ``gt`` H x W labels of the task's space (255 = ignore); ``pred``
    H x W predicted labels or None (pure classifier); ``edited_prob`` H x W
    probabilities in [0, 1] that a pixel is edited, or None; ``image_score``
    the detector's image-level probability, or None; ``class_scores``
    optional scores per class for Top-k.
    """

    def __init__(self, label_space: LabelSpace, task: str, area_threshold: float = AREA_THRESHOLD,
                 score_threshold: float = SCORE_THRESHOLD, auc_bins: int = 1024,
                 top_k: tuple[int, ...] = (1, 3)):
        if task not in EVAL_TASKS:
            raise ConfigError(f"metrics task must be one of {', '.join(EVAL_TASKS)}, got {task!r}")
        names = BINARY.names if task == "binary" else label_space.names
        if len(names) < 2:
            raise ConfigError(f"label space {list(names)} has no editor class to evaluate")
        if not (isinstance(area_threshold, (int, float)) and -math.inf < area_threshold <= 1):
            raise ConfigError(f"area_threshold must be a number up to 1, got {area_threshold!r}")
        if not (isinstance(score_threshold, (int, float)) and math.isfinite(score_threshold)):
            raise ConfigError(f"score_threshold must be a finite number, got {score_threshold!r}")
        if isinstance(auc_bins, bool) or not isinstance(auc_bins, int) or auc_bins < 1:
            raise ConfigError(f"auc_bins must be a positive integer, got {auc_bins!r}")
        ks = tuple(top_k)
        if not ks or any(isinstance(k, bool) or not isinstance(k, int) or k < 1 for k in ks):
            raise ConfigError(f"top_k must be positive integers, got {top_k!r}")
        self.label_space = label_space if task == "semantic" else BINARY  # the task's classes
        self.config = MetricConfig(names, task, float(area_threshold), float(score_threshold),
                                   auc_bins, tuple(sorted(set(ks))))
        self._rows = ImageRows(len(names), len(self.config.top_k))
        self._hist = np.zeros((2, auc_bins))  # pixels per probability bin: edited, then unedited
        self._prob_images = 0
        self._score_source: str | None = None
        self._ids: set[str] = set()
        self._agg: Aggregator | None = None
        self.binding: dict[str, Any] | None = None
        """What made this state (the model, data, seed, config and pass of the records that read
        it; records/document.binding_of): set once by :meth:`bind`, saved with the state, and
        checked by ``leaderboard verify`` against every record that names the state."""

    def bind(self, binding: dict[str, Any]) -> None:
        """Tie this state to what made it (once; binding it to something else is refused)."""
        if self.binding is not None and self.binding != binding:
            raise RecordError("a metric state cannot be bound to two runs: it was made by "
                              f"{self.binding}, not {binding}")
        self.binding = binding

    # -- properties -------------------------------------------------------------

    @property
    def num_images(self) -> int:
        return len(self._rows)

    @property
    def image_score_source(self) -> str:
        """``detector`` if image scores were given, else ``edited_area``."""
        return self._score_source or EDITED_AREA

    @property
    def metric_names(self) -> list[str]:
        """The keys of :meth:`compute`, in order."""
        return list(self._aggregator().summarize())

    # -- accumulation -----------------------------------------------------------

    def update(self, meta: SampleMeta, gt: np.ndarray, pred: np.ndarray | None,
               edited_prob: np.ndarray | None, image_score: float | None = None,
               class_scores: np.ndarray | None = None, digest: str = "") -> None:
        """Add one evaluated image (arguments: see the class docstring;
        ``digest``: a hash of the detector's output for it, see
        :func:`prediction_digest`)."""
        cfg = self.config
        c = cfg.num_classes
        where = f"sample {meta.id}"
        gt = check_label_map(f"{where}: GT", gt, c, allow_ignore=True)
        if pred is not None:
            pred = check_label_map(f"{where}: prediction", pred, c, allow_ignore=False)
            if pred.shape != gt.shape:
                raise DataError(f"{where}: prediction has shape {pred.shape}, the GT has {gt.shape}")
        if edited_prob is not None:
            edited_prob = check_prob_map(where, edited_prob, gt.shape)
        self.add(meta, reduce_numpy(gt, pred, edited_prob, c, cfg.auc_bins), image_score, class_scores, digest)

    def add(self, meta: SampleMeta, counts: Reduced, image_score: float | None = None,
            class_scores: np.ndarray | None = None, digest: str = "") -> None:
        """Add one image already reduced to its counts (:mod:`.reduce`: ``update`` on the CPU,
        or the device path of ``run/evaluate.py``); the maps were checked where they were made."""
        cfg = self.config
        c = cfg.num_classes
        where = f"sample {meta.id}"
        has_pred = counts.conf is not None
        if not has_pred and image_score is None:
            raise DataError(f"{where}: a detector output needs a label map or an image score")
        source = DETECTOR if image_score is not None else EDITED_AREA
        if self._score_source not in (None, source):
            raise DataError(
                f"{where}: image score source {source!r} differs from earlier images "
                f"({self._score_source!r}); give an image score for every image or for none"
            )
        if image_score is not None and (isinstance(image_score, (bool, np.bool_)) or not isinstance(image_score, Real)
                                        or not 0 <= image_score <= 1):  # NaN fails too
            raise DataError(f"{where}: image_score must be a probability in [0, 1], got {image_score!r}")
        if cfg.task == "semantic" and class_scores is not None:  # every image's, ranked or not
            class_scores = editor_scores(where, class_scores, c)
        det_score = math.nan if image_score is None else float(image_score)
        gt_counts = counts.gt_counts
        gt_classes = np.flatnonzero(gt_counts[1:c]) + 1
        label = -1 if gt_counts[:c].sum() == 0 else int(gt_classes.size > 0)
        if counts.conf is not None:  # has_pred
            conf = counts.conf
            bf1 = bf1_of_counts(cast(np.ndarray, counts.boundary))  # a Reduced with conf has its boundary counts
        else:
            conf = np.zeros((c, c), dtype=np.int64)
            bf1 = np.full(c - 1, np.nan)
        if counts.hist is not None:
            self._hist += counts.hist
            self._prob_images += 1
        hits = [-1] * len(cfg.top_k)
        if cfg.task == "semantic" and label == 1 and (has_pred or class_scores is not None):
            ranking = editor_ranking(c, conf.sum(axis=0) if has_pred else None, class_scores)
            hits = topk_hits(ranking, gt_classes, cfg.top_k)

        if meta.id in self._ids:
            logger.warning("image id %r was evaluated more than once; it counts each time", meta.id)
        self._ids.add(meta.id)
        self._rows.append(
            id=meta.id, base=meta.base, n_turns=len(meta.turns),
            editors=tuple(t.editor for t in meta.turns),
            edit_types=tuple(t.edit_type for t in meta.turns),
            conf=conf, bf1=bf1, det_score=det_score, has_pred=has_pred,
            label=label, topk=hits, digest=digest,
        )
        self._score_source = source
        self._agg = None

    def merge(self, other: EvalState) -> None:
        """Add ``other``'s images to this state, in place (shards of one run)."""
        if not isinstance(other, EvalState):
            raise ConfigError(f"can only merge an EvalState, got {type(other).__name__}")
        if other.config != self.config:
            diff = [f for f in MetricConfig.__dataclass_fields__
                    if getattr(other.config, f) != getattr(self.config, f)]
            raise ConfigError(f"cannot merge metric states that differ in {', '.join(diff)}")
        if len({self._score_source, other._score_source} - {None}) > 1:
            raise DataError(
                f"cannot merge metric states with image score sources "
                f"{self._score_source!r} and {other._score_source!r}"
            )
        if None not in (self.binding, other.binding) and self.binding != other.binding:
            raise RecordError("cannot merge metric states made by different runs (their bindings differ)")
        if overlap := self._ids & other._ids:
            logger.warning("merged shards share %d image id(s), e.g. %r; they count twice",
                           len(overlap), next(iter(overlap)))
        self._rows.extend(other._rows)
        self._hist += other._hist
        self._prob_images += other._prob_images
        self._ids |= other._ids
        self._score_source = self._score_source or other._score_source
        self.binding = self.binding or other.binding
        self._agg = None

    # -- serialisation ----------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """JSON-able dict (lists, ints, floats, strings, None for NaN); exact round trip."""
        cfg = self.config
        return {
            "metrics_version": METRICS_VERSION,
            "label_space": self.label_space.to_dict(),
            **{key: getattr(cfg, key) for key in ("task", "area_threshold", "score_threshold", "auc_bins")},
            "top_k": list(cfg.top_k),
            "score_source": self._score_source,
            "prob_images": self._prob_images,
            "pos_hist": self._hist[0].tolist(),
            "neg_hist": self._hist[1].tolist(),
            "rows": self._rows.to_dict(),
            **({"binding": self.binding} if self.binding is not None else {}),  # unbound: as before binding
        }

    @classmethod
    def from_state_dict(cls, d: dict[str, Any]) -> EvalState:
        """Rebuild a state written by :meth:`state_dict`; a RecordError naming the field it cannot read."""
        if not isinstance(d, dict):
            raise RecordError(f"metric state must be an object, got {type(d).__name__}")
        if (version := d.get("metrics_version")) != METRICS_VERSION:
            raise RecordError(
                f"metric state has metrics version {version!r}, this diffzoo computes "
                f"version {METRICS_VERSION!r}; re-run the evaluation"
            )
        if missing := [key for key in cls(BINARY, "binary").state_dict() if key not in d and key != "binding"]:
            raise RecordError(f"metric state is malformed: field {missing[0]} is missing")
        count, source, binding = d["prob_images"], d["score_source"], d.get("binding")
        for key, ok, want in (("prob_images", type(count) is int and count >= 0, "a count"),
                              ("score_source", source in (None, *SOURCES), f"{', '.join(SOURCES)} or null"),
                              ("binding", binding is None or isinstance(binding, dict), "an object")):
            if not ok:
                raise RecordError(f"metric state is malformed: field {key} must be {want}, got {d[key]!r}")
        try:
            pos = np.asarray(d["pos_hist"], dtype=np.float64)
            neg = np.asarray(d["neg_hist"], dtype=np.float64)
            if pos.shape != (d["auc_bins"],) or neg.shape != pos.shape:  # before auc_bins sizes anything
                raise RecordError("metric state: pixel-AUC histograms have the wrong length")
            state = cls(LabelSpace.from_dict(d["label_space"]), d["task"], d["area_threshold"],
                        d["score_threshold"], d["auc_bins"], tuple(d["top_k"]))
        except (KeyError, TypeError, ValueError, OverflowError, ConfigError) as exc:
            raise RecordError(f"metric state is malformed: {exc}") from exc
        state._hist = np.stack([pos, neg])
        state._prob_images, state._score_source, state.binding = count, source, binding
        cfg = state.config
        state._rows = ImageRows.from_dict(d["rows"], cfg.num_classes, len(cfg.top_k))
        state._ids = set(state._rows.ids)
        return state

    # -- results ----------------------------------------------------------------

    def _aggregator(self) -> Aggregator:
        if self._agg is None:
            self._agg = Aggregator(self._rows, self.config, self.image_score_source)
        return self._agg

    def compute(self) -> dict[str, float]:
        """Every metric of docs/metrics.md: flat name -> value (NaN where undefined)."""
        if 0 < self._prob_images < self.num_images:
            logger.warning("pixel_AUC and F1_oracle cover only the %d of %d images that had edited_prob",
                           self._prob_images, self.num_images)
        auc = histogram_auc(*self._hist)
        f1_oracle = best_f1(*self._hist)[0] if self._prob_images else math.nan
        return self._aggregator().summarize(pixel_auc=auc, f1_oracle=f1_oracle)

    def counts(self) -> dict[str, int]:
        """The count metrics of :meth:`compute` alone (images, edited and authentic ones)."""
        return self._aggregator().counts(np.ones(self.num_images))

    def subset(self, ids: set[str] | frozenset[str]) -> EvalState:
        """A state holding only the images whose id is in ``ids`` (rows copied).

        The pixel histograms are whole-pass sums: they are kept only when the
        subset is every image, else pixel_AUC and F1_oracle are NaN.
        """
        keep = np.array([i in ids for i in self._rows.ids], dtype=bool)
        if keep.all():
            return self
        sub = copy.copy(self)  # same label space, config and score source
        sub._rows = self._rows.take(np.flatnonzero(keep))
        sub._hist = np.zeros_like(self._hist)
        sub._prob_images = 0
        sub._ids = set(sub._rows.ids)
        sub._agg = None
        return sub

    def verdicts(self) -> dict[str, tuple[int, bool]]:
        """Image id -> (label: 1 edited / 0 authentic, predicted edited) for
        every image with a known label and an image score."""
        agg = self._aggregator()
        ids = [self._rows.ids[i] for i in agg.order.tolist()]
        return {ids[p]: (int(agg.edited[p]), bool(agg.predicted_edited[p]))
                for p in np.flatnonzero(agg.img_mask).tolist()}

    def best_thresholds(self) -> dict[str, float | None]:
        """The thresholds that would have been best on these images: pixel
        (max binary F1 on the pixel histograms; None without them) and image
        (max accuracy of "score > t" on the image scores).  On a calibration
        split: calibrated thresholds; on the test split: oracle ones."""
        pixel = best_f1(*self._hist)[1] if self._prob_images else None
        image = self._aggregator().ranked.best_accuracy()[1]
        return {"pixel": None if pixel is None or math.isnan(pixel) else float(pixel),
                "image": None if math.isnan(image) else float(image)}

    def slices(self, key: str) -> dict[str, dict[str, float]]:
        """``compute()`` per slice value of ``key`` (base, turns, multiturn, editor, edit_type).

        Computed from the per-image rows; ``pixel_AUC`` is NaN in slices (its
        histograms are kept for the whole dataset only).
        """
        agg = self._aggregator()
        masks = slice_masks(self._rows, agg.order, key)
        return {value: agg.summarize(mask.astype(np.float64)) for value, mask in masks.items()}

    def bootstrap(self, n: int = 1000, seed: int = 0,
                  metrics: list[str] | None = None) -> dict[str, tuple[float, float]]:
        """95% CI (2.5th, 97.5th percentile) over images; see :mod:`.bootstrap`."""
        return bootstrap_ci(self._aggregator(), self.metric_names, n, seed, metrics)

    def predictions_digest(self) -> str:
        """sha256 over (image id, prediction digest) of every image, in id
        order: equal for two evaluations that predicted the same thing for the
        same images, whatever the shard or merge order."""
        h = hashlib.sha256()
        for i in self._rows.canonical_order().tolist():
            h.update(f"{self._rows.ids[i]}\t{self._rows.digests[i]}\n".encode())
        return h.hexdigest()

    def confusion_matrix(self) -> np.ndarray:
        """Dataset-level C x C int64 confusion counts, rows = GT, cols = pred."""
        c = self.config.num_classes
        return self._rows.array("conf").sum(axis=0, dtype=np.int64).reshape(c, c)
