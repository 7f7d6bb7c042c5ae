"""The repository's plugin guide (docs/plugins.md) and example plugin, as the tests read them."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "diffzoo-plugin-example"
GUIDE = REPO / "docs" / "plugins.md"

# A file block in the guide: a line holding only `path` (optionally "(excerpt)"),
# a blank line, then a fenced python or toml block.
FILE_BLOCK = re.compile(r"^`(?P<path>[\w./-]+)`(?P<note>[^\n]*)\n\n```(?:python|toml)\n(?P<code>.*?)^```", re.M | re.S)


def guide_files(section: str) -> dict[str, str]:
    """File blocks under ``## section`` of the guide, joined per file in order."""
    text = GUIDE.read_text(encoding="utf-8")
    start = text.index(f"\n## {section}\n")
    end = text.find("\n## ", start + 1)
    files: dict[str, str] = {}
    for m in FILE_BLOCK.finditer(text[start : end if end != -1 else len(text)]):
        files[m["path"]] = files.get(m["path"], "") + m["code"] + "\n"
    return files
