"""Where a message list may be cut without breaking it.

A turn starts at a user message and runs until the next one. An assistant message is also a safe
cut: the tool results that follow it stay with it, and everything before it is complete. A tool
result is never a cut, so a call is never separated from its result.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mini_letta.messages import Message


def has_summary(messages: list[Message]) -> bool:
    """True when the list starts with the summary of an earlier compaction."""
    return bool(messages) and messages[0].role == "user" and messages[0].kind == "summary"


def history_start(messages: list[Message]) -> int:
    """Index of the first message after the previous summary (0 when there is none)."""
    return 1 if has_summary(messages) else 0


def newest_user_index(messages: list[Message]) -> int | None:
    """Index of the newest message the person typed; a summary does not count."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "user" and message.kind != "summary":
            return index
    return None


def turn_start_before(messages: list[Message], index: int, start: int) -> int | None:
    """The user message that opened the turn containing ``index`` (searching no earlier than start)."""
    for position in range(index, start - 1, -1):
        message = messages[position]
        if message.role == "user" and message.kind != "summary":
            return position
    return None


def turn_starts(messages: list[Message]) -> list[int]:
    """Indices of the user messages (summary excluded) that open turns, oldest first."""
    start = history_start(messages)
    return [i for i in range(start, len(messages)) if messages[i].role == "user"]


@dataclass(frozen=True)
class Cut:
    """Messages ``[start, index)`` are summarised, except ``kept_turn_start`` when the cut falls
    inside a turn: that user message is kept verbatim ahead of the tail (pi's "split turn")."""

    start: int
    index: int
    kept_turn_start: int | None

    def summarised(self, messages: list[Message]) -> list[Message]:
        return [m for i, m in enumerate(messages[self.start:self.index], self.start) if i != self.kept_turn_start]

    def turn_prefix(self, messages: list[Message]) -> list[Message]:
        """The early part of the split turn (empty when the cut is at a turn start)."""
        if self.kept_turn_start is None:
            return []
        return messages[self.kept_turn_start + 1:self.index]

    def kept(self, messages: list[Message]) -> list[Message]:
        head = [messages[self.kept_turn_start]] if self.kept_turn_start is not None else []
        return head + messages[self.index:]


def candidate_cuts(messages: list[Message]) -> list[Cut]:
    """Every cut that leaves something to summarise, oldest first (largest tail first)."""
    start = history_start(messages)
    cuts: list[Cut] = []
    for index in range(start + 1, len(messages)):
        message = messages[index]
        if message.role == "tool":
            continue
        kept_turn_start = None
        if message.role == "assistant":
            kept_turn_start = turn_start_before(messages, index - 1, start)
        cut = Cut(start, index, kept_turn_start)
        if cut.summarised(messages):
            cuts.append(cut)
    return cuts


def whole_history_cut(messages: list[Message]) -> Cut | None:
    """``/compact`` between turns when only the newest turn is left after the previous summary: that
    turn is finished (its last message a reply with no tool call waiting), so it may be summarised
    too and nothing kept verbatim, as Claude Code's ``/compact`` does. None while a turn is open."""
    start = history_start(messages)
    last = messages[-1] if messages else None
    if last is None or len(messages) <= start or last.role != "assistant" or last.tool_calls:
        return None
    return Cut(start, len(messages), None)


def choose_cut(messages: list[Message], count: Callable[[Message], int], tail_budget: int) -> Cut | None:
    """The cut keeping the largest verbatim tail of at most ``tail_budget`` tokens.

    When even the smallest possible tail exceeds the budget, the smallest one is taken: the newest
    step must stay verbatim. None when there is nothing to summarise.
    """
    cuts = candidate_cuts(messages)
    if not cuts:
        return None
    suffix = [0] * (len(messages) + 1)
    for index in range(len(messages) - 1, -1, -1):
        suffix[index] = suffix[index + 1] + count(messages[index])
    for cut in cuts:
        tail = suffix[cut.index]
        if cut.kept_turn_start is not None:
            tail += count(messages[cut.kept_turn_start])
        if tail <= tail_budget:
            return cut
    return cuts[-1]
