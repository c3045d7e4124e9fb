"""Text every floor needs whole: strings made valid Unicode before they leave the process."""

from __future__ import annotations


def safe_text(text: str) -> str:
    """``text`` as valid Unicode: a lone surrogate becomes its ``\\uXXXX`` escape.

    Arguments may carry lone surrogates (a file name of bytes that are not UTF-8 decodes to
    them; a model's JSON may escape one); SQLite, JSON output and the model's wire format
    all need valid UTF-8. Inside JSON text the escape is read back as the same character
    (except a high surrogate directly followed by a low one, which JSON reads as the one
    character the pair encodes; decoded bytes never produce such a pair).
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text
