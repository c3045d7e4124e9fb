"""Custom slash commands: loading, arguments, and the interface other front ends use."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codingcode.config import Scope, user_config_dir
from codingcode.custom_commands import (
    CommandPrompt,
    CommandRegistry,
    MarkdownCommand,
    expand_arguments,
)
from codingcode.custom_commands.invoke import find_invocation, is_command_line
from codingcode.custom_commands.registry import MAX_COMMAND_BYTES
from codingcode.custom_commands.render import plain_output
from codingcode.errors import InvalidArgumentsError
from codingcode.trust import TrustStore
from codingcode.workspace import Workspace


def trust_all(path: Path, data: bytes) -> bool:
    return True


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_arguments_are_put_in_like_claude_code_does() -> None:
    body = "Fix issue #$1 with priority $2. Everything: $ARGUMENTS. Missing: [$3]"
    assert expand_arguments(body, '123 high "extra words"') == (
        'Fix issue #123 with priority high. Everything: 123 high "extra words". '
        "Missing: [extra words]"
    )
    assert expand_arguments("Review the code.", "src/a.py") == (
        "Review the code.\n\nARGUMENTS: src/a.py"
    )
    assert expand_arguments("Review the code.", "") == "Review the code."
    assert expand_arguments("Unbalanced: $1", 'a "b') == "Unbalanced: a"


@given(st.text(max_size=200), st.text(max_size=100))
def test_expansion_never_fails_and_keeps_the_arguments(body: str, arguments: str) -> None:
    text = expand_arguments(body, arguments)
    if arguments.strip() and "$ARGUMENTS" in body:
        assert arguments.strip() in text


def test_front_matter_and_namespaces(project: Path) -> None:
    write(
        project / ".claude" / "commands" / "frontend" / "component.md",
        "---\ndescription: Make a component\nargument-hint: NAME\nallowed-tools: Read, "
        "Bash(git status:*)\nmodel: claude-3-5-haiku-20241022\n---\nCreate $1.\n",
    )
    write(project / ".codingcode" / "commands" / "plain.md", "Just do it.\nSecond line.\n")
    registry = CommandRegistry.load(project, is_trusted=trust_all)
    assert [c.name for c in registry.list()] == ["component", "plain"]
    component = registry.get("/component")
    assert isinstance(component, MarkdownCommand)
    assert component.description == "Make a component"
    assert component.argument_hint == "NAME"
    assert component.namespace == "frontend"
    assert component.model == "claude-3-5-haiku-20241022"
    assert component.allowed_tools == ("Read", "Bash(git status:*)")
    plain = registry.get("plain")
    assert plain is not None and plain.description == "Just do it."
    assert registry.notes == []


def test_bad_command_files_are_one_line_each(project: Path) -> None:
    base = project / ".codingcode" / "commands"
    write(base / "ok.md", "Fine.\n")
    write(base / "badyaml.md", "---\ndescription: [x\n---\nBody\n")
    write(base / "empty.md", "---\ndescription: nothing\n---\n\n")
    write(base / "big.md", "x" * (MAX_COMMAND_BYTES + 1))
    write(base / "Meal Prep & Plan.md", "Plan the meals.\n")
    write(base / "&&&.md", "No name.\n")
    write(user_config_dir() / "commands" / "ok.md", "The user's own.\n")
    write(base / "hint.md", "---\nargument-hint: [file]\n---\nRead $1\n")
    registry = CommandRegistry.load(project, is_trusted=trust_all)
    # Front matter that is not YAML loads the command without it, as Claude Code does.
    # A file name that is not a command name is typed as its slug.
    assert [c.name for c in registry.list()] == ["badyaml", "hint", "meal-prep-plan", "ok"]
    assert registry.get("meal-prep-plan").body == "Plan the meals.\n"  # type: ignore[union-attr]
    assert registry.get("badyaml").description == "Body"  # type: ignore[union-attr]
    assert registry.get("hint").argument_hint == "[file]"  # type: ignore[union-attr]
    assert registry.get("ok") is not None
    assert registry.get("ok").description == "The user's own."  # type: ignore[union-attr]
    joined = "\n".join(registry.notes)
    assert len(registry.notes) == 5, registry.notes
    for expected in (
        "badyaml.md: invalid YAML front matter",
        "loaded without its front matter",
        "is empty",
        "larger than 128 KiB",
        "file name",
        "already",
    ):
        assert expected in joined


def test_project_commands_need_trust(project: Path) -> None:
    write(project / ".codingcode" / "commands" / "deploy.md", "Deploy.\n")
    registry = CommandRegistry.load(project, is_trusted=Workspace.load(project).is_trusted)
    assert registry.list() == []
    assert "1 project command (/deploy) not loaded until you trust" in registry.notes[0]
    TrustStore().trust(project)
    trusted = Workspace.load(project).is_trusted
    assert CommandRegistry.load(project, is_trusted=trusted).get("deploy") is not None


class EchoPrompt:
    """What an MCP client would register: any object with the SlashCommand shape."""

    name = "github:summarize"
    description = "Summarize a PR"
    argument_hint = "PR"
    source = "MCP server github"

    async def prompt(self, arguments: str) -> CommandPrompt:
        return CommandPrompt(f"summarize {arguments}")


@pytest.mark.anyio
async def test_other_commands_register_through_the_same_interface(project: Path) -> None:
    registry = CommandRegistry.load(project, is_trusted=trust_all)
    assert registry.register(EchoPrompt())
    assert not registry.register(EchoPrompt())  # taken: a note, the first stays
    assert "already MCP server github" in registry.notes[-1]
    command = registry.get("/github:summarize")
    assert command is not None
    assert (await command.prompt("12")).text == "summarize 12"
    registry.unregister("github:summarize")
    assert "github:summarize" not in registry


def test_command_lines_and_paths() -> None:
    assert is_command_line("/review a.py")
    assert is_command_line("/github:summarize 12")
    assert not is_command_line("/usr/bin/env is broken")
    assert not is_command_line("review /x")
    assert not is_command_line("/")


def test_unknown_command_names_the_known_ones(project: Path) -> None:
    write(user_config_dir() / "commands" / "review.md", "Review.\n")
    with pytest.raises(InvalidArgumentsError, match=r"Did you mean /review\?"):
        find_invocation(Workspace.load(project), "/reviw x")
    assert find_invocation(Workspace.load(project), "not a command") is None
    found = find_invocation(Workspace.load(project), "/review  a b")
    assert found is not None and found.arguments == "a b"
    assert isinstance(found.command, MarkdownCommand) and found.command.scope is Scope.USER


def test_plain_output_keeps_failures_whole() -> None:
    assert plain_output("Exit code: 0\n--- stdout ---\nhello") == "hello"
    assert plain_output("Exit code: 1\n--- stdout ---\nhello").startswith("Exit code: 1")
    both = "Exit code: 0\n--- stdout ---\na\n--- stderr ---\nb"
    assert plain_output(both) == both
    assert plain_output("Exit code: 0\n(no output)") == ""


def skill_file(base: Path, name: str, extra: str = "") -> None:
    write(
        base / name / "SKILL.md",
        f"---\nname: {name}\ndescription: The {name} skill.\n{extra}---\nDo {name} on $ARGUMENTS.\n",
    )


@pytest.mark.anyio
async def test_skills_are_slash_commands_and_win_over_a_command_of_their_name(
    project: Path,
) -> None:
    from codingcode.custom_commands.skills import SkillCommand, add_skills, skills_listing
    from codingcode.skills.loader import load_skills

    skills = project / ".codingcode" / "skills"
    skill_file(skills, "deploy", "argument-hint: ENV\nmodel: openai:gpt-4.1\n")
    skill_file(skills, "quiet", "disable-model-invocation: true\n")
    skill_file(skills, "model-only", "user-invocable: false\n")
    write(project / ".codingcode" / "commands" / "deploy.md", "The command.\n")
    registry = CommandRegistry.load(project, is_trusted=trust_all)
    found = load_skills(project, is_trusted=trust_all)
    add_skills(registry, found.skills.values())
    assert [c.name for c in registry.list()] == ["deploy", "quiet"]  # model-only: no /name
    deploy = registry.get("deploy")
    assert isinstance(deploy, SkillCommand)
    assert deploy.argument_hint == "ENV" and deploy.model == "openai:gpt-4.1"
    assert any("deploy.md is ignored: /deploy is project skill" in n for n in registry.notes)
    prompt = await deploy.prompt("staging")
    assert "Do deploy on staging." in prompt.text and "/deploy with: staging" in prompt.text
    # An entry that is not a Markdown command (an MCP prompt, another skill) stays first.
    registry.register(EchoPrompt())
    add_skills(registry, [found.skills["deploy"]])
    listing = skills_listing(found.skills.values(), ["1 project skill (x) not loaded"])
    assert "quiet — The quiet skill." in listing and "you only: /quiet" in listing
    assert "model-only" in listing and "the model only" in listing
    assert "deploy ENV — The deploy skill." in listing and "/deploy or the model" in listing
    assert str(skills / "deploy" / "SKILL.md") in listing
    assert "note: 1 project skill (x) not loaded" in listing
    assert skills_listing([]).startswith("No skills.")


def test_a_project_skill_never_shadows_the_users_own_command(project: Path) -> None:
    from codingcode.custom_commands.skills import add_skills
    from codingcode.skills.loader import load_skills

    skill_file(project / ".codingcode" / "skills", "deploy")
    write(user_config_dir() / "commands" / "deploy.md", "My own deploy.\n")
    registry = CommandRegistry.load(project, is_trusted=trust_all)
    add_skills(registry, load_skills(project, is_trusted=trust_all).skills.values())
    mine = registry.get("deploy")
    assert isinstance(mine, MarkdownCommand) and mine.scope is Scope.USER
    assert any("project skill" in n and "is ignored" in n for n in registry.notes)
