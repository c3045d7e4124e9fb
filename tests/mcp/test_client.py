from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from codingcode.cancel import CancelSignal
from codingcode.config import Scope
from codingcode.errors import (
    CancelledError,
    InvalidArgumentsError,
    ToolFailureError,
    ToolTimeoutError,
)
from codingcode.mcp.client import McpManager, ServerState, sandbox_launcher
from codingcode.mcp.config import McpServerConfig, parse_server
from codingcode.tools import ToolExecCtx, ToolService
from codingcode.tools.definition import ToolOrigin
from codingcode.workspace import Workspace
from tests.mcp.conftest import eventually, serving, wait_for_port

SERVERS = Path(__file__).parent / "servers"
pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


def _server(name: str, raw: dict, tmp: Path) -> McpServerConfig:
    return parse_server(name, raw, scope=Scope.USER, source=tmp / "settings.json", env={})


def _tiny(tmp: Path, **extra: object) -> McpServerConfig:
    raw = {
        "command": sys.executable,
        "args": [str(SERVERS / "tiny_server.py")],
        "env": {"TINY_MARKERS": str(tmp)},
        **extra,
    }
    return _server("tiny", raw, tmp)


async def test_import_list_call_structured_and_text(tmp_path: Path) -> None:
    service = ToolService()
    async with McpManager(
        [_tiny(tmp_path, trusted=True)], project=tmp_path, service=service
    ) as mcp:
        conn = mcp.servers["tiny"]
        assert conn.state is ServerState.READY
        names = set(service.names())
        assert {"tiny:add", "tiny:shout", "tiny:slow", "tiny:grow", "tiny:fail"} <= names
        add = service.get("tiny:add")
        assert not add.deferred  # 8 tools: under the threshold
        assert add.annotations.read_only and not add.annotations.destructive  # trusted hints
        assert add.input_schema()["required"] == ["a", "b"]
        assert add.origin == ToolOrigin("mcp", "tiny")
        out = await service.call("tiny:add", {"a": 2, "b": 40}, ToolExecCtx(project_path=tmp_path))
        assert '"total": 42' in out and out.count("42") == 1  # JSON text block not repeated
        assert await service.call("tiny:shout", {"text": "hi"}) == "HI"


async def test_untrusted_hints_are_ignored_and_deferral_override(tmp_path: Path) -> None:
    service = ToolService()
    async with McpManager([_tiny(tmp_path, deferred=True)], project=tmp_path, service=service):
        add = service.get("tiny:add")
        assert add.deferred
        assert not add.annotations.read_only and add.annotations.destructive


async def test_arguments_validated_against_the_server_schema(tmp_path: Path) -> None:
    service = ToolService()
    async with McpManager([_tiny(tmp_path)], project=tmp_path, service=service):
        with pytest.raises(InvalidArgumentsError, match="'b' is a required property"):
            await service.call("tiny:add", {"a": 1})
        with pytest.raises(InvalidArgumentsError, match="is not of type 'integer'"):
            await service.call("tiny:add", {"a": "x", "b": 1})


async def test_is_error_and_images(tmp_path: Path) -> None:
    service = ToolService()
    async with McpManager([_tiny(tmp_path)], project=tmp_path, service=service):
        with pytest.raises(ToolFailureError, match=r"tiny:fail failed: Error executing tool fail"):
            await service.call("tiny:fail", {})
        out = await service.call("tiny:picture", {})
        assert "a red dot" in out and "[image: image/png, about" in out
        assert "iVBOR" not in out


async def test_pagination(tmp_path: Path) -> None:
    service = ToolService()
    cfg = _server(
        "paged", {"command": sys.executable, "args": [str(SERVERS / "paged_server.py")]}, tmp_path
    )
    async with McpManager([cfg], project=tmp_path, service=service):
        assert sorted(service.names()) == [f"paged:t{i}" for i in range(5)]
        assert await service.call("paged:t4", {"x": 7}) == 't4 got {"x": 7}'


async def test_list_changed_re_registers(tmp_path: Path) -> None:
    service = ToolService()
    async with McpManager([_tiny(tmp_path)], project=tmp_path, service=service):
        assert "tiny:extra" not in service
        await service.call("tiny:grow", {})
        await eventually(lambda: "tiny:extra" in service)
        assert await service.call("tiny:extra", {}) == "extra!"


async def test_timeout_cancels_on_the_server(tmp_path: Path) -> None:
    service = ToolService()
    async with McpManager([_tiny(tmp_path, timeout_ms=300)], project=tmp_path, service=service):
        with pytest.raises(ToolTimeoutError, match="did not answer within 0.3 s"):
            await service.call("tiny:slow", {"seconds": 30})
        await eventually((tmp_path / "cancelled").exists)
        # The session is still usable.
        assert "42" in await service.call("tiny:add", {"a": 40, "b": 2})


async def test_cancel_signal_reaches_the_server(tmp_path: Path) -> None:
    service = ToolService()
    async with McpManager([_tiny(tmp_path)], project=tmp_path, service=service):
        signal = CancelSignal()
        ctx = ToolExecCtx(project_path=tmp_path, signal=signal)

        async def cancel_soon() -> None:
            await anyio.sleep(0.3)
            signal.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(cancel_soon)
            with pytest.raises(CancelledError, match="cancelled"):
                await service.call("tiny:slow", {"seconds": 30}, ctx)
        await eventually((tmp_path / "cancelled").exists)


async def test_dead_server_clear_error_then_restart(tmp_path: Path) -> None:
    service = ToolService()
    async with McpManager([_tiny(tmp_path)], project=tmp_path, service=service) as mcp:
        with pytest.raises(
            ToolFailureError, match=r"stopped during the call.*dying on request.*started again"
        ):
            await service.call("tiny:die", {})
        assert mcp.servers["tiny"].state is ServerState.FAILED
        # Next use: restarted, and it works.
        assert "3" in await service.call("tiny:add", {"a": 1, "b": 2})
        assert mcp.servers["tiny"].state is ServerState.READY
        assert mcp.servers["tiny"].restarts == 1


async def test_server_that_never_starts(tmp_path: Path) -> None:
    bad = _server("ghost", {"command": "/nonexistent/mcp-server"}, tmp_path)
    crash = _server(
        "crash",
        {
            "command": sys.executable,
            "args": ["-c", "import sys; sys.stderr.write('bad config\\n'); sys.exit(2)"],
        },
        tmp_path,
    )
    service = ToolService()
    async with McpManager([bad, crash, _tiny(tmp_path)], project=tmp_path, service=service) as mcp:
        assert mcp.servers["ghost"].state is ServerState.FAILED
        assert "command not found" in (mcp.servers["ghost"].error or "")
        assert mcp.servers["crash"].state is ServerState.FAILED
        assert "bad config" in (mcp.servers["crash"].error or "")
        assert mcp.servers["tiny"].state is ServerState.READY  # the session survives
        with pytest.raises(ToolFailureError, match="'ghost' is not available: could not start"):
            await mcp.servers["ghost"].call_tool("x", {})


async def test_startup_timeout(tmp_path: Path) -> None:
    hang = _server(
        "hang",
        {
            "command": sys.executable,
            "args": ["-c", "import time; time.sleep(60)"],
            "startup_timeout_ms": 500,
        },
        tmp_path,
    )
    async with McpManager([hang], project=tmp_path, service=ToolService()) as mcp:
        assert mcp.servers["hang"].state is ServerState.FAILED
        assert "did not answer within 0.5 s" in (mcp.servers["hang"].error or "")


async def test_skipped_by_filter_and_disabled(tmp_path: Path) -> None:
    off = _server("off", {"command": "x", "disabled": True}, tmp_path)
    proj = parse_server(
        "proj", {"command": "x"}, scope=Scope.PROJECT, source=tmp_path / ".mcp.json", env={}
    )
    from codingcode.mcp.config import project_trust_filter

    async with McpManager(
        [off, proj],
        project=tmp_path,
        service=ToolService(),
        start_filter=project_trust_filter(False),
    ) as mcp:
        assert mcp.servers["off"].state is ServerState.SKIPPED
        assert mcp.servers["proj"].state is ServerState.SKIPPED
        assert "not trusted" in (mcp.servers["proj"].error or "")


async def test_streamable_http_and_a_server_that_goes_away(tmp_path: Path) -> None:
    def cmd(port: int) -> list[str]:
        return [sys.executable, str(SERVERS / "tiny_server.py"), "http", str(port)]

    service = ToolService()
    async with serving(cmd, stderr=subprocess.DEVNULL) as (first, port):
        url = f"http://127.0.0.1:{port}/mcp"
        cfg = _server("web", {"type": "http", "url": url, "headers": {"X-Test": "1"}}, tmp_path)
        async with McpManager([cfg], project=tmp_path, service=service) as mcp:
            assert "42" in await service.call("web:add", {"a": 40, "b": 2})
            first.terminate()
            await first.wait()
            with pytest.raises(
                ToolFailureError, match="'web' stopped during the call .*connection"
            ):
                await service.call("web:add", {"a": 1, "b": 2})
            assert mcp.servers["web"].state is ServerState.FAILED
            # the same port again (below the ephemeral range: no connection was given it)
            async with await anyio.open_process(cmd(port), stderr=subprocess.DEVNULL) as second:
                try:
                    await wait_for_port(port, proc=second)
                    assert "3" in await service.call("web:add", {"a": 1, "b": 2})  # reconnected
                    assert mcp.servers["web"].state is ServerState.READY
                finally:
                    second.terminate()


async def test_open_project_mcp_follows_trust(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from codingcode.mcp.client import open_project_mcp

    monkeypatch.setenv("CODINGCODE_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("CODINGCODE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("CODINGCODE_TRUST_ALL", raising=False)
    raw = {"command": sys.executable, "args": [str(SERVERS / "paged_server.py")]}
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"paged": raw}}))
    service = ToolService()
    workspace = Workspace.load(project)
    async with open_project_mcp(project, service, workspace=workspace) as mcp:
        assert mcp.servers["paged"].state is ServerState.SKIPPED
        assert "not trusted" in mcp.notes()[0] and "paged:t0" not in service
    async with open_project_mcp(project, service, workspace=workspace, trusted=True) as mcp:
        assert mcp.notes() == [] and "paged:t0" in service


async def test_sandboxed_stdio_server_goes_through_the_launcher(tmp_path: Path) -> None:
    from codingcode.process import LaunchPlan

    planned: list[list[str]] = []

    class Recording:
        def plan(self, argv, *, cwd, env):  # type: ignore[no-untyped-def]
            planned.append(list(argv))
            return LaunchPlan(list(argv), dict(env), notice="[recorded]")

    cfg = _tiny(tmp_path, sandbox=True)
    service = ToolService()
    async with McpManager([cfg], project=tmp_path, service=service, launcher=Recording) as mcp:
        assert mcp.servers["tiny"].state is ServerState.READY, mcp.servers["tiny"].error
        assert planned and planned[0][1].endswith("tiny_server.py")
        assert "42" in await service.call("tiny:add", {"a": 40, "b": 2})
        # Death and restart work the same through this transport.
        with pytest.raises(ToolFailureError, match="stopped during the call"):
            await service.call("tiny:die", {})
        assert "3" in await service.call("tiny:add", {"a": 1, "b": 2})
    assert len(planned) == 2


async def test_sandboxed_server_without_a_launcher_does_not_start(tmp_path: Path) -> None:
    """No sandbox settings handed down: the server is refused, never run unconfined, and
    nothing reads the settings files behind the caller's back."""
    cfg = _tiny(tmp_path, sandbox=True)
    service = ToolService()
    async with McpManager([cfg], project=tmp_path, service=service) as mcp:
        conn = mcp.servers["tiny"]
        assert conn.state is ServerState.FAILED
        assert "asks for the sandbox" in (conn.error or "")
        assert "tiny:add" not in service


async def test_sandboxed_stdio_server_in_the_real_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The project's sandbox (bubblewrap or Landlock): the server runs, and cannot write
    outside the project (the home directory here; /tmp is private in the sandbox)."""
    import uuid

    monkeypatch.setenv("CODINGCODE_CONFIG_DIR", str(tmp_path / "config"))
    project = (tmp_path / "proj").resolve()
    project.mkdir()
    outside = Path.home() / f".codingcode-mcp-sandbox-probe-{uuid.uuid4().hex}"
    writer = project / "writer_server.py"
    writer.write_text(
        (SERVERS / "tiny_server.py")
        .read_text()
        .replace(
            'MARKERS = Path(os.environ.get("TINY_MARKERS", "."))',
            'MARKERS = Path(os.environ.get("TINY_MARKERS", "."))\n'
            "try:\n"
            f"    Path({str(outside)!r}).write_text('x')\n"
            "except OSError:\n"
            "    pass\n"
            f"Path({str(project / 'inside')!r}).write_text('x')",
        )
    )
    cfg = _server(
        "boxed", {"command": sys.executable, "args": [str(writer)], "sandbox": True}, tmp_path
    )
    service = ToolService()
    launcher = sandbox_launcher(Workspace.load(project))
    try:
        async with McpManager([cfg], project=project, service=service, launcher=launcher) as mcp:
            conn = mcp.servers["boxed"]
            if "SandboxError" in (conn.error or ""):
                pytest.skip(f"no sandbox backend on this machine: {conn.error}")
            assert conn.state is ServerState.READY, conn.error
            assert "42" in await service.call("boxed:add", {"a": 40, "b": 2})
        assert (project / "inside").exists()  # the project stays writable
        assert not outside.exists()
    finally:
        outside.unlink(missing_ok=True)
