"""A run's paper-style summary: the DiffSeg30k paper's experiment tables
(Tables 2-8, plus format parity) built from result records, written as
Markdown, shown as rich console tables, with robustness curves as PNGs.

Records -> :mod:`.build` (groups by dataset and suite version) -> tables of
:mod:`.tables` in the format-neutral model of :mod:`.model` (distortion
settings read by :mod:`.settings`) -> :mod:`.render` (Markdown, console)
and :mod:`.write` (``summary.md`` and the curves of
:mod:`diffzoo.leaderboard.robustness`).
"""
