"""``codingcode check``: what the approval pipeline would decide about a call, as JSON
(runs nothing, asks no one). Typer-free: the Typer command and the fast path
(:mod:`codingcode.cli.fast`) both run :func:`run_check`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codingcode.cli.common import check_mode, echo, parse_args_json, project_dir, resume_gc

if TYPE_CHECKING:
    from codingcode.workspace import Workspace


def run_check(
    tool: str | None,
    args_json: str | None,
    mode: str | None,
    project: Path | None,
    batch: bool,
) -> None:
    """Print what the approval pipeline would decide, as JSON (runs nothing, asks no one)."""
    from codingcode.cli.dry_run import run_dry
    from codingcode.cli.exits import fail
    from codingcode.workspace import Workspace

    root = project_dir(project)
    if mode is not None:
        check_mode(mode)
    workspace = Workspace.load(root)  # settings and trust, read once for both runners
    runner = _dry_runner(workspace)
    _note_ignored(runner, root)
    if batch:
        if tool is not None:
            fail("--batch reads its calls from stdin; give no TOOL or ARGS_JSON.")
        import anyio

        resume_gc()  # a batch may be long
        anyio.run(_batch, runner, mode)  # (it prints as it goes: never attempted twice)
        return
    if tool is None or args_json is None:
        fail('give TOOL and ARGS_JSON, e.g. codingcode check read_file \'{"path": "x"}\'.')
    assert tool is not None and args_json is not None
    args = parse_args_json(args_json)
    result = run_dry(_check_one, runner, tool, args, mode)
    if runner.ignored_grants:
        # What the decision would be once the project is trusted (its hooks still unrun).
        trusted = _dry_runner(workspace, assume_trusted=True)
        other = run_dry(_check_one, trusted, tool, args, mode)
        if other["decision"] != result["decision"]:
            result["if_trusted"] = other
    echo(json.dumps(result, ensure_ascii=False))


def _dry_runner(workspace: Workspace, *, assume_trusted: bool = False) -> Any:
    from codingcode.cli.tool_service import cli_tool_service
    from codingcode.runner import build_runner

    # A dry run writes nothing: no audit records, no rules.
    return build_runner(
        workspace,
        mode=None,
        audit=False,
        assume_trusted=assume_trusted,
        service=cli_tool_service(),
    )


def _note_ignored(runner: Any, project: Path) -> None:
    if runner.ignored_grants:
        from codingcode.config import untrusted_note

        echo(untrusted_note(runner.ignored_grants, project), err=True)


async def _check_one(runner: Any, tool: str, args: Any, mode: str | None) -> dict[str, Any]:
    from codingcode.errors import AgentError

    saved = runner.mode
    if mode:
        runner.mode = mode
    try:
        if ":" in tool and tool not in runner.service and isinstance(args, dict):
            # An MCP tool (server:tool) whose server is not started here: its arguments
            # cannot be validated, but the rules can still be checked against them.
            from codingcode.approval.pipeline import ToolCall

            assert runner.pipeline is not None
            call = ToolCall(tool, args, runner.project_path, mode=runner.mode)
            decision = await runner.pipeline.decide(call, dry_run=True)
        else:
            decision = await runner.decide(tool, args, dry_run=True)
        result: dict[str, Any] = decision.to_json()
        result["capabilities"] = _capabilities(runner, tool, decision)
    except AgentError as exc:
        result = {
            "decision": "deny",
            "layer": "validation",
            "reason": exc.message,
            "rule": None,
        }
    finally:
        runner.mode = saved
    return result


def _capabilities(runner: Any, tool: str, decision: Any) -> dict[str, Any]:
    """The capability set the call gets (issue 11): an allowed call's own; for an ask, the
    one it gets once approved; for a deny, none. ``exposes``: which of the sandbox's masked
    paths that set shows the call; ``not_exposed``: the masked paths it names that stay
    hidden, each with why (only an explicit grant exposes one)."""
    import os

    from codingcode.approval.capabilities import capabilities_for
    from codingcode.approval.pipeline import ToolCall
    from codingcode.capabilities import NO_CAPABILITIES
    from codingcode.tools.declarations import lookup

    roles: dict[str, Any] = {}
    effects = None
    if tool in runner.service:
        definition, _ = runner.service.validate(tool, decision.args)
        roles, effects = definition.arg_roles, definition.effects
    call = ToolCall(tool, decision.args, runner.project_path, arg_roles=roles, effects=effects)
    named = capabilities_for(call)  # every path the call names, whatever allowed it
    caps = decision.capabilities
    withheld: dict[Path, str] = dict(getattr(decision, "withheld", {}) or {})
    if decision.decision == "ask":
        caps = named  # the user's yes is an explicit grant: it shows what the call names
    elif decision.decision != "allow":
        caps = NO_CAPABILITIES
    out: dict[str, Any] = caps.to_json()
    if decision.decision == "ask":
        out["once_approved"] = True
    policy = getattr(runner.launcher, "policy", None)
    declared = lookup(runner.service)(tool)
    if declared is not None and declared.runs_commands and policy is not None:
        from codingcode.sandbox.backends import call_view, mask_resolver

        out["exposes"], out["not_exposed"] = [], []
        # The masks are resolved (globs, the /etc scan) only for a call that names a path:
        # one that names none exposes none.
        if withheld or _names_a_path(caps) or _names_a_path(named):
            resolver = mask_resolver(policy)
            env = dict(os.environ)
            view = call_view(resolver, env, caps)
            shown = [*view.exposed, *(x for inner in view.hollow.values() for x in inner)]
            out["exposes"] = [
                {"path": str(p), "access": "read-write" if w else "read-only"} for p, w in shown
            ]
            everything = call_view(resolver, env, named)
            out["not_exposed"] = _not_exposed(
                everything, {p for p, _ in shown}, withheld, decision.decision
            )
        masked = getattr(runner.pipeline, "masked", None)
        for path in masked(call, True) if masked is not None else {}:
            if not os.path.lexists(path):  # named, masked by pattern, not there (yet)
                out["not_exposed"].append(
                    {
                        "path": str(path),
                        "reason": "it does not exist: nothing is exposed (should it appear, "
                        "each command's sandbox masks it; a symlink there is never followed)",
                    }
                )
        if policy.credentials:
            from codingcode.sandbox.credentials.mounts import describe

            # Placeholders, never values: what each masked credential is for this call.
            out["credentials"] = describe(policy.credentials, tls_terminate=policy.tls_terminate)
    return out


def _names_a_path(capabilities: Any) -> bool:
    return bool(capabilities.read_paths or capabilities.write_paths)


def _not_exposed(
    everything: Any, shown: set[Path], withheld: dict[Path, str], decision: str
) -> list[dict[str, str]]:
    """The masked paths the call names that its decision does not show, and why."""
    from codingcode.approval.capabilities import HOW_TO_EXPOSE

    out: list[dict[str, str]] = []
    candidates = [*everything.exposed, *(x for inner in everything.hollow.values() for x in inner)]
    for path, _ in candidates:
        if path in shown:
            continue
        if decision == "deny":
            why = "the call is denied: it runs nothing"
        else:
            why = withheld.get(path) or f"not granted; {HOW_TO_EXPOSE}"
        out.append({"path": str(path), "reason": why})
    named_masks = {p for p, _ in candidates}
    for path, spec in everything.masked.items():
        if not spec.exposable and any(
            n == path or path in n.parents for n in withheld.keys() | shown | named_masks
        ):
            out.append({"path": str(path), "reason": spec.how_to_allow(str(path))})
    return out


async def _batch(runner: Any, default_mode: str | None) -> None:
    from codingcode.config import MAX_JSON_DEPTH
    from codingcode.modes import PERMISSION_MODES

    out = sys.stdout
    for n, line in enumerate(sys.stdin, 1):
        if not line.strip():
            continue
        try:
            try:
                item = json.loads(line)
            except RecursionError:
                raise ValueError(
                    f"the line is nested too deeply to read (keep it under {MAX_JSON_DEPTH} levels)"
                ) from None
            if not isinstance(item, dict) or not isinstance(item.get("tool"), str):
                raise ValueError(
                    'each line must be an object with "tool", "args" and optionally "mode"'
                )
            mode = item.get("mode") or default_mode
            if mode is not None and mode not in PERMISSION_MODES:
                raise ValueError(f"unknown mode {mode!r}")
            result = await _check_one(runner, item["tool"], item.get("args", {}), mode)
        except (ValueError, json.JSONDecodeError) as exc:
            result = {
                "decision": "deny",
                "layer": "input",
                "reason": f"line {n}: {exc}",
                "rule": None,
            }
        out.write(json.dumps(result, ensure_ascii=False) + "\n")
    out.flush()
