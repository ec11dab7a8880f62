"""Make a history loaded from a session file one the APIs accept (``messages.validity_problems``).

Two causes, both repaired when the file is loaded and never by rewriting it:

- the process died while a tool ran: its calls have no result. Each gets an error result saying so
  (not a loss, so nothing is reported);
- two processes appended to one file (before sessions were locked): two conversations interleave,
  a tool result lands after another conversation's messages, or its call is missing. Results are
  moved up to the call they answer; what cannot be placed is dropped, and each drop is described
  for the user.
"""

from __future__ import annotations

from mini_letta.messages import Message, ToolCall, validity_problems
from mini_letta.wording import counted

INTERRUPTED_TEXT = "interrupted: the session ended before this tool ran"


def repair(messages: list[Message], next_seq: int) -> tuple[list[Message], int, list[str]]:
    """(a valid history, the next free seq, what was dropped) for ``messages`` in file order.

    A valid list comes back as it is. Otherwise each tool call takes the first unclaimed result
    with its id that comes after it (ids may repeat: some models and servers reuse them).
    """
    if not validity_problems(messages):
        return messages, next_seq, []
    claimed: set[int] = set()
    repaired: list[Message] = []
    dropped: list[str] = []

    def results_of(index: int) -> list[tuple[ToolCall, Message | None]]:
        found = []
        for call in messages[index].tool_calls:
            at = next((later for later in range(index + 1, len(messages)) if later not in claimed
                       and messages[later].role == "tool" and messages[later].tool_call_id == call.id), None)
            if at is not None:
                claimed.add(at)
            found.append((call, messages[at] if at is not None else None))
        return found

    def drop(index: int, why: str) -> None:
        message = messages[index]
        results = results_of(index) if message.role == "assistant" else []
        answered = sum(1 for _, result in results if result is not None)
        dropped.append(f"a {_what(message)} {why}" + (f" (and the results of its {counted(answered, 'tool call')})"
                                                      if answered else ""))

    for index, message in enumerate(messages):
        if message.role == "tool":
            if index in claimed:
                continue  # placed right after its call (or dropped with it, and said so there)
            called = any(call.id == message.tool_call_id for m in messages[:index] for call in m.tool_calls)
            drop(index, "whose call is " + ("answered already" if called else "not in the file"))
        elif not repaired and message.role != "user":
            drop(index, "before the first user message")
        elif message.role == "assistant" and repaired and repaired[-1].role == "assistant":
            drop(index, "that followed another reply")  # it answered the other conversation's prompt
        else:
            repaired.append(message)
            for call, result in results_of(index) if message.role == "assistant" else ():
                if result is None:
                    result = Message.tool_result(call, INTERRUPTED_TEXT, is_error=True,
                                                 id=f"msg_interrupted_{call.id}", seq=next_seq,
                                                 meta={"interrupted": True})
                    next_seq += 1
                repaired.append(result)
    return repaired, next_seq, dropped


def _what(message: Message) -> str:
    kinds = {"user": "user message", "assistant": "reply", "tool": f"result of tool {message.tool_name or '?'}"}
    text = " ".join(message.text.split())
    return f"{kinds.get(message.role, message.role)} (seq {message.seq}" + (
        f", “{text[:40]}{'…' if len(text) > 40 else ''}”)" if text else ")")
