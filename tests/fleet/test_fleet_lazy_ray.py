"""The Ray extra stays optional: nothing but the ray engine imports it."""

from __future__ import annotations

import subprocess
import sys


def imported_by(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys; print(' '.join(sys.modules))"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return set(out.stdout.split())


def test_start_up_and_the_local_engine_do_not_import_ray() -> None:
    modules = imported_by(
        "from codingcode.cli import _register_commands; _register_commands()\n"
        "import codingcode.fleet.run, codingcode.fleet.engines.local, codingcode.fleet.report"
    )
    assert "codingcode.fleet.run" in modules
    assert not {m for m in modules if m == "ray" or m.startswith("ray.")}


def test_fleet_help_does_not_import_ray() -> None:
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "codingcode", "fleet", "run", "--help"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert out.returncode == 0 and "--engine" in out.stdout
    names = {line.rsplit("|", 1)[-1].strip() for line in out.stderr.splitlines()}
    assert not {n for n in names if n == "ray" or n.startswith("ray.")}
