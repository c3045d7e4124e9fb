"""Issue 11: every command's sandbox masks the secrets of the one list, and an approved call
sees exactly the masked paths it named. Ground truth: marker secrets are planted in a fake
``$HOME`` (outside /tmp, which is private in the sandbox) and in the project, commands run
in a real sandbox, and the test looks at what they could read or write.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
from pathlib import Path

import pytest

from codingcode.capabilities import CapabilitySet
from codingcode.sandbox.masks import MaskSpec
from codingcode.sandbox.policy import SandboxPolicy, with_deny_read
from codingcode.sandbox.secrets import DEFAULT_MASKS

from .conftest import BACKENDS, Box, out

PY = sys.executable
HOME_MASKS = [m.pattern for m in DEFAULT_MASKS if m.pattern.startswith("~/")]
STORE_DIRS = {
    ".ssh",
    ".aws",
    ".azure",
    "gcloud",
    ".kube",
    "gh",
    ".gnupg",
    ".password-store",
    "keyrings",
    "kwalletd",
}
#: Host files of the /etc/*shadow* default (only those present here can be checked).
SHADOWS = sorted(
    str(p) for p in Path("/etc").glob("*shadow*") if p.is_file() and p.stat().st_size > 0
)


@pytest.fixture
def token() -> str:
    return "marker-" + secrets.token_hex(8)


@pytest.fixture
def home(outside: Path, token: str) -> Path:
    """A fake home with every default credential store planted (files hold ``token``)."""
    home = outside / "home"
    for pattern in HOME_MASKS:
        path = home / pattern[2:]
        if path.name not in STORE_DIRS:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(token)
        else:
            path.mkdir(parents=True, exist_ok=True)
            (path / "secret").write_text(token)
    (home / ".gitconfig").write_text("[user]\n\tname = Sandbox Tester\n")
    return home


def planted(home: Path, pattern: str) -> Path:
    """The file that holds the marker for one home pattern."""
    path = home / pattern[2:]
    return path if path.is_file() else path / "secret"


@pytest.fixture
def envfiles(project: Path, token: str) -> dict[str, Path]:
    files = {
        ".env": project / ".env",
        ".env.local": project / ".env.local",
        "sub/.env": project / "sub" / ".env",
        "a/b/c/.env.production": project / "a" / "b" / "c" / ".env.production",
        ".envrc": project / ".envrc",
        ".env~": project / ".env~",
        "deploy/prod.env": project / "deploy" / "prod.env",
    }
    for path in files.values():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"API_KEY={token}\n")
    (project / ".env.example").write_text("API_KEY=template\n")
    (project / "example.env").write_text("API_KEY=template\n")
    return files


def run(box: Box, command: str, home: Path, caps: CapabilitySet | None = None) -> str:
    result = box.run(command, env={"HOME": str(home)}, capabilities=caps)
    return out(result)


# -- part 1: masked for every command -----------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("pattern", HOME_MASKS)
def test_home_credential_store_is_masked(
    make_box, backend: str, pattern: str, home: Path, token: str
) -> None:
    box: Box = make_box(backend)
    target = planted(home, pattern)
    text = run(
        box,
        f"cat {target}; ls -a {target.parent}; {PY} -c 'print(open({str(target)!r}).read())'",
        home,
    )
    assert token not in text
    assert target.read_text() == token  # the host file itself is untouched


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "name",
    [
        ".env",
        ".env.local",
        "sub/.env",
        "a/b/c/.env.production",
        ".envrc",
        ".env~",
        "deploy/prod.env",
    ],
)
def test_project_env_files_are_masked(
    make_box, backend: str, name: str, envfiles: dict[str, Path], home: Path, token: str
) -> None:
    box: Box = make_box(backend)
    text = run(box, f"cat {name}; grep -r API_KEY . ; {PY} -c 'print(open({name!r}).read())'", home)
    assert token not in text
    assert "template" in text  # .env.example stays readable (grep -r reaches it)


@pytest.mark.parametrize("backend", BACKENDS)
def test_env_masks_cannot_be_removed_or_replaced(
    make_box, backend: str, envfiles: dict[str, Path], home: Path, token: str
) -> None:
    box: Box = make_box(backend)
    text = run(box, "mv .env stolen; cp .env copy; rm -f .env; cat stolen copy .env", home)
    assert token not in text
    assert envfiles[".env"].read_text() == f"API_KEY={token}\n"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.skipif(not SHADOWS, reason="no readable /etc/*shadow* file on this host")
@pytest.mark.parametrize("path", SHADOWS or ["/etc/shadow"])
def test_shadow_files_and_backups_are_unreadable(make_box, backend: str, path: str) -> None:
    box: Box = make_box(backend)
    result = box.run(f"wc -c < {path}")
    text = result.stdout.text().strip()
    assert result.exit_code != 0 or text == "0", (path, out(result))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_and_python_keep_working(make_box, backend: str, home: Path, project: Path) -> None:
    box: Box = make_box(backend)
    result = box.run(
        "git init -q . && git config --global user.name && "
        f"{PY} -c 'import json, ssl; print(\"py-ok\")' && whoami && "
        "git -c user.email=t@example.invalid commit -q --allow-empty -m x && echo git-ok",
        env={"HOME": str(home)},
    )
    text = out(result)
    assert result.exit_code == 0, text
    assert "Sandbox Tester" in text  # ~/.gitconfig stays readable
    assert "py-ok" in text and "git-ok" in text


@pytest.mark.parametrize("backend", BACKENDS)
def test_deny_read_setting_masks_paths_and_globs(
    make_box, backend: str, project: Path, outside: Path, home: Path, token: str
) -> None:
    (project / "secrets").mkdir()
    (project / "secrets" / "db.txt").write_text(token)
    (project / "certs" / "x").mkdir(parents=True)
    (project / "certs" / "x" / "server.pem").write_text(token)
    loose = outside / "loose.key"
    loose.write_text(token)
    (project / "ok.txt").write_text("visible")
    box: Box = make_box(
        backend,
        deny_read=(
            MaskSpec("secrets/**", "sandbox.denyRead in user settings"),
            MaskSpec("**/*.pem", "sandbox.denyRead in user settings"),
            MaskSpec(str(loose), "sandbox.denyRead in user settings"),
        ),
    )
    text = run(box, f"cat secrets/db.txt certs/x/server.pem {loose} ok.txt", home)
    assert token not in text
    assert "visible" in text


# -- part 2: approved means exactly that, for that call -----------------------------------------


def caps(read: list[Path] = [], write: list[Path] = []) -> CapabilitySet:  # noqa: B006
    return CapabilitySet(read_paths=frozenset(read), write_paths=frozenset(write))


@pytest.mark.parametrize("backend", BACKENDS)
def test_approved_read_shows_exactly_that_file_read_only(
    make_box, backend: str, project: Path, envfiles: dict[str, Path], home: Path, token: str
) -> None:
    box: Box = make_box(backend)
    grant = caps(read=[project / ".env"])
    assert token in run(box, "cat .env", home, grant)
    # ... and nothing more: the other .env files stay masked in that same call.
    text = run(box, "cat sub/.env .env.local a/b/c/.env.production", home, grant)
    assert token not in text
    # read-only: the call may not change it.
    run(box, "echo overwritten > .env; echo more >> .env", home, grant)
    assert envfiles[".env"].read_text() == f"API_KEY={token}\n"
    # The next call, without the capability, is masked again.
    assert token not in run(box, "cat .env", home)


@pytest.mark.parametrize("backend", BACKENDS)
def test_approved_write_may_write_that_file(
    make_box, backend: str, project: Path, envfiles: dict[str, Path], home: Path, token: str
) -> None:
    box: Box = make_box(backend)
    grant = caps(write=[project / ".env"])
    run(box, "echo EXTRA=1 >> .env", home, grant)
    assert envfiles[".env"].read_text() == f"API_KEY={token}\nEXTRA=1\n"
    assert envfiles["sub/.env"].read_text() == f"API_KEY={token}\n"


@pytest.mark.parametrize("backend", BACKENDS)
def test_approved_file_inside_masked_dir_shows_only_that_file(
    make_box, backend: str, home: Path, token: str
) -> None:
    ssh = home / ".ssh"
    (ssh / "id_named").write_text("named-" + token)
    box: Box = make_box(backend)
    grant = caps(read=[ssh / "id_named"])
    text = run(box, f"cat {ssh}/id_named; echo; cat {ssh}/secret", home, grant)
    assert "named-" + token in text
    assert text.count(token) == 1
    listed = box.run(f"ls -A {ssh}", env={"HOME": str(home)}, capabilities=grant)
    assert listed.stdout.text().split() == ["id_named"]  # the other key is not even listed
    run(box, f"echo pwned > {ssh}/id_named; touch {ssh}/new", home, grant)
    assert (ssh / "id_named").read_text() == "named-" + token
    assert not (ssh / "new").exists()


@pytest.mark.parametrize("backend", BACKENDS)
def test_naming_a_parent_exposes_nothing(
    make_box, backend: str, project: Path, envfiles: dict[str, Path], home: Path, token: str
) -> None:
    box: Box = make_box(backend)
    grant = caps(read=[project, project / "sub", home])
    text = run(box, f"grep -r API_KEY . ; cat {home}/.ssh/secret", home, grant)
    assert token not in text


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_symlink_name_does_not_expose_its_target(
    make_box, backend: str, project: Path, envfiles: dict[str, Path], home: Path, token: str
) -> None:
    (project / "innocent.txt").symlink_to(project / ".env")
    os.symlink(home / ".ssh", project / "keys")
    box: Box = make_box(backend)
    grant = caps(read=[project / "innocent.txt", project / "keys" / "secret"])
    text = run(box, "cat innocent.txt keys/secret", home, grant)
    assert token not in text


@pytest.mark.parametrize("backend", BACKENDS)
def test_deny_rule_masks_are_never_exposed(
    make_box, backend: str, project: Path, home: Path, token: str
) -> None:
    (project / "vault").mkdir()
    (project / "vault" / "key").write_text(token)
    policy = with_deny_read(
        SandboxPolicy(project),
        [MaskSpec(f"{project}/vault/**", "deny rule read_file(vault/**)", exposable=False)],
    )
    box: Box = make_box(backend, deny_read=policy.deny_read)
    grant = caps(read=[project / "vault", project / "vault" / "key"])
    assert token not in run(box, "cat vault/key", home, grant)


# -- seccomp: R4 (setuid/setgid bits) ------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "command",
    [
        "chmod u+s f",
        "chmod g+s f",
        "chmod 4755 f",
        "chmod 2755 d",
        f"{PY} -c 'import os; os.chmod(\"f\", 0o4755)'",
        f"{PY} -c 'import os; fd = os.open(\"f\", os.O_RDONLY); os.fchmod(fd, 0o2755)'",
        f'{PY} -c \'import os; os.chmod("f", 0o6755, dir_fd=os.open(".", os.O_RDONLY))\'',
    ],
)
def test_setuid_and_setgid_bits_are_refused(
    make_box, backend: str, project: Path, command: str
) -> None:
    (project / "f").write_text("#!/bin/sh\n")
    (project / "d").mkdir()
    box: Box = make_box(backend)
    result = box.run(command)
    assert result.exit_code != 0, out(result)
    assert "not permitted" in out(result).lower()
    for name in ("f", "d"):
        assert (project / name).stat().st_mode & 0o6000 == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_ordinary_chmod_still_works(make_box, backend: str, project: Path) -> None:
    (project / "f").write_text("#!/bin/sh\necho ran\n")
    box: Box = make_box(backend)
    result = box.run("chmod 755 f && chmod u-x,g+w f && chmod +x f && ./f")
    assert result.exit_code == 0, out(result)
    assert "ran" in out(result)


@pytest.mark.parametrize("backend", BACKENDS)
def test_reboot_and_kexec_are_refused(make_box, backend: str) -> None:
    code = (
        "import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); "
        "nr = {'x86_64': (169, 246, 320), 'aarch64': (142, 104, 294)}[os.uname().machine]; "
        "print([(libc.syscall(n, 0, 0, 0, 0), ctypes.get_errno()) for n in nr])"
    )
    box: Box = make_box(backend)
    result = box.run(f'{PY} -c "{code}"')
    assert result.exit_code == 0, out(result)
    assert result.stdout.text().strip() == "[(-1, 1), (-1, 1), (-1, 1)]"  # EPERM each
