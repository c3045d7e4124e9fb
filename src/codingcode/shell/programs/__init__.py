"""What the analysis knows about programs, one module per family.

- :mod:`.interpreters` — shells and interpreters, their code flags, how they get code;
- :mod:`.code` — interpreters' inline code: the processes it starts, the files it writes;
- :mod:`.wrappers` — wrappers looked through (``env``, ``nice``, ``timeout``, ``xargs``...);
- :mod:`.runners` — programs that run another (``npx``, ``uv run``, ``docker exec``...);
- :mod:`.vcs_build` — git (config that runs commands) and make (recipes);
- :mod:`.text` — sed, awk, split, and options naming programs (``rg --pre``, ``sort
  --compress-program``);
- :mod:`.editors` — editors and pagers (vim, emacs, less, man);
- :mod:`.remote` — ssh, rsync, tar, socat, nc, cpio, dosbox;
- :mod:`.debuggers` — gdb/lldb, sqlite3, expect;
- :mod:`.packages` — package managers; :mod:`.kinds` — which programs never run their
  arguments (``grep sudo``) and which take names (``apt install sudo``);
- :mod:`.downloads` — downloaders and the files they write;
- :mod:`.variables` — variables that decide which program runs;
- :mod:`.builtins` — shell builtins that make later commands unknown (``hash -p``...);
- :mod:`.inside` — :func:`look_inside`: what a simple command runs besides itself, as
  parts: ``("argv", words)`` a command line run as such (``uv run pytest``); ``("script",
  Word)`` shell code (``ssh -o ProxyCommand=...``); ``("file", Word)`` a script file it
  runs (``make -f FILE``); ``("makefile", Word)``; ``("write"|"read", Word)`` a file its
  script language writes or reads (``sed 'w /etc/x'``); ``("opaque", reason)``.

A remote command (``ssh HOST CMD``, ``docker exec``) is analysed like a local one: the
rules apply to what runs there as if it ran here. Adding a program is one family module
(and its name in :mod:`.inside`'s table when it runs something).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from codingcode.lazy import lazy_names

if TYPE_CHECKING:
    from codingcode.shell.programs.code import code_parts
    from codingcode.shell.programs.downloads import DOWNLOADERS, download_targets
    from codingcode.shell.programs.inside import look_inside
    from codingcode.shell.programs.interpreters import (
        CODE_FLAGS,
        INTERPRETERS,
        SHELLS,
        SOURCE_BUILTINS,
        Invocation,
        code_flags,
        invocation,
        is_interpreter,
        python_like,
    )
    from codingcode.shell.programs.kinds import NAME_ARGS, NON_RUNNERS
    from codingcode.shell.programs.packages import PACKAGE_MANAGERS
    from codingcode.shell.programs.variables import RISKY_VARIABLES
    from codingcode.shell.programs.vcs_build import makefile_scripts
    from codingcode.shell.programs.wrappers import WRAPPERS, env_pairs, unwrap

#: Where each name lives: a family module is imported on first use (``from
#: codingcode.shell.programs.system import ...`` loads no other family).
_HOMES = {
    "code_parts": "codingcode.shell.programs.code",
    "DOWNLOADERS": "codingcode.shell.programs.downloads",
    "download_targets": "codingcode.shell.programs.downloads",
    "look_inside": "codingcode.shell.programs.inside",
    "CODE_FLAGS": "codingcode.shell.programs.interpreters",
    "INTERPRETERS": "codingcode.shell.programs.interpreters",
    "SHELLS": "codingcode.shell.programs.interpreters",
    "SOURCE_BUILTINS": "codingcode.shell.programs.interpreters",
    "Invocation": "codingcode.shell.programs.interpreters",
    "code_flags": "codingcode.shell.programs.interpreters",
    "invocation": "codingcode.shell.programs.interpreters",
    "is_interpreter": "codingcode.shell.programs.interpreters",
    "python_like": "codingcode.shell.programs.interpreters",
    "NAME_ARGS": "codingcode.shell.programs.kinds",
    "NON_RUNNERS": "codingcode.shell.programs.kinds",
    "PACKAGE_MANAGERS": "codingcode.shell.programs.packages",
    "RISKY_VARIABLES": "codingcode.shell.programs.variables",
    "makefile_scripts": "codingcode.shell.programs.vcs_build",
    "WRAPPERS": "codingcode.shell.programs.wrappers",
    "env_pairs": "codingcode.shell.programs.wrappers",
    "unwrap": "codingcode.shell.programs.wrappers",
}


__getattr__ = lazy_names(__name__, _HOMES)


__all__ = [
    "CODE_FLAGS",
    "DOWNLOADERS",
    "INTERPRETERS",
    "NAME_ARGS",
    "NON_RUNNERS",
    "PACKAGE_MANAGERS",
    "RISKY_VARIABLES",
    "SHELLS",
    "SOURCE_BUILTINS",
    "WRAPPERS",
    "Invocation",
    "code_flags",
    "code_parts",
    "download_targets",
    "env_pairs",
    "invocation",
    "is_interpreter",
    "look_inside",
    "makefile_scripts",
    "python_like",
    "unwrap",
]
