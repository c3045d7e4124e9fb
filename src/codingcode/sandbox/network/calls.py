"""Which call the proxy's records belong to, and what it refused to that call: the small
shared state between the runner and the proxy, apart from the proxy itself (a command that
starts no proxy does not import it)."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass

#: The id of the tool call whose command is being planned (the runner sets it), so each
#: connection event names the call it belongs to in the audit log.
current_call: ContextVar[str] = ContextVar("codingcode_network_call", default="")


@dataclass(frozen=True)
class Blocked:
    """One name:port the proxy's policy refused to a call (what the user may be asked about)."""

    host: str
    port: int
    reason: str
    #: The setting that decided the refusal (``sandbox.network.allowedDomains`` when the name
    #: was simply not listed; a denied, read-only or local-address refusal names its own).
    setting: str


#: Where the runner collects the refusals of the call it runs (None: nobody collects). The
#: list comes from the proxy's own records, never from the command's output, so a command
#: cannot make the user be asked about a name it did not really try.
call_blocks: ContextVar[list[Blocked] | None] = ContextVar(
    "codingcode_network_blocks", default=None
)
