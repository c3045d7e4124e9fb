"""deploy/: the KubeRay manifests and the image recipe parse, and every ``codingcode``
command they hold names a real sub-command with options that exist. (The RayJob's
entrypoint is run for real in ``test_fleet_ray.py``.)"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def manifests() -> dict[str, list[dict[str, Any]]]:
    return {
        p.name: [d for d in yaml.safe_load_all(p.read_text()) if d]
        for p in sorted(DEPLOY.glob("*.yaml"))
    }


def strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for v in node.values():
            yield from strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from strings(v)


def codingcode_commands() -> list[tuple[str, list[str]]]:
    """(where, argv) of every ``codingcode ...`` command line in deploy/."""
    found = []
    for name, docs in manifests().items():
        for text in strings(docs):
            for m in re.finditer(r"(?:^|[;&|]\s*)(codingcode\s[^;&|\n]*)", text):
                found.append((name, shlex.split(m.group(1))))
    for line in (DEPLOY / "Containerfile").read_text().splitlines():
        if line.startswith("RUN codingcode"):
            found.append(("Containerfile", shlex.split(line.removeprefix("RUN ").split(">")[0])))
    return found


def check_argv(argv: list[str]) -> None:
    import typer.main

    from codingcode.cli import _register_commands, app

    _register_commands()
    command: Any = typer.main.get_command(app)
    rest = argv[1:]
    while rest and rest[0] in (getattr(command, "commands", None) or {}):
        command = command.commands[rest.pop(0)]
    assert not getattr(command, "commands", None), f"{argv}: no sub-command named"
    options = {o for p in command.params for o in p.opts} | {"--help"}
    for token in rest:
        if token.startswith("-") and token != "-":
            assert token.split("=")[0] in options, f"{argv}: no option {token}"


def test_the_manifests_are_kuberay_objects() -> None:
    kinds = {name: [d["kind"] for d in docs] for name, docs in manifests().items()}
    assert kinds == {"raycluster.yaml": ["RayCluster"], "rayjob.yaml": ["RayJob"]}
    for docs in manifests().values():
        for doc in docs:
            assert doc["apiVersion"] == "ray.io/v1"
            cluster = doc["spec"].get("rayClusterSpec", doc["spec"])
            groups = [cluster["headGroupSpec"], *cluster["workerGroupSpecs"]]
            for group in groups:
                for container in group["template"]["spec"]["containers"]:
                    sc = container["securityContext"]
                    # What bubblewrap needs, and no more: unconfined seccomp and AppArmor
                    # (their defaults refuse user namespaces), no privilege.
                    assert sc["seccompProfile"] == {"type": "Unconfined"}
                    assert sc["appArmorProfile"] == {"type": "Unconfined"}
                    assert sc["allowPrivilegeEscalation"] is False
                    assert sc["capabilities"] == {"drop": ["ALL"]}
                    assert not sc.get("privileged")


def test_every_codingcode_command_in_deploy_exists() -> None:
    commands = codingcode_commands()
    assert any(where == "rayjob.yaml" for where, _ in commands)
    assert any(where == "Containerfile" for where, _ in commands)
    for _, argv in commands:
        check_argv(argv)


def test_the_check_catches_a_wrong_flag() -> None:
    import pytest

    with pytest.raises(AssertionError, match="no option --adress"):
        check_argv(["codingcode", "fleet", "run", "t.jsonl", "--adress", "auto"])
    with pytest.raises(AssertionError, match="no sub-command"):
        check_argv(["codingcode", "fleet", "--help"])


def test_the_image_installs_what_a_node_needs() -> None:
    recipe = (DEPLOY / "Containerfile").read_text()
    assert "bubblewrap" in recipe and " git " in recipe
    assert "[ray]" in recipe and re.search(r"^FROM python:3\.1[1-9]", recipe, re.M)
