"""Which skills a conversation has invoked, read from the conversation itself.

Nothing is stored beside it: an invocation is a ``skill`` tool call that succeeded, or a message
carrying ``meta["skill"]`` (typed by the user, or re-attached after a compaction), or a name in a
summary's ``meta["skills"]`` (the invocations it summarised). Sessions save all three, so the same
list comes back after ``-c`` / ``-r``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from mini_letta.messages import Message, ToolCall, new_id

TOOL = "skill"
SKILL_META = "skill"  # on a message that brought a skill in: {"name": ..., "args": ...}
SUMMARY_META = "skills"  # on a summary: the invocations it covers, oldest first


@dataclass(frozen=True)
class Invocation:
    name: str
    args: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "args": self.args}

    @classmethod
    def from_dict(cls, data: object) -> Invocation | None:
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            return None
        args = data.get("args")
        return cls(data["name"], args if isinstance(args, str) else "")


def exchange(invocation: Invocation, text: str, **meta: object) -> list[Message]:
    """A skill brought in without the model asking (typed by the user, re-attached after a
    compaction) as the model would have: its ``skill`` call and the result. A user message would
    be taken for a turn the person typed (turn numbers, the carry-over's quotes, the current task)."""
    call = ToolCall(new_id("call_"), TOOL, json.dumps(invocation.to_dict()))
    marks = {SKILL_META: invocation.to_dict(), **meta}
    return [Message.assistant("", [call], meta=dict(marks)), Message.tool_result(call, text, meta=dict(marks))]


def invocations(messages: Iterable[Message]) -> list[Invocation]:
    """Each skill invoked in ``messages`` once, with its latest arguments, the latest last."""
    messages = list(messages)
    failed = {m.tool_call_id for m in messages if m.role == "tool" and m.is_error}
    answered = {m.tool_call_id for m in messages if m.role == "tool"}
    found: dict[str, Invocation] = {}

    def add(invocation: Invocation | None) -> None:
        if invocation is not None:
            found.pop(invocation.name, None)
            found[invocation.name] = invocation

    for message in messages:
        if message.kind == "summary":
            for entry in message.meta.get(SUMMARY_META) or []:
                add(Invocation.from_dict(entry))
        add(Invocation.from_dict(message.meta.get(SKILL_META)))
        for call in message.tool_calls:
            if call.id in answered and call.id not in failed:
                add(_called(call))
    return list(found.values())


def _called(call: ToolCall) -> Invocation | None:
    """The invocation a tool call makes, if it is a well-formed call of the skill tool."""
    if call.name != TOOL:
        return None
    try:
        return Invocation.from_dict(call.parse_arguments())
    except ValueError:
        return None


def present(messages: Iterable[Message]) -> set[str]:
    """The skills whose bodies ``messages`` still hold: a result of a skill call, not cleared by a
    compaction. A compaction that kept one needs no copy."""
    messages = list(messages)
    calls = {call.id: call for message in messages for call in message.tool_calls}
    names = set()
    for message in messages:
        if message.role != "tool" or message.meta.get("cleared") or message.is_error:
            continue
        invocation = _called(calls[message.tool_call_id]) if message.tool_call_id in calls else None
        if invocation is not None:
            names.add(invocation.name)
    return names
