"""The secret values of a credential file, found by format (for its sentinel copy).

Found: URL user information (``https://user:TOKEN@host``, or ``https://TOKEN@host``), the
values of secret-named keys in INI/``.npmrc``/``.env`` lines (``password = ...``,
``//registry.npmjs.org/:_authToken=...``), YAML (``oauth_token: ...``) and JSON
(``"auth": "..."``), tokens recognisable by their own prefix anywhere (``ghp_...``,
``npm_...``, ``pypi-...``, AWS key ids ``AKIA...``) and PEM private key bodies. A value that
is a reference (``${NPM_TOKEN}``) is not a secret. A file in which none is found cannot be
shown safely and is denied instead (the broker's rule).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Key names whose value is a secret (matched at the end of the key, after a separator).
SECRET_KEYS = (
    "_authtoken",
    "_auth",
    "_password",
    "password",
    "passwd",
    "pass",
    "token",
    "oauth_token",
    "access_token",
    "refresh_token",
    "auth",
    "secret",
    "client_secret",
    "api_key",
    "apikey",
    "api-key",
    "aws_access_key_id",
    "aws_secret_access_key",
    "aws_session_token",
    "identitytoken",
    "registrytoken",
    "key",
    "pwd",
    "credential",
    "credentials",
)
_KEY_END = re.compile(
    r"(?:^|[_.:/\-\s])(?:" + "|".join(re.escape(k.lstrip("_")) for k in SECRET_KEYS) + r")\Z",
    re.IGNORECASE,
)
_URL_USERINFO = re.compile(
    r"\b[a-zA-Z][a-zA-Z0-9+.-]*://(?P<user>[^:@/\s\"'<>]*)(?::(?P<pw>[^@/\s\"'<>]*))?@[^\s/@\"'<>]+"
)
_LINE_KV = re.compile(
    r"^[ \t]*(?:export[ \t]+)?-?[ \t]*(?P<key>[\w.:/@\-]+)[ \t]*[=:][ \t]*(?P<val>.*?)[ \t]*$",
    re.MULTILINE,
)
_JSON_KV = re.compile(r'"(?P<key>[^"\\\n]{1,200})"\s*:\s*"(?P<val>(?:[^"\\\n]|\\.)*)"')
_TOKENS = re.compile(
    r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|glpat-[A-Za-z0-9_\-]{20,}"
    r"|npm_[A-Za-z0-9]{30,}|pypi-[A-Za-z0-9_\-]{40,}|(?:AKIA|ASIA)[0-9A-Z]{16}"
    r"|xox[abpr]-[A-Za-z0-9\-]{10,}|dckr_pat_[A-Za-z0-9_\-]{20,})\b"
)
_PEM = re.compile(
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----\r?\n(?P<body>[A-Za-z0-9+/=\r\n:\-, ]+?)\r?\n-----END"
)
_NOT_SECRET = {"", "null", "none", "true", "false", "~", "''", '""'}


@dataclass(frozen=True)
class Found:
    """One secret value: its span in the text and what it is (for messages, never the value)."""

    start: int
    end: int
    what: str


def is_secret_key(key: str) -> bool:
    return _KEY_END.search(key.strip()) is not None


def _value_span(text: str, start: int, end: int) -> tuple[int, int] | None:
    """The span of a value without its quotes; None for references and empty values."""
    value = text[start:end]
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        start, end = start + 1, end - 1
        value = value[1:-1]
    if value.strip().lower() in _NOT_SECRET or value.startswith(("${", "$(")):
        return None
    return start, end


def find_secrets(text: str) -> list[Found]:
    """Every secret value of ``text``, in order, none overlapping another."""
    spans: list[Found] = []
    for m in _URL_USERINFO.finditer(text):
        group = "pw" if m.group("pw") else "user"
        if m.group(group):
            spans.append(Found(m.start(group), m.end(group), "the password of a URL"))
    for m in _LINE_KV.finditer(text):
        if not is_secret_key(m.group("key")):
            continue
        span = _value_span(text, m.start("val"), m.end("val"))
        if span is not None and "://" not in text[span[0] : span[1]]:
            spans.append(Found(*span, f"the value of {m.group('key')[-40:]}"))
    for m in _JSON_KV.finditer(text):
        if is_secret_key(m.group("key")) and m.group("val"):
            span = _value_span(text, m.start("val"), m.end("val"))
            if span is not None:
                spans.append(Found(*span, f"the value of {m.group('key')[-40:]}"))
    for m in _TOKENS.finditer(text):
        spans.append(Found(m.start(), m.end(), "a token"))
    for m in _PEM.finditer(text):
        spans.append(Found(m.start("body"), m.end("body"), "a private key"))
    spans.sort(key=lambda f: (f.start, -(f.end - f.start)))
    kept: list[Found] = []
    for found in spans:
        if kept and found.start < kept[-1].end:
            continue  # inside (or across) one already kept
        kept.append(found)
    return kept
