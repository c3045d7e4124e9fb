"""Any OpenAI-compatible Chat Completions endpoint, through the ``openai`` SDK.

The SDK reads ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY`` itself, so OpenAI, Ollama, vLLM,
llama.cpp's server, OpenRouter and friends all work by setting those two variables.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
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


def to_openai_messages(
    system: str, messages: Sequence[Message], names: WireNames | None = None
) -> list[dict[str, Any]]:
    names = names or WireNames([])
    out: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    for m in messages:
        if m.role == "user":
            out.append({"role": "user", "content": m.text})
        elif m.role == "assistant":
            # content may be null only beside tool calls
            content = m.text if m.text or not m.tool_calls else None
            entry: dict[str, Any] = {"role": "assistant", "content": content}
            if m.tool_calls:
                entry["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {
                            "name": names.to_wire(c.name),
                            "arguments": c.raw_arguments
                            if c.arguments is None
                            else json.dumps(c.arguments),
                        },
                    }
                    for c in m.tool_calls
                ]
            out.append(entry)
        else:
            for r in m.results:
                out.append({"role": "tool", "tool_call_id": r.call_id, "content": r.content})
    return out


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class OpenAIChatProvider(StreamingProvider):
    name = "openai"
    base_url_variable = "OPENAI_BASE_URL"

    def __init__(self, model: str, settings: ModelClientSettings | None = None) -> None:
        import openai

        self._setup(model, settings)
        if not os.environ.get("OPENAI_API_KEY"):
            raise ModelError(
                "OPENAI_API_KEY is not set. Set it to your key (for a local server that needs "
                "none, such as Ollama or llama.cpp, any value works: OPENAI_API_KEY=none), and "
                "OPENAI_BASE_URL to the endpoint if it is not api.openai.com."
            )
        # Our own retries (stream_with_retries) replace the SDK's, which knew no bound.
        self._client = openai.AsyncOpenAI(
            timeout=http_timeout(openai, self.settings), max_retries=0
        )
        self._errors = openai

    async def _create(self, kwargs: dict[str, Any]) -> Any:
        """Start the stream; servers that reject ``stream_options`` are asked again without."""
        openai = self._errors
        try:
            return await self._client.chat.completions.create(**kwargs)
        except openai.APIStatusError as exc:
            if exc.status_code not in (400, 422) or "stream_options" not in str(exc):
                raise
            retry = {k: v for k, v in kwargs.items() if k != "stream_options"}
            return await self._client.chat.completions.create(**retry)

    def _body(self, system: str, messages: Sequence[Message], names: WireNames) -> dict[str, Any]:
        return {
            "messages": to_openai_messages(system, messages, names),
            "stream_options": {"include_usage": True},
        }

    def _tool(self, tool: ToolDefinition, name: str) -> dict[str, Any]:
        schema = ToolService.openai_schema(tool)
        return {**schema, "function": {**schema["function"], "name": name}}

    async def _attempt(
        self, kwargs: dict[str, Any], names: WireNames
    ) -> AsyncIterator[StreamEvent]:
        text: list[str] = []
        calls: list[_PartialCall] = []
        #: the stream's tool-call index -> position in ``calls``
        slots: dict[int, int] = {}
        finish = ""
        usage = Usage()
        stream = await self._create(kwargs)
        async with stream:
            async for chunk in stream:
                if chunk.usage is not None:
                    usage = Usage(
                        chunk.usage.prompt_tokens or 0, chunk.usage.completion_tokens or 0
                    )
                for choice in chunk.choices:
                    delta = choice.delta
                    if delta.content:
                        text.append(delta.content)
                        yield TextDelta(delta.content)
                    for tc in delta.tool_calls or []:
                        pos = slots.get(tc.index)
                        # Some compatible servers send every call whole, all at index 0:
                        # a new id at a known index is a new call.
                        if pos is None or (tc.id and calls[pos].id and tc.id != calls[pos].id):
                            calls.append(_PartialCall())
                            pos = slots[tc.index] = len(calls) - 1
                        partial = calls[pos]
                        if tc.id:
                            partial.id = tc.id
                        if tc.function is not None:
                            if tc.function.name and not partial.name:
                                partial.name = tc.function.name
                            if tc.function.arguments:
                                partial.arguments.append(tc.function.arguments)
                    if choice.finish_reason:
                        finish = choice.finish_reason
        tool_calls = [
            parse_arguments(p.id or f"call_{i}", names.from_wire(p.name), "".join(p.arguments))
            for i, p in enumerate(calls)
        ]
        message = Message("assistant", "".join(text), tool_calls)
        yield TurnComplete(message, finish, usage)

    def _classify(self, exc: Exception) -> Failure | None:
        words = EndpointWords(
            endpoint=f"model endpoint {self._client.base_url}",
            short="model endpoint",
            request="model",
            reach_hint="Check OPENAI_BASE_URL and that the server is running.",
            piece="stream chunk",
        )
        return classify(exc, self._errors, self.settings, words, self._errors.OpenAIError)
