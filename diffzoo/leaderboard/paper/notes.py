"""How a report cell shows what it lacks: ``ours | paper | Δ`` where there is
something to show, a dash for a missing part, and a superscript mark that
points to a note under the table, so each reason is written once."""

from __future__ import annotations

from diffzoo.leaderboard.render.escape import md_cell

SEP = " \\| "  # a pipe inside a Markdown table cell
DASH = "—"
_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def triple(ours: str, paper: str, delta: str) -> str:
    """The cell text; a lone dash where none of the three has anything to show."""
    if ours == paper == delta == DASH:
        return DASH
    return SEP.join((ours, paper, delta))


def signed(delta: float | None, scale: float) -> str:
    """Δ in the cell's unit (percentage points for fractions), or a dash."""
    return DASH if delta is None else f"{scale * delta:+.1f}"


class Notes:
    """The numbered notes under one table: :meth:`mark` gives the mark for a
    reason (the same number for the same text), :meth:`lines` the notes."""

    def __init__(self) -> None:
        self._numbers: dict[str, int] = {}

    def mark(self, reason: str) -> str:
        number = self._numbers.setdefault(reason, len(self._numbers) + 1)
        return str(number).translate(_SUPERSCRIPT)

    def lines(self) -> list[str]:
        """Markdown list items, the reason text escaped (it may name a record's detector or dataset)."""
        return [f"- {str(n).translate(_SUPERSCRIPT)} {md_cell(reason)}" for reason, n in self._numbers.items()]
