"""/todos: the model's task list as the latest todo_write left it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mini_letta.repl.commands.registry import command
from mini_letta.repl.views import plain

if TYPE_CHECKING:
    from mini_letta.repl.host import ReplHost


@command("todos")
def todos_command(repl: "ReplHost", argument: str) -> None:
    """Show the model's task list (todo_write)."""
    from mini_letta.repl.todos_view import todo_lines
    from mini_letta.todos.items import counts, latest

    todos = latest(repl.agent().conversation.messages)
    if not todos:
        repl.console.print(plain("The task list is empty: the model has not written one (todo_write) in this "
                                 "conversation.", "dim"))
        return
    done = counts(todos)
    repl.console.print(plain(f"Task list: {done['completed']} of {len(todos)} completed", "bold"))
    repl.console.print(todo_lines(todos, indent="  "))
