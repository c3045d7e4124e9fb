"""Skills: finding, parsing, trust, and one clear line for each bad one (issue 17)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codingcode.config import Scope, SettingsError, user_config_dir
from codingcode.skills.frontmatter import split_front_matter, tool_list
from codingcode.skills.loader import MAX_SKILL_BYTES, load_skills, parse_skill
from codingcode.trust import TrustStore
from codingcode.workspace import Workspace


def write_skill(base: Path, folder: str, text: str) -> Path:
    path = base / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def skill_md(name: str, description: str = "Does a thing.", extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n# {name}\nStep one.\n"


def trust_all(path: Path, data: bytes) -> bool:
    return True


def trusted(project: Path) -> Callable[[Path, bytes], bool]:
    """The session's check, as a front end builds it (the trust records read now)."""
    return Workspace.load(project).is_trusted


def test_skills_from_every_place_with_their_scope(project: Path) -> None:
    write_skill(user_config_dir() / "skills", "mine", skill_md("mine"))
    write_skill(project / ".codingcode" / "skills", "ours", skill_md("ours"))
    write_skill(project / ".claude" / "skills", "theirs", skill_md("theirs"))
    found = load_skills(project, is_trusted=trust_all)
    assert sorted(found.skills) == ["mine", "ours", "theirs"]
    assert found.skills["mine"].scope is Scope.USER
    assert found.skills["theirs"].scope is Scope.PROJECT
    assert found.skills["ours"].body == "# ours\nStep one."
    assert found.notes == []


def test_bad_skills_are_one_line_each_and_the_others_load(project: Path) -> None:
    base = project / ".codingcode" / "skills"
    write_skill(base, "good", skill_md("good"))
    write_skill(base, "nodesc", "---\nname: nodesc\n---\n# Title\n")
    write_skill(base, "unclosed", "---\nname: unclosed\ndescription: x\nbody\n")
    write_skill(base, "badname", skill_md("no spaces allowed"))
    write_skill(base, "scalar", "---\njust a string\n---\nbody\n")
    huge = write_skill(base, "huge", skill_md("huge"))
    huge.write_text(skill_md("huge") + "x" * (MAX_SKILL_BYTES + 10))
    write_skill(project / ".claude" / "skills", "dup", skill_md("good", "Another good."))
    write_skill(base, "binary", "")
    (base / "binary" / "SKILL.md").write_bytes(b"---\nname: b\xff\n---\n")
    found = load_skills(project, is_trusted=trust_all)
    # A display name keeps its words and gets a slug for /name (as Claude Code loads it).
    assert sorted(found.skills) == ["good", "no-spaces-allowed"]
    assert found.skills["no-spaces-allowed"].display_name == "no spaces allowed"
    assert found.skills["good"].description == "Does a thing."
    notes = found.notes
    assert len(notes) == 6, notes
    assert all("\n" not in n for n in notes)
    joined = "\n".join(notes)
    for expected in (
        "nodesc/SKILL.md: `description` is missing and the instructions have no paragraph",
        "unclosed/SKILL.md: the front matter is not closed",
        "scalar/SKILL.md: the front matter must be a YAML mapping",
        "huge/SKILL.md is larger than 256 KiB",
        "the name 'good' is already used by",
        "binary/SKILL.md is not UTF-8",
    ):
        assert expected in joined


def test_front_matter_is_optional_as_in_claude_code(project: Path) -> None:
    """No front matter, front matter that is not YAML, no description: the skill loads
    with the folder's name and the first paragraph as its description (a warning for the
    YAML); the others load beside it."""
    base = project / ".claude" / "skills"
    write_skill(base, "plain", "# Plain\n\nLists the logs of a\nservice.\n\nMore text.\n")
    write_skill(base, "badyaml", "---\nname: [unclosed\ndescription: x\n---\nDo it well.\n")
    write_skill(base, "nodesc", "---\nname: nodesc\n---\n```sh\nls\n```\nRuns ls.\n")
    write_skill(base, "good", skill_md("good"))
    found = load_skills(project, is_trusted=trust_all)
    assert sorted(found.skills) == ["badyaml", "good", "nodesc", "plain"]
    assert found.skills["plain"].description == "Lists the logs of a service."
    assert "More text." in found.skills["plain"].body
    assert found.skills["badyaml"].description == "Do it well."
    assert found.skills["nodesc"].description == "Runs ls."
    assert len(found.notes) == 1
    assert "badyaml/SKILL.md: invalid YAML front matter (line 3)" in found.notes[0]
    assert "loaded without its front matter" in found.notes[0]


def test_the_users_skill_wins_over_a_project_one_of_the_same_name(project: Path) -> None:
    write_skill(user_config_dir() / "skills", "deploy", skill_md("deploy", "Mine."))
    write_skill(project / ".codingcode" / "skills", "deploy", skill_md("deploy", "Repo's."))
    found = load_skills(project, is_trusted=trust_all)
    assert found.skills["deploy"].description == "Mine."
    assert "already used by" in found.notes[0]


def test_project_skills_need_trust_and_again_after_a_change(project: Path) -> None:
    path = write_skill(project / ".claude" / "skills", "evil", skill_md("evil"))
    write_skill(user_config_dir() / "skills", "mine", skill_md("mine"))
    found = load_skills(project, is_trusted=trusted(project))
    assert list(found.skills) == ["mine"]  # the user's own always load
    assert found.notes == [
        "1 project skill (evil) not loaded until you trust this project (`codingcode trust`)."
    ]
    TrustStore().trust(project)
    assert sorted(load_skills(project, is_trusted=trusted(project)).skills) == ["evil", "mine"]
    path.write_text(skill_md("evil", "Now does something else."))
    assert "evil" not in load_skills(project, is_trusted=trusted(project)).skills


def test_a_fifo_named_skill_md_is_refused_without_blocking(project: Path) -> None:
    folder = project / ".codingcode" / "skills" / "fifo"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "SKILL.md")
    write_skill(project / ".codingcode" / "skills", "ok", skill_md("ok"))
    found = load_skills(project, is_trusted=trust_all)
    assert list(found.skills) == ["ok"]
    assert "is not a regular file" in found.notes[0]


def test_allowed_tools_string_and_list_forms(project: Path) -> None:
    path = project / "SKILL.md"
    text = skill_md("a", extra="allowed-tools: Read, Grep Bash(git add:*) Bash(ls -la *)\n")
    skill = parse_skill(path, Scope.USER, text.encode())
    assert skill.allowed_tools == ("Read", "Grep", "Bash(git add:*)", "Bash(ls -la *)")
    text = skill_md("a", extra="allowed-tools: [read_file, 'execute_command(git log *)']\n")
    skill = parse_skill(path, Scope.USER, text.encode())
    assert skill.allowed_tools == ("read_file", "execute_command(git log *)")
    with pytest.raises(SettingsError, match="allowed-tools"):
        parse_skill(path, Scope.USER, skill_md("a", extra="allowed-tools: {a: 1}\n").encode())


def test_twenty_thousand_skills_load_in_linear_time(project: Path) -> None:
    base = project / ".codingcode" / "skills"

    def make(n: int, root: Path) -> float:
        for i in range(n):
            write_skill(root, f"s{i}", skill_md(f"s{i}", f"Skill number {i}."))
        times = []
        for _ in range(2):  # the better of two: a busy machine's pause is not the loader's
            start = time.perf_counter()
            found = load_skills(root.parent.parent, is_trusted=trust_all)
            times.append(time.perf_counter() - start)
            assert len(found.skills) == n
        return min(times)

    small = make(4_000, project.parent / "small" / ".codingcode" / "skills")
    big = make(20_000, base)
    assert big < small * 12  # 5x the skills: about 5x the time (quadratic would be 25x)


@given(st.text(max_size=300))
def test_front_matter_never_fails_other_than_with_a_settings_error(text: str) -> None:
    for required in (True, False):
        try:
            meta, body = split_front_matter(text.encode(), Path("x.md"), "Skill", required=required)
        except SettingsError as exc:
            assert "\n" not in exc.message.strip() or "x.md" in exc.message
        else:
            assert isinstance(meta, dict) and isinstance(body, str)


@given(st.lists(st.sampled_from(["Read", "Bash(git add:*)", "Grep", "x(a, b)"]), max_size=6))
def test_tool_list_splits_at_commas_outside_parentheses(items: list[str]) -> None:
    assert tool_list(", ".join(items), Path("x"), "Skill") == tuple(items)


def test_trust_lists_project_skills_and_commands(project: Path) -> None:
    from codingcode.trust import describe_grants, grant_files

    skill = write_skill(project / ".claude" / "skills", "pdf", skill_md("pdf"))
    command = project / ".codingcode" / "commands" / "team" / "review.md"
    command.parent.mkdir(parents=True)
    command.write_text("Review.\n")
    files = grant_files(project)
    assert skill in files and command in files
    assert describe_grants(skill) == ["skill 'pdf' (instructions the model may load)"]
    assert describe_grants(command) == [
        "slash command /review (a prompt, with any ! commands in it)"
    ]
    assert not TrustStore().project_trusted(project)
    TrustStore().trust(project)
    assert TrustStore().project_trusted(project)


@given(
    st.dictionaries(
        st.sampled_from(["name", "description", "model", "argument-hint"]),
        st.text(st.characters(blacklist_categories=["Cs", "Cc", "Zl", "Zp"]), max_size=40),
        max_size=4,
    )
)
def test_the_fast_path_reads_what_yaml_reads(values: dict[str, str]) -> None:
    """Plain ``key: value`` front matter skips the YAML parser; wherever YAML reads the same
    text as a mapping of strings, both must agree."""
    import yaml

    front = "".join(f"{k}: {v}\n" for k, v in values.items())
    try:
        expected = yaml.safe_load(front)
    except yaml.YAMLError:
        return  # the fallback may accept what YAML refuses (`a: b: c`): tested elsewhere
    if not isinstance(expected, dict) or not all(isinstance(v, str) for v in expected.values()):
        return
    meta, _ = split_front_matter(f"---\n{front}---\nbody\n".encode(), Path("x"), "S", required=True)
    assert meta == expected


def test_invocation_flags_parse_from_yaml_and_plain_lines(project: Path) -> None:
    path = project / "SKILL.md"

    def parsed(extra: str) -> tuple[bool, bool]:
        skill = parse_skill(path, Scope.PROJECT, skill_md("a", extra=extra).encode())
        return skill.model_invocable, skill.user_invocable

    assert parsed("") == (True, True)
    assert parsed("disable-model-invocation: true\n") == (False, True)
    assert parsed("disable-model-invocation: False\nuser-invocable: false\n") == (True, False)
    assert parsed("allowed-tools: [Read]\ndisable-model-invocation: true\n") == (False, True)
    # YAML 1.1's words, also on a plain `key: value` line (read without the YAML parser)
    assert parsed("disable-model-invocation: yes\nuser-invocable: no\n") == (False, False)
    assert parsed("user-invocable: 'off'\n") == (True, False)
    with pytest.raises(SettingsError, match="`disable-model-invocation` must be true or false"):
        parsed("disable-model-invocation: sometimes\n")


def test_a_user_only_skill_gets_no_tool_and_no_line_in_the_prompt(project: Path) -> None:
    from codingcode.skills.install import install_skills
    from codingcode.tools.service import ToolService

    base = project / ".codingcode" / "skills"
    write_skill(base, "shown", skill_md("shown"))
    write_skill(
        base, "hidden", skill_md("hidden", "HIDDEN-DESC", "disable-model-invocation: true\n")
    )
    TrustStore().trust(project)
    service = ToolService()
    installed = install_skills(Workspace.load(project), service)
    assert sorted(s.name for s in installed.skills) == ["hidden", "shown"]
    assert "skill_shown" in service and "skill_hidden" not in service
    assert "- shown:" in installed.prompt and "HIDDEN-DESC" not in installed.prompt
