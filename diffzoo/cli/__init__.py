"""The ``diffzoo`` command line: a typer app, one module per command group.

Errors raised by the library (``DiffzooError``) become one line on stderr and
a non-zero exit; ``--debug`` shows the traceback instead.  Usage errors
(unknown option, missing or extra argument, bad value) are click's own
message, with its "Did you mean ...?", and exit 2.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import logging
import os
import signal
import sys
import traceback
from dataclasses import dataclass, field
from typing import NoReturn

import typer

from diffzoo.cli.app import app, commands
from diffzoo.cli.console import console, err_console, quiet_third_party, reporting_rank, state
from diffzoo.cli.options import takes_path
from diffzoo.cli.progress import RichProgress
from diffzoo.harness.core.errors import DiffzooError, TrainingStopped
from diffzoo.harness.core.fsutil import user_path_error
from diffzoo.harness.core.progress import reporting
from diffzoo.harness.core.visible import VisibleFormatter
from diffzoo.leaderboard.render.escape import term


def _click_error_types() -> tuple[type[BaseException], ...]:
    """The ClickException classes a usage error may be raised as: typer 0.2x carries
    its own copy of click (``typer._click``), whose exceptions are not click's."""
    found = {cls for cls in typer.BadParameter.__mro__ if cls.__name__ == "ClickException"}
    try:
        import click
    except ImportError:  # typer no longer needs click itself
        pass
    else:
        found.add(click.ClickException)
    return tuple(found)


CLICK_ERRORS = _click_error_types()
INTERRUPTED = 130


RESUMING = frozenset({"run", "train", "generate", "sweep", "reproduce"})
"""The commands whose work a second run of the same command takes up where it stopped (states,
resume points, samples and jobs kept); the others start again."""


def _exit_stopped(code: int) -> NoReturn:
    """Exit with ``code`` once a Ctrl-C was handled: a second one while the process shuts down
    (torch's exit handlers) is ignored, never a traceback."""
    with contextlib.suppress(ValueError):  # not the main thread: its signals are not ours to set
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.exit(code)


def _interrupted(args: list[str]) -> NoReturn:
    command = next((a for a in args if not a.startswith("-")), "")
    again = ("the same command run again reuses what was finished" if command in RESUMING else
             "the same command run again starts anew")
    err_console.print(f"interrupted: nothing half-written is kept (every file is written whole or not at all); "
                      f"{again}", soft_wrap=True)
    _exit_stopped(INTERRUPTED)


def configure_logging(debug: bool) -> None:
    """The CLI's log lines go to stderr through :class:`VisibleFormatter` (a library only logs):
    warnings and errors, everything with ``--debug``.  diffzoo's own INFO lines (a sample
    rejected, a case skipped, training resumed) pass its logger, so a command's run log keeps them."""
    level = logging.DEBUG if debug else logging.WARNING
    handler = logging.StreamHandler()
    handler.setLevel(level)
    handler.setFormatter(VisibleFormatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler])
    logging.getLogger("diffzoo").setLevel(min(level, logging.INFO))


@dataclass
class PathInputs:
    """A command's options that take a value (``valued``), those of them that take a path
    (``paths``), and whether its arguments are paths."""

    valued: set[str] = field(default_factory=set)
    paths: set[str] = field(default_factory=set)
    argument: bool = False


def path_inputs() -> dict[tuple[str, ...], PathInputs]:
    """Per command (its words, e.g. ``("leaderboard", "add")``): what of it takes a path, read from
    the commands' own declarations (an option or argument annotated ``Path``)."""
    found: dict[tuple[str, ...], PathInputs] = {}
    for words, command in commands():
        inputs = found[words] = PathInputs()
        for param in inspect.signature(command.callback).parameters.values() if command.callback else ():
            annotation = param.annotation if isinstance(param.annotation, str) else repr(param.annotation)
            if isinstance(param.default, typer.models.OptionInfo) and "bool" not in annotation:
                flags = {f for decl in param.default.param_decls or () for f in decl.split("/")}
                inputs.valued |= flags
                inputs.paths |= flags if takes_path(annotation) else set()
            elif isinstance(param.default, typer.models.ArgumentInfo) and takes_path(annotation):
                inputs.argument = True
    return found


def home_expanded(args: list[str]) -> list[str]:
    """``args`` with the ``~`` of a path option written ``--out=~/runs`` expanded: the shell leaves a
    tilde after ``--flag=`` as it is, and pathlib would make a folder named ``~`` in the current one."""
    if not any(a.startswith("--") and "=~" in a for a in args):
        return args  # nothing to expand: the commands' declarations need not be read
    flags = {flag for inputs in path_inputs().values() for flag in inputs.paths}
    out = []
    for arg in args:
        flag, equals, value = arg.partition("=")
        out.append(f"{flag}={os.path.expanduser(value)}" if equals and flag in flags and value[:1] == "~" else arg)
    return out


def empty_path(args: list[str]) -> str | None:
    """What an empty path was given for (``--out ''``, ``--out=``, ``predict ''``), or None.

    pathlib reads ``""`` as the current folder: ``--extra-authentic "$DIR"`` with ``DIR`` unset
    would train on the images there.  An empty value of an option that takes text is left to
    that option's own check."""
    rest = [a for a in args if a != "--debug"]
    if "" not in rest and not any(a.startswith("--") and a.endswith("=") for a in rest):
        return None  # nothing empty: the commands' declarations need not be read
    commands = path_inputs()
    command = next((tuple(rest[:n]) for n in (2, 1) if tuple(rest[:n]) in commands), None)
    if command is None:
        return None
    inputs = commands[command]
    for before, arg in zip(rest[len(command) - 1:], rest[len(command):]):
        flag, equals, value = arg.partition("=") if arg.startswith("--") else ("", "", arg)
        if equals and not value and flag in inputs.paths:
            return f"{flag} was given an empty path"
        if not flag and not value:
            if before in inputs.paths:
                return f"{before} was given an empty path"
            if before not in inputs.valued and inputs.argument:
                return f"diffzoo {' '.join(command)} was given an empty path as an argument"
    return None


def main(argv: list[str] | None = None) -> None:
    for stream in (sys.stdout, sys.stderr):  # a terminal that cannot show a character ("Δ" in latin-1) shows "?"
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="replace")
    args = list(sys.argv[1:] if argv is None else argv)
    options = args[:args.index("--")] if "--" in args else args  # after "--" every word is an argument
    debug = "--debug" in options
    if flags := [a for a in options if a.partition("=")[0] == "--debug"]:  # `--debug=1`: click says it takes none
        # `diffzoo run ... --debug`, as `diffzoo --debug run ...`: the flag belongs to diffzoo itself
        args = [*flags, *(a for a in options if a not in flags), *args[len(options):]]
    args = home_expanded(args)
    if (empty := empty_path(args)) is not None:
        err_console.print(f"[bold red]error:[/] {term(empty)} (an unset shell variable?); give a path "
                          "(. for the current folder) or leave the option out", highlight=False, soft_wrap=True)
        sys.exit(2)
    configure_logging(debug)
    if not debug:  # the CLI reports plugin failures itself, one line each
        logging.getLogger("diffzoo.harness.core.plugins").setLevel(logging.ERROR)
    quiet_third_party(debug)
    try:
        with reporting(RichProgress(err_console)):  # a long read deep in a command is shown (stdout stays its own)
            code = app(args=args, prog_name="diffzoo", standalone_mode=False)
        if code == INTERRUPTED:  # typer turns Ctrl-C inside a command into Exit(130)
            _interrupted(args)
        if isinstance(code, int) and code:  # typer.Exit(n) is returned, not raised, here
            sys.exit(code)
    except TrainingStopped as exc:  # SIGINT/SIGTERM during training: not an error, its state is saved
        if reporting_rank():  # every rank stops at one step; rank 0 says it once
            err_console.print(term(exc), highlight=False, soft_wrap=True)
        _exit_stopped(exc.exit_code)
    except (typer.Exit, SystemExit) as exc:
        sys.exit(getattr(exc, "exit_code", getattr(exc, "code", 0)))
    except typer.Abort:
        err_console.print("aborted")
        _exit_stopped(INTERRUPTED)
    except KeyboardInterrupt:
        _interrupted(args)
    except CLICK_ERRORS as exc:  # usage errors: click's message, exit 2
        exc.show()
        sys.exit(exc.exit_code)
    except Exception as exc:
        # a DiffzooError, and a full disk, a path through a file, no permission, a read-only filesystem,
        # a name too long (safetensors, PIL, matplotlib, any writer): the user's to fix
        user = exc if isinstance(exc, DiffzooError) else user_path_error(exc) if isinstance(exc, OSError) else None
        if debug:  # the traceback instead of the line; the exit code is the one without --debug
            traceback.print_exc()
        elif user is not None:
            err_console.print(f"[bold red]error:[/] {term(user)}", highlight=False, soft_wrap=True)
        else:
            err_console.print(f"[bold red]internal error:[/] {type(exc).__name__}: {term(exc)} "
                              "(run with --debug for the traceback)", highlight=False)
        sys.exit(1 if user is None else user.exit_code)


__all__ = ["app", "main", "console", "state"]
