"""Issue 16: the question after the network policy blocked names — which names are asked
about, what a grant is, what each answer does, and how later calls get the grant.

The sandbox's ground truth of the same flow is tests/sandbox/network/test_ask_after_block.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from codingcode.approval.confirm import Answer, Reply, ScriptedConfirmer, question_text
from codingcode.approval.network_ask import (
    MAX_ASKED,
    SavedNetworkRules,
    add_allowed_domains,
    after_block,
    askable,
    grant_for,
    granted_domains,
    with_granted,
)
from codingcode.approval.pipeline import ToolCall
from codingcode.approval.rules import load_policy, local_settings_path
from codingcode.capabilities import CapabilitySet
from codingcode.config import SettingsError, load_settings
from codingcode.runner import build_runner
from codingcode.sandbox.network.domains import ALLOWED_KEY, DENIED_KEY, LOCAL_KEY
from codingcode.sandbox.network.runtime import Blocked
from codingcode.workspace import Workspace

NPM_RULE = "execute_command(npm install *) network(registry.npmjs.org, registry.yarnpkg.com)"


def blocked(host: str, setting: str = ALLOWED_KEY, port: int = 443) -> Blocked:
    return Blocked(host, port, f"{host} is refused", setting)


def cmd(project: Path, command: str) -> ToolCall:
    return ToolCall(
        "execute_command", {"command": command}, project, arg_roles={"command": "command"}
    )


def test_only_names_refused_for_not_being_listed_are_asked_about() -> None:
    blocks = [
        blocked("Docs.Example.COM."),
        blocked("docs.example.com", port=80),
        blocked("evil.test", DENIED_KEY),
        blocked("rebind.test", LOCAL_KEY),
        blocked("meta.test", ""),
        blocked("127.0.0.1"),
        blocked("not a name"),
    ]
    assert askable(blocks) == ["docs.example.com", "127.0.0.1"]
    many = [blocked(f"n{i}.test") for i in range(50)]
    assert askable(many) == [f"n{i}.test" for i in range(MAX_ASKED)]


@given(st.lists(st.text(max_size=30), max_size=30))
def test_askable_never_crashes_and_returns_valid_names(hosts: list[str]) -> None:
    names = askable(blocked(h) for h in hosts)
    assert len(names) == len(set(names)) <= MAX_ASKED
    assert all(n == n.lower() and " " not in n for n in names)


def test_twenty_thousand_refusals_are_read_in_linear_time() -> None:
    import time

    blocks = [blocked(f"n{i % 5}.test", port=i) for i in range(20_000)]
    start = time.perf_counter()
    assert len(askable(blocks)) == 5
    assert time.perf_counter() - start < 2.0


def test_add_allowed_domains_keeps_the_mode_and_the_rest_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"model": "x", "sandbox": {"network": "none", "mode": "read-only"}}))
    assert add_allowed_domains(path, ["pypi.org"])
    data = json.loads(path.read_text())
    assert data["model"] == "x" and data["sandbox"]["mode"] == "read-only"
    assert data["sandbox"]["network"] == {"mode": "off", "allowedDomains": ["pypi.org"]}
    assert add_allowed_domains(path, ["pypi.org", "*.pythonhosted.org"])
    assert not add_allowed_domains(path, ["pypi.org"])  # already there
    net = json.loads(path.read_text())["sandbox"]["network"]
    assert net["allowedDomains"] == ["pypi.org", "*.pythonhosted.org"]
    new = tmp_path / "new.json"
    assert add_allowed_domains(new, ["localhost"])
    assert json.loads(new.read_text()) == {
        "sandbox": {"network": {"allowedDomains": ["localhost"]}}
    }


def test_add_allowed_domains_refuses_bad_input_and_leaves_the_file(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    before = json.dumps({"sandbox": {"network": {"allowedDomains": "pypi.org"}}})
    path.write_text(before)
    with pytest.raises(SettingsError, match="must be a list"):
        add_allowed_domains(path, ["a.test"])
    with pytest.raises(ValueError, match="scheme"):
        add_allowed_domains(path, ["https://a.test/x"])
    path.write_text("{not json")
    with pytest.raises(SettingsError, match="not valid JSON"):
        add_allowed_domains(path, ["a.test"])
    assert path.read_text() == "{not json"


def test_a_registry_block_is_granted_to_the_program_only(project: Path) -> None:
    runner = build_runner(Workspace.load(project), audit=False)
    pipeline = runner.pipeline
    install = cmd(project, "npm install left-pad")
    assert grant_for(pipeline, install, ["registry.npmjs.org"]).rule == NPM_RULE
    # another name, or a line joining another program: the names themselves
    assert grant_for(pipeline, install, ["github.com"]).rule is None
    joined = cmd(project, "npm install left-pad && node build.js")
    assert grant_for(pipeline, joined, ["registry.npmjs.org"]).rule is None
    assert grant_for(pipeline, cmd(project, "curl https://x.test"), ["x.test"]).rule is None


def test_later_calls_get_session_names_and_clause_rules_whatever_allowed_them(
    project: Path,
) -> None:
    runner = build_runner(Workspace.load(project), audit=False)
    pipeline = runner.pipeline
    install = cmd(project, "npm install left-pad")
    assert granted_domains(pipeline, install) == frozenset()
    pipeline.grant_session(NPM_RULE)
    assert granted_domains(pipeline, install) == {"registry.npmjs.org", "registry.yarnpkg.com"}
    # npm's names are npm's: not another program's, not a line that also runs one
    assert granted_domains(pipeline, cmd(project, "curl https://registry.npmjs.org")) == set()
    assert granted_domains(pipeline, cmd(project, "npm install x; curl evil.test")) == set()
    pipeline.session_grants.domains.append("docs.test")
    assert granted_domains(pipeline, cmd(project, "curl x")) == {"docs.test"}
    # an approval that said no network stays so
    off = CapabilitySet(network=False)
    assert with_granted(pipeline, install, off) is off
    caps = with_granted(pipeline, install, CapabilitySet(domains=frozenset({"a.test"})))
    assert caps.domains == {"a.test", "docs.test", "registry.npmjs.org", "registry.yarnpkg.com"}


def test_saved_clause_rules_count_only_when_trusted(project: Path) -> None:
    local = local_settings_path(project)
    local.parent.mkdir()
    project_file = project / ".codingcode" / "settings.json"
    project_file.write_text(json.dumps({"permissions": {"allow": [NPM_RULE]}}))
    install = cmd(project, "npm install left-pad")
    runner = build_runner(Workspace.load(project), audit=False)
    # a project the user has not trusted: its file's clause grants nothing
    untrusted = SavedNetworkRules.from_policy(load_policy(load_settings(project)), project)
    assert untrusted.engine is None
    assert granted_domains(runner.pipeline, install, untrusted) == frozenset()
    from codingcode.trust import TrustStore

    TrustStore().trust(project)
    distrusting = Workspace.load(project, trust_project_grants=False)
    distrusted = SavedNetworkRules.from_policy(load_policy(distrusting.settings), project)
    assert distrusted.engine is None  # a session that distrusts its project too
    policy = load_policy(load_settings(project))
    trusted = SavedNetworkRules.from_policy(policy, project)
    assert granted_domains(runner.pipeline, install, trusted) == {
        "registry.npmjs.org",
        "registry.yarnpkg.com",
    }


def ask(
    project: Path, answers: list[Any] | None, blocks: list[Blocked], command: str = "curl x"
) -> tuple[Any, str, list[frozenset[str]]]:
    runner = build_runner(
        Workspace.load(project),
        audit=False,
        confirmer=ScriptedConfirmer(answers) if answers is not None else None,
    )
    reruns: list[frozenset[str]] = []

    async def rerun(extra: frozenset[str]) -> tuple[str, list[Blocked]]:
        reruns.append(extra)
        return "SECOND RUN", []

    async def main() -> str:
        return await after_block(
            runner.pipeline,
            cmd(project, command),
            blocks,
            "FIRST",
            rerun,
            trust=runner.workspace.trust,
        )

    return runner, anyio.run(main), reruns


def test_the_question_names_what_a_yes_gives(project: Path) -> None:
    runner, text, reruns = ask(project, ["deny"], [blocked("docs.test")])
    (request,) = runner.pipeline.confirmer.requests
    shown = question_text(request)
    assert "Let this command reach docs.test and run it again" in shown
    assert "refused docs.test:443 (not in sandbox.network.allowedDomains)" in shown
    assert "reach docs.test" in shown  # what the sandbox then lets it do
    assert (
        "A 'yes' for the session or always allows docs.test to every command (always: saved in "
        "sandbox.network.allowedDomains)" in shown
    )
    assert "y) yes, once" in shown and "s) yes, for this session" in shown
    assert reruns == [] and text.startswith("FIRST\n[network: the user did not allow docs.test")


def test_nothing_askable_asks_nothing(project: Path) -> None:
    runner, text, reruns = ask(project, ["session"], [blocked("evil.test", DENIED_KEY)])
    assert text == "FIRST" and reruns == [] and runner.pipeline.confirmer.requests == []


def test_once_reruns_with_the_names_and_grants_nothing(project: Path) -> None:
    runner, text, reruns = ask(project, ["allow"], [blocked("docs.test")])
    assert reruns == [frozenset({"docs.test"})]
    assert "the user allowed docs.test for this run" in text
    assert "--- first run ---\nFIRST\n--- run again ---\nSECOND RUN" in text
    assert runner.pipeline.session_grants.domains == []


def test_session_with_edited_names(project: Path) -> None:
    edited = Reply(Answer.SESSION, rule="docs.test, *.docs.test")
    runner, text, reruns = ask(project, [edited], [blocked("docs.test")])
    assert runner.pipeline.session_grants.domains == ["docs.test", "*.docs.test"]
    assert reruns == [frozenset({"docs.test", "*.docs.test"})]
    bad = Reply(Answer.SESSION, rule="https://docs.test/")
    runner, text, reruns = ask(project, [bad], [blocked("docs.test")])
    assert runner.pipeline.session_grants.domains == []
    assert "for this run only (the grant was not saved" in text
    assert reruns == [frozenset({"docs.test"})]


def test_always_for_me_writes_the_user_settings(project: Path) -> None:
    from codingcode.approval.rules import settings_path_for
    from codingcode.config import Scope

    runner, text, reruns = ask(project, ["always_user"], [blocked("docs.test")])
    assert "your user settings" not in text and str(settings_path_for(Scope.USER, project)) in text
    assert reruns == [frozenset({"docs.test"})]
    user = settings_path_for(Scope.USER, project)
    assert json.loads(user.read_text())["sandbox"]["network"]["allowedDomains"] == ["docs.test"]
    assert runner.pipeline.session_grants.domains == ["docs.test"]  # in effect now too
    assert not local_settings_path(project).exists()


def test_always_for_a_registry_saves_the_program_rule(project: Path) -> None:
    runner, text, reruns = ask(
        project, ["always"], [blocked("registry.npmjs.org")], "npm install left-pad"
    )
    assert f'saved allow rule "{NPM_RULE}" (this project)' in text
    saved = json.loads(local_settings_path(project).read_text())
    assert saved["permissions"]["allow"] == [NPM_RULE]
    assert "sandbox" not in saved
    assert reruns == [frozenset({"registry.npmjs.org", "registry.yarnpkg.com"})]
    assert runner.pipeline.session_grants.rules == [NPM_RULE]


def test_headless_result_and_notice_say_what_to_add(project: Path) -> None:
    runner = build_runner(Workspace.load(project), audit=False)
    notes: list[str] = []
    runner.pipeline.session_grants.on_network_block = notes.append

    async def rerun(extra: frozenset[str]) -> tuple[str, list[Blocked]]:
        raise AssertionError("no rerun without a yes")

    async def main() -> str:
        call = cmd(project, "npm install left-pad")
        return await after_block(
            runner.pipeline,
            call,
            [blocked("registry.npmjs.org")],
            "F",
            rerun,
            trust=runner.workspace.trust,
        )

    text = anyio.run(main)
    (note,) = notes
    assert text == f"F\n{note}"
    assert f"codingcode rules add allow '{NPM_RULE}'" in note
    assert 'add ["registry.npmjs.org"] to "sandbox.network.allowedDomains"' in note


def test_always_in_an_untrusted_project_file_says_so(project: Path) -> None:
    local = local_settings_path(project)
    local.parent.mkdir()
    local.write_text("{}")  # there before, never trusted
    runner, text, reruns = ask(project, ["always"], [blocked("docs.test")])
    assert json.loads(local.read_text())["sandbox"]["network"]["allowedDomains"] == ["docs.test"]
    assert "that file is not trusted" in text and "codingcode trust" in text
    assert runner.pipeline.session_grants.domains == ["docs.test"]  # this session: in effect
    assert reruns == [frozenset({"docs.test"})]


def _limited_user_settings(project: Path) -> None:
    from codingcode.approval.rules import settings_path_for
    from codingcode.config import Scope

    path = settings_path_for(Scope.USER, project)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"sandbox": {"network": {"mode": "limited", "allowedDomains": []}}}))


def test_fetch_url_blocked_is_asked_and_a_session_yes_fetches(project: Path) -> None:
    from tests.sandbox.network.server import LoggingServer

    _limited_user_settings(project)
    runner = build_runner(
        Workspace.load(project), audit=False, confirmer=ScriptedConfirmer(["session"])
    )
    with LoggingServer() as web:
        url = f"http://localhost:{web.port}"
        text = anyio.run(runner.run, "fetch_url", {"url": f"{url}/doc"})
        (request,) = runner.pipeline.confirmer.requests
        assert "Let fetch_url reach localhost and run it again" in question_text(request)
        assert "hello from the test server" in text, text
        assert "the user allowed localhost for this session" in text
        text = anyio.run(runner.run, "fetch_url", {"url": f"{url}/next"})  # unasked
        assert "hello from the test server" in text and len(runner.pipeline.confirmer.requests) == 1
        assert web.paths() == ["/doc", "/next"]


def test_fetch_url_still_refused_after_a_no_is_the_same_error(project: Path) -> None:
    from codingcode.errors import DeniedError
    from tests.sandbox.network.server import LoggingServer

    _limited_user_settings(project)
    runner = build_runner(
        Workspace.load(project), audit=False, confirmer=ScriptedConfirmer(["deny"])
    )
    with LoggingServer() as web:
        with pytest.raises(DeniedError) as caught:
            anyio.run(runner.run, "fetch_url", {"url": f"http://localhost:{web.port}/no"})
        assert web.paths() == [] and web.connections == 0
    assert "fetch_url was blocked by the network policy" in caught.value.message
    assert "the user did not allow localhost" in caught.value.message


def test_a_session_grant_after_a_block_holds_for_sub_agents_both_ways(project: Path) -> None:
    parent = build_runner(
        Workspace.load(project), audit=False, confirmer=ScriptedConfirmer(["session"])
    )
    child = build_runner(Workspace.load(project), audit=False)
    # what AgentSession.spawn does: one session, one set of grants
    child.pipeline.session_grants = parent.pipeline.session_grants

    async def rerun(extra: frozenset[str]) -> tuple[str, list[Blocked]]:
        return "AGAIN", []

    async def main() -> None:
        call = cmd(project, "npm install left-pad")
        await after_block(
            parent.pipeline,
            call,
            [blocked("registry.npmjs.org")],
            "F",
            rerun,
            trust=parent.workspace.trust,
        )

    anyio.run(main)
    install = cmd(project, "npm install is-odd")
    assert granted_domains(child.pipeline, install) == {
        "registry.npmjs.org",
        "registry.yarnpkg.com",
    }
    child.pipeline.session_grants.domains.append("docs.test")
    assert "docs.test" in granted_domains(parent.pipeline, cmd(project, "curl x"))


def test_always_into_a_damaged_settings_file_leaves_it_and_allows_this_run(
    project: Path,
) -> None:
    runner = build_runner(
        Workspace.load(project), audit=False, confirmer=ScriptedConfirmer(["always"])
    )
    local = local_settings_path(project)
    local.parent.mkdir()
    local.write_text("{damaged")  # damaged during the session
    reruns: list[frozenset[str]] = []

    async def rerun(extra: frozenset[str]) -> tuple[str, list[Blocked]]:
        reruns.append(extra)
        return "AGAIN", []

    async def main() -> str:
        call = cmd(project, "curl x")
        return await after_block(
            runner.pipeline, call, [blocked("docs.test")], "F", rerun, trust=runner.workspace.trust
        )

    text = anyio.run(main)
    assert local.read_text() == "{damaged"
    assert "for this run only (the grant was not saved:" in text and "not valid JSON" in text
    assert reruns == [frozenset({"docs.test"})]
    assert runner.pipeline.session_grants.domains == []


def test_a_name_granted_meanwhile_is_not_asked_again(project: Path) -> None:
    runner = build_runner(
        Workspace.load(project), audit=False, confirmer=ScriptedConfirmer(["session"])
    )
    reruns: list[frozenset[str]] = []

    async def rerun(extra: frozenset[str]) -> tuple[str, list[Blocked]]:
        reruns.append(extra)
        return "AGAIN", []

    async def main() -> list[str]:
        # two calls ran side by side; both were refused docs.test
        first = await after_block(
            runner.pipeline,
            cmd(project, "curl a"),
            [blocked("docs.test")],
            "A",
            rerun,
            trust=runner.workspace.trust,
        )
        second = await after_block(
            runner.pipeline,
            cmd(project, "curl b"),
            [blocked("docs.test")],
            "B",
            rerun,
            trust=runner.workspace.trust,
        )
        return [first, second]

    first, second = anyio.run(main)
    assert "the user allowed docs.test for this session" in first
    assert len(runner.pipeline.confirmer.requests) == 1
    assert "allowed it for this session meanwhile" in second and second.endswith("AGAIN")
    assert reruns == [frozenset({"docs.test"}), frozenset({"docs.test"})]


def test_a_confirmer_that_cannot_ask_now_leaves_the_result_with_what_to_add(
    project: Path,
) -> None:
    class Retrying:
        """Like an MCP client that answers by calling the tool again."""

        async def confirm(self, request: Any) -> Any:
            raise RuntimeError("input required")

    runner = build_runner(Workspace.load(project), audit=False, confirmer=Retrying())

    async def rerun(extra: frozenset[str]) -> tuple[str, list[Blocked]]:
        raise AssertionError("no rerun without a yes")

    async def main() -> str:
        call = cmd(project, "curl x")
        return await after_block(
            runner.pipeline, call, [blocked("docs.test")], "F", rerun, trust=runner.workspace.trust
        )

    text = anyio.run(main)
    assert text.startswith("F\n[network: docs.test was blocked and no one can be asked")
    assert runner.pipeline.session_grants.domains == []
