"""Ground truth for the shell analysis: obfuscated commands run for real (tests/approval/oracle.py).

No candidate that truly ran ``sudo``/``shutdown`` or read ``/etc/shadow`` in the sandbox may
be allowed by ``check --mode bypass``; the same obfuscations around harmless commands are
never denied and at most 10 % asked. A fixed seed here; bench/bench_oracle.py runs more.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.approval import oracle

SEED = 20261203
PER_PAYLOAD = 30

pytestmark = [
    pytest.mark.skipif(not oracle.available(), reason="bubblewrap is not usable here"),
    # The judged report (a module fixture) is built once, on one worker.
    pytest.mark.xdist_group("oracle"),
]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Iterator[oracle.Report]:
    sandbox = oracle.Sandbox()
    try:
        project = tmp_path_factory.mktemp("oracle-project").resolve()
        yield oracle.judge(sandbox, list(oracle.generate(SEED, PER_PAYLOAD)), project)
    finally:
        sandbox.close()


def test_the_sandbox_really_runs_the_payloads() -> None:
    """The oracle itself: the plain payloads leave their markers, harmless ones do not."""
    sandbox = oracle.Sandbox()
    try:
        assert sandbox.run("sudo id").escalated
        assert sandbox.run("cat /etc/shadow").read_shadow
        assert sandbox.run("shutdown -h now").powered_off
        assert (
            sandbox.run("/usr/sbin/reboot").powered_off
            if Path("/usr/sbin/reboot").exists()
            else True
        )
        harmless = sandbox.run("echo hi; ls")
        assert not harmless.forbidden and "hi" in harmless.output
    finally:
        sandbox.close()


def test_enough_candidates_truly_did_it(report: oracle.Report) -> None:
    assert len(report.truly_forbidden) >= PER_PAYLOAD  # the layers really run their payload


def test_no_truly_forbidden_candidate_is_allowed(report: oracle.Report) -> None:
    allowed = [f"{j.candidate.layers}: {j.candidate.command!r}" for j in report.forbidden_allowed]
    assert not allowed, report.summary() + "\n" + "\n".join(allowed)


def test_harmless_lookalikes_are_not_denied_and_rarely_asked(report: oracle.Report) -> None:
    denied = [f"{j.candidate.command!r}: {j.reason}" for j in report.benign_denied]
    assert not denied, "\n".join(denied)
    assert len(report.benign_asked) <= 0.10 * len(report.benign), report.summary()
