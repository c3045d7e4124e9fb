"""The six layers, in order (SPEC A1–A6; DESIGN "Approval semantics", a contract).

Each layer returns allow, deny, ask or continue. deny and allow end the chain. ask is
sticky: once a rule or a hook said ask, no later layer may *auto*-allow the call; only a
hook's explicit allow or the user's answer can. Every layer's result is audited.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from codingcode.approval.call import CONFIRM as CONFIRM
from codingcode.approval.call import HOOK as HOOK
from codingcode.approval.call import MODE as MODE
from codingcode.approval.call import PERMISSION_HOOK as PERMISSION_HOOK
from codingcode.approval.call import RULES as RULES
from codingcode.approval.call import WHITELIST as WHITELIST
from codingcode.approval.call import Action as Action
from codingcode.approval.call import Final as Final
from codingcode.approval.call import LayerResult as LayerResult
from codingcode.approval.call import ToolCall as ToolCall
from codingcode.approval.capabilities import (
    capabilities_for,
    granted_capabilities,
    rule_literal_paths,
)
from codingcode.approval.confirm import (
    Answer,
    Confirmer,
    ConfirmRequest,
    Reply,
    as_reply,
    headless_message,
)
from codingcode.capabilities import NO_CAPABILITIES, CapabilitySet
from codingcode.paths import begin_decision, end_decision, is_control_file, is_inside


def is_read_only_tool(call: ToolCall) -> bool:
    """A2: a built-in tool whose declared effects are only reading (files, the network) or
    nothing outside the session (read_file, search_code, search_files, fetch_url,
    web_search, dispatch_agent, todo_write, command_output, tool_search, a skill's tool).
    Read from the tool's declaration (``ToolDefinition.effects``, ``origin``), never its name."""
    return call.declaration.only_reads


@dataclass
class Decision:
    """The pipeline's answer for one call (DESIGN contract)."""

    decision: Final
    layer: str
    reason: str
    rule: str | None
    #: The arguments that were approved: what runs, exactly (a hook may have changed them).
    args: dict[str, Any]
    layers: list[LayerResult] = field(default_factory=list)
    #: What an allowed call may do beyond the sandbox's defaults (DESIGN: capabilities).
    capabilities: CapabilitySet = NO_CAPABILITIES
    #: The paths the allowed call named that its allow does not expose, each with why
    #: (only an explicit grant exposes a masked path; ``codingcode check`` shows these).
    withheld: dict[Path, str] = field(default_factory=dict)

    @property
    def allowed(self) -> bool:
        return self.decision == "allow"

    def to_json(self) -> dict[str, Any]:
        return {
            "decision": self.decision,
            "layer": self.layer,
            "reason": self.reason,
            "rule": self.rule,
        }


Validate = Callable[[str, dict[str, Any]], dict[str, Any]]
#: (action, rule, scope): scope "local" (the project's settings.local.json) or "user".
Persist = Callable[[str, str, str], None]
Evaluate = Callable[[ToolCall], LayerResult]
PreHooks = Callable[[ToolCall], Awaitable[LayerResult]]
#: PermissionRequest hooks (issue 17): answer an ask (allow / deny) or not (None).
PermissionHooks = Callable[[ToolCall, str], Awaitable["LayerResult | None"]]
Record = Callable[[ToolCall, LayerResult, float], None]
Suggest = Callable[[ToolCall], "str | None"]
#: Says why a call is a read-only command (None: it is not one, or not a command).
ReadOnly = Callable[[ToolCall], "str | None"]
#: The tool's own error when the call would fail as given (checked before asking anyone).
Precheck = Callable[[ToolCall], "str | None"]
#: Whether the sandbox fully contains the call (no network, writes only to the project).
Contained = Callable[[ToolCall], bool]
#: The masked paths (secrets) a call names, each with what masks it (see
#: ``codingcode.approval.capabilities.masked_names``).
#: ``False``: only for a tool that runs outside the sandbox (none for a command).
Masked = Callable[[ToolCall, bool], "dict[Path, str]"]
SESSION = "SessionGrant"


@dataclass
class SessionGrants:
    """The rules granted "for this session" and the engine that matches them."""

    rules: list[str] = field(default_factory=list)
    engine: Any = None
    #: Names every call may reach for the rest of the session (a "session" answer after the
    #: network policy blocked a command; issue 16, :mod:`codingcode.approval.network_ask`).
    domains: list[str] = field(default_factory=list)
    #: Where a run that cannot ask (headless) says what a blocked name needs; None: nowhere.
    on_network_block: Callable[[str], None] | None = None


class ApprovalPipeline:
    """Decides every call: rules → read-only whitelist → mode → hooks → user (→ audit).

    The collaborators are plain callables so each layer can be built and tested alone:
    ``evaluate`` is the rule engine, ``pre_hooks`` the PreToolUse hooks, ``validate``
    re-validates a hook's modifiedInput, ``persist`` saves an always/never rule,
    ``record`` writes one audit record per layer.
    """

    def __init__(
        self,
        evaluate: Evaluate,
        *,
        suggest: Suggest | None = None,
        pre_hooks: PreHooks | None = None,
        confirmer: Confirmer | None = None,
        validate: Validate | None = None,
        persist: Persist | None = None,
        record: Record | None = None,
        read_only: ReadOnly | None = None,
        precheck: Precheck | None = None,
        contained: Contained | None = None,
    ) -> None:
        self.evaluate = evaluate
        self.suggest = suggest
        self.pre_hooks = pre_hooks
        self.confirmer = confirmer
        self.validate = validate
        self.persist = persist
        self.record = record
        self.read_only = read_only
        self.precheck = precheck
        #: Set by the runner once the sandbox is known, when the settings turn on
        #: ``approvals.autoAllowSandboxed``.
        self.contained = contained
        #: The sandbox's masked credentials, one line each (set by the runner): shown with
        #: the question about a call that runs commands.
        self.credentials: tuple[str, ...] = ()
        #: Rules granted "for this session": gone when the session ends. A sub-agent's
        #: pipeline shares its parent's (one session, one set of grants).
        self.session_grants = SessionGrants()
        #: Makes the engine for the session rules (set by build_pipeline).
        self.make_engine: Callable[[list[str]], Any] | None = None
        #: The engine of the session rules that carry a network clause, and the rules it
        #: was made from (rebuilt when they change; see approval/network_ask.py).
        self.clause_engine: tuple[tuple[str, ...], Any] | None = None
        #: Set by the runner when PermissionRequest hooks exist; never asked about a call a
        #: preset rule asked about.
        self.permission_hooks: PermissionHooks | None = None
        #: The names of the read-only tools there are (read from the registry by the
        #: runner), for plan mode's refusal; None: the refusal names none.
        self.read_only_names: Callable[[], list[str]] | None = None
        #: Set by the runner from the sandbox's masks: the secrets a call names. A tool
        #: that runs outside the sandbox (read_file, ...) and names one is asked about
        #: unless the user's answer or an allow rule naming it literally allows it; a
        #: command naming one is never auto-allowed as read-only (the sandbox holds the
        #: rest: nothing but an explicit grant exposes a masked path to it).
        self.masked: Masked | None = None

    async def decide(self, call: ToolCall, *, dry_run: bool = False) -> Decision:
        """The decision for ``call``. ``dry_run``: prompt no one (ask stays ask), save nothing."""
        trail: list[LayerResult] = []

        def note(result: LayerResult) -> LayerResult:
            trail.append(result)
            if self.record is not None:
                self.record(call, result, time.time())
            return result

        def done(decision: Final, result: LayerResult, args: dict[str, Any]) -> Decision:
            # An allowed call carries what it named; the sandbox shows it those of its
            # masked paths only on an explicit grant (the user's answer to this call, or an
            # allow rule naming the path literally): a mode pass, auto-allow, hook or
            # session grant exposes nothing. Nothing is granted to a call not allowed.
            # An allow rule's network(...) clause adds the names it grants (issue 16).
            caps, withheld = (
                granted_capabilities(replace(call, args=args), result)
                if decision == "allow"
                else (NO_CAPABILITIES, {})
            )
            return Decision(
                decision,
                result.layer,
                result.reason,
                result.rule,
                args,
                trail,
                caps,
                withheld,
            )

        # A1: rules (the preset rules first, inside the engine). A deny ends the chain.
        # The rules and the secrets check share one resolution of each path's symlinks
        # (no await between them: nothing else runs in this thread meanwhile).
        begin_decision()
        try:
            ruled = note(self.evaluate(call))
            # A tool that reads outside the sandbox and names a masked secret: only the
            # user's answer, or an allow rule naming it literally, lets it (exposure by
            # explicit grant).
            secret = self._outside_secrets(call) if ruled.action not in ("deny", "ask") else {}
        finally:
            end_decision()
        if ruled.action == "deny":
            return done("deny", ruled, call.args)
        if ruled.action == "allow":
            if secret and not (
                not ruled.preset
                and ruled.rule
                and set(secret) <= rule_literal_paths(ruled.rule, call)
            ):
                ruled = note(
                    LayerResult(
                        RULES,
                        "ask",
                        f"{_secret_text(secret)}: the allow rule {ruled.rule} does not name it "
                        "literally, so the user is asked",
                        ruled.rule,
                    )
                )
        elif secret:
            ruled = note(
                LayerResult(
                    CONFIRM,
                    "ask",
                    f"{_secret_text(secret)}: only the user's answer or an allow rule naming "
                    "it lets a tool read it",
                )
            )
        sticky: LayerResult | None = ruled if ruled.action == "ask" else None

        # A4: PreToolUse hooks fire for every call they match, in every mode, before any
        # layer passes it (as Claude Code runs them): a hook's deny wins even in bypass or
        # over an allow rule, its ask is sticky (no rule, mode or whitelist auto-allows
        # the call then), its allow never overrides a mode's deny. A hook may change the
        # input; the new input is checked against the rules again.
        args = call.args
        hooked: LayerResult | None = None
        if self.pre_hooks is not None:
            hooked = note(await self.pre_hooks(call))
            if hooked.modified_args is not None:
                args, checked = self._recheck(call, hooked.modified_args)
                if checked is not None:
                    note(checked)
                    if checked.action == "deny":
                        return done("deny", checked, args)
                    if checked.action == "ask" and sticky is None:
                        sticky = checked
                call = replace(call, args=args)
            if hooked.action == "deny":
                return done("deny", hooked, args)
            if hooked.action == "ask" and sticky is None:
                sticky = hooked
        if ruled.action == "allow" and sticky is None:
            return done("allow", ruled, args)

        # Rules the user granted for this session (after the saved rules: a deny or ask
        # rule stands; never for a call a rule or hook asked about).
        if sticky is None and self.session_grants.engine is not None:
            granted = self.session_grants.engine.evaluate_user(call)
            if granted is not None and granted.action == "allow":
                r = note(
                    LayerResult(
                        SESSION,
                        "allow",
                        f"granted for this session: {granted.rule}",
                        granted.rule,
                        domains=granted.domains,
                    )
                )
                return done("allow", r, args)

        # A2: the read-only whitelist may not pass a call a rule or hook asked about.
        if sticky is None and is_read_only_tool(call):
            r = note(LayerResult(WHITELIST, "allow", f"{call.tool} is a read-only tool"))
            return done("allow", r, args)
        note(
            LayerResult(
                WHITELIST,
                "continue",
                "a rule asked; the whitelist cannot auto-allow it"
                if sticky
                else f"{call.tool} is not on the read-only list",
            )
        )

        # A3: the permission mode.
        moded = note(self._mode_layer(call, sticky))
        if moded.action in ("deny", "allow"):
            return done(moded.action, moded, args)

        # A hook's explicit allow (the mode did not refuse the call); a hook never exposes
        # a secret.
        if hooked is not None and hooked.action == "allow" and not secret:
            return done("allow", hooked, args)

        # A read-only command (issue 13) passes once the hooks had their say.
        unasked = "no rule, mode or hook decided this call; the user is asked"
        if sticky is None and self.read_only is not None:
            begin_decision()
            try:
                why = self.read_only(replace(call, args=args))
                # never a command naming a masked path: it reads a secret, not "only reads"
                named = self._named_secrets(replace(call, args=args)) if why is not None else {}
            finally:
                end_decision()
            if why is not None and not named:
                r = note(LayerResult(WHITELIST, "allow", why))
                return done("allow", r, args)
            if named:
                unasked = (
                    f"{_secret_text(named)}: read-only auto-allow never covers a masked "
                    "path; the user is asked"
                )
                note(LayerResult(WHITELIST, "continue", unasked))

        # Auto-allow when sandboxed (a setting, off by default): no rule was involved and
        # the sandbox fully contains the call.
        if sticky is None and self.contained is not None and self.contained(call):
            r = note(
                LayerResult(
                    CONFIRM,
                    "allow",
                    "approvals.autoAllowSandboxed: the sandbox fully contains this call "
                    "(no network, writes only to the project)",
                )
            )
            return done("allow", r, args)

        # A5: the user.
        asked = sticky or LayerResult(CONFIRM, "ask", unasked)
        preset = sticky is not None and _is_preset(sticky)
        suggestion = None if preset else self._suggest(replace(call, args=args))
        if dry_run:
            return done("ask", asked, args)
        # Nobody is asked about a call that would fail: the model gets the tool's error.
        if self.precheck is not None:
            failure = self.precheck(replace(call, args=args))
            if failure is not None:
                r = note(
                    LayerResult(
                        CONFIRM,
                        "deny",
                        f"it would fail, so no one was asked: {failure}",
                    )
                )
                return done("deny", r, args)
        if self.permission_hooks is not None and not preset and not secret:
            answered = await self.permission_hooks(replace(call, args=args), asked.reason)
            if answered is not None:
                r = note(answered)
                return done("allow" if answered.action == "allow" else "deny", r, args)
        if self.confirmer is None:
            r = note(LayerResult(CONFIRM, "deny", headless_message(call, asked.reason, suggestion)))
            return Decision("deny", CONFIRM, r.reason, asked.rule, args, trail)
        request = ConfirmRequest(
            replace(call, args=args),
            asked.reason,
            suggestion,
            rule=asked.rule,
            preset=preset,
            # What the sandbox will let it do if the answer is yes, shown with the question.
            capabilities=capabilities_for(
                replace(call, args=args),
                () if preset else self.rule_domains(replace(call, args=args), suggestion),
            ),
            credentials=self.credentials if call.declaration.runs_commands else (),
        )
        reply = as_reply(await self.confirmer.confirm(request))
        return done(*self._answered(call, reply, suggestion, preset), args)

    def _outside_secrets(self, call: ToolCall) -> dict[Path, str]:
        """The masked paths a tool that runs outside the sandbox names (none for a tool
        that runs commands: the sandbox masks what those name)."""
        return self.masked(call, False) if self.masked is not None else {}

    def _named_secrets(self, call: ToolCall) -> dict[Path, str]:
        return self.masked(call, True) if self.masked is not None else {}

    def _answered(
        self, call: ToolCall, reply: Reply, suggestion: str | None, preset: bool = False
    ) -> tuple[Final, LayerResult]:
        answer = reply.answer
        saved = ""
        grant: str | None = None
        rule_text = reply.rule or suggestion
        if answer.grants and rule_text and not preset:
            action = "deny" if answer is Answer.NEVER else "allow"
            try:
                if answer is Answer.SESSION:
                    self.grant_session(rule_text)
                    saved = f'; granted "{rule_text}" for this session'
                elif self.persist is not None:
                    scope = "user" if answer is Answer.ALWAYS_USER else "local"
                    self.persist(action, rule_text, scope)
                    where = "your user settings" if scope == "user" else "this project"
                    saved = f'; saved {action} rule "{rule_text}" ({where})'
                grant = rule_text if saved else None
            except ValueError as exc:  # an edited rule that does not parse: allowed once
                saved = f"; the rule {rule_text!r} was not saved: {exc}"
        allowed = answer.allows
        decision: Final = "allow" if allowed else "deny"
        reason = f"the user answered {answer.label}{saved}"
        if not allowed:
            reason = f"{call.tool} was denied by the user{saved}"
            if reply.interrupted:
                reason = f"{call.tool} was not run: the user interrupted the turn (Ctrl-C)"
            elif reply.message:
                reason += f". The user says: {reply.message}"
        # A yes carries the names the rule it answered grants (network(...), issue 16):
        # "once" those of the suggested (or edited) rule, for this call only.
        domains = self.rule_domains(call, rule_text) if allowed and not preset else frozenset()
        result = LayerResult(
            CONFIRM,
            decision,
            reason,
            grant,
            answer=answer.label,
            grant=grant,
            domains=domains,
        )
        if self.record is not None:
            self.record(call, result, time.time())
        return decision, result

    def grant_session(self, rule: str) -> None:
        """Allow what ``rule`` matches until this pipeline (the session) ends."""
        if self.make_engine is None:
            raise ValueError("this pipeline cannot hold session grants")
        grants = self.session_grants
        engine = self.make_engine([*grants.rules, rule])  # raises on a bad rule
        grants.rules.append(rule)
        grants.engine = engine

    def rule_domains(self, call: ToolCall, rule: str | None) -> frozenset[str]:
        """The names ``rule`` (an answer's rule) grants this call: those of its
        ``network(...)`` clause when it matches the call, as a saved rule would."""
        if not rule or "network(" not in rule or self.make_engine is None:
            return frozenset()
        try:
            found = self.make_engine([rule]).evaluate_user(call)
        except ValueError:
            return frozenset()
        if found is None or found.action != "allow":
            return frozenset()
        return frozenset(found.domains)

    @property
    def session_rules(self) -> list[str]:
        return self.session_grants.rules

    def _suggest(self, call: ToolCall) -> str | None:
        return self.suggest(call) if self.suggest is not None else None

    def _mode_layer(self, call: ToolCall, sticky: LayerResult | None) -> LayerResult:
        mode = call.mode
        if mode == "plan":
            if is_read_only_tool(call):
                return LayerResult(MODE, "continue", "plan mode: a read-only tool")
            if call.read_only_hint:
                return LayerResult(
                    MODE, "continue", "plan mode: a trusted MCP server marks this tool read-only"
                )
            if call.effects is not None and "mode" in call.effects:  # exit_plan_mode
                return LayerResult(
                    MODE, "continue", "plan mode: the user approves the plan, or not"
                )
            if sticky is None and self.read_only is not None and self.read_only(call):
                return LayerResult(MODE, "continue", "plan mode: a read-only command")
            names = sorted(self.read_only_names()) if self.read_only_names is not None else []
            listed = f" ({', '.join(names)})" if names else ""
            return LayerResult(
                MODE,
                "deny",
                f"plan mode is on: only read-only tools may run{listed}; "
                f"{call.tool} is not one of them. Leave plan mode to make changes.",
            )
        if sticky is not None:
            return LayerResult(MODE, "continue", f"{mode} mode cannot auto-allow what a rule asked")
        if mode == "bypass":
            return LayerResult(MODE, "allow", "bypass mode passes what no rule decided")
        declared = call.declaration
        if mode == "acceptEdits" and declared.writes_files and not declared.runs_commands:
            # a tool that writes the files its arguments name (write_file, edit_file): every
            # one of them inside the project, none a control file
            paths = [
                call.args.get(name)
                for name, role in declared.arg_roles.items()
                if role in ("path", "directory")
            ]
            if paths and all(
                isinstance(path, str)
                and is_inside(path, call.project_path)
                and not is_control_file(path, call.project_path)
                for path in paths
            ):
                return LayerResult(MODE, "allow", "acceptEdits mode: an edit inside the project")
            return LayerResult(
                MODE,
                "continue",
                "acceptEdits mode passes edits inside the project only, and never of the "
                "files that configure codingcode, git hooks or MCP servers",
            )
        return LayerResult(MODE, "continue", f"{mode} mode: the next layer decides")

    def _recheck(
        self, call: ToolCall, new_args: dict[str, Any]
    ) -> tuple[dict[str, Any], LayerResult | None]:
        """Validate a hook's modifiedInput and run the rules on it again."""
        try:
            validated = self.validate(call.tool, new_args) if self.validate else dict(new_args)
        except Exception as exc:  # an invalid modifiedInput must never run
            return new_args, LayerResult(HOOK, "deny", f"a hook's modifiedInput is invalid: {exc}")
        result = self.evaluate(replace(call, args=validated))
        if result.action in ("deny", "ask"):
            return validated, replace(
                result, reason=f"after a hook changed the input: {result.reason}"
            )
        return validated, None


def _secret_text(secret: dict[Path, str]) -> str:
    shown = "; ".join(f"{p} ({what})" for p, what in sorted(secret.items()))
    return f"it names a masked secret: {shown}"


def _is_preset(result: LayerResult) -> bool:
    return result.preset
