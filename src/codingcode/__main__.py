"""Entry point of the ``codingcode`` command (and ``python -m codingcode``)."""

from __future__ import annotations

import gc
import sys


def main() -> None:
    # `--version` answers before anything heavy is imported: it is what scripts call first.
    if sys.argv[1:] in (["--version"], ["-V"]):
        from codingcode import __version__

        print(f"codingcode {__version__}")
        return
    # No cycle collection while modules load: hundreds of classes and functions are made
    # and none of them is garbage (about 4 % of a command's start-up). `tool` turns it back on
    # before the call runs; `check` decides and exits.
    gc.disable()
    try:
        # `check` and `tool`, called once per action by hooks and scripts: without Typer.
        from codingcode.cli.fast import run_fast

        run_fast(sys.argv[1:])
        from codingcode.cli import run
        from codingcode.cli.common import resume_gc

        resume_gc()

        run()
    except KeyboardInterrupt:  # Ctrl-C before the command's own handling (imports, start-up)
        sys.stderr.write("Interrupted.\n")
        sys.exit(130)


if __name__ == "__main__":
    main()
