"""Loader workers (--workers): the same records, models, predictions and
errors for any number of worker processes."""

import json
import pickle

import numpy as np
import pytest
import torch

from diffzoo.harness.core.errors import (
    ConfigError,
    CorruptSampleError,
    DataError,
    DetectorError,
    UnknownNameError,
    WeightsUnavailableError,
)
from diffzoo.harness.core.parallel import check_workers, default_workers, ordered_map
from diffzoo.harness.core.train_config import TrainConfig
from diffzoo.harness.models.train_data import CropDataset, make_loader
from diffzoo.harness.run.factories import open_dataset
from diffzoo.harness.run.loading import eval_inputs
from diffzoo.harness.run.request import RunRequest
from diffzoo.harness.run.runner import run

from helpers.cli import cli
from helpers.data import make_diffseg_folder
from helpers.images import save_image

FAST = {"iterations": 12, "batch_size": 4, "crop_size": 32}


def _record_view(records) -> dict:
    """Per record: its metrics, counts, per-image prediction digests and the model's checkpoint hash."""
    view = {}
    for r in records:
        data = r.data
        state = json.loads(r.attachments[data["state_file"]])
        view[f'{data["suite"]["name"]}|{data["case"]["name"]}'] = {
            "metrics": data["metrics"], "counts": data["counts"], "rows": state["rows"],
            "checkpoint": data["detector"]["checkpoint_sha256"], "train": data["config"]["train"],
        }
    return view


@pytest.mark.isolated_cache  # each run trains its own model: workers must not change it
def test_workers_0_and_2_give_identical_records(tmp_path):
    folder = make_diffseg_folder(tmp_path / "ds", n=15)
    val = open_dataset(str(folder)).ids("val")
    bad = folder / "train_copy" / f"{val[0]}.image.png"
    bad.write_bytes(bad.read_bytes()[:50])  # a truncated image: skipped and counted alike
    views = []
    for workers in (0, 2):
        request = RunRequest(detector="segformer.tiny", suite="standard,distortions", dataset=str(folder),
                             device="cpu", bootstrap=20, workers=workers, **FAST)
        out = run(request)
        assert list(out.skipped) == [val[0]]
        views.append(_record_view(out.records))
    assert views[0].keys() == views[1].keys() and len(views[0]) >= 5
    for key in views[0]:
        assert views[0][key] == views[1][key], key
    assert "num_workers" not in next(iter(views[0].values()))["train"]  # not part of what a record names


def test_training_batches_do_not_depend_on_the_number_of_workers(tmp_path):
    folder = make_diffseg_folder(tmp_path / "ds", n=12, size=40)
    ds = open_dataset(str(folder))
    batches = {}
    for workers in (0, 2, 500):
        cfg = TrainConfig(batch_size=3, crop_size=24, num_workers=workers, seed=5)
        data = CropDataset(ds, ds.ids("train"), "semantic", cfg)
        loader = make_loader(data, cfg)
        assert loader.num_workers == min(workers, len(loader))  # never a process that is given no batch
        got = []
        for epoch in range(2):  # a new epoch draws new crops
            loader.sampler.set_epoch(epoch)
            got.append([(x.clone(), y.clone()) for x, y, _ in loader])
        batches[workers] = got
    assert len(batches[0][0]) == len(batches[2][0]) == len(batches[500][0]) > 1
    for many in (2, 500):
        for (x0, y0), (x2, y2) in zip(batches[0][0] + batches[0][1], batches[many][0] + batches[many][1]):
            assert torch.equal(x0, x2) and torch.equal(y0, y2)
    assert not all(torch.equal(a[0], b[0]) for a, b in zip(batches[0][0], batches[0][1]))


def test_eval_inputs_come_in_order_and_carry_errors_of_their_own_class(tmp_path):
    folder = make_diffseg_folder(tmp_path / "ds", n=9)
    ds = open_dataset(str(folder))
    ids = [*ds.ids("train"), *ds.ids("val")]
    bad = folder / "train_copy" / f"{ids[1]}.image.png"
    bad.write_bytes(b"not a png")

    def fussy(image, label, *, limit):
        if image.mean() > limit:
            raise DataError("too bright for this distortion")
        return image, label

    limit = float(np.median([ds.load(i).image.mean() for i in ids if i != ids[1]]))
    seen = {w: list(eval_inputs(ds, ids, fussy, {"limit": limit}, workers=w)) for w in (0, 3)}
    for a, b in zip(seen[0], seen[3], strict=True):
        assert a.sid == b.sid
        assert type(a.error) is type(b.error) and str(a.error) == str(b.error)
        if a.error is None:
            assert torch.equal(a.image, b.image) and np.array_equal(a.label, b.label) and a.meta == b.meta
    assert [i.sid for i in seen[3]] == ids
    assert isinstance(seen[3][1].error, CorruptSampleError) and seen[3][1].error.sample_id == ids[1]
    assert any(isinstance(i.error, DataError) and "too bright" in str(i.error) for i in seen[3])


def test_ordered_map_keeps_order_and_checks_the_count():
    assert list(ordered_map(abs, [-3, 1, -2, 5, -8], 2)) == [3, 1, 2, 5, 8]
    assert list(ordered_map(abs, [-1], 4)) == [1]
    assert list(ordered_map(abs, [], 2)) == []
    for bad in (-1, 1.5, "two", True):
        with pytest.raises(ConfigError, match="--workers"):
            check_workers(bad)


def test_default_workers_follows_the_environment(monkeypatch):
    monkeypatch.setenv("DIFFZOO_WORKERS", "3")
    assert default_workers() == 3
    monkeypatch.setenv("DIFFZOO_WORKERS", "-2")
    with pytest.raises(ConfigError, match="DIFFZOO_WORKERS"):
        default_workers()
    monkeypatch.delenv("DIFFZOO_WORKERS")
    import torch

    from diffzoo.harness.core import parallel

    for cores in (1, 2, 8, 32):
        monkeypatch.setattr(parallel, "available_cores", lambda cores=cores: cores)
        assert default_workers("cuda") == default_workers(torch.device("cuda", 1)) == min(4, cores)
        assert default_workers("cpu", threads=cores) == 0  # the model's threads take every core
        assert default_workers(torch.device("cpu"), threads=1) == min(4, cores - 1)  # generate: one editor thread
    monkeypatch.setattr(torch, "get_num_threads", lambda: 6)
    assert default_workers() == min(4, 32 - 6)  # without threads: torch's own count


def test_the_runner_defaults_to_no_workers_for_a_cpu_model(diffseg_folder, monkeypatch):
    from diffzoo.harness.run.request import RunRequest
    from diffzoo.harness.run.runner import Runner

    monkeypatch.delenv("DIFFZOO_WORKERS")
    runner = Runner(RunRequest(detector="segformer.tiny", suite="", dataset=str(diffseg_folder), device="cpu"))
    assert runner.workers == 0 and runner.config.num_workers == 0
    assert Runner(RunRequest(detector="segformer.tiny", suite="", dataset=str(diffseg_folder), device="cpu",
                             workers=2)).workers == 2


def test_errors_cross_processes_with_their_attributes():
    errors = [CorruptSampleError("s1", "truncated PNG", kind="truncated"),
              DetectorError("det", "returned NaN", sample_id="s2"),
              UnknownNameError("detector", "segfromer", ["segformer"]),
              WeightsUnavailableError("SegFormer-B2", "nvidia/mit-b2")]
    for err in errors:
        back = pickle.loads(pickle.dumps(err))
        assert type(back) is type(err) and str(back) == str(err) and back.__dict__ == err.__dict__


def test_bad_workers_option_is_one_line_and_exit_2(capsys):
    code, out, err = cli(capsys, "run", "--detector", "segformer.tiny", "--workers", "-1")
    assert code == 2 and "--workers -1" in err + out
    assert "Traceback" not in err + out


def test_predict_with_workers_gives_the_same_rows(tmp_path, capsys):
    folder = make_diffseg_folder(tmp_path / "ds", n=9)
    code, _, err = cli(capsys, "train", "--detector", "segformer.tiny", "--dataset", folder, "--iterations", 4,
                       "--batch-size", 2, "--crop-size", 32, "--device", "cpu", "--out", tmp_path / "ckpt",
                       "--workers", 0)
    assert code == 0, err
    images = tmp_path / "images"
    for i, path in enumerate(sorted((folder / "train_copy").glob("*.image.png"))[:5]):
        (images / path.name).parent.mkdir(exist_ok=True)
        (images / path.name).write_bytes(path.read_bytes() if i != 2 else b"garbage")
    save_image(images / "wide.png", np.full((20, 50, 3), 128, np.uint8))
    rows = {}
    for workers in (0, 2):
        code, out, err = cli(capsys, "predict", images, "--checkpoint", tmp_path / "ckpt", "--device", "cpu",
                           "--out", tmp_path / f"p{workers}", "--workers", workers)
        assert code == 1 and "1 image(s) could not be read" in out, err  # the garbage file
        rows[workers] = [json.loads(line) for line in
                         (tmp_path / f"p{workers}" / "predictions.jsonl").read_text().splitlines()]
        for row in rows[workers]:
            for key in ("label_map", "overlay"):
                if row.get(key):
                    with open(row[key], "rb") as fh:
                        row[key] = fh.read()  # the PNG's bytes, not where it was written
    assert rows[0] == rows[2] and len(rows[0]) == 6
    assert sum("error" in r for r in rows[2]) == 1
