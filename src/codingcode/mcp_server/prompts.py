"""Prompts served by ``codingcode mcp``, from any number of :class:`PromptSource`.

A source lists prompts in MCP wire form, renders one into messages, and may complete an
argument. Two kinds plug in: installed packages' ``codingcode.prompts`` entry points
(:class:`PluginPrompts`), and — through the same protocol — the project's custom slash
commands once their loader exists (see docs/mcp.md).

A ``codingcode.prompts`` entry point names an object with ``prompts`` (a list of prompts in
wire form: ``name``, ``description``, ``arguments``), ``async get(name, **arguments)``
returning the messages in wire form (``[{"role": "user", "content": {...}}]``) and
optionally ``async complete(name, argument_name, value)`` returning candidate values.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from codingcode.errors import AgentError, InvalidArgumentsError, NotFoundError, ToolFailureError
from codingcode.plugins import PluginSet

PROMPT_GROUP = "codingcode.prompts"
MAX_COMPLETIONS = 100


class PromptSource(Protocol):
    def list_prompts(self) -> list[dict[str, Any]]: ...
    async def get_prompt(self, name: str, arguments: dict[str, str]) -> list[dict[str, Any]]:
        """The messages (wire form); NotFoundError if ``name`` is not this source's."""
        ...

    async def complete(self, name: str, argument: str, value: str) -> list[str]: ...


def check_arguments(prompt: dict[str, Any], arguments: dict[str, str]) -> None:
    declared = prompt.get("arguments") or []
    missing = [a["name"] for a in declared if a.get("required") and a.get("name") not in arguments]
    if missing:
        raise InvalidArgumentsError(
            f"Prompt {prompt['name']} needs the argument(s) {', '.join(missing)}."
        )


@dataclass
class PluginPrompts(PluginSet):
    """The ``codingcode.prompts`` providers of installed packages (a PromptSource)."""

    providers: list[Any] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    group: ClassVar[str] = PROMPT_GROUP
    kind: ClassVar[str] = "prompt"

    def add(self, provider: Any) -> None:
        prompts = getattr(provider, "prompts", None)
        if not isinstance(prompts, list) or not all(
            isinstance(p, dict) and isinstance(p.get("name"), str) for p in prompts
        ):
            raise TypeError("its prompts is not a list of prompts in wire form")
        if not callable(getattr(provider, "get", None)):
            raise TypeError("it has no get(**arguments)")
        self.providers.append(provider)

    def _find(self, name: str) -> tuple[Any, dict[str, Any]]:
        for provider in self.providers:
            for prompt in provider.prompts:
                if prompt["name"] == name:
                    return provider, prompt
        raise NotFoundError(f"No prompt named {name!r}.")

    def list_prompts(self) -> list[dict[str, Any]]:
        return [p for provider in self.providers for p in provider.prompts]

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> list[dict[str, Any]]:
        provider, prompt = self._find(name)
        check_arguments(prompt, arguments)
        try:
            if _takes_prompt_name(provider.get, prompt):
                messages = await provider.get(name, **arguments)
            else:  # the contract's form: get(**arguments)
                messages = await provider.get(**arguments)
        except AgentError:
            raise
        except Exception as exc:
            raise ToolFailureError(f"Prompt {name} failed: {type(exc).__name__}: {exc}") from None
        if not isinstance(messages, list):
            raise ToolFailureError(f"Prompt {name} gave {type(messages).__name__}, not messages.")
        return messages

    async def complete(self, name: str, argument: str, value: str) -> list[str]:
        provider, _ = self._find(name)
        complete = getattr(provider, "complete", None)
        if not callable(complete):
            return []
        if _positional_count(complete) >= 3:  # complete(prompt_name, argument_name, value)
            values = await complete(name, argument, value)
        else:  # the contract's form: complete(argument_name, value)
            values = await complete(argument, value)
        return [str(v) for v in values][:MAX_COMPLETIONS]


def _positional_count(fn: Any) -> int:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 0
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(1 for p in params if p.kind in kinds)


def _takes_prompt_name(get: Any, prompt: dict[str, Any]) -> bool:
    """Whether a plugin's ``get`` takes the prompt's name first (one object serving several
    prompts: ``get(name, **arguments)``) rather than the contract's ``get(**arguments)``: its
    first positional parameter is not one of the prompt's declared arguments."""
    try:
        params = list(inspect.signature(get).parameters.values())
    except (TypeError, ValueError):
        return False
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    first = next((p for p in params if p.kind in kinds), None)
    declared = {a.get("name") for a in prompt.get("arguments") or [] if isinstance(a, dict)}
    return first is not None and first.name not in declared


@dataclass
class CommandPrompts:
    """The custom slash commands (a ``codingcode.custom_commands`` CommandRegistry, or anything with
    ``list()`` of commands that have ``name``, ``description``, ``argument_hint`` and ``async
    prompt(arguments)``) as prompts with one optional argument, ``arguments``: the text after
    ``/name``. The prompt is the command's text with the arguments put in; its ``!`` lines
    are not run and its ``@`` files not read here (the client gets the text as written)."""

    registry: Any

    def _commands(self) -> dict[str, Any]:
        return {c.name: c for c in self.registry.list()}

    def list_prompts(self) -> list[dict[str, Any]]:
        prompts = []
        for command in self._commands().values():
            hint = command.argument_hint or "the text after the command's name"
            prompts.append(
                {
                    "name": command.name,
                    "description": command.description or f"/{command.name}",
                    "arguments": [{"name": "arguments", "description": hint, "required": False}],
                }
            )
        return prompts

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> list[dict[str, Any]]:
        command = self._commands().get(name)
        if command is None:
            raise NotFoundError(f"No prompt named {name!r}.")
        unknown = set(arguments) - {"arguments"}
        if unknown:
            raise InvalidArgumentsError(
                f"Prompt {name} takes one argument, `arguments`; got {', '.join(sorted(unknown))}."
            )
        prepared = await command.prompt(arguments.get("arguments", ""))
        return [{"role": "user", "content": {"type": "text", "text": prepared.text}}]

    async def complete(self, name: str, argument: str, value: str) -> list[str]:
        return []


def project_commands(
    project: Path, is_trusted: Callable[[Path, bytes], bool]
) -> tuple[CommandPrompts, list[str]]:
    """The project's and the user's custom commands (``codingcode.custom_commands``) as a prompt
    source, with the loader's notes (one line per file that could not be loaded)."""
    from codingcode.custom_commands import CommandRegistry

    registry = CommandRegistry.load(project, is_trusted=is_trusted)
    return CommandPrompts(registry), list(registry.notes)
