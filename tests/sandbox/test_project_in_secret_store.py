"""A project inside a masked directory (``cd ~/.aws && codingcode``, a project under the
state directory) stays visible, and the secrets around and inside it stay masked.

Ground truth: a fake ``$HOME`` outside /tmp with planted credentials, the project made
inside its masked stores, commands run in the real sandbox; the markers must not be printed.
Before the fix the mask holding the project was dropped whole, so ``cat credentials``
printed the AWS credentials and the state directory's OAuth tokens.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from codingcode.sandbox.policy import BackendChoice, SandboxPolicy
from codingcode.sandbox.service import SandboxService

from .conftest import Box, needs_bwrap, out

CASES = [
    # (the masked store, where the project is inside it, a secret file of the store)
    (".aws", ".", "credentials"),
    (".aws", "sub/project", "credentials"),
    (".ssh", ".", "id_ed25519"),
    (".config/gh", "ext/repo", "hosts.yml"),
]


@pytest.fixture
def box_in(outside: Path) -> Iterator[object]:
    services: list[SandboxService] = []

    def make(project: Path) -> Box:
        service = SandboxService.from_policy(
            SandboxPolicy(project=project, backend=BackendChoice("bubblewrap"))
        )
        services.append(service)
        return Box(service, project)

    yield make
    for service in services:
        service.close()


@needs_bwrap
@pytest.mark.parametrize(("store", "inside", "secret"), CASES)
def test_project_inside_a_masked_store_does_not_unmask_it(
    box_in, outside: Path, store: str, inside: str, secret: str
) -> None:
    token = "marker-" + secrets.token_hex(8)
    home = outside / "home"
    project = (home / store / inside).resolve()
    project.mkdir(parents=True)
    (home / store / secret).write_text(token)
    (project / "own.txt").write_text(token + "-own")
    box: Box = box_in(project)
    text = out(
        box.run(
            f"cat {home / store / secret}; grep -r marker {home / store}; echo made > new.txt; "
            "cat new.txt; pwd",
            env={"HOME": str(home)},
        )
    )
    assert token not in text
    assert "made" in text and str(project) in text  # the project is usable
    assert (project / "new.txt").read_text() == "made\n"


@needs_bwrap
def test_project_inside_the_state_dir_does_not_show_its_tokens(
    box_in, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "marker-" + secrets.token_hex(8)
    state = outside / "state"
    (state / "mcp-oauth").mkdir(parents=True)
    (state / "mcp-oauth" / "server.json").write_text(token)
    monkeypatch.setenv("CODINGCODE_STATE_DIR", str(state))
    box: Box = box_in(state)
    text = out(box.run("cat mcp-oauth/server.json; grep -r marker .; ls -R"))
    assert token not in text
