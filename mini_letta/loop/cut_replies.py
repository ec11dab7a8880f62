"""What the agent loop does with a reply that did not end as a finish (``mini_letta.endings``).

A reply stopped by the reply limit, refused, filtered or cut off is not a finished answer: the
turn ends with that ending named (``TurnResult.stopped``) and one plain line for the user, instead
of "done". One case is repaired instead: a tool call whose JSON arguments were cut by the reply
limit. Its call is not run; the model is told why and asked to send it again smaller, at most
``SETTINGS.loop.cut_call_retries`` times a turn, and the retry may have a larger reply budget where the
window has room.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from mini_letta import endings
from mini_letta.messages import Message, ToolCall
from mini_letta.settings import SETTINGS



@dataclass
class Verdict:
    """What to do with one reply: ``stop`` names the ending the turn stops with (None: go on);
    ``notice`` is the line for the user; ``not_run`` maps call ids to the result each gets instead
    of running."""

    stop: str | None = None
    notice: str | None = None
    not_run: dict[str, str] = field(default_factory=dict)


def _cut_mid_json(call: ToolCall) -> bool:
    try:
        call.parse_arguments()
    except ValueError:
        return True
    return False


class CutReplies:
    """One per user turn: counts the cut-call retries and sizes the retry's reply budget."""

    def __init__(self) -> None:
        self.retries = 0
        self._grow_from: int | None = None

    def reply_budget(self, max_tokens: int, room: Callable[[], int]) -> int:
        """``max_tokens`` for the next request: after a cut call, up to ``SETTINGS.loop.cut_call_retry_growth`` times the
        limit that cut it, but never more than ``room()`` (what the window has left; measured only
        then)."""
        grow_from, self._grow_from = self._grow_from, None
        if grow_from is None:
            return max_tokens
        return max(max_tokens, min(grow_from * SETTINGS.loop.cut_call_retry_growth, room()))

    def review(self, reply: Message, max_tokens: int) -> Verdict:
        ending = endings.ending(reply)
        if ending == endings.END:
            return Verdict()
        if ending == endings.MAX_TOKENS and reply.tool_calls:
            return self._cut_calls(reply, max_tokens)
        words = endings.describe(ending, max_tokens)
        not_run = {call.id: f"Not run: the reply ended ({ending}) before this call was complete."
                   for call in reply.tool_calls}
        return Verdict(stop=ending, notice=words[0].upper() + words[1:] + ".", not_run=not_run)

    def _cut_calls(self, reply: Message, max_tokens: int) -> Verdict:
        cut = [call for call in reply.tool_calls if _cut_mid_json(call)]
        if not cut:
            return Verdict()  # the limit fell after the last call was complete: the calls run
        if self.retries >= SETTINGS.loop.cut_call_retries:
            words = endings.describe(endings.MAX_TOKENS, max_tokens)
            return Verdict(
                stop=endings.MAX_TOKENS,
                notice=(f"Stopped: the model's tool call was cut at the {max_tokens:,}-token reply limit "
                        f"{SETTINGS.loop.cut_call_retries + 1} times in a row, so it was not run."),
                not_run={call.id: f"Not run: {words}, before this call's arguments were complete." for call in cut})
        self.retries += 1
        self._grow_from = max_tokens
        text = (f"Not run: your reply reached the {max_tokens:,}-token reply limit while this call's arguments "
                f"were being written, so they were cut mid-JSON. Send the call again, smaller: split long content "
                f"over several calls (write the first part, then edit or append the rest). "
                f"(Retry {self.retries} of {SETTINGS.loop.cut_call_retries}.)")
        notice = (f"The model's call to {cut[0].name} was cut at the {max_tokens:,}-token reply limit; "
                  f"it was asked to send it again, smaller.")
        return Verdict(notice=notice, not_run={call.id: text for call in cut})
