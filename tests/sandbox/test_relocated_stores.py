"""A credential store the environment moved out of the home (``XDG_CONFIG_HOME``,
``KUBECONFIG``, ``GNUPGHOME``, ``DOCKER_CONFIG``, ...) is masked where it is.

Ground truth: markers planted at the relocated places (outside /tmp), the variables set for
the command, the real sandbox; the markers must not be printed. Before the fix ``gh``'s
tokens under ``$XDG_CONFIG_HOME/gh`` and the file ``$KUBECONFIG`` named were readable.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from .conftest import BACKENDS, Box, out

#: (variable, its value relative to the scratch dir, the secret file relative to that dir)
CASES = [
    ("XDG_CONFIG_HOME", "xdg", "xdg/gh/hosts.yml"),
    ("GH_CONFIG_DIR", "ghdir", "ghdir/hosts.yml"),
    ("KUBECONFIG", "kube/one:kube/two", "kube/two"),
    ("AWS_SHARED_CREDENTIALS_FILE", "aws/creds", "aws/creds"),
    ("GNUPGHOME", "gpg", "gpg/private-keys-v1.d/key"),
    ("DOCKER_CONFIG", "docker", "docker/config.json"),
    ("NPM_CONFIG_USERCONFIG", "npm/rc", "npm/rc"),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("var", "value", "secret"), CASES)
def test_relocated_store_is_masked(
    make_box, backend: str, outside: Path, var: str, value: str, secret: str
) -> None:
    token = "marker-" + secrets.token_hex(8)
    target = outside / secret
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(token)
    home = outside / "home"
    home.mkdir()
    box: Box = make_box(backend)
    absolute = ":".join(str(outside / v) for v in value.split(":"))
    text = out(
        box.run(f"cat {target}; grep -r marker {outside}", env={"HOME": str(home), var: absolute})
    )
    assert token not in text
    assert target.read_text() == token


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_relocation_to_the_root_masks_nothing_more(make_box, backend: str, outside: Path) -> None:
    (outside / "plain.txt").write_text("visible")
    box: Box = make_box(backend)
    text = out(
        box.run(f"cat {outside / 'plain.txt'}", env={"GNUPGHOME": "/", "XDG_CONFIG_HOME": "/"})
    )
    assert "visible" in text
