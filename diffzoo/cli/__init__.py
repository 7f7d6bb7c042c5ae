"""The ``diffzoo`` command line: a typer app, one module per command group.

Errors raised by the library (``DiffzooError``) become one line on stderr and
a non-zero exit; ``--debug`` shows the traceback instead.  Usage errors
(unknown option, missing or extra argument, bad value) are click's own
message, with its "Did you mean ...?", and exit 2.
"""

from __future__ import annotations

import io
import logging
import os
import sys

import typer

from diffzoo.cli.app import app
from diffzoo.cli.console import console, err_console, quiet_third_party, state
from diffzoo.harness.core.errors import DiffzooError, TrainingStopped
from diffzoo.harness.core.fsutil import user_path_error
from diffzoo.leaderboard.render.escape import printable, term


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


def _interrupted() -> None:
    err_console.print("interrupted: nothing half-written is kept (every file is written whole or not at all); "
                      "the same command run again reuses what was finished", soft_wrap=True)
    sys.exit(INTERRUPTED)


class VisibleFormatter(logging.Formatter):
    """Log lines carry names from the data, records and plugins (sample ids, file names,
    detector names): each message is shown as its visible characters (``printable``, the
    escaping error lines get), so no escape sequence, bidi override or line break in a name
    reaches the terminal or splits a line.  A traceback (``--debug``) is left as it is."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = printable(record.message)
        return super().formatMessage(record)


def configure_logging(debug: bool) -> None:
    """The CLI's log lines go to stderr through :class:`VisibleFormatter` (a library only logs)."""
    handler = logging.StreamHandler()
    handler.setFormatter(VisibleFormatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING, handlers=[handler])


def empty_argument(args: list[str]) -> str | None:
    """What an empty argument was given for (``--out ''``, ``--out=``, an empty argument), or None.

    No option or argument of diffzoo takes an empty value, and an empty path is the current folder
    to pathlib: ``--extra-authentic "$DIR"`` with ``DIR`` unset would train on the images there."""
    for before, arg in zip(["", *args], args):
        flag, equals, value = arg.partition("=") if arg.startswith("--") else ("", "", arg)
        if (equals or not flag) and not value:  # " " is a name a file may have; "" names nothing
            given = flag or (before if before.startswith("-") else "")
            return f"{given} was given an empty value" if given else "an argument is empty"
    return None


def main(argv: list[str] | None = None) -> None:
    for stream in (sys.stdout, sys.stderr):  # a terminal that cannot show a character ("Δ" in latin-1) shows "?"
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="replace")
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    if (empty := empty_argument(args)) is not None:
        err_console.print(f"[bold red]error:[/] {term(empty)} (an unset shell variable?); give a value "
                          "(. for the current folder) or leave the option out", highlight=False, soft_wrap=True)
        sys.exit(2)
    configure_logging(debug)
    if not debug:  # the CLI reports plugin failures itself, one line each
        logging.getLogger("diffzoo.harness.core.plugins").setLevel(logging.ERROR)
    quiet_third_party(debug)
    try:
        code = app(args=args, prog_name="diffzoo", standalone_mode=False)
        if code == INTERRUPTED:  # typer turns Ctrl-C inside a command into Exit(130)
            _interrupted()
        if isinstance(code, int) and code:  # typer.Exit(n) is returned, not raised, here
            sys.exit(code)
    except TrainingStopped as exc:  # SIGINT/SIGTERM during training: not an error, its state is saved
        if int(os.environ.get("RANK", "0") or 0) == 0:  # every rank stops at one step; rank 0 says it once
            err_console.print(term(exc), highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except DiffzooError as exc:
        if debug:
            raise
        err_console.print(f"[bold red]error:[/] {term(exc)}", highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except (typer.Exit, SystemExit) as exc:
        sys.exit(getattr(exc, "exit_code", getattr(exc, "code", 0)))
    except typer.Abort:
        err_console.print("aborted")
        sys.exit(130)
    except KeyboardInterrupt:
        _interrupted()
    except CLICK_ERRORS as exc:  # usage errors: click's message, exit 2
        exc.show()
        sys.exit(exc.exit_code)
    except Exception as exc:
        # a full disk, a path through a file, no permission, a read-only filesystem, a name
        # too long (safetensors, PIL, matplotlib, any writer): the user's to fix
        user = user_path_error(exc) if isinstance(exc, OSError) and not debug else None
        if user is not None:
            err_console.print(f"[bold red]error:[/] {term(user)}", highlight=False, soft_wrap=True)
            sys.exit(user.exit_code)
        if debug:
            raise
        err_console.print(
            f"[bold red]internal error:[/] {type(exc).__name__}: {term(exc)} "
            "(run with --debug for the traceback)",
            highlight=False,
        )
        sys.exit(1)


__all__ = ["app", "main", "console", "state"]
