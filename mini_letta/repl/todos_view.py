"""The task list as the REPL shows it: under each ``todo_write`` call, and for ``/todos``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mini_letta.repl.views import plain

if TYPE_CHECKING:
    from rich.text import Text

    from mini_letta.todos.items import Todo

_MARKS = {"pending": ("☐ ", ""), "in_progress": ("◐ ", "bold cyan"), "completed": ("☑ ", "dim")}


def todo_lines(todos: list[Todo], indent: str = "    ") -> Text:
    """One line a step: ☐ pending, ◐ in progress (its activeForm when it has one), ☑ completed."""
    from rich.text import Text

    lines = []
    for todo in todos:
        mark, style = _MARKS[todo.status]
        words = todo.active_form if todo.status == "in_progress" and todo.active_form else todo.content
        lines.append(Text.assemble(indent, (mark, style), plain(words, style)))
    return Text("\n").join(lines)
