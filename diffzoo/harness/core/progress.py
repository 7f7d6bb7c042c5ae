"""Progress reporting without printing: library code calls a ``Progress``;
the CLI supplies one that draws rich progress bars.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from contextvars import ContextVar
from datetime import timedelta
from typing import Protocol


class ProgressTask(Protocol):
    """One bar of a :class:`Progress`: ``advance(n, **info)`` moves it ``n`` steps (``info``: what
    to show beside it, e.g. ``loss=0.4``)."""

    def advance(self, n: int = 1, **info: object) -> None: ...


class Progress(Protocol):
    """What ``evaluate(progress=...)`` and ``train(progress=...)`` report to (the CLI draws bars)."""

    def task(self, description: str, total: int | None) -> AbstractContextManager[ProgressTask]:
        """Context manager yielding a task to advance."""
        ...


class _NullTask:
    def advance(self, n: int = 1, **info: object) -> None:
        pass


class NullProgress:
    """Reports nothing (library default, tests)."""

    @contextmanager
    def task(self, description: str, total: int | None) -> Iterator[ProgressTask]:
        yield _NullTask()


_CURRENT: ContextVar[Progress | None] = ContextVar("diffzoo_progress", default=None)


@contextmanager
def reporting(progress: Progress | None) -> Iterator[None]:
    """Within the block, work that is handed no Progress of its own (a dataset's first
    fingerprint, deep inside opening it) reports to ``progress``."""
    token = _CURRENT.set(progress)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def current_progress() -> Progress:
    """The Progress of the innermost :func:`reporting` block (none: one that reports nothing)."""
    return _CURRENT.get() or NullProgress()


@contextmanager
def counter_callback(progress: Progress, description: str) -> Iterator[Callable[[int, int], None]]:
    """A ``(done, total)`` callback that drives a task opened on its first call.

    For code that reports counts rather than taking a Progress (builders).
    """
    with ExitStack() as stack:
        state: dict = {"task": None, "done": 0}

        def callback(done: int, total: int) -> None:
            if state["task"] is None:
                state["task"] = stack.enter_context(progress.task(description, total))
            state["task"].advance(done - state["done"])
            state["done"] = done

        yield callback


def ended(done: int, total: int | None, seconds: float, failed: bool) -> str:
    """How a task ended, as its last line says it: ``finished 50/50 in 0:00:20``, ``stopped at 17 after 0:00:05``."""
    how = "stopped at {} after {}" if failed else "finished {} in {}"
    return how.format(str(done) if total is None else f"{done}/{total}", timedelta(seconds=round(seconds)))


def info_text(info: dict[str, object]) -> str:
    """A task's ``info`` as shown beside it: ``loss 0.1234  lr 0.0001``."""
    return "  ".join(f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}" for k, v in info.items())


class _CountedTask:
    def __init__(self, inner: ProgressTask):
        self.inner, self.done, self.info = inner, 0, ""

    def advance(self, n: int = 1, **info: object) -> None:
        self.done += n
        if info:
            self.info = info_text(info)
        self.inner.advance(n, **info)


class LoggedProgress:
    """``inner``'s tasks, each also told to ``note`` when it ends: its count, time and last info,
    or where it stopped (for the log a run leaves in its output folder)."""

    def __init__(self, inner: Progress, note: Callable[[str], None]):
        self.inner, self.note = inner, note

    @contextmanager
    def task(self, description: str, total: int | None) -> Iterator[ProgressTask]:
        start = time.monotonic()
        counted: _CountedTask | None = None
        try:
            with self.inner.task(description, total) as task:
                counted = _CountedTask(task)
                yield counted
        except BaseException:
            self._log(description, total, counted, start, failed=True)
            raise
        self._log(description, total, counted, start, failed=False)

    def _log(self, description: str, total: int | None, task: _CountedTask | None, start: float, failed: bool) -> None:
        line = ended(task.done if task is not None else 0, total, time.monotonic() - start, failed)
        self.note(f"{description}  {line}" + (f"  {task.info}" if task and task.info else ""))
