"""MCP prompts as the app's slash commands: ``/server:prompt ARGS``.

ARGS are ``name=value`` pairs and/or plain words (shell-style quoting), the plain words
filling the prompt's arguments in the order the server lists them; a prompt with a single
argument takes the whole rest of the line. The prompt's messages become the text sent to
the model (one user message: its text; several: each under its role).
"""

from __future__ import annotations

import shlex
import weakref
from typing import TYPE_CHECKING, Any

from codingcode.errors import AgentError, InvalidArgumentsError
from codingcode.mcp.attempt import ServerState

if TYPE_CHECKING:
    import mcp_types as types

    from codingcode.mcp.connection import ServerConnection, ServerSet
    from codingcode.tools.service import ToolService

# (The MCP SDK is loaded by what these functions are given: bind() runs in every session,
# with or without servers, and must not load it.)

#: The manager whose servers' tools a ToolService holds (set while the manager runs).
_MANAGERS: weakref.WeakKeyDictionary[ToolService, ServerSet] = weakref.WeakKeyDictionary()


def bind(service: ToolService, manager: ServerSet | None) -> None:
    if manager is None:
        _MANAGERS.pop(service, None)
    else:
        _MANAGERS[service] = manager


def manager_of(service: ToolService) -> ServerSet | None:
    """The servers of ``service``, or of the one it was derived from (a sub-agent's)."""
    current: ToolService | None = service
    while current is not None:
        manager = _MANAGERS.get(current)
        if manager is not None:
            return manager
        current = current.derived_from
    return None


def offers_prompts(conn: ServerConnection) -> bool:
    caps = conn.capabilities
    return conn.state is ServerState.READY and caps is not None and caps.prompts is not None


async def list_prompts(conn: ServerConnection) -> list[types.Prompt]:
    from codingcode.mcp.connection import pages

    async def walk(client: Any) -> list[types.Prompt]:
        prompts: list[types.Prompt] = []
        async for page in pages(lambda cursor: client.list_prompts(cursor=cursor)):
            prompts.extend(page.prompts)
        return prompts

    return await conn.request(f"prompts/list of MCP server {conn.name!r}", walk)


def parse_arguments(prompt: types.Prompt, line: str) -> dict[str, str]:
    """The prompt's arguments from the rest of the command line; InvalidArgumentsError
    saying what the prompt takes when one is missing or unknown."""
    declared = list(prompt.arguments or [])
    names = [a.name for a in declared]
    usage = " ".join(f"{a.name}=…" if a.required else f"[{a.name}=…]" for a in declared)
    values: dict[str, str] = {}
    if len(declared) == 1 and line and not line.startswith(f"{names[0]}="):
        values[names[0]] = line
    else:
        try:
            words = shlex.split(line)
        except ValueError as exc:
            raise InvalidArgumentsError(f"Cannot read the arguments: {exc}.") from None
        free = iter(n for n in names)
        for word in words:
            key, eq, value = word.partition("=")
            if eq and key in names:
                values[key] = value
                continue
            slot = next((n for n in free if n not in values), None)
            if slot is None:
                raise InvalidArgumentsError(
                    f"Too many arguments for prompt {prompt.name!r}; it takes: {usage or 'none'}."
                )
            values[slot] = word
    missing = [a.name for a in declared if a.required and a.name not in values]
    if missing:
        raise InvalidArgumentsError(
            f"Prompt {prompt.name!r} needs {', '.join(missing)}; it takes: {usage}."
        )
    return values


def _content_text(content: Any) -> str:
    import mcp_types as types

    if isinstance(content, types.TextContent):
        return content.text
    if isinstance(content, types.EmbeddedResource):
        res = content.resource
        if isinstance(res, types.TextResourceContents):
            return f'<resource uri="{res.uri}">\n{res.text}\n</resource>'
        return f"[resource {res.uri}: binary, not shown]"
    kind = getattr(content, "type", type(content).__name__)
    return f"[{kind} content, not shown]"


def render_messages(result: types.GetPromptResult) -> str:
    messages = result.messages
    if len(messages) == 1 and messages[0].role == "user":
        return _content_text(messages[0].content)
    return "\n\n".join(f"[{m.role}]\n{_content_text(m.content)}" for m in messages)


async def prompt_command(service: ToolService, command: str, line: str) -> str:
    """The text to send for ``/server:prompt line``; an AgentError saying what went wrong."""
    server, _, name = command.partition(":")
    manager = manager_of(service)
    conn = manager.servers.get(server) if manager is not None else None
    if manager is None or conn is None:
        raise InvalidArgumentsError(f"No MCP server named {server!r} in this session.")
    if not offers_prompts(conn):
        state = "" if conn.state is ServerState.READY else f" (it is {conn.state.value})"
        raise InvalidArgumentsError(f"MCP server {server!r} offers no prompts{state}.")
    prompts = await list_prompts(conn)
    prompt = next((p for p in prompts if p.name == name), None)
    if prompt is None:
        known = ", ".join(f"/{server}:{p.name}" for p in prompts) or "none"
        raise InvalidArgumentsError(f"MCP server {server!r} has no prompt {name!r}: {known}.")
    arguments = parse_arguments(prompt, line)
    result = await conn.request(
        f"prompt {command}", lambda c: c.get_prompt(name, arguments=arguments)
    )
    from codingcode.mcp.results import cap_text

    return cap_text(f"{server}_{name}_prompt", render_messages(result))


async def prompt_commands(service: ToolService) -> list[tuple[str, str, str]]:
    """``(/server:prompt, argument usage, description)`` of every running server's prompts
    (for /help and /mcp)."""
    manager = manager_of(service)
    if manager is None:
        return []
    out: list[tuple[str, str, str]] = []
    for conn in manager.servers.values():
        if not offers_prompts(conn):
            continue
        try:
            prompts = await list_prompts(conn)
        except AgentError:
            continue
        for p in prompts:
            about = " ".join((p.description or p.title or "").split())[:100]
            usage = " ".join(
                f"{a.name}=…" if a.required else f"[{a.name}=…]" for a in p.arguments or []
            )
            out.append((f"/{conn.name}:{p.name}", usage, about))
    return out
