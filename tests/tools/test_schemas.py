"""The exact JSON Schema of every built-in tool is a contract with the models: snapshot it.

Regenerate deliberately with ``UPDATE_SNAPSHOTS=1 ./dev test tests/tools/test_schemas.py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from codingcode.tools import ToolService

SNAPSHOT = Path(__file__).parent / "snapshots" / "builtin_schemas.json"


def test_builtin_schemas_match_snapshot(service: ToolService) -> None:
    current = {t.name: t.input_schema() for t in service.list()}
    if os.environ.get("UPDATE_SNAPSHOTS"):
        SNAPSHOT.parent.mkdir(exist_ok=True)
        SNAPSHOT.write_text(json.dumps(current, indent=2, sort_keys=True) + "\n")
    expected = json.loads(SNAPSHOT.read_text())
    assert current == expected
