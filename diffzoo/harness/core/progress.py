"""Progress reporting without printing: library code calls a ``Progress``;
the CLI supplies one that draws rich progress bars.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
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
