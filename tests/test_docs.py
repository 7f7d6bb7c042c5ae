"""The documentation's references resolve: every relative link names a file that exists
and, with ``#anchor``, a heading of that page (GitHub's anchor rule), and every test a
page cites by name (``test_...``) is a test of the repository (the changelog is history:
it keeps the names a test had then)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", REPO / "CHANGELOG.md", *sorted((REPO / "docs").glob("*.md")),
         *sorted((REPO / "examples").rglob("*.md"))]


def prose(page: Path) -> list[tuple[int, str]]:
    """The page's lines outside fenced code blocks, numbered from 1."""
    lines, fenced = [], False
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            lines.append((number, line))
    return lines


def anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation but '-' and '_' dropped, spaces
    as '-', a repeated heading's anchor suffixed -1, -2, ..."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for _, line in prose(page):
        if heading := re.match(r"#{1,6}\s+(.*)", line):
            slug = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-")
            found.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
            seen[slug] = seen.get(slug, 0) + 1
    return found


def test_every_relative_link_and_anchor_of_the_docs_exists():
    broken = []
    for page in PAGES:
        for number, line in prose(page):
            for target in re.findall(r"\]\(([^)\s]+)\)", line):
                if re.match(r"[a-z]+:", target):  # https:, mailto:: not ours to check
                    continue
                path, _, anchor = target.partition("#")
                linked = (page.parent / path).resolve() if path else page
                if not linked.exists() or (anchor and linked.suffix == ".md" and anchor not in anchors(linked)):
                    broken.append(f"{page.relative_to(REPO)}:{number}: {target}")
    assert broken == []


def test_every_test_the_docs_cite_by_name_exists():
    defined = {name for file in [*REPO.glob("tests/**/*.py"), *REPO.glob("examples/**/*.py")]
               for name in re.findall(r"^\s*(?:async )?def (test_\w+)", file.read_text(encoding="utf-8"), re.M)}
    cited = {(page.relative_to(REPO), name) for page in PAGES if page.name != "CHANGELOG.md"
             for name in re.findall(r"`(?:[\w/.]+::)?(test_\w+)`", page.read_text(encoding="utf-8"))}
    assert sorted((str(page), name) for page, name in cited if name not in defined) == []


def test_every_section_the_docs_name_in_quotes_exists():
    """``see "Label maps"``, ``"Regions" below``: a heading or an emphasised paragraph lead of a page holds it."""
    sections = [re.sub(r"[`*]", "", lead).strip().lower() for page in PAGES for _, line in prose(page)
                for lead in re.findall(r"^#{1,6}\s+(.*)|^(?:- )?\*{1,2}([^*]+)\*", line) for lead in lead if lead]
    named = [(f"{page.relative_to(REPO)}:{number}", name) for page in PAGES if page.name != "CHANGELOG.md"
             for number, line in prose(page)
             for name in re.findall(r'[Ss]ee "([^"]+)"|"([A-Z][^"]+)" (?:below|above)', line) for name in name if name]
    assert [(where, name) for where, name in named if not any(name.lower() in s for s in sections)] == []
