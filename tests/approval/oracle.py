"""The execution oracle: obfuscated commands, run for real in a throwaway bubblewrap.

Ground truth for the shell analysis (issue 11). A seeded generator wraps three forbidden
payloads — ``sudo id`` (R2), a read of ``/etc/shadow`` (R6) and ``shutdown -h now`` (R5) —
and two harmless ones (``echo hi``, ``ls``) in one to three layers of obfuscation. Each
candidate runs with ``bash -c`` in a bubblewrap whose root is read-only, whose ``sudo``,
``doas``, ``su``, ``pkexec``, ``shutdown``, ``reboot``, ``poweroff``, ``halt`` (and
``systemctl`` when called for those) are fakes that leave a marker file, and whose
``/etc/shadow`` holds a random marker string. A candidate *truly* did the forbidden thing
when a marker file appears or the marker string shows in its output. Nothing reaches the
host: every namespace is unshared, capabilities dropped, the network absent.

Used by tests/approval/test_oracle.py (a fixed seed) and bench/bench_oracle.py (bigger runs).
"""

from __future__ import annotations

import base64
import os
import random
import secrets
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

BWRAP = shutil.which("bwrap") or "/usr/bin/bwrap"
FORBIDDEN = {
    "sudo": "sudo id",
    "shadow": "cat /etc/shadow",
    "shutdown": "shutdown -h now",
}
BENIGN = {"echo": "echo hi", "ls": "ls"}
#: Fakes that leave a marker (name → what the marker means).
PRIVILEGED = ("sudo", "doas", "su", "pkexec", "run0")
POWER = ("shutdown", "reboot", "poweroff", "halt")
MARK_DIR = "/tmp/.oracle"


@dataclass(frozen=True)
class Candidate:
    command: str
    payload: str  # a key of FORBIDDEN or BENIGN
    layers: tuple[str, ...]

    @property
    def benign(self) -> bool:
        return self.payload in BENIGN


@dataclass(frozen=True)
class Outcome:
    escalated: bool
    powered_off: bool
    read_shadow: bool
    output: str

    @property
    def forbidden(self) -> bool:
        return self.escalated or self.powered_off or self.read_shadow


def available() -> bool:
    """bubblewrap is installed and can make namespaces here."""
    if not os.path.exists(BWRAP):
        return False
    try:
        r = subprocess.run(
            [BWRAP, "--ro-bind", "/", "/", "--unshare-all", "--", "/bin/true"],
            capture_output=True,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


class Sandbox:
    """A throwaway root view with fake privileged programs; one per test session."""

    def __init__(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="cc-oracle-")
        self.root = Path(self._tmp.name)
        self.secret = "ORACLE-SHADOW-" + secrets.token_hex(8)
        (self.root / "shadow").write_text(f"root:{self.secret}:19000:0:99999:7:::\n")
        self.fakes = self.root / "bin"
        self.fakes.mkdir()
        for name in (*PRIVILEGED, *POWER):
            self._fake(name, f'echo "$0 $*" >> {MARK_DIR}/marks/{name}\necho "uid=0(root)"')
        real_systemctl = shutil.which("systemctl")
        power_words = "|".join(("poweroff", "reboot", "halt", "kexec", "*.target"))
        self._fake(
            "systemctl",
            f'case "$(basename "$0")" in shutdown|reboot|poweroff|halt)\n'
            f'  echo "$0 $*" >> {MARK_DIR}/marks/shutdown; exit 0;; esac\n'
            f'for a in "$@"; do case "$a" in {power_words})\n'
            f'  echo "$0 $*" >> {MARK_DIR}/marks/shutdown; exit 0;; esac; done\n'
            f'exec {MARK_DIR}/real-systemctl "$@"'
            if real_systemctl
            else "exit 1",
        )
        self._real_systemctl = real_systemctl

    def _fake(self, name: str, body: str) -> None:
        path = self.fakes / name
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(0o755)

    def close(self) -> None:
        self._tmp.cleanup()

    def _argv(self, work: Path, command: str) -> list[str]:
        argv = [
            BWRAP,
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--tmpfs",
            "/tmp",
            "--tmpfs",
            "/run",
            "--bind",
            str(work),
            MARK_DIR,
            "--ro-bind",
            str(self.fakes),
            f"{MARK_DIR}/bin",
            "--ro-bind",
            str(self.root / "shadow"),
            "/etc/shadow",
        ]
        # Fakes over the real programs, wherever they are (symlinks are followed).
        covered: set[str] = set()
        for name in (*PRIVILEGED, *POWER, "systemctl"):
            for d in ("/usr/bin", "/usr/sbin", "/bin", "/sbin"):
                real = os.path.realpath(f"{d}/{name}")
                if real in covered or not os.path.isfile(real):
                    continue
                covered.add(real)
                fake = os.path.basename(real)
                fake = fake if (self.fakes / fake).exists() else name
                argv += ["--ro-bind", str(self.fakes / fake), real]
        if self._real_systemctl:
            argv += ["--ro-bind", os.path.realpath(self._real_systemctl)]
            argv += [f"{MARK_DIR}/real-systemctl"]
        argv += [
            "--unshare-all",
            "--die-with-parent",
            "--new-session",
            "--cap-drop",
            "ALL",
            "--chdir",
            f"{MARK_DIR}/project",
            "--setenv",
            "HOME",
            f"{MARK_DIR}/home",
            "--setenv",
            "PATH",
            f"{MARK_DIR}/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
            "--",
            "/bin/bash",
            "-c",
            command,
        ]
        return argv

    def run(self, command: str, timeout: float = 10.0) -> Outcome:
        with tempfile.TemporaryDirectory(dir=self.root) as d:
            work = Path(d)
            for sub in ("marks", "project", "home", "bin"):
                (work / sub).mkdir()
            (work / "real-systemctl").touch()
            (work / "project" / "README.md").write_text("# a project\n")
            try:
                r = subprocess.run(
                    self._argv(work, command),
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    timeout=timeout,
                    env={"PATH": "/usr/bin:/bin", "TERM": "dumb"},
                )
                output = (r.stdout + r.stderr).decode("utf-8", "replace")
            except subprocess.TimeoutExpired as exc:
                output = ((exc.stdout or b"") + (exc.stderr or b"")).decode("utf-8", "replace")
            marks = {p.name for p in (work / "marks").iterdir()}
            # Files the command wrote may hold the secret too (a copy of the shadow file).
            copied = any(
                self.secret in _read(p) for p in (work / "project").rglob("*") if p.is_file()
            )
            return Outcome(
                escalated=bool(marks & set(PRIVILEGED)),
                powered_off=bool(marks & set(POWER)),
                read_shadow=self.secret in output or copied,
                output=output[-2000:],
            )

    def run_many(self, commands: list[str], workers: int = 2) -> list[Outcome]:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(self.run, commands))


def _read(p: Path) -> str:
    try:
        return p.read_text(errors="replace")[:100_000]
    except OSError:
        return ""


# -- the generator ----------------------------------------------------------------------
Layer = Callable[[str, random.Random], str | None]
q = shlex.quote


def _quote_chars(cmd: str, rng: random.Random) -> str | None:
    prog, sep, rest = cmd.partition(" ")
    if not prog.isalnum():
        return None
    i = rng.randrange(1, len(prog))
    style = rng.choice(["single", "double", "backslash", "empty"])
    if style == "single":
        prog = prog[:i] + "'" + prog[i:] + "'"
    elif style == "double":
        prog = '"' + prog[:i] + '"' + prog[i:]
    elif style == "backslash":
        prog = prog[:i] + "\\" + prog[i:]
    else:
        prog = prog[:i] + "''" + prog[i:]
    return prog + sep + rest


def _ansi_c(cmd: str, rng: random.Random) -> str | None:
    prog, sep, rest = cmd.partition(" ")
    if not prog.isalnum():
        return None
    return "$'" + "".join(f"\\x{ord(c):02x}" for c in prog) + "'" + sep + rest


def _brace(cmd: str, rng: random.Random) -> str | None:
    prog, sep, rest = cmd.partition(" ")
    if not prog.isalnum() or len(prog) < 3:
        return None
    return prog[:-1] + "{" + prog[-1] + ",}" + sep + rest


def _var_program(cmd: str, rng: random.Random) -> str | None:
    prog, sep, rest = cmd.partition(" ")
    if not prog.isalnum():
        return None
    style = rng.choice(["plain", "braced", "indirect", "case", "append", "declare"])
    if style == "plain":
        return f"p={prog}; $p{sep}{rest}"
    if style == "braced":
        return f"p={prog}; ${{p}}{sep}{rest}"
    if style == "indirect":
        return f"p={prog}; r=p; ${{!r}}{sep}{rest}"
    if style == "case":
        return f"p={prog.upper()}; ${{p,,}}{sep}{rest}"
    if style == "append":
        return f"p={prog[:2]}; p+={prog[2:]}; $p{sep}{rest}"
    return f"declare -l p={prog.upper()}; $p{sep}{rest}"


def _split_var(cmd: str, rng: random.Random) -> str | None:
    if any(c in cmd for c in "'\"$;|&<>(){}\\\n`*?"):
        return None
    style = rng.choice(["space", "ifs"])
    if style == "space":
        return f"x={q(cmd)}; $x"
    return "IFS=,; x=" + q(cmd.replace(" ", ",")) + "; $x"


def _eval(cmd: str, rng: random.Random) -> str | None:
    style = rng.choice(["direct", "var", "indirect"])
    if style == "direct":
        return f"eval {q(cmd)}"
    if style == "var":
        return f'c={q(cmd)}; eval "$c"'
    return f'c={q(cmd)}; n=c; eval "${{!n}}"'


def _shell_c(cmd: str, rng: random.Random) -> str | None:
    sh = rng.choice(["bash", "sh", "dash", "/bin/sh"])
    style = rng.choice(["c", "herestring", "procsub", "heredoc", "pipe"])
    if style == "c":
        return f"{sh} -c {q(cmd)}"
    if style == "herestring":
        return f"{sh} 0<<<{q(cmd)}"
    if style == "procsub":
        return f"bash <(echo {q(cmd)})"
    if style == "heredoc":
        return f"{sh} <<'EOF'\n{cmd}\nEOF"
    return f"echo {q(cmd)} | {sh}"


def _decode(cmd: str, rng: random.Random) -> str | None:
    style = rng.choice(["b64pipe", "b64subst", "b64here", "hex", "printf", "rev"])
    b64 = base64.b64encode(cmd.encode()).decode()
    if style == "b64pipe":
        return f"echo {b64} | base64 -d | bash"
    if style == "b64subst":
        return f'bash -c "$(echo {b64} | base64 --decode)"'
    if style == "b64here":
        return f'eval "$(base64 -d <<< {b64})"'
    if style == "hex":
        return f"echo {cmd.encode().hex()} | xxd -r -p | sh"
    if style == "printf":
        esc = "".join(f"\\x{b:02x}" for b in cmd.encode())
        return f"eval \"$(printf '%b' '{esc}')\""
    if "\n" in cmd:
        return None  # rev reverses each line on its own
    return f"echo {q(cmd[::-1])} | rev | sh"


def _function(cmd: str, rng: random.Random) -> str | None:
    style = rng.choice(["func", "alias", "trap", "subst", "group", "coproc"])
    if style == "func":
        return f"f() {{ {cmd}\n}}; f"
    if style == "alias":
        return f"shopt -s expand_aliases\nalias f={q(cmd)}\nf"
    if style == "trap":
        return f"trap {q(cmd)} EXIT; true"
    if style == "subst":
        return f'echo "$({cmd}\n)"'
    if style == "group":
        return f"( {cmd}\n)"
    return f"coproc {{ {cmd}\n}}; cat <&${{COPROC[0]}}"


def _wrapper(cmd: str, rng: random.Random) -> str | None:
    style = rng.choice(
        ["env", "timeout", "nice", "command", "xargs", "find", "flock", "envS", "nohup", "exec"]
    )
    if style == "env":
        return f"env A=1 bash -c {q(cmd)}"
    if style == "timeout":
        return f"timeout 5 bash -c {q(cmd)}"
    if style == "nice":
        return f"nice -n 1 sh -c {q(cmd)}"
    if style == "command":
        return f"command bash -c {q(cmd)}"
    if style == "xargs":
        return f"printf %s {q(cmd)} | xargs -0 bash -c"
    if style == "find":
        return f"find . -maxdepth 0 -exec sh -c {q(cmd)} \\;"
    if style == "flock":
        return f"flock /tmp/lk -c {q(cmd)}"
    if style == "envS":
        return f"env -S {q('bash -c ' + q(cmd))}"
    if style == "nohup":
        return f"nohup bash -c {q(cmd)} 2>&1; cat nohup.out 2>/dev/null"
    return f"(exec bash -c {q(cmd)})"


def _interp(cmd: str, rng: random.Random) -> str | None:
    style = rng.choice(["python", "perl", "awk", "mawk", "sedE", "make", "gitalias", "tar", "ps4"])
    if style == "python":
        return f"python3 -c {q(f'import os; os.system({cmd!r})')}"
    if style == "perl":
        return f"perl -e {q('system(q(' + cmd + '))')}" if "(" not in cmd else None
    if style in ("awk", "mawk"):
        if '"' in cmd or "\\" in cmd or "\n" in cmd:
            return None
        return f"{style} {q('BEGIN{system(' + chr(34) + cmd + chr(34) + ')}')}"
    if style == "sedE":
        return None if "\n" in cmd else f"echo | sed {q('e ' + cmd)}"
    if style == "make":
        if "\n" in cmd:
            return None  # a recipe is one line per command
        return f"printf 'all:\\n\\t%s\\n' {q(cmd)} > mk; make -s -f mk"
    if style == "gitalias":
        return f"git -c alias.x={q('!' + cmd)} x"
    if style == "tar":
        return (
            "tar cf /dev/null README.md --checkpoint=1 "
            f"--checkpoint-action=exec={q('bash -c ' + q(cmd))}"
        )
    return f"PS4={q('$(' + cmd + ')')} bash -xc :"


def _file(cmd: str, rng: random.Random) -> str | None:
    style = rng.choice(["source", "bash", "exec", "bashenv"])
    if style == "source":
        return f"printf '%s\\n' {q(cmd)} > s.sh; . ./s.sh"
    if style == "bash":
        return f"echo {q(cmd)} > s.sh; bash s.sh"
    if style == "exec":
        return f"printf '#!/bin/sh\\n%s\\n' {q(cmd)} > s.sh; chmod +x s.sh; ./s.sh"
    return f"echo {q(cmd)} > e.sh; BASH_ENV=./e.sh bash -c :"


#: Layers that rewrite the program word (only apply to a plain simple command).
WORD_LAYERS: dict[str, Layer] = {
    "quote": _quote_chars,
    "ansi_c": _ansi_c,
    "brace": _brace,
    "var_program": _var_program,
}
#: Layers that wrap any command line.
LINE_LAYERS: dict[str, Layer] = {
    "split_var": _split_var,
    "eval": _eval,
    "shell": _shell_c,
    "decode": _decode,
    "function": _function,
    "wrapper": _wrapper,
    "interp": _interp,
    "file": _file,
}


def generate(seed: int, count: int) -> Iterator[Candidate]:
    """``count`` candidates per payload, each with one to three layers."""
    rng = random.Random(seed)
    payloads = {**FORBIDDEN, **BENIGN}
    for key, base in payloads.items():
        made = 0
        tries = 0
        while made < count and tries < count * 20:
            tries += 1
            depth = rng.randint(1, 3)
            cmd = base
            used: list[str] = []
            if rng.random() < 0.5:
                name = rng.choice(list(WORD_LAYERS))
                out = WORD_LAYERS[name](cmd, rng)
                if out is not None:
                    cmd, used = out, [name]
            while len(used) < depth:
                name = rng.choice(list(LINE_LAYERS))
                out = LINE_LAYERS[name](cmd, rng)
                if out is None:
                    continue
                cmd = out
                used.append(name)
            made += 1
            yield Candidate(cmd, key, tuple(used))


# -- judging ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Judged:
    candidate: Candidate
    outcome: Outcome
    decision: str  # allow | ask | deny, as `codingcode check --mode bypass` would say
    reason: str


@dataclass
class Report:
    judged: list[Judged]

    @property
    def truly_forbidden(self) -> list[Judged]:
        return [j for j in self.judged if not j.candidate.benign and j.outcome.forbidden]

    @property
    def forbidden_allowed(self) -> list[Judged]:
        return [j for j in self.truly_forbidden if j.decision == "allow"]

    @property
    def benign(self) -> list[Judged]:
        return [j for j in self.judged if j.candidate.benign]

    @property
    def benign_denied(self) -> list[Judged]:
        return [j for j in self.benign if j.decision == "deny"]

    @property
    def benign_asked(self) -> list[Judged]:
        return [j for j in self.benign if j.decision == "ask"]

    def summary(self) -> str:
        b = len(self.benign) or 1
        return (
            f"{len(self.judged)} candidates; truly forbidden {len(self.truly_forbidden)}, "
            f"of them allowed {len(self.forbidden_allowed)}; benign {len(self.benign)}, "
            f"denied {len(self.benign_denied)}, asked {len(self.benign_asked)} "
            f"({100 * len(self.benign_asked) / b:.1f} %)"
        )


def decide_bypass(command: str, project: Path) -> tuple[str, str]:
    """The pipeline's decision for ``execute_command`` in bypass mode (a dry run)."""
    import anyio

    from codingcode.approval.pipeline import ApprovalPipeline, ToolCall
    from codingcode.approval.rules import RuleEngine

    engine = RuleEngine([], project)
    pipeline = ApprovalPipeline(engine.evaluate)
    call = ToolCall("execute_command", {"command": command}, project, mode="bypass")
    decision = anyio.run(lambda: pipeline.decide(call, dry_run=True))
    return decision.decision, decision.reason


def judge(sandbox: Sandbox, candidates: list[Candidate], project: Path) -> Report:
    outcomes = sandbox.run_many([c.command for c in candidates])
    judged = []
    for c, o in zip(candidates, outcomes, strict=True):
        decision, reason = decide_bypass(c.command, project)
        judged.append(Judged(c, o, decision, reason))
    return Report(judged)
