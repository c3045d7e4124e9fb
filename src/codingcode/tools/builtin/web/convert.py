"""HTML to Markdown for fetch_url, bounded in time and memory.

The converter is ``html-to-markdown`` (a Rust core on the html5ever parser): scripts, styles,
templates, hidden elements, navigation and forms are dropped, tables become Markdown tables.
A page is converted only as far as the answer needs: a prefix of the HTML first (twice
``max_chars`` of markup), grown in proportion to what it yielded until the Markdown is long
enough or the whole page was converted. A 5 MB page asked for the default 100,000
characters converts its first few hundred kilobytes; the whole of it takes under a second.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The first prefix converted: this many characters of HTML at least, or 2x ``max_chars``
#: (pages yield roughly 0.3-0.8 characters of Markdown per character of HTML).
FIRST_PREFIX = 256_000
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


def convert_html(html: str, max_chars: int) -> Converted:
    """Markdown of ``html``, converting only as much of it as ``max_chars`` needs."""
    size = len(html)
    prefix = max(FIRST_PREFIX, 2 * max_chars)
    while prefix < size:
        markdown = _convert(html[:prefix])
        if len(markdown) > max_chars + MARGIN:
            return Converted(markdown, False, prefix)
        # Grow in proportion to the yield so far (at least double), so the total work stays
        # within a small multiple of converting the needed part once.
        per_char = max(len(markdown), 1) / prefix
        prefix = max(2 * prefix, int((max_chars + MARGIN) / per_char * 1.25))
    return Converted(_convert(html), True, size)
