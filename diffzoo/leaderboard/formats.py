"""What ``diffzoo leaderboard publish`` can write, as plain data: the CLI names the formats in
its help without loading the renderers (render/text.py renders them)."""

TEXT_FORMAT_FILES = {"md": "leaderboard.md", "csv": "leaderboard.csv", "latex": "leaderboard.tex",
                     "json": "leaderboard.json"}
"""Each text format and the file it writes."""
FORMATS = (*TEXT_FORMAT_FILES, "html", "paper")
