from __future__ import annotations

import json
from pathlib import Path

import pytest

from codingcode.config import Scope, load_settings
from codingcode.mcp.config import (
    HttpEntry,
    McpConfigError,
    StdioEntry,
    load_mcp_servers,
    parse_server,
    project_trust_filter,
)


@pytest.fixture
def user_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "userconf"
    d.mkdir()
    monkeypatch.setenv("CODINGCODE_CONFIG_DIR", str(d))
    return d


def _write(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_mcp_json_stdio_and_http_with_expansion(project: Path, user_dir: Path) -> None:
    _write(
        project / ".mcp.json",
        {
            "mcpServers": {
                "gh": {"command": "npx", "args": ["-y", "${PKG}"], "env": {"TOKEN": "${TOK}"}},
                "docs": {
                    "type": "http",
                    "url": "http://${HOST:-127.0.0.1}:9/mcp",
                    "headers": {"Authorization": "Bearer ${TOK}"},
                    "deferred": False,
                    "trusted": True,
                },
            }
        },
    )
    servers = load_mcp_servers(
        project, settings=load_settings(project), env={"PKG": "server-gh", "TOK": "s3cret"}
    )
    gh, docs = servers["gh"], servers["docs"]
    assert isinstance(gh.entry, StdioEntry) and gh.entry.args == ["-y", "server-gh"]
    assert gh.entry.env == {"TOKEN": "s3cret"} and gh.transport == "stdio"
    assert isinstance(docs.entry, HttpEntry) and docs.entry.url == "http://127.0.0.1:9/mcp"
    assert docs.entry.headers == {"Authorization": "Bearer s3cret"}
    assert docs.entry.deferred is False and docs.entry.trusted and docs.transport == "http"
    assert gh.scope is Scope.PROJECT and gh.project_scoped
    assert gh.entry.deferred is None and not gh.entry.trusted


def test_missing_variable_names_server_and_field(project: Path, user_dir: Path) -> None:
    _write(project / ".mcp.json", {"mcpServers": {"gh": {"command": "x", "env": {"T": "${NOPE}"}}}})
    # Listed (as Claude Code lists it), refused when started, with the server and field.
    gh = load_mcp_servers(project, settings=load_settings(project), env={})["gh"]
    refused = project_trust_filter(True)(gh)
    assert refused is not None
    assert "'gh', field 'env.T': environment variable NOPE is not set" in refused


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"args": ["x"]}, r"field 'command': Field required"),
        ({"command": "x", "args": "oops"}, r"field 'args': Input should be a valid list"),
        ({"type": "ws", "url": "http://x"}, r"field 'type'"),
        ({"type": "http", "url": "ftp://x"}, r"field 'url'"),
        ({"command": "x", "timeout_ms": 0}, r"field 'timeout_ms'"),
        ("npx server", r"must be a JSON object"),
    ],
)
def test_invalid_entries(raw: object, expected: str, tmp_path: Path) -> None:
    with pytest.raises(McpConfigError, match=expected) as info:
        parse_server("srv", raw, scope=Scope.PROJECT, source=tmp_path / ".mcp.json", env={})
    assert "'srv'" in str(info.value)


def test_a_url_without_type_is_http_or_sse_by_its_path(tmp_path: Path) -> None:
    """``{"url": ...}`` alone (as other clients' files write it): streamable HTTP, or SSE
    for a URL ending in /sse."""
    source = tmp_path / ".mcp.json"
    plain = parse_server(
        "a", {"url": "http://127.0.0.1:9/mcp/"}, scope=Scope.PROJECT, source=source
    )
    assert plain.transport == "http" and plain.describe() == "http://127.0.0.1:9/mcp/"
    sse = parse_server("b", {"url": "http://127.0.0.1:9/sse"}, scope=Scope.PROJECT, source=source)
    assert sse.transport == "sse"


def test_one_bad_server_is_listed_with_why_and_the_others_load(
    project: Path, user_dir: Path
) -> None:
    _write(
        project / ".mcp.json",
        {"mcpServers": {"good": {"command": "x"}, "bad": {"type": "http", "url": "ftp://x"}}},
    )
    servers = load_mcp_servers(project, settings=load_settings(project), env={})
    assert servers["good"].problem == "" and servers["good"].describe() == "x"
    refused = project_trust_filter(True)(servers["bad"])
    assert refused is not None and "'bad': field 'url'" in refused


def test_bad_server_name(tmp_path: Path) -> None:
    with pytest.raises(McpConfigError, match="SERVER:TOOL"):
        parse_server("a:b", {"command": "x"}, scope=Scope.USER, source=tmp_path, env={})


def test_invalid_json_is_a_clear_error(project: Path, user_dir: Path) -> None:
    (project / ".mcp.json").write_text("{nope")
    with pytest.raises(McpConfigError, match=r"\.mcp\.json is not valid JSON \(line 1"):
        load_mcp_servers(project, settings=load_settings(project), env={})


def test_sources_override_by_name_and_keep_scope(project: Path, user_dir: Path) -> None:
    _write(
        user_dir / "settings.json",
        {"mcpServers": {"a": {"command": "user-a"}, "u": {"command": "u"}}},
    )
    _write(
        project / ".mcp.json",
        {"mcpServers": {"a": {"command": "mcp-json-a"}, "b": {"command": "b"}}},
    )
    _write(
        project / ".codingcode" / "settings.json", {"mcpServers": {"b": {"command": "settings-b"}}}
    )
    _write(
        project / ".codingcode" / "settings.local.json",
        {"mcpServers": {"c": {"command": "local-c"}}},
    )
    servers = load_mcp_servers(project, settings=load_settings(project), env={})
    assert {n: s.describe() for n, s in servers.items()} == {
        "a": "mcp-json-a",
        "u": "u",
        "b": "settings-b",
        "c": "local-c",
    }
    assert servers["u"].scope is Scope.USER and not servers["u"].project_scoped
    assert servers["c"].scope is Scope.LOCAL and servers["c"].project_scoped
    assert servers["a"].source == project / ".mcp.json"


def test_trust_filter_refuses_only_project_stdio(project: Path, tmp_path: Path) -> None:
    stdio = parse_server(
        "p", {"command": "x"}, scope=Scope.PROJECT, source=project / ".mcp.json", env={}
    )
    http = parse_server(
        "h", {"type": "http", "url": "http://x/mcp"}, scope=Scope.PROJECT, source=tmp_path, env={}
    )
    user = parse_server("u", {"command": "x"}, scope=Scope.USER, source=tmp_path, env={})
    untrusted = project_trust_filter(False)
    reason = untrusted(stdio)
    assert reason is not None and "codingcode trust" in reason
    assert untrusted(http) is not None  # an HTTP server is where data would go: a grant too
    assert untrusted(user) is None
    assert project_trust_filter(True)(stdio) is None
    per_file = project_trust_filter(lambda path: path.name == ".mcp.json")
    assert per_file(stdio) is None and per_file(http) is not None


def test_workspace_trust_filter_follows_trust_records(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codingcode.mcp.config import project_trust_filter
    from codingcode.trust import TrustStore
    from codingcode.workspace import Workspace

    monkeypatch.setenv("CODINGCODE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("CODINGCODE_TRUST_ALL", raising=False)
    _write(project / ".mcp.json", {"mcpServers": {"p": {"command": "x"}}})
    server = parse_server(
        "p", {"command": "x"}, scope=Scope.PROJECT, source=project / ".mcp.json", env={}
    )
    start_filter = project_trust_filter(Workspace.load(project).is_trusted)
    assert start_filter(server) is not None
    TrustStore().trust(project)
    assert start_filter(server) is None  # the records are asked at each start
    _write(project / ".mcp.json", {"mcpServers": {"p": {"command": "changed"}}})
    assert start_filter(server) is not None
