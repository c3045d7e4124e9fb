"""The mask list and its resolution: patterns, the bounded incremental project walk."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codingcode.sandbox.masks import (
    SKIP_DIRS,
    MaskResolver,
    MaskSpec,
    glob_regex,
)
from codingcode.sandbox.secrets import DEFAULT_MASKS

PROJECT_MASKS = [m for m in DEFAULT_MASKS if m.pattern.startswith("**")]


def resolve(project: Path, specs=DEFAULT_MASKS, homes=(), **kw) -> set[str]:  # type: ignore[no-untyped-def]
    resolver = MaskResolver(specs, project, **kw)
    return {
        str(p.relative_to(project))
        for p in resolver.resolve(list(homes)).paths
        if project in p.parents
    }


def test_env_files_anywhere_but_templates_and_env_directories(project: Path) -> None:
    for name in [
        ".env",
        ".env.local",
        "a/.env",
        "a/b/c/.env.prod",
        ".env.example",
        "x/.env.sample",
        ".envrc",
        "b/.env~",
        "deploy/prod.env",
        "deploy/example.env",
    ]:
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text("K=V")
    (project / "venvs" / ".env").mkdir(parents=True)  # a virtualenv named .env
    (project / "venvs" / ".env" / "pyvenv.cfg").write_text("")
    (project / "env.txt").write_text("")
    (project / "docs.env").mkdir()  # a directory: not a file of secrets
    assert resolve(project) == {
        ".env", ".env.local", "a/.env", "a/b/c/.env.prod", ".envrc", "b/.env~", "deploy/prod.env",
    }  # fmt: skip


def test_skipped_directories_are_not_walked(project: Path) -> None:
    for skip in SKIP_DIRS:
        (project / skip).mkdir()
        (project / skip / ".env").write_text("K=V")
    assert resolve(project) == set()


def test_walk_stops_at_its_limit_and_says_so(project: Path) -> None:
    for i in range(50):
        (project / f"d{i:02}").mkdir()
        (project / f"d{i:02}" / ".env").write_text("K=V")
    resolver = MaskResolver(DEFAULT_MASKS, project, max_entries=20)
    resolved = resolver.resolve([])
    assert 0 < len(resolved.paths) < 50
    assert any("more than 20 entries" in n for n in resolved.notes)


def test_walk_is_incremental_and_sees_new_files(project: Path) -> None:
    (project / "a").mkdir()
    resolver = MaskResolver(PROJECT_MASKS, project)
    assert resolver.resolve([]).paths == {}
    (project / "a" / ".env").write_text("K=V")
    assert set(resolver.resolve([]).paths) == {project / "a" / ".env"}
    (project / "a" / ".env").unlink()
    assert resolver.resolve([]).paths == {}


def test_twenty_thousand_files_resolve_quickly_the_second_time(project: Path) -> None:
    for d in range(200):
        sub = project / f"pkg{d}"
        sub.mkdir()
        for f in range(100):
            (sub / f"m{f}.py").write_text("")
    (project / "pkg7" / ".env").write_text("K=V")
    resolver = MaskResolver(PROJECT_MASKS, project, max_entries=30_000)
    assert set(resolver.resolve([]).paths) == {project / "pkg7" / ".env"}
    start = time.perf_counter()
    for _ in range(5):
        assert set(resolver.resolve([]).paths) == {project / "pkg7" / ".env"}
    per_call = (time.perf_counter() - start) / 5
    assert per_call < 0.05, per_call  # a stat per directory, not a listing (generous under load)


def test_home_and_absolute_patterns(project: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".npmrc").write_text("")
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.key").write_text("")
    (other / "b.txt").write_text("")
    specs = [*DEFAULT_MASKS, MaskSpec(f"{other}/*.key", "sandbox.denyRead")]
    paths = MaskResolver(specs, project).resolve([home]).paths
    assert {home / ".ssh", home / ".npmrc", other / "a.key"} <= set(paths)
    assert other / "b.txt" not in paths


def test_the_project_and_its_parents_are_never_masked(project: Path) -> None:
    specs = [MaskSpec(str(project), "x"), MaskSpec(str(project.parent), "y")]
    resolved = MaskResolver(specs, project).resolve([])
    assert resolved.paths == {}
    assert len(resolved.notes) == 2


@pytest.mark.parametrize(
    ("pattern", "path", "hit"),
    [
        ("**/.env", ".env", True),
        ("**/.env", "a/b/.env", True),
        ("**/.env", "a/.envx", False),
        ("secrets/**", "secrets", True),
        ("secrets/**", "secrets/a/b", True),
        ("secrets/**", "x/secrets/a", False),
        ("*.pem", "a.pem", True),
        ("*.pem", "d/a.pem", False),
        ("**/*.pem", "d/e/a.pem", True),
        ("k[0-9].txt", "k1.txt", True),
        ("k[!0-9].txt", "k1.txt", False),
    ],
)
def test_glob_regex(pattern: str, path: str, hit: bool) -> None:
    assert bool(glob_regex(pattern).match(path)) is hit


@given(st.text(alphabet="ab/*?.[]!-", max_size=20), st.text(alphabet="ab/.", max_size=20))
def test_glob_regex_never_raises_and_literal_matches_itself(pattern: str, path: str) -> None:
    glob_regex(pattern).match(path)
    literal = path.replace("*", "").replace("?", "")
    assert glob_regex(literal).match(literal)


def test_thousands_of_env_files_are_bounded(project: Path) -> None:
    from codingcode.sandbox.masks import MAX_WALK_MASKS

    for d in range(30):
        sub = project / f"d{d}"
        sub.mkdir()
        for f in range(100):
            (sub / f".env.{f}").write_text("")
    start = time.perf_counter()
    resolved = MaskResolver(PROJECT_MASKS, project).resolve([])
    assert len(resolved.paths) == MAX_WALK_MASKS
    assert any(f"more than {MAX_WALK_MASKS} paths" in n for n in resolved.notes)
    assert time.perf_counter() - start < 10  # linear: one listing per directory
