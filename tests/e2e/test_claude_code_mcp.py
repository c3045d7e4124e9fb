"""Claude Code's ``.mcp.json`` as published (``/work/shared/corpus/claude-compat``, read at
run time): every counted file parsed and every server listed by ``codingcode mcp list`` (a
server whose variable is not set is listed and not started, as Claude Code does); and
``headersHelper`` run for the headers of an HTTP server — only once the project is
trusted."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from tests.conftest import run_cli

pytestmark = pytest.mark.e2e

CORPUS = Path("/work/shared/corpus/claude-compat")


def mcp_items() -> list[dict[str, Any]]:
    if not (CORPUS / "manifest.jsonl").exists():
        return []
    lines = (CORPUS / "manifest.jsonl").read_text().splitlines()
    return [i for i in map(json.loads, lines) if i["kind"] == "mcp" and i["counts"]]


@pytest.mark.skipif(not mcp_items(), reason=f"the corpus {CORPUS} is not on this machine")
def test_every_corpus_mcp_json_is_parsed_and_listed(tmp_path: Path) -> None:
    listed = 0
    for item in mcp_items():
        project = tmp_path / item["id"]
        project.mkdir()
        (project / ".mcp.json").write_bytes((CORPUS / item["file"]).read_bytes())
        names = json.loads((CORPUS / item["file"]).read_text())["mcpServers"]
        r = run_cli(["mcp", "list"], cwd=project)  # untrusted: listed, nothing started
        assert r.code == 0, (item["id"], r.stderr)
        for name in names:
            assert f"{name} (" in r.stdout, (item["id"], name, r.stdout)
        listed += 1
    assert listed == 11


class Recorder(http.server.BaseHTTPRequestHandler):
    seen: ClassVar[list[dict[str, str]]] = []

    def do_POST(self) -> None:
        Recorder.seen.append(dict(self.headers))
        self.send_response(500)
        self.end_headers()

    do_GET = do_POST

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def recorder() -> Iterator[int]:
    Recorder.seen = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_headers_helper_runs_after_trust(project: Path, recorder: int, tmp_path: Path) -> None:
    ran = tmp_path / "helper-ran"
    helper = f'touch {ran}; echo \'{{"X-Team-Token": "t0k"}}\''
    (project / ".mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "docs": {
                        "type": "http",
                        "url": f"http://127.0.0.1:{recorder}/mcp",
                        "headersHelper": helper,
                        "oauth": False,
                    }
                }
            }
        )
    )
    r = run_cli(["mcp", "list"], cwd=project)
    assert "not trusted" in r.stdout and not ran.exists()  # untrusted: the helper never ran
    assert Recorder.seen == []
    r = run_cli(["mcp", "list"], cwd=project, env={"CODINGCODE_TRUST_ALL": "1"})
    assert ran.exists()
    assert Recorder.seen and Recorder.seen[0].get("X-Team-Token") == "t0k", r.stdout
