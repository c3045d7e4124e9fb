"""Variables that decide which program runs or what it loads first."""

from __future__ import annotations

#: Variables whose value decides which program runs or what it loads first.
RISKY_VARIABLES = frozenset(
    {
        "PATH",
        "BASH_ENV",
        "ENV",
        "IFS",
        "PROMPT_COMMAND",
        "SHELLOPTS",
        "BASHOPTS",
        "PS4",
        "PYTHONPATH",
        "PYTHONSTARTUP",
        "PYTHONHOME",
        "PERL5OPT",
        "PERL5LIB",
        "PERLLIB",
        "RUBYOPT",
        "RUBYLIB",
        "NODE_OPTIONS",
        "NODE_PATH",
        "GIT_SSH",
        "GIT_SSH_COMMAND",
        "GIT_EXEC_PATH",
        "GIT_EDITOR",
        "GIT_PAGER",
        "EDITOR",
        "VISUAL",
        "PAGER",
        "LESSOPEN",
        "CDPATH",
        "HOME",
        "XDG_CONFIG_HOME",
        "JAVA_TOOL_OPTIONS",
        "_JAVA_OPTIONS",
    }
)
