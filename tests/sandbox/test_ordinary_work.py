"""Containment must not get in the way of the work: build, test, commit, install."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import shutil
import sys
import zipfile
from pathlib import Path

import pytest

from codingcode.sandbox.policy import Network

from .conftest import BACKENDS, Box, out

PY = sys.executable
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.mark.parametrize("backend", BACKENDS)
def test_build_and_run_tests(make_box, backend: str, project: Path) -> None:
    (project / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (project / "test_calc.py").write_text(
        "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    (project / "Makefile").write_text("build:\n\tmkdir -p build && cp calc.py build/\n")
    box: Box = make_box(backend)
    build = "make build" if shutil.which("make") else "mkdir -p build && cp calc.py build/"
    result = box.run(
        f"{build} && {PY} -m compileall -q . && {PY} -m pytest -q -p no:cacheprovider test_calc.py",
        timeout_s=60,
    )
    assert result.exit_code == 0, out(result)
    assert "1 passed" in result.stdout.text()
    assert (project / "build" / "calc.py").exists()


@needs_git
@pytest.mark.parametrize("backend", BACKENDS)
def test_git_init_and_commit(make_box, backend: str, project: Path) -> None:
    (project / "a.txt").write_text("hello\n")
    box: Box = make_box(backend)
    ident = "-c user.name=t -c user.email=t@example.com"
    result = box.run(
        f"git init -q && git add a.txt && git {ident} commit -qm first && git log --oneline"
    )
    assert result.exit_code == 0, out(result)
    assert "first" in result.stdout.text()
    # A second call: .git now exists, its hooks and config are protected, and commits still work.
    (project / "a.txt").write_text("changed\n")
    result = box.run(f"git {ident} commit -qam second && git log --oneline | wc -l")
    assert result.exit_code == 0, out(result)
    assert result.stdout.text().strip() == "2"


def build_wheel(where: Path) -> Path:
    """A minimal pure-Python wheel, built by hand (no network, no build backend)."""
    name, version = "ccdemo", "0.1"
    files = {
        "ccdemo/__init__.py": b"ANSWER = 42\n",
        f"{name}-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{name}-{version}.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{name}-{version}.dist-info/RECORD,,")
    wheel = where / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, data in files.items():
            zf.writestr(path, data)
        zf.writestr(f"{name}-{version}.dist-info/RECORD", "\n".join(record) + "\n")
    return wheel


@pytest.mark.skipif(
    importlib.util.find_spec("ensurepip") is None, reason="this Python cannot make venvs with pip"
)
@pytest.mark.parametrize("backend", BACKENDS)
def test_pip_install_into_a_project_venv(make_box, backend: str, project: Path) -> None:
    """With network allowed; the package comes from a local wheel so the test needs no PyPI."""
    wheel = build_wheel(project)
    box: Box = make_box(backend, network=Network.ALLOW)
    result = box.run(
        f"{PY} -m venv .venv && .venv/bin/python -m pip install -q --no-index "
        f"--disable-pip-version-check {wheel.name} && .venv/bin/python -c 'import ccdemo; print(ccdemo.ANSWER)'",
        timeout_s=120,
    )
    assert result.exit_code == 0, out(result)
    assert result.stdout.text().strip().endswith("42")
