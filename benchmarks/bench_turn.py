"""What a long session costs per turn, at several sizes, through the real provider classes.

Run from the repository root:  python -m benchmarks.bench_turn [--messages 100,1000,5000,20000]

At each size, a seeded coding session (the generator of ``bench_context``: prompts, assistant
text, tool calls, tool results of code and logs) of that many messages, and four figures, each
paired in the same run with the plain-JSON cost of the same data:

1. **agent work per turn**: ``agent.run_turn`` on a real agent (toolbox, core memory, budget, a
   real session file with its fsyncs) whose model answers at once; what the model's ``stream``
   spends is subtracted, so this is the agent's own work;
2. **request to the wire**, for the OpenAI and the Anthropic provider: from ``provider.stream``
   until a local HTTP server (127.0.0.1) has the whole body, against ``json.dumps`` of the body it
   received (what any client must at least spend). Twice: a step of a tool loop (the provider has
   sent the conversation before; the step added a tool call and its result), and *cold*, a fresh
   provider whose every message is converted and serialised (the first request after a resume,
   and what every request cost before the providers kept each message's wire form);
3. **resume**: ``load_session`` of the session file and the writer's note of what it holds, against
   ``json.loads`` of every line of the same file;
4. **peak memory** (``tracemalloc``) of the resume and of one OpenAI request, against the size of
   the session file;
5. **request body of a step**, each provider's ``request_body`` alone (no HTTP), the two in turn
   over 40 steps: Anthropic's against OpenAI's, the providers' own work per step.

No figure is an assertion; the ratios are what to read. ``benchmarks.bench_tool_loop`` measures the
same path as a server sees it, in a whole tool loop.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Callable, Iterator

from benchmarks.bench_context import SEED, SYSTEM, TOOLS, session_messages
from benchmarks.wire_fake import WireFake
from mini_letta.loop.agent import Agent
from mini_letta.loop.parts import build_parts
from mini_letta.loop.state import SessionState
from mini_letta.context import ContextBudget, WindowInfo, counter_for_model
from mini_letta.conversation import Conversation
from mini_letta.memory import CoreMemory, memory_tools
from mini_letta.messages import Message, ToolCall, Usage
from mini_letta.providers.anthropic_provider import AnthropicProvider
from mini_letta.providers.base import Done, Request, StreamEvent
from mini_letta.providers.openai_provider import OpenAIProvider
from mini_letta.sessions.store import SessionWriter, load_session
from mini_letta.toolbox import Toolbox, approve_all

SIZES = (100, 1_000, 5_000, 20_000)
MODEL = "gpt-4.1"
# Never compacts: the sessions measured here are larger than any real window.
NEVER_FULL = WindowInfo(10**9, "benchmark", None, 10**9)
TURNS = 30
REPEATS = 5
PROVIDER_FACTOR = 1.08  # the provider's tokens per local token, for realistic usage reports
USER_TEXT = "Run the failing test again and tell me whether the retry fix in load_session works."
REPLY_TEXT = "The test passes now: load_session retries once after a timeout and then reports the error."


class InstantProvider:
    """Answers at once with a short reply and a usage report; keeps the time it spent doing so."""

    name = "bench"

    def __init__(self, model: str, prompt_tokens: Callable[[], int]):
        self.model = model
        self.prompt_tokens = prompt_tokens
        self.seconds = 0.0

    def served_window(self) -> int | None:
        return None

    def stream(self, request: Request) -> Iterator[StreamEvent]:
        start = time.perf_counter()
        usage = Usage(input_tokens=round(self.prompt_tokens() * PROVIDER_FACTOR), output_tokens=20)
        reply = Message.assistant(REPLY_TEXT, usage=usage, stop_reason="end_turn")
        self.seconds += time.perf_counter() - start
        yield Done(reply)


def seeded_messages(count: int) -> list[Message]:
    """The first ``count`` messages of the seeded session, cut before a user message."""
    messages: list[Message] = []
    for message in session_messages(random.Random(SEED)):
        if len(messages) >= count and message.role == "user":
            return messages
        messages.append(message)
    return messages


def write_session(home: Path, workspace: Path, messages: list[Message]) -> Path:
    """A session file holding ``messages``, written as the writer writes them (without an fsync each)."""
    writer = SessionWriter.create(home, workspace, "openai", MODEL)
    path = writer.path
    writer.close()
    with open(path, "ab") as file:
        for message in messages:
            entry = {"type": "message", "message": message.to_dict()}
            file.write(json.dumps(entry, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")
    return path


def build_agent(root: Path, messages: list[Message]) -> Agent:
    """An agent whose conversation holds ``messages``, with the usage a provider would have reported."""
    workspace, home = root / "work", root / "home"
    workspace.mkdir(exist_ok=True)
    counter = counter_for_model(MODEL)
    counter.warm()
    budget = ContextBudget(counter, NEVER_FULL, auto_compact=True)
    session = SessionWriter.create(home, workspace, "bench", MODEL)
    memory = CoreMemory.for_workspace(workspace, home)
    toolbox = Toolbox(workspace, approve_all)
    running = {"tokens": 0}
    provider = InstantProvider(MODEL, lambda: running["tokens"])
    agent = Agent(parts=build_parts(provider=provider, toolbox=toolbox, budget=budget, workspace=workspace,
                                    memory=memory, state=SessionState(session, Conversation())))
    for spec, handler in memory_tools(memory, on_edit=agent.journal.memory_edit):
        toolbox.register(spec, handler)
    floor = budget.calibration.floor(agent.system_prompt(), agent.tool_specs())
    running["tokens"] = floor
    for message in messages:
        message = Message.from_dict(message.to_dict())  # a copy: the provider figures use the originals
        if message.role == "assistant":
            message.usage = Usage(input_tokens=round(running["tokens"] * PROVIDER_FACTOR),
                                  output_tokens=counter.count_message(message))
            message.meta["floor_tokens"] = floor
        agent.conversation.append(message)
        running["tokens"] += counter.count_message(message)
    return agent


def agent_turn_seconds(root: Path, messages: list[Message], turns: int) -> list[float]:
    agent = build_agent(root, messages)
    provider: InstantProvider = agent.provider
    samples = []
    try:
        for _ in range(turns):
            spent_by_provider = provider.seconds
            start = time.perf_counter()
            agent.run_turn(USER_TEXT)
            samples.append(time.perf_counter() - start - (provider.seconds - spent_by_provider))
    finally:
        agent.session.close()
    return samples


def wire_seconds(make_provider: Callable[[], object], fake: WireFake, request: Request, repeats: int,
                 cold: bool) -> tuple[list[float], list[float]]:
    """(provider.stream until the server has the body, json.dumps of that body), ``repeats`` pairs.

    ``cold``: a new provider for each request, so nothing of the conversation was sent before.
    Otherwise one provider, sent the conversation once unmeasured, then one step at a time: each
    request has the tool call and the result of the step before it added."""
    provider = make_provider()
    messages = list(request.messages)
    if not cold:
        for _event in provider.stream(request):
            pass
    to_wire, dumps = [], []
    for step in range(repeats):
        if cold:
            provider = make_provider()
        else:
            call = ToolCall(f"call_step_{step}", "read_file", json.dumps({"path": f"notes/{step}.txt"}))
            messages += [Message.assistant("", [call]), Message.tool_result(call, f"note {step}: retry fixed.\n")]
        sent = dataclasses.replace(request, messages=list(messages))
        start = time.perf_counter()
        for _event in provider.stream(sent):
            pass
        to_wire.append(fake.arrivals[-1].received - start)
        body = json.loads(fake.arrivals[-1].body)
        start = time.perf_counter()
        json.dumps(body, ensure_ascii=False, separators=(",", ":"))
        dumps.append(time.perf_counter() - start)
    return to_wire, dumps


def body_seconds(providers: dict[str, object], request: Request, steps: int) -> dict[str, list[float]]:
    """Per provider, ``request_body`` of each tool-loop step (no HTTP), the providers in turn each step.

    The figure that tells the providers' own per-step work apart: the wire figures above also hold
    the local server's reading, which varies on a busy machine more than this does."""
    messages = list(request.messages)
    for provider in providers.values():
        provider.request_body(request, provider.model)
    samples: dict[str, list[float]] = {name: [] for name in providers}
    for step in range(steps):
        call = ToolCall(f"call_body_{step}", "read_file", json.dumps({"path": f"notes/{step}.txt"}))
        messages += [Message.assistant("", [call]), Message.tool_result(call, f"note {step}: retry fixed.\n")]
        sent = dataclasses.replace(request, messages=list(messages))
        for name, provider in providers.items():
            start = time.perf_counter()
            provider.request_body(sent, provider.model)
            samples[name].append(time.perf_counter() - start)
    return samples


def resume_seconds(path: Path, repeats: int) -> tuple[list[float], list[float]]:
    """(load_session and the writer's note of it, json.loads of every line), ``repeats`` pairs."""
    resumed, parsed = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        loaded = load_session(path)
        writer = SessionWriter.open_existing(path, loaded=loaded)
        resumed.append(time.perf_counter() - start)
        writer.close()
        start = time.perf_counter()
        [json.loads(line) for line in path.read_bytes().splitlines()]
        parsed.append(time.perf_counter() - start)
    return resumed, parsed


def peak_mb(action: Callable[[], object]) -> float:
    tracemalloc.start()
    try:
        action()
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def _ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def measure_size(count: int, fake: WireFake, turns: int, repeats: int) -> dict:
    messages = seeded_messages(count)
    request = Request(SYSTEM, messages, TOOLS, max_tokens=4096)
    def openai_provider() -> OpenAIProvider:
        return OpenAIProvider(MODEL, base_url=fake.root_url + "/v1", api_key="bench", max_retries=0)

    def anthropic_provider() -> AnthropicProvider:
        return AnthropicProvider("claude-sonnet-4-5", base_url=fake.root_url, api_key="bench", max_retries=0)

    figures: dict = {"messages": len(messages)}
    with tempfile.TemporaryDirectory(prefix="mini-letta-bench-") as root:
        figures["turn"] = _ms(agent_turn_seconds(Path(root), messages, turns))
        for name, make in (("openai", openai_provider), ("anthropic", anthropic_provider)):
            for cold in (False, True):
                to_wire, dumps = wire_seconds(make, fake, request, repeats, cold)
                key = name + ("_cold" if cold else "")
                figures[key], figures[key + "_dumps"] = _ms(to_wire), _ms(dumps)
        bodies = body_seconds({"openai": openai_provider(), "anthropic": anthropic_provider()}, request,
                              steps=max(repeats, 40))
        figures["openai_body"], figures["anthropic_body"] = _ms(bodies["openai"]), _ms(bodies["anthropic"])
        workspace, home = Path(root) / "work", Path(root) / "resume-home"
        path = write_session(home, workspace, messages)
        resumed, parsed = resume_seconds(path, repeats)
        figures["resume"], figures["loads"] = _ms(resumed), _ms(parsed)
        figures["file_mb"] = path.stat().st_size / 1e6
        figures["resume_peak_mb"] = peak_mb(lambda: load_session(path))
        figures["request_peak_mb"] = peak_mb(lambda: list(openai_provider().stream(request)))
    return figures


def run(print_fn: Callable[[str], object] = print, sizes: tuple[int, ...] = SIZES, turns: int = TURNS,
        repeats: int = REPEATS) -> list[dict]:
    """Measure every size, print a table, and return the figures (milliseconds, megabytes)."""
    rows = []
    with WireFake() as fake:
        for count in sizes:
            rows.append(measure_size(count, fake, turns, repeats))
    print_fn(f"medians: agent turn of {turns}, the rest of {repeats} paired runs; "
             "× is the ratio to the plain-JSON figure of the same run")
    print_fn("to wire: a tool-loop step (the conversation sent before) / cold (nothing sent before: "
             "every message converted, as every request was before the wire cache)")
    header = (f"{'messages':>8}  {'turn ms':>8}  {'OpenAI to wire ms, step / cold':>32}  "
              f"{'Anthropic to wire ms, step / cold':>34}  {'json.dumps ms':>13}  {'resume ms':>16}  "
              f"{'json.loads ms':>13}  {'peak MB resume/request':>22}")
    print_fn(header)

    def pair(row: dict, name: str) -> str:
        step, cold = row[name] / row[name + "_dumps"], row[name + "_cold"] / row[name + "_cold_dumps"]
        return f"{row[name]:7.1f} ({step:4.1f}×) / {row[name + '_cold']:7.1f} ({cold:4.1f}×)"

    for row in rows:
        print_fn(f"{row['messages']:>8,}  {row['turn']:8.2f}  {pair(row, 'openai'):>32}  {pair(row, 'anthropic'):>34}  "
                 f"{row['openai_dumps']:13.1f}  {row['resume']:8.1f} ({row['resume'] / row['loads']:4.1f}×)  "
                 f"{row['loads']:13.1f}  "
                 f"{row['resume_peak_mb']:8.1f} / {row['request_peak_mb']:.1f} ({row['file_mb']:.1f} MB file)")
    print_fn("a tool-loop step's request body (request_body, no HTTP; medians of 40 steps, in turn), "
             "Anthropic / OpenAI: " + ", ".join(
                 f"{row['anthropic_body']:.2f} / {row['openai_body']:.2f} ms ({row['anthropic_body'] / row['openai_body']:.2f}×) "
                 f"at {row['messages']:,}" for row in rows))
    if len(rows) > 1:
        print_fn(f"agent turn at {rows[-1]['messages']:,} / at {rows[0]['messages']:,} messages: "
                 f"{rows[-1]['turn'] / rows[0]['turn']:.2f}×")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", default=",".join(str(size) for size in SIZES),
                        help="session sizes, comma-separated")
    parser.add_argument("--turns", type=int, default=TURNS)
    parser.add_argument("--repeats", type=int, default=REPEATS)
    arguments = parser.parse_args()
    run(sizes=tuple(int(size) for size in arguments.messages.split(",")), turns=arguments.turns,
        repeats=arguments.repeats)


if __name__ == "__main__":
    main()
