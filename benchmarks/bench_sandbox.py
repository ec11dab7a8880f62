"""What the sandbox costs per command: the median time of ``true`` run by the bash tool, with and
without bubblewrap, over 50 runs each (goal: under 20 ms more with it), also in a repository with
a vendored repository and three submodules (their hooks and config are mounted read-only).

The rows run interleaved (one run of each in turn), so a machine whose speed drifts moves them
alike. Two rows are the same run's baselines: the repository row with the clean-up as it was before
it knew what is mounted read-only (every git folder read before and after each command), and a
repository of 2,000 folders with the new ``.git`` entries looked for by an ``lstat`` of every folder
(as before inotify) instead of inotify's events.

Run from the repository root:  python -m benchmarks.bench_sandbox
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mini_letta.toolbox import disarm
from mini_letta.toolbox.folder_tree import FolderTree
from mini_letta.toolbox.sandbox import Sandbox, SandboxSettings, unavailable_reason
from mini_letta.toolbox.shell import run_bash

RUNS = 50
EVERY_FOLDER_READ = "  the same, every git folder read"
FOLDERS = 2000
WALKED = "  the same, every folder lstat'ed"


def paired_medians(runs: dict) -> dict[str, float]:
    """The median ms of each of ``runs`` (label: function), run in turn ``RUNS`` times."""
    for run in runs.values():
        run()  # warm the page cache for bash and bwrap
    times: dict[str, list[float]] = {label: [] for label in runs}
    for _ in range(RUNS):
        for label, run in runs.items():
            started = time.perf_counter()
            run()
            times[label].append((time.perf_counter() - started) * 1000)
    return {label: statistics.median(values) for label, values in times.items()}


def reading_every_folder(sandbox: Sandbox):
    """``sandbox.run`` with the clean-up told nothing is fixed: it reads every git folder."""
    def run() -> None:
        real = disarm.RepositoryWatch.before
        disarm.RepositoryWatch.before = lambda workspace, fixed=(): real(workspace)
        try:
            sandbox.run("true", 10, 10_000)
        finally:
            disarm.RepositoryWatch.before = real
    return run


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


def make_folders(workspace: Path) -> None:
    """A repository of ``FOLDERS`` folders (40 of 50), as a project with its virtualenv has."""
    subprocess.run(["git", "init", "-q", str(workspace)], check=True, capture_output=True)
    for number in range(FOLDERS):
        (workspace / "src" / str(number // 50) / str(number % 50)).mkdir(parents=True)


def main() -> int:
    reason = unavailable_reason()
    if reason:
        print(f"no sandbox here: {reason}")
        return 1
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        data = workspace.parent / "mini-letta-bench-data"
        plain_folder = workspace / "plain"
        plain_folder.mkdir()
        repositories = workspace / "repos"
        make_repositories(repositories)
        boxes = {label: Sandbox.create(place, settings, data) for label, place, settings in [
            ("workspace-write, no network", plain_folder, SandboxSettings()),
            ("workspace-write, network allowed", plain_folder, SandboxSettings(network=True)),
            ("a repository, 4 more inside it", repositories, SandboxSettings())]}
        runs = {"without the sandbox": lambda: run_bash("true", plain_folder, 10, 10_000)}
        runs.update({label: (lambda box=box: box.run("true", 10, 10_000)) for label, box in boxes.items()})
        runs[EVERY_FOLDER_READ] = reading_every_folder(Sandbox.create(repositories, SandboxSettings(), data))
        for label, name in [(f"a repository of {FOLDERS:,} folders", "big"), (WALKED, "big-walked")]:
            make_folders(workspace / name)
            box = Sandbox.create(workspace / name, SandboxSettings(), data)
            if name == "big-walked":  # as if inotify could not be used
                disarm._TREES[box.workspace] = FolderTree(_gave_up=True)
            runs[label] = lambda box=box: box.run("true", 10, 10_000)
        results = paired_medians(runs)
        plain = results["without the sandbox"]
    print(f"bash tool running `true`, median of {RUNS} runs (rows interleaved):")
    for label, value in results.items():
        extra = "" if label.startswith("without") else f"  (+{value - plain:.1f} ms)"
        print(f"  {label:<34} {value:6.1f} ms{extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
