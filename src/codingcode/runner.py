"""One function runs a tool call for everyone: validate → approve → execute.

The CLI's ``codingcode tool``, the agent loop, sub-agents and the MCP server all run calls
through :class:`ToolRunner`, so there is exactly one path from "the model asked" to "the
tool ran", and every guard sits on it. What executes is exactly what the approval pipeline
approved: a hook's modifiedInput is validated and checked by the rules again first.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import BaseModel

from codingcode.errors import AgentError, DeniedError, ErrorKind
from codingcode.tools.definition import ToolDefinition, ToolExecCtx
from codingcode.tools.service import ToolService, validate_arguments

if TYPE_CHECKING:
    from codingcode.approval.confirm import Confirmer
    from codingcode.approval.network_ask import SavedNetworkRules
    from codingcode.approval.pipeline import ApprovalPipeline, Decision, ToolCall
    from codingcode.approval.rules import Policy
    from codingcode.checkpoints.recorder import CheckpointRecorder
    from codingcode.hooks.bus import HookBus
    from codingcode.hooks.lifecycle import LifecycleHooks
    from codingcode.record.audit import AuditLog
    from codingcode.workspace import Workspace


@dataclass
class ToolRunner:
    service: ToolService
    mode: str = "default"
    session_id: str = "default"
    launcher: Any = None
    #: None runs calls without approval (only for tests and benchmarks of the tools).
    pipeline: ApprovalPipeline | None = None
    #: What untrusted project files would have granted and was ignored (for a notice).
    ignored_grants: list[str] = field(default_factory=list)
    #: Takes a checkpoint before every call that can change the project (None: none).
    checkpoints: CheckpointRecorder | None = None
    #: Where each call's outcome is recorded (the pipeline records each layer's decision).
    audit: AuditLog | None = None
    #: The hooks of the lifecycle events (PostToolUse, Stop, ...; issue 17); None: none.
    lifecycle: LifecycleHooks | None = None
    #: The bus the hooks answer on (a ``continue: false`` is kept there for the session).
    hook_bus: HookBus | None = None
    #: The session's project, settings and trust (built once by the front end), handed to
    #: every tool through its context.
    workspace: Workspace = field(kw_only=True)
    #: The saved allow rules with a network(...) clause (issue 16; set by build_runner).
    network_rules: SavedNetworkRules | None = None
    _turn: int = field(default=0, init=False)

    @property
    def project_path(self) -> Path:
        """The project's root (the workspace's)."""
        return self.workspace.root

    def context(self, **overrides: Any) -> ToolExecCtx:
        values: dict[str, Any] = {
            "project_path": self.project_path,
            "session_id": self.session_id,
            "turn_id": self._turn,
            "launcher": self.launcher,
            "workspace": self.workspace,
        }
        values.update(overrides)
        return ToolExecCtx(**values)

    async def decide(
        self, name: str, args: Any, ctx: ToolExecCtx | None = None, *, dry_run: bool = False
    ) -> Decision:
        """Validate ``args`` and ask the pipeline; runs nothing."""
        ctx = ctx or self.context()
        definition, model = self.service.validate(name, args)
        return await self._decide(name, definition, model, ctx, dry_run=dry_run)

    def _call(
        self,
        name: str,
        definition: ToolDefinition,
        model: BaseModel,
        ctx: ToolExecCtx,
        call_id: str,
    ) -> ToolCall:
        from codingcode.approval.pipeline import ToolCall
        from codingcode.approval.roles import infer_arg_roles

        return ToolCall(
            tool=name,
            args=model.model_dump(mode="json"),
            project_path=Path(ctx.project_path),
            session_id=ctx.session_id,
            turn_id=ctx.turn_id,
            mode=self.mode,
            transcript_path=self.lifecycle.transcript_path if self.lifecycle is not None else "",
            # An MCP tool's read-only annotation is set only from a server the settings
            # mark trusted (codingcode.mcp.client); built-ins go by the fixed list (A2).
            read_only_hint=definition.origin.kind == "mcp" and definition.annotations.read_only,
            # a tool that declares no roles (most MCP tools): inferred from its schema
            arg_roles=definition.arg_roles or infer_arg_roles(definition.input_schema()),
            effects=definition.effects,
            origin=definition.origin,
            call_id=call_id,
        )

    async def _decide(
        self,
        name: str,
        definition: ToolDefinition,
        model: BaseModel,
        ctx: ToolExecCtx,
        *,
        dry_run: bool = False,
    ) -> Decision:
        if self.pipeline is None:
            raise RuntimeError("this runner has no approval pipeline")
        call = self._call(name, definition, model, ctx, "")
        return await self.pipeline.decide(call, dry_run=dry_run)

    async def run(
        self,
        name: str,
        args: Any,
        ctx: ToolExecCtx | None = None,
        *,
        on_decision: Callable[[Decision], None] | None = None,
        on_checkpoint: Callable[[str], None] | None = None,
    ) -> str:
        """Validate, approve, then execute one call; raises AgentError on every expected failure.

        ``on_decision`` sees the pipeline's decision before the call runs (or is refused);
        ``on_checkpoint`` the id of the checkpoint taken before it (calls that can write).
        """
        ctx = ctx or self.context()
        if ctx.launcher is None and self.launcher is not None:
            # A caller's own context still gets the sandbox: nothing runs around it.
            ctx = replace(ctx, launcher=self.launcher)
        definition, model = self.service.validate(name, args)
        if self.pipeline is None:
            return await self._execute(definition, model, ctx, on_checkpoint)
        from codingcode.record.calls import CallTracker
        from codingcode.text import safe_text

        # Record: the call's outcome (ran, failed, cancelled, denied) joins its layer records.
        call = self._call(name, definition, model, ctx, uuid.uuid4().hex)
        if ctx.state.limits:  # an active skill's or command's allowed-tools (issue 17)
            from codingcode.skills.limits import check_limits

            refused = check_limits(ctx.state.limits, call)
            if refused is not None:
                raise DeniedError(refused)
        reports_exit = "runs" in (definition.effects or ())
        try:
            with CallTracker(self.audit, call, reports_exit) as track:
                decision = await self.pipeline.decide(call)
                track.decision = decision
                if on_decision is not None:
                    on_decision(decision)
                if not decision.allowed:
                    raise DeniedError(f"{name} was denied: {decision.reason}")
                # Exactly the approved arguments run (a hook may have changed them), with
                # exactly the capabilities the approval granted (the sandbox builds the call
                # from them).
                model = validate_arguments(definition, decision.args)
                # The names the session or a rule with a network(...) clause granted it,
                # whatever layer allowed it (issue 16).
                from codingcode.approval.network_ask import with_granted

                approved = replace(call, args=decision.args)
                caps = with_granted(
                    self.pipeline, approved, decision.capabilities, self.network_rules
                )
                ctx = replace(ctx, capabilities=caps)
                track.started()
                # The sandbox's network proxy files each connection under this call.
                from codingcode.sandbox.network.calls import current_call

                token = current_call.set(call.call_id)
                try:
                    reads = self._read_only(approved)
                    result = await self._run_asking(
                        approved, definition, model, ctx, on_checkpoint, no_checkpoint=reads
                    )
                except AgentError as failed:
                    if self.lifecycle is not None and failed.kind is not ErrorKind.CANCELLED:
                        # PostToolUse hooks see failed calls too (issue 17), marked is_error.
                        from codingcode.hooks.lifecycle import post_tool_use_failed

                        failed.message = await post_tool_use_failed(
                            self.lifecycle, replace(call, args=decision.args), failed.message
                        )
                    raise
                finally:
                    current_call.reset(token)
                track.finished(result)
            if self.lifecycle is not None:
                from codingcode.hooks.lifecycle import post_tool_use

                result = await post_tool_use(
                    self.lifecycle, replace(call, args=decision.args), result
                )
        except AgentError as exc:
            # A lone surrogate (a non-UTF-8 file name in an argument) must not break whoever
            # sends the message on: the model's wire format, JSON output, an MCP client.
            exc.message = safe_text(exc.message)
            raise
        return safe_text(result)

    def _read_only(self, call: ToolCall) -> bool:
        """Whether a command call only reads (the read-only analysis): it cannot change the
        project, so it takes no checkpoint."""
        if self.checkpoints is None or self.pipeline is None or self.pipeline.read_only is None:
            return False
        if call.effects is None or "runs" not in call.effects:
            return False  # by its declared effects (is_mutating decides the rest)
        return self.pipeline.read_only(call) is not None

    async def _run_asking(
        self,
        call: ToolCall,
        definition: ToolDefinition,
        model: BaseModel,
        ctx: ToolExecCtx,
        on_checkpoint: Callable[[str], None] | None,
        *,
        no_checkpoint: bool = False,
    ) -> str:
        """Execute; when the network policy refused names the user may allow, ask (or say
        what to add) and, on a yes, run it again with them (issue 16)."""
        from codingcode.sandbox.network.calls import Blocked, call_blocks

        async def attempt(extra: frozenset[str], seen: list[Blocked]) -> str:
            caps = ctx.capabilities
            if extra:
                from codingcode.capabilities import NO_CAPABILITIES

                base = caps or NO_CAPABILITIES
                caps = replace(base, domains=base.domains | extra)
            token = call_blocks.set(seen)
            try:
                text = await self._execute(
                    definition,
                    model,
                    replace(ctx, capabilities=caps),
                    on_checkpoint,
                    no_checkpoint=no_checkpoint,
                )
            finally:
                call_blocks.reset(token)
            return text

        blocks: list[Blocked] = []
        refused: DeniedError | None = None
        try:
            result = await attempt(frozenset(), blocks)
        except DeniedError as exc:  # fetch_url refuses a name by raising
            if not blocks or self.pipeline is None:
                raise
            refused, result = exc, exc.message
        if not blocks or self.pipeline is None:
            return result
        from codingcode.approval.network_ask import after_block

        reran: list[bool] = []

        async def again(extra: frozenset[str]) -> tuple[str, list[Blocked]]:
            reran.append(True)
            seen: list[Blocked] = []
            return await attempt(extra, seen), seen

        text = await after_block(
            self.pipeline, call, blocks, result, again, trust=self.workspace.trust
        )
        if refused is not None and not reran:
            refused.message = text  # still refused: the same error, saying what was asked
            raise refused
        return text

    async def _execute(
        self,
        definition: ToolDefinition,
        model: BaseModel,
        ctx: ToolExecCtx,
        on_checkpoint: Callable[[str], None] | None = None,
        *,
        no_checkpoint: bool = False,
    ) -> str:
        """Run: with a checkpoint first when the call can change the project."""
        if self.checkpoints is None or no_checkpoint:
            return await self.service.execute(definition, model, ctx)
        point = await self.checkpoints.before(
            definition, model.model_dump(mode="json"), ctx.session_id, ctx.turn_id
        )
        if point is not None and on_checkpoint is not None:
            on_checkpoint(point.id)
        try:
            return await self.service.execute(definition, model, ctx)
        finally:
            with anyio.CancelScope(shield=True):
                await self.checkpoints.after(point)


def build_runner(
    workspace: Workspace,
    *,
    mode: str | None = "default",
    session_id: str = "default",
    service: ToolService | None = None,
    confirmer: Confirmer | None = None,
    hooks: HookBus | None = None,
    audit: bool = True,
    policy: Policy | None = None,
    launcher: Any = None,
    assume_trusted: bool = False,
    checkpoints: bool = False,
) -> ToolRunner:
    """The runner every front end uses for a project: its settings, approval and sandbox.

    ``workspace``: the session's project, settings and trust, built once by the front end
    (``Workspace.load``). ``mode=None`` takes ``permissions.defaultMode`` from the settings
    (else ``default``). ``confirmer=None`` is a headless run: an ask becomes a deny saying
    how to allow it. Allow rules, hooks and a looser defaultMode from project files apply
    only when the user trusted those files (``SettingsFile.trusted``); a workspace that
    distrusts its project (``trust_project_grants=False``) ignores them regardless. Deny and
    ask rules always apply. ``checkpoints=True`` (agent sessions) checkpoints the project
    before every call that can change it, as the settings say.
    """
    from codingcode.approval.rules import load_policy
    from codingcode.approval.setup import build_pipeline
    from codingcode.config import audit_required
    from codingcode.hooks.bus import POST_APPROVAL, HookBus
    from codingcode.hooks.settings import load_command_hooks, runnable_hooks
    from codingcode.tools import declarations

    service = service or ToolService.default()
    declared = declarations.lookup(service)  # what its tools declare (one cache per runner)
    assert service is not None
    project = workspace.root
    settings = workspace.settings
    # The user's rules, read once: the approval layer and the sandbox's masks both use them.
    if policy is None:
        policy = load_policy(settings)  # (the workspace's files, as trusted as it says)
    elif not workspace.trust_project_grants:  # a caller's own: its project's rules grant nothing
        policy = policy.distrusting_project()
    bus = hooks or HookBus()
    command_hooks = load_command_hooks(settings)  # (read once: approval's and the lifecycle's)
    log: AuditLog | None = None
    if audit:  # (a dry run loads no audit log)
        from codingcode.record.audit import AuditLog

        log = AuditLog(
            emit=lambda rec: bus.emit(POST_APPROVAL, rec), required=audit_required(settings)
        )

    # The sandbox: every command runs contained unless the caller brings its own (one
    # service a session: approval asks the one that runs the commands, never a second).
    from codingcode.sandbox.service import SandboxService

    sandbox = launcher if isinstance(launcher, SandboxService) else None
    if launcher is None:
        from codingcode.approval.capabilities import deny_rule_masks

        # The user's deny rules on paths are masks too: the sandbox backs them.
        sandbox = SandboxService.for_workspace(
            workspace,
            deny_read=deny_rule_masks(policy.rules, project, declared),
        )
        if log is not None:
            # Every connection attempt through the network proxy joins the audit log.
            audit_log = log
            sandbox.network_sink = lambda events: audit_log.record_network(
                [e.to_json() for e in events]
            )
        launcher = sandbox

    def validate(tool: str, args: dict[str, Any]) -> dict[str, Any]:
        _, model = service.validate(tool, args)
        dumped: dict[str, Any] = model.model_dump(mode="json")
        return dumped

    pipeline, effective_mode, ignored = build_pipeline(
        workspace,
        validate=validate,
        mode=mode,
        confirmer=confirmer,
        bus=bus,
        record=log.record if log is not None else None,
        policy=policy,
        assume_trusted=assume_trusted,
        declared=declared,
        sandbox=sandbox,
        command_hooks=command_hooks,
    )
    # plan mode's refusal lists the read-only tools there are (from the registry)
    pipeline.read_only_names = lambda: [
        d.name for d in service.list() if (found := declared(d.name)) and found.only_reads
    ]
    runner = ToolRunner(
        service,
        mode=effective_mode,
        session_id=session_id,
        pipeline=pipeline,
        audit=log,
        workspace=workspace,
    )
    runner.ignored_grants = ignored
    runner.hook_bus = bus
    from codingcode.approval.network_ask import SavedNetworkRules

    runner.network_rules = SavedNetworkRules.from_policy(policy, project)
    runnable = runnable_hooks(command_hooks)
    if bus.hooks or any(h.event != "PreToolUse" for h in runnable):
        from codingcode.hooks.lifecycle import LifecycleHooks, permission_layer

        lifecycle = LifecycleHooks(runnable, bus, project)
        runner.lifecycle = lifecycle
        if lifecycle.has("PermissionRequest"):
            pipeline.permission_hooks = permission_layer(lifecycle)
        if lifecycle.has("Notification") and pipeline.confirmer is not None:
            from codingcode.hooks.lifecycle import NotifyingConfirmer

            pipeline.confirmer = NotifyingConfirmer(pipeline.confirmer, lifecycle)
    runner.launcher = launcher
    sandbox_policy: Any = getattr(launcher, "policy", None)  # (a launcher that contains)
    if sandbox_policy is not None:
        # What the sandbox masks, for approval: never auto-allowed as "read-only", never
        # read by a tool outside the sandbox without an explicit grant.
        from codingcode.approval.capabilities import sandbox_masked_names

        pipeline.masked = sandbox_masked_names(sandbox_policy, project)
    if getattr(sandbox_policy, "credentials", None):
        from codingcode.sandbox.credentials.mounts import describe as describe_credentials

        pipeline.credentials = tuple(
            describe_credentials(
                sandbox_policy.credentials, tls_terminate=sandbox_policy.tls_terminate
            )
        )
    if checkpoints:
        from codingcode.checkpoints.recorder import recorder_for

        runner.checkpoints = recorder_for(workspace)
    return runner
