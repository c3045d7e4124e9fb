"""Model providers: the OpenAI-compatible Chat Completions API and Anthropic's Messages API."""

from __future__ import annotations

from codingcode.agent.model import ModelSpec
from codingcode.agent.providers.base import ModelProvider


def make_provider(spec: ModelSpec) -> ModelProvider:
    if spec.provider == "anthropic":
        from codingcode.agent.providers.anthropic_messages import AnthropicProvider

        return AnthropicProvider(spec.model)
    from codingcode.agent.providers.openai_chat import OpenAIChatProvider

    return OpenAIChatProvider(spec.model)


__all__ = ["ModelProvider", "make_provider"]
