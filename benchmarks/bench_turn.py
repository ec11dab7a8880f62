"""The agent's own work per turn in a long session, next to a naive full re-count of the request.

Run from the repository root:  python -m benchmarks.bench_turn

A real :class:`~mini_letta.loop.agent.Agent` (real toolbox, core memory, system prompt, budget and a real
session file, fsync included) holds a seeded coding session of ~1,000 messages / ~180k tokens (the
generator of ``bench_context``). Each timed turn is ``agent.run_turn``: append the user message and
save it, preflight (floor check, usage-anchored estimate, threshold), the model call, append the
reply and save it, observe its usage, record the turn's context size. The model answers instantly;
what its ``stream`` spends (building a usage report) is measured and subtracted, so the figure is
the agent's work alone. Goal (issue 7): under 5 ms median.
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator

from benchmarks.bench_context import SEED, session_messages
from mini_letta.loop.agent import Agent
from mini_letta.loop.state import SessionState
from mini_letta.app import make_compactor
from mini_letta.context import ContextBudget, TokenCounter, counter_for_model, resolve_window
from mini_letta.conversation import Conversation
from mini_letta.memory import CoreMemory, memory_tools
from mini_letta.messages import Message, Usage
from mini_letta.providers.base import Done, Request, StreamEvent
from mini_letta.sessions.store import SessionWriter
from mini_letta.toolbox import Toolbox, approve_all

MODEL = "gpt-4.1"  # a 1M-token window: the session never reaches the compaction threshold
TARGET_MESSAGES = 1_000
TURNS = 200
NAIVE_SAMPLES = 7
PROVIDER_FACTOR = 1.08  # the provider's tokens per local token, for realistic usage reports
USER_TEXT = "Run the failing test again and tell me whether the retry fix in load_session works."
REPLY_TEXT = "The test passes now: load_session retries once after a timeout and then reports the error."


class InstantProvider:
    """Answers at once with a short reply and a usage report; keeps the time it spent doing so."""

    name = "bench"

    def __init__(self, model: str, count: Callable[[Request], int]):
        self.model = model
        self.count = count
        self.seconds = 0.0

    def served_window(self) -> int | None:
        return None

    def stream(self, request: Request) -> Iterator[StreamEvent]:
        start = time.perf_counter()
        usage = Usage(input_tokens=round(self.count(request) * PROVIDER_FACTOR), output_tokens=20)
        reply = Message.assistant(REPLY_TEXT, usage=usage, stop_reason="end_turn")
        self.seconds += time.perf_counter() - start
        yield Done(reply)


def build_session(root: Path) -> Agent:
    """An agent whose conversation and session file already hold ~1,000 messages."""
    workspace, home = root / "work", root / "home"
    workspace.mkdir()
    counter = counter_for_model(MODEL)
    counter.warm()
    budget = ContextBudget(counter, resolve_window(MODEL), auto_compact=True)
    provider = InstantProvider(MODEL, lambda request: budget.count_request(request.system, request.tools,
                                                                           request.messages))
    memory = CoreMemory.for_workspace(workspace, home)
    session = SessionWriter.create(home, workspace, provider.name, MODEL)
    toolbox = Toolbox(workspace, approve_all)
    agent = Agent(provider=provider, toolbox=toolbox, budget=budget, workspace=workspace,
                  compactor_factory=make_compactor, memory=memory, state=SessionState(session, Conversation()))
    for spec, handler in memory_tools(memory, on_edit=agent.record_memory_edit):
        toolbox.register(spec, handler)

    system, tools = agent.system_prompt(), agent.tool_specs()
    for message in session_messages(random.Random(SEED)):
        if len(agent.conversation.messages) >= TARGET_MESSAGES and message.role == "user":
            break
        if message.role == "assistant":
            # What the provider would have reported for the request this message answered.
            prompt = budget.count_request(system, tools, agent.conversation.messages)
            message.usage = Usage(input_tokens=round(prompt * PROVIDER_FACTOR),
                                  output_tokens=counter.count_message(message))
            message.meta["floor_tokens"] = budget.calibration.floor(system, tools)
        agent.conversation.append(message)
        session.append_message(message)
    return agent


def naive_recount(agent: Agent) -> float:
    """Seconds to count the whole request from scratch with the real tokenizer."""
    fresh = TokenCounter(agent.budget.counter.encoding_name)  # shares the loaded encoding, not the cache
    start = time.perf_counter()
    fresh.count_system(agent.system_prompt())
    fresh.count_tools(agent.tool_specs())
    fresh.count_messages(agent.conversation.messages)
    return time.perf_counter() - start


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def _p90_ms(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=10)[-1] * 1000


def run(print_fn: Callable[[str], object] = print, turns: int = TURNS) -> dict:
    """Measure, print a table, and return the medians in milliseconds."""
    with tempfile.TemporaryDirectory(prefix="mini-letta-bench-") as root:
        agent = build_session(Path(root))
        start_messages = len(agent.conversation.messages)
        start_tokens = agent.budget.count_request(agent.system_prompt(), agent.tool_specs(),
                                                  agent.conversation.messages)
        provider: InstantProvider = agent.provider

        turn_seconds, preflight_seconds, save_seconds = [], [], []
        for _ in range(turns):
            spent_by_provider = provider.seconds
            start = time.perf_counter()
            agent.run_turn(USER_TEXT)
            turn_seconds.append(time.perf_counter() - start - (provider.seconds - spent_by_provider))
            start = time.perf_counter()
            agent.next_request()
            preflight_seconds.append(time.perf_counter() - start)
            start = time.perf_counter()
            agent.session.append_message(agent.conversation.messages[-1])
            save_seconds.append(time.perf_counter() - start)
        naive_seconds = [naive_recount(agent) for _ in range(NAIVE_SAMPLES)]
        end_messages = len(agent.conversation.messages)
        agent.session.close()

    turn, naive = _median_ms(turn_seconds), _median_ms(naive_seconds)
    rows = [
        ("agent's own work per turn (run_turn, model excluded)", turn_seconds),
        ("  of which preflight (floor check, estimate, threshold)", preflight_seconds),
        ("  of which one session save (write + fsync), twice a turn", save_seconds),
        ("naive full re-count of the request (real tokenizer)", naive_seconds),
    ]
    print_fn(f"session: {start_messages:,} → {end_messages:,} messages, {start_tokens:,} tokens (o200k) "
             f"at the start; {turns} turns, naive re-count {NAIVE_SAMPLES}×")
    width = max(len(label) for label, _ in rows)
    print_fn(f"{'':{width}}  {'median ms':>10}  {'p90 ms':>8}")
    for label, samples in rows:
        print_fn(f"{label:{width}}  {_median_ms(samples):10.3f}  {_p90_ms(samples):8.3f}")
    print_fn(f"naive / per-turn: {naive / turn:.0f}x; goal per turn < 5 ms: {'met' if turn < 5 else 'MISSED'}")
    return {
        "messages": start_messages,
        "tokens": start_tokens,
        "turn_ms": turn,
        "turn_p90_ms": _p90_ms(turn_seconds),
        "preflight_ms": _median_ms(preflight_seconds),
        "save_ms": _median_ms(save_seconds),
        "naive_recount_ms": naive,
        "goal_met": turn < 5,
    }


if __name__ == "__main__":
    run()
