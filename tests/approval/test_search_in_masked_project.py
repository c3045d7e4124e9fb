"""A search with no directory walks the project: when the project lies inside a masked
directory (``cd ~/.aws && codingcode``, a project in the state directory), it reads masked
secrets and is asked, in every mode, bypass too.

Ground truth: the real ``codingcode tool search_code ... --mode bypass`` with planted
markers; they must not be printed. Before the fix search_code printed the AWS credentials
and the state directory's OAuth tokens there (read_file and search_files already asked).
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest

from tests.conftest import run_cli


@pytest.fixture
def places(tmp_path: Path) -> tuple[dict[str, str], dict[str, Path], str]:
    token = "marker" + secrets.token_hex(8)
    home, state, project = tmp_path / "home", tmp_path / "state", tmp_path / "project"
    for secret in (home / ".aws" / "credentials", state / "mcp-oauth" / "server.json"):
        secret.parent.mkdir(parents=True)
        secret.write_text(f"key = {token}\n")
    project.mkdir()
    (project / "notes.txt").write_text(f"{token} in an ordinary file\n")
    env = {"HOME": str(home), "CODINGCODE_STATE_DIR": str(state)}
    return env, {"aws": home / ".aws", "state": state, "project": project}, token


@pytest.mark.parametrize("where", ["aws", "state"])
@pytest.mark.parametrize("args", [{"pattern": "marker"}, {"pattern": "marker", "glob": "*"}])
def test_search_code_in_a_masked_project_is_asked(places, where: str, args: dict) -> None:
    env, dirs, token = places
    result = run_cli(
        ["tool", "search_code", json.dumps(args), "--mode", "bypass"], cwd=dirs[where], env=env
    )
    assert token not in result.stdout + result.stderr
    assert "masked secret" in result.stderr


def test_search_code_in_an_ordinary_project_still_runs(places) -> None:
    env, dirs, token = places
    args = json.dumps({"pattern": "marker"})
    result = run_cli(
        ["tool", "search_code", args, "--mode", "bypass"], cwd=dirs["project"], env=env
    )
    assert result.code == 0 and token in result.stdout


@pytest.mark.parametrize(
    ("var", "value", "secret"),
    [("XDG_CONFIG_HOME", "xdg", "xdg/gh/hosts.yml"), ("KUBECONFIG", "kube", "kube")],
)
def test_read_file_of_a_relocated_store_is_asked(
    places, tmp_path: Path, var: str, value: str, secret: str
) -> None:
    """A store the environment moved (``$XDG_CONFIG_HOME/gh``) is the same secret for the
    file tools: before the fix read_file printed it in bypass."""
    env, dirs, token = places
    target = tmp_path / secret
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(token)
    args = json.dumps({"path": str(target)})
    result = run_cli(
        ["tool", "read_file", args, "--mode", "bypass"],
        cwd=dirs["project"],
        env={**env, var: str(tmp_path / value)},
    )
    assert token not in result.stdout + result.stderr
    assert "masked secret" in result.stderr
