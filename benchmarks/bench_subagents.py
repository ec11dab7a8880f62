"""A 200-file audit in a 4,096-token window, with subagents and without.

Run from the repository root:  python -m benchmarks.bench_subagents [--files 200] [--window 4096]

The scripted model audits the first ``--files`` Python files of a real package (the installed
``openai`` sources, sorted by path) in one user turn. Without subagents it reads them one by one
in its own context, compacting as it must. With subagents it hands them out in ``explore`` tasks of
``CHUNK`` files, three task calls per reply (read-only, so they run side by side); each subagent
reads its files in a 4,096-token window of its own and reports in one line. The agents are
built by ``app.build_agent``, as the CLI builds them; the scripted server serves the window and
rejects a request (prompt + ``max_tokens``) that does not fit, counting like us or 1.3 times more.

Printed per server and mode: files read, the parent's compactions, the subagents' compactions,
server rejections (overflows), the parent's largest request (share of the window), how the turn
ended. Goal: with subagents, every file read, 0 overflows and the parent's largest request under
60% of the window.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from agent_support import request_tokens, sized_text, tool_call  # noqa: E402

from mini_letta.app import Options, build_agent  # noqa: E402
from mini_letta.errors import MiniLettaError  # noqa: E402
from mini_letta.messages import Message, ToolCall, new_id  # noqa: E402
from mini_letta.providers.base import Request  # noqa: E402
from mini_letta.providers.scripted import ScriptedProvider  # noqa: E402
from mini_letta.toolbox import approve_all  # noqa: E402

FILES = 200
WINDOW = 4_096
CHUNK = 20
PARALLEL_CALLS = 3
SERVERS = {"same count": 1.0, "1.3x, max_tokens enforced": 1.3}
TASK = "Audit the openai package copied into pkg/: read every Python file and say what each defines."
SUBAGENT_MARK = "working for another agent"
BRIEF = "Audit the Python"


def package_files(count: int) -> list[tuple[Path, Path]]:
    """(source, path inside pkg/) of the first ``count`` files of the openai package."""
    import openai

    root = Path(openai.__file__).parent
    return [(source, source.relative_to(root.parent)) for source in sorted(root.rglob("*.py"))[:count]]


@dataclass
class Row:
    server: str
    mode: str
    files_read: int
    parent_compactions: int
    child_compactions: int
    parent_overflows: int
    child_overflows: int
    largest_share: float
    end: str


def summary_for(request: Request) -> str:
    return "## Current work\nAuditing the package, one file at a time.\n" + sized_text(min(300, request.max_tokens // 2))


class Model:
    """The scripted model for the parent and its subagents. Each keeps its plan in the model's own
    memory (compaction rewrites what it sees): the parent the next chunk to hand out, a subagent
    (known by its brief, which survives its compactions) the next file of its chunk."""

    def __init__(self, paths: list[str], delegate: bool):
        self.paths = paths
        self.delegate = delegate
        self.lock = threading.Lock()
        self.next_file = 0
        self.next_chunk = 0
        self.children: dict[str, int] = {}
        self.read: set[str] = set()
        self.parent_sizes: list[int] = []

    def __call__(self, request: Request) -> str | Message:
        if request.purpose == "summary":
            return summary_for(request)
        # The brief, found again after a compaction summarised the messages around it.
        brief = next((m.text for m in request.messages if m.role == "user" and m.text.startswith(BRIEF)), "")
        if SUBAGENT_MARK in request.system:
            return self.child(brief)
        return self.parent()

    def parent(self) -> Message:
        with self.lock:
            if not self.delegate:
                index, self.next_file = self.next_file, self.next_file + 1
                if index < len(self.paths):
                    self.read.add(self.paths[index])
                    return tool_call("read_file", path=self.paths[index])
                return Message.assistant(f"Audit done: read {len(self.paths)} files.")
            calls = []
            while self.next_chunk * CHUNK < len(self.paths) and len(calls) < PARALLEL_CALLS:
                first = self.next_chunk * CHUNK
                last = min(first + CHUNK, len(self.paths))
                self.next_chunk += 1
                calls.append(ToolCall(new_id("call_"), "task", json.dumps({
                    "description": f"audit files {first + 1}-{last}",
                    "prompt": f"{BRIEF} files {first + 1} to {last} of glob pkg/**/*.py sorted by path; "
                              "report in one line.",
                    "subagent_type": "explore"})))
            if calls:
                return Message.assistant("", calls)
            return Message.assistant(f"Audit done: {self.next_chunk} subagents read {len(self.paths)} files.")

    def child(self, brief: str) -> Message:
        first, last = (int(word) for word in brief.split()[4:7:2])
        files = self.paths[first - 1:last]
        with self.lock:
            index = self.children.get(brief, 0)
            self.children[brief] = index + 1
            if index < len(files):
                self.read.add(files[index])
                return tool_call("read_file", path=files[index])
        return Message.assistant(f"Read all {len(files)} files ({files[0]} to {files[-1]}): each defines its "
                                 "module's classes and functions; no problems found.")


def run(server: str, ratio: float, delegate: bool, files: int, window: int, folder: Path) -> Row:
    workspace = folder / "ws"
    paths = []
    for source, inside in package_files(files):
        relative = Path("pkg") / inside
        (workspace / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, workspace / relative)
        paths.append(str(relative))
    model = Model(paths, delegate)
    sizes: list[tuple[bool, int, bool]] = []  # (the parent's, size, rejected)

    def count(request: Request) -> int:
        size = int(request_tokens(request) * ratio)
        sizes.append((request.purpose != "summary" and SUBAGENT_MARK not in request.system, size,
                      size + request.max_tokens > window))
        return size

    provider = ScriptedProvider(default=model, window=window, count=count)
    os.environ["MINI_LETTA_HOME"] = str(folder / "home")
    agent = build_agent(Options(workspace=workspace, headless=True), approve_all, provider=provider)
    agent.max_steps = 400
    try:
        agent.run_turn(TASK)
        end = "done"
    except MiniLettaError as error:
        end = str(error)
    runs = agent.subagents.runs
    failed = [r for r in runs if r.status != "done"]
    if failed and end == "done":
        end = f"{len(failed)} subagents ended {failed[0].status}: {failed[0].error}"
    largest = max((size for parent, size, _ in sizes if parent), default=0)
    parent_overflows = sum(1 for parent, _, rejected in sizes if parent and rejected)
    return Row(server, "subagents" if delegate else "one context", len(model.read), len(agent.compactions),
               sum(r.compactions for r in runs), parent_overflows, provider.overflows - parent_overflows,
               largest / window, end)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=FILES)
    parser.add_argument("--window", type=int, default=WINDOW)
    args = parser.parse_args(argv)
    home = os.environ.get("MINI_LETTA_HOME")
    rows = []
    try:
        for server, ratio in SERVERS.items():
            for delegate in (False, True):
                with tempfile.TemporaryDirectory() as folder:
                    rows.append(run(server, ratio, delegate, args.files, args.window, Path(folder)))
    finally:
        if home is None:
            os.environ.pop("MINI_LETTA_HOME", None)
        else:
            os.environ["MINI_LETTA_HOME"] = home
    print(f"A {args.files}-file scripted audit of openai in one turn, window {args.window:,} "
          "(python -m benchmarks.bench_subagents)\n")
    print("| server | mode | files read | compactions: parent, subagents | overflows: parent, subagents | "
          "parent's largest request | end |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        end = r.end if len(r.end) < 120 else r.end[:117] + "..."
        print(f"| {r.server} | {r.mode} | {r.files_read}/{args.files} | {r.parent_compactions}, "
              f"{r.child_compactions} | {r.parent_overflows}, {r.child_overflows} | {r.largest_share:.0%} | {end} |")
    goal = [r for r in rows if r.mode == "subagents"]
    met = all(r.files_read == args.files and r.parent_overflows + r.child_overflows == 0 and r.largest_share < 0.6
              and r.end == "done" for r in goal)
    print(f"\nGoal with subagents: {args.files}/{args.files} read, 0 overflows, parent under 60% of the window: "
          f"{'met' if met else 'MISSED'}.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
