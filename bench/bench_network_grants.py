"""The grants a call gets after approval (issue 16, :func:`granted_domains`): the session's
names, and the names of every session or saved rule with a ``network(...)`` clause matching
the call, whatever layer allowed it. Measured against the approval decision of the same call
(the reference, in this run), with 20,000 saved clause rules, 2,000 session names and 200
session clause rules. Prints each one's median and the ratio (expected about 1: the grants'
step is one more match of the call against the clause rules, not a second pipeline; with no
clause rule and no session name it returns at once).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from codingcode.workspace import Workspace

N_SAVED = 20_000
N_NAMES = 2_000
N_SESSION = 200


def main() -> None:
    from codingcode.approval.network_ask import SavedNetworkRules, granted_domains
    from codingcode.approval.pipeline import ToolCall
    from codingcode.approval.rules import Policy, Rule
    from codingcode.runner import build_runner

    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp).resolve()
        rules = [
            Rule(f"execute_command(tool{i} *) network(r{i}.example.com)", "allow")
            for i in range(N_SAVED)
        ]
        policy = Policy(rules=rules)
        runner = build_runner(
            Workspace.load(project), audit=False, policy=policy, launcher=object()
        )
        pipeline = runner.pipeline
        assert pipeline is not None
        saved = SavedNetworkRules.from_policy(policy, project)
        pipeline.session_grants.domains.extend(f"n{i}.example.org" for i in range(N_NAMES))
        for i in range(N_SESSION):
            pipeline.grant_session(f"execute_command(s{i} install *) network(s{i}.example.net)")
        call = ToolCall(
            "execute_command",
            {"command": f"tool{N_SAVED - 1} fetch x"},
            project,
            arg_roles={"command": "command"},
        )
        import anyio

        first = anyio.run(pipeline.decide, call)
        assert first.allowed and first.capabilities.domains == {f"r{N_SAVED - 1}.example.com"}
        got = granted_domains(pipeline, call, saved)
        assert f"r{N_SAVED - 1}.example.com" in got and len(got) == N_NAMES + 1
        decide: list[float] = []
        grants: list[float] = []

        async def measure() -> None:  # one event loop: only the work is timed
            for _ in range(200):
                t = time.perf_counter()
                await pipeline.decide(call)
                decide.append(time.perf_counter() - t)
                t = time.perf_counter()
                granted_domains(pipeline, call, saved)
                grants.append(time.perf_counter() - t)

        anyio.run(measure)
    ref, one = statistics.median(decide), statistics.median(grants)
    print(
        f"{N_SAVED} saved clause rules, {N_NAMES} session names, {N_SESSION} session rules: "
        f"approval decision {ref * 1e6:.0f} us (reference), granted names {one * 1e6:.0f} us, "
        f"ratio {one / ref:.2f}"
    )


if __name__ == "__main__":
    main()
