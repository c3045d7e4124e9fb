"""Ground truth: a bypass pass never shows a masked path, whatever the analysis believed.

The real ``codingcode tool execute_command --mode bypass`` runs tricks that make the shell
analysis misname the program (``$p /etc/shadow`` where ``p`` is ``cat`` on every path the
analysis does not follow) in a real sandbox, under both backends: no line of the file is
printed. ``codingcode check`` says why nothing is exposed. An allow rule that names the path
literally still shows it (the explicit grant); one that does not, never.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.sandbox.conftest import BACKENDS

pytestmark = pytest.mark.e2e

#: Each makes the analysis take the program for ``ls`` (metadata only) where bash runs cat.
TRICKS = [
    "p=cat; [ 1 = 2 ] && p=ls; $p {f}",
    "p=cat; p=ls & wait; $p {f}",
    "cmd=ls; for cmd in cat; do :; done; $cmd {f}",
    "p=cat; case a in b) p=ls;; esac; $p {f}",
    "shopt -s expand_aliases\nalias ls=cat\nls {f}",
]


def secret_lines(path: str) -> list[str]:
    try:
        text = Path(path).read_text()
    except OSError:
        pytest.skip(f"{path} is not readable here (the test needs root to know its lines)")
    return [line for line in text.splitlines() if line.strip()]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials").write_text(
        "[default]\naws_secret_access_key = CANARY-aws-4f1d9\n"
    )
    (tmp_path / "config").mkdir()
    return {
        "HOME": str(home),
        "CODINGCODE_CONFIG_DIR": str(tmp_path / "config"),
        "CODINGCODE_STATE_DIR": str(tmp_path / "state"),
    }


def settings(env: dict[str, str], backend: str, allow: list[str] | None = None) -> None:
    body: dict[str, object] = {"sandbox": {"backend": backend}}
    if allow:
        body["permissions"] = {"allow": allow}
    Path(env["CODINGCODE_CONFIG_DIR"], "settings.json").write_text(json.dumps(body))


def run_tool(project: Path, env: dict[str, str], command: str, mode: str = "bypass") -> str:
    r = run_cli(
        ["tool", "execute_command", json.dumps({"command": command}), "--mode", mode],
        cwd=project,
        env=env,
    )
    return r.stdout + r.stderr


def check(project: Path, env: dict[str, str], command: str, mode: str = "bypass") -> dict:
    r = run_cli(
        ["check", "execute_command", json.dumps({"command": command}), "--mode", mode],
        cwd=project,
        env=env,
    )
    assert r.code == 0, r.stderr
    return json.loads(r.stdout)


def test_check_says_a_bypass_pass_exposes_nothing(project: Path, env: dict[str, str]) -> None:
    settings(env, "bubblewrap")
    for path in ("/etc/shadow", "/etc/gshadow"):
        if not os.path.exists(path):
            continue
        got = check(project, env, f"ls {path}")
        assert (got["decision"], got["layer"]) == ("allow", "PermissionMode"), got
        caps = got["capabilities"]
        assert caps["read_paths"] == [] and caps["exposes"] == [], got
        assert caps["not_exposed"] == [
            {
                "path": path,
                "reason": "bypass mode passes never expose a masked path; approve the call "
                "or add an allow rule naming it",
            }
        ], got


@pytest.mark.parametrize("backend", BACKENDS)
def test_misnamed_programs_print_no_line_of_shadow(
    project: Path, env: dict[str, str], backend: str
) -> None:
    settings(env, backend)
    lines = {path: secret_lines(path) for path in ("/etc/shadow", "/etc/gshadow")}
    # each trick alone under bubblewrap; under Landlock (and for gshadow) all of them in one
    # script (the exposure no longer depends on what the analysis believes: one run each
    # keeps the test short)
    runs = [(t.format(f="/etc/shadow"), "/etc/shadow") for t in TRICKS]
    if backend == "landlock":
        runs = [("\n".join(t.format(f="/etc/shadow") for t in TRICKS), "/etc/shadow")]
    runs.append(("\n".join(t.format(f="/etc/gshadow") for t in TRICKS), "/etc/gshadow"))
    for script, path in runs:
        out = run_tool(project, env, script)
        leaked = [line for line in lines[path] if line in out]
        assert not leaked, (script, out)
        # refused by the analysis (it follows these now), or run and refused by the sandbox
        assert "masked by the sandbox" in out or "was denied" in out, (script, out)
    # one the analysis passes in bypass (no literal path for R6 to see): the sandbox holds
    for path in lines:
        head, tail = path[:-3], path[-3:]
        script = f"python3 -c \"print(open('{head}' + '{tail}').read())\""
        out = run_tool(project, env, script)
        assert not [line for line in lines[path] if line in out], (script, out)
        assert "masked by the sandbox" in out, (script, out)


@pytest.mark.parametrize("backend", BACKENDS)
def test_cloud_credentials_in_bypass_and_by_a_literal_rule(
    project: Path, env: dict[str, str], backend: str
) -> None:
    settings(env, backend)
    assert "CANARY-aws" not in run_tool(project, env, "cat ~/.aws/credentials")
    got = check(project, env, "cat ~/.aws/credentials")
    shown = [x["path"] for x in got["capabilities"]["not_exposed"]]
    assert shown == [str(Path(env["HOME"]) / ".aws" / "credentials")], got
    if backend == "landlock":
        return  # the rule's exposure is the same decision; bubblewrap shows it ran
    # an allow rule that names it: the explicit grant shows it (in any mode)
    aws = Path(env["HOME"]) / ".aws" / "credentials"
    settings(env, backend, [f"execute_command(cat {aws})"])
    assert "CANARY-aws" in run_tool(project, env, f"cat {aws}", mode="default")
    # an allow rule that only matches it by a wildcard: never
    settings(env, backend, ["execute_command(cat *)"])
    out = run_tool(project, env, "cat ~/.aws/credentials", mode="default")
    assert "CANARY-aws" not in out and "masked by the sandbox" in out, out
    got = check(project, env, "cat ~/.aws/credentials", mode="default")
    assert got["capabilities"]["exposes"] == [], got
    assert "does not name it literally" in got["capabilities"]["not_exposed"][0]["reason"]
