"""What ``diffzoo leaderboard publish`` can write, as plain data: the CLI names the formats in
its help without loading the renderers (render/text.py renders them)."""

TEXT_FORMAT_FILES = {"md": "leaderboard.md", "csv": "leaderboard.csv", "latex": "leaderboard.tex",
                     "json": "leaderboard.json"}
"""Each text format and the file it writes."""
OVERVIEW_FILES = {"md": "overview.md", "csv": "overview.csv", "latex": "overview.tex"}
"""The formats that also write the overview table (render/text.py), and its file."""
FORMATS = (*TEXT_FORMAT_FILES, "html", "paper")
