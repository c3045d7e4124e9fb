"""``fetch_url`` under the sandbox's network policy: the same lists gate it.

``sandbox.network.deniedDomains`` always refuses; with ``mode = "limited"`` a name must also
be in ``allowedDomains`` (or among the call's granted domains), and the local addresses the
proxy would reach (``localhost`` or an address listed exactly, everything with
``allowLocalAddresses``) are reachable by fetch_url too. Every redirect hop is checked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from codingcode.capabilities import CapabilitySet
from codingcode.errors import DeniedError
from codingcode.sandbox.network.domains import (
    DENIED_KEY,
    DomainPolicy,
    Verdict,
    first_match,
    normalize_host,
)

if TYPE_CHECKING:
    from codingcode.workspace import Workspace


@dataclass(frozen=True)
class NetworkGate:
    domains: DomainPolicy
    limited: bool

    def check(self, host: str) -> None:
        """Raise DeniedError when the network policy refuses ``host``."""
        name = normalize_host(host) or host
        if self.limited:
            verdict = self.domains.check_name(name, method="GET")
        else:
            denied = first_match(name, self.domains.denied)
            verdict = (
                Verdict(False, f"{name} matches {denied!r} in {DENIED_KEY}", DENIED_KEY)
                if denied is not None
                else Verdict.allow()
            )
        if not verdict.allowed:
            from codingcode.sandbox.network.calls import Blocked, call_blocks

            sink = call_blocks.get()
            if sink is not None:  # the runner may ask the user and run the call again
                sink.append(Blocked(name, 0, verdict.reason, verdict.setting))
            raise DeniedError(
                f"fetch_url was blocked by the network policy: {verdict.reason}. Do not work "
                f"around this; ask the user whether to allow {name} once, for this session, "
                f"or always ({verdict.setting})."
            )

    def private_hosts(self) -> list[str]:
        """What fetch_url's SSRF guard may reach besides public addresses, as the proxy would."""
        if not self.limited:
            return []
        if self.domains.allow_local:
            return ["0.0.0.0/0", "::/0"]  # metadata addresses stay refused (named only)
        listed = [normalize_host(p) for p in (*self.domains.allowed, *self.domains.granted)]
        return [h for h in listed if h is not None and (h == "localhost" or _is_ip(h))]


def _is_ip(text: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def network_gate(workspace: Workspace, capabilities: CapabilitySet | None) -> NetworkGate | None:
    """The gate for one fetch_url call (None: the sandbox settings restrict nothing here)."""
    from codingcode.sandbox.policy import Network, load_sandbox_policy

    policy = load_sandbox_policy(workspace.root, workspace.settings)
    domains = policy.domains
    if capabilities is not None and capabilities.domains:
        domains = domains.with_grants(sorted(capabilities.domains))
    limited = policy.network is Network.LIMITED
    if not limited and not domains.denied:
        return None
    return NetworkGate(domains, limited)


GateCheck = Callable[[str], None]
