"""Renderers of the leaderboard's table model (:mod:`diffzoo.leaderboard.tables`):
Markdown, CSV, LaTeX and JSON files (:mod:`.text`), the static HTML site
(:mod:`.site` with :mod:`.site_tables` and :mod:`.site_figures`), figures
(:mod:`.plots`, :mod:`.stats_plots`), console tables (:mod:`.console`), and
the escaping every one of them applies to text from records (:mod:`.escape`)."""
