"""Which model a session talks to: ``PROVIDER:MODEL`` from the flag, the environment or settings.

Precedence: ``--model`` > ``$CODINGCODE_MODEL`` > the ``model`` key of the merged settings
(user, then project, then local). The settings value keeps the file it came from so an
error can name it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from codingcode.config import Scope, Settings, SettingsError
from codingcode.errors import AgentError, ErrorKind

MODEL_ENV = "CODINGCODE_MODEL"
PROVIDERS = ("openai", "anthropic")


class ModelError(AgentError):
    """The model cannot be used: not configured, unreachable, refused the request, ..."""

    kind = ErrorKind.TOOL_FAILURE


class ModelNotConfiguredError(ModelError):
    kind = ErrorKind.INVALID_ARGUMENTS


class ContextLengthExceeded(ModelError):
    """The endpoint refused the request because the conversation is longer than the model's
    context window (OpenAI: HTTP 400 ``context_length_exceeded``; Anthropic: HTTP 400
    "prompt is too long"). The loop compacts the conversation and asks again."""

    def __init__(self, message: str, *, limit: int | None = None) -> None:
        super().__init__(message)
        #: The window the endpoint named in its refusal, when it did.
        self.limit = limit


HOW_TO_CONFIGURE = (
    "Choose one with --model PROVIDER:MODEL (e.g. --model openai:gpt-4.1 or "
    "--model anthropic:claude-sonnet-4-5; gpt-*, o1/o3/o4-* and claude-* need no prefix), "
    "the environment variable CODINGCODE_MODEL, or "
    '"model": "openai:gpt-4.1" in .codingcode/settings.json or your user settings. '
    "openai: works with any OpenAI-compatible endpoint (OPENAI_BASE_URL, OPENAI_API_KEY); "
    "anthropic: ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL if needed). "
    "`codingcode tool` and `codingcode mcp` need no model."
)


@dataclass(frozen=True)
class ModelSpec:
    provider: str
    model: str
    #: Where the choice came from: "--model", "CODINGCODE_MODEL", a settings file path, or
    #: a sub-agent profile.
    source: str = "--model"
    scope: Scope | None = None

    def __str__(self) -> str:
        return f"{self.provider}:{self.model}"


#: Model-name prefixes that name their provider unambiguously (``--model gpt-4.1``).
INFERRED_PROVIDERS = (
    ("gpt-", "openai"),
    ("chatgpt-", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4-", "openai"),
    ("claude-", "anthropic"),
)


def infer_provider(model: str) -> str | None:
    """The provider a bare model name belongs to, where only one can serve it."""
    name = model.strip().lower()
    for prefix, provider in INFERRED_PROVIDERS:
        if name.startswith(prefix):
            return provider
    return None


def parse_model(text: str, *, source: str, scope: Scope | None = None) -> ModelSpec:
    provider, sep, model = text.strip().partition(":")
    provider = provider.strip().lower()
    model = model.strip()
    if provider.lower() not in PROVIDERS:
        inferred = infer_provider(text)
        if inferred is not None:
            provider, sep, model = inferred, ":", text.strip()
    if not sep or not provider or not model:
        raise ModelNotConfiguredError(
            f"Model {text!r} (from {source}) must be written PROVIDER:MODEL, e.g. "
            "openai:gpt-4.1 or anthropic:claude-sonnet-4-5."
        )
    if provider not in PROVIDERS:
        raise ModelNotConfiguredError(
            f"Unknown model provider {provider!r} (from {source}); choose one of: "
            f"{', '.join(PROVIDERS)} (openai covers every OpenAI-compatible endpoint: set "
            "OPENAI_BASE_URL for Ollama, vLLM, llama.cpp, OpenRouter, ...)."
        )
    return ModelSpec(provider, model, source, scope)


def resolve_model(project: Path, flag: str | None = None, *, settings: Settings) -> ModelSpec:
    """The model of ``--model``, else ``$CODINGCODE_MODEL``, else the settings' ``model``
    (``settings``: the session's, as its workspace read them)."""
    if flag:
        return parse_model(flag, source="--model")
    env = os.environ.get(MODEL_ENV, "").strip()
    if env:
        return parse_model(env, source=MODEL_ENV)
    chosen: tuple[str, Path, Scope] | None = None
    for f, value in settings.sources("model"):
        if not isinstance(value, str):
            raise SettingsError(
                f"Settings file {f.path}: `model` must be a string PROVIDER:MODEL, "
                f"not {type(value).__name__}."
            )
        chosen = (value, f.path, f.scope)
    if chosen is None:
        hint = ""
        if os.environ.get("ANTHROPIC_API_KEY"):
            hint = " ANTHROPIC_API_KEY is set: e.g. --model anthropic:claude-sonnet-4-5."
        elif os.environ.get("OPENAI_API_KEY"):
            hint = " OPENAI_API_KEY is set: e.g. --model openai:gpt-4.1."
        raise ModelNotConfiguredError("No model is configured. " + HOW_TO_CONFIGURE + hint)
    value, path, scope = chosen
    return parse_model(value, source=str(path), scope=scope)


#: Claude Code's model aliases (an agent's ``model: sonnet``), by provider, when the
#: settings' ``modelAliases`` does not name them. A provider without an entry (an
#: OpenAI-compatible endpoint) gives the parent's model: an alias is a size, not a model.
MODEL_ALIASES: dict[str, dict[str, str]] = {
    "anthropic": {
        "sonnet": "claude-sonnet-4-5",
        "opus": "claude-opus-4-1",
        "haiku": "claude-haiku-4-5",
    },
}
ALIAS_NAMES = ("sonnet", "opus", "haiku", "inherit")


def resolve_alias(text: str, parent: ModelSpec, settings: Settings) -> str | None:
    """An agent's ``model`` as ``PROVIDER:MODEL``: an alias (``sonnet``, ``opus``,
    ``haiku``) through the settings' ``modelAliases`` (later files win), else the table
    of the parent's provider; ``inherit`` or an alias with no entry: None (the parent's
    model). A name without a provider (``claude-3-5-haiku-20241022``, ``gpt-4.1``) is that
    model of the parent's provider — but a Claude model under another provider is the
    parent's model (None). ``PROVIDER:MODEL`` is returned as written."""
    name = text.strip()
    if name.lower() not in ALIAS_NAMES:
        if ":" in name or not name:
            return name
        if name.lower().startswith("claude") and parent.provider != "anthropic":
            return None
        return f"{parent.provider}:{name}"
    if name.lower() == "inherit":
        return None
    chosen: str | None = None
    for f, value in settings.sources("modelAliases"):
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise SettingsError(
                f"Settings file {f.path}: `modelAliases` must map an alias to PROVIDER:MODEL, "
                'e.g. {"sonnet": "anthropic:claude-sonnet-4-5"}.'
            )
        if name.lower() in value:
            chosen = value[name.lower()]
    if chosen is not None:
        return chosen
    model = MODEL_ALIASES.get(parent.provider, {}).get(name.lower())
    return f"{parent.provider}:{model}" if model else None
