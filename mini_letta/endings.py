"""How a reply ended, in one vocabulary for every provider.

Each provider maps its API's own finish or stop reason onto these names and records the result on
the finished assistant message as ``meta["stop_reason"]`` (kept in the session file, so a resumed
session still knows that a reply was cut). Only ``END`` is a finished answer; the others mean the
reply is incomplete, and the turn says so instead of "done".
"""

from __future__ import annotations

from mini_letta.messages import Message

END = "end"  # the model finished (an answer, or tool calls to run)
MAX_TOKENS = "max_tokens"  # stopped by the reply limit (OpenAI "length", Anthropic "max_tokens")
REFUSAL = "refusal"  # the model declined to answer
CONTENT_FILTER = "content_filter"  # the provider's filter stopped the reply
CUT = "cut"  # the stream ended without a finish: the network or the server cut it

INCOMPLETE = (MAX_TOKENS, REFUSAL, CONTENT_FILTER, CUT)


def mark(message: Message, ending: str) -> Message:
    message.meta["stop_reason"] = ending
    return message


def ending(message: Message) -> str:
    """How ``message`` ended; a message from before endings were recorded counts as finished."""
    return message.meta.get("stop_reason") or END


def is_incomplete(message: Message) -> bool:
    return ending(message) in INCOMPLETE


def describe(reason: str, max_tokens: int | None = None) -> str:
    """The ending in plain words, for the line shown next to the reply."""
    if reason == MAX_TOKENS:
        limit = f"{max_tokens:,}-token " if max_tokens else ""
        return f"reply cut at the {limit}reply limit: the answer is incomplete"
    if reason == REFUSAL:
        return "the model refused to answer"
    if reason == CONTENT_FILTER:
        return "reply stopped by the provider's content filter: the answer is incomplete"
    if reason == CUT:
        return "reply cut off before it finished (the stream ended): the answer is incomplete"
    return "finished"
