"""Model providers: the OpenAI-compatible Chat Completions API and Anthropic's Messages API."""

from __future__ import annotations

from typing import TYPE_CHECKING

from codingcode.agent.model import ModelSpec
from codingcode.agent.providers.base import ModelClientSettings, ModelProvider, load_client_settings

if TYPE_CHECKING:
    from codingcode.config import Settings


def make_provider(spec: ModelSpec, *, settings: Settings) -> ModelProvider:
    """The provider for ``spec``, with the ``model_client`` timeouts and retries of the
    settings (``settings``: the session's, as its workspace read them)."""
    client = load_client_settings(settings)
    if spec.provider == "anthropic":
        from codingcode.agent.providers.anthropic_messages import AnthropicProvider

        return AnthropicProvider(spec.model, client)
    from codingcode.agent.providers.openai_chat import OpenAIChatProvider

    return OpenAIChatProvider(spec.model, client)


__all__ = ["ModelClientSettings", "ModelProvider", "make_provider"]
