"""A scripted fake model server speaking the real Chat Completions and Messages protocols.

Each test scripts the responses in order (:class:`Step`: text and/or tool calls); the server
streams them as Server-Sent Events exactly as OpenAI's ``/v1/chat/completions`` and
Anthropic's ``/v1/messages`` do (or as one JSON body when the request does not stream),
and records every request body so the test can check what the agent sent back.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Step:
    text: str = ""
    #: (name, arguments) pairs; arguments as a dict, or a str sent verbatim (invalid JSON).
    tool_calls: list[tuple[str, dict[str, Any] | str]] = field(default_factory=list)
    #: Keep the stream open after the text (until the client goes away, at most 30 s).
    hang: bool = False
    #: Answer with this HTTP status and error body instead.
    status: int = 200


Script = list[Step | Callable[[dict[str, Any]], Step]]


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class FakeModelServer:
    def __init__(self, script: Script | None = None) -> None:
        self.script: Script = list(script or [])
        self.requests: list[Recorded] = []
        self.lock = threading.Lock()
        self.hanging = threading.Event()
        #: Behaviours of some OpenAI-compatible servers: "no_stream_options" (reject that
        #: parameter with HTTP 400), "index0" (every tool call whole, all at index 0).
        self.quirks: set[str] = set()
        #: The model's context window in tokens: a bigger request is refused the way the real
        #: APIs do (HTTP 400, OpenAI code ``context_length_exceeded``; Anthropic "prompt is
        #: too long"), and usage reports the request's size. None: no limit, usage fixed.
        self.context_window: int | None = None
        #: How many requests were refused as too long.
        self.refused = 0
        self._counter = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                outer._serve(self, body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    # -- environment for the SDKs ------------------------------------------------------
    def env(self, provider: str) -> dict[str, str]:
        if provider == "anthropic":
            return {
                "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{self.port}",
                "ANTHROPIC_API_KEY": "test-anthropic-key",
            }
        return {
            "OPENAI_BASE_URL": f"http://127.0.0.1:{self.port}/v1",
            "OPENAI_API_KEY": "test-openai-key",
        }

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def bodies(self) -> list[dict[str, Any]]:
        return [r.body for r in self.requests]

    # -- serving -----------------------------------------------------------------------
    def _next(self, body: dict[str, Any]) -> Step:
        with self.lock:
            if not self.script:
                return Step(text="(script exhausted)", status=500)
            item = self.script.pop(0)
        return item(body) if callable(item) else item

    def _id(self, prefix: str) -> str:
        with self.lock:
            self._counter += 1
            return f"{prefix}{self._counter:04d}"

    def _serve(self, h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        path = h.path.split("?", 1)[0]
        with self.lock:
            self.requests.append(Recorded(path, {k.lower(): v for k, v in h.headers.items()}, body))
        if path not in ("/v1/chat/completions", "/v1/messages"):
            self._json(h, 404, {"error": {"message": f"no route {path}"}})
            return
        if "no_stream_options" in self.quirks and "stream_options" in body:
            message = "Unrecognized request argument supplied: stream_options"
            self._json(h, 400, {"error": {"message": message, "type": "invalid_request_error"}})
            return
        if self.context_window is not None:
            size = request_tokens(body)
            if size > self.context_window:
                with self.lock:
                    self.refused += 1
                self._refuse_oversized(h, path, size)
                return
        step = self._next(body)
        if step.status != 200:
            error = (
                {"type": "error", "error": {"type": "api_error", "message": step.text}}
                if path == "/v1/messages"
                else {"error": {"message": step.text, "type": "server_error"}}
            )
            self._json(h, step.status, error)
            return
        anthropic = path == "/v1/messages"
        if not body.get("stream"):
            payload = (
                self._anthropic_body(body, step) if anthropic else self._openai_body(body, step)
            )
            self._json(h, 200, payload)
            return
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Cache-Control", "no-cache")
        h.send_header("Connection", "close")
        h.end_headers()
        events = (
            self._anthropic_events(body, step) if anthropic else self._openai_events(body, step)
        )
        try:
            for event, data in events:
                if event == "__hang__":
                    self._hang(h, anthropic)
                    return
                prefix = f"event: {event}\n" if event else ""
                h.wfile.write(f"{prefix}data: {data}\n\n".encode())
                h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            return

    def _refuse_oversized(self, h: BaseHTTPRequestHandler, path: str, size: int) -> None:
        window = self.context_window
        if path == "/v1/messages":
            error = {
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": f"prompt is too long: {size} tokens > {window} maximum",
                },
            }
        else:
            error = {
                "error": {
                    "message": f"This model's maximum context length is {window} tokens. "
                    f"However, your messages resulted in {size} tokens. Please reduce the "
                    "length of the messages.",
                    "type": "invalid_request_error",
                    "param": "messages",
                    "code": "context_length_exceeded",
                }
            }
        self._json(h, 400, error)

    def _prompt_tokens(self, body: dict[str, Any]) -> int:
        return request_tokens(body) if self.context_window is not None else 11

    def _hang(self, h: BaseHTTPRequestHandler, anthropic: bool) -> None:
        self.hanging.set()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            # Keep-alive traffic so a vanished client is noticed (a write fails).
            ping = 'event: ping\ndata: {"type": "ping"}\n\n' if anthropic else ": keep-alive\n\n"
            try:
                h.wfile.write(ping.encode())
                h.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                return
            time.sleep(0.05)

    @staticmethod
    def _json(h: BaseHTTPRequestHandler, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    # -- Chat Completions --------------------------------------------------------------
    def _openai_chunk(
        self, body: dict[str, Any], cid: str, delta: dict[str, Any], finish: str | None
    ) -> str:
        return json.dumps(
            {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": body.get("model", "fake"),
                "system_fingerprint": "fp_fake",
                "choices": [
                    {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
                ],
            }
        )

    def _openai_events(self, body: dict[str, Any], step: Step) -> list[tuple[str, str]]:
        cid = self._id("chatcmpl-")
        out = [("", self._openai_chunk(body, cid, {"role": "assistant", "content": ""}, None))]
        for piece in _pieces(step.text):
            out.append(("", self._openai_chunk(body, cid, {"content": piece}, None)))
        if step.hang:
            out.append(("__hang__", ""))
            return out
        for i, (name, args) in enumerate(step.tool_calls):
            raw = args if isinstance(args, str) else json.dumps(args)
            if "index0" in self.quirks:
                whole = {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": self._id("call_"),
                            "type": "function",
                            "function": {"name": name, "arguments": raw},
                        }
                    ]
                }
                out.append(("", self._openai_chunk(body, cid, whole, None)))
                continue
            first = {
                "tool_calls": [
                    {
                        "index": i,
                        "id": self._id("call_"),
                        "type": "function",
                        "function": {"name": name, "arguments": ""},
                    }
                ]
            }
            out.append(("", self._openai_chunk(body, cid, first, None)))
            for piece in _pieces(raw):
                more = {"tool_calls": [{"index": i, "function": {"arguments": piece}}]}
                out.append(("", self._openai_chunk(body, cid, more, None)))
        finish = "tool_calls" if step.tool_calls else "stop"
        out.append(("", self._openai_chunk(body, cid, {}, finish)))
        if (body.get("stream_options") or {}).get("include_usage"):
            out.append(
                (
                    "",
                    json.dumps(
                        {
                            "id": cid,
                            "object": "chat.completion.chunk",
                            "created": int(time.time()),
                            "model": body.get("model", "fake"),
                            "choices": [],
                            "usage": {
                                "prompt_tokens": self._prompt_tokens(body),
                                "completion_tokens": 7,
                                "total_tokens": self._prompt_tokens(body) + 7,
                            },
                        }
                    ),
                )
            )
        out.append(("", "[DONE]"))
        return out

    def _openai_body(self, body: dict[str, Any], step: Step) -> dict[str, Any]:
        calls = [
            {
                "id": self._id("call_"),
                "type": "function",
                "function": {"name": n, "arguments": a if isinstance(a, str) else json.dumps(a)},
            }
            for n, a in step.tool_calls
        ]
        message: dict[str, Any] = {"role": "assistant", "content": step.text or None}
        if calls:
            message["tool_calls"] = calls
        return {
            "id": self._id("chatcmpl-"),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if calls else "stop",
                }
            ],
            "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
        }

    # -- Messages ----------------------------------------------------------------------
    def _anthropic_events(self, body: dict[str, Any], step: Step) -> list[tuple[str, str]]:
        mid = self._id("msg_")
        out: list[tuple[str, str]] = []

        def add(event: str, data: dict[str, Any]) -> None:
            out.append((event, json.dumps({"type": event, **data})))

        add(
            "message_start",
            {
                "message": {
                    "id": mid,
                    "type": "message",
                    "role": "assistant",
                    "model": body.get("model", "fake"),
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": self._prompt_tokens(body), "output_tokens": 1},
                }
            },
        )
        add("ping", {})
        index = 0
        if step.text or step.hang:
            add("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}})
            for piece in _pieces(step.text):
                add(
                    "content_block_delta",
                    {"index": 0, "delta": {"type": "text_delta", "text": piece}},
                )
            if step.hang:
                out.append(("__hang__", ""))
                return out
            add("content_block_stop", {"index": 0})
            index = 1
        for name, args in step.tool_calls:
            raw = args if isinstance(args, str) else json.dumps(args)
            add(
                "content_block_start",
                {
                    "index": index,
                    "content_block": {
                        "type": "tool_use",
                        "id": self._id("toolu_"),
                        "name": name,
                        "input": {},
                    },
                },
            )
            for piece in _pieces(raw):
                add(
                    "content_block_delta",
                    {"index": index, "delta": {"type": "input_json_delta", "partial_json": piece}},
                )
            add("content_block_stop", {"index": index})
            index += 1
        add(
            "message_delta",
            {
                "delta": {
                    "stop_reason": "tool_use" if step.tool_calls else "end_turn",
                    "stop_sequence": None,
                },
                "usage": {"output_tokens": 7},
            },
        )
        add("message_stop", {})
        return out

    def _anthropic_body(self, body: dict[str, Any], step: Step) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if step.text:
            content.append({"type": "text", "text": step.text})
        for name, args in step.tool_calls:
            content.append(
                {
                    "type": "tool_use",
                    "id": self._id("toolu_"),
                    "name": name,
                    "input": args if isinstance(args, dict) else {},
                }
            )
        return {
            "id": self._id("msg_"),
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "fake"),
            "content": content,
            "stop_reason": "tool_use" if step.tool_calls else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 11, "output_tokens": 7},
        }


def request_tokens(body: dict[str, Any]) -> int:
    """A request's size in tokens as this fake counts them (4 characters a token)."""
    parts = [body.get("system", ""), body.get("messages", []), body.get("tools", [])]
    return len(json.dumps(parts, ensure_ascii=False)) // 4


def _pieces(text: str) -> list[str]:
    """Split text in a few pieces, as a real stream would deliver it."""
    if not text:
        return []
    size = max(1, len(text) // 3)
    return [text[i : i + size] for i in range(0, len(text), size)]


# -- reading what the agent sent back, whichever protocol -----------------------------
def tool_results(body: dict[str, Any]) -> list[tuple[str, bool]]:
    """(content, is_error) of the tool results in the request's last message(s)."""
    out: list[tuple[str, bool]] = []
    for m in body.get("messages", []):
        if m.get("role") == "tool":
            out.append((m["content"], False))
        elif m.get("role") == "user" and isinstance(m.get("content"), list):
            for block in m["content"]:
                if block.get("type") == "tool_result":
                    content = block["content"]
                    if isinstance(content, list):
                        content = "".join(b.get("text", "") for b in content)
                    out.append((content, bool(block.get("is_error"))))
    return out


def tool_names(body: dict[str, Any]) -> list[str]:
    names = []
    for t in body.get("tools", []):
        names.append(t["function"]["name"] if "function" in t else t["name"])
    return names


def system_text(body: dict[str, Any]) -> str:
    if "system" in body:
        system = body["system"]
        return system if isinstance(system, str) else "".join(b["text"] for b in system)
    for m in body.get("messages", []):
        if m.get("role") == "system":
            return str(m["content"])
    return ""
