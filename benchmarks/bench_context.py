"""How fast and how accurate the context estimate is over a long session.

Run from the repository root:  python -m benchmarks.bench_context

Builds a seeded ~1,000-message, ~180k-token coding session (prompts, assistant text, tool calls,
tool results of code and logs) and reports:

1. the per-turn cost of the incremental estimate (append one message, estimate the request)
   against a naive full re-count of the whole request with the real tokenizer;
2. the estimate's error against the "provider's" count, simulated as the real o200k count times a
   hidden factor that depends on the content (Claude's tokenizer yields more tokens than o200k,
   more so for code than for prose), with and without calibration, and with no usage at all.
"""

from __future__ import annotations

import random
import statistics
import time
from typing import Callable

from mini_letta.context import ContextBudget, TokenCounter, WindowInfo
from mini_letta.conversation import Conversation
from mini_letta.messages import Message, ToolCall, ToolSpec, Usage

SEED = 7
TARGET_MESSAGES = 1_000
# Provider tokens per o200k token, by content: prose, code (read), logs (bash), grep hits, floor.
HIDDEN_FACTORS = {"user": 1.06, "assistant": 1.06, "read": 1.18, "bash": 1.12, "grep": 1.14, "edit": 1.14}
FLOOR_FACTOR = 1.08
NAIVE_SAMPLES = 15

WORDS = (
    "the parser config test fails when value is empty fix handle request response cache user file "
    "path error return list dict update check module import function class method field index token "
    "window budget compaction summary message provider stream retry timeout session memory tool"
).split()
IDENTIFIERS = ["parse_config", "load_session", "TokenCounter", "handle_request", "retry_after", "user_id",
               "cache_key", "payload", "window", "threshold", "messages", "summary", "result", "items"]
SYSTEM = "You are a careful coding agent.\n" + "Follow the repository's conventions and run the tests. " * 40
TOOLS = [
    ToolSpec(name, f"{name} tool: " + " ".join(WORDS[:30]),
             {"type": "object", "properties": {"path": {"type": "string"}, "command": {"type": "string"}},
              "required": ["path"]})
    for name in ("read", "write", "edit", "bash", "grep", "glob")
]


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def code_file(rng: random.Random, lines: int) -> str:
    out = []
    for i in range(lines):
        indent = "    " * rng.randint(0, 3)
        kind = rng.random()
        name, other = rng.choice(IDENTIFIERS), rng.choice(IDENTIFIERS)
        if kind < 0.15:
            out.append(f"{indent}def {name}_{i}({other}, timeout={rng.randint(1, 120)}):")
        elif kind < 0.3:
            out.append(f'{indent}if {name} is None or len({other}) > {rng.randint(0, 4096)}:')
        elif kind < 0.45:
            out.append(f'{indent}raise ValueError(f"{sentence(rng, 5)} {{{name}!r}}")')
        elif kind < 0.6:
            out.append(f"{indent}# {sentence(rng, 8)}")
        else:
            out.append(f"{indent}{name} = {other}.get({rng.randint(0, 99)!r}, [{rng.random():.4f}])")
    return "\n".join(f"{n + 1:>4}\t{line}" for n, line in enumerate(out))


def log_output(rng: random.Random, lines: int) -> str:
    levels = ["INFO", "DEBUG", "WARNING", "ERROR"]
    return "\n".join(
        f"2025-06-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z "
        f"{rng.choice(levels):7} {rng.choice(IDENTIFIERS)}[{rng.randint(100, 99999)}] {sentence(rng, rng.randint(4, 14))}"
        for _ in range(lines)
    )


def session_messages(rng: random.Random):
    """Yield messages of a plausible session; assistant messages are replies (usage set later)."""
    call_number = 0
    while True:
        yield Message.user(sentence(rng, rng.randint(8, 60)))
        for _ in range(rng.randint(1, 4)):
            calls = []
            for _ in range(rng.randint(1, 3)):
                call_number += 1
                tool = rng.choice(["read", "bash", "grep", "edit"])
                calls.append(ToolCall(f"call_{call_number}", tool, f'{{"path": "src/{rng.choice(IDENTIFIERS)}.py"}}'))
            yield Message.assistant(sentence(rng, rng.randint(5, 40)), calls)
            for call in calls:
                if call.name == "read":
                    text = code_file(rng, rng.randint(8, 50))
                elif call.name == "bash":
                    text = log_output(rng, rng.randint(4, 30))
                else:
                    text = "\n".join(f"src/{rng.choice(IDENTIFIERS)}.py:{rng.randint(1, 900)}: {sentence(rng, 6)}"
                                     for _ in range(rng.randint(2, 15)))
                yield Message.tool_result(call, text)
        yield Message.assistant(sentence(rng, rng.randint(20, 120)))


def provider_count(counter: TokenCounter, message: Message) -> float:
    factor = HIDDEN_FACTORS[message.tool_name if message.role == "tool" else message.role]
    return counter.count_message(message) * factor


def run(print_fn: Callable[[str], object] = print) -> dict:
    """Run the benchmark, print its tables, and return the figures (milliseconds, percent)."""
    rng = random.Random(SEED)
    counter = TokenCounter("o200k_base")
    counter.warm()
    info = WindowInfo(1_000_000, "benchmark", None, 1_000_000)  # big enough never to compact
    calibrated = ContextBudget(counter, info, auto_compact=True)
    uncalibrated = ContextBudget(counter, info, auto_compact=True)
    conversation = Conversation()

    turn_ms: list[float] = []
    names = ("local count, no usage", "local count calibrated, no usage",
             "usage + tail, no calibration", "usage + tail, calibrated")
    errors: dict[str, list[float]] = {name: [] for name in names}
    provider_total = FLOOR_FACTOR * calibrated.floor(SYSTEM, TOOLS)
    for message in session_messages(rng):
        if len(conversation.messages) >= TARGET_MESSAGES:
            break
        if message.role == "assistant":
            # The request the provider answers: everything so far. Its count is the hidden truth.
            real_prompt = (calibrated.calibration.floor(SYSTEM, TOOLS) + calibrated.counter.count_messages(conversation.messages))
            provider_prompt = round(provider_total)
            for name, estimate in (
                ("local count, no usage", real_prompt),
                ("local count calibrated, no usage", calibrated.measure(SYSTEM, TOOLS, conversation.messages)),
                ("usage + tail, no calibration", uncalibrated.size(SYSTEM, TOOLS, conversation).total),
                ("usage + tail, calibrated", calibrated.size(SYSTEM, TOOLS, conversation).total),
            ):
                errors[name].append(abs(estimate - provider_prompt) / provider_prompt * 100)
            output = round(provider_count(counter, message))
            message.usage = Usage(input_tokens=provider_prompt, output_tokens=output)
            calibrated.observe(provider_prompt, real_prompt)
        start = time.perf_counter()
        conversation.append(message)
        provider_total += provider_count(counter, message)
        calibrated.size(SYSTEM, TOOLS, conversation)
        turn_ms.append((time.perf_counter() - start) * 1000)

    messages = conversation.messages
    naive_ms = []
    for end in range(len(messages) - NAIVE_SAMPLES, len(messages)):
        fresh = TokenCounter("o200k_base")  # shares the loaded encoding, not the message cache
        start = time.perf_counter()
        fresh.count_system(SYSTEM) + fresh.count_tools(TOOLS) + fresh.count_messages(messages[: end + 1])
        naive_ms.append((time.perf_counter() - start) * 1000)

    total = (calibrated.calibration.floor(SYSTEM, TOOLS) + calibrated.counter.count_messages(messages))
    incremental = statistics.median(turn_ms)
    naive = statistics.median(naive_ms)
    print_fn(f"session: {len(messages)} messages, {total:,} tokens (o200k), floor {calibrated.floor(SYSTEM, TOOLS):,}")
    print_fn("")
    print_fn(f"{'per-turn cost':<40}{'median ms':>12}")
    print_fn(f"{'incremental (append + estimate)':<40}{incremental:>12.3f}")
    print_fn(f"{'naive full re-count (real tokenizer)':<40}{naive:>12.1f}")
    print_fn(f"{'ratio naive / incremental':<40}{naive / incremental:>12.0f}x")
    print_fn("")
    print_fn(f"estimate error vs provider count (hidden factors 1.06-1.18 by content), {len(errors[names[0]])} requests")
    print_fn(f"{'method':<40}{'mean abs %':>12}{'max abs %':>12}")
    for name, values in errors.items():
        print_fn(f"{name:<40}{statistics.mean(values):>12.2f}{max(values):>12.2f}")
    print_fn(f"learned ratio: {calibrated.ratio:.4f}")
    return {
        "messages": len(messages),
        "tokens": total,
        "incremental_ms": incremental,
        "naive_recount_ms": naive,
        "mean_error_percent": {name: statistics.mean(values) for name, values in errors.items()},
        "max_error_percent": {name: max(values) for name, values in errors.items()},
        "learned_ratio": calibrated.ratio,
    }


if __name__ == "__main__":
    run()
