"""A hand-written streamable-HTTP MCP server (``raw_http_server.py PORT``) whose tool
``odd`` answers over SSE with a text holding the JSON escape ``\\udcff`` (a lone
surrogate, which strict JSON parsers refuse)."""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def _send(self, status: int, body: bytes, ctype: str) -> None:
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(body)))
        self.send_header("mcp-session-id", "s1")
        self.end_headers()
        self.wfile.write(body)

    def do_DELETE(self) -> None:
        self._send(200, b"", "text/plain")

    def do_GET(self) -> None:
        self._send(405, b"", "text/plain")

    def do_POST(self) -> None:
        msg = json.loads(self.rfile.read(int(self.headers["content-length"])))
        if "id" not in msg:
            self._send(202, b"", "text/plain")
            return
        rid, method = msg["id"], msg["method"]
        if method == "initialize":
            result = {
                "protocolVersion": msg["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "rawhttp", "version": "0"},
            }
        elif method == "tools/list":
            result = {"tools": [{"name": "odd", "inputSchema": {"type": "object"}}]}
        else:
            answer = {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {"content": [{"type": "text", "text": "a\udcffb"}]},
            }
            event = b"event: message\ndata: " + json.dumps(answer).encode() + b"\n\n"
            self._send(200, event, "text/event-stream")
            return
        body = json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode()
        self._send(200, body, "application/json")


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
