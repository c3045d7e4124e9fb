"""The stdio reader's parts: line splitting (any chunking, capped) and message parsing."""

from __future__ import annotations

import itertools
import json
import time

from hypothesis import given
from hypothesis import strategies as st

from codingcode.mcp.launched_stdio import LineSplitter, parse_message


def _split_all(data: bytes, cuts: list[int], cap: int) -> list[bytes | tuple[bytes, int]]:
    splitter = LineSplitter(cap)
    out: list[bytes | tuple[bytes, int]] = []
    bounds = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    for a, b in itertools.pairwise(bounds):
        out += splitter.feed(data[a:b])
    return out


@given(
    st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=20),
    st.lists(st.integers(min_value=0, max_value=2000), max_size=10),
    st.integers(min_value=1, max_value=30),
)
def test_any_chunking_gives_the_same_lines(lines: list[bytes], cuts: list[int], cap: int) -> None:
    data = b"".join(line + b"\n" for line in lines)
    expected: list[bytes | int] = []
    for line in lines:
        if len(line) > cap:
            expected.append(len(line))  # dropped: only its size, and a head (its start)
        elif line.strip(b" \t\r\x0b\x0c"):
            expected.append(line)
    got = _split_all(data, cuts, cap)
    assert [x[1] if isinstance(x, tuple) else x for x in got] == expected
    over = iter(line for line in lines if len(line) > cap)
    for item in got:
        if isinstance(item, tuple):
            assert next(over).startswith(item[0])


def test_a_partial_last_line_waits_for_its_newline() -> None:
    splitter = LineSplitter(100)
    assert splitter.feed(b'{"a"') == []
    assert splitter.feed(b": 1}\n{") == [b'{"a": 1}']


def test_splitting_is_linear_in_the_line_length() -> None:
    """A 50 MB line in 64 KiB chunks (the pipe's size) costs about one pass over it."""
    chunk = b"x" * 65536
    splitter = LineSplitter()
    start = time.perf_counter()
    for _ in range(800):
        assert splitter.feed(chunk) == []
    (line,) = splitter.feed(b"\n")
    took = time.perf_counter() - start
    assert len(line) == 800 * 65536
    assert took < 5  # a quadratic re-join takes minutes here; this takes ~0.05 s


def test_20000_lines_in_one_chunk() -> None:
    data = b"".join(b'{"jsonrpc": "2.0", "method": "n%d"}\n' % i for i in range(20_000))
    lines = LineSplitter().feed(data)
    assert len(lines) == 20_000 and lines[-1] == b'{"jsonrpc": "2.0", "method": "n19999"}'


def test_parse_message_replaces_surrogates_and_bad_utf8() -> None:
    text = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"t": "a\udcffb"}}).encode()
    message = parse_message(text)
    assert message is not None and message.message.result == {"t": "a\ufffdb"}
    raw = b'{"jsonrpc": "2.0", "id": 2, "result": {"t": "a\xffb"}}'
    message = parse_message(raw)
    assert message is not None and message.message.result == {"t": "a\ufffdb"}
    # A valid surrogate pair is a character, kept as it is.
    pair = parse_message(b'{"jsonrpc": "2.0", "id": 3, "result": {"t": "\\ud83d\\ude00"}}')
    assert pair is not None and pair.message.result == {"t": "\U0001f600"}


@given(st.binary(max_size=200))
def test_parse_message_never_raises(data: bytes) -> None:
    parse_message(data)  # a message or None, whatever the bytes


def test_not_json_rpc_is_none() -> None:
    assert parse_message(b"Server started on stdio") is None
    assert parse_message(b'{"hello": "world"}') is None
    assert parse_message(b"[" * 100_000) is None  # deep nesting: no RecursionError
