"""Start-up cost of the sandbox: a sandboxed `true` against a bare spawn (medians).

Target (issue 4): bubblewrap adds at most 15 ms per command (median). Landlock (the
re-exec'd Python helper) is printed too, for information: it pays an interpreter start.
Every spawn goes through `codingcode.process.run_command`, exactly as tools do.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import anyio

from _common import interleaved
from codingcode.process import run_command
from codingcode.sandbox.policy import BackendChoice, SandboxPolicy
from codingcode.sandbox.service import SandboxService

TARGET_MS = 15.0
RUNS = 40


def main() -> None:
    true = shutil.which("true") or "/bin/true"
    project = Path(tempfile.mkdtemp(prefix="bench-sandbox-")).resolve()
    env = dict(os.environ)
    services: dict[str, SandboxService | None] = {"bare": None}
    for name in ("bubblewrap", "landlock"):
        service = SandboxService.from_policy(SandboxPolicy(project, backend=BackendChoice(name)))
        try:
            service.backend()
        except Exception as exc:
            print(f"{name}: unavailable here ({exc})")
            continue
        services[name] = service

    def spawner(service: SandboxService | None):  # type: ignore[no-untyped-def]
        def spawn() -> None:
            result = anyio.run(
                lambda: run_command([true], cwd=project, timeout_s=10, env=env, launcher=service)
            )
            assert result.exit_code == 0, result.stderr.text()

        return spawn

    medians = interleaved({name: spawner(s) for name, s in services.items()}, RUNS, warmup=3)
    bare = medians["bare"] * 1000
    print(f"bare spawn of true: median {bare:.2f} ms ({RUNS} runs, interleaved)")
    for name in ("bubblewrap", "landlock"):
        if name not in medians:
            continue
        ms = medians[name] * 1000
        extra = ms - bare
        line = f"{name}: median {ms:.2f} ms, overhead {extra:+.2f} ms, ratio {ms / bare:.2f}x"
        if name == "bubblewrap":
            line += (
                f" (target <= {TARGET_MS:.0f} ms: {'ok' if extra <= TARGET_MS else 'OVER TARGET'})"
            )
        print(line)
    mask_planning(project, env, bare)
    for made in services.values():
        if made is not None:
            made.close()
    shutil.rmtree(project, ignore_errors=True)


def mask_planning(project: Path, env: dict[str, str], bare_ms: float) -> None:
    """Issue 11: the masks of one launch in a 20,000-file project (the walk is incremental)."""
    import time

    from codingcode.sandbox.backends import call_view, mask_resolver

    for d in range(200):
        sub = project / f"pkg{d}"
        sub.mkdir()
        for f in range(100):
            (sub / f"m{f}.py").touch()
        (sub / ".env").write_text("K=V\n")

    resolver = mask_resolver(SandboxPolicy(project))
    call_view(resolver, env, None)  # the first walk lists every directory once
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        view = call_view(resolver, env, None)
        times.append(time.perf_counter() - start)
    times.sort()
    ms = times[len(times) // 2] * 1000
    print(
        f"masks of one launch, 20,000 files and 200 .env files: median {ms:.2f} ms "
        f"({len(view.masked)} masks; {ms / bare_ms:.2f}x a bare spawn)"
    )


if __name__ == "__main__":
    main()
