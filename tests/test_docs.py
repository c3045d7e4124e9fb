"""The documentation keeps its promises: a short README whose links land, no issue numbers.

`./dev test` builds the site itself with `mkdocs build --strict` (links and anchors between
pages of docs/, the nav); these tests cover what that build does not see: README.md, which
is not a page of the site, and the text of every page.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"

#: Users cannot read the project's issues: "issue 11", "issues 3 and 4", "Issue #7".
ISSUE_NUMBER = re.compile(r"\bissues?\s+#?\d+", re.IGNORECASE)
#: An inline Markdown link (not an image): [text](target).
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def slug(heading: str) -> str:
    """The anchor mkdocs (Python-Markdown's toc) gives a heading."""
    from markdown.extensions.toc import slugify

    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = text.replace("`", "").replace("**", "")  # code and bold marks
    return str(slugify(text, "-"))


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text())
    found: set[str] = set()
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*#*\s*$", text, re.M):
        base = slug(heading)
        name, n = base, 1
        while name in found:  # a repeated heading gets _1, _2 as in the toc extension
            name, n = f"{base}_{n}", n + 1
        found.add(name)
    return found


def test_readme_is_short() -> None:
    assert len(README.read_text().splitlines()) <= 250


@pytest.mark.parametrize("path", [README, *pages()], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_issue_numbers(path: Path) -> None:
    found = [m.group(0) for m in ISSUE_NUMBER.finditer(path.read_text())]
    assert not found, f"{path.name} cites issue numbers users cannot read: {found}"


def test_readme_links_land() -> None:
    """Every relative link of the README names a file that exists, and a #anchor in it a
    heading of that page."""
    text = FENCE.sub("", README.read_text())
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        file = (ROOT / path) if path else README
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and anchor not in anchors(file):
            broken.append(f"{target}: no heading #{anchor} in {path or 'README.md'}")
    assert not broken, broken


def test_slug_matches_mkdocs() -> None:
    """The anchors this test computes are the ones the site has (so the README's links land
    on the site too)."""
    assert slug("Our server: `codingcode mcp`") == "our-server-codingcode-mcp"
    assert slug("Tool loading and `tool_search`") == "tool-loading-and-tool_search"
    assert slug("Network: a domain allow-list through a filtering proxy") == (
        "network-a-domain-allow-list-through-a-filtering-proxy"
    )
