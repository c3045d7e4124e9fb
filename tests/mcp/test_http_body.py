"""The repair of MCP servers' HTTP answers: lone surrogate escapes become U+FFFD, whatever
the chunking, valid pairs and escaped backslashes untouched, in linear time."""

from __future__ import annotations

import json
import time

import anyio
import mcp_types as types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codingcode.mcp.http_body import repair, repair_stream


async def _chunks(data: bytes, sizes: list[int]) -> list[bytes]:
    async def gen():  # type: ignore[no-untyped-def]
        i = 0
        for n in sizes:
            if i >= len(data):
                break
            yield data[i : i + n]
            i += n
        if i < len(data):
            yield data[i:]

    return [c async for c in repair_stream(gen())]


def test_examples() -> None:
    assert repair(b'"a\\udcffb"') == b'"a\\ufffdb"'
    assert repair(b'"a\\uD800"') == b'"a\\ufffd"'
    assert repair(b'"\\ud83d\\ude00"') == b'"\\ud83d\\ude00"'  # a pair: kept
    assert repair(b'"\\\\udcff"') == b'"\\\\udcff"'  # a backslash, then text: kept
    assert repair(b'"\\\\\\udcff"') == b'"\\\\\\ufffd"'
    assert repair(b'"\\ude00\\ud83d"') == b'"\\ufffd\\ufffd"'  # wrong order: both lone


_piece = st.sampled_from(
    ["a", "\\udcff", "\\ud83d", "\\ude00", "\\ud83d\\ude00", "\\\\", "\\\\u", '\\"', "\n", "é", "u"]
)


@given(st.lists(_piece, max_size=40), st.lists(st.integers(1, 9), max_size=30))
@settings(max_examples=300)
def test_any_chunking_gives_the_whole_repair_and_strict_json(
    pieces: list[str], sizes: list[int]
) -> None:
    body = ('{"jsonrpc":"2.0","id":1,"result":{"t":"' + "".join(pieces) + '"}}').encode()
    body = body.replace(b"\n", b"\\n")  # a raw newline is not allowed inside a JSON string
    got = b"".join(anyio.run(_chunks, body, sizes))
    assert got == repair(body)
    # The SDK's strict parser accepts it, and it means what a lenient parser reads.
    message = types.jsonrpc_message_adapter.validate_json(got, by_name=False)
    lenient = json.loads(body.decode())["result"]["t"]
    expected = "".join(ch if not 0xD800 <= ord(ch) <= 0xDFFF else "\ufffd" for ch in lenient)
    assert message.result["t"] == expected  # type: ignore[union-attr]


@pytest.mark.timeout(60)
def test_fifty_megabytes_in_small_chunks_is_linear() -> None:
    one = b"x" * 1_000_000
    big = b'"' + one * 50 + b'\\udcff"'

    def run(data: bytes) -> float:
        start = time.perf_counter()
        out = anyio.run(_chunks, data, [65536] * (len(data) // 65536 + 1))
        assert b"".join(out).endswith(b'\\ufffd"')
        return time.perf_counter() - start

    small = run(b'"' + one * 5 + b'\\udcff"')
    assert run(big) < max(2.0, small * 10 * 4)  # 10x the data: well under 40x the time
