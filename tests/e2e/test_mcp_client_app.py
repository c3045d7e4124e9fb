"""The interactive app (in tmux) with an MCP server that asks the user a question
(elicitation), reports progress and warnings, offers a prompt (/server:prompt) and a
resource (@server:uri)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agent.fake_model import FakeModelServer, Step, tool_results
from tests.e2e.test_agent_tui import Tmux, wait_exit

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.timeout(300),
    pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux"),
]
RICH = Path(__file__).resolve().parents[1] / "mcp" / "servers" / "rich_server.py"


@pytest.fixture
def fake() -> Iterator[FakeModelServer]:
    server = FakeModelServer()
    yield server
    server.close()


def _user_texts(body: dict[str, object]) -> str:
    out = []
    for m in body.get("messages", []):  # type: ignore[union-attr]
        if isinstance(m, dict) and m.get("role") == "user" and isinstance(m.get("content"), str):
            out.append(m["content"])
    return "\n".join(out)


def test_elicitation_progress_prompt_and_resource_in_the_app(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    servers = {"rich": {"command": sys.executable, "args": [str(RICH)]}}
    (cfg / "settings.json").write_text(json.dumps({"mcpServers": servers}))
    fake.script = [
        Step(tool_calls=[("rich__ask", {})]),
        Step(text="Thanks, Ada."),
        Step(tool_calls=[("rich__work", {"steps": 3})]),
        Step(text="Work done."),
        Step(text="Read it."),
    ]
    env = {
        **fake.env("openai"),
        "CODINGCODE_CONFIG_DIR": str(cfg),
        "CODINGCODE_STATE_DIR": str(tmp_path / "state"),
        "CODINGCODE_MODEL": "openai:fake-model",
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
    }
    exit_file = tmp_path / "exit"
    command = (
        "env -u CODINGCODE_TRUST_ALL "
        + " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        + f" {shlex.quote(sys.executable)} -m codingcode --project {shlex.quote(str(project))}"
        + f" --mode bypass; echo $? > {shlex.quote(str(exit_file))}; sleep 30"
    )
    term = Tmux(f"cc-mcp-{os.getpid()}-{time.monotonic_ns()}", command)
    try:
        term.wait_prompt(60)
        # A prompt of the server as a slash command: its text goes to the model.
        term.send("/rich:review 'the parser'", "Enter")
        term.wait_text("MCP server 'rich' asks: Please fill the form", 60)
        term.wait_text("Answer it? [y]es / [d]ecline / [c]ancel")
        term.send("Enter")  # default: yes
        term.wait_text("Who you are")
        term.send("Ada", "Enter")
        term.wait_text("Age (integer) [optional, Enter to skip]: 30")
        term.send("Enter")  # keeps the default, 30
        term.wait_text("Ok (boolean)")
        term.send("Enter")
        term.wait_text("Thanks, Ada.", 60)
        term.wait_prompt()
        bodies = fake.bodies()
        assert "Please review the parser (strict: no)." in _user_texts(bodies[0])
        (answer, _), *_ = tool_results(bodies[1])
        assert json.loads(answer) == {
            "action": "accept",
            "data": {"name": "Ada", "age": 30, "ok": True},
        }

        term.send("do the work", "Enter")
        screen = term.wait_text("Work done.", 60)
        assert "[rich warning] disk almost full" in screen
        assert "⋯ rich:work" in screen and "3/3 step 3" in screen
        term.wait_prompt()

        term.send("summarise @rich:memo://greeting", "Enter")
        term.wait_text("Read it.", 60)
        assert "hello from a resource" in _user_texts(fake.bodies()[4])
        term.wait_prompt()
        # /mcp and /help list the servers' prompts as slash commands, with their arguments.
        term.send("/mcp", "Enter")
        # (waiting for the line itself: its header is on the screen first)
        screen = term.wait_text(
            "/rich:review topic=… [strict=…] — Ask for a review of a topic.", 30
        )
        assert "Prompts (/server:prompt ARGS):" in screen
        term.wait_prompt()
        term.send("/help", "Enter")
        screen = term.wait_for(
            lambda s: (
                "MCP prompts (/server:prompt ARGS):" in s
                and "  /rich:hello" in s.split("MCP prompts (/server:prompt ARGS):")[-1]
            ),
            "/help's MCP prompts",
            30,
        )
        term.wait_prompt()
        term.send("/exit", "Enter")
        assert wait_exit(term, exit_file) == "0"
    finally:
        term.close()
