"""Escaping for every place a string from outside (a record, a file name, a
plugin) is shown: the terminal here; CSV, Markdown, LaTeX and HTML cells in
the publishing formats, and text drawn into plots.

A record is data someone else may have written.  Nothing in it may move the
cursor, recolour the terminal, start a spreadsheet formula, add a table row
or a heading, or add markup: each output gets its own escape, applied where
the string is written, and only to text from outside (numbers diffzoo
formats itself are written as they are).  Callers never re-implement these.

Every escape first makes control characters visible (:func:`printable`):
``\\x1b``, ``\\n``, ``\\r``, ``\\t``, ``\\u202e`` are written as those
letters.  The escaped text is for reading, not for a round trip: a name that
already holds a backslash and an ``n`` looks like one holding a line break.
The exact strings are in the JSON outputs and the records themselves.
"""

from __future__ import annotations

import html as _html
import re
import unicodedata

from rich.markup import escape as _rich_escape
from rich.text import Text

from diffzoo.harness.core.types import nfc
from diffzoo.harness.core.visible import escaped_char, printable, visible


# -- terminal ----------------------------------------------------------------------------
def term(value: object) -> str:
    """A string for rich console output: :func:`printable`, then rich's
    markup escaped, so ``[red]`` in a name prints as text."""
    return _rich_escape(printable(value))


def term_text(value: object, style: str = "") -> Text:
    """A rich :class:`~rich.text.Text` of :func:`printable` ``value``: no
    markup, emoji code (``:warning:``) or highlighting is applied to a
    Text, so a name prints exactly as its visible characters.  Prefer it to
    :func:`term` for table cells, titles and headers."""
    return Text(printable(value), style=style)


# -- CSV ----------------------------------------------------------------------------------
# The OWASP "CSV injection" list (= + - @ tab CR), line feed, and their fullwidth
# forms, which some spreadsheet locales also read as a formula start.
_FORMULA_START = frozenset("=+-@\t\r\n\uff1d\uff0b\uff0d\uff20")


def csv_cell(value: object) -> str:
    """A CSV text cell: what a spreadsheet shows as text and what every
    reader keeps on one line.

    - The cell gets a leading ``'`` when its first character that is not a
      space (any Unicode space separator) is ``= + - @``, a tab, CR, LF,
      another control character, or a fullwidth ``＝ ＋ － ＠``: Excel,
      LibreOffice and Google Sheets would otherwise run it as a formula
      (``=HYPERLINK(...)``, ``@SUM(...)``); the quote makes it text and is
      not shown.  This applies to text only, so a name ``-1`` is written
      ``'-1``; diffzoo's own numbers are written without this function.
    - Line breaks and other control characters are written visibly
      (``\\r``, ``\\n``, ``\\x1b``): quoted line breaks are valid CSV, but
      ``split('\\n')``, ``grep`` and many importers break the row there.
    """
    text = "" if value is None else str(value)
    first = next((ch for ch in text if unicodedata.category(ch) != "Zs"), "")
    risky = first in _FORMULA_START or (first and unicodedata.category(first) == "Cc")
    return ("'" if risky else "") + printable(text)


# -- Markdown --------------------------------------------------------------------------------
_MD_TABLE = str.maketrans({"\\": "\\\\", "`": "\\`", "*": "\\*", "_": "\\_", "[": "\\[", "]": "\\]",
                           "|": "\\|", "~": "\\~", "$": "\\$", "<": "&lt;", ">": "&gt;", "&": "&amp;"})
_MD_BLOCK_MARK = re.compile(r"^(\s*)([#=+-])")  # heading, setext underline, bullet
_MD_ORDERED = re.compile(r"^(\s*\d{1,9})([.)])")  # "1." / "1)" starts an ordered list
_MD_CLOSING = re.compile(r"(?<=\s)#(#*\s*)$")  # " #" at a heading's end closes it (and is dropped)


def md_cell(value: object) -> str:
    """Text for Markdown (GitHub-flavoured: table cells, headings, list
    items), shown literally and never changing the document's structure.

    - ``\\ ` * _ [ ] | ~ $`` get a backslash (no emphasis, code span, link,
      strike-through, math or cell break; the backslash itself is doubled so a
      name cannot cancel the escape that follows it); ``< > &`` become
      entities, so no HTML tag or entity from a name reaches the page.
    - Line breaks (CR, LF, U+2028) and other control characters are written
      visibly (``\\r``, ``\\n``): a raw one would end the table row.
    - A leading ``#``, ``=``, ``+``, ``-`` or ``1.``/``1)`` (after spaces)
      is backslash-escaped: at a line or list-item start it would make a
      heading or a list; so is a trailing `` #`` run, which a heading
      would drop as its closing sequence.
    - Text with leading or trailing spaces is put in double quotes, and a
      word mixing Latin letters with Cyrillic or Greek ones drawn alike
      shows those as escapes (:func:`shown_name`).
    """
    text = printable("" if value is None else value).translate(_MD_TABLE)
    text = _MD_BLOCK_MARK.sub(r"\1\\\2", text, count=1)
    text = _MD_ORDERED.sub(r"\1\\\2", text, count=1)
    text = _MD_CLOSING.sub(r"\\#\1", text)
    return shown_name(text)


_WORD = re.compile(r"\w+")
_DRAWN_LATIN = frozenset(unicodedata.lookup(f"{script} {size} LETTER {name}") for script, size, names in (
    ("CYRILLIC", "CAPITAL", "A,VE,IE,DZE,BYELORUSSIAN-UKRAINIAN I,JE,KA,EM,EN,O,ER,ES,TE,HA"),
    ("CYRILLIC", "SMALL", "A,IE,DZE,BYELORUSSIAN-UKRAINIAN I,JE,O,ER,ES,U,HA,SHHA"),
    ("GREEK", "CAPITAL", "ALPHA,BETA,EPSILON,ZETA,ETA,IOTA,KAPPA,MU,NU,OMICRON,RHO,TAU,UPSILON,CHI"),
    ("GREEK", "SMALL", "ALPHA,IOTA,KAPPA,NU,OMICRON,RHO")) for name in names.split(","))
"""Cyrillic and Greek letters drawn as a Latin one (``е``, ``о``, ``Ρ``; not ``Δ`` or ``μ``)."""


def _unmixed(word: re.Match[str]) -> str:
    """A word holding a Latin letter and a :data:`_DRAWN_LATIN` one, each of those written as its escape."""
    if not any(ch in _DRAWN_LATIN for ch in word[0]) or not any(
            unicodedata.name(ch, "").startswith("LATIN") for ch in word[0]):
        return word[0]
    return "".join(escaped_char(ch) if ch in _DRAWN_LATIN else ch for ch in word[0])


def shown_name(value: object) -> str:
    """A name as text told apart from every other name that would print alike.  Applied where a
    name is shown (table rows, page titles), before the format's own escape.

    - In double quotes where it starts or ends with a space (``" a"``): Markdown, an HTML cell
      and a LaTeX cell drop outer spaces, so ``" a"``, ``"a"`` and ``"a "`` would all read as ``a``.
    - A word mixing Latin letters with Cyrillic or Greek ones drawn as Latin letters shows those
      as escapes (``d\\u0435t`` for ``dеt``, its ``е`` Cyrillic), so it never reads as the Latin
      name.  A name all in one script stays as written: telling ``сас`` from ``cac`` takes
      Unicode's whole confusables table, which Python does not carry.
    - A name not in Unicode NFC (``u`` and U+0308, a record another tool wrote: diffzoo writes
      names in NFC, :data:`~diffzoo.harness.records.document.NAMED`) shows its combining marks as
      escapes (``mu\\u0308ller``), never as the composed name it would print as."""
    text = "" if value is None else str(value)
    if not text.isascii():
        text = _WORD.sub(_unmixed, text)
        if text != nfc(text):  # a mark a composed character would hold: never read as that character
            text = "".join(escaped_char(ch) if unicodedata.combining(ch) else ch for ch in text)
    return f'"{text}"' if text != text.strip() else text


# -- LaTeX ----------------------------------------------------------------------------------
_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
        "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
        "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}", "[": "{[}", "]": "{]}",
        "*": "{*}", "`": r"\textasciigrave{}", "'": r"\textquotesingle{}", '"': r"\textquotedbl{}"}
_TEX_LIGATURE = re.compile(r"([-,])(?=\1)")  # -- and --- (dashes), ,, (a low double quote in T1)


def latex(value: object) -> str:
    """Text for LaTeX (table cells, captions, ``%`` comments), typeset as
    written: ``\\ { } $ & # ^ _ ~ %`` and ``< > | ` ' "`` become their text
    commands (in OT1 ``< > |`` print as ¡ ¿ and a dash, and in any font
    encoding a quote prints as a typographic one); a ``-`` or ``,`` followed
    by another gets an italic correction ``\\/``, so no ligature makes ``--``
    an en dash or ``,,`` a low quote; ``[ ] *`` are braced, since after a
    row's ``\\\\`` they would be read as its optional argument or star;
    control characters and line breaks are written visibly first (a raw line
    break would end a ``%`` comment and make the rest of the line live LaTeX,
    two would end the paragraph inside a caption)."""
    return _TEX_LIGATURE.sub(r"\1\\/", "".join(_TEX.get(ch, ch) for ch in printable("" if value is None else value)))


# -- HTML -------------------------------------------------------------------------------------
def html(value: object) -> str:
    """Text or a double- or single-quoted attribute value in HTML:
    ``& < > " '`` become entities (``html.escape(..., quote=True)``), so
    no tag, attribute or entity can come from a string; control, bidi-override
    and zero-width characters are written visibly (``\\u202e``), except tab
    and line breaks, which HTML shows as a space.  ``None`` is ``""``."""
    if value is None:
        return ""
    return _html.escape(visible(str(value), keep="\t\n\r"), quote=True)


# -- plots (matplotlib) ---------------------------------------------------------------------------
def plot_text(value: object) -> str:
    """Text for a matplotlib title, label or legend: :func:`printable`, and
    ``$`` escaped, since a pair of them would be parsed as mathtext (or fail
    to draw); one holding a right-to-left letter opens with a left-to-right mark, since matplotlib
    lays a text out right to left when its first letter is Hebrew or Arabic (``name: title`` would
    read ``title :name``)."""
    text = printable(value).replace("$", r"\$")
    return f"\u200e{text}" if any(unicodedata.bidirectional(c) in ("R", "AL") for c in text) else text
