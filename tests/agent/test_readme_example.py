"""The README's custom-tool example (C1) runs as written against the fake model server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.agent.fake_model import FakeModelServer, Step, tool_names, tool_results

README = Path(__file__).resolve().parents[2] / "README.md"


def example_code() -> str:
    text = README.read_text()
    match = re.search(r"<!-- readme-agent-example -->\n```python\n(.*?)```", text, re.S)
    assert match, "the README lost its agent example"
    return match.group(1)


def test_readme_custom_tool_example(project: Path, tmp_path: Path, fake: FakeModelServer) -> None:
    (project / "README.md").write_text("one two three four\n")
    fake.script = [
        Step(tool_calls=[("word_count", {"path": "README.md"})]),
        Step(text="README.md has 4 words."),
    ]
    script = tmp_path / "example.py"
    script.write_text(example_code())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "CODINGCODE_"))}
    env |= fake.env("openai") | {
        "CODINGCODE_MODEL": "openai:fake-model",
        "CODINGCODE_CONFIG_DIR": str(tmp_path / "cfg"),
        "CODINGCODE_STATE_DIR": str(tmp_path / "state"),
    }
    # The allow rule the README tells the user to add, added the way it says.
    added = subprocess.run(
        [sys.executable, "-m", "codingcode", "rules", "add", "allow", "word_count"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert added.returncode == 0, added.stderr
    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "README.md has 4 words."
    assert "word_count" in tool_names(fake.bodies()[0])
    assert tool_results(fake.bodies()[1])[-1][0] == "4"
