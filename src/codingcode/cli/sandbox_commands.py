"""``codingcode sandbox status`` (each guarantee, checked live) and ``sandbox run -- CMD``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from codingcode.cli.tool_commands import ProjectOption, project_dir

if TYPE_CHECKING:
    from codingcode.config import Settings
    from codingcode.sandbox.service import SandboxService

sandbox_app = typer.Typer(
    help="The OS sandbox every command runs in: check it, or run one command inside it.",
    no_args_is_help=True,
)

_MARKS = {True: "yes", False: "NO ", None: "off"}


def _service(project: Path, settings: Settings) -> SandboxService:
    from codingcode.approval.capabilities import deny_rule_masks
    from codingcode.approval.rules import load_policy
    from codingcode.config import untrusted_note
    from codingcode.sandbox.policy import load_policy_with_ignored, with_deny_read
    from codingcode.sandbox.service import SandboxService

    policy, ignored = load_policy_with_ignored(project, settings)
    if ignored:
        typer.echo(untrusted_note([w.describe() for w in ignored], project), err=True)
    # The user's deny rules on read paths are masks too, as in every session.
    rules = load_policy(settings).rules
    return SandboxService.from_policy(with_deny_read(policy, deny_rule_masks(rules, project)))


def _credentials(service: SandboxService) -> dict[str, Any]:
    """The masked credentials in effect and the ready-made entries (described, never read)."""
    from codingcode.sandbox.credentials.mounts import describe
    from codingcode.sandbox.credentials.settings import PRESETS

    policy = service.policy
    on = {e.value for e in policy.entries if e.field == "credentials.presets"}
    return {
        "tlsTerminate": policy.tls_terminate,
        "in_effect": describe(policy.credentials, tls_terminate=policy.tls_terminate),
        "presets": [
            {"name": p.name, "what": p.what, "on": p.name in on, "limit": p.limit}
            for p in PRESETS.values()
        ],
    }


def _auto_allow(service: SandboxService, settings: Settings) -> str:
    """The ``approvals.autoAllowSandboxed`` setting, and whether it applies here."""
    from codingcode.approval.setup import approvals_settings, sandbox_fully_contains

    if approvals_settings(settings).get("autoAllowSandboxed") is not True:
        return "off (approvals.autoAllowSandboxed)"
    if sandbox_fully_contains(service):
        return "on: commands the sandbox fully contains run unasked"
    return "set, but not in effect: the sandbox is off, online or writes outside the project"


@sandbox_app.command("status")
def status_command(
    project: ProjectOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Show the backend in use and check each guarantee live on this machine."""
    import json

    import anyio

    from codingcode.config import load_settings
    from codingcode.sandbox.probes import check_guarantees

    root = project_dir(project)
    settings = load_settings(root)  # once for the whole report
    service = _service(root, settings)
    try:
        report = anyio.run(check_guarantees, service)
    finally:
        service.close()
    if as_json:
        data = report.as_json()
        data["auto_allow_sandboxed"] = _auto_allow(service, settings)
        data["credentials"] = _credentials(service)
        typer.echo(json.dumps(data, indent=2))
    else:
        p = report.policy
        typer.echo(f"backend: {report.backend}")
        roots = ", ".join(map(str, p.writable_roots)) or "none"
        typer.echo(
            f"policy:  mode {p.mode.value}, network {p.network.value}, "
            f"backend setting {p.backend.value}, extra writable roots: {roots}"
        )
        typer.echo(f"auto-allow when sandboxed: {_auto_allow(service, settings)}")
        if report.error:
            typer.echo(f"error:   {report.error}")
        for check in report.checks:
            typer.echo(f"  [{_MARKS[check.enforced]}] {check.title}")
            for detail in check.details:
                typer.echo(f"        - {detail}")
        if report.masks:
            typer.echo("masks (each probed live; [ - ] nothing to probe on this machine):")
        for mask in report.masks:
            mark = "-  " if mask.enforced is None else _MARKS[mask.enforced]
            what = f" — {mask.what}" if mask.what else ""
            where = f"{mask.secret_class} secrets" if mask.secret_class else mask.origin
            typer.echo(f"  [{mark}] {mask.pattern}{what} ({where})")
            for detail in mask.details if mask.enforced is False else []:
                typer.echo(f"        - {detail}")
        creds = _credentials(service)
        typer.echo(
            f"credentials (sandbox.credentials; TLS termination "
            f"{'on' if creds['tlsTerminate'] else 'off'}):"
        )
        for line in creds["in_effect"] or ["none masked as placeholders"]:
            typer.echo(f"  - {line}")
        typer.echo("  ready-made entries (sandbox.credentials.presets):")
        for preset in creds["presets"]:
            mark = "on " if preset["on"] else "off"
            limit = f" — limit: {preset['limit']}" if preset["limit"] else ""
            typer.echo(f"    [{mark}] {preset['name']}: {preset['what']}{limit}")
        if report.limits:
            typer.echo("limits:")
        for limit in report.limits:
            typer.echo(f"  - {limit}")
    if report.error:
        raise typer.Exit(1)


@sandbox_app.command(
    "run", context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True}
)
def run_command(
    command: Annotated[list[str], typer.Argument(help="The command and its arguments (after --).")],
    project: ProjectOption = None,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout", "-t", min=0.001, help="Kill the command after this many seconds."
        ),
    ] = 600,
) -> None:
    """Run one command inside the sandbox of the project (stdin and the terminal are kept).

    It runs in the current directory when that is inside the project, else in its root.
    """
    import os
    import subprocess

    from codingcode.config import load_settings
    from codingcode.process import kill_process_group

    root = project_dir(project)
    service = _service(root, load_settings(root))
    try:
        # In the project: the current directory when it is inside, else the project root.
        here = Path.cwd().resolve()
        cwd = here if here == root or root in here.parents else root
        plan = service.plan(command, cwd=cwd, env=dict(os.environ))
        if plan.notice:
            typer.echo(plan.notice, err=True)
        try:
            proc = subprocess.Popen(
                plan.argv,
                cwd=cwd,
                env=plan.env,
                pass_fds=plan.pass_fds,
                start_new_session=True,
            )
        except OSError as exc:
            from codingcode.cli.exits import fail

            fail(f"cannot start {plan.argv[0]}: {exc.strerror}", code=127)
        finally:
            plan.close_fds()
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            typer.echo(f"sandbox: timed out after {timeout:g}s; the command was killed.", err=True)
            code = 124
        except KeyboardInterrupt:
            code = 130
        finally:
            kill_process_group(proc.pid)
            proc.wait()
            after = plan.run_finish()
            if after:
                typer.echo(after, err=True)
    finally:
        service.close()
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    app.add_typer(sandbox_app, name="sandbox")
