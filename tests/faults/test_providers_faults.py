"""Model providers against a scripted endpoint on 127.0.0.1 (real HTTP and SSE): a malformed
chunk, a hang, 429 with Retry-After, 529 overloaded and an overloaded event mid-stream
(issue 19). Each ends in an answer after bounded retries, or in one ModelError line."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from codingcode.agent.model import ModelError
from codingcode.agent.providers import base
from codingcode.agent.providers.base import ModelClientSettings
from codingcode.agent.transcript import Message, TurnComplete

pytestmark = pytest.mark.anyio

#: One scripted reply: (status, headers, SSE events as (event name or None, data text)).
Reply = tuple[int, dict[str, str], list[tuple[str | None, str]]]
HANG: Reply = (-1, {}, [])


def openai_ok(text: str) -> Reply:
    chunk = {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}],
    }
    return (200, {}, [(None, json.dumps(chunk)), (None, "[DONE]")])


def anthropic_ok(text: str) -> Reply:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": "m",
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 0},
    }
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 1},
        },
        {"type": "message_stop"},
    ]
    return (200, {}, [(e["type"], json.dumps(e)) for e in events])


def error(status: int, kind: str, headers: dict[str, str] | None = None) -> Reply:
    body = {"type": "error", "error": {"type": kind, "message": f"{kind} says no"}}
    return (status, headers or {}, [("json", json.dumps(body))])


class ScriptedEndpoint:
    def __init__(self) -> None:
        self.script: list[Reply] = []
        self.arrivals: list[float] = []
        self.stop = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                outer.arrivals.append(time.monotonic())
                status, headers, events = (
                    outer.script.pop(0) if outer.script else error(500, "api_error")
                )
                if status == -1:  # hang: headers never come
                    outer.stop.wait(30)
                    return
                if events and events[0][0] == "json":
                    body = events[0][1].encode()
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                self.send_response(status)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                for name, data in events:
                    if name == "hang":
                        self.wfile.flush()
                        outer.stop.wait(30)
                        return
                    prefix = f"event: {name}\n" if name else ""
                    self.wfile.write(f"{prefix}data: {data}\n\n".encode())
                self.wfile.flush()
                self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self) -> None:
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedEndpoint]:
    server = ScriptedEndpoint()
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    monkeypatch.setattr(base, "INITIAL_BACKOFF_S", 0.05)
    yield server
    server.close()


SETTINGS = ModelClientSettings(connect_timeout_s=2, read_timeout_s=0.5, max_retries=2)


def make(kind: str, settings: ModelClientSettings = SETTINGS) -> Any:
    if kind == "openai":
        from codingcode.agent.providers.openai_chat import OpenAIChatProvider

        return OpenAIChatProvider("m", settings)
    from codingcode.agent.providers.anthropic_messages import AnthropicProvider

    return AnthropicProvider("m", settings)


OK: dict[str, Callable[[str], Reply]] = {"openai": openai_ok, "anthropic": anthropic_ok}


async def answer(provider: Any) -> str:
    try:
        events = [e async for e in provider.stream("", [Message("user", "hi")], [])]
    finally:
        await provider.aclose()
    done = events[-1]
    assert isinstance(done, TurnComplete)
    return done.message.text


@pytest.fixture(params=["openai", "anthropic"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_malformed_chunk_is_one_clear_line(endpoint: ScriptedEndpoint, kind: str) -> None:
    endpoint.script = [(200, {}, [("message_start" if kind == "anthropic" else None, "{not json")])]
    with pytest.raises(ModelError, match="malformed") as info:
        await answer(make(kind))
    assert "\n" not in info.value.message
    assert len(endpoint.arrivals) == 1  # not retried: the same request would get the same


async def test_wrong_shape_chunk_is_malformed_too(endpoint: ScriptedEndpoint) -> None:
    endpoint.script = [(200, {}, [(None, json.dumps({"choices": "oops"})), (None, "[DONE]")])]
    with pytest.raises(ModelError, match="malformed"):
        await answer(make("openai"))


async def test_hung_endpoint_times_out_then_gives_up(endpoint: ScriptedEndpoint, kind: str) -> None:
    endpoint.script = [HANG, HANG, HANG]
    provider = make(kind)  # the SDK's import is not the call's time (seconds on a loaded CI)
    start = time.monotonic()
    with pytest.raises(ModelError, match=r"did not answer in time.*read 0.5s.*3 attempts"):
        await answer(provider)
    assert time.monotonic() - start < 20  # three reads of 0.5 s and short backoffs, not 30 min
    assert len(endpoint.arrivals) == 3


async def test_hang_mid_stream_is_not_retried(endpoint: ScriptedEndpoint) -> None:
    status, headers, events = openai_ok("partial")
    endpoint.script = [(status, headers, [events[0], ("hang", "")])]
    with pytest.raises(ModelError, match="did not answer in time"):
        await answer(make("openai"))
    assert len(endpoint.arrivals) == 1  # text was already streamed: a retry would repeat it


async def test_429_retry_after_is_respected(endpoint: ScriptedEndpoint, kind: str) -> None:
    endpoint.script = [error(429, "rate_limit_error", {"Retry-After": "1"}), OK[kind]("hello")]
    assert await answer(make(kind)) == "hello"
    assert len(endpoint.arrivals) == 2
    assert endpoint.arrivals[1] - endpoint.arrivals[0] >= 0.9


async def test_retry_after_beyond_the_bound_fails_at_once(
    endpoint: ScriptedEndpoint, kind: str
) -> None:
    endpoint.script = [error(429, "rate_limit_error", {"Retry-After": "3600"}), OK[kind]("x")]
    provider = make(kind)
    start = time.monotonic()
    with pytest.raises(ModelError, match=r"HTTP 429.*retry after 3600s.*max_retry_wait_s"):
        await answer(provider)
    assert time.monotonic() - start < 10 and len(endpoint.arrivals) == 1


async def test_529_overloaded_is_retried_then_answers(
    endpoint: ScriptedEndpoint, kind: str
) -> None:
    endpoint.script = [error(529, "overloaded_error"), error(503, "api_error"), OK[kind]("ok")]
    assert await answer(make(kind)) == "ok"
    assert len(endpoint.arrivals) == 3


async def test_overloaded_for_good_gives_one_line(endpoint: ScriptedEndpoint, kind: str) -> None:
    endpoint.script = [error(529, "overloaded_error")] * 3
    with pytest.raises(ModelError, match=r"HTTP 529.*gave up after 3 attempts") as info:
        await answer(make(kind))
    assert "\n" not in info.value.message


async def test_anthropic_overloaded_event_before_any_text_is_retried(
    endpoint: ScriptedEndpoint,
) -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    endpoint.script = [(200, {}, [("error", json.dumps(overloaded))]), anthropic_ok("fine")]
    assert await answer(make("anthropic")) == "fine"
    assert len(endpoint.arrivals) == 2


async def test_client_errors_are_not_retried(endpoint: ScriptedEndpoint, kind: str) -> None:
    endpoint.script = [error(400, "invalid_request_error")]
    with pytest.raises(ModelError, match="HTTP 400"):
        await answer(make(kind))
    assert len(endpoint.arrivals) == 1


def test_settings_defaults_and_file(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from codingcode.agent.providers.base import load_client_settings
    from codingcode.config import SettingsError, load_settings

    monkeypatch.setenv("CODINGCODE_CONFIG_DIR", str(tmp_path))
    project = tmp_path / "project"
    project.mkdir()
    assert load_client_settings(load_settings(project)) == ModelClientSettings()
    (tmp_path / "settings.json").write_text(json.dumps({"model_client": {"read_timeout_s": 7}}))
    assert load_client_settings(load_settings(project)).read_timeout_s == 7
    (tmp_path / "settings.json").write_text(json.dumps({"model_client": {"max_retries": -1}}))
    with pytest.raises(SettingsError, match=r"settings.json: model_client.max_retries"):
        load_client_settings(load_settings(project))


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("reply", "said"),
    [
        ((200, {}, [(None, "{not json")]), "malformed stream chunk"),
        (HANG, "did not answer in time"),
        (error(429, "rate_limit_error", {"Retry-After": "3600"}), "HTTP 429"),
    ],
)
def test_codingcode_run_ends_with_one_line_and_exit_1(
    endpoint: ScriptedEndpoint, project: Any, tmp_path: Any, reply: Reply, said: str
) -> None:
    """The real command: one `error:` line on stderr, exit code 1, no traceback."""
    import os

    from tests.conftest import run_cli

    config = tmp_path / "cfg"
    config.mkdir()
    (config / "settings.json").write_text(
        json.dumps({"model_client": {"read_timeout_s": 0.5, "max_retries": 0}})
    )
    endpoint.script = [reply]
    result = run_cli(
        ["run", "hi", "--model", "openai:m", "--project", str(project), "--quiet"],
        cwd=project,
        env={**os.environ, "CODINGCODE_CONFIG_DIR": str(config)},
    )
    assert result.code == 1, result
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1 and said in errors[0], result.stderr
    assert "Traceback" not in result.stderr


@pytest.fixture
def unaccepting(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A loopback listener whose accept queue is full and never drained: a new connection's
    SYN is dropped, so connecting hangs (as to a host that does not answer)."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    for _ in range(8):  # fill the queue (its size is backlog + 1 on Linux)
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", port))
        fillers.append(s)
    time.sleep(0.2)
    probe = socket.socket()
    probe.settimeout(0.5)
    try:
        probe.connect(("127.0.0.1", port))
        hangs = False
    except (TimeoutError, OSError):
        hangs = True
    finally:
        probe.close()
    if not hangs:
        pytest.skip("this kernel accepts connections beyond a full accept queue")
    url = f"http://127.0.0.1:{port}"
    monkeypatch.setenv("OPENAI_BASE_URL", url + "/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    yield url
    for s in fillers:
        s.close()
    listener.close()


async def test_connect_timeout_bounds_a_peer_that_never_accepts(
    unaccepting: str, kind: str
) -> None:
    provider = make(
        kind, ModelClientSettings(connect_timeout_s=0.5, read_timeout_s=30, max_retries=1)
    )
    start = time.monotonic()
    with pytest.raises(ModelError) as info:
        await answer(provider)
    took = time.monotonic() - start
    # Two connects of 0.5 s and a ~1 s backoff (~2 s here); the SDKs' own connect timeout
    # (5 s) would take over 10 s, their read timeout (30 s here; 10 min by default) longer.
    assert took < 8, took
    assert "connect 0.5s" in info.value.message
    assert "\n" not in info.value.message
    assert "2 attempts" in info.value.message, info.value.message
