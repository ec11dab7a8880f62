"""A long coding session through the real agent loop, at several window sizes.

Run from the repository root:  python -m benchmarks.simulate [--turns N] [--seed S] [--windows 4096,32000]

A seeded scripted model drives the real Agent (the turn loop, compaction's plan, toolbox on a
generated workspace of Python modules and test logs): each turn is a user prompt (sometimes with a
pasted log), zero to four tool calls (read_file, grep, glob on real files) and a prose answer.
The scripted provider enforces the window like a server and counts requests with a hidden factor
(1.1x the agent's local count, as a provider tokenizer that differs from ours), so the overflow
path can happen; its usage reports carry the same factor.

The 4k window uses a lean agent (a one-line system prompt, read_file/grep/glob): the full agent's
floor (~1,600 tokens of system prompt and tool schemas, ~2,000 with core memory) would leave a 4k
window almost no room for a conversation. 32k and 200k use the full agent with core memory.

Printed per window: requests over the window by local count (must be 0), provider overflows,
compactions by trigger and by layer, tokens after each compaction as a share of the threshold,
turns between compactions, summarizer calls, turns that ended with an error, wall time.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from agent_support import make_agent, request_tokens, tool_call  # noqa: E402  (the tests' own wiring)

from mini_letta.compaction import CompactionRecord  # noqa: E402
from mini_letta.errors import MiniLettaError  # noqa: E402
from mini_letta.memory import CoreMemory  # noqa: E402
from mini_letta.messages import Message  # noqa: E402
from mini_letta.providers.base import Request  # noqa: E402
from mini_letta.providers.scripted import ScriptedProvider  # noqa: E402

HIDDEN_FACTOR = 1.1
WINDOWS = (4_096, 32_000, 200_000)
LEAN_WINDOW_BELOW = 16_384
LEAN_SYSTEM = "You are a careful coding agent working in the user's project folder."
LEAN_TOOLS = ("read_file", "grep", "glob")

WORDS = ("the parser config test fails when value is empty fix handle request response cache user file path "
         "error return list update check module import function class method field index token window budget "
         "compaction summary message provider stream retry timeout session memory tool").split()
IDENTIFIERS = ("parse_config", "load_session", "TokenCounter", "handle_request", "retry_after", "user_id",
               "cache_key", "payload", "window", "threshold", "messages", "summary", "result", "items")
ASKS = ("Why does {f} fail on an empty value?", "Read {f} and explain {i}.", "Fix the bug in {i} in {f}.",
        "Where is {i} used?", "Add a test for {i}.", "The CI log shows a failure in {f}; what happened?",
        "Refactor {i} so it handles the retry case.", "Summarise what {f} does.")


@dataclass
class Result:
    window: int
    threshold: int
    floor: int
    turns: int
    requests: int = 0
    over_window: int = 0
    overflows: int = 0
    summarizer_calls: int = 0
    errors: list[str] = field(default_factory=list)
    compactions: list[CompactionRecord] = field(default_factory=list)
    compaction_turns: list[int] = field(default_factory=list)
    seconds: float = 0.0

    def by_trigger(self) -> Counter:
        return Counter(r.trigger for r in self.compactions)

    def by_layer(self) -> Counter:
        return Counter(layer for r in self.compactions for layer in r.layers)

    def after_shares(self) -> list[float]:
        return [r.tokens_after / self.threshold for r in self.compactions]

    def turns_between(self) -> list[int]:
        return [b - a for a, b in zip(self.compaction_turns, self.compaction_turns[1:])]


def _prose(rng: random.Random, words: int) -> str:
    sentences, current = [], []
    for _ in range(words):
        current.append(rng.choice(WORDS) if rng.random() > 0.15 else f"`{rng.choice(IDENTIFIERS)}`")
        if len(current) >= rng.randint(8, 18):
            sentences.append(" ".join(current).capitalize() + ".")
            current = []
    if current:
        sentences.append(" ".join(current).capitalize() + ".")
    return " ".join(sentences)


def _module(rng: random.Random, index: int) -> str:
    lines = [f'"""Module {index}: {_prose(rng, 12)}"""', "", "import json", ""]
    for n in range(rng.randint(4, 40)):
        name = f"{rng.choice(IDENTIFIERS)}_{index}_{n}"
        lines += [f"def {name}(request, cache, *, retries=3):",
                  f'    """{_prose(rng, rng.randint(5, 14))}"""',
                  f"    key = cache.get(request.{rng.choice(IDENTIFIERS)}, {n})",
                  "    if key is None:",
                  f"        raise ValueError('missing {rng.choice(IDENTIFIERS)} in request')",
                  f"    return json.dumps({{'value': key, 'n': {n}}})", ""]
    return "\n".join(lines)


def _log(rng: random.Random, index: int) -> str:
    lines = [f"============ test session starts (run {index}) ============"]
    for n in range(rng.randint(20, 120)):
        outcome = "PASSED" if rng.random() > 0.1 else "FAILED"
        lines.append(f"tests/test_module_{rng.randint(0, 29)}.py::test_{rng.choice(IDENTIFIERS)}_{n} {outcome}")
    lines += ["", "E   AssertionError: expected 'value' in payload", f"{rng.randint(1, 9)} failed, 80 passed"]
    return "\n".join(lines)


def make_workspace(root: Path, rng: random.Random) -> tuple[list[str], list[str]]:
    modules, logs = [], []
    (root / "src").mkdir()
    (root / "logs").mkdir()
    for index in range(30):
        path = f"src/module_{index}.py"
        (root / path).write_text(_module(rng, index), encoding="utf-8")
        modules.append(path)
    for index in range(8):
        path = f"logs/test_run_{index}.log"
        (root / path).write_text(_log(rng, index), encoding="utf-8")
        logs.append(path)
    return modules, logs


class ScriptedSession:
    """The scripted model: a plan per turn (tool calls, then an answer), advanced only by requests
    the provider actually answers, plus a summarizer that writes a structured summary."""

    def __init__(self, rng: random.Random, modules: list[str], logs: list[str]):
        self.rng = rng
        self.modules = modules
        self.logs = logs
        self.plan: list[Message] = []

    def user_turn(self) -> str:
        rng = self.rng
        ask = rng.choice(ASKS).format(f=rng.choice(self.modules), i=rng.choice(IDENTIFIERS))
        if rng.random() < 0.1:
            ask += "\n\n```\n" + _log(rng, rng.randint(100, 999)) + "\n```"
        self.plan = [self._tool_step() for _ in range(rng.choice((0, 1, 1, 2, 2, 3, 4)))]
        self.plan.append(Message.assistant(_prose(rng, rng.randint(40, 300))))
        return ask

    def _tool_step(self) -> Message:
        rng = self.rng
        kind = rng.random()
        if kind < 0.5:
            call = tool_call("read_file", path=rng.choice(self.modules))
        elif kind < 0.7:
            call = tool_call("read_file", path=rng.choice(self.logs))
        elif kind < 0.9:
            call = tool_call("grep", pattern=rng.choice(IDENTIFIERS))
        else:
            call = tool_call("glob", pattern="src/*.py")
        call.text = "Let me look at that." if rng.random() < 0.5 else ""
        return call

    def answer(self, request: Request) -> Message | str:
        if request.purpose == "summary":
            return self._summary(request)
        return self.plan.pop(0) if len(self.plan) > 1 else self.plan[0]

    def _summary(self, request: Request) -> str:
        prompt = request.messages[0].text
        asks = [line for line in prompt.splitlines() if line.startswith("[user]")][-12:]
        body = "\n".join(["1. Primary request and intent: " + (asks[0][7:200] if asks else "(none)"),
                          "3. Files and code sections: " + ", ".join(sorted(set(self.modules[:6]))),
                          "6. All user messages:", *(f"   - {a[7:160]}" for a in asks),
                          "8. Current work: " + _prose(self.rng, 60)])
        return body[: request.max_tokens * 3]


def simulate(window: int, turns: int, seed: int = 0, hidden_factor: float = HIDDEN_FACTOR) -> Result:
    rng = random.Random(seed * 1_000_003 + window)
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder) / "project"
        workspace.mkdir()
        modules, logs = make_workspace(workspace, rng)
        session = ScriptedSession(rng, modules, logs)
        seen = {"requests": 0, "over": 0, "summaries": 0}

        def provider_count(request: Request) -> int:
            local = request_tokens(request)
            seen["requests"] += 1
            seen["over"] += local > window
            seen["summaries"] += request.purpose == "summary"
            return math.ceil(local * hidden_factor)

        provider = ScriptedProvider(default=session.answer, window=window, count=provider_count)
        if window < LEAN_WINDOW_BELOW:
            agent = make_agent(provider, workspace, window=window, lean_system=LEAN_SYSTEM, tool_names=LEAN_TOOLS)
        else:
            agent = make_agent(provider, workspace, window=window,
                               memory=CoreMemory.for_workspace(workspace, Path(folder) / "home"))
        result = Result(window, agent.budget.threshold,
                        agent.budget.calibration.floor(agent.system_prompt(), agent.tool_specs()), turns)
        started = time.perf_counter()
        for turn in range(1, turns + 1):
            try:
                outcome = agent.run_turn(session.user_turn())
                records = outcome.compactions
            except MiniLettaError as error:
                result.errors.append(f"turn {turn}: {error}")
                records = [r for r in agent.compactions if r not in result.compactions]
            for record in records:
                result.compactions.append(record)
                result.compaction_turns.append(turn)
            provider.requests.clear()  # snapshots of every request would hold the whole session
        result.seconds = time.perf_counter() - started
        result.requests, result.over_window, result.summarizer_calls = (
            seen["requests"], seen["over"], seen["summaries"])
        result.overflows = provider.overflows
    return result


def _spread(values: list[float], fmt: str) -> str:
    if not values:
        return "-"
    return " / ".join(format(v, fmt) for v in (min(values), statistics.median(values), max(values)))


def report(result: Result) -> str:
    between = result.turns_between()
    lines = [
        f"window {result.window:,} (threshold {result.threshold:,}, floor {result.floor:,}), {result.turns} turns",
        f"  requests {result.requests:,}, over the window by local count: {result.over_window}",
        f"  provider overflows (hidden factor {HIDDEN_FACTOR}): {result.overflows}",
        f"  compactions {len(result.compactions)}: by trigger {dict(result.by_trigger())}",
        f"    by layer {dict(result.by_layer())}",
        f"  tokens after compaction / threshold (min/median/max): {_spread(result.after_shares(), '.0%')}",
        "  turns between compactions (min/median): "
        + (f"{min(between)} / {statistics.median(between):g}" if between else "-"),
        f"  summarizer calls {result.summarizer_calls}, turns ended by an error {len(result.errors)}",
        f"  wall time {result.seconds:.1f} s",
    ]
    lines += [f"    {error}" for error in result.errors[:5]]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--windows", default=",".join(str(w) for w in WINDOWS))
    args = parser.parse_args()
    for window in (int(w) for w in args.windows.split(",")):
        print(report(simulate(window, args.turns, args.seed)), flush=True)


if __name__ == "__main__":
    main()
