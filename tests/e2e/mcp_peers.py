"""Where the third-party MCP peers live (installed by .ci/run; see tests/mcp/peers)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

PEERS = Path(__file__).resolve().parent.parent / "mcp" / "peers" / "node_modules"
EVERYTHING = PEERS / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
INSPECTOR = PEERS / ".bin" / "mcp-inspector"
TIME_SERVER = Path(sys.executable).parent / "mcp-server-time"
NODE = shutil.which("node")


def need(path: Path | None, what: str) -> None:
    """Skip locally when a peer is missing; in CI (CI=true) a missing peer is a failure."""
    if path is not None and Path(path).exists():
        return
    message = f"{what} is not installed (run: cd tests/mcp/peers && npm ci; uv sync)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)
