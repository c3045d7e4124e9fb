"""``http`` hooks go through the network policy: a loopback server is reached when the
policy allows it and never when it does not (one line, the call goes on, as Claude Code
documents for a failed hook); a URL that does not answer costs the hook's timeout; header
values name only the variables the hook allows."""

from __future__ import annotations

import http.server
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from codingcode.approval.pipeline import ToolCall
from codingcode.config import load_settings
from codingcode.hooks.bus import HookBus
from codingcode.hooks.http_hook import HookNetwork, expand_headers, post_event
from codingcode.hooks.pre_tool_use import HOOK_STATUS, run_command_hook
from codingcode.hooks.settings import CommandHook, load_command_hooks
from codingcode.sandbox.network.domains import DomainPolicy

pytestmark = pytest.mark.anyio


class Recorder(http.server.BaseHTTPRequestHandler):
    seen: ClassVar[list[tuple[dict[str, str], dict[str, Any]]]] = []
    answer: ClassVar[bytes] = b""

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        Recorder.seen.append((dict(self.headers), json.loads(body)))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(Recorder.answer)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[int]:
    Recorder.seen = []
    Recorder.answer = json.dumps(
        {"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "no"}}
    ).encode()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


def configure(project: Path, url: str, sandbox: dict[str, Any] | None, **extra: Any) -> CommandHook:
    """A Claude Code settings file with one http PreToolUse hook, and ``sandbox`` in ours;
    the hook as the session loads it (with the session's network policy)."""
    claude = project / ".claude" / "settings.json"
    claude.parent.mkdir(exist_ok=True)
    hook = {"type": "http", "url": url, "timeout": 5, **extra}
    claude.write_text(json.dumps({"hooks": {"PreToolUse": [{"hooks": [hook]}]}}))
    if sandbox is not None:
        ours = project / ".codingcode" / "settings.json"
        ours.parent.mkdir(exist_ok=True)
        ours.write_text(json.dumps({"sandbox": sandbox}))
    (loaded,) = load_command_hooks(load_settings(project))
    return loaded


def call(project: Path) -> ToolCall:
    return ToolCall("execute_command", {"command": "make"}, project, "s1", 1, "default")


@pytest.fixture(autouse=True)
def trusted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODINGCODE_TRUST_ALL", "1")


@pytest.mark.parametrize(
    "sandbox",
    [
        None,  # no network lists: the hook is the user's own, reached as configured
        {"network": {"mode": "limited", "allowedDomains": ["127.0.0.1"]}},
        {"network": {"mode": "limited", "allowedDomains": ["x.test"], "allowLocalAddresses": True}},
    ],
)
async def test_an_allowed_url_is_posted_and_its_answer_decides(
    project: Path, server: int, sandbox: dict[str, Any] | None
) -> None:
    if sandbox is not None and "x.test" in json.dumps(sandbox):
        # allowLocalAddresses reaches local addresses of listed names only: list the IP
        sandbox["network"]["allowedDomains"].append("127.0.0.1")
    hook = configure(project, f"http://127.0.0.1:{server}/hook", sandbox)
    answer = await run_command_hook(hook, call(project))
    assert (answer.decision, answer.reason) == ("deny", "no")
    (headers, body) = Recorder.seen[0]
    assert body["hook_event_name"] == "PreToolUse" and body["tool_input"] == {"command": "make"}
    assert headers["Content-Type"] == "application/json"


@pytest.mark.parametrize(
    ("sandbox", "why"),
    [
        (
            {"network": {"mode": "limited", "allowedDomains": ["pypi.org"]}},
            "127.0.0.1 is not in sandbox.network.allowedDomains",
        ),
        (
            {"network": {"mode": "limited", "allowedDomains": ["localhost"]}},
            "127.0.0.1 is not in sandbox.network.allowedDomains",
        ),
        ({"network": {"deniedDomains": ["127.0.0.1"]}}, "matches '127.0.0.1' in"),
    ],
)
async def test_a_url_the_policy_refuses_is_never_reached_and_the_call_goes_on(
    project: Path,
    server: int,
    sandbox: dict[str, Any],
    why: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    hook = configure(project, f"http://127.0.0.1:{server}/hook", sandbox)
    answer = await run_command_hook(hook, call(project))
    assert answer.decision == "continue"  # a failed hook: non-blocking, the call goes on
    assert Recorder.seen == []  # ground truth: nothing reached the server
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert "was blocked by the network policy" in lines[0] and why in lines[0]
    assert lines[0].endswith("going on.")


async def test_a_local_address_behind_a_listed_name_is_refused(
    server: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A listed name that resolves to a local address is refused, as the proxy refuses it
    (DNS rebinding); the name is resolved once, and what connects is the checked address."""
    import anyio

    async def resolve(host: str, port: int, **kw: Any) -> list[Any]:
        assert host == "hooks.example.com"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]

    monkeypatch.setattr(anyio, "getaddrinfo", resolve)
    network = HookNetwork(DomainPolicy(allowed=("hooks.example.com",)), limited=True)
    url = f"http://hooks.example.com:{server}/h"
    refused = await post_event(url, {}, {}, 5, network)
    assert "hooks.example.com resolves to 127.0.0.1: a loopback address" in refused.failure
    assert Recorder.seen == []
    # the same name with local addresses allowed: reached at the checked address
    network = HookNetwork(
        DomainPolicy(allowed=("hooks.example.com",), allow_local=True), limited=True
    )
    answer = await post_event(url, {}, {"x": 1}, 5, network)
    assert answer.failure == "" and Recorder.seen[0][1] == {"x": 1}
    assert Recorder.seen[0][0]["Host"] == f"hooks.example.com:{server}"


async def test_metadata_addresses_are_never_reached() -> None:
    answer = await post_event("http://169.254.169.254/latest", {}, {}, 5, HookNetwork())
    assert "cloud metadata address" in answer.failure


async def test_a_url_that_does_not_answer_costs_the_hook_timeout(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    silent = socket.socket()  # accepts, never answers
    silent.bind(("127.0.0.1", 0))
    silent.listen(4)
    try:
        hook = configure(project, f"http://127.0.0.1:{silent.getsockname()[1]}/h", None)
        hook = CommandHook("", "*", 1, hook.scope, hook.source, kind="http", url=hook.url)
        started = time.monotonic()
        answer = await run_command_hook(hook, call(project))
        took = time.monotonic() - started
    finally:
        silent.close()
    assert answer.decision == "continue"
    assert 1 <= took < 4
    err = capsys.readouterr().err
    assert err.count("did not answer within 1s") == 1


async def test_headers_name_only_the_allowed_variables(
    project: Path, server: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOOK_TOKEN", "t0k")
    monkeypatch.setenv("OTHER_SECRET", "s3cret")
    hook = configure(
        project,
        f"http://127.0.0.1:{server}/hook",
        None,
        headers={"Authorization": "Bearer $HOOK_TOKEN", "X-Other": "${OTHER_SECRET}!"},
        allowedEnvVars=["HOOK_TOKEN"],
    )
    await run_command_hook(hook, call(project))
    headers = Recorder.seen[0][0]
    assert headers["Authorization"] == "Bearer t0k"
    assert headers["X-Other"] == "!"
    assert expand_headers({"a": "${X}-$Y"}, ("X", "Y"), {"X": "1"}) == {"a": "1-"}


async def test_a_status_message_is_told_while_the_hook_runs(project: Path, server: int) -> None:
    hook = configure(
        project, f"http://127.0.0.1:{server}/hook", None, statusMessage="Checking  the call"
    )
    bus = HookBus()
    seen: list[tuple[str, str, int]] = []
    bus.on(HOOK_STATUS, lambda e: seen.append((e["state"], e["message"], len(Recorder.seen))))
    await run_command_hook(hook, call(project), None, bus)
    # start before the request reached the server, end after it answered
    assert seen == [("start", "Checking the call", 0), ("end", "Checking the call", 1)]


@pytest.mark.parametrize(
    ("patterns", "reached"),
    [
        (["http://127.0.0.1:*/hook"], True),
        (["https://hooks.example.com/*"], False),
        ([], False),  # set and empty: no URL at all
    ],
)
async def test_claude_codes_allowed_http_hook_urls_limit_the_url(
    project: Path,
    server: int,
    patterns: list[str],
    reached: bool,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``allowedHttpHookUrls`` of a Claude Code file (a restriction, so an untrusted project
    file's applies too) limits the URLs before the network lists do."""
    path = project / ".claude" / "settings.local.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"allowedHttpHookUrls": patterns}))
    hook = configure(project, f"http://127.0.0.1:{server}/hook", None)
    answer = await run_command_hook(hook, call(project))
    assert bool(Recorder.seen) is reached
    if reached:
        assert answer.decision == "deny"
    else:
        assert answer.decision == "continue"
        assert "matches no pattern of allowedHttpHookUrls" in capsys.readouterr().err
