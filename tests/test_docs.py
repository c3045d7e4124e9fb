"""The documentation keeps its promises: a short README whose links land, no issue numbers.

`./dev test` builds the site itself with `mkdocs build --strict` (links and anchors between
pages of docs/, the nav); these tests cover what that build does not see: README.md, which
is not a page of the site, and the text of every page.
"""

from __future__ import annotations

import os
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


def layout_names() -> set[str]:
    """The modules and packages docs/DESIGN.md's layout names at the start of its lines
    (`errors.py atomic.py ...`, `sandbox/`), under `src/codingcode/`."""
    text = (DOCS / "DESIGN.md").read_text()
    start = text.index("```\nsrc/codingcode/", text.index("## Layout")) + 4
    block = text[start : text.index("\n```", start)]
    names: set[str] = set()
    for line in block.splitlines()[1:]:
        if not line.startswith("  ") or line.startswith("   "):
            continue  # a top-level dir (tests/) or a description's continuation
        for word in line.split():
            if not re.fullmatch(r"\w+\.py|\w+/", word):
                break
            names.add(word)
    return names


def test_design_layout_is_the_real_one() -> None:
    """The architecture page lists every package and module of src/codingcode, and nothing
    that is not there (move a package: update the layout in docs/DESIGN.md)."""
    src = ROOT / "src" / "codingcode"
    real = {p.name + "/" for p in src.iterdir() if (p / "__init__.py").exists()}
    real |= {p.name for p in src.glob("*.py") if p.name not in ("__init__.py", "__main__.py")}
    named = layout_names()
    assert not real - named, f"docs/DESIGN.md's layout lacks {sorted(real - named)}"
    assert not named - real, f"docs/DESIGN.md's layout names what src lacks: {sorted(named - real)}"


def test_strict_build_fails_on_broken_links(tmp_path: Path) -> None:
    """The site's build (run by `./dev test`) fails on a link to a missing page, an anchor
    no heading has, and a page left out of the nav: a copy of the site with one of each."""
    import shutil
    import subprocess
    import sys

    site = tmp_path / "site"
    shutil.copytree(DOCS, site / "docs")
    shutil.copy(ROOT / "mkdocs.yml", site / "mkdocs.yml")
    shutil.copy(README, site / "README.md")  # a page includes the README's example
    with (site / "docs" / "index.md").open("a") as f:
        f.write("\n[gone](no-such-page.md) and [nowhere](tools.md#no-such-heading)\n")
    (site / "docs" / "orphan.md").write_text("# Not in the nav\n")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "out")],
        cwd=site,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "'no-such-page.md', but the target is not found" in result.stderr
    assert "does not contain an anchor '#no-such-heading'" in result.stderr
    assert "orphan.md" in result.stderr


@pytest.mark.parametrize("path", pages(), ids=lambda p: p.name)
def test_lists_and_tables_start_after_a_blank_line(path: Path) -> None:
    """Python-Markdown (the site's renderer), unlike GitHub, reads a list or a table that
    follows a paragraph line directly as more of the paragraph: `- a` shows as text."""
    problems = []
    fence = False
    previous = ""
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.startswith("```"):
            fence = not fence
        starts_list = re.match(r"(- |\d+\. )", line) and not re.match(r"(- |\d+\. |  |#)", previous)
        starts_table = line.startswith("|") and not previous.startswith("|")
        if not fence and previous.strip() and (starts_list or starts_table):
            problems.append(f"{path.name}:{number}: {line[:50]}")
        previous = line
    assert not problems, f"add a blank line before: {problems}"


def test_every_benchmark_is_described() -> None:
    """docs/benchmarks.md's table says what every bench/bench_*.py measures."""
    text = (DOCS / "benchmarks.md").read_text()
    table = text[text.index("## What each script measures") :].split("\n## ", 1)[0]
    described = set(re.findall(r"^\| `(bench_\w+\.py)` \|", table, re.M))
    scripts = {p.name for p in (ROOT / "bench").glob("bench_*.py")}
    assert scripts <= described, f"not in docs/benchmarks.md: {sorted(scripts - described)}"


def test_hook_events_table() -> None:
    """docs/hooks.md's table of events names every event codingcode raises."""
    from tests.test_docs_configuration import find_class

    module = find_class("HooksSettings").__module__
    import importlib

    events = set(importlib.import_module(module).EVENTS)
    text = (DOCS / "hooks.md").read_text()
    table = text[text.index("| event | fires |") :].split("\n\n", 1)[0]
    documented = set(re.findall(r"`(\w+)`", "\n".join(r.split("|")[1] for r in table.splitlines())))
    assert documented == events
