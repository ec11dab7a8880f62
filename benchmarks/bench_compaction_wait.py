"""The wait the user sees at the compaction point, without and with compaction ahead of time.

Run from the repository root:  python -m benchmarks.bench_compaction_wait [--summary-seconds 3]

A real :class:`~mini_letta.loop.agent.Agent` (real system prompt, tools, budget, compactor) talks to a
scripted model in a 16k window: chat replies come at once, a summary takes ``--summary-seconds``
(3 s, a hosted model summarising a long history). Each turn is what the REPL does: the prompt is
shown (with ahead-of-time compaction on, ``prepare_compaction`` runs here), the user types for up to
``--typing`` seconds, then sends the message and ``run_turn`` runs. The figure is how long
``run_turn`` takes on the turns that compacted: the chat reply is instant, so it is the compaction
the user waits for. The simulated typing ends early once nothing runs in the background (nothing
measured depends on it then), so the run takes about a minute rather than turns × typing.
Goal (issue 14): under 100 ms median with ahead-of-time compaction.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Callable

from mini_letta.loop.agent import Agent
from mini_letta.loop.parts import build_parts
from mini_letta.context import ContextBudget, counter_for_model, resolve_window
from mini_letta.messages import Message
from mini_letta.providers.base import Request
from mini_letta.providers.scripted import ScriptedProvider
from mini_letta.toolbox import Toolbox, approve_all

WINDOW = 16_000
TURNS = 40
SUMMARY_SECONDS = 3.0
TYPING_SECONDS = 5.0
GOAL_MS = 100
WORDS = ("parser session window budget token summary provider stream retry module function request "
         "response cache index message history layer threshold reserve").split()


def _text(words: int, seed: int) -> str:
    return " ".join(WORDS[(seed + 7 * n) % len(WORDS)] for n in range(words))


def _agent(root: Path, summary_seconds: float) -> tuple[Agent, ScriptedProvider]:
    counter = counter_for_model("scripted")

    def count(request: Request) -> int:
        return counter.count_system(request.system) + counter.count_tools(request.tools) + \
            counter.count_messages(request.messages)

    turn = [0]

    def answer(request: Request):
        if request.purpose == "summary":
            time.sleep(summary_seconds)
            return "Earlier work: the user asked about the parser, the cache and the retry logic; all answered."
        turn[0] += 1
        return Message.assistant(f"answer {turn[0]}: " + _text(450, turn[0]))

    provider = ScriptedProvider(default=answer, window=WINDOW, count=count)
    budget = ContextBudget(counter, resolve_window(provider.model, WINDOW), auto_compact=True)
    agent = Agent(parts=build_parts(provider=provider, toolbox=Toolbox(root, approve_all), budget=budget,
                                    workspace=root))
    return agent, provider


def session(ahead: bool, *, turns: int, summary_seconds: float, typing: float,
            print_fn: Callable[[str], object]) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        agent, provider = _agent(Path(folder), summary_seconds)
        waits, prepared_used = [], 0
        for n in range(turns):
            if ahead:
                agent.prepare_compaction()
                typed_until = time.monotonic() + typing
                while agent.ahead.running and time.monotonic() < typed_until:
                    time.sleep(0.01)
            start = time.perf_counter()
            result = agent.run_turn(f"question {n}: " + _text(450, n + 3))
            elapsed = time.perf_counter() - start
            if result.compactions:
                waits.append(elapsed)
                prepared_used += sum(record.prepared for record in result.compactions)
        calls = sum(request.purpose == "summary" for request in provider.requests)
    figures = {
        "compactions": len(waits), "prepared_used": prepared_used, "summary_calls": calls,
        "median_ms": statistics.median(waits) * 1000 if waits else 0.0,
        "max_ms": max(waits) * 1000 if waits else 0.0,
    }
    print_fn(f"{'with' if ahead else 'without':>8} ahead-of-time: {figures['compactions']} compactions "
             f"({prepared_used} from a prepared summary), wait at the compaction point median "
             f"{figures['median_ms']:,.0f} ms, max {figures['max_ms']:,.0f} ms; summarizer calls {calls}")
    return figures


def run(print_fn: Callable[[str], object] = print, *, turns: int = TURNS, summary_seconds: float = SUMMARY_SECONDS,
        typing: float = TYPING_SECONDS) -> dict:
    print_fn(f"{turns} turns of ~900 tokens in a {WINDOW:,}-token window; a summary takes {summary_seconds:g} s; "
             f"the user types for up to {typing:g} s")
    without = session(False, turns=turns, summary_seconds=summary_seconds, typing=typing, print_fn=print_fn)
    with_ahead = session(True, turns=turns, summary_seconds=summary_seconds, typing=typing, print_fn=print_fn)
    met = with_ahead["compactions"] > 0 and with_ahead["median_ms"] < GOAL_MS
    print_fn(f"goal: median wait under {GOAL_MS} ms with ahead-of-time compaction: {'met' if met else 'MISSED'}")
    return {"without": without, "with": with_ahead, "goal_met": met}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=TURNS)
    parser.add_argument("--summary-seconds", type=float, default=SUMMARY_SECONDS)
    parser.add_argument("--typing", type=float, default=TYPING_SECONDS)
    arguments = parser.parse_args()
    run(turns=arguments.turns, summary_seconds=arguments.summary_seconds, typing=arguments.typing)
