"""What the agent loop needs from a model: one streamed response per request."""

from __future__ import annotations

import hashlib
import json
import random
import re
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, Protocol

import anyio
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from codingcode.agent.transcript import Message, StreamEvent, ToolCall
from codingcode.tools.definition import ToolDefinition

if TYPE_CHECKING:
    from codingcode.config import Settings


class ModelProvider(Protocol):
    name: str
    model: str

    def stream(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolDefinition]
    ) -> AsyncIterator[StreamEvent]:
        """Stream one response: text deltas, then exactly one TurnComplete."""
        ...

    async def aclose(self) -> None: ...


def parse_arguments(call_id: str, name: str, raw: str) -> ToolCall:
    """A tool call from the raw JSON text of its arguments (None when it is not an object)."""
    text = raw.strip()
    if not text:
        return ToolCall(call_id, name, {}, raw)
    try:
        value: Any = json.loads(text)
    except json.JSONDecodeError:
        return ToolCall(call_id, name, None, raw)
    return ToolCall(call_id, name, value if isinstance(value, dict) else None, raw)


def error_message(exc: Any) -> str:
    """The human part of an SDK's API error (its JSON ``error.message`` when there is one)."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
    return str(getattr(exc, "message", exc))


#: Phrases of the endpoints' "your conversation is too long" refusals (HTTP 400).
_CONTEXT_PHRASES = (
    "context_length_exceeded",
    "prompt is too long",
    "maximum context length",
    "context length",
    "context window",
    "too many tokens",
)


def is_context_overflow(exc: Any) -> bool:
    """Whether an SDK's API error says the request is longer than the model's context window
    (OpenAI: code ``context_length_exceeded``; Anthropic: "prompt is too long")."""
    if getattr(exc, "status_code", None) not in (400, 413):
        return False
    if getattr(exc, "code", None) == "context_length_exceeded":
        return True
    body = getattr(exc, "body", None)
    error = body.get("error", body) if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("code") == "context_length_exceeded":
        return True
    text = error_message(exc).lower()
    return any(p in text for p in _CONTEXT_PHRASES)


_LIMIT_PATTERNS = (
    re.compile(r"maximum context length is (\d+)"),
    re.compile(r"> ?(\d+) maximum"),
    re.compile(r"context (?:window|length|limit)[^0-9]{0,20}(\d{3,})"),
)


def context_limit(exc: Any) -> int | None:
    """The window an overflow refusal names ("maximum context length is 8192 tokens",
    "prompt is too long: 9000 tokens > 8192 maximum"), if it names one."""
    text = error_message(exc)
    for pattern in _LIMIT_PATTERNS:
        m = pattern.search(text)
        if m:
            return int(m.group(1))
    return None


_WIRE_OK = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


class WireNames:
    """Tool names as the APIs accept them, and back.

    Both APIs allow only ``[A-Za-z0-9_-]{1,64}`` in a tool name, while MCP tools are named
    ``server:tool`` (SPEC L3). Each request maps every offered name to a valid one
    (``github:create_issue`` → ``github__create_issue``; a clash or an over-long name gets a
    short hash) and maps the model's calls back, so the rest of codingcode only sees real names.
    """

    def __init__(self, names: Sequence[str]) -> None:
        self._to_wire: dict[str, str] = {}
        self._from_wire: dict[str, str] = {}
        for name in names:
            self.add(name)

    def add(self, name: str) -> str:
        if name in self._to_wire:
            return self._to_wire[name]
        wire = (
            name
            if _WIRE_OK.match(name)
            else re.sub(r"[^A-Za-z0-9_-]", "_", name.replace(":", "__"))
        )
        if len(wire) > 64 or wire in self._from_wire or not wire:
            digest = hashlib.sha1(name.encode()).hexdigest()[:8]
            wire = f"{wire[:55]}_{digest}"
        self._to_wire[name] = wire
        self._from_wire[wire] = name
        return wire

    def to_wire(self, name: str) -> str:
        return self.add(name)

    def from_wire(self, wire: str) -> str:
        return self._from_wire.get(wire, wire)


# -- timeouts and retries ---------------------------------------------------------------
class ModelClientSettings(BaseModel):
    """The ``model_client`` section of the settings: how long to wait for the model
    endpoint and how to retry it (both providers)."""

    model_config = ConfigDict(extra="forbid")
    #: Seconds to open the connection.
    connect_timeout_s: float = Field(default=10.0, gt=0, le=600)
    #: Seconds without a byte from the endpoint (before the answer starts or between two
    #: chunks of the stream) before the request is given up.
    read_timeout_s: float = Field(default=300.0, gt=0, le=3600)
    #: Retries of a request that failed before any of the answer arrived: HTTP 408, 409,
    #: 429, 5xx (529 overloaded included), an overloaded error event, a broken connection
    #: or a timeout.
    max_retries: int = Field(default=4, ge=0, le=20)
    #: The longest wait before a retry; a Retry-After asking for more fails at once.
    max_retry_wait_s: float = Field(default=60.0, ge=0, le=3600)


#: Statuses worth another try (besides every 5xx: 500-504, 529 overloaded, ...).
RETRY_STATUSES = frozenset({408, 409, 429})
#: First backoff (seconds); doubled each retry, with jitter, up to ``max_retry_wait_s``.
INITIAL_BACKOFF_S = 1.0


def load_client_settings(settings: Settings) -> ModelClientSettings:
    """The merged ``model_client`` settings (``settings``: the session's, already read)."""
    from codingcode.config import SettingsError, merge_values

    merged: dict[str, Any] = {}
    sources = [(str(f.path), v) for f, v in settings.sources("model_client")]
    for where, value in sources:
        try:
            ModelClientSettings.model_validate(value)
        except ValidationError as exc:
            problems = "; ".join(
                f"model_client.{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
                for e in exc.errors(include_url=False)
            )
            raise SettingsError(f"Settings file {where}: {problems}.") from None
        merged = merge_values(merged, value)
    return ModelClientSettings.model_validate(merged)


def http_timeout(sdk: Any, settings: ModelClientSettings) -> Any:
    """The SDK's own Timeout class (the SDKs may use httpx or its fork httpx2)."""
    return sdk.Timeout(
        settings.read_timeout_s,
        connect=settings.connect_timeout_s,
        write=settings.read_timeout_s,
        pool=settings.connect_timeout_s,
    )


@dataclass(frozen=True)
class Failure:
    """What went wrong with one attempt, as the provider judged it."""

    message: str
    retryable: bool = False
    #: A short name of the cause, shown with a retry ("connection refused", "HTTP 503").
    reason: str = ""
    #: The endpoint refused the connection: nothing listens there, retried only briefly.
    refused: bool = False
    #: Seconds the endpoint asked us to wait (Retry-After), when it did.
    retry_after: float | None = None
    #: The request is longer than the model's context window (the loop compacts and asks
    #: again: ContextLengthExceeded), and the window the refusal named, if any.
    overflow: bool = False
    context_limit: int | None = None


def retry_after_seconds(headers: Any) -> float | None:
    """``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date), when present."""
    if headers is None:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000)
        value = headers.get("retry-after")
    except (AttributeError, TypeError, ValueError):
        return None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def http_errors() -> tuple[tuple[type[Exception], ...], tuple[type[Exception], ...]]:
    """(timeouts, transport errors) of httpx and of httpx2, whichever the SDKs stream with:
    these can escape the SDKs unwrapped while a stream is being read."""
    timeouts: list[type[Exception]] = []
    transport: list[type[Exception]] = []
    for name in ("httpx", "httpx2"):
        try:
            module = __import__(name)
        except ImportError:
            continue
        timeouts.append(module.TimeoutException)
        transport.append(module.TransportError)
    return tuple(timeouts), tuple(transport)


def one_line(text: str) -> str:
    return " ".join(text.split())


#: Exceptions a malformed stream chunk turns into inside the SDKs (bad JSON, a missing or
#: mistyped field); they are reported as such, never as a traceback.
MALFORMED = (ValueError, TypeError, AttributeError, KeyError, IndexError)


#: A refused connection (nothing listens there) is retried at most this many times, after
#: these short waits: a server that is starting gets a moment, a dead one fails fast.
REFUSED_RETRIES = 2
REFUSED_WAIT_S = 0.5

#: Who is told of each retry while it waits (the session sets it around its requests).
RetryNotice = Callable[[float, int, int, str], None]
retry_notice: ContextVar[RetryNotice | None] = ContextVar("retry_notice", default=None)


def check_base_url(variable: str, value: str | None) -> None:
    """A base URL from the environment must be an http(s) URL with a host: anything else
    fails at once with one line, never retried."""
    from urllib.parse import urlsplit

    from codingcode.agent.model import ModelError

    if value is None or value == "":
        return
    try:
        parts = urlsplit(value.strip())
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
        if ok:
            parts.port  # noqa: B018  # a bad port raises here
    except ValueError:
        ok = False
    if not ok:
        raise ModelError(
            f"{variable}={value!r} is not a valid URL: give the endpoint as "
            "http(s)://host[:port][/path], e.g. http://localhost:8000/v1."
        )


def is_refused(exc: BaseException) -> bool:
    """Whether a connection error is a refused connection (ECONNREFUSED) somewhere in its
    chain of causes."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError):
            return True
        text = str(current)
        if "Connection refused" in text or "[Errno 111]" in text:
            return True
        current = current.__cause__ or current.__context__
    return False


async def stream_with_retries(
    attempt: Callable[[], AsyncIterator[StreamEvent]],
    classify: Callable[[Exception], Failure | None],
    settings: ModelClientSettings,
) -> AsyncIterator[StreamEvent]:
    """Run ``attempt`` and retry it, with backoff, while it fails retryably before it has
    yielded anything; every other failure becomes one ModelError line. Each retry is told
    (:data:`retry_notice`) before its wait."""
    from codingcode.agent.model import ModelError

    retries = 0
    while True:
        yielded = False
        try:
            async for event in attempt():
                yielded = True
                yield event
            return
        except Exception as exc:
            failure = classify(exc)
            if failure is None:
                raise
        if failure.overflow:
            from codingcode.agent.model import ContextLengthExceeded

            raise ContextLengthExceeded(one_line(failure.message), limit=failure.context_limit)
        done = f" (gave up after {retries + 1} attempts)" if retries else ""
        limit = (
            min(settings.max_retries, REFUSED_RETRIES) if failure.refused else settings.max_retries
        )
        if not failure.retryable or yielded or retries >= limit:
            raise ModelError(one_line(failure.message + done))
        if failure.retry_after is not None:
            wait = failure.retry_after
            if wait > settings.max_retry_wait_s:
                raise ModelError(
                    one_line(
                        f"{failure.message} The endpoint asks to retry after {wait:g}s, longer "
                        f"than model_client.max_retry_wait_s ({settings.max_retry_wait_s:g}s); "
                        "try again later."
                    )
                )
        elif failure.refused:
            wait = min(settings.max_retry_wait_s, REFUSED_WAIT_S * 2**retries)
        else:
            wait = min(
                settings.max_retry_wait_s,
                INITIAL_BACKOFF_S * 2**retries * random.uniform(0.75, 1.25),
            )
        retries += 1
        notice = retry_notice.get()
        if notice is not None:
            reason = failure.reason or one_line(failure.message)[:120]
            notice(wait, retries + 1, limit + 1, reason)
        await anyio.sleep(wait)


@dataclass(frozen=True)
class EndpointWords:
    """How one provider names its endpoint in the failures it reports (:func:`classify`)."""

    #: "The {endpoint} did not answer", "Cannot reach the {endpoint}" (with its address).
    endpoint: str
    #: "The {short} refused the request".
    short: str
    #: "The {request} request failed".
    request: str
    #: Said after "Cannot reach ...": what to check.
    reach_hint: str
    #: What a malformed piece of the stream is called ("stream chunk", "stream event").
    piece: str


def classify(
    exc: Exception,
    sdk: Any,
    settings: ModelClientSettings,
    words: EndpointWords,
    base_error: type[Exception],
    *,
    error_kind: Callable[[Any], str | None] | None = None,
    retry_kinds: frozenset[str] = frozenset(),
) -> Failure | None:
    """One attempt's exception as a :class:`Failure` (None: not one the SDKs raise).

    ``sdk`` is the SDK module (its ``APIStatusError``, ``APITimeoutError`` and
    ``APIConnectionError``), ``base_error`` its base error class;
    ``error_kind`` reads the error type a refusal's body names (said with the status), and a
    refusal below 400 (an error event mid-stream) of a kind in ``retry_kinds`` is retried."""
    timeouts, transport = http_errors()
    if isinstance(exc, sdk.APIStatusError):
        status = exc.status_code
        if is_context_overflow(exc):
            return Failure(
                f"The conversation is too long for the model: {error_message(exc)}",
                overflow=True,
                context_limit=context_limit(exc),
            )
        kind = error_kind(exc) if error_kind is not None else None
        return Failure(
            f"The {words.short} refused the request (HTTP {status}"
            f"{', ' + str(kind) if kind else ''}): {error_message(exc)}",
            retryable=status in RETRY_STATUSES
            or status >= 500
            or (status < 400 and kind in retry_kinds),
            retry_after=retry_after_seconds(getattr(exc.response, "headers", None)),
            reason=f"HTTP {status}" + (f" {kind}" if kind else ""),
        )
    if isinstance(exc, (sdk.APITimeoutError, *timeouts)):
        return Failure(
            f"The {words.endpoint} did not answer in time (connect "
            f"{settings.connect_timeout_s:g}s, read {settings.read_timeout_s:g}s: "
            "model_client.connect_timeout_s / read_timeout_s in settings).",
            retryable=True,
            reason="timed out",
        )
    if isinstance(exc, (sdk.APIConnectionError, *transport)) and is_refused(exc):
        return Failure(
            f"Cannot reach the {words.endpoint}: connection refused (nothing listens "
            f"there). {words.reach_hint}",
            retryable=True,
            reason="connection refused",
            refused=True,
        )
    if isinstance(exc, sdk.APIConnectionError):
        return Failure(
            f"Cannot reach the {words.endpoint}: {exc}. {words.reach_hint}",
            retryable=True,
            reason="connection failed",
        )
    if isinstance(exc, transport):
        return Failure(
            f"The connection to the {words.endpoint} broke: {type(exc).__name__}: {exc}.",
            retryable=True,
            reason="connection broke",
        )
    if isinstance(exc, base_error):
        return Failure(f"The {words.request} request failed: {exc}")
    if isinstance(exc, MALFORMED):
        return Failure(
            f"The {words.endpoint} sent a malformed {words.piece} "
            f"({type(exc).__name__}: {str(exc)[:200]}); the answer was dropped."
        )
    return None


class StreamingProvider:
    """The skeleton both providers share: the endpoint checked up front, one request built
    per response (``_body`` and ``_tool`` its API's part), streamed by ``_attempt`` and retried
    by :func:`stream_with_retries` as ``_classify`` judges each failure. A provider fills in
    those four and its client."""

    name = ""
    #: The environment variable naming the endpoint (checked to be a URL at start).
    base_url_variable = ""
    model: str
    settings: ModelClientSettings
    _client: Any

    def _setup(self, model: str, settings: ModelClientSettings | None) -> None:
        import os

        self.model = model
        self.settings = settings or ModelClientSettings()
        check_base_url(self.base_url_variable, os.environ.get(self.base_url_variable))

    async def aclose(self) -> None:
        await self._client.close()

    def _request(
        self,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        names: WireNames,
    ) -> dict[str, Any]:
        """The SDK's arguments for one streamed response: the model, what :meth:`_body`
        adds, and each tool's schema (:meth:`_tool`) under its wire name."""
        kwargs: dict[str, Any] = {"model": self.model, "stream": True}
        kwargs.update(self._body(system, messages, names))
        if tools:
            kwargs["tools"] = [self._tool(t, names.to_wire(t.name)) for t in tools]
        return kwargs

    def _body(self, system: str, messages: Sequence[Message], names: WireNames) -> dict[str, Any]:
        """The conversation in this API's form, and whatever else its requests carry."""
        raise NotImplementedError

    def _tool(self, tool: ToolDefinition, name: str) -> dict[str, Any]:
        """One tool's schema in this API's form, named ``name``."""
        raise NotImplementedError

    def _attempt(self, kwargs: dict[str, Any], names: WireNames) -> AsyncIterator[StreamEvent]:
        raise NotImplementedError

    def _classify(self, exc: Exception) -> Failure | None:
        raise NotImplementedError

    async def stream(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolDefinition]
    ) -> AsyncIterator[StreamEvent]:
        names = WireNames([t.name for t in tools])
        kwargs = self._request(system, messages, tools, names)
        async for event in stream_with_retries(
            lambda: self._attempt(kwargs, names), self._classify, self.settings
        ):
            yield event
