"""Fault suite: training shared with another process and a disk that fills up during a training.

Two runs that share ``$DIFFZOO_CACHE`` and need the same model: one trains it while the other
waits, then loads it; a resume state is taken over only from a process that is gone.  A full
disk inside any writer of a training (safetensors, the log, TensorBoard) is one line naming the
file and the free space of its filesystem, exit 2, and nothing half-written is cached."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from diffzoo.harness.core.fsutil import cache_root, free_space

from helpers.cli import cli
from helpers.data import make_diffseg_folder

pytestmark = pytest.mark.isolated_cache  # two processes share one cache that starts empty

TRAIN = ["train", "-d", "segformer.tiny", "--iterations", "20", "--batch-size", "2", "--crop-size", "16",
         "--device", "cpu", "--log-every", "1", "--save-every", "2"]

# Trains like `diffzoo train`, but after step 4 (a resume state is saved at step 4) says so in the
# file argv[1] and waits, the training lock held, until the file argv[2] exists.
_PAUSE_AT_STEP_4 = """
import sys, time
from pathlib import Path
from diffzoo.harness.models import monitor
logged = monitor.TrainMonitor.step
def step(self, step, *args, **kwargs):
    logged(self, step, *args, **kwargs)
    if step == 4:
        Path(sys.argv[1]).write_text("paused")
        deadline = time.monotonic() + 300
        while not Path(sys.argv[2]).exists() and time.monotonic() < deadline:
            time.sleep(0.05)
monitor.TrainMonitor.step = step
from diffzoo.cli import main
main(sys.argv[3:])
"""


def _models() -> Path:
    return cache_root() / "checkpoints" / "segformer.tiny"


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def _start(args: list[str], tmp_path: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, *args], cwd=tmp_path, env=dict(os.environ), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _paused_holder(diffseg_folder: Path, tmp_path: Path) -> subprocess.Popen:
    """A first process that trains and is paused after step 4, holding the training."""
    paused = tmp_path / "paused"
    first = _start(["-c", _PAUSE_AT_STEP_4, str(paused), str(tmp_path / "release"), *TRAIN, "--dataset",
                    str(diffseg_folder), "--out", "first"], tmp_path)
    deadline = time.monotonic() + 300
    while not paused.exists():
        if first.poll() is not None or time.monotonic() > deadline:
            first.kill()
            pytest.fail(f"the first training never reached step 4: {first.communicate()}")
        time.sleep(0.05)
    return first


def _read_until(proc: subprocess.Popen, words: str) -> list[str]:
    """``proc``'s stderr lines up to the first holding ``words`` (all of them if none does)."""
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        seen.append(line.rstrip("\n"))
        if words in line:
            break
    return seen


def test_a_second_run_waits_for_the_training_in_progress_then_loads_its_checkpoint(diffseg_folder, tmp_path):
    first = _paused_holder(diffseg_folder, tmp_path)
    second = _start(["-m", "diffzoo", *TRAIN, "--dataset", str(diffseg_folder), "--out", "second"], tmp_path)
    waited = _read_until(second, "waiting for another process training")  # it blocks there, the lock held
    (tmp_path / "release").write_text("")
    out1, err1 = first.communicate(timeout=300)
    out2, rest = second.communicate(timeout=300)
    err2 = "\n".join([*waited, rest])
    assert first.returncode == 0, err1
    assert second.returncode == 0, err2

    (key_dir,) = [p for p in _models().iterdir() if (p / "model.safetensors").exists()]
    lock = _models() / f"{key_dir.name}.lock"
    waits = [line for line in _lines(err2) if "waiting for another process" in line]
    assert len(waits) == 1 and f"training {key_dir.name} (lock {lock})" in waits[0], err2
    assert "resuming" not in err2  # the live holder's resume state was never taken
    assert "found in the cache" in out2 and "trained:" in out1
    # one training: one log with one start and one end, every step once, one TensorBoard events file
    (log_dir,) = _models().glob("*.train")
    rows = _rows(log_dir / "log.jsonl")
    assert [r["step"] for r in rows if r["event"] == "start"] == [0]
    assert len([r for r in rows if r["event"] == "end"]) == 1
    assert [r["step"] for r in rows if r["event"] == "train"] == list(range(1, 21))
    assert len(list(log_dir.glob("events.out.tfevents.*"))) == 1
    assert not list(_models().glob("*.resume"))  # cleared once the checkpoint was cached

    def digest(folder: str) -> str:
        return hashlib.sha256((tmp_path / folder / "model.safetensors").read_bytes()).hexdigest()

    assert digest("first") == digest("second") == hashlib.sha256(
        (key_dir / "model.safetensors").read_bytes()).hexdigest()


def test_a_resume_state_is_taken_over_only_when_its_process_is_gone(diffseg_folder, tmp_path):
    first = _paused_holder(diffseg_folder, tmp_path)
    second = _start(["-m", "diffzoo", *TRAIN, "--dataset", str(diffseg_folder)], tmp_path)
    waited = _read_until(second, "waiting for another process training")
    assert waited and "waiting for another process training" in waited[-1], waited  # not taken while alive
    first.send_signal(signal.SIGKILL)  # the holder dies: the operating system frees its lock
    first.communicate(timeout=60)
    out, rest = second.communicate(timeout=300)
    err = "\n".join([*waited, rest])
    assert second.returncode == 0, err
    assert "resuming an interrupted training from step 4" in err and "trained:" in out
    (log_dir,) = _models().glob("*.train")
    rows = _rows(log_dir / "log.jsonl")
    assert [r["step"] for r in rows if r["event"] == "start"] == [4]  # it resumed: steps 5 to 20 were trained
    assert [r["step"] for r in rows if r["event"] == "train"] == list(range(1, 21))


# -- a full disk inside the writers of a training ----------------------------------------------

def _full(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def _safetensors_full(*args, **kwargs):
    from safetensors import SafetensorError

    raise SafetensorError("Error while serializing: IoError(Os { code: 28, kind: StorageFull, "
                          "message: \"No space left on device\" })")


def _one_line_exit_2(code: int, err: str) -> str:
    lines = _lines(err)
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("error: disk full while writing "), err
    return " ".join(err.split())


def _nothing_half_written() -> None:
    """No checkpoint cached, no dot-folder of a write cut short; every resume state whole."""
    models = _models()
    assert not [p for p in models.rglob("model.safetensors")]
    assert not [p for p in models.rglob(".*") if p.is_dir()]
    for step in models.glob("*.resume/step-*"):
        assert {p.name for p in step.iterdir()} == {"state.json", "state.safetensors"}


@pytest.mark.parametrize("error", [_full, _safetensors_full], ids=["OSError", "SafetensorError"])
def test_a_full_disk_while_saving_the_resume_state_is_one_line(capsys, diffseg_folder, monkeypatch, error):
    import safetensors.torch
    import transformers.modeling_utils  # noqa: F401  binds the real save_file at import: later tests write with it

    monkeypatch.setattr(safetensors.torch, "save_file", error)
    code, _, err = cli(capsys, *TRAIN, "--dataset", diffseg_folder)
    line = _one_line_exit_2(code, err)
    (resume,) = _models().glob("*.resume")
    target = resume / "step-000000002" / "state.safetensors"
    assert f"disk full while writing {target} ({free_space(target)} on that filesystem)" in line
    _nothing_half_written()
    assert not list(resume.iterdir())


@pytest.mark.parametrize("error", [_full, _safetensors_full], ids=["OSError", "SafetensorError"])
def test_a_full_disk_while_caching_the_checkpoint_is_one_line(capsys, diffseg_folder, monkeypatch, error):
    import safetensors.torch
    import transformers.modeling_utils  # noqa: F401  binds the real save_file at import: later tests write with it

    monkeypatch.setattr(safetensors.torch, "save_file", error)
    code, _, err = cli(capsys, *TRAIN[:-2], "--save-every", "0", "--dataset", diffseg_folder)
    line = _one_line_exit_2(code, err)
    (log_dir,) = _models().glob("*.train")
    target = _models() / log_dir.name.removesuffix(".train") / "model.safetensors"
    assert f"disk full while writing {target} ({free_space(target)} on that filesystem)" in line
    _nothing_half_written()


def test_a_full_disk_while_writing_the_training_log_is_one_line(capsys, diffseg_folder, monkeypatch):
    from diffzoo.harness.core import fsutil

    writes = [0]

    class Full:
        """A file as open() gives it in fsutil (the training log is appended there), whose 6th
        write finds the disk full."""

        def __init__(self, fh):
            self.fh = fh

        def __getattr__(self, name):  # reading (sha256_file) as the real file does
            return getattr(self.fh, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()

        def write(self, text):
            writes[0] += 1
            if writes[0] == 6:
                _full()
            return self.fh.write(text)

    monkeypatch.setattr(fsutil, "open", lambda path, *a, **k: Full(open(path, *a, **k)), raising=False)
    code, _, err = cli(capsys, *TRAIN, "--dataset", diffseg_folder)
    line = _one_line_exit_2(code, err)
    (log_dir,) = _models().glob("*.train")
    target = log_dir / "log.jsonl"
    assert f"disk full while writing {target} ({free_space(target)} on that filesystem)" in line
    _nothing_half_written()


def test_a_full_disk_inside_tensorboards_writer_thread_is_one_line(capsys, diffseg_folder, monkeypatch):
    """TensorBoard writes its events in a thread of its own; the disk filling up there ends the
    training at the step whose events it was writing, naming the events file."""
    from tensorboard.summary.writer import record_writer

    real, writes = record_writer.RecordWriter.write, [0]

    def write(self, data):
        writes[0] += 1
        if writes[0] == 12:  # past the file's first event: inside the training
            _full()
        return real(self, data)

    monkeypatch.setattr(record_writer.RecordWriter, "write", write)
    tracebacks: list = []  # what the interpreter would print on stderr for an error ending a thread
    monkeypatch.setattr(threading, "excepthook", tracebacks.append)
    code, _, err = cli(capsys, *TRAIN, "--dataset", diffseg_folder)
    assert tracebacks == []  # the thread's error is the one line below, not a traceback too
    line = _one_line_exit_2(code, err)
    (log_dir,) = _models().glob("*.train")
    (events,) = log_dir.glob("events.out.tfevents.*")
    assert f"disk full while writing {events} ({free_space(events)} on that filesystem)" in line
    steps = [r["step"] for r in _rows(log_dir / "log.jsonl") if r["event"] == "train"]
    assert steps and steps[-1] < 20  # it stopped there, not at the end
    _nothing_half_written()


# -- a preempted torchrun job ------------------------------------------------------------------
def _torchrun(*args, cwd: Path) -> subprocess.CompletedProcess:
    """``diffzoo ARGS`` under torchrun with two CPU ranks, one thread each (equal floats)."""
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    return subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
                           "-m", "diffzoo", *map(str, args)], cwd=cwd, env={**env, "OMP_NUM_THREADS": "1"},
                          capture_output=True, text=True, timeout=300)


_SIGTERM_RANK_1 = """
import os, signal, sys
from diffzoo.harness.models import monitor
logged = monitor.TrainMonitor.step
def step(self, step, *args, **kwargs):
    logged(self, step, *args, **kwargs)
    if step == 3 and os.environ["RANK"] == "1":  # a signal that reaches one rank only
        os.kill(os.getpid(), signal.SIGTERM)
monitor.TrainMonitor.step = step
from diffzoo.cli import main
main(sys.argv[1:])
"""


def test_torchrun_a_signal_to_one_rank_stops_every_rank_and_the_same_command_resumes_to_identical_weights(
        tmp_path, monkeypatch):
    """A preempted torchrun job: SIGTERM reaches one rank, every rank stops after the same step
    with the state of every rank saved by rank 0, and the same command resumes both ranks to the
    weights an uninterrupted two-process training gives, byte for byte."""
    data = make_diffseg_folder(tmp_path / "ds", n=12)
    script = tmp_path / "stop.py"
    script.write_text(_SIGTERM_RANK_1)
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    args = ["train", "--detector", "segformer.tiny", "--iterations", "20", "--batch-size", "4", "--crop-size", "16", "--device", "cpu",
            "--dataset", str(data)]
    result = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
                             str(script), *args], cwd=tmp_path, env={**env, "OMP_NUM_THREADS": "1"},
                            capture_output=True, text=True, timeout=300)
    assert result.returncode != 0
    stops = [line for line in result.stderr.splitlines() if line.startswith("stopped at step")]
    assert len(stops) == 1 and all(line == "stopped at step 4 of 20 (SIGTERM); run the same command to resume"
                         for line in stops), result.stderr
    cache = Path(os.environ["DIFFZOO_CACHE"]) / "checkpoints" / "segformer.tiny"
    assert not list(cache.glob("*/model.safetensors"))  # nothing cached, on any rank
    (log_dir,) = cache.glob("*.train")
    assert [json.loads(line)["step"] for line in (log_dir / "log.jsonl").read_text().splitlines()
            if json.loads(line)["event"] == "train"] == [1, 2, 3, 4]  # rank 0 stopped where rank 1 did
    (saved,) = cache.glob("*.resume/step-*")
    assert saved.name == "step-000000004"
    state = json.loads((saved / "state.json").read_text())
    assert state["world_size"] == 2 and len(state["ranks"]) == 2  # every rank's generators and counts

    resumed = _torchrun(*args, "--out", "resumed", cwd=tmp_path)  # the same command
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming an interrupted training from step 4" in resumed.stderr
    rows = [json.loads(line) for line in (log_dir / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if r["event"] == "start"] == [4]
    assert [r["step"] for r in rows if r["event"] == "train"] == list(range(1, 21))

    monkeypatch.setenv("DIFFZOO_CACHE", str(tmp_path / "uninterrupted"))
    whole = _torchrun(*args, "--out", "whole", cwd=tmp_path)
    assert whole.returncode == 0, whole.stderr
    assert "resuming" not in whole.stderr
    assert (tmp_path / "resumed" / "model.safetensors").read_bytes() == \
        (tmp_path / "whole" / "model.safetensors").read_bytes()
    cards = [json.loads((tmp_path / name / "card.json").read_text())["training"] for name in ("resumed", "whole")]
    assert cards[0]["losses"] == cards[1]["losses"] and cards[0]["skipped_samples"] == cards[1]["skipped_samples"]
