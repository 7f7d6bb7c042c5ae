"""The typer application and shared console objects."""

from __future__ import annotations

import os
import sys
from types import SimpleNamespace

import typer
from rich.console import Console
from rich.markup import escape

# Not a terminal (CI logs, pipes): wide enough that tables do not wrap.
_WIDTH = None if sys.stdout.isatty() else 132
console = Console(highlight=False, width=_WIDTH, emoji=False)  # ":warning:" in a name prints as text
err_console = Console(stderr=True, highlight=False, width=_WIDTH, emoji=False)
state = SimpleNamespace(debug=False)

app = typer.Typer(
    name="diffzoo",
    help="Localize and attribute diffusion-model image edits: detectors, editors, benchmark suites.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root(
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks and debug logs."),
) -> None:
    state.debug = debug
    if int(os.environ.get("RANK", "0") or 0) == 0:  # under torchrun only rank 0 reports
        report_plugin_failures()


def report_plugin_failures() -> None:
    """One warning line per plugin that failed to import or raised in a hook."""
    from ..harness.plugins import get_plugin_system
    from ..leaderboard.escape import term

    system = get_plugin_system()
    system.registry  # noqa: B018 - building it runs the register hooks
    for failure in system.failures:
        err_console.print(f"[yellow]warning:[/] {term(failure)}", soft_wrap=True)
        if state.debug and failure.traceback:
            err_console.print(escape(failure.traceback), soft_wrap=True, highlight=False)


def _install() -> None:
    from ..harness.plugins import get_plugin_system
    from . import data, generate, labelpairs, leaderboard, listing, predict, run, train  # noqa: F401 - they register commands

    get_plugin_system().add_commands(app)


_install()
