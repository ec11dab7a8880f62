"""What checkpoints cost: a restore of many files, and the time a checkpoint adds to a write.

Run from the repository root:  python -m benchmarks.bench_checkpoints [--files N] [--size BYTES]

1. Restore: the agent overwrites N files of SIZE bytes in one turn (each first write saves the old
   content); then /rewind's plan (reading and hashing every file) and the restore of all of them.
   Goal: 500 files of 100 kB in under 2 s.
2. Per write: ``write_file`` of a 100 kB file through the Toolbox with and without checkpoints; the
   difference is the cost of saving the old content before the change and recording the hash of
   what the write left. Goal: under 10 ms. The content the write left is kept at the next message
   (``Checkpoints.settle``), whose time is shown too.
3. Per command, in a git work tree of N files: the two snapshots (before and after) around a command
   that changes one file. Shown for information; a command usually takes longer than this anyway.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from mini_letta.checkpoints.recorder import Checkpoints
from mini_letta.checkpoints.restore import apply, plan
from mini_letta.messages import Message, ToolCall
from mini_letta.toolbox import Toolbox, approve_all

GOAL_RESTORE_S = 2.0
GOAL_WRITE_MS = 10.0
WRITES = 60


def _content(index: int, size: int, version: str) -> str:
    line = f"{version} file {index}: " + "x" * 70 + "\n"
    return (line * (size // len(line) + 1))[:size]


def _recorded(folder: Path) -> tuple[Toolbox, Checkpoints]:
    workspace = folder / "ws"
    toolbox = Toolbox(workspace, approve_all)
    checkpoints = Checkpoints(workspace, toolbox.ws.resolve, lambda: folder / "session.jsonl", lambda text: None)
    toolbox.watch_changes = checkpoints.watch
    return toolbox, checkpoints


def _write(toolbox: Toolbox, path: str, content: str) -> None:
    outcome = toolbox.run(ToolCall("c", "write_file", json.dumps({"path": path, "content": content})))
    assert not outcome.is_error, outcome.text


def restore_figures(files: int, size: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        (folder / "ws").mkdir()
        for index in range(files):
            (folder / "ws" / f"f{index:04d}.txt").write_text(_content(index, size, "old"))
        toolbox, checkpoints = _recorded(folder)
        message = Message.user("rewrite everything")
        checkpoints.begin(message)
        for index in range(files):
            _write(toolbox, f"f{index:04d}.txt", _content(index, size, "new"))
        started = time.perf_counter()
        checkpoints.settle()  # at the next message: keeps what the writes left
        settled = time.perf_counter()
        store = checkpoints.store()
        restore = plan(store, folder / "ws", message.id)
        planned = time.perf_counter()
        failures = apply(store, folder / "ws", restore.items)
        done = time.perf_counter()
        assert not failures and len(restore.items) == files
        assert (folder / "ws" / "f0000.txt").read_text() == _content(0, size, "old")
        return {"settle_s": settled - started, "plan_s": planned - settled, "apply_s": done - planned,
                "total_s": done - settled}


def write_figures(size: int) -> dict[str, float]:
    """Writes with and without checkpoints, alternated so that both see the same load on the disk."""
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        (folder / "ws").mkdir()
        (folder / "plain").mkdir()
        plain = Toolbox(folder / "plain", approve_all)
        toolbox, checkpoints = _recorded(folder)
        without, with_checkpoints, begins = [], [], []
        for index in range(WRITES):
            for box in (plain, toolbox):
                path = box.workspace / f"w{index:03d}.txt"
                path.write_text(_content(index, size, "old"))
                if box is toolbox:
                    # A new turn before every write: each is the turn's first write to its file, the
                    # costly case; the new message keeps what the write before it left.
                    started = time.perf_counter()
                    checkpoints.begin(Message.user("w"))
                    begins.append((time.perf_counter() - started) * 1000)
                started = time.perf_counter()
                _write(box, path.name, _content(index, size, "new"))
                (with_checkpoints if box is toolbox else without).append((time.perf_counter() - started) * 1000)
    added = sorted(b - a for a, b in zip(without, with_checkpoints))
    return {"without_ms": statistics.median(without), "with_ms": statistics.median(with_checkpoints),
            "added_ms": statistics.median(added), "p95_added_ms": added[int(WRITES * 0.95)],
            "next_message_ms": statistics.median(begins[1:])}


def command_figures(files: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        workspace = folder / "ws"
        workspace.mkdir()
        for index in range(files):
            (workspace / f"f{index:04d}.txt").write_text(_content(index, 2_000, "old"))
        env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.invalid",
               "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.invalid"}
        subprocess.run("git init -q && git add -A && git commit -qm init", shell=True, cwd=workspace, env=env,
                       check=True)
        toolbox, checkpoints = _recorded(folder)
        plain = Toolbox(workspace, approve_all)
        timings: dict[str, list[float]] = {"with": [], "without": []}
        for round_ in range(10):
            for label, box in (("without", plain), ("with", toolbox)):
                checkpoints.begin(Message.user("run"))
                command = f"echo {label}{round_} >> f0001.txt"
                started = time.perf_counter()
                box.run(ToolCall("c", "bash", json.dumps({"command": command})))
                timings[label].append((time.perf_counter() - started) * 1000)
    return {"without_ms": statistics.median(timings["without"]), "with_ms": statistics.median(timings["with"])}


def run(print_fn: Callable[[str], None] = print, files: int = 500, size: int = 100_000) -> dict[str, Any]:
    restore = restore_figures(files, size)
    print_fn(f"Restore {files} files of {size // 1000} kB: plan {restore['plan_s']:.2f} s + restore "
             f"{restore['apply_s']:.2f} s = {restore['total_s']:.2f} s (goal < {GOAL_RESTORE_S:g} s); keeping "
             f"what the {files} writes left took {restore['settle_s']:.2f} s at the next message")
    writes = write_figures(size)
    print_fn(f"write_file of {size // 1000} kB, median of {WRITES}: {writes['without_ms']:.2f} ms without "
             f"checkpoints, {writes['with_ms']:.2f} ms with: +{writes['added_ms']:.2f} ms "
             f"(p95 +{writes['p95_added_ms']:.2f} ms; goal < {GOAL_WRITE_MS:g} ms); the next message "
             f"{writes['next_message_ms']:.2f} ms (it keeps what the write left)")
    commands = command_figures(files)
    print_fn(f"bash in a git work tree of {files} files, median of 10: {commands['without_ms']:.0f} ms without "
             f"snapshots, {commands['with_ms']:.0f} ms with")
    return {"restore": restore, "writes": writes, "commands": commands, "files": files, "size": size}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--size", type=int, default=100_000)
    arguments = parser.parse_args()
    run(files=arguments.files, size=arguments.size)
