"""Renderers of the one table model (:mod:`diffzoo.leaderboard.table`): Markdown
(:mod:`.markdown`), CSV, LaTeX, JSON and the files a run and ``publish`` write
(:mod:`.text`), the console (:mod:`.console`), the static HTML site
(:mod:`.site`: jinja2 templates in ``templates/``, its figures in
:mod:`.site_figures` and :mod:`.comparison_plots`), figures (:mod:`.plots`,
:mod:`.stats_plots`, :mod:`.training_plots`), and the escaping every one of
them applies to text from records (:mod:`.escape`)."""
