"""The DiffSeg30k paper's published numbers and the report that sets ours beside
them (``diffzoo leaderboard publish --format paper``, ``diffzoo report
paper``): ``paper_values.csv`` (all 148 numbers of Tables 2-8, data, never
code) read by :mod:`.values`; the other diffusion-edit benchmarks' published
numbers (``opensdi_values.csv``, ``deal300k_values.csv``, ``sidset_values.csv``,
``tgif_values.csv``, their metrics in ``benchmark_metrics.csv``) by
:mod:`.published`; the report (``paper.md``: the paper layout of
:mod:`diffzoo.leaderboard.layouts.paper` with the paper's column) by
:mod:`.report`; the released checkpoints' own
numbers beside ours (``diffzoo report reproduce``: ``release_benchmarks.csv``,
``release_metrics.csv``) by :mod:`.reproduce`; docs/paper.md."""

from diffzoo.leaderboard.paper.values import VALUES_FILE, PaperValue, load_values, parse_values

__all__ = ["VALUES_FILE", "PaperValue", "load_values", "parse_values"]
