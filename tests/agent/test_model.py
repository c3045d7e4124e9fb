"""Choosing the model: --model > CODINGCODE_MODEL > settings; clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codingcode.agent.model import ModelNotConfiguredError, ModelSpec, resolve_model
from codingcode.config import Scope, SettingsError, load_settings


@pytest.fixture(autouse=True)
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODINGCODE_CONFIG_DIR", str(tmp_path / "cfg"))
    monkeypatch.delenv("CODINGCODE_MODEL", raising=False)


def settings(project: Path, data: object, name: str = "settings.json") -> Path:
    (project / ".codingcode").mkdir(exist_ok=True)
    path = project / ".codingcode" / name
    path.write_text(json.dumps(data))
    return path


def resolve(project: Path, flag: str | None = None) -> ModelSpec:
    """As a front end does: the settings read once, handed to the resolver."""
    return resolve_model(project, flag, settings=load_settings(project))


def test_precedence(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings(project, {"model": "openai:from-project"})
    settings(project, {"model": "anthropic:from-local"}, "settings.local.json")
    spec = resolve(project)
    assert (spec.provider, spec.model, spec.scope) == ("anthropic", "from-local", Scope.LOCAL)
    monkeypatch.setenv("CODINGCODE_MODEL", "openai:from-env")
    assert str(resolve(project)) == "openai:from-env"
    assert str(resolve(project, "anthropic:claude-sonnet-4-5")) == ("anthropic:claude-sonnet-4-5")


def test_model_names_may_contain_colons(project: Path) -> None:
    spec = resolve(project, "openai:qwen2.5-coder:7b")  # an Ollama tag
    assert spec.model == "qwen2.5-coder:7b"


def test_no_model_says_how(project: Path) -> None:
    with pytest.raises(ModelNotConfiguredError) as info:
        resolve(project)
    message = str(info.value)
    assert "--model" in message and "CODINGCODE_MODEL" in message and "settings.json" in message
    assert "`codingcode tool` and `codingcode mcp` need no model" in message


def test_bad_values(project: Path) -> None:
    with pytest.raises(ModelNotConfiguredError, match="PROVIDER:MODEL"):
        resolve(project, "llama3.1")  # served by many: no provider inferred
    with pytest.raises(ModelNotConfiguredError, match="Unknown model provider 'gemini'"):
        resolve(project, "gemini:pro")
    path = settings(project, {"model": {"name": "x"}})
    with pytest.raises(SettingsError, match=f"{path}: `model` must be a string"):
        resolve(project)


def test_provider_inferred_where_unambiguous(project: Path) -> None:
    assert str(resolve(project, "gpt-4.1")) == "openai:gpt-4.1"
    assert str(resolve(project, "o3-mini")) == "openai:o3-mini"
    assert str(resolve(project, "claude-sonnet-4-5")) == "anthropic:claude-sonnet-4-5"
    # An explicit provider is kept, even for a name that would infer another.
    assert str(resolve(project, "openai:claude-proxy")) == "openai:claude-proxy"
