"""What ``diffzoo leaderboard publish`` can write, as plain data: the CLI names the formats in
its help without loading the renderers (render/text.py renders them)."""

TEXT_FORMAT_FILES = {"md": "leaderboard.md", "csv": "leaderboard.csv", "latex": "leaderboard.tex",
                     "json": "leaderboard.json"}
"""Each text format and the file it writes."""
OVERVIEW_FILES = {"md": "overview.md", "csv": "overview.csv", "latex": "overview.tex"}
"""The formats that also write the overview table (render/text.py), and its file."""
MAIN_FILES = {**TEXT_FORMAT_FILES, "html": "index.html", "paper": "paper.md"}
"""Each format and its main file: the site's index page (render/site.py), the paper report's file."""
SITE_DIRS = ("detectors", "plots")
"""The site's folders: a page per detector, the figures."""
MANIFEST = ".diffzoo-site.json"
"""The list of the files a publish wrote in its folder (render/text.py's ``PUBLISHED``)."""
FORMATS = tuple(MAIN_FILES)
