"""The task list's steps, their states, and reading the latest list from a conversation.

Nothing is stored beside the conversation: the list is the arguments of the latest ``todo_write``
call that succeeded (the model's own, or the copy re-attached after a compaction). The session file
holds those calls, so ``-c`` / ``-r`` bring the list back, and ``/rewind`` takes it back to what it
was at that point.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from mini_letta.messages import Message, ToolCall
from mini_letta.settings import SETTINGS

TOOL = "todo_write"
STATUSES = ("pending", "in_progress", "completed")


@dataclass(frozen=True)
class Todo:
    content: str
    status: str
    active_form: str = ""

    def to_dict(self) -> dict[str, str]:
        data = {"content": self.content, "status": self.status}
        if self.active_form:
            data["activeForm"] = self.active_form
        return data


def parse(arguments: dict[str, Any]) -> list[Todo]:
    """The list ``todo_write`` was called with; ValueError with a sentence for the model."""
    raw = arguments.get("todos")
    if not isinstance(raw, list):
        raise ValueError("todo_write: `todos` must be an array of {content, status, activeForm?}.")
    if len(raw) > SETTINGS.todo_max_items:
        raise ValueError(f"todo_write: at most {SETTINGS.todo_max_items} steps; merge or drop some.")
    todos = []
    for number, item in enumerate(raw, 1):
        if not isinstance(item, dict):
            raise ValueError(f"todo_write: step {number} must be an object {{content, status, activeForm?}}.")
        content, status, active = item.get("content"), item.get("status"), item.get("activeForm") or ""
        if not isinstance(content, str) or not content.strip():
            raise ValueError(f"todo_write: step {number} needs a non-empty `content`.")
        if status not in STATUSES:
            raise ValueError(f"todo_write: step {number} has status {status!r}; use one of {', '.join(STATUSES)}.")
        if not isinstance(active, str):
            raise ValueError(f"todo_write: step {number}'s `activeForm` must be a string.")
        for text in (content, active):
            if len(text) > SETTINGS.todo_max_chars:
                raise ValueError(f"todo_write: step {number} is longer than {SETTINGS.todo_max_chars} characters; "
                                 "say it shorter.")
        todos.append(Todo(" ".join(content.split()), status, " ".join(active.split())))
    return todos


def as_text(todos: list[Todo]) -> str:
    """The list as the model reads it back: one step a line with its state."""
    if not todos:
        return "The task list is empty."
    marks = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]"}
    return "\n".join(f"{marks[todo.status]} {todo.content}" for todo in todos)


def counts(todos: list[Todo]) -> dict[str, int]:
    return {status: sum(todo.status == status for todo in todos) for status in STATUSES}


def latest(messages: Iterable[Message]) -> list[Todo]:
    """The task list as the latest successful ``todo_write`` call in ``messages`` left it ([] if none)."""
    messages = list(messages)
    answered_ok = {m.tool_call_id for m in messages if m.role == "tool" and not m.is_error}
    found: list[Todo] = []
    for message in messages:
        for call in message.tool_calls:
            if call.name == TOOL and call.id in answered_ok:
                todos = _called(call)
                if todos is not None:
                    found = todos
    return found


def _called(call: ToolCall) -> list[Todo] | None:
    try:
        return parse(call.parse_arguments())
    except ValueError:
        return None


def arguments_json(todos: list[Todo]) -> str:
    return json.dumps({"todos": [todo.to_dict() for todo in todos]}, ensure_ascii=False)
