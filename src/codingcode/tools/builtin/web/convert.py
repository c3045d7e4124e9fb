"""HTML to Markdown for fetch_url, bounded in time and memory.

The converter is ``html-to-markdown`` (a Rust core with Python bindings): scripts, styles,
templates, hidden elements, navigation and forms are dropped, tables become Markdown tables.
A long page is converted in segments of about 400,000 characters of HTML, each cut just
before a block element where nothing that must stay whole is open (raw text, a comment, a
list, a preformatted block; a table is cut only between rows and reopened), and only until
the Markdown is long enough for ``max_chars``. The work is proportional to what the answer
needs and the memory to one segment: a 5 MB page costs well under a second either way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Markdown wanted beyond ``max_chars`` before a prefix is trusted (its tail may be cut
#: mid-element, which can change how the last few lines convert).
MARGIN = 2_000
#: Elements nested deeper than this are dropped (pathological pages), as the converter's
#: own recursion guard would.
MAX_DEPTH = 256


@dataclass(frozen=True)
class Converted:
    markdown: str
    #: True when the whole page was converted (so ``len(markdown)`` is its full length).
    complete: bool
    #: Characters of HTML converted.
    html_chars: int


def _convert(html: str) -> str:
    import html_to_markdown

    options = html_to_markdown.ConversionOptions(
        heading_style="atx",
        extract_metadata=False,
        max_depth=MAX_DEPTH,
        wrap=False,
    )
    result = html_to_markdown.convert(html, options)
    return _squeeze_blank_lines(result.content or "")


def _squeeze_blank_lines(text: str) -> str:
    out: list[str] = []
    for line in text.splitlines():
        line = line.rstrip()
        if not line and out and not out[-1]:
            continue
        out.append(line)
    return "\n".join(out).strip()


def html_to_markdown(html: str) -> str:
    """The whole page as Markdown."""
    return _convert(html)


#: Characters of HTML converted at once; a longer page is converted segment by segment.
SEGMENT = 400_000

#: The tags that matter for where a page may be cut: raw-text elements (their content is not
#: markup), containers a cut must not split (a list, a preformatted block, ...), tables
#: (split only between rows, the table reopened), and block elements a cut may precede.
_TOKEN = re.compile(
    r"<!--|-->|<(/?)(script|style|textarea|title|pre|table|tr|ul|ol|dl|svg|math|template"
    r"|noscript|select|div|p|h[1-6]|section|article|header|footer|aside|main|blockquote|hr"
    r"|figure|details|nav|form)(?=[\s>/])",
    re.IGNORECASE,
)
_RAW = frozenset({"script", "style", "textarea", "title"})
_UNSPLIT = frozenset(
    {"pre", "table", "ul", "ol", "dl", "svg", "math", "template", "noscript", "select"}
)


def find_cut(html: str, start: int, target: int, reopened: str = "") -> tuple[int, str] | None:
    """Where to end the segment that starts at ``start`` (where nothing is open): the first
    block element opening at or after ``target`` outside comments, raw text and the
    containers of ``_UNSPLIT``, or a row of a table open at top level. Returns the position
    and the markup to reopen in the next segment ("<table>" for a table cut between rows);
    ``reopened`` is what this segment itself reopened (so its table is open from the start)."""
    raw: str | None = None
    open_: list[str] = ["table"] if reopened else []
    for m in _TOKEN.finditer(html, start):
        token = m.group(0)
        if raw == "--":
            if token == "-->":
                raw = None
            continue
        closing, name = m.group(1), (m.group(2) or "").lower()
        if raw is not None:
            if closing and name == raw:
                raw = None
            continue
        if token == "<!--":
            raw = "--"
            continue
        if not name:
            continue
        if name in _RAW:
            raw = None if closing else name
            continue
        if closing:
            if name in _UNSPLIT and name in open_:
                while open_ and open_.pop() != name:
                    pass
            continue
        if m.start() >= target:
            if not open_ and name != "tr":
                return m.start(), ""
            if open_ == ["table"] and name == "tr":
                return m.start(), "<table>"
        if name in _UNSPLIT:
            open_.append(name)
    return None


def convert_html(html: str, max_chars: int) -> Converted:
    """Markdown of ``html``, converting only as much of it as ``max_chars`` needs.

    A page of more than 1.5 segments is converted segment by segment, each cut just before
    a block element where nothing that must stay whole is open (one linear scan of the
    markup), until the Markdown is long enough or the page ends: the work is proportional
    to what is needed and the memory to one segment.
    """
    size = len(html)
    parts: list[str] = []
    total = 0
    pos = 0
    reopen = ""
    while pos < size:
        cut = find_cut(html, pos, pos + SEGMENT, reopen) if size - pos > SEGMENT * 3 // 2 else None
        end, next_reopen = cut if cut is not None else (size, "")
        markdown = _convert(reopen + html[pos:end])
        if markdown:
            parts.append(markdown)
            total += len(markdown) + 2
        pos, reopen = end, next_reopen
        if total > max_chars + MARGIN and pos < size:
            return Converted("\n\n".join(parts), False, pos)
    return Converted("\n\n".join(parts), True, size)
