"""rich progress bars for library code's :class:`~diffzoo.harness.core.progress.Progress`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from diffzoo.leaderboard.render.escape import term


class _RichTask:
    def __init__(self, bar: Progress, task_id):
        self.bar, self.task_id = bar, task_id

    def advance(self, n: int = 1, **info: object) -> None:
        extra = "  ".join(f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}" for k, v in info.items())
        self.bar.update(self.task_id, advance=n, info=term(extra))


class RichProgress:
    def __init__(self, console: Console):
        self.console = console

    @contextmanager
    def task(self, description: str, total: int | None) -> Iterator[_RichTask]:
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
