"""The ``codingcode`` command.

Each group of sub-commands lives in its own module with a ``register(app)`` function; this
module assembles them and turns every expected failure into a one- or two-line message and
a non-zero exit code, never a traceback.
"""

from __future__ import annotations

import contextlib
import sys
from importlib import import_module
from typing import TYPE_CHECKING, Any

from codingcode.cli.exits import exit_code_for as exit_code_for
from codingcode.cli.exits import fail as fail
from codingcode.errors import AgentError

if TYPE_CHECKING:
    import typer

#: Modules that add sub-commands, each with ``register(app: typer.Typer) -> None``, and the
#: top-level commands each adds. A command line that names one of them imports that module
#: alone (a hook's ``codingcode check`` pays for nothing else); ``--help``, the interactive
#: app and anything else register them all (``test_command_map_is_complete`` keeps this
#: table true).
COMMANDS: dict[str, tuple[str, ...]] = {
    "codingcode.cli.tool_commands": ("tool", "tools"),
    "codingcode.cli.approval_commands": ("audit", "check", "rules"),
    "codingcode.cli.trust_commands": ("trust",),
    "codingcode.cli.agent_commands": ("run",),
    "codingcode.cli.sandbox_commands": ("sandbox",),
    "codingcode.cli.mcp_commands": ("mcp",),
    "codingcode.cli.sessions_commands": ("sessions",),
    "codingcode.cli.checkpoint_commands": ("checkpoints",),
    "codingcode.cli.hooks_commands": ("hooks",),
    "codingcode.cli.config_commands": ("config",),
    "codingcode.cli.fleet_commands": ("fleet",),
}
COMMAND_MODULES = list(COMMANDS)


def __getattr__(name: str) -> Any:
    # The Typer app is built on first use (`codingcode.cli.root`): the fast path of
    # `codingcode check` and `codingcode tool` (`codingcode.cli.fast`) never imports Typer.
    if name == "app":
        return _app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _app() -> typer.Typer:
    from codingcode.cli.root import app

    return app


def _register_commands(argv: list[str] | None = None) -> None:
    """Add the sub-commands: only the module of the command ``argv`` names, when it names
    one (after the global options); every module otherwise."""
    wanted = COMMAND_MODULES
    named = _command_named(argv) if argv is not None else None
    if named is not None:
        wanted = [m for m, names in COMMANDS.items() if named in names]
    for module in wanted:
        if module not in _registered:  # once per process (a test may run several commands)
            import_module(module).register(_app())
            _registered.add(module)


_registered: set[str] = set()


def _command_named(argv: list[str]) -> str | None:
    """The top-level command ``argv`` names, skipping the global options before it; None
    when it names none (help, version, the interactive app, a typo)."""
    i = 0
    while i < len(argv):
        token = argv[i]
        option, eq, _ = token.partition("=")
        if option in GLOBAL_VALUE_OPTIONS and not eq:
            i += 2
        elif (
            option in GLOBAL_VALUE_OPTIONS
            or option in GLOBAL_FLAG_OPTIONS
            or (token[:2] in ("-p", "-m", "-r") and not token.startswith("--"))
        ):
            i += 1
        elif token.startswith("-"):
            return None
        else:
            known = any(token in names for names in COMMANDS.values())
            return token if known else None
    return None


def _robust_streams() -> None:
    """Bytes that are not UTF-8 never crash the command: stdin keeps them as lone surrogates
    (the audit and the model's wire format escape them), stdout writes such characters as
    their ``\\uXXXX`` escape (in JSON output, the same character again)."""
    for stream, errors in ((sys.stdin, "surrogateescape"), (sys.stdout, "backslashreplace")):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):
                reconfigure(errors=errors)


#: Options the root accepts that a sub-command may take too: given before the sub-command
#: (``codingcode --mode plan check ...``), they are handed to it, or refused when it has
#: no such option — never silently dropped.
GLOBAL_VALUE_OPTIONS = ("--project", "-p", "--mode", "-m", "--model", "--resume", "-r")
GLOBAL_FLAG_OPTIONS = ("--continue", "-c")


class GlobalOptionError(Exception):
    pass


def hoist_global_options(argv: list[str], root: object) -> list[str]:
    """``[GLOBAL OPTIONS] COMMAND [SUB] REST`` → ``COMMAND [SUB] GLOBAL OPTIONS REST``.

    Raises :class:`GlobalOptionError` when the sub-command does not take one of them.
    Without a sub-command the options stay where they are (the interactive app's).
    """
    given: list[tuple[str, list[str]]] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        if not token.startswith("-") or token in ("-", "--"):
            break
        option, eq, value = token.partition("=")
        if option in GLOBAL_VALUE_OPTIONS:
            if eq:
                given.append((option, [option, value]))
                i += 1
            elif i + 1 < len(argv):
                given.append((option, [option, argv[i + 1]]))
                i += 2
            else:
                return argv  # a missing value: click says so
        elif option in GLOBAL_FLAG_OPTIONS and not eq:
            given.append((option, [option]))
            i += 1
        elif token[:2] in ("-p", "-m", "-r") and not token.startswith("--"):
            given.append((token[:2], [token[:2], token[2:]]))
            i += 1
        else:
            return argv  # --help, --version or an unknown option: click answers
    if not given or i >= len(argv):
        return argv
    rest = argv[i:]
    command = root
    path: list[str] = []
    while path.__len__() < len(rest) and rest[len(path)] in (
        getattr(command, "commands", None) or {}
    ):
        command = command.commands[rest[len(path)]]  # type: ignore[attr-defined]
        path.append(rest[len(path)])
    if not path:
        return argv  # an unknown command: click says so
    accepted = {opt for p in getattr(command, "params", []) for opt in getattr(p, "opts", [])}
    name = " ".join(path)
    for option, _ in given:
        if option not in accepted:
            takes = sorted(o for o in accepted if o.startswith("--"))
            raise GlobalOptionError(
                f"{option} does not apply to `codingcode {name}`"
                + (f" (its options: {', '.join(takes)})" if takes else "")
                + "; leave it out or see `codingcode "
                + name
                + " --help`."
            )
    moved = [part for _, parts in given for part in parts]
    return [*path, *moved, *rest[len(path) :]]


#: The root's options that take a value (the app's), for :func:`prompt_argument`.
_ROOT_VALUE_OPTIONS = frozenset({"--project", "-p", "--mode", "-m", "--model", "--resume", "-r"})


def prompt_argument(argv: list[str], commands: set[str]) -> list[str]:
    """``codingcode "fix the bug"`` as in Claude Code: a first word that is no command
    (and not an option's value) is the app's first prompt."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return argv
        if word.startswith("-"):
            i += 2 if word in _ROOT_VALUE_OPTIONS else 1
            continue
        if word in commands:
            return argv
        return [*argv[:i], "--initial-prompt", word, *argv[i + 1 :]]
    return argv


def run() -> None:
    _robust_streams()
    import typer
    import typer.main

    _register_commands(sys.argv[1:])
    app = _app()
    try:
        root = typer.main.get_command(app)
        commands = set(getattr(root, "commands", {}))
        args = hoist_global_options(prompt_argument(sys.argv[1:], commands), root)
    except GlobalOptionError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(2)
    try:
        # Outside standalone mode, click hands back the code of a typer.Exit raised in a command.
        code = app(args=args, standalone_mode=False)
        if isinstance(code, int):
            sys.exit(code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        typer.echo("Aborted.", err=True)
        sys.exit(130)
    except typer.TyperException as exc:  # usage errors: missing argument, bad option, ...
        ctx = getattr(exc, "ctx", None)
        hint = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
        message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        if not message:  # bare `codingcode`: the help was shown, nothing went wrong
            sys.exit(0)
        if type(exc).__name__ == "NoArgsIsHelpError":  # a group without its sub-command
            typer.echo(message)
            sys.exit(2)
        typer.echo(f"error: {message}{hint}", err=True)
        sys.exit(getattr(exc, "exit_code", 2))
    except AgentError as exc:
        typer.echo(f"error: {exc.message}", err=True)
        sys.exit(exit_code_for(exc))
    except KeyboardInterrupt:
        typer.echo("Interrupted.", err=True)
        sys.exit(130)
    except RecursionError:
        # The last net under input nested deeper than Python can follow (a JSON file of a
        # part that does not say so itself): one line, bad input.
        typer.echo(
            "error: the input is nested too deeply to read (a JSON file or argument).", err=True
        )
        sys.exit(2)
