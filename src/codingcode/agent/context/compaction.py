"""Compaction: the older part of a conversation replaced by a summary, the recent turns kept.

When: before a request that would fill more than ``compactThreshold`` (default 80 %) of the
model's context window, when the endpoint still answers "context length exceeded", and on
``/compact [focus]``.

How: the messages are split at a turn boundary so that the recent part takes at most
:data:`KEEP_SHARE` of the window (at least the last exchange is kept). The older part is
written out as plain text (long tool outputs shortened: they are saved whole in the session
directory anyway) and summarised by a separate model call that offers no tools. The
summary, the todo list and the files being worked on become one message that replaces the
older part. If that call fails, a summary is built without the model (the user's requests,
the files and the todos) so the session goes on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from codingcode.agent.context.tokens import CHARS_PER_TOKEN, estimate_message, estimate_text
from codingcode.agent.providers.base import ModelProvider
from codingcode.agent.sessions.store import SUMMARY_HEADER, summary_message
from codingcode.agent.transcript import Message, ToolResult, TurnComplete

#: The recent part kept whole takes at most this share of the window.
KEEP_SHARE = 0.3
#: The text sent to be summarised takes at most this share of the window.
SUMMARY_INPUT_SHARE = 0.5
#: Each tool output is shortened to this many characters in the text to summarise.
RESULT_CHARS = 1_500
#: Kept tool outputs are shortened to this many characters when the recent part alone is
#: still too large.
KEPT_RESULT_CHARS = 2_000
PATH_TOOLS = ("read_file", "write_file", "edit_file")

SUMMARY_SYSTEM = """You summarise a coding agent's conversation so the agent can continue the \
work without the original messages. Write a concise, factual summary: the user's requests \
and constraints, what was done (files read, changed, commands run and their important \
results), decisions and their reasons, errors met and how they were resolved, and what \
remains to do. Keep exact file paths, names, numbers and error messages that matter. Do \
not call tools; answer with the summary only."""


@dataclass
class Compaction:
    history: list[Message]
    summary: str
    kept: int
    summarized: int


def split_point(history: Sequence[Message], budget_tokens: int) -> int:
    """Index where the kept recent part starts: a user or assistant message (never tool
    results, which must follow their calls), as early as the budget allows; at least the
    last exchange is kept and at least the first message summarised (``len`` if none can)."""
    used = 0
    chosen: int | None = None
    for i in range(len(history) - 1, 0, -1):
        used += estimate_message(history[i])
        if history[i].role == "tool":
            continue
        if chosen is None or used <= budget_tokens:
            chosen = i
        if used > budget_tokens:
            break
    return chosen if chosen is not None else len(history)


def _short(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - limit} characters left out ...]\n{text[-half:]}"


def render(messages: Sequence[Message], budget_chars: int) -> str:
    """The messages as plain text for the summariser, newest kept when over the budget
    (a previous summary, first, is always kept)."""
    blocks: list[str] = []
    for m in messages:
        if m.role == "user":
            blocks.append(f"USER: {m.text}")
        elif m.role == "assistant":
            parts = [f"ASSISTANT: {m.text}" if m.text else "ASSISTANT:"]
            for c in m.tool_calls:
                args = c.raw_arguments or str(c.arguments)
                parts.append(f"  called {c.name}({_short(args, 400)})")
            blocks.append("\n".join(parts))
        else:
            for r in m.results:
                status = f" [{r.error_kind or 'error'}]" if r.is_error else ""
                blocks.append(f"RESULT of {r.name}{status}:\n{_short(r.content, RESULT_CHARS)}")
    first = blocks[0] if blocks and blocks[0].startswith(f"USER: {SUMMARY_HEADER}") else None
    rest = blocks[1:] if first else blocks
    kept: list[str] = []
    size = len(first or "")
    for block in reversed(rest):
        if size + len(block) > budget_chars:
            kept.append("[... older messages left out ...]")
            break
        kept.append(block)
        size += len(block)
    kept.reverse()
    return "\n\n".join(([first] if first else []) + kept)


def files_worked_on(messages: Sequence[Message], limit: int = 20) -> list[str]:
    seen: dict[str, None] = {}
    for m in messages:
        for c in m.tool_calls:
            if c.name in PATH_TOOLS and isinstance(c.arguments, dict):
                path = c.arguments.get("path")
                if isinstance(path, str) and path:
                    seen.pop(path, None)
                    seen[path] = None
    return list(seen)[-limit:]


def fallback_summary(messages: Sequence[Message]) -> str:
    requests = [m.text for m in messages if m.role == "user" and m.text]
    lines = ["(The summarising model call failed; this summary was built without it.)"]
    lines += [f"- The user asked: {_short(t, 600)}" for t in requests[-10:]]
    calls = sum(len(m.tool_calls) for m in messages)
    lines.append(f"- {calls} tool calls were made in that part of the conversation.")
    return "\n".join(lines)


def shrink_results(messages: list[Message], limit: int) -> list[Message]:
    out = []
    for m in messages:
        if m.role == "tool":
            m = Message(
                "tool",
                results=[
                    ToolResult(
                        r.call_id, r.name, _short(r.content, limit), r.is_error, r.error_kind
                    )
                    for r in m.results
                ],
            )
        out.append(m)
    return out


async def summarize(provider: ModelProvider, text: str, focus: str | None) -> str:
    prompt = "Summarise this conversation so the work can continue.\n"
    if focus:
        prompt += f"Focus especially on: {focus}\n"
    prompt += f"\n<conversation>\n{text}\n</conversation>"
    done: list[TurnComplete] = []
    async for event in provider.stream(SUMMARY_SYSTEM, [Message("user", prompt)], []):
        if isinstance(event, TurnComplete):
            done.append(event)
    summary = done[-1].message.text.strip() if done else ""
    if not summary:
        raise ValueError("the summary came back empty")
    return summary


async def compact(
    history: list[Message],
    *,
    provider: ModelProvider,
    window: int,
    todos: list[dict[str, str]],
    focus: str | None = None,
) -> Compaction | None:
    """The compacted history, or None when there is nothing older to summarise."""
    cut = split_point(history, int(window * KEEP_SHARE))
    if cut >= len(history):
        return None
    older, recent = history[:cut], history[cut:]
    text = render(older, int(window * SUMMARY_INPUT_SHARE * CHARS_PER_TOKEN))
    try:
        summary = await summarize(provider, text, focus)
    except Exception:  # the model call failed: the session goes on with a plainer summary
        summary = fallback_summary(older)
    extra = []
    files = files_worked_on(history)
    if files:
        extra.append("Files being worked on: " + ", ".join(files))
    if todos:
        marks = {"completed": "[x]", "in_progress": "[>]", "pending": "[ ]"}
        extra.append(
            "Todo list:\n"
            + "\n".join(f"{marks.get(t['status'], '[ ]')} {t['step']}" for t in todos)
        )
    full = summary + ("\n\n" + "\n\n".join(extra) if extra else "")
    kept_budget = int(window * KEEP_SHARE)
    if sum(estimate_message(m) for m in recent) > kept_budget:
        recent = shrink_results(recent, KEPT_RESULT_CHARS)
    if estimate_text(full) > kept_budget:
        full = _short(full, int(kept_budget * CHARS_PER_TOKEN))
    return Compaction([summary_message(full), *recent], full, len(recent), len(older))
