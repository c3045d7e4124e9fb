"""Anthropic's Messages API, through the ``anthropic`` SDK (streamed).

The SDK finds its credentials itself (``ANTHROPIC_API_KEY``, ``ANTHROPIC_AUTH_TOKEN`` or a
profile) and honours ``ANTHROPIC_BASE_URL``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from codingcode.agent.model import ModelError
from codingcode.agent.providers.base import (
    EndpointWords,
    Failure,
    ModelClientSettings,
    StreamingProvider,
    WireNames,
    classify,
    http_timeout,
    parse_arguments,
)
from codingcode.agent.transcript import Message, StreamEvent, TextDelta, TurnComplete, Usage
from codingcode.tools.definition import ToolDefinition
from codingcode.tools.service import ToolService

#: Output budget per response; the API requires one.
MAX_TOKENS = 8192


def to_anthropic_messages(
    messages: Sequence[Message], names: WireNames | None = None
) -> list[dict[str, Any]]:
    """Neutral messages as Messages API turns.

    Tool results travel in a user turn; a following prompt (after a cancelled turn, say)
    joins that same turn, since the API wants user and assistant turns to alternate. Empty
    text blocks are refused by the API, so none are sent.
    """
    names = names or WireNames([])
    out: list[dict[str, Any]] = []

    def add_user(blocks: list[dict[str, Any]]) -> None:
        if out and out[-1]["role"] == "user":
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": "user", "content": blocks})

    for m in messages:
        if m.role == "user":
            add_user([{"type": "text", "text": m.text or "(empty message)"}])
        elif m.role == "assistant":
            blocks: list[dict[str, Any]] = []
            if m.text:
                blocks.append({"type": "text", "text": m.text})
            for c in m.tool_calls:
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": c.id,
                        "name": names.to_wire(c.name),
                        # A model may escape a lone surrogate in its arguments: what goes back
                        # on the wire must be valid UTF-8.
                        "input": _valid_unicode(c.arguments or {}),
                    }
                )
            out.append(
                {
                    "role": "assistant",
                    "content": blocks or [{"type": "text", "text": "(no answer)"}],
                }
            )
        else:
            add_user(
                [
                    {
                        "type": "tool_result",
                        "tool_use_id": r.call_id,
                        "content": r.content or "(no output)",
                        "is_error": r.is_error,
                    }
                    for r in m.results
                ]
            )
    return out


def _valid_unicode(value: Any) -> Any:
    """``value`` with every string (keys too) made valid Unicode (``safe_text``)."""
    from codingcode.text import safe_text

    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, dict):
        return {safe_text(str(k)): _valid_unicode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_valid_unicode(v) for v in value]
    return value


class AnthropicProvider(StreamingProvider):
    name = "anthropic"
    base_url_variable = "ANTHROPIC_BASE_URL"

    def __init__(self, model: str, settings: ModelClientSettings | None = None) -> None:
        import anthropic

        self._setup(model, settings)
        try:
            # Our own retries (stream_with_retries) replace the SDK's, which knew no bound.
            self._client = anthropic.AsyncAnthropic(
                timeout=http_timeout(anthropic, self.settings), max_retries=0
            )
        except anthropic.AnthropicError as exc:
            raise ModelError(
                f"Cannot set up the Anthropic client: {exc} Set ANTHROPIC_API_KEY (and "
                "ANTHROPIC_BASE_URL for another endpoint)."
            ) from None
        self._sdk = anthropic

    def _body(self, system: str, messages: Sequence[Message], names: WireNames) -> dict[str, Any]:
        body: dict[str, Any] = {
            "max_tokens": MAX_TOKENS,
            "messages": to_anthropic_messages(messages, names),
        }
        if system:
            body["system"] = system
        return body

    def _tool(self, tool: ToolDefinition, name: str) -> dict[str, Any]:
        return {**ToolService.anthropic_schema(tool), "name": name}

    async def _attempt(
        self, kwargs: dict[str, Any], names: WireNames
    ) -> AsyncIterator[StreamEvent]:
        text: list[str] = []
        # index -> [id, name, json fragments] for tool_use blocks
        blocks: dict[int, tuple[str, str, list[str]]] = {}
        stop = ""
        usage = Usage()
        stream = await self._client.messages.create(**kwargs)
        async with stream:
            async for event in stream:
                kind = event.type
                if kind == "message_start":
                    u = event.message.usage
                    usage.input_tokens = getattr(u, "input_tokens", 0) or 0
                elif kind == "content_block_start":
                    block = event.content_block
                    if block.type == "tool_use":
                        blocks[event.index] = (block.id, block.name, [])
                    elif block.type == "text" and block.text:
                        text.append(block.text)
                        yield TextDelta(block.text)
                elif kind == "content_block_delta":
                    delta = event.delta
                    if delta.type == "text_delta":
                        text.append(delta.text)
                        yield TextDelta(delta.text)
                    elif delta.type == "input_json_delta" and event.index in blocks:
                        blocks[event.index][2].append(delta.partial_json)
                elif kind == "message_delta":
                    stop = event.delta.stop_reason or stop
                    usage.output_tokens = getattr(event.usage, "output_tokens", 0) or 0
        calls = [
            parse_arguments(call_id, names.from_wire(name), "".join(parts))
            for _, (call_id, name, parts) in sorted(blocks.items())
        ]
        yield TurnComplete(Message("assistant", "".join(text), calls), stop, usage)

    def _classify(self, exc: Exception) -> Failure | None:
        if isinstance(exc, TypeError) and "authentication" in str(exc):
            # The SDK raises TypeError when it finds no credentials at request time.
            return Failure(
                "No Anthropic credentials: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN, or "
                "an Anthropic profile), and ANTHROPIC_BASE_URL for another endpoint."
            )
        words = EndpointWords(
            endpoint=f"Anthropic API at {self._client.base_url}",
            short="Anthropic API",
            request="Anthropic",
            reach_hint="Check ANTHROPIC_BASE_URL and your network.",
            piece="stream event",
        )
        return classify(
            exc,
            self._sdk,
            self.settings,
            words,
            self._sdk.AnthropicError,
            error_kind=_error_kind,
            retry_kinds=_RETRY_KINDS,
        )


#: Error types in a stream's ``error`` event (HTTP 200 already sent) worth another try.
_RETRY_KINDS = frozenset({"overloaded_error", "api_error", "rate_limit_error"})


def _error_kind(exc: Any) -> str | None:
    """The error type an Anthropic refusal's body names (``overloaded_error``, ...)."""
    body = getattr(exc, "body", None)
    error = body.get("error") if isinstance(body, dict) else None
    kind = error.get("type") if isinstance(error, dict) else None
    return str(kind) if kind else None
