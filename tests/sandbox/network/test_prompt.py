"""What the model is told about a limited network."""

from __future__ import annotations

from pathlib import Path

from codingcode.agent.context.prompt import describe_sandbox
from codingcode.sandbox.network.domains import DomainPolicy
from codingcode.sandbox.policy import BackendChoice, Network, SandboxPolicy
from codingcode.sandbox.service import SandboxService
from tests.sandbox.conftest import needs_bwrap


@needs_bwrap
def test_limited_network_names_the_domains(project: Path) -> None:
    policy = SandboxPolicy(
        project=project,
        backend=BackendChoice.BUBBLEWRAP,
        network=Network.LIMITED,
        domains=DomainPolicy(allowed=("pypi.org", "*.pythonhosted.org")),
    )
    service = SandboxService.from_policy(policy)
    try:
        text, network = describe_sandbox(service)
    finally:
        service.close()
    assert network is True
    assert "ONLY to these domains" in text and "pypi.org, *.pythonhosted.org" in text
    off = SandboxService.from_policy(
        SandboxPolicy(project=project, backend=BackendChoice.BUBBLEWRAP)
    )
    try:
        text, network = describe_sandbox(off)
    finally:
        off.close()
    assert network is False and "ONLY" not in text
