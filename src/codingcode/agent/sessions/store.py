"""Sessions saved as they go: one append-only JSON-lines file per session, per project.

Layout: ``<user state dir>/projects/<project slug>/<session id>/session.jsonl``, and the
session's large tool outputs in ``outputs/`` beside it. Every record is one line, written
whole with one write as it happens (fsync'ed after each prompt and at compactions), so a
crash loses at most the record being written; a cut last line is skipped on reading (and fenced off by a newline before the
next record is appended), never glued to the next one.

Records (``type`` first): ``start`` (id, time, project, model, mode, parent), ``prompt``
(a turn begins: its number and the history length before it), ``message`` (a
:class:`Message`), ``decision`` (an approval decision), ``usage`` (one model response's
tokens), ``outcome`` (how a turn ended: answered, failed, cancelled, ...), ``compaction``
(the summary and how many recent messages were kept), ``clear``, ``rewind``.

A session is written from its first prompt on: the ``start`` record waits for it, so an app
opened and closed leaves no session behind. Files of the first format (no ``prompt``
records) still load: each user message is taken as a prompt.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codingcode.agent.transcript import Message, Usage
from codingcode.errors import AgentError, ErrorKind

FILE_NAME = "session.jsonl"
#: Written after a record a crash cut short, before the next one is appended.
CUT_MARKER = b'{"type":"cut"}'
VERSION = 2
#: Records that mean nothing before the first prompt (not worth creating the file for).
_NOTHING_YET = frozenset({"clear", "rewind"})


class SessionError(AgentError):
    """A saved session that cannot be used: unknown id, damaged file, ..."""

    kind = ErrorKind.INVALID_ARGUMENTS


def sessions_root() -> Path:
    from codingcode.config import user_state_dir

    return user_state_dir() / "projects"


def project_slug(project: Path) -> str:
    text = str(project.resolve())
    readable = re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")[-60:] or "root"
    return f"{readable}-{hashlib.sha256(text.encode()).hexdigest()[:10]}"


def project_dir(project: Path) -> Path:
    return sessions_root() / project_slug(project)


_ID_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,100}$")


class SessionStore:
    """The append-only file of one session."""

    def __init__(self, directory: Path, session_id: str) -> None:
        self.directory = directory
        self.session_id = session_id
        self.path = directory / FILE_NAME
        self._file: Any = None
        #: The start record of a new session, written with its first real record.
        self._pending: dict[str, Any] | None = None

    @property
    def outputs_dir(self) -> Path:
        return self.directory / "outputs"

    @classmethod
    def create(
        cls,
        project: Path,
        session_id: str,
        *,
        model: str,
        mode: str,
        parent: str | None = None,
    ) -> SessionStore:
        store = cls(project_dir(project) / session_id, session_id)
        store._pending = {
            "type": "start",
            "v": VERSION,
            "id": session_id,
            "time": time.time(),
            "project": str(project.resolve()),
            "model": model,
            "mode": mode,
            "parent": parent,
        }
        return store

    @property
    def written(self) -> bool:
        """Whether the session has a file (it has had a prompt, or was resumed)."""
        return self._pending is None

    def _open(self) -> Any:
        if self._file is None:
            self.directory.mkdir(parents=True, exist_ok=True)
            f = self.path.open("a+b")
            # A crash may have cut the last record: start ours on a fresh line.
            # The marker record says the line before it is such a remnant (not damage).
            if f.tell() > 0:
                f.seek(-1, os.SEEK_END)
                if f.read(1) != b"\n":
                    f.write(b"\n" + CUT_MARKER + b"\n")
            self._file = f
        return self._file

    def begin(self) -> None:
        """Write the file now (its start record), if it is not written yet: a prompt is
        arriving, and the hooks it fires get the file's path (``transcript_path``)."""
        if self._pending is not None:
            start, self._pending = self._pending, None
            root = sessions_root()
            if not root.exists():
                # Transcripts hold what the tools read: the user's alone.
                root.mkdir(parents=True, mode=0o700, exist_ok=True)
            self.directory.mkdir(parents=True, exist_ok=True)
            self.append(start, sync=True)

    def append(self, record: dict[str, Any], *, sync: bool = False) -> None:
        if self._pending is not None:
            if record.get("type") in _NOTHING_YET:
                return
            self.begin()
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
        f = self._open()
        f.write(line.encode("utf-8", errors="surrogatepass"))
        f.flush()
        if sync:
            os.fsync(f.fileno())

    # -- what the loop records ----------------------------------------------------------
    def message(self, message: Message) -> None:
        self.append({"type": "message", "time": time.time(), "message": message.to_json()})

    def prompt(self, turn: int, keep: int) -> None:
        """A turn begins: its number and how many messages came before its prompt."""
        self.append({"type": "prompt", "turn": turn, "keep": keep, "time": time.time()})

    def outcome(self, turn: int, status: str, detail: str = "") -> None:
        """How a turn ended (``failed``: with the one line the user saw)."""
        record: dict[str, Any] = {"type": "outcome", "turn": turn, "status": status}
        if detail:
            record["detail"] = detail[:300]
        self.append(record, sync=True)

    def usage(self, usage: Usage, *, estimated: bool) -> None:
        self.append(
            {
                "type": "usage",
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "estimated": estimated,
            }
        )

    def decision(self, record: dict[str, Any]) -> None:
        self.append({"type": "decision", "time": time.time(), **record})

    def compaction(self, summary: str, kept: int, reason: str) -> None:
        self.append(
            {
                "type": "compaction",
                "time": time.time(),
                "summary": summary,
                "kept": kept,
                "reason": reason,
            },
            sync=True,
        )

    def sync(self) -> None:
        """Make what was written durable (after each prompt; a crash of codingcode loses
        nothing already written — each record is one write — a power loss may lose the
        prompt in progress)."""
        if self._file is not None:
            os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


# -- reading --------------------------------------------------------------------------------
@dataclass
class LoadedSession:
    session_id: str
    directory: Path
    start: dict[str, Any]
    history: list[Message]
    usage: Usage = field(default_factory=Usage)
    #: How many prompts the session had (turns).
    turns: int = 0
    #: A note for the user when the last record was cut (a crash while writing it).
    note: str | None = None
    #: (turn, history length before its prompt) of the prompts still in the history.
    prompt_marks: list[tuple[int, int]] = field(default_factory=list)
    #: The number of the latest turn (new turns are numbered after it).
    last_turn: int = 0
    #: The session's first prompt (as saved, whatever was compacted or cleared since).
    first_prompt: str = ""


def iter_records(path: Path) -> Iterator[tuple[int, dict[str, Any] | None, bool]]:
    """(line number, record or None when unreadable, whether it is the last line)."""
    with path.open("rb") as f:
        lines = f.read().split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    for i, raw in enumerate(lines, start=1):
        last = i == len(lines)
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            yield i, None, last
            continue
        yield i, value if isinstance(value, dict) else None, last


def load(directory: Path) -> LoadedSession:
    """The session saved in ``directory``: its history, with compactions applied."""
    path = directory / FILE_NAME
    sid = directory.name
    if not path.is_file():
        raise SessionError(
            f"Session {sid} has no {FILE_NAME} in {directory}; it cannot be resumed."
        )
    start: dict[str, Any] | None = None
    history: list[Message] = []
    usage = Usage()
    note = None
    # Prompt records (this format), or each user message (the first format).
    marks: list[tuple[int, int]] = []
    guessed: list[tuple[int, int]] = []
    turns = last_turn = guessed_turns = 0
    first_prompt = ""
    try:
        bad: int | None = None
        for lineno, record, last in iter_records(path):
            if record is None:
                if bad is not None:
                    raise _damaged(path, bad)
                bad = lineno
                if last:
                    note = (
                        f"The last record of session {sid} was cut (a crash while saving it); "
                        "it was skipped."
                    )
                continue
            kind = record.get("type")
            if bad is not None:
                if kind != "cut":
                    raise _damaged(path, bad)
                bad = None
                continue
            if kind == "start" and start is None:
                start = record
            elif kind == "message":
                try:
                    message = Message.from_json(record["message"])
                except (KeyError, TypeError, ValueError) as exc:
                    raise SessionError(
                        f"Session file {path} line {lineno}: a message record is malformed "
                        f"({exc}). Start a new session, or fix or remove that line."
                    ) from None
                if message.role == "user":
                    first_prompt = first_prompt or message.text
                    guessed_turns += 1
                    guessed.append((guessed_turns, len(history)))
                history.append(message)
            elif kind == "prompt":
                try:
                    turn, keep = int(record["turn"]), int(record["keep"])
                except (KeyError, TypeError, ValueError):
                    raise SessionError(
                        f"Session file {path} line {lineno}: a prompt record is malformed. "
                        "Start a new session, or fix or remove that line."
                    ) from None
                turns += 1
                last_turn = max(last_turn, turn)
                marks.append((turn, keep))
            elif kind == "usage":
                usage.input_tokens += int(record.get("input_tokens") or 0)
                usage.output_tokens += int(record.get("output_tokens") or 0)
            elif kind == "clear":
                history, marks, guessed = [], [], []
            elif kind == "rewind":
                keep = int(record.get("keep") or 0)
                history = history[:keep]
                marks = [m for m in marks if m[1] < keep]
                guessed = [m for m in guessed if m[1] < keep]
            elif kind == "compaction":
                kept = int(record.get("kept") or 0)
                recent = history[len(history) - kept :] if kept else []
                history = [summary_message(str(record.get("summary", ""))), *recent]
                marks, guessed = [], []
    except OSError as exc:
        raise SessionError(f"Cannot read session file {path}: {exc.strerror}.") from None
    if start is None:
        raise SessionError(
            f"Session file {path} has no start record (it is not a codingcode session file "
            "or its beginning is damaged). Start a new session."
        )
    if int(start.get("v") or 1) < 2 and not turns:
        turns, last_turn, marks = guessed_turns, guessed_turns, guessed
    return LoadedSession(
        sid, directory, start, repair(history), usage, turns, note, marks, last_turn, first_prompt
    )


def describe(loaded: LoadedSession) -> str:
    """One line naming a session: its id, its first prompt and how many turns it had."""
    first = " ".join(loaded.first_prompt.split())
    first = first if len(first) <= 60 else first[:57] + "..."
    turns = f"{loaded.turns} turn{'s' if loaded.turns != 1 else ''}"
    return (
        f"session {loaded.session_id} ({turns}): {first!r}"
        if first
        else f"session {loaded.session_id} ({turns})"
    )


def _damaged(path: Path, lineno: int) -> SessionError:
    return SessionError(
        f"Session file {path} is damaged at line {lineno} (not a JSON record); it cannot be "
        "resumed as is. Start a new session, or fix or remove that line."
    )


SUMMARY_HEADER = "[Summary of the earlier part of this conversation, written when it was compacted]"


def summary_message(summary: str) -> Message:
    return Message("user", f"{SUMMARY_HEADER}\n{summary}")


def repair(history: list[Message]) -> list[Message]:
    """A history the APIs accept: every assistant tool call answered by its results.

    A crash between the model's answer and its tools' results leaves calls without results;
    they get a result saying so (the model may run them again).
    """
    out: list[Message] = []
    for i, m in enumerate(history):
        out.append(m)
        if m.role == "assistant" and m.tool_calls:
            following = history[i + 1] if i + 1 < len(history) else None
            if following is None or following.role != "tool":
                from codingcode.agent.transcript import ToolResult

                out.append(
                    Message(
                        "tool",
                        results=[
                            ToolResult(
                                c.id,
                                c.name,
                                "This call's result was not saved (the session ended while it "
                                "ran); run it again if it is still needed.",
                                True,
                                "cancelled",
                            )
                            for c in m.tool_calls
                        ],
                    )
                )
    return out


# -- finding sessions -------------------------------------------------------------------------
def session_dirs(project: Path) -> list[Path]:
    """The project's sessions, most recently used first."""
    root = project_dir(project)
    try:
        entries = [d for d in root.iterdir() if (d / FILE_NAME).is_file()]
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise SessionError(f"Cannot list the sessions in {root}: {exc.strerror}.") from None

    def mtime(d: Path) -> float:
        try:
            return (d / FILE_NAME).stat().st_mtime
        except OSError:
            return 0.0

    return sorted(entries, key=lambda d: (mtime(d), d.name), reverse=True)


def find(project: Path, session_id: str) -> Path:
    """The directory of session ``session_id`` (or a unique prefix of it) of ``project``."""
    if not _ID_OK.match(session_id):
        raise SessionError(f"{session_id!r} is not a session id; `codingcode sessions` lists them.")
    root = project_dir(project)
    exact = root / session_id
    if (exact / FILE_NAME).is_file():
        return exact
    matches = [d for d in session_dirs(project) if d.name.startswith(session_id)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise SessionError(
            f"No session {session_id!r} in this project ({project}); `codingcode sessions` "
            "lists them (use -p for another project)."
        )
    names = ", ".join(d.name for d in matches[:5])
    raise SessionError(f"Session id {session_id!r} is ambiguous ({names}); give more of it.")


def has_prompt(directory: Path) -> bool:
    """Whether a session ever had a prompt (an empty one is not worth continuing)."""
    try:
        for _, record, _ in iter_records(directory / FILE_NAME):
            if record is None or record.get("type") not in ("prompt", "message"):
                continue
            if record["type"] == "prompt":
                return True
            if (record.get("message") or {}).get("role") == "user":
                return True
    except OSError:
        return False
    return False


def latest(project: Path) -> Path:
    """The session of ``project`` most recently used that has a prompt."""
    found = next((d for d in session_dirs(project) if has_prompt(d)), None)
    if found is None:
        raise SessionError(
            f"There is no saved session to continue in this project ({project}); "
            'start one with `codingcode run "PROMPT"`.'
        )
    return found


def fork(project: Path, source: Path, new_id: str) -> SessionStore:
    """A copy of ``source`` under ``new_id`` (its start record names the parent)."""
    loaded = load(source)
    store = SessionStore.create(
        project,
        new_id,
        model=str(loaded.start.get("model", "")),
        mode=str(loaded.start.get("mode", "default")),
        parent=loaded.session_id,
    )
    for lineno, record, _ in iter_records(source / FILE_NAME):
        del lineno
        if record is None or record.get("type") == "start":
            continue
        store.append(record)
    store.append({"type": "fork", "from": loaded.session_id, "time": time.time()}, sync=True)
    return store


@dataclass
class SessionSummary:
    id: str
    started: float
    first_prompt: str
    #: How many prompts it had.
    turns: int
    input_tokens: int
    output_tokens: int
    model: str
    parent: str | None
    damaged: bool = False
    #: How its latest turn ended: answered, failed, cancelled, turn_limit, ... ("" unknown),
    #: and "failed before any answer" when no model response was ever saved.
    outcome: str = ""
    #: The one line a failed turn showed.
    detail: str = ""
    #: When it was last written to.
    updated: float = 0.0


def summarize(directory: Path) -> SessionSummary:
    """What ``codingcode sessions`` shows, read without building the history."""
    started = 0.0
    first = ""
    turns = user_messages = 0
    tokens = [0, 0]
    model = ""
    parent = None
    damaged = False
    version = 1
    outcome = detail = ""
    answered = False
    for _, record, last in iter_records(directory / FILE_NAME):
        if record is None:
            damaged = damaged or not last
            continue
        kind = record.get("type")
        if kind == "start":
            started = float(record.get("time") or 0)
            model = str(record.get("model") or "")
            parent = record.get("parent")
            version = int(record.get("v") or 1)
        elif kind == "prompt":
            turns += 1
        elif kind == "usage":
            tokens[0] += int(record.get("input_tokens") or 0)
            tokens[1] += int(record.get("output_tokens") or 0)
        elif kind == "outcome":
            outcome = str(record.get("status") or "")
            detail = str(record.get("detail") or "")
        elif kind == "message":
            m = record.get("message") or {}
            if m.get("role") == "assistant":
                answered = True
            elif m.get("role") == "user":
                user_messages += 1
                if not first:
                    first = str(m.get("text") or "")
    if version < 2 and not turns:
        turns = user_messages
    if outcome == "failed" and not answered:
        outcome = "failed before any answer"
    try:
        updated = (directory / FILE_NAME).stat().st_mtime
    except OSError:
        updated = started
    return SessionSummary(
        directory.name,
        started,
        first,
        turns,
        tokens[0],
        tokens[1],
        model,
        parent,
        damaged,
        outcome,
        detail,
        updated,
    )
