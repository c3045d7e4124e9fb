"""Secrets by class: what they cost per call (issue 26).

1. Mask set-up of one launch (``call_view``: every pattern resolved, the root-only scan of
   /etc, the project walk) with the secret classes, against the list before them (the
   project's .env files, /etc/*shadow* and the 20 HOME stores), measured in the same run:
   the extra must stay within 2 ms.
2. One approval decision (the whole pipeline, dry run) for a mix of ordinary calls with the
   secrets check on (``pipeline.masked``, as every session has it) against off, in the same
   run: within 10 %.

CPU time over batches, interleaved (a shared machine's wall time is mostly waiting).
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from codingcode.sandbox.masks import MaskSpec
from codingcode.workspace import Workspace

MASK_TARGET_MS = 2.0
DECISION_TARGET = 1.10

#: The list before the classes (what every launch resolved until now).
BEFORE = [
    MaskSpec("**/.env", files_only=True),
    MaskSpec("**/.env.*", files_only=True),
    MaskSpec("/etc/*shadow*"),
    *(
        MaskSpec(p)
        for p in [
            "~/.ssh",
            "~/.aws",
            "~/.azure",
            "~/.config/gcloud",
            "~/.kube",
            "~/.docker/config.json",
            "~/.netrc",
            "~/.git-credentials",
            "~/.config/gh",
            "~/.npmrc",
            "~/.pypirc",
            "~/.gnupg",
            "~/.password-store",
            "~/.local/share/keyrings",
            "~/.local/share/kwalletd",
            "~/.cargo/credentials.toml",
            "~/.config/hub",
        ]
    ),
]


def cpu_median(fns: dict[str, Callable[[], object]], rounds: int, batch: int) -> dict[str, float]:
    """Median CPU seconds of one call of each, batches interleaved."""
    for fn in fns.values():
        fn()
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            start = time.process_time()
            for _ in range(batch):
                fn()
            samples[name].append((time.process_time() - start) / batch)
    return {k: statistics.median(v) for k, v in samples.items()}


def mask_setup(root: Path) -> None:
    from codingcode.sandbox.backends import call_view
    from codingcode.sandbox.masks import MaskResolver
    from codingcode.sandbox.secrets import default_masks

    project = root / "project"
    for d in range(50):
        sub = project / f"pkg{d}"
        sub.mkdir(parents=True)
        for f in range(40):
            (sub / f"m{f}.py").touch()
    (project / ".env").write_text("K=V\n")
    home = root / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials").write_text("x")
    state = root / "state"
    state.mkdir()
    env = {"HOME": str(home)}
    before = MaskResolver(BEFORE, project)
    after = MaskResolver(default_masks(state), project)
    got = cpu_median(
        {
            "before": lambda: call_view(before, env, None),
            "after": lambda: call_view(after, env, None),
        },
        rounds=40,
        batch=10,
    )
    extra = (got["after"] - got["before"]) * 1000
    n_before = len(call_view(before, env, None).masked)
    n_after = len(call_view(after, env, None).masked)
    print(
        f"mask set-up per launch: {got['before'] * 1000:.3f} ms before ({n_before} masks), "
        f"{got['after'] * 1000:.3f} ms with the secret classes ({n_after} masks): "
        f"+{extra:.3f} ms, ratio {got['after'] / got['before']:.2f} "
        f"(target <= +{MASK_TARGET_MS:.0f} ms: "
        f"{'ok' if extra <= MASK_TARGET_MS else 'OVER TARGET'})"
    )


def decision_cost(root: Path) -> None:
    import anyio

    from codingcode.runner import build_runner

    project = root / "dproject"
    (project / "src").mkdir(parents=True)
    (project / "src" / "app.py").write_text("print(1)\n")
    runner = build_runner(Workspace.load(project), audit=False)
    pipeline = runner.pipeline
    assert pipeline is not None and pipeline.masked is not None
    masked = pipeline.masked
    calls = [
        ("read_file", {"path": "src/app.py"}),
        ("execute_command", {"command": "cat src/app.py"}),
        ("execute_command", {"command": "git status"}),
        ("execute_command", {"command": "ls -la src"}),
        ("search_files", {"pattern": "*.py"}),
        ("write_file", {"path": "src/new.py", "content": "x"}),
    ]

    async def decide_all() -> None:
        for tool, args in calls:
            await runner.decide(tool, args, dry_run=True)

    def on() -> None:
        pipeline.masked = masked
        anyio.run(decide_all)

    def off() -> None:
        pipeline.masked = None
        anyio.run(decide_all)

    got = cpu_median({"off": off, "on": on}, rounds=60, batch=5)
    ratio = got["on"] / got["off"]
    per = len(calls)
    print(
        f"approval decision (pipeline, dry run, mean of {per} kinds of call): "
        f"{got['off'] / per * 1e6:.0f} µs without the secrets check, "
        f"{got['on'] / per * 1e6:.0f} µs with it: ratio {ratio:.3f} "
        f"(target <= {DECISION_TARGET:.2f}: {'ok' if ratio <= DECISION_TARGET else 'OVER TARGET'})"
    )


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-secrets-", dir="/var/tmp"))
    saved = {k: os.environ.get(k) for k in ("CODINGCODE_STATE_DIR", "CODINGCODE_CONFIG_DIR")}
    os.environ["CODINGCODE_STATE_DIR"] = str(root / "state")
    os.environ["CODINGCODE_CONFIG_DIR"] = str(root / "config")
    try:
        mask_setup(root)
        decision_cost(root)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
