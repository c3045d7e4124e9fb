"""The agent loop's own cost per turn (the model excluded), and the cost of saving the session.

An in-process provider answers instantly with one ``read_file`` call a turn (then a final
answer), so what is timed is the loop: approval, the tool, results, token accounting, the
compaction check, events — and, with saving on, the session file. Figures:

- per-turn overhead = loop time per turn minus the same ``read_file`` call run directly
  through the runner (the reference, measured in the same run);
- saving ratio = per-turn time with the session saved / without;
- flatness = per-turn time over the last quarter of a long session / the first quarter
  (about 1 when nothing grows with the history).
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import anyio

from _common import verdict
from codingcode.workspace import Workspace

TARGET_SAVE_RATIO = 1.5
TARGET_FLATNESS = 1.5


class InstantModel:
    name = "bench"
    model = "bench"

    def __init__(self, turns: int) -> None:
        self.turns = turns
        self.count = 0

    async def stream(self, system: str, messages: Sequence[Any], tools: Any) -> AsyncIterator[Any]:
        from codingcode.agent.transcript import Message, ToolCall, TurnComplete

        self.count += 1
        if self.count > self.turns:
            yield TurnComplete(Message("assistant", "done"))
            return
        call = ToolCall(f"c{self.count}", "read_file", {"path": "small.py"}, "")
        yield TurnComplete(Message("assistant", "", [call]))

    async def aclose(self) -> None:
        pass


def run_session(project: Path, turns: int, *, save: bool) -> list[float]:
    """Per-turn wall times of one session of ``turns`` tool turns."""
    from codingcode.agent.model import ModelSpec
    from codingcode.agent.session import open_session
    from codingcode.agent.transcript import AgentMessage

    stamps: list[float] = []

    def sink(event: object) -> None:
        if isinstance(event, AgentMessage):
            stamps.append(time.perf_counter())

    session = open_session(
        Workspace.load(project),
        model=ModelSpec("openai", "bench"),
        provider=InstantModel(turns),
        save=save,
        sink=sink,
        max_turns=turns + 5,
    )

    async def go() -> None:
        await session.send("read it many times")
        await session.aclose()

    anyio.run(go)
    return [b - a for a, b in itertools.pairwise(stamps)]


def direct_call(project: Path, runs: int) -> float:
    from codingcode.runner import build_runner

    runner = build_runner(Workspace.load(project))
    times = []

    async def go() -> None:
        for _ in range(runs):
            start = time.perf_counter()
            await runner.run("read_file", {"path": "small.py"})
            times.append(time.perf_counter() - start)

    anyio.run(go)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=400)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["CODINGCODE_STATE_DIR"] = str(Path(tmp) / "state")
        os.environ["CODINGCODE_CONFIG_DIR"] = str(Path(tmp) / "config")
        project = Path(tmp) / "project"
        project.mkdir()
        (project / "small.py").write_text("".join(f"x{i} = {i}\n" for i in range(50)))
        direct_call(project, 20)  # warm-up: imports, sandbox probe, audit database
        reference = direct_call(project, 200)
        # Interleaved rounds, so the machine's load weighs on both alike.
        unsaved: list[float] = []
        saved: list[float] = []
        for _ in range(3):
            unsaved += run_session(project, opts.turns, save=False)
            saved = run_session(project, opts.turns, save=True) + saved
        session_file = next((Path(tmp) / "state" / "projects").glob("*/*/session.jsonl"))
        per_turn = statistics.median(unsaved)
        per_turn_saved = statistics.median(saved)
        saved = saved[: len(saved) // 3]  # one session's turns, in order, for flatness
        quarter = len(saved) // 4
        flat = statistics.median(saved[-quarter:]) / statistics.median(saved[:quarter])
        save_ratio = per_turn_saved / per_turn
        print(f"turns: {opts.turns}")
        print(f"reference: read_file through the runner: {reference * 1e3:.3f} ms")
        print(
            f"loop per turn (not saved): {per_turn * 1e3:.3f} ms -> overhead "
            f"{(per_turn - reference) * 1e3:.3f} ms ({per_turn / reference:.2f}x the call)"
        )
        print(
            f"loop per turn (saved): {per_turn_saved * 1e3:.3f} ms; saving costs "
            f"{(per_turn_saved - per_turn) * 1e3:.3f} ms a turn; ratio {save_ratio:.2f} "
            f"(target <= {TARGET_SAVE_RATIO}: {verdict(save_ratio, TARGET_SAVE_RATIO)})"
        )
        print(
            f"flatness (last / first quarter): {flat:.2f} "
            f"(target <= {TARGET_FLATNESS}: {verdict(flat, TARGET_FLATNESS)})"
        )
        print(f"session file: {session_file.stat().st_size / 1024:.0f} KiB for {opts.turns} turns")
    sys.exit(0)


if __name__ == "__main__":
    main()
