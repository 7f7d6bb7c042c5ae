"""Text from outside (a file or sample name, a record, a plugin) shown as its visible
characters: every control character (ESC included), line break, tab and invisible formatting
character becomes a visible escape (``\\x1b``, ``\\n``, ``\\u202e``).  The rule for every place
such text is written: the terminal and log files (:class:`VisibleFormatter`) here, and the
publishing formats' escapes (``diffzoo.leaderboard.render.escape``), which start from it.
"""

from __future__ import annotations

import logging
import unicodedata

# Bidirectional overrides and isolates reorder what follows them on screen
# ("Trojan Source"); zero-width and BOM characters hide text.  Neither is a
# control character to unicodedata (category Cf), so they are listed here.
_INVISIBLE = frozenset("\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
                       "\u2066\u2067\u2068\u2069\ufeff")
# control, format (bidi, zero-width), line and paragraph separators, and lone
# surrogates (valid in JSON, but no terminal or UTF-8 file can take them)
_HIDDEN_CATEGORIES = ("Cc", "Cf", "Zl", "Zp", "Cs")


def escaped_char(ch: str) -> str:
    """``ch`` as the escape every shown text writes it as (``\\x1b``, ``\\n``, ``\\u0435``)."""
    # Python's unicode_escape writes \n \r \t, \xNN below U+0100 and \uNNNN up to U+FFFF;
    # beyond, its \UNNNNNNNN form is not ours: those stay \u followed by their hex digits.
    code = ord(ch)
    return ch.encode("unicode_escape").decode("ascii") if code <= 0xFFFF else f"\\u{code:04x}"


def _hidden(ch: str) -> bool:
    return unicodedata.category(ch) in _HIDDEN_CATEGORIES or ch in _INVISIBLE


def visible(text: str, keep: str = "") -> str:
    """``text`` with each hidden character written as its escape, but those in ``keep``."""
    if text.isprintable() and not any(ch in _INVISIBLE for ch in text):
        return text
    return "".join(escaped_char(ch) if ch not in keep and _hidden(ch) else ch for ch in text)


def printable(value: object) -> str:
    """``str(value)`` as its visible characters (:func:`visible`; the rule is the module's)."""
    return visible(str(value))


class VisibleFormatter(logging.Formatter):
    """Log lines carry names from the data, records and plugins (sample ids, file names,
    detector names): each message is written as its visible characters (:func:`printable`),
    so no escape sequence, bidi override or line break in a name reaches a terminal or a log
    file or splits a line.  A traceback is left as it is."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = printable(record.message)
        return super().formatMessage(record)
