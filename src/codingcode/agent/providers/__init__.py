"""Model providers: the OpenAI-compatible Chat Completions API and Anthropic's Messages API."""

from __future__ import annotations

from pathlib import Path

from codingcode.agent.model import ModelSpec
from codingcode.agent.providers.base import ModelClientSettings, ModelProvider, load_client_settings


def make_provider(spec: ModelSpec, *, project: Path | None = None) -> ModelProvider:
    """The provider for ``spec``, with the ``model_client`` timeouts and retries of the
    settings (the user's file, and the project's when ``project`` is given)."""
    settings = load_client_settings(project)
    if spec.provider == "anthropic":
        from codingcode.agent.providers.anthropic_messages import AnthropicProvider

        return AnthropicProvider(spec.model, settings)
    from codingcode.agent.providers.openai_chat import OpenAIChatProvider

    return OpenAIChatProvider(spec.model, settings)


__all__ = ["ModelClientSettings", "ModelProvider", "make_provider"]
