"""Evaluation's two metric paths and its overlap: the torch path (the model's device;
here the CPU) and the numpy path, each with and without the worker thread that scores image n
while image n + 1 runs, give the very same metric states, digests and baselines."""

from __future__ import annotations

import pytest
import torch

from diffzoo import create_detector, open_dataset
from diffzoo.harness.core.errors import ConfigError, DataError
from diffzoo.harness.run.evaluate import evaluate
from diffzoo.harness.run.scoring import Overlap, metric_path

from helpers.data import make_diffseg_folder


def _identity(image, label, **_):
    return image, label


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    folder = make_diffseg_folder(tmp_path_factory.mktemp("scoring"), n=16, size=40,
                                 editors=("sd2", "sdxl", "glide"))
    return open_dataset(str(folder))


@pytest.mark.parametrize("name, task, tasks", [
    ("segformer.tiny", "binary", ("binary",)),
    ("segformer.tiny", "semantic", ("binary", "semantic")),
    ("cnnspot.tiny", "classification", ("binary",)),
])
def test_every_path_gives_the_same_states(dataset, name, task, tasks):
    torch.manual_seed(0)
    label_space = dataset.label_space if task == "semantic" else None
    det = create_detector(name, task, label_space) if label_space is not None else create_detector(name, task)
    runs = {(path, overlap): evaluate(det, dataset, "val", _identity, {}, tasks=tasks, baselines=True,
                                      metrics=path, overlap=overlap)
            for path in ("numpy", "torch") for overlap in (False, True)}
    reference = runs[("numpy", False)]
    assert reference.evaluated == len(dataset.ids("val")) > 0
    for key, result in runs.items():
        assert result.evaluated == reference.evaluated, key
        assert {k: s.state_dict() for k, s in result.states.items()} == \
            {k: s.state_dict() for k, s in reference.states.items()}, key
        assert {k: s.state_dict() for k, s in result.baselines.items()} == \
            {k: s.state_dict() for k, s in reference.baselines.items()}, key


def test_overlap_keeps_the_order_and_raises_a_workers_error_in_the_caller():
    seen = []
    overlap = Overlap(True)
    for i in range(50):
        overlap.submit(seen.append, i)
    overlap.close()
    assert seen == list(range(50))

    def fail(i):
        if i == 3:
            raise DataError("image 3 is bad")
        seen.append(i)

    seen.clear()
    overlap = Overlap(True)
    with pytest.raises(DataError, match="image 3 is bad"):
        for i in range(10):
            overlap.submit(fail, i)
        overlap.close()
    assert seen == [0, 1, 2]  # nothing after the failing image is scored


def test_auto_takes_the_device_path_on_cuda_only():
    assert metric_path("auto", torch.device("cpu")) == "numpy"
    assert metric_path("auto", torch.device("cuda", 0)) == "torch"
    assert metric_path("torch", torch.device("cpu")) == "torch"
    with pytest.raises(ConfigError, match="'gpu' is not one of auto, numpy, torch"):
        metric_path("gpu", torch.device("cpu"))
