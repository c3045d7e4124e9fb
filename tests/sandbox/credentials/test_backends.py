"""Both backends: a masked variable holds its placeholder, a denied one is gone, a masked
file is its sentinel copy under bubblewrap and hidden under Landlock (which cannot mount
one); nothing of the real values is printed."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codingcode.sandbox.credentials.settings import CredentialSpec
from tests.sandbox.conftest import BACKENDS, out

REAL = "glpat-" + "RealGitlabToken0123"
DENIED = "denied-value-9876543210"
FILE_TOKEN = "ghp_" + "FileTokenRealValue" * 2 + "q1"


@pytest.fixture
def home() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="codingcode-creds-home-", dir="/var/tmp")).resolve()
    (path / ".git-credentials").write_text(f"https://u:{FILE_TOKEN}@github.com\n")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_placeholders_under_each_backend(backend: str, make_box: Any, home: Path) -> None:
    box = make_box(
        backend,
        credentials=(
            CredentialSpec("env", "GL_TOKEN", "mask", ("gitlab.com",)),
            CredentialSpec("env", "OTHER_VALUE", "deny"),
            CredentialSpec("file", "~/.git-credentials", "mask", ("github.com",)),
        ),
        tls_terminate=True,
    )
    r = box.run(
        'printf "%s|%s|" "$GL_TOKEN" "${OTHER_VALUE-gone}"; cat ~/.git-credentials',
        env={"HOME": str(home), "GL_TOKEN": REAL, "OTHER_VALUE": DENIED},
    )
    text = out(r)
    for real in (REAL, DENIED, FILE_TOKEN):
        assert real not in text
    token, other, rest = text.split("|", 2)
    assert token.startswith("glpat-") and len(token) == len(REAL) and token != REAL
    assert other == "gone"
    if backend == "bubblewrap":
        assert rest.startswith("https://u:ghp_") and len(rest.strip()) == len(
            f"https://u:{FILE_TOKEN}@github.com"
        )
    else:
        assert "github.com" not in rest  # hidden: Landlock cannot show a sentinel copy
    assert os.path.exists(home / ".git-credentials")


@pytest.mark.parametrize("backend", BACKENDS[:1])
def test_a_project_env_file_masked_as_a_sentinel_copy(backend: str, make_box: Any) -> None:
    """A relative path is the project's: ``.env`` shown with its secrets as placeholders,
    its other lines as they are."""
    box = make_box(backend, credentials=(CredentialSpec("file", ".env", "mask"),))
    (box.project / ".env").write_text(
        f"DEBUG=1\nSECRET_KEY={REAL}\nDATABASE_URL=postgres://app:{DENIED}@db:5432/app\n"
    )
    r = box.run("cat .env")
    text = out(r)
    assert REAL not in text and DENIED not in text
    lines = text.splitlines()
    assert lines[0] == "DEBUG=1"
    assert lines[1].startswith("SECRET_KEY=glpat-") and len(lines[1]) == len(f"SECRET_KEY={REAL}")
    assert lines[2].startswith("DATABASE_URL=postgres://app:") and lines[2].endswith("@db:5432/app")


@pytest.mark.parametrize("backend", BACKENDS[:1])
def test_a_sentinel_inside_a_masked_directory(backend: str, make_box: Any, home: Path) -> None:
    """``~/.config/gh`` is masked whole; the gh preset's hosts.yml is shown there as its
    sentinel copy, alone."""
    gh = home / ".config" / "gh"
    gh.mkdir(parents=True)
    token = "gho_" + "GhCliRealToken" * 3
    (gh / "hosts.yml").write_text(f"github.com:\n    user: a\n    oauth_token: {token}\n")
    (gh / "config.yml").write_text("git_protocol: https\n")
    box = make_box(backend, credentials=(CredentialSpec("file", "~/.config/gh/hosts.yml", "mask"),))
    r = box.run("ls ~/.config/gh; cat ~/.config/gh/hosts.yml", env={"HOME": str(home)})
    text = out(r)
    assert token not in text
    assert text.splitlines()[0] == "hosts.yml"
    assert "oauth_token: gho_" in text and "user: a" in text
