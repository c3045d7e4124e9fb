"""``codingcode run "PROMPT"``: the command and its options.

The headless run itself lives in :mod:`codingcode.cli.headless`; what it shares with the
interactive app (the CLI's session, Ctrl-C, tool rules, ``--continue``/``--resume``) in
:mod:`codingcode.cli.agent_session`. The names other modules import from here stay importable.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from codingcode.cli.agent_session import cli_session as cli_session
from codingcode.cli.agent_session import depth_of as depth_of
from codingcode.cli.agent_session import load_for_run as load_for_run
from codingcode.cli.agent_session import split_rule_list as split_rule_list
from codingcode.cli.agent_session import summarize_args as summarize_args
from codingcode.cli.headless import OUTPUT_FORMATS, run_headless
from codingcode.cli.tool_commands import ModeOption, ProjectOption, check_mode, project_dir

ModelOption = Annotated[
    str | None,
    typer.Option(
        "--model",
        help="PROVIDER:MODEL, e.g. openai:gpt-4.1 or anthropic:claude-sonnet-4-5 "
        "(default: $CODINGCODE_MODEL, then settings `model`).",
    ),
]


# -- registration --------------------------------------------------------------------------
ContinueOption = Annotated[
    bool,
    typer.Option("--continue", "-c", help="Continue the project's latest session."),
]
ResumeOption = Annotated[
    str | None,
    typer.Option(
        "--resume", "-r", help="Continue the session with this id (`codingcode sessions`)."
    ),
]


def register(app: typer.Typer) -> None:
    @app.command("run")
    def run_command(
        prompt: Annotated[
            list[str],
            typer.Argument(
                help="The task for the agent (or /COMMAND ARGS, a custom command), or - to "
                "read stdin."
            ),
        ],
        project: ProjectOption = None,
        mode: ModeOption = None,
        model: ModelOption = None,
        output_format: Annotated[
            str,
            typer.Option(
                "--output-format",
                help="text (the final answer), json (one transcript at the end) or "
                "stream-json (one JSON object per line per event, as it happens).",
            ),
        ] = "text",
        as_json: Annotated[
            bool, typer.Option("--json", help="Same as --output-format json.")
        ] = False,
        quiet: Annotated[
            bool, typer.Option("--quiet", "-q", help="No progress lines on stderr.")
        ] = False,
        max_turns: Annotated[
            int | None,
            typer.Option(
                "--max-turns",
                min=1,
                max=500,
                help="Stop a prompt after this many model responses (Claude Code's agentic turns).",
            ),
        ] = None,
        continue_: ContinueOption = False,
        resume: ResumeOption = None,
        fork: Annotated[
            bool,
            typer.Option("--fork", help="With --continue/--resume: go on in a copy (a new id)."),
        ] = False,
        append_system_prompt: Annotated[
            list[str] | None,
            typer.Option("--append-system-prompt", help="Text appended to the system prompt."),
        ] = None,
        allowed_tools: Annotated[
            list[str] | None,
            typer.Option(
                "--allowed-tools",
                help="Allow rules for this run, e.g. 'execute_command(git log *)' (repeat, or "
                "separate with commas).",
            ),
        ] = None,
        disallowed_tools: Annotated[
            list[str] | None,
            typer.Option(
                "--disallowed-tools",
                help="Deny rules for this run; a plain tool name is also not offered.",
            ),
        ] = None,
    ) -> None:
        """Run the agent on PROMPT without a terminal and print its final answer.

        Exit codes: 0 answered; 1 error (model endpoint, ...); 2 bad input or no model;
        3 a denied call stopped the work; 4 the turn limit was reached; 130 interrupted.
        """
        from codingcode.cli.exits import fail
        from codingcode.text import safe_text

        if as_json:
            if output_format not in ("text", "json"):
                fail("--json is --output-format json; give one of them.")
            output_format = "json"
        if output_format not in OUTPUT_FORMATS:
            fail(
                f"unknown --output-format {output_format!r}; choose one of: text, json, stream-json."
            )
        # Bytes that are not UTF-8 (argv, stdin) arrive as lone surrogates; the model's wire
        # format needs valid text.
        text = safe_text(sys.stdin.read() if prompt == ["-"] else " ".join(prompt))
        if not text.strip():
            fail("PROMPT is empty.")
        root = project_dir(project)
        from codingcode.custom_commands.invoke import find_invocation
        from codingcode.workspace import Workspace

        # The run's settings and trust, read once: the /name lookup and the session use it.
        workspace = Workspace.load(root)
        command = find_invocation(workspace, text)  # `codingcode run /name ARGS` (issue 17)
        loaded = load_for_run(root, continue_=continue_, resume=resume, fork=fork)
        code = run_headless(
            text,
            project=root,
            model=model,
            mode=check_mode(mode),
            output_format=output_format,
            quiet=quiet,
            max_turns=max_turns,
            resume=loaded,
            append_system_prompt=append_system_prompt or (),
            allowed_tools=allowed_tools or (),
            disallowed_tools=disallowed_tools or (),
            command=command,
            workspace=workspace,
        )
        raise typer.Exit(code)
