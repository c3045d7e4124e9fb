"""Skills and custom slash commands end to end (issue 17): the real ``codingcode run``
against the scripted model, with files in the shapes Claude Code users already write."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agent.fake_model import FakeModelServer, Step, system_text, tool_names, tool_results
from tests.e2e.test_agent_run import env_for, run

pytestmark = pytest.mark.e2e


@pytest.fixture
def fake() -> Iterator[FakeModelServer]:
    server = FakeModelServer()
    yield server
    server.close()


SKILL = """---
name: changelog-writer
description: Writes CHANGELOG entries in the Keep a Changelog format. Use when: the user asks for release notes.
allowed-tools: Read, Grep
---
# Changelog writer

1. Read CHANGELOG.md first. BODY-MARKER-31337
2. Add the entry under "Unreleased".
"""


def all_text(body: dict[str, object]) -> str:
    return json.dumps(body)


def test_a_skill_is_found_by_tool_search_and_its_body_loaded_only_then(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    folder = project / ".claude" / "skills" / "changelog"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(SKILL)
    (project / "CHANGELOG.md").write_text("# Changelog\n")
    env = env_for(fake, "openai", tmp_path)
    assert run(["trust"], project, env).returncode == 0
    fake.script = [
        Step(tool_calls=[("tool_search", {"query": "release notes changelog"})]),
        Step(tool_calls=[("skill_changelog-writer", {})]),
        Step(tool_calls=[("write_file", {"path": "x.txt", "content": "no"})]),
        Step(text="Done."),
    ]
    result = run(["run", "write release notes", "--mode", "bypass"], project, env)
    assert result.returncode == 3, result.stderr  # it answered right after a denial
    bodies = fake.bodies()
    first = bodies[0]
    # Only the name and the description are in context at first.
    assert "changelog-writer: Writes CHANGELOG entries" in system_text(first)
    assert "BODY-MARKER-31337" not in all_text(first)
    assert "skill_changelog-writer" not in tool_names(first)
    assert "tool_search" in tool_names(first)
    found, is_error = tool_results(bodies[1])[-1]
    assert not is_error and "skill_changelog-writer" in found
    assert "BODY-MARKER-31337" not in all_text(bodies[1])
    assert "skill_changelog-writer" in tool_names(bodies[1])
    loaded, is_error = tool_results(bodies[2])[-1]
    assert not is_error and "BODY-MARKER-31337" in loaded and str(folder) in loaded
    # allowed-tools: Read, Grep — even in bypass mode, write_file is refused while active.
    refused, _ = tool_results(bodies[3])[-1]  # (Chat Completions has no error flag)
    assert "outside the tools the skill changelog-writer allows" in refused
    assert not (project / "x.txt").exists()


def test_untrusted_project_skills_stay_out_with_one_line(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    folder = project / ".codingcode" / "skills" / "evil"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(SKILL.replace("changelog-writer", "evil"))
    broken = project / ".codingcode" / "skills" / "broken"
    broken.mkdir()
    (broken / "SKILL.md").write_text("---\nname: broken\n---\n# Only a heading\n")
    fake.script = [Step(text="Hi.")]
    env = env_for(fake, "anthropic", tmp_path)
    result = run(["run", "hello"], project, env)
    assert result.returncode == 0, result.stderr
    assert "2 project skills (broken, evil) not loaded until you trust" in result.stderr
    assert "evil" not in system_text(fake.bodies()[0])
    assert "Traceback" not in result.stderr
    assert run(["trust"], project, env).returncode == 0
    fake.script = [Step(text="Hi.")]
    result = run(["run", "hello"], project, env)
    assert "broken/SKILL.md: `description` is missing" in result.stderr
    assert "- evil: Writes CHANGELOG" in system_text(fake.bodies()[-1])


COMMAND = """---
description: Review a file with a focus
argument-hint: FILE FOCUS
allowed-tools: Read, Bash(echo:*), Bash(git status:*)
---
Review @$1 with a focus on $2.
Marker: !`echo bang-$2-output`
Blocked: !`touch made-by-bang.txt`
All: $ARGUMENTS
"""


def test_a_custom_command_runs_headless(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    commands = project / ".claude" / "commands" / "team"
    commands.mkdir(parents=True)
    (commands / "review.md").write_text(COMMAND)
    (project / "app.py").write_text("print('APP-CONTENT')\n")
    env = env_for(fake, "openai", tmp_path)
    assert run(["trust"], project, env).returncode == 0
    fake.script = [
        Step(tool_calls=[("write_file", {"path": "w.txt", "content": "x"})]),
        Step(text="Looks fine."),
    ]
    result = run(["run", "/review", "app.py", "security", "--mode", "bypass"], project, env)
    assert result.returncode == 3, result.stderr  # answered after the write was refused
    prompt = fake.bodies()[0]["messages"][-1]["content"]
    assert "Review @app.py with a focus on security." in prompt
    assert "Marker: bang-security-output" in prompt  # the ! command ran, its output in place
    assert "APP-CONTENT" in prompt  # @app.py attached
    assert "All: app.py security" in prompt
    # `touch` is outside the command's allowed-tools: not run, said once, the prompt says so.
    assert "did not run" in result.stderr and not (project / "made-by-bang.txt").exists()
    assert "Blocked: (not run:" in prompt
    # The limit holds for the model's calls of this prompt too, in bypass mode.
    refused, _ = tool_results(fake.bodies()[1])[-1]
    assert "outside the tools the command /review allows" in refused
    assert not (project / "w.txt").exists()


def test_bang_lines_go_through_the_approval_pipeline(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    commands = project / ".codingcode" / "commands"
    commands.mkdir(parents=True)
    (commands / "make.md").write_text("Made: !`touch made.txt`\nList: !`ls`\n")
    env = env_for(fake, "anthropic", tmp_path)
    assert run(["trust"], project, env).returncode == 0
    fake.script = [Step(text="ok")]
    result = run(["run", "/make"], project, env)  # default mode, headless: asks are denied
    assert result.returncode == 0, result.stderr
    assert not (project / "made.txt").exists()
    assert "/make: !`touch made.txt` did not run" in result.stderr
    prompt = json.dumps(fake.bodies()[0]["messages"][-1])
    assert "made.txt" in prompt and "(not run:" in prompt
    assert "make.md" not in prompt or "List:" in prompt  # ls is read-only: it ran
    fake.script = [Step(text="ok")]
    result = run(["run", "/make", "--allowed-tools", "execute_command(touch *)"], project, env)
    assert result.returncode == 0, result.stderr
    assert (project / "made.txt").exists()  # the user's rule allowed it


def test_unknown_and_untrusted_commands(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    commands = project / ".codingcode" / "commands"
    commands.mkdir(parents=True)
    (commands / "deploy.md").write_text("Deploy now.\n")
    env = env_for(fake, "openai", tmp_path)
    result = run(["run", "/deploy"], project, env)
    assert result.returncode == 2
    assert "Unknown command /deploy" in result.stderr
    assert "1 project command (/deploy) not loaded until you trust" in result.stderr
    assert not fake.bodies()  # nothing was sent
    assert run(["trust"], project, env).returncode == 0
    result = run(["run", "/deplyo"], project, env)
    assert result.returncode == 2 and "Did you mean /deploy?" in result.stderr
    fake.script = [Step(text="Deployed.")]
    result = run(["run", "/deploy"], project, env)
    assert result.returncode == 0 and result.stdout.strip() == "Deployed."
    # A path is a prompt, not a command.
    fake.script = [Step(text="ok")]
    assert run(["run", "/usr/bin/env is broken"], project, env).returncode == 0


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
def test_a_custom_command_in_the_app(project: Path, fake: FakeModelServer, tmp_path: Path) -> None:
    from tests.e2e.test_agent_tui import start_app, wait_exit

    commands = tmp_path / "cfg" / "commands"
    commands.mkdir(parents=True)
    (commands / "greet.md").write_text(
        "---\ndescription: Greet someone\nargument-hint: NAME\n---\n"
        "Say hello to $1. Marker: !`echo BANG-$1-OK`\n"
    )
    fake.script = [Step(text="Hello, Ada!")]
    exit_file = tmp_path / "exit"
    term = start_app(fake, project, tmp_path, exit_file)
    try:
        term.wait_prompt()
        term.send("/help", "Enter")
        term.wait_text("/greet NAME — Greet someone")
        term.wait_prompt()
        term.send("/greet Ada", "Enter")
        term.wait_text("Hello, Ada!")
        term.wait_prompt()
        prompt = fake.bodies()[0]["messages"][-1]["content"]
        assert "Say hello to Ada. Marker: BANG-Ada-OK" in prompt
        term.send("/exit", "Enter")
        assert wait_exit(term, exit_file) == "0"
    finally:
        term.close()


USER_ONLY = """---
name: ship-it
description: Tag and push a release. SHIP-DESCRIPTION
argument-hint: VERSION
disable-model-invocation: true
allowed-tools: Read
---
Tag the release $ARGUMENTS and push it. SHIP-BODY-4242
"""


def test_a_user_only_skill_is_hidden_from_the_model_but_runs_as_slash_command(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    folder = project / ".claude" / "skills" / "ship"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(USER_ONLY)
    (project / ".claude" / "skills" / "changelog").mkdir()
    (project / ".claude" / "skills" / "changelog" / "SKILL.md").write_text(SKILL)
    env = env_for(fake, "openai", tmp_path)
    assert run(["trust"], project, env).returncode == 0
    # The model: not listed, no tool, and tool_search cannot find or load it.
    fake.script = [
        Step(tool_calls=[("tool_search", {"query": "select:skill_ship-it"})]),
        Step(tool_calls=[("tool_search", {"query": "tag push release"})]),
        Step(text="ok"),
    ]
    result = run(["run", "hello"], project, env)
    assert result.returncode == 0, result.stderr
    bodies = fake.bodies()
    assert "SHIP-DESCRIPTION" not in all_text(bodies[0])
    assert "changelog-writer: Writes CHANGELOG" in system_text(bodies[0])  # the others stay
    selected, _ = tool_results(bodies[1])[-1]
    assert "Not available in this session: skill_ship-it" in selected
    searched, _ = tool_results(bodies[2])[-1]
    assert "skill_ship-it" not in searched and "SHIP-DESCRIPTION" not in searched
    assert all("skill_ship-it" not in tool_names(body) for body in bodies)
    # The user: /ship-it ARGS sends its instructions, with its allowed-tools limit.
    fake.script = [
        Step(tool_calls=[("write_file", {"path": "w.txt", "content": "x"})]),
        Step(text="Shipped."),
    ]
    before = len(fake.bodies())
    result = run(["run", "/ship-it", "v1.2", "--mode", "bypass"], project, env)
    assert result.returncode == 3, result.stderr  # answered right after the refused write
    prompt = json.dumps(fake.bodies()[before]["messages"][-1])
    assert "Tag the release v1.2 and push it. SHIP-BODY-4242" in prompt
    assert "/ship-it" in prompt
    refused, _ = tool_results(fake.bodies()[before + 1])[-1]
    assert "outside the tools the command /ship-it allows" in refused
    assert not (project / "w.txt").exists()
    # A model-usable skill is a /name command too.
    fake.script = [Step(text="Noted.")]
    before = len(fake.bodies())
    result = run(["run", "/changelog-writer", "for 1.2"], project, env)
    assert result.returncode == 0, result.stderr
    assert "BODY-MARKER-31337" in json.dumps(fake.bodies()[before]["messages"][-1])


def test_an_unknown_name_lists_skills_too_and_untrusted_skills_say_why(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    folder = project / ".codingcode" / "skills" / "ship"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(USER_ONLY)
    env = env_for(fake, "anthropic", tmp_path)
    result = run(["run", "/ship-it", "v1"], project, env)
    assert result.returncode == 2
    assert "1 project skill (ship) not loaded until you trust" in result.stderr
    assert not fake.bodies()
    assert run(["trust"], project, env).returncode == 0
    result = run(["run", "/ship-itt"], project, env)
    assert result.returncode == 2 and "Did you mean /ship-it?" in result.stderr


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")
def test_skills_in_the_app(project: Path, fake: FakeModelServer, tmp_path: Path) -> None:
    from tests.e2e.test_agent_tui import start_app, wait_exit

    skills = tmp_path / "cfg" / "skills" / "ship"
    skills.mkdir(parents=True)
    (skills / "SKILL.md").write_text(USER_ONLY)
    fake.script = [Step(text="Shipped v9!")]
    exit_file = tmp_path / "exit"
    term = start_app(fake, project, tmp_path, exit_file)
    try:
        term.wait_prompt()
        term.send("/skills", "Enter")
        term.wait_text("you only: /ship-it")
        term.wait_prompt()
        term.send("/ship-it v9", "Enter")
        term.wait_text("Shipped v9!")
        term.wait_prompt()
        prompt = json.dumps(fake.bodies()[0]["messages"][-1])
        assert "Tag the release v9 and push it." in prompt
        assert "SHIP-DESCRIPTION" not in system_text(fake.bodies()[0])
        term.send("/exit", "Enter")
        assert wait_exit(term, exit_file) == "0"
    finally:
        term.close()


@pytest.mark.parametrize(
    ("model", "sent"),
    [
        ("haiku", "fake-model"),  # an alias with no model for this provider: the session's
        ("inherit", "fake-model"),
        ("claude-3-5-haiku-20241022", "fake-model"),  # a Claude model id under openai
        ("small-model", "small-model"),  # a bare name: that model of the session's provider
    ],
)
def test_a_commands_model_in_claude_codes_words(
    project: Path, fake: FakeModelServer, tmp_path: Path, model: str, sent: str
) -> None:
    """``model: haiku`` (or ``sonnet``, ``inherit``, a bare model id), as Claude Code's
    commands and skills write it: resolved against the session's model, never an error."""
    command = project / ".claude" / "commands" / "quick.md"
    command.parent.mkdir(parents=True)
    command.write_text(f"---\nmodel: {model}\n---\nSay hi to $ARGUMENTS\n")
    skill = project / ".claude" / "skills" / "greet" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text(
        f"---\nname: greet\ndescription: Greets.\nmodel: {model}\n---\nGreet $ARGUMENTS\n"
    )
    env = env_for(fake, "openai", tmp_path) | {"CODINGCODE_TRUST_ALL": "1"}
    for line, text in (("/quick Ann", "Say hi to Ann"), ("/greet Bo", "Greet Bo")):
        fake.script = [Step(text="ok")]
        result = run(["run", line], project, env)
        assert result.returncode == 0, result.stderr
        body = fake.bodies()[-1]
        assert body["model"] == sent
        assert text in json.dumps(body["messages"])


ARGS_SKILL = """---
name: fix-issue
description: Fixes an issue.
arguments: [issue, branch]
---
Fix issue $issue on branch $branch (first word: $0, second: $ARGUMENTS[1]).
Run python3 ${CLAUDE_SKILL_DIR}/scripts/check.py --log /tmp/${CLAUDE_SESSION_ID}.log
"""


def test_a_skills_arguments_folder_and_session_are_put_in(
    project: Path, fake: FakeModelServer, tmp_path: Path
) -> None:
    """What the model reads for ``/fix-issue 42 "release 1"``: Claude Code's substitutions
    done, nothing of them left as written."""
    folder = project / ".claude" / "skills" / "fix-issue"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(ARGS_SKILL)
    env = env_for(fake, "openai", tmp_path)
    assert run(["trust"], project, env).returncode == 0
    fake.script = [Step(text="Fixed.")]
    result = run(["run", '/fix-issue 42 "release 1"', "--output-format", "json"], project, env)
    assert result.returncode == 0, result.stderr
    session = json.loads(result.stdout)["session_id"]
    prompt = json.loads(json.dumps(fake.bodies()[0]["messages"][-1]))["content"]
    text = prompt if isinstance(prompt, str) else json.dumps(prompt)
    assert "Fix issue 42 on branch release 1 (first word: 42, second: release 1)." in text
    assert f"python3 {folder}/scripts/check.py --log /tmp/{session}.log" in text
    assert "$" not in text.split("<skill-instructions>")[1]
