"""The streaming placeholder replacement: across chunk boundaries, bounded memory."""

from __future__ import annotations

import base64
import random
import tracemalloc

from codingcode.sandbox.network.rewrite import Rewriter, rewrite_header

PH = b"ghp_PLACEHOLDERplaceholder0123456789ABCD"
REAL = b"ghp_REALVALUErealvalue9876543210abcdEFGH"
OTHER = b"npm_otherPlaceholder0000000000000000000"


def test_a_placeholder_split_anywhere_is_replaced() -> None:
    body = b"a" * 100 + PH + b"b" * 7 + OTHER + b"c" * 50 + PH
    expected = body.replace(PH, REAL)
    seen: list[tuple[bytes, bool]] = []
    for cut in range(1, len(body)):
        rw = Rewriter({PH: REAL, OTHER: None}, lambda n, r: seen.append((n, r)))
        got = rw.feed(body[:cut]) + rw.feed(body[cut:]) + rw.flush()
        assert got == expected, cut
    assert (OTHER, False) in seen and (PH, True) in seen


def test_random_chunking_matches_a_whole_replace() -> None:
    rng = random.Random(7)
    parts = [rng.choice([PH, OTHER, b"x" * rng.randint(0, 90)]) for _ in range(400)]
    body = b"".join(parts)
    rw = Rewriter({PH: REAL, OTHER: None})
    out, pos = [], 0
    while pos < len(body):
        n = rng.randint(1, 64)
        out.append(rw.feed(body[pos : pos + n]))
        pos += n
    out.append(rw.flush())
    assert b"".join(out) == body.replace(PH, REAL)


def test_basic_authorization_is_rewritten_inside() -> None:
    value = b"Basic " + base64.b64encode(b"x-access-token:" + PH)
    got = rewrite_header(b"authorization", value, Rewriter({PH: REAL}))
    assert base64.b64decode(got.split(b" ")[1]) == b"x-access-token:" + REAL


def test_one_gigabyte_streams_in_bounded_memory() -> None:
    chunk = (b"z" * (1024 * 1024 - len(PH))) + PH
    rw = Rewriter({PH: REAL, OTHER: None})
    tracemalloc.start()
    total = 0
    for _ in range(1024):  # 1 GiB in 1 MiB chunks, each with a placeholder at its end
        total += len(rw.feed(chunk))
    total += len(rw.flush())
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert total == 1024 * len(chunk)
    assert peak < 16 * 1024 * 1024  # a few chunks at most, never the whole body
