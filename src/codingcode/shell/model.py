"""What the analysis produces: words, redirects, stdin feeds, simple commands."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from functools import cached_property
else:

    class cached_property:
        """functools.cached_property without the lock Python 3.11 takes on every first
        access (a 20,000-stage pipeline makes 20,000 commands)."""

        def __init__(self, func: Any) -> None:
            self.func = func
            self.name = func.__name__

        def __get__(self, obj: Any, owner: Any = None) -> Any:
            if obj is None:
                return self
            value = obj.__dict__[self.name] = self.func(obj)
            return value


#: Stands for a part of a word only known at run time.
DYN = "\x00"
MAX_DEPTH = 12
MAX_COMMAND_CHARS = 200_000
#: Simple commands one analysis follows (nested scripts, decoded payloads and written files
#: included); beyond it the line is asked about. Keeps every decision linear and bounded.
MAX_COMMANDS = 50_000
#: Characters of nested script text (``bash -c``, ``eval``, decoded payloads, files written
#: and run) one analysis parses in all.
MAX_NESTED_CHARS = 400_000


# -- words --------------------------------------------------------------------------
@dataclass(frozen=True)
class Word:
    """One shell word after bash's quote removal, with what stays unknown marked."""

    text: str  # resolved text; run-time parts are DYN
    glob: bool = False  # has unquoted * ? [ (a pattern bash expands)
    pattern: str = ""  # as a glob: run-time parts become *, quoted metacharacters escaped
    download: bool = False  # contains a substitution that downloads something
    subst: bool = False  # contains a command or process substitution
    #: For a process substitution ``<(...)`` whose output is known: that output (the
    #: content a program reading the word's file sees).
    content: str | None = None

    @property
    def dynamic(self) -> bool:
        return DYN in self.text

    @property
    def value(self) -> str | None:
        return None if self.dynamic else self.text

    @property
    def shown(self) -> str:
        return self.text.replace(DYN, "*")

    #: The word if every run-time part expanded to nothing, or to its ``${X:-default}``.
    fallback: str = ""

    @property
    def empty_form(self) -> str:
        """The word if every run-time part expanded to nothing (``"$DIR/"`` → ``/``) or to
        its stated default (``${X:-/}`` → ``/``)."""
        return self.fallback if self.fallback else self.text.replace(DYN, "")


def literal_word(text: str) -> Word:
    return Word(text, pattern=escape_glob(text))


def escape_glob(text: str) -> str:
    if "*" not in text and "?" not in text and "[" not in text:
        return text
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)


@dataclass(frozen=True)
class Redirect:
    op: str
    target: Word | None  # None for an fd duplication such as 2>&1
    heredoc: str | None = None


@dataclass(frozen=True)
class Stdin:
    """What feeds a command's stdin."""

    kind: str  # "pipe" | "herestring" | "heredoc" | "file"
    text: str | None = None  # literal script text, when known
    download: bool = False
    opaque: bool = False  # fed by something whose output cannot be known


@dataclass(frozen=True)
class Command:
    """One simple command, as it will run: program, arguments, cwd, redirects, stdin."""

    argv: tuple[Word, ...]
    cwd: str | None  # None: changed to something only known at run time
    redirects: tuple[Redirect, ...] = ()
    stdin: Stdin | None = None
    via: tuple[str, ...] = ()  # wrappers and shells it was found through
    #: A pure wrapper (env, timeout, bash -c, ...): its work is the command inside it, so an
    #: allow rule need not name it; deny and ask rules still see it.
    transparent: bool = False
    assigns: tuple[tuple[str, Word], ...] = ()
    #: Why what this command runs cannot be seen through (it runs code only known at run
    #: time, a file of unknown content, an option-held command ...), or None. A command
    #: with this set must never be passed unasked (rules ask about it in every mode).
    opaque: str | None = None

    @cached_property
    def program(self) -> str | None:
        """The program's name (``/usr/bin/sudo`` → ``sudo``); None if computed at run time."""
        if not self.argv:
            return None
        first = self.argv[0]
        if first.dynamic:
            return None
        return posixpath.basename(first.text) or first.text

    @property
    def args(self) -> list[str]:
        return [w.text for w in self.argv[1:]]

    def line(self) -> str:
        """The command as one line of words (for matching user rules)."""
        found: str | None = self.__dict__.get("_line")
        if found is None:
            words = [self.program or self.argv[0].shown] if self.argv else []
            words += [w.shown for w in self.argv[1:]]
            # kept with the command (an analysis, and its commands, are cached per line)
            found = self.__dict__["_line"] = " ".join(words)
        return found


@dataclass
class Analysis:
    commands: list[Command] = field(default_factory=list)
    #: Why parts of the command line cannot be seen through (the rules ask).
    opaque: list[str] = field(default_factory=list)
    #: R3 findings: a download piped or fed into a shell or interpreter.
    downloads_into_shell: list[str] = field(default_factory=list)
    #: Files a downloader wrote (a later run of one of them is R3 too).
    downloaded_files: set[str] = field(default_factory=set)
    #: Programs whose name is a glob (``/usr/bin/su?o``): what they could expand to.
    program_globs: list[str] = field(default_factory=list)
    parse_error: bool = False
    #: Variables set that change what a program does or which program runs
    #: (``PATH``, ``LD_PRELOAD``, ``BASH_ENV``, ...): no allow rule can vouch for the line.
    risky_assignments: list[str] = field(default_factory=list)
    #: When parsing failed: every token of the text (quotes removed, braces expanded), so
    #: the rules can still refuse a command that names a forbidden program anywhere.
    fallback_words: list[str] = field(default_factory=list)
    #: Files the line writes (absolute path → its content when known, else None).
    written_files: dict[str, str | None] = field(default_factory=dict)
    #: Paths the line reads through other channels than arguments: names fed on stdin to
    #: programs that take file lists (``echo F | cpio -o``), ``$(<F)``.
    read_paths: list[str] = field(default_factory=list)
    #: Text an unknown program reads on stdin or holds in an argument, which it may run as
    #: commands (``echo 'cat /etc/shadow' | screen``): (text, cwd, program). What the rules
    #: would refuse in it is asked about, never denied (it may well be plain data).
    speculative: list[tuple[str, str | None, str]] = field(default_factory=list)

    def simple_commands(self) -> list[Command]:
        """Every simple command that runs (pseudo-commands of bare redirects left out),
        each with its resolved program, arguments, redirects and ``opaque`` flag."""
        return [c for c in self.commands if c.argv]


def join_words(a: Word, b: Word) -> Word:
    return Word(
        a.text + b.text,
        a.glob or b.glob,
        a.pattern + b.pattern,
        a.download or b.download,
        a.subst or b.subst,
    )
