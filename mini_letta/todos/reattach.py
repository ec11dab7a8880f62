"""What a compaction puts back of the task list: the latest list, as a ``todo_write`` call and its
result (the caller puts them after the summary), unless the compaction kept that call."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from mini_letta.messages import Message, ToolCall, new_id
from mini_letta.todos.items import TOOL, Todo, arguments_json, as_text, latest

REATTACHED = "todos_reattached"  # meta on the two messages a compaction added


@dataclass(frozen=True)
class AfterCompaction:
    messages: list[Message]
    carryover_line: str = ""
    summary_meta: dict[str, Any] = field(default_factory=dict)


def exchange(todos: list[Todo]) -> list[Message]:
    """The list brought back as the model wrote it: its call and the result."""
    call = ToolCall(new_id("call_"), TOOL, arguments_json(todos))
    text = "Task list, re-attached after a compaction (update it with todo_write as you go):\n" + as_text(todos)
    return [Message.assistant("", [call], meta={REATTACHED: True}),
            Message.tool_result(call, text, meta={REATTACHED: True})]


class TodoReattacher:
    """Asked by ``loop/compacting.py`` after every installed compaction, like the skills."""

    def after_compaction(self, before: Iterable[Message], after: Iterable[Message], window: int | None,
                         count) -> AfterCompaction:
        todos = latest(before)
        after = list(after)
        if not todos or latest(after) == todos:
            return AfterCompaction([])
        return AfterCompaction(exchange(todos), "The task list (todo_write) is re-attached after this summary.")
