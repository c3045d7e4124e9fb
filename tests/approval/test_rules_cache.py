"""What a decision caches (the analysis of a command line and what the rules find in its
text) never makes it stale with respect to the file system: a name that pointed inside the
project and now links to /etc/shadow is seen on the very next call, wherever the link sits
(the word itself, a directory on its way, the cwd, a redirect, a glob, a nested script).
And the caches stay bounded: thousands of distinct command lines do not grow them past their
caps (entries and size).
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codingcode.approval import presets
from codingcode.approval.pipeline import ToolCall
from codingcode.approval.rules import Rule, RuleEngine
from codingcode.shell import parse
from codingcode.shell.cache import BoundedLRU

SHADOW = "/etc/shadow"


def _swap(link: Path, target: str | Path) -> None:
    """Point ``link`` at ``target`` (made atomically, as an attacker would: rename over)."""
    tmp = link.with_name(link.name + ".new")
    tmp.symlink_to(target)
    os.replace(tmp, link)
    assert os.readlink(link) == str(target)


def _decide(engine: RuleEngine, project: Path, args: dict[str, Any], tool: str) -> Any:
    return engine.evaluate(ToolCall(tool, args, project))


@pytest.mark.parametrize(
    ("link_name", "inside", "outside", "tool", "args"),
    [
        # the word itself
        ("notes", "real.txt", SHADOW, "execute_command", {"command": "cat notes"}),
        # a directory on the way (its own mtime does not change when it is swapped)
        ("sub", "realdir", "/etc", "execute_command", {"command": "cat sub/shadow"}),
        # the cwd the command runs in
        ("sub", "realdir", "/etc", "execute_command", {"command": "cat shadow", "cwd": "sub"}),
        # after a cd
        ("sub", "realdir", "/etc", "execute_command", {"command": "cd sub && cat shadow"}),
        # a redirect target
        ("notes", "real.txt", SHADOW, "execute_command", {"command": "wc -l < notes"}),
        # an option's value, an @file
        ("notes", "real.txt", SHADOW, "execute_command", {"command": "dd if=notes of=x"}),
        ("notes", "real.txt", SHADOW, "execute_command", {"command": "curl -d @./notes x.y"}),
        # a glob that expands to the link
        ("notes", "real.txt", SHADOW, "execute_command", {"command": "cat /PROJECT/no*"}),
        # a nested script, a substitution
        ("notes", "real.txt", SHADOW, "execute_command", {"command": "bash -c 'cat notes'"}),
        ("notes", "real.txt", SHADOW, "execute_command", {"command": "echo $(cat notes)"}),
        # a recursive read of a directory that becomes /etc
        ("sub", "realdir", "/etc", "execute_command", {"command": "grep -r root sub"}),
        # text an unknown program may run (asked about when it would touch the link)
        ("notes", "real.txt", SHADOW, "execute_command", {"command": "echo 'cat notes' | frob"}),
        # the file tools
        ("notes", "real.txt", SHADOW, "read_file", {"path": "notes"}),
        ("sub", "realdir", "/etc", "read_file", {"path": "sub/shadow"}),
        (
            "notes",
            "real.txt",
            SHADOW,
            "edit_file",
            {"path": "notes", "old_string": "a", "new_string": "b"},
        ),
    ],
)
def test_a_cached_decision_follows_a_symlink_swap(
    tmp_path: Path,
    link_name: str,
    inside: str,
    outside: str,
    tool: str,
    args: dict[str, Any],
) -> None:
    project = (tmp_path / "proj").resolve()
    (project / "realdir").mkdir(parents=True)
    (project / "realdir" / "shadow").write_text("not a secret\n")
    (project / "real.txt").write_text("hello\n")
    link = project / link_name
    link.symlink_to(project / inside)
    args = {k: v.replace("/PROJECT", str(project)) for k, v in args.items()}
    engine = RuleEngine([Rule("execute_command(cat *)", "allow")], project)
    # Decided three times while the link points inside: the later ones come from the caches.
    before = [_decide(engine, project, args, tool) for _ in range(3)]
    assert all(b.action != "deny" for b in before), before
    assert before[0] == before[1] == before[2]
    _swap(link, outside)
    after = _decide(engine, project, args, tool)
    assert after.action in ("deny", "ask"), after
    assert after != before[-1]
    # ... and back: the decision follows it again.
    _swap(link, project / inside)
    assert _decide(engine, project, args, tool) == before[0]


def test_a_user_file_rule_follows_a_symlink_swap(tmp_path: Path) -> None:
    """A deny rule of a file tool applies to the paths a command names: resolved afresh on
    every call, though what the command's text matched is cached."""
    project = (tmp_path / "proj").resolve()
    (project / "docs").mkdir(parents=True)
    (project / "docs" / "a.txt").write_text("a\n")
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "key.txt").write_text("k\n")
    link = project / "notes"
    link.symlink_to(project / "docs" / "a.txt")
    engine = RuleEngine(
        [Rule("execute_command(cat *)", "allow"), Rule(f"read_file({secret}/**)", "deny")],
        project,
    )
    call = ToolCall("execute_command", {"command": "cat notes"}, project)
    assert [engine.evaluate(call).action for _ in range(3)] == ["allow"] * 3
    _swap(link, secret / "key.txt")
    found = engine.evaluate(call)
    assert (found.action, found.rule) == ("deny", f"read_file({secret}/**)")
    _swap(link, project / "docs" / "a.txt")
    assert engine.evaluate(call).action == "allow"


def test_a_name_that_appears_after_a_decision_is_seen(tmp_path: Path) -> None:
    """A word that named nothing (its finding cached as "nothing there") becomes a link."""
    project = (tmp_path / "proj").resolve()
    project.mkdir()
    engine = RuleEngine([Rule("execute_command(cat *)", "allow")], project)
    call = ToolCall("execute_command", {"command": "cat later"}, project)
    assert engine.evaluate(call).action == "allow"
    assert engine.evaluate(call).action == "allow"
    (project / "later").symlink_to(SHADOW)
    assert engine.evaluate(call).rule == "R6"


# -- bounds -------------------------------------------------------------------------------
def test_thousands_of_distinct_lines_keep_the_caches_bounded(tmp_path: Path) -> None:
    """5,000 distinct lines: over twice the largest cap (20,000 take the same path, and
    half a minute of parsing on a shared machine)."""
    project = tmp_path.resolve()
    engine = RuleEngine(
        [Rule("execute_command(git *)", "allow"), Rule("read_file(**/x/**)", "deny")], project
    )
    for i in range(5_000):
        engine.evaluate(ToolCall("execute_command", {"command": f"git log -n {i} f{i}"}, project))
    for cache in (parse.ANALYSES, presets._STEPS, engine._lines):
        assert 0 < len(cache) <= cache.max_entries
        assert cache.weight <= cache.max_weight


def test_a_long_pipeline_is_analysed_once_per_decision(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The preset rules and the user's rules share one analysis of a 20,000-stage line."""
    project = tmp_path.resolve()
    engine = RuleEngine([Rule("execute_command(cat *)", "allow")], project)
    fresh = parse._analyze_fresh
    made: list[str] = []

    def counting(command: str, cwd: str) -> Any:
        made.append(command)
        return fresh(command, cwd)

    monkeypatch.setattr(parse, "_analyze_fresh", counting)
    huge = " | ".join(["cat"] * 20_000) + " # once"
    found = engine.evaluate(ToolCall("execute_command", {"command": huge}, project))
    assert found.action == "allow"
    assert made == [huge]


# -- the cache itself ---------------------------------------------------------------------
ops = st.lists(
    st.tuples(st.sampled_from(["get", "put"]), st.integers(0, 12), st.integers(1, 40)),
    max_size=200,
)


@settings(max_examples=300, deadline=None)
@given(ops, st.integers(1, 6), st.integers(1, 80))
def test_bounded_lru_matches_a_plain_model(
    steps: list[tuple[str, int, int]], max_entries: int, max_weight: int
) -> None:
    cache: BoundedLRU[int, str] = BoundedLRU(max_entries, max_weight)
    model: list[tuple[int, str, int]] = []  # least recently used first
    for op, key, weight in steps:
        if op == "get":
            found = next((e for e in model if e[0] == key), None)
            assert cache.get(key) == (found[1] if found else None)
            if found:
                model.remove(found)
                model.append(found)
        else:
            value = f"v{key}.{weight}"
            model = [e for e in model if e[0] != key] + [(key, value, weight)]
            while len(model) > 1 and (
                len(model) > max_entries or sum(e[2] for e in model) > max_weight
            ):
                model.pop(0)
            cache.put(key, value, weight)
        assert len(cache) == len(model)
        assert cache.weight == sum(e[2] for e in model)
        assert len(cache) <= max_entries
        assert cache.weight <= max_weight or len(cache) == 1


def test_bounded_lru_refuses_no_room() -> None:
    with pytest.raises(ValueError):
        BoundedLRU(0, 10)


def test_cached_and_fresh_findings_agree(tmp_path: Path) -> None:
    """The findings replayed from the cache are those a fresh look gives, in order."""
    project = (tmp_path / "proj").resolve()
    project.mkdir()
    (project / "pw").symlink_to("/etc/passwd")
    (project / ".env").write_text("A=1\n")
    rng = random.Random(7)
    words = ["cat", "pw", ".env", "/etc/shadow", "~/.ssh/id_rsa", "-r", "x", "sudo", "*"]
    for _ in range(300):
        line = " ".join(rng.choice(words) for _ in range(rng.randint(1, 6)))
        first = list(presets.command_findings(line, str(project)))
        again = list(presets.command_findings(line, str(project)))
        fresh = list(_uncached(line, str(project)))
        assert first == again == fresh, line


def _uncached(command: str, cwd: str) -> Any:
    for step in presets._steps(command, cwd):
        if isinstance(step, presets._Fresh):
            yield from (f for f in step.fn(*step.args) if f[0] not in step.drop)
        else:
            yield step


def test_a_resolution_after_a_decision_is_fresh(tmp_path: Path) -> None:
    """The per-decision symlink memo ends with the decision: a later resolution (a network
    grant's match, the sandbox's containment check) sees the link as it is now."""
    from codingcode.paths import spellings

    project = (tmp_path / "p").resolve()
    (project / "inside").mkdir(parents=True)
    link = project / "data"
    link.symlink_to(project / "inside")
    RuleEngine([], project).evaluate(ToolCall("read_file", {"path": "data/x"}, project))
    link.unlink()
    link.symlink_to("/etc")
    assert spellings("data/x", str(project))[-1] == "/etc/x"
