"""The console objects every command prints through, and the CLI's run state."""

from __future__ import annotations

import sys
from types import SimpleNamespace

from rich.console import Console

# Not a terminal (CI logs, pipes): wide enough that tables do not wrap.
_WIDTH = None if sys.stdout.isatty() else 132
console = Console(highlight=False, width=_WIDTH, emoji=False)  # ":warning:" in a name prints as text
err_console = Console(stderr=True, highlight=False, width=_WIDTH, emoji=False)
state = SimpleNamespace(debug=False)
