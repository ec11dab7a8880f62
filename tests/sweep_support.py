"""The engine sweep (issue 46): one tool loop run over the ways a window, a server and a summarizer
can disagree with us, and a verdict on how it ended.

A run is a :class:`Case`: the window (given by the server up front, or learned from its first
rejection), how the server counts (a multiple of our count, 0.8-1.5x), whether it holds ``max_tokens``
against the window too, how the summarizer answers (a good summary, a tool call instead, nothing,
something longer than what it summarises, one sentence looping, an error), and whether the model
reads new files or the same one again. ``run(case, workspace)`` plays it through a real agent
(``agent_support.make_agent``) and returns an :class:`Outcome`; ``problem(outcome)`` says what is
wrong with it, or None: every run must finish or stop with a reason that is true, and none may end
on the breaker (or any other stop) while room could be made.

``tests/test_engine_sweep.py`` runs a covering subset; ``benchmarks/sweep.py`` the whole grid.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from pathlib import Path

from agent_support import make_agent, request_tokens, script, tool_call, write_modules

from mini_letta.errors import ContextFullError, FloorTooHighError, ProviderError
from mini_letta.messages import Message, ToolCall
from mini_letta.providers.base import Request

WINDOWS = (2_048, 4_096, 8_000, 32_000, 200_000)
RATIOS = (0.8, 1.0, 1.5)
SUMMARIZERS = ("good", "tool_call", "empty", "longer", "looping", "error")
READS = ("distinct", "repeated")
DONE_TEXT = "All the files are read."
GOOD_SUMMARY = ("## 1. Primary request and intent\nThe user asked for the mod_*.py files to be read one by one.\n"
                "## 2. Files and code sections\nEach module defines functions that multiply a value by a step.\n"
                "## 3. Current work\nReading the remaining modules.")


@dataclass(frozen=True)
class Case:
    window: int
    given: bool  # the server says its window; else the agent assumes one and learns it from a rejection
    ratio: float  # the server's count over ours
    counts_reply: bool  # the server holds prompt + max_tokens against the window (vLLM, OpenAI), not the prompt alone
    summarizer: str
    reads: str

    @property
    def name(self) -> str:
        return (f"{self.window}-{'given' if self.given else 'learned'}-x{self.ratio}-"
                f"{'reply' if self.counts_reply else 'prompt'}-{self.summarizer}-{self.reads}")


@dataclass
class Outcome:
    case: Case
    stopped: str  # "done", a ContextFullError reason, "floor", "provider_error", "max_turns", ...
    message: str
    steps: int
    compactions: int
    rejections: int
    floor: int = 0
    limit: int = 0


def grid() -> list[Case]:
    return [Case(*values) for values in itertools.product(WINDOWS, (True, False), RATIOS, (True, False),
                                                          SUMMARIZERS, READS)]


def covering() -> list[Case]:
    """Every summarizer with both kinds of reads, each over a different window and server; and every
    window, window source, server count and reply rule with a good summarizer."""
    servers = list(itertools.product(WINDOWS[1:], (True, False), RATIOS, (True, False)))
    cases = [Case(*servers[(index * 7) % len(servers)], summarizer, reads)
             for index, (summarizer, reads) in enumerate(itertools.product(SUMMARIZERS, READS))]
    cases += [Case(window, given, ratio, counts, "good", "distinct")
              for window, given, ratio, counts in itertools.product(WINDOWS, (True, False), RATIOS, (True, False))]
    return cases


def _summary(kind: str):
    def answer(request: Request):
        if kind == "good":
            return GOOD_SUMMARY
        if kind == "tool_call":
            return Message.assistant("", [ToolCall("call_sum", "read_file", '{"path": "mod_00.py"}')])
        if kind == "empty":
            return ""
        if kind == "longer":
            return "\n".join(m.text for m in request.messages) * 2
        if kind == "looping":
            return "The module multiplies the value by the step and returns it again. " * 120
        raise ProviderError("summarizer: server error 500", provider="scripted", status=500)
    return answer


def _files(workspace: Path, window: int) -> list[str]:
    """Modules of about a tenth of the window each (a read is capped near 10k tokens anyway), enough of
    them to pass the compaction threshold about twice."""
    lines = max(8, min(window // 10, 10_000) // 20)
    count = max(6, min(40, math.ceil(2 * window / max(1, lines * 20))))
    return write_modules(workspace, count, lines)


def run(case: Case, workspace: Path) -> Outcome:
    names = _files(workspace, case.window)
    reads = names if case.reads == "distinct" else [names[0]] * len(names)
    provider = script([tool_call("read_file", path=name) for name in reads] + [DONE_TEXT],
                      summary=_summary(case.summarizer), window=case.window,
                      count=lambda request: math.ceil(request_tokens(request) * case.ratio))
    provider.reply_counts = case.counts_reply
    if not case.given:
        provider.served_window = lambda: None  # the default window is assumed until a rejection names the real one
    agent = make_agent(provider, workspace, max_steps=3 * len(reads) + 10)
    outcome = Outcome(case, "", "", 0, 0, 0)
    try:
        result = agent.run_turn("Read every mod_*.py file, one by one.")
        outcome.stopped, outcome.message, outcome.steps = result.stopped, result.text, result.steps
    except ContextFullError as error:
        outcome.stopped, outcome.message = error.reason, str(error)
    except FloorTooHighError as error:
        outcome.stopped, outcome.message = "floor", str(error)
        outcome.floor = agent.budget.calibration.floor_calibrated(agent.system_prompt(), agent.tool_specs())
        outcome.limit = agent.budget.limit
    except ProviderError as error:
        outcome.stopped, outcome.message = "provider_error", str(error)
    outcome.compactions, outcome.rejections = len(agent.compactions), provider.overflows
    return outcome


def problem(outcome: Outcome) -> str | None:
    """What is untrue about how the run ended, or None."""
    case = outcome.case
    if outcome.stopped == "done":
        return None if outcome.message == DONE_TEXT else f"finished without the model's last reply: {outcome.message!r}"
    if outcome.stopped == "no_progress":
        return None if case.reads == "repeated" else "stopped as repeating although every read was new"
    if outcome.stopped == "floor":
        # True only when the floor alone does not fit what the window leaves for a request.
        return None if outcome.floor > outcome.limit else f"floor refused at {outcome.floor:,} under {outcome.limit:,}"
    return f"stopped ({outcome.stopped}) while room could be made: {outcome.message}"
