"""Plain progress lines when the console is not a terminal (CI, nohup, a
log file): one each tenth of the total or 30 s, whichever comes first, and a
final line; a terminal keeps the rich bar.  The clock is driven by hand."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from diffzoo.cli.progress import RichProgress

from helpers.cli import cli


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _console(terminal: bool = False) -> Console:
    return Console(file=io.StringIO(), force_terminal=terminal, width=200)


def _lines(console: Console) -> list[str]:
    return console.file.getvalue().splitlines()


def _run(total: int | None, steps: int, seconds_per_step: float, n: int = 1, **info: object) -> list[str]:
    console, clock = _console(), FakeClock()
    with RichProgress(console, clock=clock).task("building mini", total=total) as task:
        for _ in range(steps):
            clock.now += seconds_per_step
            task.advance(n, **info)
    return _lines(console)


def test_a_line_each_tenth_of_the_total_and_a_final_line():
    lines = _run(total=50, steps=50, seconds_per_step=0.5)
    expected = [f"building mini  {done}/50  {2 * done}%  2.00/s  ETA {eta}"
                for done, eta in zip(range(5, 51, 5),
                                     ("0:00:22", "0:00:20", "0:00:18", "0:00:15", "0:00:12",
                                      "0:00:10", "0:00:08", "0:00:05", "0:00:02", "0:00:00"))]
    assert lines == [*expected, "building mini  finished 50/50 in 0:00:25  2.00/s"]


def test_a_slow_task_prints_at_least_every_30_seconds():
    lines = _run(total=1000, steps=3, seconds_per_step=31)
    assert lines == [
        "building mini  1/1000  0%  0.03/s  ETA 8:36:09",
        "building mini  2/1000  0%  0.03/s  ETA 8:35:38",
        "building mini  3/1000  0%  0.03/s  ETA 8:35:07",
        "building mini  finished 3/1000 in 0:01:33  0.03/s",
    ]


def test_30_seconds_count_from_the_last_line():
    lines = _run(total=1000, steps=8, seconds_per_step=10)  # lines at 30 s and 60 s
    assert lines == [
        "building mini  3/1000  0%  0.10/s  ETA 2:46:10",
        "building mini  6/1000  0%  0.10/s  ETA 2:45:40",
        "building mini  finished 8/1000 in 0:01:20  0.10/s",
    ]


def test_an_unknown_total_prints_done_and_rate():
    lines = _run(total=None, steps=4, seconds_per_step=20, n=10)  # 30 s rule only
    assert lines == [
        "building mini  20  0.50/s",
        "building mini  40  0.50/s",
        "building mini  finished 40 in 0:01:20  0.50/s",
    ]


def test_info_fields_follow_the_counts():
    lines = _run(total=2, steps=2, seconds_per_step=1, loss=0.1234, epoch=3)
    assert lines == [
        "building mini  1/2  50%  1.00/s  ETA 0:00:01  loss 0.1234  epoch 3",
        "building mini  2/2  100%  1.00/s  ETA 0:00:00  loss 0.1234  epoch 3",
        "building mini  finished 2/2 in 0:00:02  1.00/s  loss 0.1234  epoch 3",
    ]


def test_a_task_left_by_an_error_says_where_it_stopped():
    console, clock = _console(), FakeClock()
    with pytest.raises(KeyError), RichProgress(console, clock=clock).task("reading x", total=50) as task:
        clock.now += 4
        task.advance(2)
        raise KeyError("boom")
    assert _lines(console) == ["reading x  stopped at 2/50 after 0:00:04  0.50/s"]


def test_outside_text_is_escaped():
    console, clock = _console(), FakeClock()
    with RichProgress(console, clock=clock).task("training [bold]x\x1b[2J[/bold]", total=1) as task:
        clock.now += 1
        task.advance(1, name="a\nb")
    assert _lines(console) == [
        "training [bold]x\\x1b[2J[/bold]  1/1  100%  1.00/s  ETA 0:00:00  name a\\nb",
        "training [bold]x\\x1b[2J[/bold]  finished 1/1 in 0:00:01  1.00/s  name a\\nb",
    ]


def test_a_quiet_console_prints_nothing():
    """rank_output quiets the console on ranks > 0; progress lines obey it."""
    console, clock = _console(), FakeClock()
    console.quiet = True
    with RichProgress(console, clock=clock).task("building mini", total=10) as task:
        for _ in range(10):
            clock.now += 1
            task.advance()
    assert console.file.getvalue() == ""


def test_a_terminal_keeps_the_rich_bar():
    console, clock = _console(terminal=True), FakeClock()
    with RichProgress(console, clock=clock).task("building mini", total=50) as task:
        for _ in range(50):
            clock.now += 1
            task.advance(loss=0.5)
    out = console.file.getvalue()
    assert "\x1b[" in out and "━" in out and "50/50" in out and "loss 0.5000" in out
    assert "finished" not in out and "ETA" not in out and "/s" not in out


def test_data_stats_piped_prints_progress_lines(capsys, diffseg_folder):
    """End to end: stdout captured is not a terminal, so reading the 12
    images prints a line each tenth (done*10//12 steps up at 2,3,4,5,6,8,...)."""
    code, out, err = cli(capsys, "data", "stats", str(diffseg_folder), "--no-plots")
    assert code == 0, err
    counts = [int(m.group(1)) for m in re.finditer(r"^reading \S+  (\d+)/12  \d+%  \S+/s  ETA \S+$", out, re.M)]
    assert set(counts) >= {2, 3, 4, 5, 6, 8, 9, 10, 11, 12}  # the 30 s rule may add lines on a slow machine
    assert re.search(r"^reading \S+  finished 12/12 in \d+:\d\d:\d\d  \S+/s$", out, re.M)


def test_a_long_first_fingerprint_is_shown_where_the_command_reports(capsys, diffseg_folder, monkeypatch, tmp_path):
    """Hashing a large dataset the first time takes minutes: it is a progress task (on stderr for
    `data info`, in the run's own progress for `diffzoo.evaluate`), never silence; the next read
    hits the digest cache and shows none."""
    from contextlib import contextmanager

    import diffzoo

    from helpers.data import make_diffseg_folder

    monkeypatch.setattr("diffzoo.harness.data.fingerprint._ANNOUNCE_BYTES", 0)  # this small folder counts as large
    code, out, err = cli(capsys, "data", "info", str(diffseg_folder))
    assert code == 0, err
    shown = re.findall(r"^fingerprinting 0\.0 GB of .+ once \(cached in .+\)  finished (\d+)/(\d+) in ", err, re.M)
    assert shown and all(done == total and int(total) > 0 for done, total in shown), err
    code, out, err = cli(capsys, "data", "info", str(diffseg_folder))
    assert code == 0 and "fingerprinting" not in err + out  # the digests are cached now

    tasks = []

    class Recording:
        @contextmanager
        def task(self, description, total):
            tasks.append([description, total, 0])

            class Task:
                def advance(self, n=1, **info):
                    tasks[-1][2] += n

            yield Task()

    diffzoo.evaluate(detector="segformer.tiny", suite="standard", dataset=str(make_diffseg_folder(tmp_path / "new")),
                     device="cpu", iterations=2, batch_size=4, crop_size=32, bootstrap=0, references=False,
                     progress=Recording())
    hashing = [t for t in tasks if t[0].startswith("fingerprinting ")]
    assert hashing and all(total == done > 0 for _, total, done in hashing), tasks
    assert tasks.index(hashing[0]) < next(i for i, t in enumerate(tasks) if t[0].startswith("training "))


def test_loading_from_the_hub_is_shown_before_its_error(capsys, tmp_path, monkeypatch):
    """Offline, `datasets` retries the hub for about half a minute before it fails: the wait is a
    progress task naming the hub id, then one error line saying what to download."""
    import datasets
    import huggingface_hub.constants as hub_constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # fails at once here; the task is shown all the same
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(hub_constants, "HF_HUB_CACHE", str(tmp_path / "hf-home" / "hub"))
    code, out, err = cli(capsys, "data", "info", "hub:Chaos2629/Diffseg30k")
    assert code == 1 and not out
    task = err.index("loading Chaos2629/Diffseg30k from the Hugging Face hub (datasets.load_dataset)")
    assert task < err.index("error: cannot load Chaos2629/Diffseg30k through `datasets`")
