"""What one approved call may do beyond the sandbox's defaults (DESIGN: capabilities contract).

The approval pipeline decides a call and, when it allows it, says which of the paths the
sandbox masks by default the call may see (exactly the ones it named and the user or a rule
approved), which it may write, and whether it may use the network. The sandbox builds that
call's mounts from this set and nothing else, so a command the analysis misread still cannot
do what the rules forbid. It lives on the ground floor: approval produces it, the sandbox
consumes it, and neither knows the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class CapabilitySet:
    #: Paths the approved call named for reading. The sandbox shows those of them it masks
    #: (read-only); a path it does not mask gains nothing, a named parent of a mask exposes
    #: nothing (``codingcode.approval.capabilities`` computes the set, literally named paths
    #: only; ``codingcode.sandbox.backends.call_view`` applies it).
    read_paths: frozenset[Path] = frozenset()
    #: Paths the approved call named for writing: a masked one is shown writable. The
    #: sandbox does not widen its writable roots for other paths.
    write_paths: frozenset[Path] = frozenset()
    #: ``None``: the sandbox settings decide; ``False``: no network for this call.
    network: bool | None = None
    #: Domains this call may reach through the network policy (beyond the settings' list).
    domains: frozenset[str] = frozenset()

    @property
    def empty(self) -> bool:
        return self == CapabilitySet()

    def to_json(self) -> dict[str, Any]:
        return {
            "read_paths": sorted(str(p) for p in self.read_paths),
            "write_paths": sorted(str(p) for p in self.write_paths),
            "network": self.network,
            "domains": sorted(self.domains),
        }


#: The default: nothing beyond what the sandbox settings give every command.
NO_CAPABILITIES = CapabilitySet()
