"""The guards that keep automatic compaction from looping: one object, asked before a compaction.

- the breaker: after ``SETTINGS.breaker_limit`` failed compactions in a row, automatic compaction
  stops until one succeeds (a manual one that ends under the threshold closes it);
- the progress guard (:class:`Progress`): within a turn, compacting again needs new work;
- overflow retries: at most ``SETTINGS.max_overflow_retries`` overflow compactions per turn.

Each check raises ContextFullError with the sentence the user reads.
"""

from __future__ import annotations

from mini_letta.compaction.turns import newest_user_index
from mini_letta.errors import ContextFullError
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


class Guards:
    """``start_turn`` at each user turn; ``check_pressure`` / ``check_overflow`` before an automatic
    compaction; ``compacted``, ``succeeded`` and ``failed`` after one."""

    def __init__(self) -> None:
        self.consecutive_failures = 0
        self._overflow_retries = 0
        self._progress = Progress()

    @property
    def breaker_open(self) -> bool:
        return self.consecutive_failures >= SETTINGS.breaker_limit

    def start_turn(self) -> None:
        """A new user turn: overflow retries and the progress guard start again."""
        self._overflow_retries = 0
        self._progress = Progress()

    def check_pressure(self, messages: list[Message], tokens: int, window: int) -> None:
        """Before compacting a request over the threshold: the breaker, then the progress guard."""
        if self.breaker_open:
            raise ContextFullError(self._breaker_message(tokens, window))
        if not self._progress.made(messages):
            self.failed()
            raise ContextFullError(
                f"Context is full again ({tokens:,} of {window:,} tokens) and nothing new came since the "
                f"last compaction (no new tool call, tool result or text: the model is repeating itself), so "
                f"compaction stopped instead of looping. {CHOICES}")

    def check_overflow(self, tokens: int, window: int) -> None:
        """Before compacting after a rejection: the breaker, then this turn's retries (counted here)."""
        if self.breaker_open:
            raise ContextFullError(self._breaker_message(tokens, window))
        if self._overflow_retries >= SETTINGS.max_overflow_retries:
            self.failed()
            raise ContextFullError(
                f"The provider still rejected the request as too long after {SETTINGS.max_overflow_retries} "
                f"compactions this turn ({tokens:,} tokens by local count). {CHOICES}")
        self._overflow_retries += 1

    def compacted(self, before: list[Message], after: list[Message]) -> None:
        self._progress.compacted(before, after)

    def succeeded(self) -> None:
        self.consecutive_failures = 0

    def failed(self) -> None:
        self.consecutive_failures += 1

    @staticmethod
    def _breaker_message(tokens: int, window: int) -> str:
        return (f"Context is full ({tokens:,} of {window:,} tokens) and automatic compaction has stopped "
                f"after {SETTINGS.breaker_limit} failed attempts in a row. {CHOICES}")
