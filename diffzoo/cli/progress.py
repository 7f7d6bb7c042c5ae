"""Progress for library code's :class:`~diffzoo.harness.core.progress.Progress`:
a rich bar on a terminal, plain lines anywhere else (CI, nohup, a log file).

rich draws nothing but the final state when its console is not a terminal,
so there each task prints a line whenever it passes another tenth of its
total or 30 seconds have gone by since its last line, whichever comes first,
and one line when it ends::

    training x  5/50  10%  2.50/s  ETA 0:00:18  loss 0.1234
    training x  finished 50/50 in 0:00:20  2.50/s  loss 0.0987

A task whose total is unknown prints its count and rate (``reading y  120  4.00/s``);
one left by an exception ends with ``stopped at 17/50 after ...``.

Lines go through the same Console (so :func:`rank_output`'s quieting holds)
and escape outside text with :func:`term`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from diffzoo.harness.core.progress import ended, info_text
from diffzoo.leaderboard.render.escape import term

LINE_EVERY_S = 30.0
"""Not a terminal: the longest gap between two lines of a task that advances."""


def _duration(seconds: float) -> str:
    return str(timedelta(seconds=round(seconds)))


class _RichTask:
    def __init__(self, bar: Progress, task_id):
        self.bar, self.task_id = bar, task_id

    def advance(self, n: int = 1, **info: object) -> None:
        self.bar.update(self.task_id, advance=n, info=term(info_text(info)))


class _LineTask:
    """Prints plain progress lines: every tenth of the total, at most 30 s apart."""

    def __init__(self, console: Console, description: str, total: int | None, clock: Callable[[], float]):
        self.console, self.description, self.total, self.clock = console, term(description), total, clock
        self.done, self.info = 0, ""
        self.start = self.last_line = clock()
        self.tenths = 0

    def advance(self, n: int = 1, **info: object) -> None:
        self.done += n
        self.info = term(info_text(info))
        now = self.clock()
        tenths = self.done * 10 // self.total if self.total else 0
        if tenths > self.tenths or now - self.last_line >= LINE_EVERY_S:
            self.tenths = max(self.tenths, tenths)
            self.last_line = now
            self._print(*self._position(now))

    def finish(self, failed: bool) -> None:
        now = self.clock()
        self._print(ended(self.done, self.total, now - self.start, failed), self._rate(now))

    def _counts(self) -> str:
        return str(self.done) if self.total is None else f"{self.done}/{self.total}"

    def _per_s(self, now: float) -> float | None:
        elapsed = now - self.start
        return self.done / elapsed if elapsed > 0 else None

    def _rate(self, now: float) -> str:
        rate = self._per_s(now)
        return "?/s" if rate is None else f"{rate:.2f}/s"

    def _position(self, now: float) -> list[str]:
        """done/total, percent, rate, ETA; done and rate when the total is unknown."""
        if self.total is None:
            return [self._counts(), self._rate(now)]
        percent = 100 * self.done // self.total if self.total > 0 else 100
        rate = self._per_s(now)
        eta = _duration(max(self.total - self.done, 0) / rate) if rate else "?"
        return [self._counts(), f"{percent}%", self._rate(now), f"ETA {eta}"]

    def _print(self, *fields: str) -> None:
        line = "  ".join(f for f in (self.description, *fields, self.info) if f)
        self.console.print(line, highlight=False, soft_wrap=True)


class RichProgress:
    """A rich bar when ``console`` is a terminal that redraws; plain lines otherwise.

    ``clock`` (seconds, monotonic) is for tests.
    """

    def __init__(self, console: Console, clock: Callable[[], float] = time.monotonic):
        self.console, self.clock = console, clock

    @contextmanager
    def task(self, description: str, total: int | None) -> Iterator[_RichTask | _LineTask]:
        if not self.console.is_terminal or self.console.is_dumb_terminal:
            yield from self._lines(description, total)
            return
        bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            TextColumn("{task.fields[info]}"),
            console=self.console,
            transient=False,
        )
        with bar:
            yield _RichTask(bar, bar.add_task(term(description), total=total, info=""))

    def _lines(self, description: str, total: int | None) -> Iterator[_LineTask]:
        task = _LineTask(self.console, description, total, self.clock)
        try:
            yield task
        except BaseException:
            task.finish(failed=True)
            raise
        task.finish(failed=False)


@contextmanager
def rank_output(console: Console) -> Iterator[None]:
    """Under torchrun: silence ``console`` on ranks > 0 (errors still print)
    and leave the process group at the end, all ranks together after
    success.  May be entered before the group is joined."""
    from diffzoo.harness.core import distributed

    quiet = console.quiet
    console.quiet = quiet or distributed.launch_rank() != 0
    try:
        yield
    except BaseException:
        distributed.shutdown()
        raise
    else:
        distributed.shutdown(sync=True)
    finally:
        console.quiet = quiet
