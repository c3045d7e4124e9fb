"""A hand-written stdio MCP server for fault tests: it misbehaves on request.

``raw_server.py MODE [ARG]``, MODE one of:

* ``big N``: the tool ``big`` returns a text of N bytes (``x`` repeated).
* ``garbage``: prints non-JSON lines (and invalid UTF-8) on stdout around its answers.
* ``surrogate``: the tool ``odd`` returns a text holding the JSON escape ``\\udcff``.
* ``many N``: offers N tools (``t0`` ... ``tN-1``) in one page.
* ``huge_line N``: answers ``tools/call`` with a single line of N bytes that never ends in
  valid JSON.
"""

from __future__ import annotations

import json
import sys

MODE = sys.argv[1] if len(sys.argv) > 1 else "big"
ARG = int(sys.argv[2]) if len(sys.argv) > 2 else 0
out = sys.stdout.buffer


def send(obj: dict[str, object]) -> None:
    out.write(json.dumps(obj).encode() + b"\n")  # ensure_ascii: a lone surrogate stays \udcff
    out.flush()


def garbage() -> None:
    if MODE == "garbage":
        out.write(b'this is not JSON\n\xff\xfe not utf-8 either\n{"half": \n')
        out.flush()


TOOLS = [
    {"name": "big", "inputSchema": {"type": "object"}},
    {"name": "odd", "inputSchema": {"type": "object"}},
]

garbage()
for raw in sys.stdin.buffer:
    msg = json.loads(raw)
    if "id" not in msg:
        continue
    method, rid = msg.get("method"), msg["id"]
    garbage()
    if method == "initialize":
        send(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {
                    "protocolVersion": msg["params"]["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "raw", "version": "0"},
                },
            }
        )
    elif method == "tools/list" and MODE == "many":
        schema = {"type": "object", "properties": {"x": {"type": "integer"}}}
        many = [{"name": f"t{i}", "inputSchema": schema} for i in range(ARG)]
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": many}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}})
    elif method == "tools/call" and MODE == "huge_line":
        out.write(b'{"jsonrpc": "2.0", "id": %d, "result": "' % rid)
        chunk = b"y" * 65536
        for _ in range(ARG // len(chunk)):
            out.write(chunk)
        out.write(b"\n")
        out.flush()
    elif method == "tools/call":
        text = "x" * ARG if msg["params"]["name"] == "big" else "a\udcffb"
        send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": text}]}})
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no such method"}})
