"""The DiffSeg30k paper report (``diffzoo leaderboard publish --format paper``,
``diffzoo report paper``): Tables 2-8 of arXiv 2511.19111 from stored
records, each cell beside the paper's published number (``paper_values.csv``,
all 148, data, never code) and the difference, then the other diffusion-edit
benchmarks' published numbers (``opensdi_values.csv``, ``deal300k_values.csv``,
``sidset_values.csv``, their metrics in ``benchmark_metrics.csv``).  Layout:
:mod:`.layout`; numbers: :mod:`.values`, :mod:`.published`; building and
rendering: :mod:`.report`, :mod:`.notes`; docs/paper.md."""

from diffzoo.leaderboard.paper.published import Benchmark, load_benchmarks
from diffzoo.leaderboard.paper.report import REPORT_FILE, ReportTable, build_report, render_markdown, write_report
from diffzoo.leaderboard.paper.values import VALUES_FILE, PaperValue, load_values, parse_values

__all__ = ["REPORT_FILE", "VALUES_FILE", "Benchmark", "PaperValue", "ReportTable", "build_report", "load_benchmarks",
           "load_values", "parse_values", "render_markdown", "write_report"]
