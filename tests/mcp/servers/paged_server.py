"""A dependency-free stdio MCP server whose tools/list is paginated (2 tools a page)."""

import json
import sys

TOOLS = [
    {
        "name": f"t{i}",
        "description": f"tool number {i}",
        "inputSchema": {
            "type": "object",
            "properties": {"x": {"type": "integer"}},
            "required": ["x"],
        },
    }
    for i in range(5)
]


def reply(mid, result=None, error=None):
    msg = {"jsonrpc": "2.0", "id": mid}
    if error:
        msg["error"] = error
    else:
        msg["result"] = result
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    m = json.loads(line)
    method, mid, p = m.get("method"), m.get("id"), m.get("params") or {}
    if mid is None:
        continue
    if method == "initialize":
        reply(
            mid,
            {
                "protocolVersion": p.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "paged", "version": "0"},
            },
        )
    elif method == "tools/list":
        start = int(p.get("cursor") or 0)
        res = {"tools": TOOLS[start : start + 2]}
        if start + 2 < len(TOOLS):
            res["nextCursor"] = str(start + 2)
        reply(mid, res)
    elif method == "tools/call":
        reply(
            mid,
            {
                "content": [
                    {"type": "text", "text": f"{p['name']} got {json.dumps(p.get('arguments'))}"}
                ]
            },
        )
    else:
        reply(mid, error={"code": -32601, "message": "Method not found"})
