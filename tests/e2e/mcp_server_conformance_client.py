"""The client side of the conformance suite: run as ``python THIS URL`` by
``conformance client --command``. It drives our real MCP client through the real
``codingcode`` command: a user-level ``mcpServers`` entry for URL, ``codingcode mcp list``
(connect, initialize, list tools), then ``codingcode tool conformance:TOOL`` for each tool
the scenario's server offers (``add_numbers`` with numbers, the others with no arguments);
for the scenarios whose tool is known, only ``codingcode tool`` (one process, quicker).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CODINGCODE = str(Path(sys.executable).parent / "codingcode")


def main() -> int:
    url = sys.argv[-1]
    with tempfile.TemporaryDirectory() as tmp:
        config, project = Path(tmp) / "config", Path(tmp) / "project"
        config.mkdir()
        project.mkdir()
        entry = {"type": "http", "url": url, "elicitation": "accept-defaults"}
        settings = {
            "mcpServers": {"conformance": entry},
            "permissions": {"allow": ["conformance:*"]},
        }
        (config / "settings.json").write_text(json.dumps(settings))
        env = {
            **os.environ,
            "CODINGCODE_CONFIG_DIR": str(config),
            "CODINGCODE_STATE_DIR": str(Path(tmp) / "state"),
        }
        known = {"tools_call": ["add_numbers"], "sse-retry": ["test_reconnection"]}
        scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
        if scenario in known:  # one process: `codingcode tool` connects, lists and calls
            return call_tools(known[scenario], project, env)
        listed = subprocess.run(
            [CODINGCODE, "mcp", "list", "--json", "--project", str(project)],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        print(listed.stdout[-2000:], listed.stderr[-2000:], file=sys.stderr)
        try:
            servers = json.loads(listed.stdout)
        except ValueError:
            return 1
        tools: list[str] = []
        for server in servers if isinstance(servers, list) else servers.get("servers", []):
            tools += [
                t if isinstance(t, str) else t.get("name", "") for t in server.get("tools", [])
            ]
        return call_tools([name.split(":", 1)[-1] for name in tools], project, env)


def call_tools(names: list[str], project: Path, env: dict[str, str]) -> int:
    for short in names:
        args = {"a": 5, "b": 3} if short == "add_numbers" else {}
        called = subprocess.run(
            [
                CODINGCODE,
                "tool",
                f"conformance:{short}",
                json.dumps(args),
                "--project",
                str(project),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        print(called.stdout[-2000:], called.stderr[-2000:], file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
