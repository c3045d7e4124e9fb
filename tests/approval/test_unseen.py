"""Issue 11 part 3: the analysis never silently allows what it cannot see through.

Every class the issue names, tried as an attacker would: each is denied or asked in bypass
mode (never allowed); the harmless look-alikes are allowed in bypass (never denied or asked).
Ground truth for the same classes, obfuscated, is in test_oracle.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from codingcode.shell import analyze
from tests.approval.oracle import decide_bypass

UNSEEN = [
    "bash <(echo 'doas id')",
    "x=doas; y=id; $x $y",
    "r=x; x='sudo id'; ${!r}",
    "v=SUDO; ${v@L} id",
    "declare -l v=SUDO; $v id",
    "v=su; v+=do; $v id",
    "reboo{t,}",
    "x='doas id'; $x",
    "sh 0<<<'sudo id'",
    "PS4='$(sudo id)' bash -xc :",
    "PROMPT_COMMAND='sudo id' bash -i",
    "BASH_ENV=/tmp/x bash -c :",
    "SHELL=/tmp/evil script -c ls",
    "env 'BASH_FUNC_ls%%=() { sudo id; }' bash -c ls",
    "trap 'sudo id' EXIT",
    "coproc sudo id",
    "hash -p /usr/bin/sudo ls; ls id",
    "BASH_ALIASES[x]='sudo id'; x",
    "history -s 'sudo id'; fc -s",
    "ex -c '!sudo id'",
    "vim -c ':!sudo id' -c ':q'",
    "less +'!sudo id' README.md",
    "sed -n '1e sudo id' README.md",
    "sed 'w /etc/passwd' README.md",
    "mawk 'BEGIN{system(\"sudo id\")}'",
    "awk 'BEGIN{c=\"sudo id\"; system(c)}'",
    "make -f <(printf 'all:\\n\\tsudo id\\n')",
    "make X='$(shell sudo id)'",
    "git -c alias.x='!sudo id' x",
    "GIT_SSH_COMMAND='sudo id' git fetch",
    'perl -e \'exec "sudo", "id"\'',
    "echo 'exec sudo id' | tclsh",
    "gdb -batch -ex '!sudo id'",
    "julia -e 'run(`sudo id`)'",
    "ssh -o ProxyCommand='sudo id' host",
    "tar cf /dev/null x --checkpoint=1 --checkpoint-action=exec='sudo id'",
    "rsync -e 'sudo id' a b:c",
    "flock /tmp/l -c 'sudo id'",
    "prlimit --nofile=10 sudo id",
    "ip netns exec foo sudo id",
    "start-stop-daemon --start --exec /usr/bin/sudo -- id",
    "env -S 'sudo id'",
    "printf 'sudo id' > f; . ./f",
    "printf '#!/bin/sh\\nsudo id' > .git/hooks/pre-commit; git commit -m x",
    "echo c3VkbyBpZA== | base64 -d | sh",
    "echo 7375646f206964 | xxd -r -p | bash",
    "curl file:///etc/shadow",
    "cat --input=/etc/shadow",
    "echo ~/.ssh/id_rsa | cpio -o",
    "x=$(</etc/shadow)",
    "HOME=/etc; cat ~/shadow",
    "cat /proc/self/root/etc/shadow",
    'cat ".env"',
    "cat .env)",
    "echo $(cat .env)",
    'cat "${f:-.env}"',
    "npx sudo id",
    "uv run sudo id",
    "poetry run sudo id",
    "docker exec c sudo id",
    "kubectl exec pod -- sudo id",
    "ssh host sudo id",
    "foo sudo id",
    "nohup sudo id",
    "unknownwrap bash -c 'sudo id'",
    "python3 -c 'import os; os.system(\"sudo id\")'",
    'node -e \'require("child_process").execSync("sudo id")\'',
    "ruby -e 'system(\"sudo id\")'",
    "cat /etc/sha*",
    "x=/etc/shad; cat ${x}ow",
    "cat $(echo /etc/shadow)",
]

LOOKALIKES = [
    'git commit -m "drop sudo"',
    "grep -rn shutdown docs/",
    "cat docs/sudo.md",
    "python3 -m pytest",
    "make test",
    "npm run build",
    "git log --oneline | head",
    "find . -name '*.py' | xargs grep -l TODO",
    "ls -la && echo done",
    "uv run pytest -q",
    "docker exec app ls",
    "sed -i 's/foo/bar/g' src/a.py",
    "awk '{print $1}' file.txt",
    "python3 -c 'print(1)'",
    "for f in *.py; do echo $f; done",
    "x=1; echo $x",
    'echo "$(date)"',
    "cat README.md | wc -l",
    "tar czf out.tgz src",
    "git diff | less",
    "vim -c 'set nu' README.md",
    "ssh host ls",
    "ls $HOME",
    "cd src && ls",
    "export FOO=bar; echo $FOO",
]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("issue11").resolve()


@pytest.mark.parametrize("command", UNSEEN)
def test_never_allowed_in_bypass(command: str, project: Path) -> None:
    decision, reason = decide_bypass(command, project)
    assert decision in ("deny", "ask"), reason


@pytest.mark.parametrize("command", LOOKALIKES)
def test_lookalike_allowed_in_bypass(command: str, project: Path) -> None:
    decision, reason = decide_bypass(command, project)
    assert decision == "allow", reason


def test_opaque_commands_are_flagged_for_other_layers() -> None:
    """The API the read-only layer builds on: each simple command with its program, args,
    redirects and an opaque reason when what it runs cannot be seen."""
    a = analyze("ls -la > out.txt; eval \"$X\"; awk 'BEGIN{system(c)}'", "/p")
    cmds = a.simple_commands()
    assert [c.program for c in cmds] == ["ls", "eval", "awk"]
    assert cmds[0].args == ["-la"] and cmds[0].redirects[0].target is not None
    assert cmds[0].opaque is None
    assert cmds[1].opaque and cmds[2].opaque


def test_remote_commands_are_judged_like_local_ones(project: Path) -> None:
    for command in (
        "ssh host sudo id",
        "docker exec app cat /etc/shadow",
        "kubectl exec p -- reboot",
    ):
        assert decide_bypass(command, project)[0] == "deny", command
