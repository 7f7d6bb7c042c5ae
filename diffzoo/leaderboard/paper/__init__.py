"""The DiffSeg30k paper report (``diffzoo leaderboard publish --format paper``,
``diffzoo report paper``): Tables 2-8 of arXiv 2511.19111 from stored
records, each cell beside the paper's published number (``paper_values.csv``,
data, never code) and the difference.  Layout: :mod:`.layout`; numbers:
:mod:`.values`; building and rendering: :mod:`.report`; docs/paper.md."""

from diffzoo.leaderboard.paper.report import REPORT_FILE, ReportTable, build_report, render_markdown, write_report
from diffzoo.leaderboard.paper.values import VALUES_FILE, PaperValue, load_values, parse_values

__all__ = ["REPORT_FILE", "VALUES_FILE", "PaperValue", "ReportTable", "build_report", "load_values",
           "parse_values", "render_markdown", "write_report"]
