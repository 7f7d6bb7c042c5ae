"""Fixtures and hooks shared by every test: small datasets made by the tests, per-test caches
that share the trained checkpoints of the session.  The plain code they build with, and that the
tests import, is in ``tests/helpers/``."""

from __future__ import annotations

import os
import signal
import socket
from pathlib import Path

import numpy as np
import pytest

from helpers.data import make_diffseg_folder
from helpers.records import make_record

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
    default_out = Path("diffzoo-out").resolve()  # a command given no --out writes here: the folder tests run from
    there = default_out.exists()
    yield
    plugins.reset_plugins()
    # a test's output stays in its tmp_path: one left in the working folder meets the next run's numbers
    assert there or not default_out.exists(), f"{request.node.nodeid} wrote {default_out}: give it --out"


@pytest.fixture
def diffseg_folder(tmp_path) -> Path:
    return make_diffseg_folder(tmp_path / "ds")


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


@pytest.fixture(scope="module")
def one_thread():  # module-scoped: the tiny-pipeline tests that ask for it
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models: one thread is as fast and steadier on a shared CPU
    try:
        yield
    finally:
        torch.set_num_threads(before)


@pytest.fixture(params=["numpy", "torch"])
def metric_reduce_path(request, monkeypatch):
    """Runs a metric test twice: ``EvalState.update`` reducing each image with the numpy path,
    then with the device path (``reduce_torch``, here on the CPU): every number the test checks
    must come out of both."""
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


@pytest.fixture(autouse=True)
def _sigint_handler():
    """The CLI ignores a second Ctrl-C once it exits after the first: a test that runs it in-process
    gets pytest's handler back."""
    handler = signal.getsignal(signal.SIGINT)
    yield
    signal.signal(signal.SIGINT, handler)
