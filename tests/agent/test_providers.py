"""The conversions to each API's message format."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from codingcode.agent.providers.anthropic_messages import (
    MAX_TOKENS,
    AnthropicProvider,
    to_anthropic_messages,
)
from codingcode.agent.providers.base import WireNames, parse_arguments
from codingcode.agent.providers.openai_chat import OpenAIChatProvider, to_openai_messages
from codingcode.agent.transcript import Message, ToolCall, ToolResult
from codingcode.tools.definition import ToolDefinition

CALL = ToolCall("c1", "srv:tool", {"a": 1}, '{"a": 1}')
HISTORY = [
    Message("user", "first"),
    Message("assistant", "", [CALL]),
    Message("tool", results=[ToolResult("c1", "srv:tool", "cancelled", True, "cancelled")]),
    Message("user", "second"),
    Message("assistant", ""),
]


def test_anthropic_turns_alternate_and_have_no_empty_text() -> None:
    out = to_anthropic_messages(HISTORY, WireNames(["srv:tool"]))
    assert [m["role"] for m in out] == ["user", "assistant", "user", "assistant"]
    merged = out[2]["content"]
    assert merged[0]["type"] == "tool_result" and merged[0]["is_error"] is True
    assert merged[1] == {"type": "text", "text": "second"}
    assert out[1]["content"][0]["name"] == "srv__tool"
    for m in out:
        for block in m["content"]:
            assert block.get("text", "x") != ""


def test_openai_messages() -> None:
    out = to_openai_messages("sys", HISTORY, WireNames(["srv:tool"]))
    assert [m["role"] for m in out] == ["system", "user", "assistant", "tool", "user", "assistant"]
    assert out[2]["content"] is None and out[2]["tool_calls"][0]["function"]["name"] == "srv__tool"
    assert out[3] == {"role": "tool", "tool_call_id": "c1", "content": "cancelled"}
    assert out[5]["content"] == ""  # never null without tool calls


def test_wire_names_are_valid_and_reversible() -> None:
    long = "server:" + "x" * 80
    names = WireNames(["read_file", "a:b", "a__b", long, "weird name!"])
    wires = [names.to_wire(n) for n in ["read_file", "a:b", "a__b", long, "weird name!"]]
    assert wires[0] == "read_file" and wires[1] == "a__b"
    assert len(set(wires)) == 5 and all(len(w) <= 64 for w in wires)
    for real, wire in zip(["read_file", "a:b", "a__b", long, "weird name!"], wires, strict=True):
        assert names.from_wire(wire) == real


def test_parse_arguments() -> None:
    assert parse_arguments("i", "t", "").arguments == {}
    assert parse_arguments("i", "t", '{"x": 1}').arguments == {"x": 1}
    assert parse_arguments("i", "t", "[1]").arguments is None
    assert parse_arguments("i", "t", '{"x": ').arguments is None


def test_anthropic_wire_arguments_are_valid_utf8() -> None:
    import json as _json

    call = ToolCall("c1", "read_file", {"path": "gone\udcff.txt", "n": [1, "x\udce9"]}, "")
    messages = [Message("user", "hi"), Message("assistant", "", tool_calls=[call])]
    wire = to_anthropic_messages(messages)
    _json.dumps(wire, ensure_ascii=False).encode("utf-8")  # no UnicodeEncodeError
    block = wire[1]["content"][0]
    assert block["input"]["path"] == "gone\\udcff.txt"


class _Path(BaseModel):
    path: str


async def _never(args: Any, ctx: Any) -> str:
    raise AssertionError("not run")


TOOLS = [ToolDefinition("srv:read", "Reads a file.", _Path, _never)]


def test_requests_name_the_model_stream_and_carry_wire_named_tools(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "none")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "none")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    names = WireNames(["srv:read"])
    openai = OpenAIChatProvider("m1")._request("sys", HISTORY, TOOLS, names)
    assert openai["model"] == "m1" and openai["stream"] is True
    assert openai["messages"] == to_openai_messages("sys", HISTORY, names)
    assert openai["stream_options"] == {"include_usage": True}
    assert [t["function"]["name"] for t in openai["tools"]] == ["srv__read"]
    assert openai["tools"][0]["type"] == "function"

    anthropic = AnthropicProvider("m2")._request("sys", HISTORY, TOOLS, names)
    assert anthropic["model"] == "m2" and anthropic["stream"] is True
    assert anthropic["max_tokens"] == MAX_TOKENS and anthropic["system"] == "sys"
    assert anthropic["messages"] == to_anthropic_messages(HISTORY, names)
    assert [t["name"] for t in anthropic["tools"]] == ["srv__read"]

    bare = AnthropicProvider("m2")._request("", HISTORY, [], WireNames([]))
    assert "system" not in bare and "tools" not in bare
