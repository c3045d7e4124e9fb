"""Shared by the fleet tests: small git repositories, a task file, a scripted model that
answers every task statelessly (so sessions may run in any order, on any node), and the
checks every fleet run must pass."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.agent.fake_model import FakeModelServer, Step

GIT = [
    "git",
    "-c",
    "user.name=t",
    "-c",
    "user.email=t@example.invalid",
    "-c",
    "commit.gpgSign=false",
]


def make_repos(root: Path, count: int) -> list[Path]:
    """``count`` small git repositories, each with a text file and a binary file."""
    repos = []
    for n in range(count):
        repo = root / f"repo{n}"
        repo.mkdir(parents=True)
        (repo / "README.md").write_text(f"# repo {n}\n\nversion = 1\n")
        (repo / "data.bin").write_bytes(bytes(range(256)) * 4)
        subprocess.run([*GIT, "init", "-q", "-b", "main"], cwd=repo, check=True)
        subprocess.run([*GIT, "add", "-A"], cwd=repo, check=True)
        subprocess.run([*GIT, "commit", "-qm", "start"], cwd=repo, check=True)
        repos.append(repo)
    return repos


def task_lines(repos: list[Path], count: int, *, slow: float = 0.0) -> list[dict[str, Any]]:
    """``count`` tasks spread over ``repos``; each edits README.md and writes a new file.
    ``slow``: the model waits this long (seconds) before each answer of these tasks."""
    tasks = []
    for n in range(count):
        repo = repos[n % len(repos)]
        prompt = f"TASK t{n:03d} FILE=out_{n:03d}.txt SLOW={slow}"
        tasks.append(
            {
                "id": f"t{n:03d}",
                "repo": str(repo),
                "ref": "main",
                "prompt": prompt,
                "allowed_tools": ["execute_command(printf *)"],
            }
        )
    return tasks


def write_tasks(path: Path, tasks: list[dict[str, Any]], extra: list[str] = ()) -> Path:  # type: ignore[assignment]
    lines = [json.dumps(t) for t in tasks] + list(extra)
    path.write_text("\n".join(lines) + "\n")
    return path


_PROMPT = re.compile(r"TASK (\S+) FILE=(\S+) SLOW=(\S+)")


def responder(body: dict[str, Any]) -> Step:
    """One model turn of a task, read from the request: first the edits, then the answer."""
    messages = body.get("messages") or []
    prompt = next(
        (m["content"] for m in messages if m.get("role") == "user" and isinstance(m.get("content"), str)
         and "TASK " in m["content"]),
        "",
    )  # fmt: skip
    found = _PROMPT.search(prompt)
    if found is None:
        return Step(text="no task found", status=500)
    task, name, slow = found.group(1), found.group(2), float(found.group(3))
    if slow:
        time.sleep(slow)
    if messages and messages[-1].get("role") == "tool":
        return Step(text=f"finished {task}")
    return Step(
        tool_calls=[
            ("write_file", {"path": name, "content": f"made by {task}\n"}),
            (
                "edit_file",
                {
                    "path": "README.md",
                    "old_string": "version = 1",
                    "new_string": f"version = {task}",
                },
            ),
            # A binary file, written by a command in the sandbox.
            ("execute_command", {"command": f"printf '\\000\\377{task}' > blob_{task}.bin"}),
        ]
    )


def scripted_server() -> FakeModelServer:
    server = FakeModelServer()
    server.script = [responder] * 5000
    return server


def fleet_env(server: FakeModelServer, home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "ANTHROPIC_", "CODINGCODE_"))
    }
    env |= server.env("openai")
    env["CODINGCODE_CONFIG_DIR"] = str(home / "config")
    env["CODINGCODE_STATE_DIR"] = str(home / "state")
    env["CODINGCODE_MODEL"] = "openai:fake-model"
    return env


def fleet(
    args: list[str], env: dict[str, str], cwd: Path, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codingcode", "fleet", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def result_lines(out: Path) -> list[dict[str, Any]]:
    data = (out / "results.jsonl").read_bytes()
    assert data == b"" or data.endswith(b"\n"), "results.jsonl ends in half a line"
    return [json.loads(line) for line in data.splitlines()]


def check_patch_applies(out: Path, result: dict[str, Any], repo: Path, tmp: Path) -> None:
    """The task's patch applies to a fresh clone of its repository, and makes the change."""
    patch = out / "tasks" / result["id"] / "changes.patch"
    clone = tmp / f"check-{result['id']}"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
    subprocess.run(["git", "apply", "--check", str(patch)], cwd=clone, check=True)
    subprocess.run(["git", "apply", str(patch)], cwd=clone, check=True)
    n = result["id"][1:]
    assert (clone / f"out_{n}.txt").read_text() == f"made by {result['id']}\n"
    assert f"version = {result['id']}" in (clone / "README.md").read_text()
    assert (clone / "data.bin").read_bytes() == bytes(range(256)) * 4
    assert (clone / f"blob_{result['id']}.bin").read_bytes() == b"\x00\xff" + result["id"].encode()


def leftover_processes(marker: str) -> list[str]:
    """Processes (bwrap sandboxes, codingcode sessions) whose command line names ``marker``."""
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [
        line for line in out.splitlines()[1:]
        if marker in line and ("bwrap" in line or "codingcode" in line) and "ps -eo" not in line
    ]  # fmt: skip


def start_fleet(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    """``codingcode fleet ARGS`` in the background, its JSON progress read line by line."""
    return subprocess.Popen(
        [sys.executable, "-m", "codingcode", "fleet", *args],
        cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def wait_for_event(
    proc: subprocess.Popen[str], kind: str, count: int = 1, timeout: float = 120
) -> list[dict[str, Any]]:
    """Read progress events until ``count`` of ``kind`` have been seen; return all read."""
    assert proc.stdout is not None
    seen: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise AssertionError(
                f"fleet ended before {count} {kind}: {proc.stderr.read() if proc.stderr else ''}"
            )
        seen.append(json.loads(line))
        if sum(e["type"] == kind for e in seen) >= count:
            return seen
    raise AssertionError(f"no {count} {kind} within {timeout} s")


def wait_gone(marker: str, timeout: float = 20) -> list[str]:
    """Leftover processes naming ``marker`` once they had ``timeout`` s to go."""
    deadline = time.monotonic() + timeout
    while (left := leftover_processes(marker)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left
