"""The console objects every command prints through, the CLI's run state, and
what keeps third-party notices off the console."""

from __future__ import annotations

import logging
import os
import sys
import warnings
from types import SimpleNamespace
from typing import Any

from rich.console import Console
from rich.table import Table

# Not a terminal (CI logs, pipes): wide enough that tables do not wrap.
_WIDTH = None if sys.stdout.isatty() else 132
console = Console(highlight=False, width=_WIDTH, emoji=False)  # ":warning:" in a name prints as text
err_console = Console(stderr=True, highlight=False, width=_WIDTH, emoji=False)
state = SimpleNamespace(debug=False)


def folded_table(title: Any, columns: tuple[str, ...], right: tuple[str, ...] = ()) -> Table:
    """A table titled ``title`` whose ``columns`` wrap their text whole: a URL, a file name or an id is
    never cut to "https://pan.ba…" (``right``: the columns of numbers, right-aligned; the first, what
    a row is of, in bold)."""
    table = Table(title=title, title_justify="left")
    for i, col in enumerate(columns):
        table.add_column(col, justify="right" if col in right else "left", style="bold" if i == 0 else "",
                         overflow="fold")
    return table


def reporting_rank() -> bool:
    """Whether this process says what every rank would say once: rank 0 under torchrun, or a process
    it did not start (read without importing torch; a ``RANK`` that is no number is none of torchrun's)."""
    rank = os.environ.get("RANK", "").strip()
    return not rank.isdigit() or int(rank) == 0


LIBRARY_VERBOSITY = {"transformers": "TRANSFORMERS_VERBOSITY", "diffusers": "DIFFUSERS_VERBOSITY",
                     "huggingface_hub": "HF_HUB_VERBOSITY", "datasets": "DATASETS_VERBOSITY"}
"""The variables these libraries read their log level from, once, when first imported (the hub's
retries of an unreachable host are warnings, each printed twice; the error that ends them is diffzoo's)."""
NOTICES = (DeprecationWarning, PendingDeprecationWarning, FutureWarning)
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def quiet_third_party(debug: bool) -> None:
    """Third-party deprecation notices go to the debug log (``--debug``), not the console.

    transformers, diffusers, huggingface_hub and datasets log theirs through their own stderr handlers
    ("`use_return_dict` is deprecated!"): their level is set through the
    environment before they are imported, and through their own API when an
    in-process caller imported them first (``error``, or ``info`` under
    ``--debug``; a value the user set wins).  Python warnings of the notice
    kinds raised outside diffzoo are logged at DEBUG on ``diffzoo.thirdparty``;
    diffzoo's own still show.
    """
    for module, name in LIBRARY_VERBOSITY.items():
        os.environ.setdefault(name, "info" if debug else "error")
        library = sys.modules.get(module)
        level = getattr(logging, os.environ[name].upper(), None)
        if library is not None and isinstance(level, int):  # imported before the command (an in-process call)
            library.logging.set_verbosity(level)
    shown = warnings.showwarning
    if getattr(shown, "diffzoo_quiet", False):
        return
    log = logging.getLogger("diffzoo.thirdparty")

    def showwarning(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, NOTICES) and not os.path.abspath(filename).startswith(_PACKAGE_DIR):
            log.debug("%s:%s: %s: %s", filename, lineno, category.__name__, message)
            return
        shown(message, category, filename, lineno, file, line)

    showwarning.diffzoo_quiet = True  # type: ignore[attr-defined]
    warnings.showwarning = showwarning
