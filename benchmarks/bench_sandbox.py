"""What the sandbox costs per command: the median time of ``true`` run by the bash tool, with and
without bubblewrap, over 50 runs each (goal: under 20 ms more with it), also in a repository with
a vendored repository and three submodules (their hooks and config are mounted read-only).

Run from the repository root:  python -m benchmarks.bench_sandbox
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mini_letta.toolbox.sandbox import Sandbox, SandboxSettings, unavailable_reason
from mini_letta.toolbox.shell import run_bash

RUNS = 50


def median_ms(run) -> float:
    run()  # warm the page cache for bash and bwrap
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def make_repositories(workspace: Path) -> None:
    """A repository with a vendored one and three submodules' git folders, whose hooks and config
    the sandbox keeps read-only."""
    def git(*args: str, cwd: Path) -> None:
        subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)

    workspace.mkdir()
    git("init", "-q", cwd=workspace)
    (workspace / "vendor" / "lib").mkdir(parents=True)
    git("init", "-q", cwd=workspace / "vendor" / "lib")
    (workspace / ".git" / "modules").mkdir()
    for name in ("a", "b", "c"):
        git("init", "-q", f"--separate-git-dir={workspace / '.git' / 'modules' / name}", name, cwd=workspace)


def main() -> int:
    reason = unavailable_reason()
    if reason:
        print(f"no sandbox here: {reason}")
        return 1
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        data = workspace.parent / "mini-letta-bench-data"
        plain = median_ms(lambda: run_bash("true", workspace, 10, 10_000))
        results = {"without the sandbox": plain}
        for label, settings in [("workspace-write, no network", SandboxSettings()),
                                ("workspace-write, network allowed", SandboxSettings(network=True))]:
            sandbox = Sandbox.create(workspace, settings, data)
            results[label] = median_ms(lambda: sandbox.run("true", 10, 10_000))
        repositories = workspace / "repos"
        make_repositories(repositories)
        sandbox = Sandbox.create(repositories, SandboxSettings(), data)
        results["a repository, 4 more inside it"] = median_ms(lambda: sandbox.run("true", 10, 10_000))
    print(f"bash tool running `true`, median of {RUNS} runs:")
    for label, value in results.items():
        extra = "" if label.startswith("without") else f"  (+{value - plain:.1f} ms)"
        print(f"  {label:<34} {value:6.1f} ms{extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
