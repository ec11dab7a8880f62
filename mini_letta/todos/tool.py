"""The ``todo_write`` tool: the whole list each call (Claude Code's TodoWrite shape)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mini_letta.messages import ToolSpec
from mini_letta.resources import tool_spec
from mini_letta.todos.items import TOOL, as_text, counts, parse
from mini_letta.wording import counted


def todo_tool() -> tuple[ToolSpec, Callable[[dict[str, Any]], str]]:
    data = tool_spec(TOOL)

    def handler(arguments: dict[str, Any]) -> str:
        todos = parse(arguments)  # a ValueError is the toolbox's "refused, and why"
        done = counts(todos)
        head = (f"Task list updated: {counted(len(todos), 'step')}, {done['completed']} completed, "
                f"{done['in_progress']} in progress.") if todos else "Task list cleared."
        return head + ("\n" + as_text(todos) if todos else "")

    return ToolSpec(data["name"], data["description"], data["parameters"]), handler
