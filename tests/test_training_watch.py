"""Training you can watch: the training log and TensorBoard events in
--out, the training plot, periodic validation that changes nothing, a NaN loss
that stops the run in one line, and SIGINT/SIGTERM that stop a training so that
the same command resumes it to the same weights."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from diffzoo import DetectorCard, RecipeValue
from diffzoo.harness.core.fsutil import cache_root
from diffzoo.harness.models.segmenter import SegmentationDetector
from diffzoo.harness.run.factories import open_dataset
from diffzoo.harness.run.request import RunRequest
from diffzoo.harness.run.runner import Runner

from helpers.cli import cli, one_line_exit_2
from helpers.detectors import register_test_detector

TRAIN = ["--iterations", "20", "--batch-size", "2", "--crop-size", "16", "--device", "cpu"]
RUN = [*TRAIN, "--bootstrap", "0"]


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


# -- the log, the events and the plot of every trained model ---------------------------------------

def test_run_writes_each_models_log_events_and_plot(capsys, diffseg_folder, tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out = tmp_path / "out"
    code, stdout, stderr = cli(capsys, "run", "-d", "segformer.tiny", "--suite", "standard", "--dataset",
                               diffseg_folder, "--out", out, "--log-every", "5", "--val-every", "10", *RUN)
    assert code == 0, stdout + stderr
    folders = sorted((out / "train").iterdir())
    assert [f.name.split("-")[1] for f in folders] == ["binary", "semantic"]  # one per trained model
    records = [json.loads(p.read_text()) for p in (out / "records").glob("*.json")]
    for folder in folders:
        rows = _rows(folder / "log.jsonl")
        train = [r for r in rows if r["event"] == "train"]
        assert [r["step"] for r in train] == [5, 10, 15, 20]
        assert {"backbone", "head"} <= set(train[0]["lr"]) and train[0]["epoch"] == 1
        assert all(r["images_per_s"] > 0 and 0 <= r["data_wait"] <= 1 and r["peak_mem_mib"] is None for r in train)
        val = [r for r in rows if r["event"] == "val"]
        assert [r["step"] for r in val] == [10, 20] and all(r["split"] == "val" for r in val)
        assert rows[-1]["event"] == "end" and rows[-1]["validation_seconds"] > 0

        events = EventAccumulator(str(folder))  # tensorboard's own reader
        events.Reload()
        tags = events.Tags()["scalars"]
        assert {"train/loss", "train/loss_mean", "lr/backbone", "perf/images_per_s", "val/binary_mIoU"} <= set(tags)
        assert [(e.step, round(e.value, 4)) for e in events.Scalars("train/loss")] == \
            [(r["step"], round(r["loss"], 4)) for r in train]

        png = out / "plots" / f"{folder.name}-training.png"
        with Image.open(png) as image:
            assert image.format == "PNG" and image.size[0] > 400 and image.size[1] > 400

        task = folder.name.split("-")[1]
        record = next(r for r in records if r["case"]["name"] == task)
        assert len(record["training"]["curve"]["step"]) == 20
        lrs = record["training"]["curve"]["lr"]  # the first group's schedule, as the log has it
        assert [lrs[r["step"] - 1] for r in train] == pytest.approx([r["lr"]["backbone"] for r in train], rel=1e-5)
        assert min(lrs) > 0
        assert record["training"]["validation"] == [{k: r[k] for k in ("step", "split", "metrics")} for r in val]
        # the last validation scores the final weights on the evaluated split: the record's own number
        assert val[-1]["metrics"][f"{task}_mIoU"] == pytest.approx(record["metrics"]["mIoU"], abs=1e-12)


def test_log_and_validation_cadence_are_checked_before_any_work(capsys, diffseg_folder):
    for flag, value in (("--log-every", "0"), ("--val-every", "-1")):
        code, _, err = cli(capsys, "run", "-d", "segformer.tiny", "--suite", "standard", "--dataset",
                           diffseg_folder, flag, value, *RUN)
        assert code == 2 and f"{flag} {value}" in err and len(_lines(err)) == 1


@pytest.mark.isolated_cache
def test_logging_and_validation_leave_the_weights_unchanged(diffseg_folder, tmp_path, monkeypatch):
    def trained(**options):
        request = RunRequest(detector="segformer.tiny", suite="standard", dataset=str(diffseg_folder), device="cpu",
                             iterations=12, batch_size=2, crop_size=16, **options)
        return Runner(request).train("semantic").checkpoint

    watched = trained(log_every=1, val_every=3)
    monkeypatch.setenv("DIFFZOO_CACHE", str(tmp_path / "plain"))
    plain = trained(val_every=0)
    assert watched.path.name == plain.path.name  # neither option is part of the cache key
    assert watched.sha256 == plain.sha256
    assert [v["step"] for v in watched.training["validation"]] == [3, 6, 9, 12]
    assert plain.training["validation"] == []
    assert watched.training["losses"] == plain.training["losses"]
    assert len(_rows(watched.log_dir / "log.jsonl")) > len(_rows(plain.log_dir / "log.jsonl"))


# -- a loss that becomes NaN -------------------------------------------------------------------------

class _NanAtThree(torch.nn.Module):
    """A network whose third training forward gives NaN logits."""

    def __init__(self, num_outputs: int):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, num_outputs, 3, padding=1)
        self.calls = 0

    def forward(self, x):
        out = self.conv(x)
        if self.training:
            self.calls += 1
            if self.calls == 3:
                out = out * float("nan")
        return out


class NanDetector(SegmentationDetector):
    def build_network(self, num_outputs, pretrained):
        return _NanAtThree(num_outputs)


@pytest.fixture
def nanloss(monkeypatch):
    card = DetectorCard(name="nanloss.x", description="its loss is NaN at step 3", tasks=("binary",))
    register_test_detector(monkeypatch, card, NanDetector)


@pytest.mark.isolated_cache
@pytest.mark.parametrize("bf16", [False, True], ids=["fp32", "bf16-autocast"])
def test_a_nan_loss_stops_in_one_line_and_leaves_no_checkpoint_nor_record(capsys, diffseg_folder, tmp_path,
                                                                         monkeypatch, nanloss, bf16):
    from diffzoo.harness.models import trainer

    if bf16:  # the loop's bf16 autocast, which runs on CUDA, here on the CPU
        monkeypatch.setattr(trainer, "autocast_enabled", lambda cfg, device: True)
    code, stdout, err = cli(capsys, "run", "-d", "nanloss", "--suite", "standard", "--dataset", diffseg_folder,
                            "--out", tmp_path / "out", *RUN)
    assert code == 1 and len(_lines(err)) == 1, err
    message = " ".join(err.split())
    assert "detector 'nanloss.x': training diverged at step 3 (loss nan; the last finite loss was" in message
    assert "at step 2; batch: " in message and "nothing was cached or recorded" in message
    named = message.split("batch: ")[1].split(")")[0].split(", ")
    train_ids = set(open_dataset(str(diffseg_folder)).ids("train"))
    assert len(named) == 2 and set(named) <= train_ids  # the batch of step 3, batch size 2
    models = cache_root() / "checkpoints" / "nanloss.x"
    assert not [p for p in models.iterdir() if (p / "model.safetensors").exists()]
    assert not list((tmp_path / "out" / "records").glob("*.json"))


@pytest.mark.parametrize("key, value, said", [
    ("lr", -1e-4, "training lr -0.0001: must be a finite number >= 0"),
    ("lr", float("nan"), "training lr nan: must be a finite number >= 0"),
    ("lr", float("inf"), "training lr inf: must be a finite number >= 0"),
    ("poly_power", "1", "training poly_power '1': must be a finite number >= 0"),
    ("warmup_iters", -3, "training warmup_iters -3: must be at least 0 (a whole number)"),
    ("betas", [0.9, 1.5], "training betas (0.9, 1.5): must be two numbers in [0, 1)"),
])
def test_a_recipe_value_no_training_can_use_is_one_line_before_training(capsys, diffseg_folder, monkeypatch, key,
                                                                        value, said):
    """A card recipe's negative or NaN lr was torch's "its fit raised ValueError: Invalid learning rate",
    an inf lr a divergence at step 2, and a NaN poly_power or a negative warmup trained unsaid."""
    card = DetectorCard(name="recipe.x", description="its recipe holds one bad value", tasks=("binary",),
                        recipe={key: RecipeValue(value, "a test")})
    register_test_detector(monkeypatch, card, NanDetector)
    code, out, err = cli(capsys, "train", "-d", "recipe", "--dataset", diffseg_folder, *TRAIN)
    assert one_line_exit_2(code, out, err) == f"error: detector card recipe.x: its recipe gives {said}"
    assert "trained" not in out


def test_a_recipe_lr_that_is_no_number_is_named_before_a_datasets_lr_scale_reads_it():
    """On `mini` (lr_scale 10) a plugin card's lr "fast" was "internal error: ValueError: could not convert"."""
    from types import SimpleNamespace

    from diffzoo.harness.core.errors import ConfigError
    from diffzoo.harness.run.plan import train_config

    card = DetectorCard(name="recipe.x", description="", tasks=("binary",), recipe={"lr": RecipeValue("fast", "me")})
    with pytest.raises(ConfigError) as info:
        train_config(card, SimpleNamespace(training_overrides={"lr_scale": 10.0}), {}, None, 0)
    assert str(info.value) == "detector card recipe.x: its recipe gives training lr 'fast': must be a finite number >= 0"


@pytest.mark.isolated_cache
def test_a_batch_larger_than_the_training_split_is_said(capsys, diffseg_folder, caplog):
    """--batch-size 100 on 10 training images trained on batches of 10, recorded as 100, unsaid."""
    code, out, err = cli(capsys, "train", "-d", "segformer.tiny", "--dataset", diffseg_folder, "--iterations", "2",
                         "--batch-size", "100", "--crop-size", "16", "--device", "cpu")
    assert code == 0, err
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and "--batch-size" in r.getMessage()] \
        == ["--batch-size 100 is more than the 10 training image(s): every step trains on all of them"]


@pytest.mark.isolated_cache
@pytest.mark.parametrize("detector, task, crop, what", [("segformer.tiny", "binary", "16", "pixel"),
                                                         ("cnnspot.tiny", "classification", "32", "image")])
def test_a_training_that_never_sees_an_edited_image_is_refused_and_caches_nothing(capsys, diffseg_folder, detector,
                                                                                  task, crop, what):
    """A train split of authentic images alone trained a model that calls nothing edited, cached and scored."""
    _authentic_only(diffseg_folder)
    code, out, err = cli(capsys, "train", "-d", detector, "--task", task, "--dataset", diffseg_folder,
                         "--iterations", "3", "--batch-size", "2", "--crop-size", crop, "--device", "cpu")
    _refused_as_never_edited(code, err, diffseg_folder, detector, what, 3)


@pytest.mark.isolated_cache
def test_a_resumed_training_that_never_sees_an_edited_pixel_is_refused_too(capsys, diffseg_folder, monkeypatch):
    """The refusal was skipped for a training resumed after a stop: its resume state did not say whether the
    steps before the stop saw an edited pixel, so a split of authentic images alone was cached and scored."""
    from diffzoo.harness.models import monitor

    _authentic_only(diffseg_folder)
    logged = monitor.TrainMonitor.step

    def step(self, step, *args, **kwargs):
        logged(self, step, *args, **kwargs)
        if step == 1:  # a scheduler's SIGTERM: the training stops after step 2 and saves its state
            os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(monitor.TrainMonitor, "step", step)
    args = ["train", "-d", "segformer.tiny", "--dataset", diffseg_folder, "--iterations", "4", "--batch-size", "2",
            "--crop-size", "16", "--device", "cpu"]
    code, _, err = cli(capsys, *args)
    assert code == 143 and _lines(err) == ["stopped at step 2 of 4 (SIGTERM); run the same command to resume"]
    monkeypatch.setattr(monitor.TrainMonitor, "step", logged)
    code, _, err = cli(capsys, *args)  # the same command resumes at step 2
    _refused_as_never_edited(code, err, diffseg_folder, "segformer.tiny", "pixel", 4)
    assert not list((cache_root() / "checkpoints" / "segformer.tiny").glob("*.resume/step-*"))


def test_a_resume_state_of_the_format_before_saw_edited_is_ignored_with_a_warning(tmp_path, caplog):
    """A state without ``saw_edited`` cannot say whether its steps saw an edited label: training starts over."""
    from diffzoo.harness.models.resume import Resume

    resume = Resume(tmp_path / "r")
    path = resume.save(1, {"x": torch.zeros(1)}, {"losses": [1.0]})
    state = json.loads((path / "state.json").read_text())
    (path / "state.json").write_text(json.dumps({**state, "format": "diffzoo-resume-2"}))
    assert resume.load() is None
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == [
        f"ignoring the training state in {path}: not a diffzoo-resume-3 state of step 1"]


def _authentic_only(folder: Path) -> None:
    """Every training mask of ``folder`` all authentic, and no sample edited."""
    for mask in folder.glob("train_copy/*.mask.png"):
        Image.fromarray(np.zeros((32, 32), np.uint8)).save(mask)
    manifest = folder / "manifest.jsonl"
    manifest.write_text("".join(json.dumps({**json.loads(line), "turns": []}) + "\n"
                                for line in manifest.read_text().splitlines()))


def _refused_as_never_edited(code: int, err: str, folder: Path, detector: str, what: str, steps: int) -> None:
    assert code == 1 and len(_lines(err)) == 1, err
    assert " ".join(err.split()) == (
        f"error: detector '{detector}': training on {open_dataset(str(folder)).name} saw no edited "
        f"{what} in its {steps} steps (every label was authentic): its training split holds no edited image, and a "
        "model that never saw one is not scored; nothing was cached")
    assert not list((cache_root() / "checkpoints" / detector).glob("*/model.safetensors"))


# -- SIGINT and SIGTERM ---------------------------------------------------------------------------

_SIGNAL_AT_STEP_7 = """
import os, signal, sys
from diffzoo.harness.models import monitor
logged = monitor.TrainMonitor.step
def step(self, step, *args, **kwargs):
    logged(self, step, *args, **kwargs)
    if step == 7:  # the signal a scheduler or a Ctrl-C sends, to this very process
        os.kill(os.getpid(), getattr(signal, sys.argv[1]))
monitor.TrainMonitor.step = step
from diffzoo.cli import main
main(sys.argv[2:])
"""


@pytest.mark.isolated_cache
@pytest.mark.parametrize("signame, code", [("SIGTERM", 143), ("SIGINT", 130)])
def test_a_signal_stops_training_and_the_same_command_resumes_to_identical_weights(capsys, diffseg_folder, tmp_path,
                                                                                   monkeypatch, signame, code):
    args = ["train", "-d", "segformer.tiny", "--dataset", str(diffseg_folder), "--log-every", "1", *TRAIN]
    stopped = subprocess.run([sys.executable, "-c", _SIGNAL_AT_STEP_7, signame, *args], cwd=tmp_path,
                             env=dict(os.environ), capture_output=True, text=True, timeout=300)
    assert stopped.returncode == code, stopped.stderr
    assert _lines(stopped.stderr) == [f"stopped at step 8 of 20 ({signame}); run the same command to resume"]
    models = cache_root() / "checkpoints" / "segformer.tiny"
    assert not [p for p in models.iterdir() if (p / "model.safetensors").exists()]  # nothing cached yet
    (saved,) = [p.name for p in models.glob("*.resume/step-*")]
    assert saved == "step-000000008"

    resumed_code, resumed, err = cli(capsys, *args)  # the same command
    assert resumed_code == 0, resumed + err
    (log_dir,) = models.glob("*.train")
    rows = _rows(log_dir / "log.jsonl")
    assert [r["step"] for r in rows if r["event"] == "start"] == [8]  # it resumed: steps 9 to 20 were trained
    assert [r["step"] for r in rows if r["event"] == "train"] == list(range(1, 21))

    monkeypatch.setenv("DIFFZOO_CACHE", str(tmp_path / "uninterrupted"))
    whole_code, whole, err = cli(capsys, *args)
    assert whole_code == 0, whole + err
    (after_stop,) = models.glob("*/model.safetensors")
    (uninterrupted,) = (tmp_path / "uninterrupted" / "checkpoints" / "segformer.tiny").glob("*/model.safetensors")
    assert after_stop.parent.name == uninterrupted.parent.name  # one cache key
    assert after_stop.read_bytes() == uninterrupted.read_bytes()
    curves = [json.loads((p.parent / "card.json").read_text())["training"]["curve"] for p in (after_stop, uninterrupted)]
    assert curves[0] == curves[1] and min(curves[0]["lr"]) > 0  # the schedule, not the saved step's rate
