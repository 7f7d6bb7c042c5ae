"""Options several commands share, each defined once with its check.

A value a user can get wrong fails in the option's callback with a
ConfigError: one line naming the option, the value and the fix, exit 2.
"""

from __future__ import annotations

import typer

from ..harness.types import check_seed


def _seed(value: int) -> int:
    return check_seed(value, "--seed")


SEED = typer.Option(0, "--seed", callback=_seed, help="Random seed, an integer from 0 to 2**63 - 1.")
