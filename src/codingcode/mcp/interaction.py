"""What MCP servers ask of, and tell, the person using codingcode: elicitation (form mode),
progress and logging notifications; and the roots we announce (the project).

One :class:`Interaction` is installed at a time (:func:`install`); the app installs the
terminal's (:class:`TerminalInteraction`), everything else runs :class:`Headless`:

* **elicitation** — the app asks the user, field by field, with the server's schema (the
  answer is checked against it before it is sent); headless declines, unless the server's
  entry says ``"elicitation": "accept-defaults"``, which accepts the form filled with the
  schema's defaults (declined when a required field has none). URL-mode requests are
  declined: we never open a page a server names.
* **progress** — a line per update on long calls (at most every 0.5 s per call).
* **logging** — the server's log messages: shown in the app from ``warning`` up, kept at
  debug level in the ``codingcode.mcp`` logger otherwise.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

import mcp_types as types

if TYPE_CHECKING:
    from rich.console import Console

logger = logging.getLogger("codingcode.mcp")

#: Log levels of RFC 5424 as MCP names them, least to most severe.
LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
_MAX_LOG_CHARS = 500


class Interaction(Protocol):
    async def elicit(
        self, server: str, message: str, schema: dict[str, Any], policy: str | None
    ) -> types.ElicitResult: ...

    def progress(
        self, server: str, what: str, progress: float, total: float | None, message: str | None
    ) -> None: ...

    def log(self, server: str, level: str, source: str | None, data: Any) -> None: ...


def defaults_of(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The form filled with its schema's defaults; None if a required field has none."""
    props = schema.get("properties") or {}
    content = {k: p["default"] for k, p in props.items() if isinstance(p, dict) and "default" in p}
    if any(name not in content for name in schema.get("required") or []):
        return None
    return content


def check_answer(schema: dict[str, Any], content: dict[str, Any]) -> str | None:
    """Why ``content`` does not fit ``schema`` (one line), or None."""
    from jsonschema import validators

    try:
        cls = validators.validator_for(schema)
        errors = list(cls(schema).iter_errors(content))
    except Exception as exc:  # a schema we cannot check: the server will
        logger.debug("elicitation schema not checkable: %s", exc)
        return None
    if not errors:
        return None
    err = errors[0]
    where = ".".join(str(p) for p in err.path) or "(form)"
    return f"{where}: {err.message}"


class Headless:
    """No one to ask: decline (or accept the defaults, if the entry says so); progress
    ignored; server logs kept at debug level."""

    async def elicit(
        self, server: str, message: str, schema: dict[str, Any], policy: str | None
    ) -> types.ElicitResult:
        if policy == "accept-defaults":
            content = defaults_of(schema)
            if content is not None and check_answer(schema, content) is None:
                return types.ElicitResult(action="accept", content=content)
        return types.ElicitResult(action="decline")

    def progress(
        self, server: str, what: str, progress: float, total: float | None, message: str | None
    ) -> None:
        pass

    def log(self, server: str, level: str, source: str | None, data: Any) -> None:
        logger.debug("MCP server %r [%s] %s", server, level, _one_line(data))


_current: Interaction = Headless()


def current() -> Interaction:
    return _current


@contextlib.contextmanager
def install(interaction: Interaction) -> Iterator[Interaction]:
    """Use ``interaction`` until the block ends (then the previous one again)."""
    global _current
    previous, _current = _current, interaction
    try:
        yield interaction
    finally:
        _current = previous


def _one_line(data: Any) -> str:
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= _MAX_LOG_CHARS else text[:_MAX_LOG_CHARS] + "…"


Ask = Callable[[str, str | None], Awaitable[str]]


class TerminalInteraction:
    """The app's: questions asked on the terminal (one at a time, under ``lock``), progress
    and warnings printed as dim lines. ``before`` runs before a question (stop live output)."""

    def __init__(
        self,
        console: Console,
        lock: Any,
        before: Callable[[], None] | None = None,
        ask: Ask | None = None,
    ) -> None:
        self.console = console
        self.lock = lock
        self.before = before
        self._ask = ask or _prompt_line
        self._last: dict[str, float] = {}

    def _print(self, text: str, style: str = "dim") -> None:
        from rich.text import Text

        self.console.print(Text(text, style=style))

    async def elicit(
        self, server: str, message: str, schema: dict[str, Any], policy: str | None
    ) -> types.ElicitResult:
        async with self.lock:
            if self.before is not None:
                self.before()
            try:
                return await self._form(server, message, schema)
            except (KeyboardInterrupt, EOFError):
                self._print("→ cancelled", "bold")
                return types.ElicitResult(action="cancel")

    async def _form(self, server: str, message: str, schema: dict[str, Any]) -> types.ElicitResult:
        self._print(f"\n? MCP server {server!r} asks: {' '.join(message.split())}", "bold yellow")
        props: dict[str, Any] = schema.get("properties") or {}
        required = set(schema.get("required") or [])
        while True:
            choice = (await self._ask("Answer it? [y]es / [d]ecline / [c]ancel ", "y")).strip()
            if choice.lower() in ("d", "decline"):
                return types.ElicitResult(action="decline")
            if choice.lower() in ("c", "cancel"):
                return types.ElicitResult(action="cancel")
            content: dict[str, Any] = {}
            for name, prop in props.items():
                prop = prop if isinstance(prop, dict) else {}
                value = await self._field(name, prop, name in required)
                if value is not None:
                    content[name] = value
            problem = check_answer(schema, content)
            if problem is None:
                return types.ElicitResult(action="accept", content=content)
            self._print(f"That does not fit the form ({problem}); again.", "yellow")

    async def _field(self, name: str, prop: dict[str, Any], required: bool) -> Any:
        kind = prop.get("type", "string")
        options = prop.get("enum") or [
            o.get("const") for o in prop.get("oneOf") or [] if isinstance(o, dict)
        ]
        label = prop.get("title") or name
        about = f" — {prop['description']}" if prop.get("description") else ""
        hint = f" ({'/'.join(map(str, options))})" if options else f" ({kind})"
        need = "" if required else " [optional, Enter to skip]"
        default = prop.get("default")
        while True:
            raw = await self._ask(
                f"  {label}{about}{hint}{need}: ",
                None
                if default is None
                else str(default).lower()
                if isinstance(default, bool)
                else str(default),
            )
            raw = raw.strip()
            if not raw:
                if not required:
                    return None
                self._print("  (required)", "yellow")
                continue
            try:
                return _convert(kind, raw)
            except ValueError as exc:
                self._print(f"  {exc}", "yellow")

    def progress(
        self, server: str, what: str, progress: float, total: float | None, message: str | None
    ) -> None:
        now = time.monotonic()
        done = total is not None and progress >= total
        if not done and now - self._last.get(what, 0.0) < 0.5:
            return
        self._last[what] = now
        if total:
            width = 20
            filled = min(width, int(width * progress / total))
            bar = "█" * filled + "·" * (width - filled)
            amount = f"{bar} {progress:g}/{total:g}"
        else:
            amount = f"{progress:g}"
        said = f" {' '.join(message.split())[:120]}" if message else ""
        self._print(f"  ⋯ {what} {amount}{said}")

    def log(self, server: str, level: str, source: str | None, data: Any) -> None:
        Headless.log(Headless(), server, level, source, data)
        if level in LEVELS and LEVELS.index(level) >= LEVELS.index("warning"):
            self._print(f"  [{server} {level}] {_one_line(data)}", "yellow")


def _convert(kind: str, raw: str) -> Any:
    if kind == "boolean":
        low = raw.lower()
        if low in ("y", "yes", "true", "1"):
            return True
        if low in ("n", "no", "false", "0"):
            return False
        raise ValueError("answer yes or no")
    if kind == "integer":
        try:
            return int(raw)
        except ValueError:
            raise ValueError("a whole number, please") from None
    if kind == "number":
        try:
            return float(raw)
        except ValueError:
            raise ValueError("a number, please") from None
    return raw


async def _prompt_line(text: str, default: str | None) -> str:
    from prompt_toolkit import PromptSession

    session: PromptSession[str] = PromptSession()
    return await session.prompt_async(text, default=default or "", handle_sigint=False)
