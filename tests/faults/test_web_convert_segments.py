"""fetch_url converts a long page in segments: the cuts never split what must stay whole
(raw text, comments, lists, preformatted blocks; tables only between rows), and the
Markdown is what converting the whole page gives (issue 19)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from codingcode.tools.builtin.web import convert
from codingcode.tools.builtin.web.convert import convert_html, find_cut

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from bench_fetch import make_page

#: Blocks a page is built of: (kind, html). Kinds other than "free" must not be cut inside.
BLOCKS = [
    ("free", "<p>plain paragraph with <b>bold</b> text</p>"),
    ("free", "<div><h2>Heading</h2><div>nested <a href='/x'>link</a></div></div>"),
    ("script", "<script>var s = '<div><p>not markup</p></div>'; // -->\n</script>"),
    ("style", "<style>div > p { color: red } /* <div> */</style>"),
    ("comment", "<!-- <div>commented out</div> <p> -->"),
    ("pre", "<pre><code>line one\n<div>kept as text</div>\n    indented</code></pre>"),
    ("list", "<ul><li>one<div>block in item</div></li><li>two<ul><li>inner</li></ul></li></ul>"),
    ("textarea", "<textarea><div>typed</div></textarea>"),
]


@st.composite
def pages(draw: st.DrawFn) -> tuple[str, list[tuple[int, int, str]]]:
    """A page and the (start, end, kind) span of each block."""
    chosen = draw(st.lists(st.sampled_from(BLOCKS), min_size=1, max_size=60))
    html, spans = "", []
    for kind, block in chosen:
        spans.append((len(html), len(html) + len(block), kind))
        html += block
    return html, spans


@settings(max_examples=300)
@given(pages(), st.integers(1, 3000))
def test_cuts_fall_only_between_blocks_that_may_be_split(
    page: tuple[str, list[tuple[int, int, str]]], target: int
) -> None:
    html, spans = page
    pos = 0
    while (cut := find_cut(html, pos, pos + target)) is not None:
        at, reopen = cut
        assert at >= pos + target and reopen == ""
        for start, end, kind in spans:
            if kind != "free":
                assert not start < at < end, (kind, at, html[start:end])
        assert re.match(r"<(div|p|h2|pre|ul)\b", html[at:]), html[at : at + 20]
        pos = at


def test_long_article_converts_exactly_as_a_whole(monkeypatch: object) -> None:
    html = make_page("article", 1_200_000)
    whole = convert._convert(html)
    segmented = convert_html(html, 10**9)
    assert segmented.complete and segmented.markdown == whole


def test_table_cut_between_rows_keeps_every_row() -> None:
    html = make_page("table", 1_500_000)
    rows = len(re.findall(r"<tr>", html))
    out = convert_html(html, 10**9).markdown
    ids = re.findall(r"^\| (\d+) +\|", out, re.MULTILINE)
    # Every data row appears once (a reopened table's first row may serve as its header).
    assert [int(i) for i in ids] == list(range(1, rows))
    assert "<td>" not in out and "<tr>" not in out


def test_stops_once_long_enough_and_says_how_far() -> None:
    html = make_page("article", 5_000_000)
    result = convert_html(html, 1000)
    assert not result.complete
    assert result.html_chars < 1_000_000  # one segment (and a bit) of 5 MB
    assert len(result.markdown) > 1000
