"""Ground truth for the GTFOBins techniques that used to be allowed (issue 11).

Each case is a working form of a technique from tests/approval/corpus/gtfobins.jsonl that the
rules once let through: run in the oracle's throwaway bubblewrap (tests/approval/oracle.py), it
really runs ``sudo``, or really reads or copies the marker ``/etc/shadow``; and ``check`` in
bypass mode denies or asks it. Where the program is not installed here the decision is still
checked and the run is skipped, saying so.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.approval import oracle
from tests.approval.conftest import make_corpus_project

#: (id, the program it needs, command). Payloads reach the shell the technique starts.
CASES = [
    # a shell started on another descriptor (`sh 0<&2`) reads whatever that descriptor is;
    # the grammar used to give the `0` to the command as an argument
    (
        "tar-I-fd2",
        "tar",
        "echo 'sudo id' | tar xf /dev/null -I '/bin/sh -c \"/bin/sh 0<&2 1>&2\"' 2<&0",
    ),
    (
        "split-filter-fd2",
        "split",
        "echo 'cat /etc/shadow > leak' | split --filter='/bin/sh -i 0<&2 1>&2' /etc/hosts 2<&0",
    ),
    ("split-filter", "split", "split --filter='sudo id' /etc/hosts"),
    ("sh-fd2", "sh", "echo 'sudo id' | sh -c 'sh 0<&2' 2<&0"),
    # words after a redirect belong to the command (the grammar put them in the redirect,
    # and hung the redirect on the whole list or pipeline)
    ("sh-after-redirect", "sh", "sh 2>/dev/null -c 'sudo id'"),
    ("list-sh-after-redirect", "sh", "true && sh 2>/dev/null -c 'sudo id'"),
    ("pipe-cat-after-redirect", "cat", "echo x | cat 2>/dev/null /etc/shadow"),
    ("cat-after-redirect", "cat", "cat 2>/dev/null /etc/shadow"),
    ("cat-after-heredoc", "cat", "cat <<EOF /etc/shadow\nx\nEOF"),
    ("jshell-script-arg", "jshell", "jshell 2>&1 /etc/shadow"),
    ("jshell-stdin", "jshell", "echo '/open /etc/shadow' | jshell"),
    ("terraform-console", "terraform", "echo 'file(\"/etc/shadow\")' | terraform console"),
    # `xargs -a FILE`: the items come from FILE and stdin goes to the command
    ("xargs-arg-file", "xargs", "echo 'sudo id' | xargs -a /dev/null sh"),
    ("m4-esyscmd", "m4", "echo 'esyscmd(sudo id)' | m4"),
    ("m4-esyscmd-fd2", "m4", "echo 'sudo id' | m4 2<&0 <<<'esyscmd(/bin/sh 0<&2 1>&2)'"),
    ("emacs-shell-command", "emacs", "emacs -Q --batch --eval '(shell-command \"sudo id\")'"),
    ("emacs-read", "emacs", "emacs -Q --batch --eval '(insert-file-contents \"/etc/shadow\")'"),
]

#: Decisions only: what these do cannot happen in the throwaway sandbox (no terminal, no
#: systemd, no file but the marker under /etc), so they are checked by their decision.
DECISION_ONLY = [
    "echo x | xargs -o -a /dev/null /bin/sh",  # the shell reads the terminal
    "echo 'cat /etc/shadow' | emacs -Q -nw --eval '(term \"/bin/sh\")'",
    "echo 'cat /etc/shadow' | PAGER='/bin/sh -c \"exec sh 0<&1\"' git -p help",
    "echo x | msgfilter -P /bin/sh -c '/bin/sh 0<&2 1>&2; kill $PPID'",
    "echo 'cat /etc/shadow' | rsync -e '/bin/sh -c \"/bin/sh 0<&2 1>&2\"' x:x",
    "printf '[Service]\\nExecStart=/bin/sh -c id\\n' > x.service; systemctl link $PWD/x.service",
    "printf '[Service]\\nExecStart=/bin/true\\n' > x.service\nsystemctl enable --now x.service",
    "cat /etc/shadow.bak",
    "ssh-copy-id -f -i /etc/shadow.pub user@127.0.0.1",
    'dotnet fsi\nSystem.IO.File.ReadAllText(".env");;',
]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_corpus_project(tmp_path_factory.mktemp("gtfo-truth") / "project").resolve()


@pytest.fixture(scope="module")
def sandbox() -> Iterator[oracle.Sandbox | None]:
    if not oracle.available():
        yield None
        return
    box = oracle.Sandbox()
    try:
        yield box
    finally:
        box.close()


@pytest.mark.parametrize(("program", "command"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_technique_really_works_and_is_not_allowed(
    program: str, command: str, project: Path, sandbox: oracle.Sandbox | None
) -> None:
    decision, reason = oracle.decide_bypass(command, project)
    assert decision in ("deny", "ask"), (command, reason)
    if sandbox is None:
        pytest.skip("bubblewrap is not usable here: decision checked, not the run")
    if shutil.which(program) is None:
        pytest.skip(f"{program} is not installed: decision checked, not the run")
    outcome = sandbox.run(command, timeout=60)
    assert outcome.forbidden, (command, outcome.output)


@pytest.mark.parametrize("command", DECISION_ONLY)
def test_techniques_that_need_a_terminal_or_systemd_are_not_allowed(
    command: str, project: Path
) -> None:
    decision, reason = oracle.decide_bypass(command, project)
    assert decision in ("deny", "ask"), (command, reason)


@pytest.mark.parametrize(
    "command",
    [
        "ls 2>/dev/null src",
        "pytest -q 2>&1 tests/",
        "echo 'drop 0<&2' > notes.txt",
        "ls | xargs -n 1 wc -l",
        "xargs -a files.txt wc -l",
        "emacs --batch --eval '(message \"hi\")'",
        "emacs README.md",
        "split -l 100 README.md part_",
        "systemctl status nginx",
        "systemctl --user restart my-app.service",
    ],
)
def test_everyday_lookalikes_stay_allowed(command: str, project: Path) -> None:
    decision, reason = oracle.decide_bypass(command, project)
    assert decision == "allow", (command, reason)
