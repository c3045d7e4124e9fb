"""Skills and custom commands at scale: 20,000 of each load in linear time.

Prints the median time to load 20,000 skills (``load_skills``: scan, read, trust check,
parse), to install them as deferred tools with the system prompt's bounded listing, to load
20,000 command files (``CommandRegistry.load``), and a tool_search query over the skills,
each against a reference measured in the same run: reading the same 20,000 files' bytes
with a plain loop (the floor any loader pays).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from _common import interleaved
from codingcode.custom_commands import CommandRegistry
from codingcode.skills.install import install_skills
from codingcode.skills.loader import load_skills
from codingcode.tools.resolver import create_session_tool_resolver
from codingcode.tools.service import ToolService
from codingcode.workspace import Workspace

N = int(os.environ.get("BENCH_SKILLS_N", "20000"))


def trust_all(path: Path, data: bytes) -> bool:
    return True


def make(root: Path) -> list[Path]:
    files = []
    for i in range(N):
        skill = root / ".codingcode" / "skills" / f"s{i}" / "SKILL.md"
        skill.parent.mkdir(parents=True)
        skill.write_text(
            f"---\nname: s{i}\ndescription: Handles task number {i} for the team.\n---\n"
            f"# Skill {i}\nStep one. Step two.\n"
        )
        command = root / ".codingcode" / "commands" / f"c{i}.md"
        command.parent.mkdir(parents=True, exist_ok=True)
        command.write_text(f"---\ndescription: Command {i}\n---\nDo thing {i} with $1.\n")
        files += [skill, command]
    return files


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        os.environ["CODINGCODE_CONFIG_DIR"] = str(root / "cfg")
        os.environ["CODINGCODE_STATE_DIR"] = str(root / "state")
        os.environ["CODINGCODE_TRUST_ALL"] = "1"
        files = make(root)
        workspace = Workspace.load(root)  # trusts every project file: CODINGCODE_TRUST_ALL

        def reference() -> None:
            for f in files:
                f.read_bytes()

        def skills() -> None:
            assert len(load_skills(root, is_trusted=trust_all).skills) == N

        def install() -> None:
            text = install_skills(workspace, ToolService()).prompt
            assert len(text) < 30_000

        def commands() -> None:
            assert len(CommandRegistry.load(root, is_trusted=trust_all).list()) == N

        times = interleaved(
            {"reference": reference, "skills": skills, "install": install, "commands": commands},
            runs=1,
            warmup=0,
        )
        service = ToolService()
        install_skills(workspace, service)
        resolver = create_session_tool_resolver(service)
        start = time.perf_counter()
        hits = resolver.search("task number 12345")
        search_ms = (time.perf_counter() - start) * 1000
        ref = times["reference"]
        print(f"files: {N} skills + {N} commands")
        print(f"reference (read the {2 * N} files' bytes): {ref * 1000:.0f} ms")
        for name in ("skills", "install", "commands"):
            print(f"{name:<9} {times[name] * 1000:8.0f} ms  ratio {times[name] / ref:.2f}")
        print(
            f"first tool_search over {N} skills (index built): {search_ms:.0f} ms, "
            f"top hit {hits[0].name if hits else None}"
        )


if __name__ == "__main__":
    main()
