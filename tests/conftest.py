"""Shared fixtures: small datasets made by the tests, per-test caches that
share the trained checkpoints of the session."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from diffzoo.harness.metrics import METRICS_VERSION

# Loaders run in the test process unless a test asks for workers (tests/test_loading.py,
# the fault tests): forking workers for each of the suite's hundreds of tiny evaluations
# would double its time.  `DIFFZOO_WORKERS=2 python -m pytest` runs every test with workers.
os.environ.setdefault("DIFFZOO_WORKERS", "0")

ISOLATED_CACHE = "isolated_cache"
"""Marker (pyproject.toml): the test's checkpoint cache starts empty and is its own
(see :func:`_cache`); the fault tests, the checkpoint-cache tests and the torchrun
tests carry it."""

@pytest.fixture(scope="session")
def shared_checkpoints(tmp_path_factory) -> Path:
    """The checkpoint cache that every test not marked :data:`ISOLATED_CACHE`
    shares, so each tiny model is trained once per session.  Sharing is safe
    because the cache key hashes what determines the model (card, train
    config, dataset fingerprint, subset, seed): a test gets the model it
    would have trained; a tampered entry fails its sha256 check when loaded."""
    return tmp_path_factory.mktemp("shared-checkpoints")


@pytest.fixture(autouse=True)
def _cache(request, tmp_path_factory, monkeypatch):
    """Every test gets its own diffzoo cache ($DIFFZOO_CACHE: fingerprints,
    datasets, indexes, ...) and stays offline; its ``checkpoints/`` folder is a
    link to :func:`shared_checkpoints` unless the test is marked
    :data:`ISOLATED_CACHE`.  A test that points $DIFFZOO_CACHE elsewhere
    itself starts from an empty checkpoint cache there."""
    cache = tmp_path_factory.mktemp("cache")
    if request.node.get_closest_marker(ISOLATED_CACHE) is None:
        (cache / "checkpoints").symlink_to(request.getfixturevalue("shared_checkpoints"), target_is_directory=True)
    monkeypatch.setenv("DIFFZOO_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    from diffzoo.harness.core import plugins

    plugins.reset_plugins()
    yield
    plugins.reset_plugins()


def save_image(path: Path, arr: np.ndarray) -> Path:
    """Write ``arr`` as an image file at ``path`` (folders made; format from the suffix)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(arr).save(path)
    return path


def make_diffseg_folder(
    root: Path, n: int = 12, size: int = 32, editors: tuple[str, ...] = ("sd2", "sdxl"), seed: int = 0
) -> Path:
    """A DiffSeg30k-layout folder: smooth images whose edited squares are noise.

    Every third image is authentic (all-zero mask); the edited region is
    easy to learn, so a few training steps already beat trivial predictors.
    """
    rng = np.random.default_rng(seed)
    folder = root / "train_copy"
    folder.mkdir(parents=True)
    manifest = []
    yy, xx = np.mgrid[0:size, 0:size]
    for i in range(n):
        sid = f"{i:08d}"
        base = np.stack([(xx * 3 + i * 7) % 256, (yy * 3 + i * 11) % 256, np.full_like(xx, 90)], -1)
        image = base.astype(np.uint8)
        label = np.zeros((size, size), np.uint8)
        turns = []
        if i % 3:
            k = 1 + i % len(editors)
            s = size // 3
            y0, x0 = int(rng.integers(0, size - s)), int(rng.integers(0, size - s))
            image[y0 : y0 + s, x0 : x0 + s] = rng.integers(0, 256, (s, s, 3), dtype=np.uint8)
            label[y0 : y0 + s, x0 : x0 + s] = k
            turns.append({"editor": editors[k - 1], "prompt": "a cat", "edit_type": "object_addition",
                          "region": [x0, y0, x0 + s, y0 + s], "seed": i})
        Image.fromarray(image).save(folder / f"{sid}.image.png")
        Image.fromarray(label).save(folder / f"{sid}.mask.png")
        manifest.append({"id": sid, "base": "real" if i % 2 else "ai", "turns": turns, "source": "test"})
    (root / "labels.json").write_text(json.dumps({"names": ["background", *editors], "verified": True}))
    (root / "manifest.jsonl").write_text("".join(json.dumps(m) + "\n" for m in manifest))
    return root


@pytest.fixture
def diffseg_folder(tmp_path) -> Path:
    return make_diffseg_folder(tmp_path / "ds")


CASE_METRICS = {"binary": ("aAcc", "mIoU", "bF1", "F1", "pixel_AUC", "gIoU", "FPR_authentic"),
                "semantic": ("aAcc", "mAcc", "mIoU", "bF1", "top1", "top3"),
                "image": ("img_Acc", "img_real_Acc", "img_edited_Acc", "img_AP", "img_AUC")}


def make_state(task: str = "binary", n: int = 8, seed: int = 0, editors: tuple[str, ...] = ("sd2", "sdxl")):
    """A small real metric state (``task`` binary, semantic or image): 16x16
    label maps, every third image authentic, predictions a noisy copy of the
    GT; ``seed`` changes the predictions, not the images."""
    from diffzoo.harness.metrics import EvalState, prediction_digest
    from diffzoo.harness.core.types import EditRecord, LabelSpace, SampleMeta

    space = LabelSpace(("background", *editors))
    state = EvalState(space, "semantic" if task == "semantic" else "binary")
    rng = np.random.default_rng(seed)
    for i in range(n):
        gt = np.zeros((16, 16), np.uint8)
        turns = ()
        if i % 3:
            k = 1 + i % len(editors)
            gt[3:11, 4:12] = k if task == "semantic" else 1
            turns = (EditRecord(editors[k - 1], "a cat", "object_addition"),)
        pred = np.where(rng.random(gt.shape) < 0.1, 0, gt).astype(np.uint8)
        prob = np.clip((gt > 0) * 0.8 + rng.random(gt.shape) * 0.2, 0, 1)
        meta = SampleMeta(f"{i:04d}", "real" if i % 2 else "ai", turns)
        state.update(meta, gt, pred, prob, digest=prediction_digest(pred, prob, None))
    return state


def make_record(detector: str = "det", *, suite: str = "standard", suite_version: str = "1",
                case: str = "binary", task: str = "binary", dataset: str = "mini",
                fingerprint: str = "fp0001", metrics: dict | None = None, ci95: dict | None = None,
                seed: int = 0, checkpoint: str = "ab" * 32, date: str = "2026-11-29T12:00:00+00:00",
                state=None, case_fields: dict | None = None, dataset_fields: dict | None = None, **extra):
    """A valid ResultRecord with realistic fields, for leaderboard tests.

    Without ``state`` its metrics are the ones given (or typical ones): a
    record that renders but cannot be verified.  With ``state`` (see
    :func:`make_state`) every number comes from the state by the writer's
    code path, and the record carries the state: a record ``leaderboard
    add`` and ``verify`` accept."""
    from diffzoo.harness.records.document import ResultRecord

    if metrics is None:
        metrics = {"binary": {"aAcc": 0.9, "mIoU": 0.6, "bF1": 0.3, "F1": 0.7, "pixel_AUC": 0.8,
                              "gIoU": 0.5, "FPR_authentic": 0.1},
                   "semantic": {"aAcc": 0.85, "mAcc": 0.5, "mIoU": 0.4, "bF1": 0.2, "top1": 0.6,
                                "top3": 0.9, "IoU.sd2": 0.5, "IoU.sdxl": 0.3},
                   "image": {"img_Acc": 0.8, "img_real_Acc": 0.7, "img_edited_Acc": 0.9,
                             "img_AP": 0.85, "img_AUC": 0.88}}[task]
    case_def = {"name": case, "task": task, "split": "val", "distortion": "none", "distortion_params": {},
                **(case_fields or {})}
    fields = dict(
        detector={"name": detector, "checkpoint_sha256": checkpoint, "pretrained": False,
                  "plugin": "tests", "task": task},
        suite={"name": suite, "version": suite_version, "definition_hash": f"h{suite}{suite_version}"},
        case=case_def,
        dataset={"name": dataset, "fingerprint": fingerprint, **(dataset_fields or {})},
        label_space=["background", "sd2", "sdxl"] if task == "semantic" else ["background", "edited"],
        metrics=metrics, ci95=ci95 or {}, metrics_version=METRICS_VERSION, threshold_policy={"pixel": "fixed"},
        counts={"evaluated": 10}, seed=seed, config={},
        environment={"date": date, "git": "0123456789abcdef", "packages": {"diffzoo": "0.1.0"}},
    )
    if state is not None:
        from diffzoo.harness.records.check import recomputed

        case_def.update(metrics=list(CASE_METRICS[task]),
                        train={"task": "semantic" if task == "semantic" else "binary", "split": "train",
                               "exclude_editors": []})
        labels = list(state.label_space.names)
        numbers = recomputed(case_def, tuple(labels), state)
        fields.update(label_space=labels, metrics=numbers["metrics"], slices=numbers["slices"],
                      counts={"evaluated": state.num_images},
                      confusion=numbers["confusion"] if task == "semantic" else None)
    fields.update(extra)
    return ResultRecord.create(state=state, **fields)


@pytest.fixture
def record_factory():
    return make_record


@pytest.fixture
def offline_empty_hub(monkeypatch, tmp_path) -> list[tuple]:
    """An empty HF cache, offline; returns the list of attempted network connections."""
    import huggingface_hub.constants as hub_constants

    hub = tmp_path / "hf" / "hub"
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    # the hub library reads these at import time
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", True, raising=False)
    monkeypatch.setattr(hub_constants, "HF_HUB_CACHE", str(hub), raising=False)
    attempts: list[tuple] = []

    def refuse(self, address, *args):
        attempts.append(address)
        raise OSError("network disabled by the test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    return attempts


def cli(capsys, *args):
    """Run the CLI in-process: (exit code, stdout, stderr)."""
    from diffzoo.cli import main

    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in args])
        raise SystemExit(0)
    out = capsys.readouterr()
    return exc.value.code or 0, out.out, out.err


@pytest.fixture(scope="module")
def one_thread():  # module-scoped: the tiny-pipeline tests that ask for it
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models: one thread is as fast and steadier on a shared CPU
    try:
        yield
    finally:
        torch.set_num_threads(before)


def mixed_image(i: int, kind: str, rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray | None]:
    """Image ``i`` of a dataset mixing real and fake images (OpenSDI, SID-Set), and its 0/255
    mask: smooth for ``real`` (no mask), a noise square for a ``local`` edit (its mask), noise
    everywhere for a ``full`` (fully generated) image (no mask)."""
    yy, xx = np.mgrid[0:size, 0:size]
    image = np.stack([(xx * 3 + i * 7) % 256, (yy * 3 + i * 11) % 256, np.full_like(xx, 90)], -1).astype(np.uint8)
    if kind == "full":
        return rng.integers(0, 256, (size, size, 3), dtype=np.uint8), None
    if kind == "real":
        return image, None
    s = size // 3
    y0, x0 = (int(v) for v in rng.integers(0, size - s, 2))
    image[y0:y0 + s, x0:x0 + s] = rng.integers(0, 256, (s, s, 3), dtype=np.uint8)
    mask = np.zeros((size, size), np.uint8)
    mask[y0:y0 + s, x0:x0 + s] = 255
    return image, mask


@pytest.fixture(params=["numpy", "torch"])
def metric_reduce_path(request, monkeypatch):
    """Runs a metric test twice: ``EvalState.update`` reducing each image with the numpy path,
    then with the device path (``reduce_torch``, here on the CPU): every number the test checks
    must come out of both (issue 28)."""
    if request.param == "torch":
        import torch

        from diffzoo.harness.metrics import state
        from diffzoo.harness.metrics.reduce import reduce_torch

        def tensor(a):
            return None if a is None else torch.from_numpy(np.ascontiguousarray(a))

        def via_torch(gt, pred, prob, num_classes, bins, like=None):
            return reduce_torch(tensor(gt), tensor(pred), tensor(prob), num_classes, bins)

        monkeypatch.setattr(state, "reduce_numpy", via_torch)
    return request.param


def register_test_detector(monkeypatch, card, make) -> None:
    """Register detector ``card.name`` as a third party's plugin would: a module (put in
    ``sys.modules`` for the test) whose ``make(card, task, label_space, pretrained)`` builds it,
    named by a hookimpl of ``register_detectors``.  The plugin system is reset after every
    test (:func:`_cache`), so nothing outlives the test."""
    import sys

    from diffzoo import hookimpl
    from diffzoo.harness.core.plugins import get_plugin_system

    module_name = "tests_detector_" + "".join(ch if ch.isalnum() else "_" for ch in card.name)
    module = type(sys)(module_name)
    module.make = make
    monkeypatch.setitem(sys.modules, module_name, module)

    class Plugin:
        @hookimpl
        def register_detectors(self, register):
            register(card.name, f"{module_name}:make", card=card, default=True)

    get_plugin_system().pm.register(Plugin(), name=module_name)
