"""Whole-process start-up times of ``mini-letta``, each as a ratio to ``python -c pass`` of the same run.

Run from the repository root:  python -m benchmarks.bench_startup

Measures wall-clock time from spawning the process to its exit (``--version``, ``--help``,
``-p hi`` with the demo model) and, in a pseudo-terminal, from spawning ``mini-letta`` to the
moment the prompt ``› `` reaches the terminal. Every run gets a fresh ``MINI_LETTA_HOME`` and a
fresh workspace, so nothing is resumed and no history is loaded. Goals (issue 7): ``--version``
under 1.5 × ``python -c pass`` + 50 ms; the prompt drawn under 300 ms.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path
from typing import Callable, Iterator

REPEATS = 15
PROMPT = "›".encode()  # prompt_toolkit writes a style reset between it and its space
CURSOR_POSITION_QUERY = b"\x1b[6n"
PROMPT_TIMEOUT_SECONDS = 20.0
VERSION_GOAL_RATIO, VERSION_GOAL_EXTRA_MS = 1.5, 50.0
PROMPT_GOAL_MS = 300.0


def mini_letta_command() -> list[str]:
    """The installed console script next to this interpreter, else ``python -m mini_letta``."""
    script = Path(sys.executable).parent / "mini-letta"
    if script.exists():
        return [str(script)]
    found = shutil.which("mini-letta")
    return [found] if found else [sys.executable, "-m", "mini_letta"]


def _environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CODEAGENT_", "OPENAI_", "ANTHROPIC_", "OLLAMA_", "MINI_LETTA_"))}
    env.update(MINI_LETTA_HOME=str(home), TERM="xterm-256color", COLUMNS="100", LINES="30")
    return env


def time_process(argv: list[str]) -> float:
    """Seconds from spawn to exit, output discarded, in a fresh home and workspace."""
    with tempfile.TemporaryDirectory(prefix="mini-letta-bench-") as root:
        workspace = Path(root, "work")
        workspace.mkdir()
        start = time.perf_counter()
        completed = subprocess.run(argv, cwd=workspace, env=_environment(Path(root, "home")),
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        elapsed = time.perf_counter() - start
    if completed.returncode != 0:
        raise RuntimeError(f"{argv} exited with {completed.returncode}: {completed.stderr.decode()[-500:]}")
    return elapsed


def time_to_prompt(argv: list[str]) -> float:
    """Seconds from spawning the REPL in a pseudo-terminal until the prompt is on the terminal."""
    with tempfile.TemporaryDirectory(prefix="mini-letta-bench-") as root:
        workspace = Path(root, "work")
        workspace.mkdir()
        with repl_in_pty(argv, workspace, _environment(Path(root, "home"))) as (master, start):
            return _read_until_prompt(master, start)


@contextlib.contextmanager
def repl_in_pty(argv: list[str], workspace: Path, env: dict[str, str]) -> Iterator[tuple[int, float]]:
    """The REPL started in a 100×30 pseudo-terminal: (its master side, the moment it was spawned).
    Left with Ctrl-D, as a user would, and killed with its process group if it does not go."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    start = time.perf_counter()
    process = subprocess.Popen(argv, cwd=workspace, env=env, stdin=slave, stdout=slave, stderr=slave,
                               start_new_session=True)
    os.close(slave)
    try:
        yield master, start
        os.write(master, b"\x04")
        _drain_until_exit(master, process)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        os.close(master)


def _read_until_prompt(master: int, start: float) -> float:
    seen = b""
    while time.perf_counter() - start < PROMPT_TIMEOUT_SECONDS:
        ready, _, _ = select.select([master], [], [], 0.05)
        if not ready:
            continue
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        seen += chunk
        if CURSOR_POSITION_QUERY in chunk:
            # A real terminal answers prompt_toolkit's cursor-position query; so does this one.
            os.write(master, b"\x1b[1;1R")
        if PROMPT in seen:
            return time.perf_counter() - start
    raise RuntimeError(f"no prompt within {PROMPT_TIMEOUT_SECONDS:.0f} s; the terminal showed: {seen[-400:]!r}")


def _drain_until_exit(master: int, process: subprocess.Popen, timeout: float = PROMPT_TIMEOUT_SECONDS) -> None:
    deadline = time.perf_counter() + timeout
    while process.poll() is None and time.perf_counter() < deadline:
        ready, _, _ = select.select([master], [], [], 0.05)
        if ready:
            try:
                os.read(master, 65536)
            except OSError:
                break
    process.wait(timeout=max(0.1, deadline - time.perf_counter()))


def _medians_ms(cases: dict[str, Callable[[], float]], repeats: int) -> dict[str, float]:
    """Round-robin over the cases, so a burst of load elsewhere on the machine hits them all alike."""
    for measure in cases.values():
        measure()  # warm the file cache; the first run of a fresh interpreter is an outlier
    samples: dict[str, list[float]] = {label: [] for label in cases}
    for _ in range(repeats):
        for label, measure in cases.items():
            samples[label].append(measure())
    return {label: statistics.median(values) * 1000 for label, values in samples.items()}


def run(print_fn: Callable[[str], object] = print, repeats: int = REPEATS) -> dict:
    """Measure, print a table, and return the medians in milliseconds and the ratios to ``python -c pass``."""
    command = mini_letta_command()
    medians = _medians_ms({
        "python -c pass": lambda: time_process([sys.executable, "-c", "pass"]),
        "mini-letta --version": lambda: time_process(command + ["--version"]),
        "mini-letta --help": lambda: time_process(command + ["--help"]),
        "mini-letta -p hi (demo)": lambda: time_process(command + ["--provider", "demo", "-p", "hi"]),
        # What a person types (no key here, so the demo model); then the same through the option parser.
        "mini-letta: prompt drawn (pty)": lambda: time_to_prompt(command),
        "mini-letta --provider demo: prompt drawn (pty)": lambda: time_to_prompt(command + ["--provider", "demo"]),
    }, repeats)
    baseline = medians["python -c pass"]
    width = max(len(label) for label in medians)
    print_fn(f"median of {repeats} runs each (fresh home and workspace per run), {os.cpu_count()} CPUs")
    print_fn(f"{'':{width}}  {'ms':>8}  {'x python':>8}")
    for label, ms in medians.items():
        print_fn(f"{label:{width}}  {ms:8.1f}  {ms / baseline:8.2f}")
    version_goal = VERSION_GOAL_RATIO * baseline + VERSION_GOAL_EXTRA_MS
    version, prompt = medians["mini-letta --version"], medians["mini-letta: prompt drawn (pty)"]
    print_fn(f"goals: --version {version:.0f} ms ≤ {version_goal:.0f} ms (1.5 × python + 50 ms): "
             f"{'met' if version <= version_goal else 'MISSED'}; prompt {prompt:.0f} ms ≤ {PROMPT_GOAL_MS:.0f} ms: "
             f"{'met' if prompt <= PROMPT_GOAL_MS else 'MISSED'}")
    return {
        "python_ms": baseline,
        "version_ms": version,
        "help_ms": medians["mini-letta --help"],
        "print_demo_ms": medians["mini-letta -p hi (demo)"],
        "prompt_ms": prompt,
        "prompt_with_options_ms": medians["mini-letta --provider demo: prompt drawn (pty)"],
        "ratios": {label: ms / baseline for label, ms in medians.items()},
        "version_goal_met": version <= version_goal,
        "prompt_goal_met": prompt <= PROMPT_GOAL_MS,
    }


if __name__ == "__main__":
    run()
