"""The typer application: every command and sub-app joined here, explicitly.

Each command module defines plain functions (and, for a group, its own
``typer.Typer``); nothing registers itself when imported.  Plugins add
commands through the ``register_commands`` hook, called once here.
"""

from __future__ import annotations

import inspect
from collections import Counter
from collections.abc import Iterator
from typing import Any

import typer
import typer.core
from rich.markup import escape
from typer.models import CommandInfo

from diffzoo.cli import data, generate, labelpairs, leaderboard, listing, predict, reproduce, run, sweep, train
from diffzoo.cli.console import console, err_console, reporting_rank, state
from diffzoo.harness.core.plugins import get_plugin_system
from diffzoo.leaderboard.render.escape import term

app = typer.Typer(
    name="diffzoo",
    help="Localize and attribute diffusion-model image edits: detectors, editors, benchmark suites.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def version_line() -> str:
    """``diffzoo X (torch Y, Python Z)``, read from the installed packages' metadata (no torch import)."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    from diffzoo.version import __version__

    try:
        torch = f"torch {version('torch')}"
    except PackageNotFoundError:
        torch = "torch not installed"
    return f"diffzoo {__version__} ({torch}, Python {platform.python_version()})"


def _print_version(value: bool) -> None:
    if value:
        console.print(version_line(), highlight=False)
        raise typer.Exit()


@app.callback()
def _root(
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks and debug logs (anywhere on the command line)."),
    version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                 help="Print diffzoo's version (and torch's) and exit."),
) -> None:
    state.debug = debug
    if reporting_rank():
        report_plugin_failures()


def report_plugin_failures() -> None:
    """One warning line per plugin that failed to import or raised in a hook."""
    system = get_plugin_system()
    system.registry  # noqa: B018 - building it runs the register hooks
    for failure in system.failures:
        err_console.print(f"[yellow]warning:[/] {term(failure)}", soft_wrap=True)
        if state.debug and failure.traceback:
            err_console.print(escape(failure.traceback), soft_wrap=True, highlight=False)


app.command("run")(run.run_cmd)
app.command("generate")(generate.generate_cmd)
app.command("list")(listing.list_cmd)
app.command("predict")(predict.predict_cmd)
app.command("train")(train.train_cmd)
app.command("reproduce")(reproduce.reproduce_cmd)
app.command("sweep")(sweep.sweep_cmd)
data.data_app.command("label-pairs")(labelpairs.label_pairs_cmd)
app.add_typer(data.data_app, name="data")
app.add_typer(leaderboard.lb, name="leaderboard")
app.add_typer(leaderboard.report, name="report")
app.add_typer(listing.plugins_app, name="plugins")
get_plugin_system().add_commands(app)


class OnceEach(typer.core.TyperCommand):
    """A command whose options are each given once: click keeps the last of an option that takes
    one value given twice (``-d segformer -d fcn8s``), so a second one is a usage error naming it
    (a repeatable option, ``multiple``, takes each)."""

    def make_parser(self, ctx: Any) -> Any:
        parser = super().make_parser(ctx)
        parse = parser.parse_args

        def parse_once(args: list[str]) -> Any:
            opts, rest, order = parse(args=args)  # order: each parameter once per time it was given
            if twice := [(p, n) for p, n in Counter(order).items()
                         if n > 1 and isinstance(p, typer.core.TyperOption) and not (p.multiple or p.count)]:
                param, n = twice[0]
                flags = "' / '".join([*param.opts, *param.secondary_opts])
                ctx.fail(f"Option '{flags}' was given {n} times, and only the last would count: give it once")
            return opts, rest, order

        parser.parse_args = parse_once
        return parser


def commands(group: typer.Typer = app, words: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], CommandInfo]]:
    """Every command of ``group`` and of its sub-groups (a plugin's too), with its words
    (``("leaderboard", "add")``)."""
    for info in group.registered_commands:
        yield (*words, info.name or (info.callback.__name__ if info.callback else "")), info
    for sub in group.registered_groups:
        if sub.typer_instance is not None:
            yield from commands(sub.typer_instance, (*words, sub.name or ""))


def _finish() -> None:
    """Each command a :class:`OnceEach` (unless it has a class of its own), and its line in its group's
    listing the first paragraph of its help as one flowing text (typer's rich listing keeps a
    docstring's single line breaks, which cut it mid-sentence)."""
    for _, info in commands():
        info.cls = OnceEach if info.cls in (None, typer.core.TyperCommand) else info.cls
        doc = info.help or inspect.getdoc(info.callback) or ""
        if info.short_help is None and doc:
            info.short_help = " ".join(doc.split("\n\n")[0].split())


_finish()
