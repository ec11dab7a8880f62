"""The task list in the REPL: shown under each todo_write call, and by /todos, also after -c."""

from __future__ import annotations

import json

from fakes import Reply

from pty_support import AT_THE_PROMPT_AFTER_A_REPLY, assert_exits_cleanly, screen_after
from test_repl_habits_pty import openai_env

STEPS = [{"content": "Read the notes", "status": "completed"},
         {"content": "Write the summary", "status": "in_progress", "activeForm": "Writing the summary"},
         {"content": "Check mini_letta/__init__.py", "status": "pending"}]


def test_the_list_is_shown_after_each_update_and_by_todos_also_after_continue(spawn, server):
    child = spawn("--model", "gpt-4o", env_extra=openai_env(server))
    screen_after(child, r"context left")
    server.enqueue(Reply(tool_calls=[("call_t", "todo_write", json.dumps({"todos": STEPS}))]), Reply(text="Planned."))
    child.send("plan it\r")
    shown = screen_after(child, r"Planned\.[\s\S]*" + AT_THE_PROMPT_AFTER_A_REPLY)
    assert "todo_write (3 steps)" in shown
    # Each step with its state; the one in progress by its activeForm; the path as written.
    assert "☑ Read the notes" in shown and "◐ Writing the summary" in shown
    assert "☐ Check mini_letta/__init__.py" in shown
    child.send("/todos\r")
    listed = screen_after(child, r"Task list: 1 of 3 completed[\s\S]*☐ Check mini_letta/__init__\.py")
    assert "◐ Writing the summary" in listed
    child.send("/exit\r")
    child.expect("Bye")
    assert_exits_cleanly(child)
    again = spawn("--model", "gpt-4o", "-c", env_extra=openai_env(server))
    screen_after(again, r"context left")
    again.send("/todos\r")
    screen_after(again, r"Task list: 1 of 3 completed[\s\S]*◐ Writing the summary")
