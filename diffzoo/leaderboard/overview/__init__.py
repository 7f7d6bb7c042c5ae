"""The overview table: the leaderboard at a glance, one row per detector and one
column per headline figure, grouped by benchmark (docs/leaderboard.md, "The
overview table").

Records -> :mod:`.build` (one table per group of records that may be ranked
together) -> the format-neutral model of :mod:`.model` ->
:mod:`diffzoo.leaderboard.render.overview_text` (``overview.md``, ``.csv``,
``.tex``) and the site.
"""
