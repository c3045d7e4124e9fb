"""``codingcode check`` (dry run of the approval pipeline), ``rules`` and ``audit``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from codingcode.cli.check import run_check
from codingcode.cli.common import project_dir
from codingcode.cli.tool_commands import ProjectOption

if TYPE_CHECKING:
    from codingcode.trust import TrustStore

CheckModeOption = Annotated[
    str | None,
    typer.Option(
        "--mode",
        "-m",
        help="Permission mode: default, acceptEdits, plan, bypass (default: the settings' defaultMode).",
    ),
]

ScopeOption = Annotated[
    str, typer.Option("--scope", help="Which settings file: local (default), project or user.")
]


def register(app: typer.Typer) -> None:
    @app.command("check")
    def check_command(
        tool: Annotated[str | None, typer.Argument(help="The tool, e.g. execute_command.")] = None,
        args_json: Annotated[
            str | None, typer.Argument(help="The arguments as a JSON object (- reads stdin).")
        ] = None,
        mode: CheckModeOption = None,
        project: ProjectOption = None,
        batch: Annotated[
            bool,
            typer.Option(
                "--batch",
                help='Read JSON lines {"tool", "args", "mode"} on stdin; one decision each.',
            ),
        ] = False,
    ) -> None:
        """Print what the approval pipeline would decide, as JSON (runs nothing, asks no one)."""
        run_check(tool, args_json, mode, project, batch)

    rules_app = typer.Typer(help="List, add and remove permission rules.", no_args_is_help=True)
    app.add_typer(rules_app, name="rules")

    @rules_app.command("list")
    def rules_list(
        project: ProjectOption = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print the rules as JSON.")] = False,
    ) -> None:
        """The preset rules and every rule from the settings files, with where it came from."""
        from codingcode.approval.presets import PRESET_RULES
        from codingcode.approval.rules import load_policy
        from codingcode.config import load_settings

        root = project_dir(project)
        policy = load_policy(load_settings(root))
        rows: list[dict[str, Any]] = [
            {
                "rule": r.text,
                "id": r.id,
                "action": r.action,
                "priority": None,
                "scope": "preset",
                "source": "built in (cannot be removed)",
                "meaning": r.meaning,
                "neighbours": r.neighbours,
            }
            for r in PRESET_RULES
        ]
        seen: set[tuple[str, str, str]] = set()
        for r in policy.rules:
            # A Claude Code rule standing for several of ours is listed once, as written.
            key = (r.shown, r.action, r.source)
            if r.written and key in seen:
                continue
            seen.add(key)
            rows.append(
                {
                    "rule": r.shown,
                    "id": None,
                    "action": r.action,
                    "priority": r.priority,
                    "scope": r.scope.value if r.scope else "code",
                    "source": r.source,
                    # the names its network(...) clause grants the calls it allows
                    "domains": list(r.domains),
                }
            )
        if as_json:
            typer.echo(json.dumps(rows, indent=2, ensure_ascii=False))
            return
        for row in rows:
            label = row["id"] or f"p{row['priority']}"
            typer.echo(f"{row['action']:5}  {label:4}  {row['scope']:7}  {row['rule']}")
            if row["scope"] == "preset":
                typer.echo(
                    f"{'':20}{row['meaning']}"
                    + (f"; also {row['neighbours']}" if row.get("neighbours") else "")
                )
            if row.get("domains"):
                typer.echo(f"{'':20}may reach (network): {', '.join(row['domains'])}")

    @rules_app.command("add")
    def rules_add(
        action: Annotated[str, typer.Argument(help="allow, ask or deny.")],
        rule: Annotated[str, typer.Argument(help="The rule, e.g. 'execute_command(npm test *)'.")],
        project: ProjectOption = None,
        scope: ScopeOption = "local",
        priority: Annotated[int, typer.Option("--priority", help="Higher wins; default 0.")] = 0,
    ) -> None:
        """Add a rule to a settings file (atomically)."""
        from codingcode.approval.rules import RuleSyntaxError, add_rule
        from codingcode.cli.exits import fail

        if action not in ("allow", "ask", "deny"):
            fail(f"unknown action {action!r}; choose allow, ask or deny.")
        root = project_dir(project)
        path = _scope_path(scope, root)
        trust = _writable_trust()
        created = not path.exists()
        try:
            added = add_rule(path, action, rule, priority, project=root, trust=trust)  # type: ignore[arg-type]
        except RuleSyntaxError as exc:
            fail(f"invalid rule {rule!r}: {exc}.")
            return
        except OSError as exc:
            fail(f"cannot write {path}: {exc.strerror or exc}; it was left as it was.", code=1)
            return
        if created:
            from codingcode.config import ignore_local_settings

            ignore_local_settings(path)
        typer.echo(f"{'added' if added else 'already there'}: {action} {rule} ({path})")

    @rules_app.command("remove")
    def rules_remove(
        rule: Annotated[str, typer.Argument(help="The rule text exactly as listed.")],
        project: ProjectOption = None,
        scope: ScopeOption = "local",
    ) -> None:
        """Remove a rule from a settings file. The nine preset rules cannot be removed."""
        from codingcode.approval.rules import presets_match, remove_rule
        from codingcode.cli.exits import fail

        preset = presets_match(rule)
        if preset is not None:
            fail(
                f"{preset.id} ({preset.text}: {preset.meaning}) is a preset rule; the nine preset "
                "rules are built in and cannot be removed or overridden."
            )
        root = project_dir(project)
        path = _scope_path(scope, root)
        trust = _writable_trust()
        try:
            removed = remove_rule(path, rule, project=root, trust=trust)
        except OSError as exc:
            fail(f"cannot write {path}: {exc.strerror or exc}; it was left as it was.", code=1)
            return
        if not removed:
            fail(f"no rule {rule!r} in {path} (see `codingcode rules list`).", code=1)
        typer.echo(f"removed {removed} entr{'y' if removed == 1 else 'ies'}: {rule} ({path})")

    @app.command("audit")
    def audit_command(
        decision: Annotated[
            str | None, typer.Option("--decision", help="Only allow, deny, ask or continue.")
        ] = None,
        tool: Annotated[str | None, typer.Option("--tool", help="Only this tool (a glob).")] = None,
        limit: Annotated[int, typer.Option("--limit", min=1, help="At most N records.")] = 50,
        as_json: Annotated[bool, typer.Option("--json", help="JSON lines.")] = False,
        calls: Annotated[
            bool,
            typer.Option(
                "--calls",
                help="One record per call: its final decision and outcome (ran, failed, "
                "cancelled, denied), exit code, duration and result size.",
            ),
        ] = False,
        outcome: Annotated[
            str | None,
            typer.Option("--outcome", help="With --calls: only ran, failed, cancelled or denied."),
        ] = None,
        network: Annotated[
            bool,
            typer.Option(
                "--network",
                help="The sandbox proxy's connection attempts (allowed and refused), each with "
                "the call it belongs to; --decision allow|deny keeps the allowed or the refused.",
            ),
        ] = False,
        host: Annotated[
            str | None, typer.Option("--host", help="With --network: only this name (a glob).")
        ] = None,
        call: Annotated[
            str | None, typer.Option("--call", help="With --network: only this call's id.")
        ] = None,
        project: ProjectOption = None,
        all_projects: Annotated[
            bool,
            typer.Option("--all-projects", help="Every project's records (each names its own)."),
        ] = False,
    ) -> None:
        """The approval audit log of this project (-p for another, --all-projects for every
        one): one record per layer decision (or per call, or per network connection), newest
        last."""
        import datetime

        from codingcode.cli.exits import fail
        from codingcode.record.audit import AuditLog

        decisions = ("allow", "deny", "ask", "continue")
        if decision is not None and decision not in decisions:
            fail(f"--decision {decision!r} is not one of: {', '.join(decisions)}.")
        outcomes = ("ran", "failed", "cancelled", "denied")
        if outcome is not None and (outcome not in outcomes or not calls):
            fail(f"--outcome goes with --calls and is one of: {', '.join(outcomes)}.")
        if (host is not None or call is not None) and not network:
            fail("--host and --call go with --network.")
        log = AuditLog()
        if network:
            if calls or outcome is not None or tool is not None:
                fail("--network shows connections; --calls, --outcome and --tool do not apply.")
            if decision not in (None, "allow", "deny"):
                fail("with --network, --decision is allow (connected) or deny (refused).")
            allowed = None if decision is None else decision == "allow"
            _print_network(
                log.network_records(call_id=call, limit=limit, allowed=allowed, host=host),
                as_json,
            )
            return
        # The records are filed under the project's resolved root (the runner's).
        where = None if all_projects else str(project_dir(project).resolve())

        def header(found: bool) -> None:
            if where is not None and found and not as_json:
                typer.echo(f"Project: {where} (--all-projects for every one)", err=True)

        if calls:
            if decision is not None:
                fail("--decision filters the layer records; with --calls use --outcome.")
            found = log.query_calls(outcome=outcome, tool=tool, limit=limit, project=where)
            header(bool(found))
            _print_calls(found, as_json, with_project=where is None)
            return
        records = log.query(decision=decision, tool=tool, limit=limit, project=where)
        header(bool(records))
        for r in records:
            if as_json:
                typer.echo(json.dumps(r.to_json(), ensure_ascii=False))
                continue
            when = datetime.datetime.fromtimestamp(r.time).strftime("%Y-%m-%d %H:%M:%S")
            rule = f" [{r.rule}]" if r.rule else ""
            named = f"{r.project}  " if where is None else ""
            typer.echo(
                f"{when}  {named}{r.session}#{r.turn}  {r.tool:16} {r.layer:18} {r.decision:8} "
                f"{r.reason}{rule}"
            )
        if not records and not as_json:
            scope = f" for {where} (--all-projects for every one)" if where else ""
            typer.echo(f"no audit records{scope}", err=True)


def _writable_trust() -> TrustStore:
    """The user's trust records, checked before a settings file changes: its record must be
    able to follow (else nothing is written, instead of a rule saved whose file then counts
    as changed)."""
    from codingcode.trust import TrustStore

    store = TrustStore()
    store.check_writable()
    return store


def _print_calls(records: list[Any], as_json: bool, *, with_project: bool = False) -> None:
    import datetime

    for r in records:
        if as_json:
            typer.echo(json.dumps(r.to_json(), ensure_ascii=False))
            continue
        when = datetime.datetime.fromtimestamp(r.time).strftime("%Y-%m-%d %H:%M:%S")
        facts = []
        if r.exit_code is not None:
            facts.append(f"exit {r.exit_code}")
        if r.error_kind:
            facts.append(r.error_kind)
        if r.duration_ms is not None:
            facts.append(f"{r.duration_ms / 1000:.3f}s")
        if r.result_bytes is not None:
            facts.append(f"{r.result_bytes} bytes")
        by = f"{r.decision} by {r.layer}" + (f" [{r.rule}]" if r.rule else "")
        detail = f": {r.detail}" if r.detail else ""
        named = f"{r.project}  " if with_project else ""
        typer.echo(
            f"{when}  {named}{r.session}#{r.turn}  {r.tool:16} {r.outcome:9} {by}"
            f"{'  (' + ', '.join(facts) + ')' if facts else ''}{detail}"
        )
    if not records and not as_json:
        typer.echo("no call records", err=True)


def _print_network(records: list[Any], as_json: bool) -> None:
    import datetime

    for r in records:
        if as_json:
            typer.echo(json.dumps(r.to_json(), ensure_ascii=False))
            continue
        when = datetime.datetime.fromtimestamp(r.time).strftime("%Y-%m-%d %H:%M:%S")
        verdict = "allowed" if r.allowed else "refused"
        target = f"{r.host}:{r.port}" + (f" ({r.address})" if r.address else "")
        why = f"  {r.reason}" if r.reason else ""
        args = r.args if isinstance(r.args, dict) else {}
        what = args.get("command") if isinstance(args.get("command"), str) else None
        if what is None and r.args is not None:
            what = json.dumps(r.args, ensure_ascii=False)
        if what is not None and len(what) > 120:
            what = what[:120] + "…"
        owner = f"{r.session}#{r.turn} {r.tool}" if r.tool else "call"
        short = (r.call_id or "?")[:12]
        belongs = f"  [{owner} {short}{': ' + what if what else ''}]"
        typer.echo(f"{when}  {verdict:8} {r.method:7} {target}{why}{belongs}")
    if not records and not as_json:
        typer.echo("no network records", err=True)


def _scope_path(scope: str, project: Path) -> Path:
    from codingcode.approval.rules import settings_path_for
    from codingcode.cli.exits import fail
    from codingcode.config import Scope

    try:
        return settings_path_for(Scope(scope), project)
    except ValueError:
        fail(f"unknown scope {scope!r}; choose local, project or user.")
        raise
