"""The declared dependency on the MCP SDK matches what the code needs (issue 19, "Also").

pyproject.toml said ``mcp>=1.10`` while the code uses the 2.x API (``mcp.Client``,
``mcp.MCPError``, the separate ``mcp_types`` package): an install resolving to 1.x broke at
the first import. The specifier must admit no 1.x release and must admit the installed SDK.
"""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def _requirement(name: str) -> Requirement:
    deps = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    (found,) = [r for r in map(Requirement, deps) if r.name == name]
    return found


def test_the_mcp_requirement_admits_no_1x_release() -> None:
    spec = _requirement("mcp").specifier
    for old in ("1.10.0", "1.10.1", "1.99.0", "1.26.0"):
        assert not spec.contains(old, prereleases=True), (str(spec), old)


def test_the_installed_sdk_satisfies_it_and_has_the_api_we_use() -> None:
    spec = _requirement("mcp").specifier
    assert spec.contains(importlib.metadata.version("mcp"), prereleases=True)
    import mcp_types  # noqa: F401  (2.x only)

    import mcp

    assert hasattr(mcp, "Client") and hasattr(mcp, "MCPError")
