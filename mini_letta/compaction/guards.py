"""The guards that keep automatic compaction from looping: one object, asked before a compaction.

- the progress guard (:class:`Progress`): within a turn, compacting again needs new work;
- overflow retries: at most ``SETTINGS.max_overflow_retries`` overflow compactions per turn;
- the breaker: after ``SETTINGS.breaker_limit`` compactions in a row that ran and failed (not
  clearly smaller, or still over the threshold), automatic compaction stops until one succeeds.

A refusal is not a failure. The first two stop a compaction before it runs, with their own reason
(a :class:`Refusal`), and leave the breaker alone: counting them as failures made a model that
repeated itself end its turn on "compaction has stopped after 3 failed attempts" although no
compaction had run, and kept the breaker open for the next turn. A new user turn is new work: an
open breaker lets that turn's first compaction try again (half-open); if it fails too, the breaker
opens again at once; a success closes it.

When nothing is new, no layer runs, not even those that call no model (clearing old tool output,
dropping the oldest turns): they would free room for free, but the steps that room pays for are
model calls of a model repeating itself, until ``--max-turns``. The turn stops with the guard's
reason instead, and the next turn (new work) compacts as usual.
"""

from __future__ import annotations

from dataclasses import dataclass

from mini_letta.compaction.turns import newest_user_index
from mini_letta.messages import Message
from mini_letta.settings import SETTINGS

CHOICES = "Use /compact to summarise the conversation or /clear to start fresh."


def _fingerprints(message: Message) -> set[tuple]:
    """What a message adds to the work: its text, each tool call, a tool's result."""
    found: set[tuple] = set()
    if message.role == "tool":
        found.add(("result", message.tool_name, message.text[:SETTINGS.progress_result_head_chars]))
    elif message.kind != "summary":
        if message.text.strip():
            found.add(("text", message.role, message.text.strip()))
        found.update(("call", call.name, call.arguments) for call in message.tool_calls)
    return found


class Progress:
    """The guard against compaction loops within one user turn: compacting again is allowed only
    when something new came since the previous compaction (a tool call, a tool result or text
    not seen before in this turn). A model that keeps working may compact as often as it needs;
    one that repeats itself is stopped."""

    def __init__(self) -> None:
        self._seen: set[tuple] = set()
        self._after: set[str] | None = None  # ids of the messages right after the last compaction

    def compacted(self, before: list[Message], after: list[Message]) -> None:
        # Only this turn's work counts as seen: reading again a file an earlier turn read is new work.
        start = newest_user_index(before) or 0
        for message in before[start:]:
            self._seen |= _fingerprints(message)
        self._after = {m.id for m in after}

    def made(self, messages: list[Message]) -> bool:
        """True before the turn's first compaction, and when new work came since the last one."""
        if self._after is None:
            return True
        fresh = set().union(*(_fingerprints(m) for m in messages if m.id not in self._after))
        return bool(fresh - self._seen)

    def repeated(self, messages: list[Message]) -> bool:
        """Something came since the last compaction, and all of it was seen before: the model is
        repeating itself (a compacted request rejected at once is no repetition)."""
        return (self._after is not None and any(m.id not in self._after for m in messages)
                and not self.made(messages))


@dataclass(frozen=True)
class Refusal:
    """Why a compaction was not run: ``reason`` (``ContextFullError.reason``) and the sentence the user reads."""

    reason: str
    message: str


class Guards:
    """``start_turn`` at each user turn; ``check_pressure`` / ``check_overflow`` before an automatic
    compaction (a :class:`Refusal`, or None: go ahead); ``compacted``, ``succeeded`` and ``failed``
    after one that ran."""

    def __init__(self) -> None:
        self.consecutive_failures = 0
        self._overflow_retries = 0
        self._progress = Progress()

    @property
    def breaker_open(self) -> bool:
        return self.consecutive_failures >= SETTINGS.breaker_limit

    def start_turn(self) -> None:
        """A new user turn: overflow retries and the progress guard start again, and an open breaker
        allows one more compaction (half-open)."""
        self._overflow_retries = 0
        self._progress = Progress()
        if self.breaker_open:
            self.consecutive_failures = SETTINGS.breaker_limit - 1

    def check_pressure(self, messages: list[Message], tokens: int, window: int) -> Refusal | None:
        """Before compacting a request over the threshold: the breaker, then the progress guard."""
        if self.breaker_open:
            return self._breaker(tokens, window)
        if not self._progress.made(messages):
            return self._no_progress(tokens, window)
        return None

    @staticmethod
    def _no_progress(tokens: int, window: int) -> Refusal:
        return Refusal("no_progress",
                       f"Context is full again ({tokens:,} of {window:,} tokens) and nothing new came since the "
                       f"last compaction (no new tool call, tool result or text: the model is repeating itself), "
                       f"so no compaction ran this time, rather than loop. Send a new message to go on (the "
                       f"next turn compacts as usual), or {CHOICES[0].lower()}{CHOICES[1:]}")

    def check_overflow(self, messages: list[Message], tokens: int, window: int) -> Refusal | None:
        """Before compacting after a rejection: the breaker, the progress guard (a request that only
        repeats what came before the last compaction, rejected after the guard let it go out with a
        shorter reply), then this turn's retries (counted here)."""
        if self.breaker_open:
            return self._breaker(tokens, window)
        if self._progress.repeated(messages):
            return self._no_progress(tokens, window)
        if self._overflow_retries >= SETTINGS.max_overflow_retries:
            return Refusal("overflow_retries",
                           f"The provider still rejected the request as too long after "
                           f"{SETTINGS.max_overflow_retries} compactions this turn ({tokens:,} tokens by local count). "
                           f"{CHOICES}")
        self._overflow_retries += 1
        return None

    def compacted(self, before: list[Message], after: list[Message]) -> None:
        self._progress.compacted(before, after)

    def succeeded(self) -> None:
        self.consecutive_failures = 0

    def failed(self) -> None:
        """A compaction ran and did not make enough room."""
        self.consecutive_failures += 1

    @staticmethod
    def _breaker(tokens: int, window: int) -> Refusal:
        return Refusal("breaker",
                       f"Context is full ({tokens:,} of {window:,} tokens) and automatic compaction has stopped: "
                       f"the last {SETTINGS.breaker_limit} compactions ran and could not make enough room. {CHOICES}")
