"""ImgEdit (PKU-YuanGroup/ImgEdit) instruction-editing pairs as a localization dataset.

ImgEdit ships (input, output, prompt) pairs and no edit masks, so each pair's
label is derived with :func:`~diffzoo.generators.editors.labels.difference_label`
(resize, ORB + RANSAC + ECC alignment, ``mean_rgb|in - out| > tau``, cleanup,
area bounds) and mapped into the output image's frame; a sample is the output
image, untouched, with that label (1 edited, 0 not, 255 not compared).  The
formats read are described in :mod:`.imgedit_format`.

Ids: ``<parquet stem>/<row, 8 digits>``, plus ``/<turn>`` (from 1) for
multi-turn rows; for a folder the stem is the file's path below it.  Pairs
the builder rejects (``rejected-noop``, ``rejected-global``,
``rejected-aspect``; ``rejected-error`` when it raised), pairs with an image file that is not
found (``missing``) and cells without exactly one input and one output image
(``image-count``) are left out and counted in :meth:`describe`.  An
undecodable pair stays (``unreadable``): its :meth:`load` raises
:class:`CorruptSampleError`, which runs skip and count.

Labels are cached under ``cache_root()/imgedit/labels`` (:class:`LabelCache`)
keyed by both images' content (sha256 of the encoded bytes), the builder
settings and :data:`RULE_VERSION`; image files' digests are memoised by
(path, size, mtime), so a second open runs no builder and reads no image
file (images embedded in the parquet are re-read and hashed with it).
Labels are derived when the dataset is opened (that decides which pairs
exist), with ``progress``.
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from diffzoo.generators.datasets import imgedit_format as F
from diffzoo.generators.editors.labels import (
    DEFAULT_CLEANUP,
    DEFAULT_MAX_AREA,
    DEFAULT_MIN_AREA,
    DEFAULT_TAU,
    difference_label,
    edited_class,
    label_options,
)
from diffzoo.generators.generate.regions import bbox_of
from diffzoo.harness.core.errors import CorruptSampleError, DataError, StorageError
from diffzoo.harness.core.fsutil import atomic_write_bytes, atomic_write_text, cache_root
from diffzoo.harness.core.types import EditRecord, Sample, SampleMeta
from diffzoo.harness.data.base import SplitDataset, require_path
from diffzoo.harness.data.distortions import encode
from diffzoo.harness.data.fingerprint import combine
from diffzoo.harness.data.hfsource import data_files
from diffzoo.harness.data.imageio import read_image, read_mask
from diffzoo.harness.data.splits import SPLITS_FILE, ids_by_split, one_split, read_splits_file
from diffzoo.harness.data.walk import StoredPaths

log = logging.getLogger(__name__)

RULE_VERSION = "4"
"""Version of the derivation (builder + output-frame mapping): in every cache key and the fingerprint, so
a label cached under another rule is never served: bump it whenever the builder's outcome for a pair changes."""
KEPT = ("ok", "unreadable")
SKIPPED = ("rejected-noop", "rejected-global", "rejected-aspect", "rejected-error", "missing", "image-count")
EXAMPLES = 5


@dataclass
class _Ref:
    """One image: a file, or a cell of the parquet (file index, row, turn, side) holding its bytes."""

    name: str
    digest: str
    raw: str = ""  # the path as written in the parquet (for the benchmark join)
    path: Path | None = None
    cell: tuple[int, int, int, str] | None = None


@dataclass
class _Pair:
    id: str
    prompt: str
    inp: _Ref | None = None
    out: _Ref | None = None
    status: str = ""
    reason: str = ""
    key: str = ""
    region: tuple[int, int, int, int] | None = None
    edit_type: str = "unknown"


class LabelCache:
    """Cached labels under ``root`` (``None``: no cache, which reads nothing and writes nothing).

    An entry is ``<key[:2]>/<key>.json`` (the builder's outcome: status, changed
    fraction, alignment reason, region) and, for an accepted pair,
    ``<key>.png`` (the label in the output image's frame: 0, 1, 255).  The key
    (made by :class:`ImgEditDataset`) hashes both images' content, the builder
    settings and the rule version, so an entry never goes stale.  The JSON is
    written last: its presence means the entry is complete.  A cache that cannot
    be written is warned about once and the dataset carries on uncached; a
    damaged label file is derived again.
    """

    def __init__(self, root: Path | None) -> None:
        self.root = root
        self._warned = False

    def _paths(self, key: str) -> tuple[Path, Path]:
        d = self.root / key[:2]
        return d / f"{key}.json", d / f"{key}.png"

    def get(self, key: str) -> dict[str, Any] | None:
        """The outcome stored for ``key``, or None when there is none (or it is unreadable)."""
        if self.root is None:
            return None
        try:
            info = json.loads(self._paths(key)[0].read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return info if isinstance(info, dict) and info.get("status") else None

    def put(self, key: str, info: dict[str, Any], mask: np.ndarray | None) -> None:
        """Store an outcome, with its label when ``mask`` is given; a write failure is warned about once."""
        if self.root is None:
            return
        meta, png = self._paths(key)
        try:
            if mask is not None:
                atomic_write_bytes(png, encode(mask, "PNG"))
            atomic_write_text(meta, json.dumps(info))  # written last: its presence means complete
        except (OSError, StorageError) as exc:  # a full disk too: the cache is optional, the run goes on
            if not self._warned:
                log.warning("cannot write the label cache %s (%s); continuing uncached", meta.parent, exc)
                self._warned = True

    def label(self, key: str, sample_id: str, hw: tuple[int, int]) -> np.ndarray | None:
        """The stored label of ``key`` at ``hw``, or None when it is missing or damaged."""
        if self.root is None:
            return None
        png = self._paths(key)[1]
        try:
            label = read_mask(png, sample_id, size=hw[::-1])
        except DataError as exc:  # CorruptSampleError included
            log.warning("label cache %s unusable (%s); deriving again", png, exc)
            return None
        return label if np.isin(label, (0, 1, 255)).all() else None


class ImgEditDataset(SplitDataset):
    """ImgEdit pairs with pixel-difference labels (see the module docstring and docs).

    ``path``: a ``.parquet`` file or a folder holding them (two levels down).
    ``tau``, ``align``, ``min_area``, ``max_area``, ``cleanup``: the builder's
    settings.  ``editor``: the label class (``("background", editor)``;
    default ``("background", "edited")``) and every turn's editor (default
    ``"unknown"``).  ``with_inputs``: add each row's first input image as an
    authentic sample ``<row>/input`` (all-zero label; later turns' inputs are
    earlier outputs, never added).  ``benchmark``: an ImgEdit-Bench JSON whose
    ``edit_type`` fills the turn of pairs that join it.  ``image_root``:
    folder(s) the parquet paths are relative to (default: the parquet's folder
    and its parent, and their ``Singleturn/`` and ``Multiturn/``).  ``split``:
    everything in this split; default ``splits.json`` beside the data, else
    ``test``.  ``cache=False``: derive at open and again at every load.
    """

    source_kind = "parquet"

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        name: str | None = None,
        tau: float = DEFAULT_TAU,
        align: bool = True,
        min_area: float = DEFAULT_MIN_AREA,
        max_area: float = DEFAULT_MAX_AREA,
        cleanup: int = DEFAULT_CLEANUP,
        cache: bool = True,
        editor: str | None = None,
        with_inputs: bool = False,
        benchmark: str | os.PathLike | None = None,
        image_root: str | os.PathLike | list[str | os.PathLike] | None = None,
        split: str | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> None:
        self._options, self._settings = label_options(tau, min_area, max_area, cleanup, align)
        label_space, editor = edited_class(editor)
        require_path(path, "ImgEditDataset")
        root = Path(path)
        super().__init__(name or (root.stem if root.is_file() else root.name) or "imgedit", label_space)
        self.path, self.editor = str(root), editor or "unknown"
        self._params = combine("imgedit-label", RULE_VERSION, "output-frame", self._settings)
        self._cache = cache_root() / "imgedit" if cache else None
        self._labels = LabelCache(self._cache / "labels" if self._cache is not None else None)
        roots = image_root if isinstance(image_root, list) else [image_root] if image_root is not None else None
        self._roots = [Path(r) for r in roots] if roots is not None else None
        self._bench = F.Benchmark(benchmark) if benchmark is not None else None
        self._files = [root] if root.is_file() else [f for f in data_files(root) if f.suffix.lower() == ".parquet"]
        if not self._files:
            raise DataError(f"{root}: no .parquet files found (ImgEdit's are in Parquet/)")
        self._kinds = [F.schema_kind(f) for f in self._files]  # every file checked before any work
        self._pairs: dict[str, _Pair] = {}
        self._inputs: dict[str, _Ref] = {}
        self._rows = F.RowReader()
        import pyarrow.parquet as pq

        total = sum(pq.read_metadata(f).num_rows for f in self._files)
        state = {"done": 0, "total": total, "progress": progress, "seen": set(), "with_inputs": with_inputs}
        for index, (file, kind) in enumerate(zip(self._files, self._kinds)):
            stem = file.stem if root.is_file() else file.relative_to(root).with_suffix("").as_posix()
            self._read_file(index, file, kind, stem, state)
        self._report()
        self._assign_splits(root if root.is_dir() else root.parent, split)

    # -- reading -------------------------------------------------------------
    def _ref(self, item: Any, roots: F.Roots, cell: tuple[int, int, int, str], where: str,
             digests: F.Digests) -> tuple[_Ref, bytes | None]:  # fmt: skip
        """A reference to one image item, and its bytes if they are in the parquet."""
        raw, data = F.raw_path(item), F.embedded(item)
        if data is not None:
            return _Ref(f"{where} ({raw})" if raw else where, F.sha256(data), raw, cell=cell), data
        if not raw:
            raise F.Missing(f"{where}: empty or unsupported image item ({type(item).__name__})")
        file = F.resolve(raw, roots, where)
        try:
            return _Ref(str(file), digests(file), raw, path=file), None
        except OSError as exc:
            raise F.Missing(f"{where}: {file} cannot be read ({exc})") from None

    def _read_file(self, index: int, file: Path, kind: str, stem: str, state: dict[str, Any]) -> None:
        import pyarrow.parquet as pq

        if self._roots is not None:
            folders = self._roots
        else:
            bases = (file.parent, file.parent.parent)
            folders = [d for b in bases for d in (b, b / "Singleturn", b / "Multiturn") if d.is_dir()]
        roots = {r: StoredPaths(r) for r in folders}
        memo = F.sha256(json.dumps([str(file.resolve()), [str(r.resolve()) for r in folders]]).encode())[:32]
        digests = F.Digests(f"imgedit:{memo}" if self._cache is not None else None)
        columns = [F.TURNS_COLUMN] if kind == "turns" else list(F.PAIR_COLUMNS)
        row = 0
        for batch in pq.ParquetFile(file).iter_batches(batch_size=64, columns=columns):
            for record in batch.to_pylist():
                rid, where = f"{stem}/{row:08d}", f"{file.name} row {row}"
                turns = [c if isinstance(c, dict) else {} for c in F.items(record[F.TURNS_COLUMN]) or [None]] \
                    if kind == "turns" else [record]  # fmt: skip
                first = F.items(turns[0].get("input_images"))
                first_raw = F.raw_path(first[0]) if first else ""
                for t, cell in enumerate(turns, start=1):
                    turn = t if kind == "turns" else None
                    self._add_pair(f"{rid}/{t}" if turn else rid, cell, (index, row, t), where +
                                   (f" turn {t}" if turn else ""), roots, digests, turn, first_raw)  # fmt: skip
                if state["with_inputs"] and len(first) == 1:
                    try:
                        ref, _ = self._ref(first[0], roots, (index, row, 1, "input_images"),
                                           f"{where} input_images[0]", digests)  # fmt: skip
                    except F.Missing:
                        ref = None
                    if ref is not None and ref.digest not in state["seen"]:  # one sample per distinct image
                        state["seen"].add(ref.digest)
                        self._inputs[f"{rid}/input"] = ref
                row += 1
                state["done"] += 1
                if state["progress"] is not None:
                    state["progress"](state["done"], state["total"])
        digests.save()

    def _add_pair(self, sid: str, cell: dict, loc: tuple[int, int, int], where: str, roots: F.Roots,
                  digests: F.Digests, turn: int | None, first_raw: str) -> None:  # fmt: skip
        pair = self._pairs[sid] = _Pair(sid, str(cell.get("prompt") or ""))
        found = {side: F.items(cell.get(side)) for side in F.SIDES}
        if any(len(v) != 1 for v in found.values()):
            n_in, n_out = (len(v) for v in found.values())
            pair.status, pair.reason = "image-count", f"{where}: {n_in} input, {n_out} output images; need 1 and 1"
            return
        data: dict[str, bytes | None] = {}
        try:
            for side in F.SIDES:
                ref, data[side] = self._ref(found[side][0], roots, (*loc, side), f"{where} {side}[0]", digests)
                setattr(pair, "inp" if side == "input_images" else "out", ref)
        except F.Missing as exc:
            pair.status, pair.reason = "missing", str(exc)
            return
        joined = self._bench.join(pair.out.raw, first_raw, turn, pair.prompt) if self._bench is not None else None
        if joined is not None:
            pair.edit_type, pair.prompt = joined[0], pair.prompt or joined[1]
        pair.key = F.sha256(f"{self._params}|{pair.inp.digest}|{pair.out.digest}".encode())[:40]
        info = self._labels.get(pair.key) or self._derive(pair, data["input_images"], data["output_images"])
        pair.status, pair.reason = info["status"], info.get("reason", "")
        pair.region = tuple(info["region"]) if info.get("region") else None

    def _source(self, ref: _Ref, sid: str) -> Path | bytes:
        """What to decode for ``ref``: its file, or its bytes read back from the parquet."""
        if ref.path is not None:
            return ref.path
        index, row, turn, side = ref.cell
        file = self._files[index]
        try:
            turns = self._kinds[index] == "turns"
            record = self._rows.row(file, row, [F.TURNS_COLUMN] if turns else [side])
            cell = F.items(record[F.TURNS_COLUMN])[turn - 1] if turns else record
            data = F.embedded(F.items(cell[side])[0])
        except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
            raise CorruptSampleError(sid, f"{ref.name}: cannot be read back from {file} ({exc})") from None
        if data is None:
            raise CorruptSampleError(sid, f"{ref.name}: no longer holds image bytes in {file}")
        return data

    # -- labels --------------------------------------------------------------
    def _derive(self, pair: _Pair, in_bytes: bytes | None, out_bytes: bytes | None,
                keep: bool = False) -> dict[str, Any]:  # fmt: skip
        """Run the builder on one pair, cache the outcome; with ``keep`` the label (output frame) too."""
        import cv2

        try:
            orig = read_image(self._source(pair.inp, pair.id) if in_bytes is None else in_bytes, pair.id,
                              name=pair.inp.name)  # fmt: skip
            gen = read_image(self._source(pair.out, pair.id) if out_bytes is None else out_bytes, pair.id,
                             name=pair.out.name)  # fmt: skip
        except CorruptSampleError as exc:  # not cached: the file may be replaced
            return {"status": "unreadable", "reason": str(exc)}
        mask = None
        try:
            res = difference_label(orig, gen, **self._options)
        except (DataError, cv2.error) as exc:
            info: dict[str, Any] = {"status": "rejected-error", "reason": f"{pair.id}: label builder failed: {exc}"}
        else:
            info = {"status": res.status, "changed_fraction": round(res.changed_fraction, 6),
                    "alignment": res.alignment.reason, "region": None}  # fmt: skip
            if res.status == "ok":
                mask = res.gen_frame_mask(gen.shape)
                if (mask == 1).any():
                    info["region"] = list(bbox_of(mask == 1))
            else:
                info["reason"] = f"{pair.id}: {res.status}: {res.changed_fraction:.2%} of the compared pixels changed"
        self._labels.put(pair.key, info, mask)
        return {**info, "mask": mask} if keep else info

    # -- splits, samples -------------------------------------------------------
    def _report(self) -> None:
        counts = self._counts()
        if not self._pairs:
            raise DataError(f"{self.path}: the parquet file(s) hold no rows")
        if counts["missing"] == len(self._pairs):
            example = next(iter(self._pairs.values())).reason
            raise DataError(f"{self.path}: no image of any pair was found (e.g. {example}); extract the ImgEdit "
                            ".tar files there or pass image_root=")  # fmt: skip
        skipped = sum(counts[s] for s in SKIPPED)
        if skipped or counts["unreadable"]:
            log.warning("imgedit %s: %d of %d pairs left out, %d unreadable (%s); see describe()", self.name,
                        skipped, len(self._pairs), counts["unreadable"], self._summary())  # fmt: skip

    def _assign_splits(self, folder: Path, split: str | None) -> None:
        keep = {s for s, p in self._pairs.items() if p.status in KEPT} | set(self._inputs)
        if split is not None or not (folder / SPLITS_FILE).is_file():
            self._splits, self.split_info = one_split(split or "test", keep)
        else:
            named, self.split_info = read_splits_file(folder / SPLITS_FILE, [*self._pairs, *self._inputs])
            where = {i: s for s, ids in named.items() for i in ids}
            for sid in self._inputs:  # an input not named goes with its row's first pair
                row = sid.rsplit("/", 1)[0]
                first = row if row in self._pairs else f"{row}/1"
                if sid not in where and first in where:
                    where[sid] = where[first]
            self._splits = ids_by_split((sid, s) for sid, s in sorted(where.items()) if sid in keep)
        self._splits = {s: ids for s, ids in self._splits.items() if ids}
        if not self._splits:
            raise DataError(f"{self.path}: no usable pair ({self._summary()}); see describe() for the reasons")

    def _counts(self) -> Counter:
        return Counter(p.status for p in self._pairs.values())

    def _summary(self) -> str:
        return ", ".join(f"{k} {v}" for k, v in sorted(self._counts().items()))

    def _load(self, sample_id: str) -> Sample:
        if sample_id in self._inputs:
            ref = self._inputs[sample_id]
            image = read_image(self._source(ref, sample_id), sample_id, name=ref.name)
            meta = SampleMeta(sample_id, base="real", source=self.name)
            return Sample(image, np.zeros(image.shape[:2], np.uint8), meta)
        pair = self._pairs.get(sample_id)
        if pair is None or pair.status not in KEPT:
            raise self._unknown(sample_id)
        if pair.status == "unreadable":
            raise CorruptSampleError(sample_id, pair.reason.removeprefix(f"sample {sample_id}: "))
        image = read_image(self._source(pair.out, sample_id), sample_id, name=pair.out.name)
        label = self._labels.label(pair.key, sample_id, image.shape[:2])
        if label is None:  # no cache, or the cached file is gone or damaged
            fresh = self._derive(pair, None, None, keep=True)
            if fresh["status"] != "ok":
                raise CorruptSampleError(sample_id, f"label no longer derivable: {fresh.get('reason')}")
            label = fresh["mask"]
        turn = EditRecord(self.editor, pair.prompt, pair.edit_type, pair.region)
        return Sample(image, label, SampleMeta(sample_id, turns=(turn,), source=self.name))

    # -- identity --------------------------------------------------------------
    def _content_fingerprint(self) -> str:
        pairs = [(p.id, p.key, p.status, p.prompt, p.edit_type) for p in self._pairs.values()]
        inputs = [(i, r.digest) for i, r in self._inputs.items()]
        bench = self._bench.digest if self._bench is not None else None
        return combine("imgedit", RULE_VERSION, self._settings, self.editor, pairs, inputs, bench)

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        counts = self._counts()
        examples: dict[str, list[str]] = {}
        for p in self._pairs.values():
            if p.status != "ok" and len(examples.setdefault(p.status, [])) < EXAMPLES:
                examples[p.status].append(p.reason or p.id)
        d.update(
            files=len(self._files), pairs=len(self._pairs), statuses=dict(sorted(counts.items())),
            skipped={s: counts[s] for s in SKIPPED if counts[s]}, unreadable=counts["unreadable"],
            examples=examples, authentic_inputs=len(self._inputs),
            label_rule={"version": RULE_VERSION, "frame": "output", "settings": self._settings},
            cache=str(self._labels.root) if self._labels.root is not None else None,
        )  # fmt: skip
        if self._bench is not None:
            d["benchmark"] = self._bench.describe()
        return d

    @classmethod
    def sniff(cls, path: str | os.PathLike) -> bool:
        """True for a parquet file (or a folder whose first one is) in ImgEdit's column layout."""
        p = Path(path)
        try:
            files = [p] if p.is_file() else [f for f in data_files(p) if f.suffix.lower() == ".parquet"][:1]
            return bool(files) and files[0].suffix.lower() == ".parquet" and bool(F.schema_kind(files[0]))
        except (DataError, OSError):
            return False
