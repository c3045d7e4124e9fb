"""Asking the user after the network policy blocked a command (issue 16).

When a command's proxy refused names only because they are not listed (``sandbox.network.
allowedDomains``), the user is asked, through the session's confirmer, whether to allow them:

- **once**: the command runs again now, with those names for that run only;
- **for the session**: the names (or the per-program rule) are granted until the session
  ends, in the :class:`SessionGrants` its sub-agents share, and the command runs again;
- **always** (this project, or for the user): saved — the names to
  ``sandbox.network.allowedDomains`` of that settings file, or, when the names are a package
  manager's own registry, the per-program rule (``execute_command(npm install *)
  network(registry.npmjs.org, ...)``) to ``permissions.allow`` — granted for the session too,
  and the command runs again;
- **no**: the result stays as it was, saying the user declined.

A name refused for another reason (``deniedDomains``, a read-only domain, a local address a
public name resolved to, cloud metadata) is never asked about: allowing the name would not
change that answer. With no one to ask (headless), the result and the run's notice say
exactly what to add. The blocked names come from the proxy's own records
(:data:`codingcode.sandbox.network.runtime.call_blocks`), never from the command's output.

Every grant reaches the next calls through :func:`granted_domains`, which the runner applies
to each allowed call whatever layer allowed it: the session's names, and the names of every
allow rule with a ``network(...)`` clause (session or saved) that matches the whole call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codingcode.approval.call import CONFIRM, Action, LayerResult, ToolCall
from codingcode.approval.confirm import Answer, ConfirmRequest, as_reply
from codingcode.capabilities import CapabilitySet
from codingcode.errors import AgentError
from codingcode.sandbox.network.domains import (
    ALLOWED_KEY,
    first_match,
    normalize_host,
    pattern_problem,
)

if TYPE_CHECKING:
    from codingcode.approval.pipeline import ApprovalPipeline
    from codingcode.approval.rules import RuleEngine
    from codingcode.sandbox.network.calls import Blocked
    from codingcode.trust import TrustStore

#: At most this many names in one question (a command that tried hundreds is shown the first).
MAX_ASKED = 10
#: The first run's output kept in the result when the command runs again.
FIRST_RUN_CHARS = 2000

#: Runs the call again with these extra names; returns its result and its own refusals.
Rerun = Callable[[frozenset[str]], Awaitable[tuple[str, list["Blocked"]]]]


def askable(blocks: Iterable[Blocked]) -> list[str]:
    """The names a yes would let through: refused only for not being listed (first seen
    first, each once, at most :data:`MAX_ASKED`)."""
    names: list[str] = []
    for b in blocks:
        if b.setting != ALLOWED_KEY:
            continue
        name = normalize_host(b.host)
        if name is not None and name not in names:
            names.append(name)
    return names[:MAX_ASKED]


@dataclass(frozen=True)
class NetworkGrant:
    """What a grant after a block gives: ``rule`` (a per-program rule whose clause holds the
    names) or, when None, the names themselves for every command."""

    names: tuple[str, ...]
    rule: str | None = None

    @property
    def text(self) -> str:
        return self.rule if self.rule is not None else ", ".join(self.names)


def _command(call: ToolCall) -> str | None:
    from codingcode.approval.roles import call_roles, first_with

    if call.origin.kind == "mcp":
        return None
    roles = call_roles(call.arg_roles, call.args, call.tool, call.origin.kind)
    return first_with(roles, call.args, "command") if "command" in roles.values() else None


def program_rule(pipeline: ApprovalPipeline, call: ToolCall, names: Sequence[str]) -> str | None:
    """The per-program rule that grants ``names`` to this call's programs, when the names are
    their package registry's (npm → registry.npmjs.org, pip → pypi.org, ...) and the rule
    really gives this whole call every one of them; else None."""
    from codingcode.approval.grants import narrow_rule, single_simple
    from codingcode.approval.network_scopes import with_program_network

    command = _command(call)
    if command is None or not single_simple(command):
        return None  # a whole line's rule would give its names to every program in it
    rule = narrow_rule(call.tool, command, call.project_path, call.cwd)
    scoped = with_program_network(rule, names)
    if rule is None or scoped is None or scoped == rule:
        return None
    got = pipeline.rule_domains(call, scoped)
    if not all(first_match(n, got) is not None for n in names):
        return None  # a line joining other programs: a rule for one would not reach
    return scoped


def grant_for(pipeline: ApprovalPipeline, call: ToolCall, names: Sequence[str]) -> NetworkGrant:
    return NetworkGrant(tuple(names), program_rule(pipeline, call, names))


def _refusals(blocks: Sequence[Blocked], names: Sequence[str]) -> str:
    seen = []
    for b in blocks:
        if b.setting == ALLOWED_KEY and normalize_host(b.host) in names:
            seen.append(f"{b.host}:{b.port}" if b.port else b.host)
    return ", ".join(dict.fromkeys(seen))


def headless_advice(grant: NetworkGrant, project: Path) -> str:
    """What to add so the names are allowed, for a run where no one can be asked."""
    names = ", ".join(grant.names)
    quoted = json.dumps(list(grant.names))
    how = [
        f'add {quoted} to "sandbox.network.allowedDomains" in '
        f"{project / '.codingcode' / 'settings.local.json'} (this project) or in your user "
        "settings (every project)"
    ]
    if grant.rule is not None:
        how.insert(0, f"run `codingcode rules add allow '{grant.rule}'` (only for that program)")
    return (
        f"[network: {names} was blocked and no one can be asked in this run. To allow it: "
        f"{'; or '.join(how)}; or run interactively and answer the question]"
    )


def add_allowed_domains(
    path: Path,
    names: Sequence[str],
    *,
    project: Path | None = None,
    trust: TrustStore | None = None,
) -> bool:
    """Add ``names`` to ``sandbox.network.allowedDomains`` of one settings file (atomically;
    a file the user trusted stays trusted, when ``project`` and ``trust`` say whose). The
    network's mode stays as the file had it (an old string value becomes its object form).
    False when every name was there already."""
    from codingcode.approval.rules.store import read_settings_object, write_settings_object
    from codingcode.config import SettingsError

    for name in names:
        problem = pattern_problem(name)
        if problem is not None:
            raise ValueError(f"{name!r}: {problem}")
    data = read_settings_object(path)
    sandbox = data.setdefault("sandbox", {})
    if not isinstance(sandbox, dict):
        raise SettingsError(f"Invalid settings in {path}: sandbox must be an object.")
    network = sandbox.get("network")
    if isinstance(network, str):
        network = {"mode": {"none": "off", "allow": "on"}.get(network, network)}
    elif network is None:
        network = {}
    if not isinstance(network, dict):
        raise SettingsError(f"Invalid settings in {path}: sandbox.network must be an object.")
    listed = network.setdefault("allowedDomains", [])
    if not isinstance(listed, list):
        raise SettingsError(f"Invalid settings in {path}: {ALLOWED_KEY} must be a list.")
    added = [n for n in names if n not in listed]
    if not added:
        return False
    listed.extend(added)
    sandbox["network"] = network
    write_settings_object(path, data, project=project, trust=trust)
    return True


def grant_session(pipeline: ApprovalPipeline, grant: NetworkGrant) -> None:
    """Grant until the session ends (shared with its sub-agents)."""
    if grant.rule is not None:
        pipeline.grant_session(grant.rule)
        return
    held = pipeline.session_grants.domains
    held.extend(n for n in grant.names if n not in held)


def save(
    pipeline: ApprovalPipeline,
    grant: NetworkGrant,
    scope: str,
    project: Path,
    trust: TrustStore,
) -> str:
    """Save ``grant`` in the project's local settings (``scope="local"``) or the user's;
    returns where, in words."""
    from codingcode.approval.rules import local_settings_path, settings_path_for
    from codingcode.config import Scope, ignore_local_settings

    if grant.rule is not None:
        if pipeline.persist is None:
            raise ValueError("this run cannot save rules")
        pipeline.persist("allow", grant.rule, scope)
        where = "your user settings" if scope == "user" else "this project"
        return f'saved allow rule "{grant.rule}" ({where})'
    local = local_settings_path(project)
    path = settings_path_for(Scope.USER, project) if scope == "user" else local
    created = path == local and not path.exists()
    add_allowed_domains(path, grant.names, project=project, trust=trust)
    if created:
        ignore_local_settings(path)  # personal answers stay out of git
    where = f"added {', '.join(grant.names)} to {ALLOWED_KEY} in {path}"
    if scope != "user" and not trust.is_trusted(project, path):
        where += (
            "; that file is not trusted, so later sessions use it only once you trust "
            "the project (codingcode trust)"
        )
    return where


def _edited(grant: NetworkGrant, text: str | None) -> NetworkGrant:
    """The grant as the user edited it at the question (a rule stays a rule)."""
    if not text or text.strip() == grant.text:
        return grant
    if grant.rule is not None:
        return replace(grant, rule=text.strip())
    names = [n for n in re.split(r"[,\s]+", text.strip()) if n]
    for name in names:
        problem = pattern_problem(name)
        if problem is not None:
            raise ValueError(f"{name!r}: {problem}")
    return NetworkGrant(tuple(names))


def _first_run(result: str) -> str:
    if len(result) <= FIRST_RUN_CHARS:
        return result
    return result[:FIRST_RUN_CHARS] + f"\n[... {len(result) - FIRST_RUN_CHARS} more characters]"


async def after_block(
    pipeline: ApprovalPipeline,
    call: ToolCall,
    blocks: Sequence[Blocked],
    result: str,
    rerun: Rerun,
    *,
    trust: TrustStore,
) -> str:
    """The call's result once the user was asked about the names its proxy refused
    (``trust``: the session's records, to say whether a saved answer applies later)."""
    names = askable(blocks)
    if not names:
        return result
    held = granted_domains(pipeline, call)
    if all(first_match(n, held) is not None for n in names):
        # Granted for the session while this call ran (a call beside it was asked): no
        # second question, the call runs again with them.
        again, _ = await rerun(frozenset(names))
        return (
            f"[network: the first run was refused {_refusals(blocks, names)}; the user had "
            "allowed it for this session meanwhile, and the call was run again.]\n"
            f"--- first run ---\n{_first_run(result)}\n--- run again ---\n{again}"
        )
    grant = grant_for(pipeline, call, names)
    if pipeline.confirmer is None:
        return _unasked(pipeline, grant, call, result)
    refused = _refusals(blocks, names)
    request = ConfirmRequest(
        call,
        f"the sandbox's network policy refused {refused} (not in {ALLOWED_KEY}); a yes allows "
        "it and runs the call again (its first run already happened)",
        grant.text,
        capabilities=CapabilitySet(domains=frozenset(names)),
        network=tuple(names),
        network_rule=grant.rule is not None,
    )
    try:
        reply = as_reply(await pipeline.confirmer.confirm(request))
    except Exception:
        # A confirmer that cannot ask now — an MCP client that answers by calling the tool
        # again (its command would run once more before the question) — or that failed: the
        # call already ran, so its result stands with what to add.
        return _unasked(pipeline, grant, call, result)
    answer = reply.answer
    if not answer.allows:
        said = f" The user says: {reply.message}" if reply.message else ""
        note = f"[network: the user did not allow {', '.join(names)}.{said}]"
        if reply.interrupted:
            note = "[network: the user interrupted the turn at the question]"
        _record(pipeline, call, "deny", note.strip("[]"), answer.label, None)
        return f"{result}\n{note}"
    how = "for this run"
    given = frozenset(names)
    saved: str | None = None
    try:
        chosen = _edited(grant, reply.rule)
        given = frozenset(chosen.names) if chosen.rule is None else given
        if answer is Answer.SESSION:
            grant_session(pipeline, chosen)
            how = f'for this session ("{chosen.text}")'
        elif answer in (Answer.ALWAYS, Answer.ALWAYS_USER):
            scope = "user" if answer is Answer.ALWAYS_USER else "local"
            where = save(pipeline, chosen, scope, call.project_path, trust)
            grant_session(pipeline, chosen)  # in effect now, whatever the files' trust
            how = f"always ({where})"
        if answer is not Answer.ALLOW:
            saved = chosen.text
        if chosen.rule is not None:
            given = pipeline.rule_domains(call, chosen.rule) or given
    except (ValueError, OSError, AgentError) as exc:  # a bad edit, a damaged or full file
        why = exc.message if isinstance(exc, AgentError) else str(exc)
        how = f"for this run only (the grant was not saved: {why})"
        saved = None
    reason = f"network: the user allowed {', '.join(names)} {how}"
    _record(pipeline, call, "allow", reason, answer.label, saved)
    again, still = await rerun(given)
    left = askable(still)
    tail = f" The second run was refused {', '.join(left)} too." if left else ""
    return (
        f"[network: the first run was refused {refused}; the user allowed "
        f"{', '.join(sorted(given))} {how}, and the call was run again.{tail}]\n"
        f"--- first run ---\n{_first_run(result)}\n--- run again ---\n{again}"
    )


def _unasked(pipeline: ApprovalPipeline, grant: NetworkGrant, call: ToolCall, result: str) -> str:
    advice = headless_advice(grant, call.project_path)
    notify = pipeline.session_grants.on_network_block
    if notify is not None:
        notify(advice)
    return f"{result}\n{advice}"


def _record(
    pipeline: ApprovalPipeline,
    call: ToolCall,
    decision: Action,
    reason: str,
    answer: str,
    grant: str | None,
) -> None:
    """The user's answer joins the call's approval records (``codingcode audit``)."""
    if pipeline.record is None:
        return
    import time

    result = LayerResult(CONFIRM, decision, reason, grant, answer=answer, grant=grant)
    pipeline.record(call, result, time.time())


# -- what the next calls get ---------------------------------------------------------------


def clause_rules(texts: Iterable[str]) -> list[str]:
    return [t for t in texts if "network(" in t]


@dataclass
class SavedNetworkRules:
    """The trusted saved allow rules that carry a ``network(...)`` clause, as an engine."""

    engine: RuleEngine | None = None

    @classmethod
    def from_policy(cls, policy: Any, project: Path) -> SavedNetworkRules:
        from codingcode.approval.rules import RuleEngine

        trusted = policy.without_untrusted_grants()
        rules = [r for r in trusted.rules if r.action == "allow" and r.domains]
        return cls(RuleEngine(rules, project) if rules else None)


def granted_domains(
    pipeline: ApprovalPipeline, call: ToolCall, saved: SavedNetworkRules | None = None
) -> frozenset[str]:
    """The names granted to ``call`` besides what its deciding layer gave: the session's
    names, and those of every session or saved rule with a clause that matches the whole
    call (a line joining programs gets only the names granted to each)."""
    grants = pipeline.session_grants
    out = set(grants.domains)
    engines: list[Any] = []
    session = clause_rules(grants.rules)
    if session and pipeline.make_engine is not None:
        engines.append(_session_engine(pipeline, tuple(session)))
    if saved is not None and saved.engine is not None:
        engines.append(saved.engine)
    for engine in engines:
        try:
            found = engine.evaluate_user(call)
        except ValueError:
            continue
        if found is not None and found.action == "allow":
            out |= set(found.domains)
    return frozenset(out)


def _session_engine(pipeline: ApprovalPipeline, rules: tuple[str, ...]) -> Any:
    """The pipeline's engine of its session rules with a clause (rebuilt when they change)."""
    held = pipeline.clause_engine
    if held is not None and held[0] == rules:
        return held[1]
    assert pipeline.make_engine is not None
    engine = pipeline.make_engine(list(rules))
    pipeline.clause_engine = (rules, engine)
    return engine


def with_granted(
    pipeline: ApprovalPipeline,
    call: ToolCall,
    caps: CapabilitySet,
    saved: SavedNetworkRules | None = None,
) -> CapabilitySet:
    """``caps`` with :func:`granted_domains` added (unchanged when there are none)."""
    if caps.network is False:
        return caps
    extra = granted_domains(pipeline, call, saved)
    if not extra or extra <= caps.domains:
        return caps
    return replace(caps, domains=caps.domains | extra)
