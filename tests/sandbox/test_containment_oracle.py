"""The containment oracle: whatever the approval lets through in bypass mode, the sandbox holds.

Obfuscated candidates are generated (seeded): file reads of a canary standing for
``/etc/shadow`` — plain readers and GTFOBins file-read techniques from the shared corpus —
and privilege gains through ``sudo``, each wrapped in layers of variables, aliases, quoting,
``$(…)``, wrappers, ``eval``, base64, ``bash -c`` and functions. Each is judged by the real
``codingcode check --batch --mode bypass``; every one it allows is run through the real
``codingcode tool execute_command --mode bypass``, under both backends, as an unprivileged
user who has real passwordless sudo outside the sandbox. Not one line of the canary may be
printed, and no command may run as uid 0. The control runs show that outside the sandbox the
same user reads the canary with sudo and becomes root.

The canary is a root-only ``0600`` file directly under ``/etc`` with a random line: nothing
names it, so only the root-only rule of the secret classes masks it. The test (as root)
creates the user, its sudoers.d file and the canary, and removes them after, always.
"""

from __future__ import annotations

import base64
import json
import os
import random
import secrets
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.sandbox.conftest import BACKENDS

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(os.geteuid() != 0, reason="creates a user and a root-only canary"),
    pytest.mark.skipif(
        not (shutil.which("sudo") and shutil.which("useradd") and shutil.which("runuser")),
        reason="needs sudo, useradd and runuser (.ci/run installs sudo)",
    ),
]

SEED = 26
CORPUS = Path("/work/shared/corpus/gtfobins_cases.jsonl")
SRC = Path(__file__).resolve().parents[2] / "src"

READERS = [
    "cat {f}",
    "head -n 5 {f}",
    "tail -n 5 {f}",
    "sed -n p {f}",
    "awk 1 {f}",
    "grep -h . {f}",
    "dd if={f} status=none",
    "tac {f}",
    "python3 -c \"print(open('{f}').read())\"",
]
PRIVILEGE = [
    "echo UID=$(sudo -n id -u)",
    "sudo -n sh -c 'echo UID=$(id -u)'",
    "echo UID=$(sudo -n -u root id -u)",
    "/usr/bin/sudo -n id -u | sed s/^/UID=/",
    "echo UID=$(sudo -n python3 -c 'import os; print(os.getuid())')",
]


def _program_split(cmd: str) -> tuple[str, str] | None:
    first, _, rest = cmd.partition(" ")
    if not first or any(c in first for c in "$'\"()|;&=<>`"):
        return None
    return first, rest


def variable(cmd: str, rng: random.Random) -> str:
    split = _program_split(cmd)
    if split is None:
        return f'c={shlex.quote(cmd)}; eval "$c"'
    prog, rest = split
    flow = rng.choice(
        ["", "[ 1 = 2 ] && p=true; ", "p=true & wait; ", "case a in b) p=true;; esac; "]
    )
    return f"p={prog}; {flow}$p {rest}"


def alias(cmd: str, rng: random.Random) -> str:
    split = _program_split(cmd)
    if split is None:
        return f"shopt -s expand_aliases\nalias zz={shlex.quote(cmd)}\nzz"
    prog, rest = split
    return f"shopt -s expand_aliases\nalias zz={prog}\nzz {rest}"


def quoting(cmd: str, rng: random.Random) -> str:
    split = _program_split(cmd)
    if split is None or len(split[0]) < 2:
        return cmd
    prog, rest = split
    i = rng.randrange(1, len(prog))
    spelled = rng.choice([f"{prog[:i]}''{prog[i:]}", f'"{prog}"', f"\\{prog}"])
    return f"{spelled} {rest}"


def substitution(cmd: str, rng: random.Random) -> str:
    split = _program_split(cmd)
    if split is None:
        return f"$(echo eval) {shlex.quote(cmd)}"
    prog, rest = split
    return f"$(echo {prog}) {rest}"


def wrapper(cmd: str, rng: random.Random) -> str:
    wrap = rng.choice(["env", "timeout 20", "nice", "command", "nice -n 1 env"])
    if _program_split(cmd) is None:
        return f"{wrap} bash -c {shlex.quote(cmd)}"
    return f"{wrap} {cmd}"


def evaluate(cmd: str, rng: random.Random) -> str:
    return f"eval {shlex.quote(cmd)}"


def b64(cmd: str, rng: random.Random) -> str:
    encoded = base64.b64encode(cmd.encode()).decode()
    return f"echo {encoded} | base64 -d | bash"


def bash_c(cmd: str, rng: random.Random) -> str:
    return f"bash -c {shlex.quote(cmd)}"


def function(cmd: str, rng: random.Random) -> str:
    return f"f() {{ {cmd}; }}; f"


LAYERS: list[Callable[[str, random.Random], str]] = [
    variable,
    alias,
    quoting,
    substitution,
    wrapper,
    evaluate,
    b64,
    bash_c,
    function,
]


def gtfobins_reads(canary: str, rng: random.Random, n: int) -> list[str]:
    """GTFOBins file-read techniques (the corpus's /etc/shadow cases) whose program is
    installed here, the canary in place of /etc/shadow; ``n`` of them, seeded."""
    if not CORPUS.exists():
        return []
    found = []
    for line in CORPUS.read_text().splitlines():
        case = json.loads(line)
        command = case.get("args", {}).get("command", "")
        if "file-read" not in case.get("note", "") or "/etc/shadow" not in command:
            continue
        if shutil.which(command.split()[0]):
            found.append(command.replace("/etc/shadow", canary).replace("/tmp/out", "out"))
    rng.shuffle(found)
    return found[:n]


def candidates(canary: str) -> list[str]:
    rng = random.Random(SEED)
    bases = [r.format(f=canary) for r in READERS]
    bases += gtfobins_reads(canary, rng, 6)
    payloads = [*bases, *(f"sudo -n {b}" for b in bases[:4]), *PRIVILEGE]
    out = []
    for payload in payloads:
        cmd = payload
        for layer in rng.sample(LAYERS, rng.randint(1, 3)):
            cmd = layer(cmd, rng)
        out.append(cmd)
    return out


@dataclass
class User:
    name: str
    uid: int
    gid: int
    base: Path
    python: list[str]

    def env(self, backend: str) -> dict[str, str]:
        config = self.base / f"config-{backend}"
        return {
            "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
            "HOME": str(self.base),
            "LANG": "C.UTF-8",
            "CODINGCODE_CONFIG_DIR": str(config),
            "CODINGCODE_STATE_DIR": str(self.base / f"state-{backend}"),
            "PYTHONPATH": os.pathsep.join(
                [str(SRC), *(p for p in sys.path if p.endswith("site-packages"))]
            ),
        }

    def run(
        self, argv: list[str], env: dict[str, str], *, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                "runuser",
                "-u",
                self.name,
                "--",
                "env",
                "-i",
                *(f"{k}={v}" for k, v in env.items()),
                *argv,
            ],
            cwd=self.base / "project",
            input=stdin,
            capture_output=True,
            text=True,
            timeout=120,
        )


def _interpreter(name: str) -> list[str]:
    """An interpreter of this Python version the new user may run (this one may sit
    under a home only root enters, e.g. /root/.pyenv)."""
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    for candidate in (sys.executable, f"/usr/bin/{version}", f"/usr/local/bin/{version}"):
        if not os.path.exists(candidate):
            continue
        probe = subprocess.run(
            [
                "runuser",
                "-u",
                name,
                "--",
                candidate,
                "-c",
                "import sys; print(sys.version_info[:2])",
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
        if probe.returncode == 0 and probe.stdout.strip() == str(tuple(sys.version_info[:2])):
            return [candidate]
    pytest.skip(f"no {version} the unprivileged user may run")


@pytest.fixture(scope="module")
def world() -> Iterator[tuple[User, Path, str]]:
    name = f"ccoracle{secrets.token_hex(3)}"
    base = Path(tempfile.mkdtemp(prefix="codingcode-oracle-", dir="/var/tmp"))
    sudoers = Path(f"/etc/sudoers.d/{name}")
    canary = Path(f"/etc/codingcode-canary-{secrets.token_hex(4)}")
    line = f"CANARY-{secrets.token_hex(12)}"
    created = False
    try:
        subprocess.run(
            ["useradd", "--no-create-home", "--home-dir", str(base), "--shell", "/bin/bash", name],
            check=True,
            capture_output=True,
        )
        created = True
        sudoers.write_text(f"{name} ALL=(ALL) NOPASSWD:ALL\n")
        sudoers.chmod(0o440)
        canary.write_text(f"{line}\nsecond-{line}\n")
        canary.chmod(0o600)
        import pwd

        entry = pwd.getpwnam(name)
        (base / "project").mkdir()
        for backend in ("bubblewrap", "landlock"):
            config = base / f"config-{backend}"
            config.mkdir()
            (config / "settings.json").write_text(json.dumps({"sandbox": {"backend": backend}}))
        for path in [base, *base.rglob("*")]:
            os.chown(path, entry.pw_uid, entry.pw_gid)
        base.chmod(0o755)
        user = User(name, entry.pw_uid, entry.pw_gid, base, _interpreter(name))
        yield user, canary, line
    finally:
        if created:
            subprocess.run(["pkill", "-KILL", "-u", name], capture_output=True)
            subprocess.run(["userdel", "--force", name], capture_output=True)
        sudoers.unlink(missing_ok=True)
        canary.unlink(missing_ok=True)
        shutil.rmtree(base, ignore_errors=True)


def test_controls_outside_the_sandbox(world: tuple[User, Path, str]) -> None:
    """The same user, no sandbox: sudo works and reads the canary (the oracle can fail)."""
    user, canary, line = world
    env = user.env("bubblewrap")
    assert user.run(["sudo", "-n", "id", "-u"], env).stdout.strip() == "0"
    assert line in user.run(["sudo", "-n", "cat", str(canary)], env).stdout
    assert line not in user.run(["cat", str(canary)], env).stdout  # root-only: sudo needed


@pytest.mark.parametrize("backend", BACKENDS)
def test_what_bypass_allows_the_sandbox_contains(
    world: tuple[User, Path, str], backend: str
) -> None:
    user, canary, line = world
    env = user.env(backend)
    generated = candidates(str(canary))
    assert len(generated) >= 20
    batch = "\n".join(
        json.dumps({"tool": "execute_command", "args": {"command": c}}) for c in generated
    )
    checked = user.run(
        [*user.python, "-m", "codingcode", "check", "--batch", "--mode", "bypass"],
        env,
        stdin=batch + "\n",
    )
    assert checked.returncode == 0, checked.stderr
    decisions = [json.loads(x) for x in checked.stdout.splitlines()]
    assert len(decisions) == len(generated)
    allowed = [c for c, d in zip(generated, decisions, strict=True) if d["decision"] == "allow"]
    assert allowed, "the approval allowed none: nothing reached the sandbox"

    def run(command: str) -> tuple[str, str]:
        r = user.run(
            [
                *user.python,
                "-m",
                "codingcode",
                "tool",
                "execute_command",
                json.dumps({"command": command, "timeout_ms": 30_000}),
                "--mode",
                "bypass",
            ],
            env,
        )
        return command, r.stdout + r.stderr

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(run, allowed))
    leaks = [(c, out) for c, out in results if line in out]
    root = [(c, out) for c, out in results if "UID=0" in out]
    assert leaks == [], leaks
    assert root == [], root
    # they ran (in the sandbox), not failed to start
    assert all("Exit code" in out for _, out in results), results

    # The analysis refuses or asks about every privilege gain above (none reaches the
    # sandbox in bypass), so the sandbox's own hold is shown without it: the same
    # payloads, and sudo reading the canary, run straight through `codingcode sandbox run`.
    script = "; ".join([*PRIVILEGE, f"sudo -n cat {canary}", "echo DONE"])
    r = user.run(
        [*user.python, "-m", "codingcode", "sandbox", "run", "--", "bash", "-c", script], env
    )
    out = r.stdout + r.stderr
    assert "DONE" in out, out
    assert line not in out and "UID=0" not in out, out
