"""Backend choice: the strongest that works, the user's explicit choice, or a refusal."""

from __future__ import annotations

from pathlib import Path

import pytest

from codingcode.config import Scope
from codingcode.errors import ErrorKind
from codingcode.sandbox.backends import SandboxError
from codingcode.sandbox.policy import BackendChoice, SandboxEntry, SandboxMode, SandboxPolicy
from codingcode.sandbox.seccomp import build_filter, socket_families
from codingcode.sandbox.service import SandboxService

from .conftest import BWRAP, needs_bwrap, needs_landlock


def plan(service: SandboxService, project: Path) -> list[str]:
    p = service.plan(["true"], cwd=project, env={"HOME": str(project)})
    p.close_fds()
    return p.argv


def test_fail_closed_without_any_backend(project: Path) -> None:
    service = SandboxService(SandboxPolicy(project), bwrap=None, landlock_unavailable="no Landlock")
    with pytest.raises(SandboxError) as info:
        plan(service, project)
    assert info.value.kind is ErrorKind.DENIED
    message = info.value.message
    assert "Command not run" in message and "apt-get install bubblewrap" in message
    assert '"backend": "none"' in message


def test_explicit_bubblewrap_is_never_replaced(project: Path) -> None:
    policy = SandboxPolicy(project, backend=BackendChoice.BUBBLEWRAP)
    with pytest.raises(SandboxError, match="sandbox.backend is 'bubblewrap' but bubblewrap"):
        plan(SandboxService(policy, bwrap=None), project)


@needs_landlock
def test_auto_falls_back_to_landlock(project: Path) -> None:
    service = SandboxService(SandboxPolicy(project), bwrap=None)
    assert service.backend().name == "landlock"
    assert "codingcode.sandbox.landlock_exec" in " ".join(plan(service, project))
    service.close()


@needs_bwrap
def test_auto_prefers_bubblewrap(project: Path) -> None:
    service = SandboxService(SandboxPolicy(project), bwrap=BWRAP)
    argv = plan(service, project)
    assert argv[0] == BWRAP and argv[-2:] == ["--", "true"]
    for flag in (
        "--unshare-pid",
        "--unshare-net",
        "--die-with-parent",
        "--new-session",
        "--disable-userns",
    ):
        assert flag in argv
    service.close()


@pytest.mark.parametrize(
    ("policy_kwargs", "field"),
    [({"backend": BackendChoice.NONE}, "backend"), ({"mode": SandboxMode.OFF}, "mode")],
)
def test_uncontained_runs_say_so(project: Path, policy_kwargs: dict, field: str) -> None:
    entry = SandboxEntry(field, "x", Scope.USER, Path("/home/u/.config/codingcode/settings.json"))
    policy = SandboxPolicy(project, entries=(entry,), **policy_kwargs)
    service = SandboxService(policy, bwrap=None, landlock_unavailable="none here")
    p = service.plan(["true"], cwd=project, env={})
    assert p.argv == ["true"]
    assert "NONE" in p.notice and "without any containment" in p.notice
    assert "user settings /home/u/.config/codingcode/settings.json" in p.notice


def test_seccomp_program_is_well_formed() -> None:
    for network in (True, False):
        program = build_filter(socket_families(network=network, private_netns=not network))
        assert len(program) % 8 == 0 and 8 < len(program) // 8 < 4096


@needs_bwrap
@pytest.mark.anyio
async def test_a_masked_file_removed_while_the_sandbox_is_set_up_does_not_fail_the_command(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between the plan (the project's .env is there: masked) and bubblewrap's set-up, the
    file goes: bubblewrap cannot mount over it and runs nothing. The command is planned
    again and runs once; a command's own failure is never run twice."""
    from codingcode import process

    secret = project / ".env"
    secret.write_text("TOKEN=1\n")
    service = SandboxService(
        SandboxPolicy(project, mode=SandboxMode.READ_ONLY, backend=BackendChoice.BUBBLEWRAP),
        bwrap=BWRAP,
    )
    real = process.plan_launch
    plans: list[object] = []

    def removed_after_planning(*args: object, **kwargs: object) -> process.LaunchPlan:
        made = real(*args, **kwargs)  # type: ignore[arg-type]
        plans.append(made)
        secret.unlink(missing_ok=True)
        return made

    monkeypatch.setattr(process, "plan_launch", removed_after_planning)
    ran = await process.run_command(["echo", "ran"], cwd=project, timeout_s=30, launcher=service)
    assert ran.exit_code == 0 and ran.stdout.text().strip() == "ran", ran.stderr.text()
    assert len(plans) == 2

    # A command that fails on its own, even in bubblewrap's words, runs once.
    def counted(*args: object, **kwargs: object) -> process.LaunchPlan:
        plans.append(made := real(*args, **kwargs))  # type: ignore[arg-type]
        return made

    monkeypatch.setattr(process, "plan_launch", counted)
    plans.clear()
    secret.write_text("TOKEN=1\n")
    lookalike = 'echo "bwrap: Can\'t create file at $PWD/.env: gone" >&2; exit 1'
    failed = await process.run_command(
        ["sh", "-c", lookalike], cwd=project, timeout_s=30, launcher=service
    )
    assert failed.exit_code == 1 and len(plans) == 1
