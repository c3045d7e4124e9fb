"""A plugin package (found through its dist-info next to it, on PYTHONPATH) that gives
``codingcode mcp`` what the official conformance suite's server scenarios call: tools
(``codingcode.tools``), resources (``codingcode.resources``) and prompts
(``codingcode.prompts``), written against our plugin interfaces — content blocks returned by
a tool, ``ctx.mcp`` for logging, progress, sampling and elicitation. The server under test
is the real ``codingcode mcp``; only these plugin objects are test fixtures.
"""

from __future__ import annotations

import base64
import io
import json
import wave
from typing import Any, ClassVar

import anyio
from pydantic import BaseModel, ConfigDict

from codingcode.errors import ToolFailureError
from codingcode.tools import ToolDefinition, tool
from codingcode.tools.definition import ToolAnnotations, ToolExecCtx

RED_PIXEL_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="


def _silence_wav() -> str:
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(b"\0\0" * 80)
    return base64.b64encode(out.getvalue()).decode("ascii")


SAFE = ToolAnnotations(read_only=True, idempotent=True)
NONE: frozenset[Any] = frozenset()


def _mcp(ctx: ToolExecCtx) -> Any:
    if ctx.mcp is None:
        raise ToolFailureError("this tool is only for calls through codingcode mcp")
    return ctx.mcp


@tool(annotations=SAFE, effects=NONE)
async def test_simple_text() -> str:
    """Returns simple text."""
    return "This is a simple text response for testing."


@tool(annotations=SAFE, effects=NONE)
async def test_image_content() -> Any:
    """Returns an image."""
    return [{"type": "image", "data": RED_PIXEL_PNG, "mimeType": "image/png"}]


@tool(annotations=SAFE, effects=NONE)
async def test_audio_content() -> Any:
    """Returns audio."""
    return [{"type": "audio", "data": _silence_wav(), "mimeType": "audio/wav"}]


@tool(annotations=SAFE, effects=NONE)
async def test_embedded_resource() -> Any:
    """Returns an embedded resource."""
    return [
        {
            "type": "resource",
            "resource": {
                "uri": "test://embedded-resource",
                "mimeType": "text/plain",
                "text": "This is an embedded resource content.",
            },
        }
    ]


@tool(annotations=SAFE, effects=NONE)
async def test_multiple_content_types() -> Any:
    """Returns text, an image and a resource."""
    return [
        {"type": "text", "text": "Multiple content types test:"},
        {"type": "image", "data": RED_PIXEL_PNG, "mimeType": "image/png"},
        {
            "type": "resource",
            "resource": {
                "uri": "test://mixed-content-resource",
                "mimeType": "application/json",
                "text": json.dumps({"test": "data", "value": 123}),
            },
        },
    ]


@tool(annotations=SAFE, effects=NONE)
async def test_tool_with_logging(ctx: ToolExecCtx) -> str:
    """Sends three log messages."""
    channel = _mcp(ctx)
    await channel.log("info", "Tool execution started")
    await anyio.sleep(0.05)
    await channel.log("info", "Tool processing data")
    await anyio.sleep(0.05)
    await channel.log("info", "Tool execution completed")
    return "Logging test completed"


@tool(annotations=SAFE, effects=NONE)
async def test_error_handling() -> str:
    """Always fails."""
    raise ToolFailureError("This tool intentionally returns an error for testing")


@tool(annotations=SAFE, effects=NONE)
async def test_tool_with_progress(ctx: ToolExecCtx) -> str:
    """Reports progress 0, 50, 100 of 100."""
    channel = _mcp(ctx)
    for step in (0, 50, 100):
        await channel.progress(step, 100)
        if step < 100:
            await anyio.sleep(0.05)
    return "Progress test completed"


@tool(annotations=SAFE, effects=NONE)
async def test_sampling(prompt: str, ctx: ToolExecCtx) -> str:
    """Asks the client's model."""
    answer = await _mcp(ctx).sample(
        [{"role": "user", "content": {"type": "text", "text": prompt}}], 100
    )
    return f"LLM response: {answer.get('content', {}).get('text', '')}"


@tool(annotations=SAFE, effects=NONE)
async def test_elicitation(message: str, ctx: ToolExecCtx) -> str:
    """Asks the client's user."""
    schema = {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    }
    answer = await _mcp(ctx).elicit(message, schema)
    return f"User response: action={answer.get('action')}, content={answer.get('content')}"


@tool(annotations=SAFE, effects=NONE)
async def test_elicitation_sep1034_defaults(ctx: ToolExecCtx) -> str:
    """Asks with defaults for every primitive type."""
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {
                "type": "string",
                "description": "User status",
                "enum": ["active", "inactive", "pending"],
                "default": "active",
            },
            "verified": {"type": "boolean", "description": "Verified", "default": True},
        },
        "required": [],
    }
    answer = await _mcp(ctx).elicit("Please review your information", schema)
    return f"Elicitation completed: action={answer.get('action')}, content={answer.get('content')}"


@tool(annotations=SAFE, effects=NONE)
async def test_elicitation_sep1330_enums(ctx: ToolExecCtx) -> str:
    """Asks with every enum form."""
    titled = [
        {"const": "value1", "title": "First Option"},
        {"const": "value2", "title": "Second Option"},
        {"const": "value3", "title": "Third Option"},
    ]
    schema = {
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "oneOf": titled},
            "legacyEnum": {
                "type": "string",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {
                "type": "array",
                "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
            },
            "titledMulti": {"type": "array", "items": {"anyOf": titled}},
        },
        "required": [],
    }
    answer = await _mcp(ctx).elicit("Please choose", schema)
    return f"Elicitation completed: action={answer.get('action')}, content={answer.get('content')}"


class _Free(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str | None = None
    address: dict[str, Any] | None = None


async def _schema_tool(args: Any, ctx: ToolExecCtx) -> str:
    return f"ok: {args.model_dump(exclude_none=True)}"


JSON_SCHEMA_2020_12 = ToolDefinition(
    name="json_schema_2020_12_tool",
    description="Tool with JSON Schema 2020-12 features",
    parameters=_Free,
    execute=_schema_tool,
    json_schema={
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            }
        },
        "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
        "additionalProperties": False,
    },
    annotations=SAFE,
    effects=NONE,
)

TOOLS = [
    test_simple_text,
    test_image_content,
    test_audio_content,
    test_embedded_resource,
    test_multiple_content_types,
    test_tool_with_logging,
    test_error_handling,
    test_tool_with_progress,
    test_sampling,
    test_elicitation,
    test_elicitation_sep1034_defaults,
    test_elicitation_sep1330_enums,
    JSON_SCHEMA_2020_12,
]


class _Resources:
    resources: ClassVar[list[dict[str, Any]]] = [
        {
            "uri": "test://static-text",
            "name": "static-text",
            "description": "A static text resource",
            "mimeType": "text/plain",
        },
        {
            "uri": "test://static-binary",
            "name": "static-binary",
            "description": "A static image",
            "mimeType": "image/png",
        },
        {
            "uri": "test://watched-resource",
            "name": "watched-resource",
            "description": "A resource to subscribe to",
            "mimeType": "text/plain",
        },
    ]
    resource_templates: ClassVar[list[dict[str, Any]]] = [
        {
            "uriTemplate": "test://template/{id}/data",
            "name": "template-data",
            "description": "Data by id",
            "mimeType": "application/json",
        }
    ]

    async def read(self, uri: str, **params: str) -> list[dict[str, Any]]:
        if uri == "test://static-binary":
            return [{"uri": uri, "mimeType": "image/png", "blob": RED_PIXEL_PNG}]
        if "id" in params:
            data = {
                "id": params["id"],
                "templateTest": True,
                "data": f"Data for ID: {params['id']}",
            }
            return [{"uri": uri, "mimeType": "application/json", "text": json.dumps(data)}]
        text = "This is the content of the static text resource."
        return [{"uri": uri, "mimeType": "text/plain", "text": text}]

    async def complete(self, argument: str, value: str) -> list[str]:
        return [v for v in ("123", "124", "200") if v.startswith(value)]


class _Prompts:
    prompts: ClassVar[list[dict[str, Any]]] = [
        {"name": "test_simple_prompt", "description": "A simple prompt"},
        {
            "name": "test_prompt_with_arguments",
            "description": "A prompt with arguments",
            "arguments": [
                {"name": "arg1", "description": "First test argument", "required": True},
                {"name": "arg2", "description": "Second test argument", "required": True},
            ],
        },
        {
            "name": "test_prompt_with_embedded_resource",
            "description": "A prompt with an embedded resource",
            "arguments": [{"name": "resourceUri", "description": "URI", "required": True}],
        },
        {"name": "test_prompt_with_image", "description": "A prompt with an image"},
    ]

    async def get(self, name: str, **arguments: str) -> list[dict[str, Any]]:
        def user(content: dict[str, Any]) -> dict[str, Any]:
            return {"role": "user", "content": content}

        if name == "test_prompt_with_arguments":
            text = f"Prompt with arguments: arg1='{arguments['arg1']}', arg2='{arguments['arg2']}'"
            return [user({"type": "text", "text": text})]
        if name == "test_prompt_with_embedded_resource":
            resource = {
                "uri": arguments["resourceUri"],
                "mimeType": "text/plain",
                "text": "Embedded resource content for testing.",
            }
            return [
                user({"type": "resource", "resource": resource}),
                user({"type": "text", "text": "Please process the embedded resource above."}),
            ]
        if name == "test_prompt_with_image":
            return [
                user({"type": "image", "data": RED_PIXEL_PNG, "mimeType": "image/png"}),
                user({"type": "text", "text": "Please analyze the image above."}),
            ]
        return [user({"type": "text", "text": "This is a simple prompt for testing."})]

    async def complete(self, name: str, argument: str, value: str) -> list[str]:
        return [v for v in ("paris", "park", "party", "test-value") if v.startswith(value)]


RESOURCES = _Resources()
PROMPTS = _Prompts()
