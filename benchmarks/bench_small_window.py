"""Long tool loops in small windows: does a 40-step task run to the end?

Run from the repository root:  python -m benchmarks.bench_small_window [--windows 2048,4096,8192,16000]

The scripted audit of issue 27: in one user turn, a scripted model reads 40 files of a real package
(the installed ``rich`` sources, alphabetical, ``_emoji_codes.py``'s 140 kB included) one by one with
``read_file``, then answers. Summary requests are answered with a summary as long as the request
allows. The server serves the window the agent works in, enforces prompt + ``max_tokens``
against it, and counts either like us or 1.3 times what we count (another tokenizer). The agent
is the real one (``tests/agent_support.make_agent``: full system prompt, every tool).

Per window and server: files read, compactions, summarizer calls, server rejections (overflows),
the largest request as the server counted it (share of the window), and how the turn ended.
Goal: 40/40 and 0 overflows at 4,096 in both cases.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from agent_support import make_agent, request_tokens, script, sized_text, tool_call  # noqa: E402

from mini_letta.errors import ContextFullError, FloorTooHighError  # noqa: E402
from mini_letta.messages import Message  # noqa: E402
from mini_letta.providers.base import Request  # noqa: E402

FILES = 40
WINDOWS = (2_048, 4_096, 8_192, 16_000)
SERVERS = {"same count": 1.0, "1.3x, max_tokens enforced": 1.3}
TASK = "Audit the rich package in rich/: read its Python files one by one, in alphabetical order, then report."


def rich_files() -> list[Path]:
    import rich

    return sorted(Path(rich.__file__).parent.glob("*.py"))[:FILES]


@dataclass
class Run:
    window: int
    server: str
    files_read: int
    compactions: int
    summarizer_calls: int
    overflows: int
    largest_share: float
    end: str


def audit_model(paths: list[str]):
    """The scripted model: the next unread file each step (its own memory, as a model's plan would
    be, since compaction rewrites what it sees), then the report."""
    position = {"next": 0}

    def step(request: Request) -> Message:
        index = position["next"]
        position["next"] += 1
        if index < len(paths):
            call = tool_call("read_file", path=paths[index])
            call.text = f"Step {index + 1}: reading {paths[index]}."
            return call
        return Message.assistant(f"Audit done: read {len(paths)} files.")

    return step


def summary_for(request: Request) -> str:
    """A summary as long as a model writing to its limit would make it (at most 300 tokens)."""
    return "## Current work\nAuditing rich, one file at a time.\n" + sized_text(min(300, request.max_tokens // 2))


def run(window: int, server: str, ratio: float, workspace: Path) -> Run:
    folder = workspace / "rich"
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for source in rich_files():
        shutil.copyfile(source, folder / source.name)
        paths.append(f"rich/{source.name}")
    step = audit_model(paths)
    provider = script([step] * (len(paths) + 1), summary=summary_for, window=window,
                      count=lambda request: int(request_tokens(request) * ratio))
    agent = make_agent(provider, workspace, window=window)
    try:
        agent.run_turn(TASK)
        end = "done"
    except (ContextFullError, FloorTooHighError) as error:
        end = str(error)
    read = len(agent.toolbox.files_read)
    largest = max((int(request_tokens(r) * ratio) for r in provider.requests), default=0)
    return Run(window, server, read, len(agent.compactions),
               sum(1 for r in provider.requests if r.purpose == "summary"), provider.overflows,
               largest / window, end)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", default=",".join(str(w) for w in WINDOWS))
    args = parser.parse_args(argv)
    rows = []
    for window in (int(w) for w in args.windows.split(",")):
        for server, ratio in SERVERS.items():
            with tempfile.TemporaryDirectory() as folder:
                rows.append(run(window, server, ratio, Path(folder)))
    print(f"The {FILES}-file scripted audit of rich in one turn (python -m benchmarks.bench_small_window)\n")
    print("| window | server | files read | compactions | summarizer calls | overflows | largest request | end |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        end = r.end if len(r.end) < 160 else r.end[:157] + "..."
        print(f"| {r.window:,} | {r.server} | {r.files_read}/{FILES} | {r.compactions} | {r.summarizer_calls} | "
              f"{r.overflows} | {r.largest_share:.0%} | {end} |")
    goal = [r for r in rows if r.window == 4_096]
    if goal:
        met = all(r.files_read == FILES and r.overflows == 0 for r in goal)
        print(f"\nGoal at 4,096: {FILES}/{FILES} and 0 overflows with both servers: {'met' if met else 'MISSED'}.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
