"""Progress reporting without printing: library code calls a ``Progress``;
the CLI supplies one that draws rich progress bars.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol


class Task(Protocol):
    def advance(self, n: int = 1, **info: object) -> None: ...


class Progress(Protocol):
    def task(self, description: str, total: int | None) -> Iterator[Task]:
        """Context manager yielding a task to advance."""
        ...


class _NullTask:
    def advance(self, n: int = 1, **info: object) -> None:
        pass


class NullProgress:
    """Reports nothing (library default, tests)."""

    @contextmanager
    def task(self, description: str, total: int | None) -> Iterator[Task]:
        yield _NullTask()
