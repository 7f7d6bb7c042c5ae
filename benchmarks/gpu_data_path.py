"""gpu_check's helpers: the real-data-path measurements, the run record they land in,
the device helpers, the random weight files of IMDL-BenCo's models, the summary.

- :class:`Run`: the results of one ``gpu_check`` run, the ``not_measured``
  list ({what, why} for every skipped measurement), the time budget that
  decides what is skipped, and the partial JSON written after every section
  (so that a run stopped by ``gpu_check.sh``'s hard limit still leaves what
  it measured).
- :func:`write_diffseg_folder`: a small DiffSeg30k-layout folder of PNG
  files (``train_copy/<id>.image.png`` + ``<id>.mask.png``, ``labels.json``,
  ``manifest.jsonl``, ``splits.json``), opened with diffzoo's own adapter
  through :func:`diffzoo.harness.run.factories.open_dataset`.
- :func:`measure_data_path`: training images/s through ``det.fit`` (the
  shared trainer: ``CropDataset``, ``make_loader``, ``TrainConfig(num_workers)``)
  and evaluation images/s through ``harness.run.evaluate.evaluate`` (which reads
  through ``run.loading.eval_inputs``), each with the share of wall time the
  loop spends blocked waiting for its next batch / image; the evaluation also
  per image, in ms: ``forward`` (``predict_checked``), ``metric``
  (``Scorer.score``, wherever it runs) and ``wait`` (blocked on the loader).

The waits are timed around the very iterators the library's loops read:
:func:`timed_batches` swaps ``trainer.BatchStream`` for a subclass whose
``__next__`` is timed, :func:`timed_eval_inputs` wraps ``evaluate.eval_inputs``;
both are put back on leaving.  A loop that stops reading through them (a
library change) is reported as such instead of giving a zero wait.
:func:`timed_eval_parts` likewise wraps ``evaluate.predict_checked``
(synchronised on CUDA) and ``scoring.Scorer.score`` (timed in the thread it
runs in: the scoring worker when evaluation overlaps).

Also here: the device helpers (peak memory, synchronised ``predict``
rates), :func:`random_weight_files` for IMDL-BenCo's models, and
:func:`print_summary` / :func:`figures` (the readable summary and the rows
``python -m benchmarks`` tabulates).
"""

from __future__ import annotations

import functools
import io
import json
import os
import shutil
import statistics
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from pathlib import Path
from typing import Any

import numpy as np
import torch

NOISE_NOTE = ("images are uniform random noise (a pool of a few distinct images per size, written under every "
              "id): the worst case for PNG decoding (real photographs compress better and decode faster); "
              "masks are per-sample class-index maps (an edited rectangle, every third image authentic); the "
              "files were just written, so they are read from the OS page cache, not from the disk")

# -- device helpers (also gpu_check's) ----------------------------------------------------------


def peak_mib(device: torch.device) -> float | None:
    return torch.cuda.max_memory_allocated(device) / 2**20 if device.type == "cuda" else None


def reset_peak(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@torch.no_grad()
def inference_rate(det, device, size: int, batch: int, steps: int, amp, warmup: int = 5) -> float:
    """Forward passes only (``det.predict`` on a batch of ``batch``, logits at the
    input size, argmax when the output is logits), each synchronised: images/s
    after ``warmup`` untimed passes."""
    x = torch.rand(batch, 3, size, size, device=device)
    with amp():
        for _ in range(warmup):
            det.predict(x)
        sync(device)
        start = time.perf_counter()
        for _ in range(steps):
            out = det.predict(x)
            if out.mask_logits is not None:
                out.mask_logits.argmax(1)
            sync(device)
    return batch * steps / (time.perf_counter() - start)


@contextmanager
def random_weight_files(run, names: list[str]):
    """A temporary $DIFFZOO_CACHE and torch hub folder holding random weight files for the
    chosen models whose constructor needs one (tests/helpers/benco_weights.py); put back after."""
    from bench import test_helper

    from diffzoo.harness.core.plugins import get_registry
    from diffzoo.plugins.benco.specs import SPECS

    root = tempfile.mkdtemp(prefix="gpu-check-weights-")
    saved_cache, saved_hub = os.environ.get("DIFFZOO_CACHE"), torch.hub.get_dir()
    os.environ["DIFFZOO_CACHE"] = os.path.join(root, "cache")
    torch.hub.set_dir(os.path.join(root, "hub"))
    try:
        keys = {get_registry().get("detector", name).card.arch["benco"] for name in names}
        for spec in SPECS:
            if spec.key in keys and any(w.required for w in spec.weights):
                run.attempt(f"random weight files of benco.{spec.key}",
                            functools.partial(test_helper("benco_weights").write_random_weights, spec.key))
        yield
    finally:
        if saved_cache is None:
            os.environ.pop("DIFFZOO_CACHE", None)
        else:
            os.environ["DIFFZOO_CACHE"] = saved_cache
        torch.hub.set_dir(saved_hub)
        shutil.rmtree(root, ignore_errors=True)


# -- the run record: results, what was not measured, the time budget -----------------------------


class Stopped(BaseException):
    """SIGTERM (``gpu_check.sh``'s time limit) or a training the trainer stopped on a signal:
    the run ends, keeping and reporting what it measured.  A BaseException, so that
    :meth:`Run.attempt` does not take it for a failed measurement."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def stop_on_sigterm() -> None:
    """SIGTERM raises :class:`Stopped` in the main thread (the shared trainer installs its
    own handler while it trains and raises TrainingStopped after the step instead)."""
    import signal

    def handler(signum, frame):
        raise Stopped(signum)

    signal.signal(signal.SIGTERM, handler)


class Run:
    """Results of one run, ``not_measured`` ({what, why}) and the time budget (seconds from ``started``)."""

    def __init__(self, budget_s: float, json_path: str | None, started: float):
        self.budget_s, self.json_path, self.started = budget_s, json_path, started
        self.not_measured: list[dict[str, str]] = []
        self.results: dict[str, Any] = {"budget_s": budget_s, "not_measured": self.not_measured}

    def left(self) -> float:
        return self.budget_s - (time.perf_counter() - self.started)

    def skip(self, what: str, why: str) -> None:
        self.not_measured.append({"what": what, "why": why})
        print(f"  not measured: {what}: {why}", flush=True)

    def affordable(self, what: str, need_s: float) -> bool:
        """True when about ``need_s`` seconds are left; else ``what`` is recorded as skipped."""
        left = self.left()
        if left >= need_s:
            return True
        self.skip(what, f"time budget: {max(left, 0):.1f} s of {self.budget_s:.0f} s left, about "
                        f"{need_s:.1f} s needed (--budget)")
        return False

    def attempt(self, what: str, fn: Callable[[], Any]) -> Any:
        """``fn()``, or None with ``what`` recorded as failed (a benchmark reports a failure and goes on)."""
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - any failure is a result here
            if getattr(exc, "signum", None) is not None:  # the trainer stopped on SIGTERM / SIGINT: so do we
                raise Stopped(exc.signum) from exc
            self.skip(what, f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}")
            if os.environ.get("GPU_CHECK_DEBUG"):
                traceback.print_exc()
            return None

    def save(self) -> None:
        """The results so far in ``--json`` (marked ``partial``), written atomically."""
        if not self.json_path:
            return
        tmp = Path(f"{self.json_path}.partial")
        tmp.write_text(json.dumps({**self.results, "partial": True}, indent=2, default=str))
        tmp.replace(self.json_path)


# -- a DiffSeg30k-layout folder of PNG files ------------------------------------------------------


def _png(array: np.ndarray) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(array).save(buffer, format="PNG")
    return buffer.getvalue()


def _mask(size: int, index: int, rng: np.random.Generator, classes: int) -> tuple[np.ndarray, tuple | None]:
    """A class-index map: every third image authentic (zeros), else one edited rectangle of class 1..classes-1."""
    label = np.zeros((size, size), np.uint8)
    if index % 3 == 0:
        return label, None
    side = max(2, size // 3)
    y0, x0 = (int(v) for v in rng.integers(0, size - side, 2))
    label[y0:y0 + side, x0:x0 + side] = 1 + index % (classes - 1)
    return label, (x0, y0, x0 + side, y0 + side)


def write_diffseg_folder(root: Path, size: int, n_train: int, n_val: int, label_names: tuple[str, ...],
                         distinct: int = 8, seed: int = 0) -> dict[str, Any]:
    """``n_train`` + ``n_val`` samples of ``size`` px in DiffSeg30k's layout under ``root``;
    returns what was written (files, bytes, seconds).  The images are ``distinct`` noise
    images written under every id in turn (encoding noise costs ~0.1 s per 1024 px image);
    every mask is its own."""
    from diffzoo.harness.core.types import EditRecord, SampleMeta

    start = time.perf_counter()
    rng = np.random.default_rng(seed)
    pairs = root / "train_copy"
    pairs.mkdir(parents=True)
    images = [_png(rng.integers(0, 256, (size, size, 3), dtype=np.uint8)) for _ in range(distinct)]
    ids = [f"{i:08d}" for i in range(n_train + n_val)]
    manifest = []
    for i, sid in enumerate(ids):
        label, region = _mask(size, i, rng, len(label_names))
        (pairs / f"{sid}.image.png").write_bytes(images[i % distinct])
        (pairs / f"{sid}.mask.png").write_bytes(_png(label))
        turns = () if region is None else (EditRecord(label_names[int(label.max())], "a cat", "object_addition",
                                                      region, i),)
        manifest.append(SampleMeta(sid, "real" if i % 2 else "ai", turns, "gpu_check").to_dict())
    (root / "labels.json").write_text(json.dumps({"names": list(label_names), "verified": True}))
    (root / "manifest.jsonl").write_text("".join(json.dumps(m) + "\n" for m in manifest))
    (root / "splits.json").write_text(json.dumps({"train": ids[:n_train], "val": ids[n_train:]}))
    return {"image_size": size, "train_images": n_train, "val_images": n_val, "distinct_images": distinct,
            "image_png_kib": round(len(images[0]) / 1024, 1), "write_s": round(time.perf_counter() - start, 2)}


def open_png_dataset(root: Path):
    """``root`` through diffzoo's loaders: the registered adapters sniff it, as ``--dataset PATH`` does."""
    from diffzoo.harness.run.factories import open_dataset

    return open_dataset(str(root))


def load_ms(dataset, ids: list[str], n: int = 3) -> float:
    """Median ms of ``dataset.load`` (decode image + mask, checks) over the first ``n`` ids."""
    times = []
    for sid in ids[:n]:
        start = time.perf_counter()
        dataset.load(sid)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


# -- timing the waits of the library's own loops --------------------------------------------------

Waits = list[tuple[float, float]]
"""(start, end) of each blocking ``next()`` on a loop's data iterator."""


@contextmanager
def timed_batches() -> Iterator[Waits]:
    """While inside, the shared trainer's ``BatchStream`` times each ``next()``."""
    from diffzoo.harness.models import trainer

    waits: Waits = []
    original = trainer.BatchStream

    class TimedBatchStream(original):  # type: ignore[misc, valid-type]
        def __next__(self):
            start = time.perf_counter()
            try:
                return super().__next__()
            finally:
                waits.append((start, time.perf_counter()))

    trainer.BatchStream = TimedBatchStream
    try:
        yield waits
    finally:
        trainer.BatchStream = original


@contextmanager
def timed_eval_inputs() -> Iterator[Waits]:
    """While inside, ``evaluate``'s ``eval_inputs`` iterator times each ``next()``."""
    from diffzoo.harness.run import evaluate as evaluation

    waits: Waits = []
    original = evaluation.eval_inputs

    def timed(*args, **kwargs):
        items = iter(original(*args, **kwargs))
        while True:
            start = time.perf_counter()
            try:
                item = next(items)
            except StopIteration:
                return
            finally:
                waits.append((start, time.perf_counter()))
            yield item

    evaluation.eval_inputs = timed
    try:
        yield waits
    finally:
        evaluation.eval_inputs = original


EVAL_TIMING_NOTE = (
    "evaluation per image, in ms, over the timed images (after the warm-up): forward_ms = time in "
    "evaluate.predict_checked (the model and the output check), with torch.cuda.synchronize() before and after it "
    "on CUDA so that the time is the GPU's; metric_ms = time in Scorer.score (reducing the prediction to the "
    "metric states' counts), measured in the thread it runs in (the scoring worker when overlap is on, so it runs "
    "beside the next image's forward and wait); wait_ms = time blocked in next() of evaluate's eval_inputs "
    "iterator (the loader); leads = the largest of the three.  images_per_s is of the same run.  The "
    "synchronisation changes overlap slightly: before each forward the main thread waits for the GPU work the "
    "scoring thread has queued, and scoring kernels queued during a forward (one CUDA stream) count in its "
    "forward_ms, so an unmeasured run overlaps a little more (and is a little faster) than these figures show.  "
    "metric_path / overlap: what the run did (torch on the model's device or numpy on the CPU; scoring in a "
    "worker thread or not); config: the evaluate() arguments (default: metrics=auto, overlap as evaluate "
    "chooses, i.e. torch and overlap on CUDA; numpy_no_overlap: metrics='numpy', overlap=False, the way "
    "evaluation ran before, measured on CUDA only)")

DEFAULT_EVAL = {"config": "default", "metrics": "auto", "overlap": None}
NUMPY_NO_OVERLAP = {"config": "numpy_no_overlap", "metrics": "numpy", "overlap": False}


@contextmanager
def timed_eval_parts() -> Iterator[dict[str, list]]:
    """While inside, ``evaluate``'s ``predict_checked`` (synchronised on CUDA, before and after)
    and ``scoring.Scorer.score`` (in whichever thread runs it) are timed per call, in call order:
    ``{"forward": [s, ...], "metric": [s, ...], "paths": [...], "threaded": [...]}``."""
    from diffzoo.harness.run import evaluate as evaluation
    from diffzoo.harness.run import scoring

    parts: dict[str, list] = {"forward": [], "metric": [], "paths": [], "threaded": []}
    predict, score = evaluation.predict_checked, scoring.Scorer.score

    @wraps(predict)
    def timed_predict(detector, images, ids):
        device = torch.device(getattr(detector, "device", None) or "cpu")
        sync(device)  # the work queued before (the scoring thread's too) is not this forward's
        start = time.perf_counter()
        try:
            return predict(detector, images, ids)
        finally:
            sync(device)
            parts["forward"].append(time.perf_counter() - start)

    @wraps(score)
    def timed_score(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return score(self, *args, **kwargs)
        finally:  # list.append is atomic: the scoring worker may append while the main thread does
            parts["metric"].append(time.perf_counter() - start)
            parts["paths"].append(self.path)
            parts["threaded"].append(threading.current_thread() is not threading.main_thread())

    evaluation.predict_checked, scoring.Scorer.score = timed_predict, timed_score
    try:
        yield parts
    finally:
        evaluation.predict_checked, scoring.Scorer.score = predict, score


def per_image_parts(timing: dict[str, Any], parts: dict[str, list]) -> dict[str, Any]:
    """Forward, metric and wait ms per image over the window's timed images (the last
    ``timing["timed_images"]`` ones: the calls come in image order), which of them leads,
    and what the run did (metric path, scoring in a worker thread or not)."""
    n = timing["timed_images"]
    for key in ("forward", "metric"):
        if len(parts[key]) < n:
            raise RuntimeError(f"evaluation: {len(parts[key])} timed {key} calls for {n} images "
                               "(does evaluate still call predict_checked and Scorer.score?)")
    ms = {"forward_ms": 1000 * statistics.fmean(parts["forward"][-n:]),
          "metric_ms": 1000 * statistics.fmean(parts["metric"][-n:]),
          "wait_ms": 1000 * timing["data_wait_share"] * timing["seconds"] / n}
    return {**{k: round(v, 4) for k, v in ms.items()}, "leads": max(ms, key=ms.get).removesuffix("_ms"),
            "metric_path": "+".join(sorted(set(parts["paths"]))), "overlap": any(parts["threaded"])}


class _Stamps:
    """A harness Progress that records when each image is done (as bench.timed_eval's)."""

    def __init__(self):
        self.stamps: list[float] = []

    @contextmanager
    def task(self, description, total):
        stamps = self.stamps

        class _Task:
            def advance(self, n=1, **info):
                stamps.append(time.perf_counter())

        yield _Task()


def window(stamps: list[float], per_step: int, warmup: int, waits: Waits, what: str) -> dict[str, Any]:
    """Images/s and the share of wall time spent waiting for data, over the steps after ``warmup``
    (the window bench.rate uses: from the end of step ``warmup`` to the end of the last)."""
    if len(stamps) < 2:
        raise RuntimeError(f"{what}: fewer than 2 steps were timed")
    if not waits:
        raise RuntimeError(f"{what}: the loop did not read through the timed iterator (did the library change?)")
    warmup = min(max(warmup, 1), len(stamps) - 1)
    begin, end = stamps[warmup - 1], stamps[-1]
    seconds = end - begin
    waited = sum(b - a for a, b in waits if a >= begin and b <= end)
    images = (len(stamps) - warmup) * per_step
    return {"images_per_s": images / seconds, "data_wait_share": waited / seconds, "timed_images": images,
            "seconds": round(seconds, 3), "first_wait_s": round(waits[0][1] - waits[0][0], 3)}


# -- the measurements -----------------------------------------------------------------------------


def train_rate(det, dataset, config, warmup: int) -> tuple[dict[str, Any], dict]:
    """``det.fit`` on the dataset's train split (the shared trainer, its loader workers),
    timed per step; returns the window (:func:`window`) and the training log."""
    from diffzoo.harness.models.segmenter import TrainData

    stamps: list[float] = []
    with timed_batches() as waits:
        log = det.fit(TrainData(dataset, dataset.ids("train")), config,
                      progress=lambda step, loss: stamps.append(time.perf_counter()))
    return window(stamps, config.batch_size, warmup, waits, "training"), log


def eval_rate(det, dataset, workers: int, pin_memory: bool, short_side: int | None, warmup: int,
              split: str = "val", config: dict[str, Any] = DEFAULT_EVAL) -> dict[str, Any]:
    """``evaluate`` of ``split`` (batch 1, metrics, as a run), loader ``workers``, timed per image:
    the window (:func:`window`) and forward / metric / wait ms per image (:func:`per_image_parts`).
    ``config``: :data:`DEFAULT_EVAL` or :data:`NUMPY_NO_OVERLAP` (``evaluate``'s ``metrics``, ``overlap``)."""
    from diffzoo.harness.core.plugins import get_registry
    from diffzoo.harness.run.evaluate import evaluate

    identity = get_registry().get("distortion", "none").load()
    tasks = {"binary", "semantic"} if det.task == "semantic" else {"binary"}
    stamps = _Stamps()
    with timed_eval_inputs() as waits, timed_eval_parts() as parts:
        result = evaluate(det, dataset, split, identity, {}, tasks=tasks, progress=stamps, workers=workers,
                          pin_memory=pin_memory, input_short_side=short_side, metrics=config["metrics"],
                          overlap=config["overlap"])
    timing = window(stamps.stamps, 1, warmup, waits, "evaluation")
    return {**timing, "evaluated": result.evaluated, "config": config["config"], **per_image_parts(timing, parts)}


def parts_line(got: dict[str, Any]) -> str:
    """``forward 12.3 / metric 4.5 / wait 0.1 ms per image (forward leads; torch, overlapped)``."""
    how = f"{got['metric_path']}, {'overlapped' if got['overlap'] else 'not overlapped'}"
    return (f"forward {got['forward_ms']:.1f} / metric {got['metric_ms']:.1f} / wait {got['wait_ms']:.1f} ms "
            f"per image ({got['leads']} leads; {how})")


def per_image_s(rate: float | None, default: float) -> float:
    return 1.0 / rate if rate else default


class DataPathPlan:
    """What :func:`measure_data_path` runs: sizes, worker counts, images, steps, the model's settings."""

    def __init__(self, sizes: list[int], workers: list[int], n_train: int, n_val: int, warmup: int, steps: int,
                 train_config: Callable[[int], Any], short_side: int | None, pin_memory: bool,
                 margin_s: float, train_s: float, eval_s: float, compare: bool = False):
        self.sizes, self.workers, self.n_train, self.n_val = sizes, workers, n_train, n_val
        self.compare = compare  # also evaluate with NUMPY_NO_OVERLAP (the old way), at the most workers
        self.warmup, self.steps, self.train_config = warmup, steps, train_config
        self.short_side, self.pin_memory, self.margin_s = short_side, pin_memory, margin_s
        self.train_s, self.eval_s = train_s, eval_s  # model seconds per image (from the in-memory figures)

    def need_s(self, images: int, load_s: float, workers: int, model_s: float) -> float:
        """A generous guess of a measurement's seconds: loading spread over the workers, plus the model."""
        return 1.5 * images * (load_s / max(1, workers) + model_s) + self.margin_s


def measure_case(det, run: Run, plan: DataPathPlan, size: int, root: Path, label_names,
                 cases: dict[str, Any]) -> None:
    """Write one size's folder, open it, then train and evaluate with each worker count
    (the case is in ``cases`` from the start, so that a partial JSON holds it)."""
    case = cases[f"{size}px"] = write_diffseg_folder(root, size, plan.n_train, plan.n_val, label_names)
    dataset = open_png_dataset(root)
    load_s = load_ms(dataset, dataset.ids("train")) / 1000
    case.update(adapter=type(dataset).__name__, load_ms_per_sample=round(load_s * 1000, 2), train=[], eval=[])
    if plan.compare:
        case["eval_numpy_no_overlap"] = []
    print(f"  data path {size} px: {plan.n_train}+{plan.n_val} PNG pairs written in {case['write_s']:.1f} s "
          f"(image {case['image_png_kib']:.0f} KiB), opened as {case['adapter']}, load {load_s * 1000:.1f} ms/sample",
          flush=True)
    scale = (size / 512) ** 2 if plan.short_side is None else 1.0  # native: the model sees the stored size
    for workers in plan.workers:
        what = f"data path training, {size} px PNGs, {workers} worker(s)"
        images = (plan.warmup + plan.steps) * plan.train_config(workers).batch_size
        if run.affordable(what, plan.need_s(images, load_s, workers, plan.train_s)):
            got = run.attempt(what, lambda w=workers: train_rate(det, dataset, plan.train_config(w), plan.warmup)[0])
            if got is not None:
                case["train"].append({"workers": workers, **got})
                print(f"    train, {workers} worker(s): {got['images_per_s']:.1f} images/s, "
                      f"waiting for data {got['data_wait_share']:.0%}", flush=True)
        run.save()
    for workers in plan.workers:
        what = f"data path evaluation, {size} px PNGs, {workers} worker(s)"
        if run.affordable(what, plan.need_s(plan.n_val, load_s, workers, plan.eval_s * scale)):
            got = run.attempt(what, lambda w=workers: eval_rate(det, dataset, w, plan.pin_memory, plan.short_side,
                                                                 plan.warmup))
            if got is not None:
                case["eval"].append({"workers": workers, **got})
                print(f"    eval, {workers} worker(s): {got['images_per_s']:.1f} images/s, "
                      f"waiting for data {got['data_wait_share']:.0%}; {parts_line(got)}", flush=True)
        run.save()
    if plan.compare and plan.workers:  # the old way beside the default, where the loader is least in the way
        workers = max(plan.workers)
        what = f"data path evaluation, {size} px PNGs, {workers} worker(s), metrics=numpy, overlap=False"
        if run.affordable(what, plan.need_s(plan.n_val, load_s, workers, plan.eval_s * scale)):
            got = run.attempt(what, lambda: eval_rate(det, dataset, workers, plan.pin_memory, plan.short_side,
                                                      plan.warmup, config=NUMPY_NO_OVERLAP))
            if got is not None:
                case["eval_numpy_no_overlap"].append({"workers": workers, **got})
                print(f"    eval numpy, no overlap, {workers} worker(s): {got['images_per_s']:.1f} images/s; "
                      f"{parts_line(got)}", flush=True)
        run.save()


def measure_data_path(det, run: Run, plan: DataPathPlan, tmp: Path, label_names) -> dict[str, Any]:
    """Every size of ``plan``; the results go to ``run.results["data_path"]`` as they come."""
    out = run.results.setdefault("data_path", {"note": NOISE_NOTE, "cases": {}})
    for size in plan.sizes:
        what = f"data path, {size} px PNGs"
        if not run.affordable(f"{what} (writing them, every loop and worker count)", plan.margin_s * 2):
            continue
        run.attempt(what, lambda s=size: measure_case(det, run, plan, s, tmp / f"png-{s}px", label_names,
                                                      out["cases"]))
        run.save()
    return out


# -- the summary ----------------------------------------------------------------------------------


def _eval_rows(results: dict[str, Any]) -> Iterator[tuple[str, str, dict]]:
    """(data, workers, entry) of every evaluation with forward / metric / wait figures."""
    for e in results.get("eval_timing", {}).values():
        yield f"synthetic {results.get('size')}px", "0", e
    for size, case in results.get("data_path", {}).get("cases", {}).items():
        for kind in ("eval", "eval_numpy_no_overlap"):
            for e in case.get(kind, []):
                yield f"PNG {size}", str(e["workers"]), e


def _rows(results: dict[str, Any]) -> Iterator[tuple[str, str, dict]]:
    """(size, kind, entry) of every data-path measurement."""
    for size, case in results.get("data_path", {}).get("cases", {}).items():
        for kind in ("train", "eval"):
            for entry in case.get(kind, []):
                yield size, kind, entry


def print_summary(results: dict[str, Any], args) -> None:
    def mib(v):
        return "-" if v is None else f"{v:,.0f} MiB"

    precision = "bf16" if results.get("bf16_autocast") else "fp32"
    checks = results.get("device_metrics") or {}
    if checks:
        exact = sum(1 for c in checks.values() if c["exact"])
        print(f"metric counts on the device path equal the numpy path's: {exact} of {len(checks)} cases"
              + "".join(f"\n  MISMATCH {k}: {', '.join(c['mismatched'])}" for k, c in checks.items() if not c["exact"]))
    rows = []
    if "train_images_per_s" in results:
        rows.append(("train images/s", f"{results['train_images_per_s']:.1f}"))
    if "channels_last_speedup" in results:
        rows.append(("  x vs NCHW (same run)", f"{results['channels_last_speedup']:.2f}"))
    if "inference_b1_fp32_images_per_s" in results:
        rows += [
            ("eval images/s (batch 1, metrics)", f"{results['eval_images_per_s']:.1f}"),
            (f"inference images/s (batch {args.batch_size}, {precision})", f"{results['inference_images_per_s']:.1f}"),
            ("inference images/s (batch 1, fp32)", f"{results['inference_b1_fp32_images_per_s']:.1f}"),
            ("  mmseg published (batch 1, fp32)", f"{results['mmseg_published_fps']:.2f}"),
            ("peak memory train / eval", f"{mib(results['train_peak_mib'])} / {mib(results['eval_peak_mib'])}"),
        ]
    rows.append(("wall time", f"{results['wall_s']:.0f} s of a {results['budget_s']:.0f} s budget"))
    print()
    for label, value in rows:
        print(f"  {label:<34}{value:>22}")
    data = list(_rows(results))
    if data:
        print("\n  data path (PNG files through diffzoo's loaders; noise images: worst-case decoding)")
        print(f"  {'size':<8}{'loop':<7}{'workers':>8}{'images/s':>11}{'waiting':>9}")
        for size, kind, e in data:
            print(f"  {size:<8}{kind:<7}{e['workers']:>8}{e['images_per_s']:>11.1f}{e['data_wait_share']:>9.0%}")
    evals = list(_eval_rows(results))
    if evals:
        print("\n  evaluation per image, ms (forward synchronised; metric where it runs; wait: on the loader)")
        print(f"  {'data':<15}{'workers':>8}  {'config':<17}{'scoring':<15}{'images/s':>9}{'forward':>9}"
              f"{'metric':>8}{'wait':>8}  leads")
        for what, workers, e in evals:
            how = f"{e['metric_path']}{', overlap' if e['overlap'] else ''}"
            print(f"  {what:<15}{workers:>8}  {e['config']:<17}{how:<15}{e['images_per_s']:>9.1f}"
                  f"{e['forward_ms']:>9.1f}{e['metric_ms']:>8.1f}{e['wait_ms']:>8.1f}  {e['leads']}")
    models = results.get("benco", {}).get("models", {})
    if models:
        print(f"\n  {'IMDL-BenCo':<26}{'px':>6}{'batch':>6}{'train img/s':>12}{'waiting':>9}{'predict img/s':>14}")
        for name, m in models.items():
            print(f"  {name:<26}{m['input_size']:>6}{m['batch_size']:>6}{m['train_images_per_s']:>12.2f}"
                  f"{m['train_data_wait_share']:>9.0%}{m['inference_b1_fp32_images_per_s']:>14.2f}")
    if results["not_measured"]:
        print("\n  not measured:")
        for item in results["not_measured"]:
            print(f"  - {item['what']}: {item['why']}")


def figures(results: dict[str, Any], args) -> list[dict]:
    """Rows for ``python -m benchmarks``' table (bench.figure)."""
    from bench import figure

    precision = "bf16" if results.get("bf16_autocast") else "fp32"
    checks = results.get("device_metrics") or {}
    rows = []
    if checks:
        rows.append(figure("device metric path: cases equal to numpy", sum(1 for c in checks.values() if c["exact"]),
                           f">= {len(checks)}"))
    if "train_images_per_s" in results:
        rows.append(figure(f"train img/s (batch {args.batch_size}, {precision})", results["train_images_per_s"],
                           unit="img/s"))
    if "inference_b1_fp32_images_per_s" in results:
        fps = results["inference_b1_fp32_images_per_s"]
        rows += [figure("inference img/s (batch 1, fp32)", fps, unit="img/s"),
                 figure(f"x mmseg's {results['mmseg_published_fps']} fps (batch 1, fp32)",
                        fps / results["mmseg_published_fps"])]
    if "train_peak_mib" in results:
        rows.append(figure("peak train MiB", results["train_peak_mib"], unit="MiB"))
    for size, kind, e in _rows(results):
        rows += [figure(f"{kind} img/s, {size} PNGs, {e['workers']} workers", e["images_per_s"], unit="img/s"),
                 figure(f"{kind} data wait share, {size} PNGs, {e['workers']} workers", e["data_wait_share"])]
    for name, m in results.get("benco", {}).get("models", {}).items():
        rows += [figure(f"{name} train img/s (batch {m['batch_size']})", m["train_images_per_s"], unit="img/s"),
                 figure(f"{name} predict img/s (batch 1, fp32)", m["inference_b1_fp32_images_per_s"], unit="img/s")]
    return rows
