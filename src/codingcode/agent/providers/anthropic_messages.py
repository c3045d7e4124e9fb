"""Anthropic's Messages API, through the ``anthropic`` SDK (streamed).

The SDK finds its credentials itself (``ANTHROPIC_API_KEY``, ``ANTHROPIC_AUTH_TOKEN`` or a
profile) and honours ``ANTHROPIC_BASE_URL``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from codingcode.agent.model import ContextLengthExceeded, ModelError
from codingcode.agent.providers.base import (
    WireNames,
    context_limit,
    error_message,
    is_context_overflow,
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
                        "input": c.arguments or {},
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


class AnthropicProvider:
    name = "anthropic"

    def __init__(self, model: str) -> None:
        import anthropic

        self.model = model
        try:
            self._client = anthropic.AsyncAnthropic()
        except anthropic.AnthropicError as exc:
            raise ModelError(
                f"Cannot set up the Anthropic client: {exc} Set ANTHROPIC_API_KEY (and "
                "ANTHROPIC_BASE_URL for another endpoint)."
            ) from None
        self._sdk = anthropic

    async def aclose(self) -> None:
        await self._client.close()

    async def stream(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolDefinition]
    ) -> AsyncIterator[StreamEvent]:
        anthropic = self._sdk
        names = WireNames([t.name for t in tools])
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_tokens": MAX_TOKENS,
            "messages": to_anthropic_messages(messages, names),
            "stream": True,
        }
        if system:
            kwargs["system"] = system
        if tools:
            kwargs["tools"] = [
                {**ToolService.anthropic_schema(t), "name": names.to_wire(t.name)} for t in tools
            ]
        text: list[str] = []
        # index -> [id, name, json fragments] for tool_use blocks
        blocks: dict[int, tuple[str, str, list[str]]] = {}
        stop = ""
        usage = Usage()
        try:
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
        except anthropic.APIStatusError as exc:
            if is_context_overflow(exc):
                raise ContextLengthExceeded(
                    f"The conversation is too long for the model: {error_message(exc)}",
                    limit=context_limit(exc),
                ) from None
            raise ModelError(
                f"The Anthropic API refused the request (HTTP {exc.status_code}): "
                f"{error_message(exc)}"
            ) from None
        except anthropic.APIConnectionError as exc:
            raise ModelError(
                f"Cannot reach the Anthropic API at {self._client.base_url}: {exc}. Check "
                "ANTHROPIC_BASE_URL and your network."
            ) from None
        except anthropic.AnthropicError as exc:
            raise ModelError(f"The Anthropic request failed: {exc}") from None
        except TypeError as exc:
            # The SDK raises TypeError when it finds no credentials at request time.
            if "authentication" not in str(exc):
                raise
            raise ModelError(
                "No Anthropic credentials: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN, or an "
                "Anthropic profile), and ANTHROPIC_BASE_URL for another endpoint."
            ) from None
        calls = [
            parse_arguments(call_id, names.from_wire(name), "".join(parts))
            for _, (call_id, name, parts) in sorted(blocks.items())
        ]
        yield TurnComplete(Message("assistant", "".join(text), calls), stop, usage)
