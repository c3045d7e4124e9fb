from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agent.fake_model import FakeModelServer


@pytest.fixture
def fake() -> Iterator[FakeModelServer]:
    server = FakeModelServer()
    yield server
    server.close()


@pytest.fixture(params=["openai", "anthropic"])
def provider_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def model_env(
    fake: FakeModelServer, provider_name: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> str:
    """Point the provider's SDK at the fake server; returns the model string."""
    for key in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    for key, value in fake.env(provider_name).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("CODINGCODE_CONFIG_DIR", str(tmp_path / "user-config"))
    monkeypatch.setenv("CODINGCODE_STATE_DIR", str(tmp_path / "user-state"))
    monkeypatch.delenv("CODINGCODE_MODEL", raising=False)
    return f"{provider_name}:fake-model"
