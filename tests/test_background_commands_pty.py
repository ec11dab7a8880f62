"""Background commands in the REPL (issue 49, item 4): ``/bashes`` lists what the model started,
``/bashes kill ID`` stops one, and leaving (Ctrl-D, /exit) stops the rest, whole process trees."""

import json

import pytest

from fakes import Reply
from pty_support import AT_THE_PROMPT_AFTER_A_REPLY, assert_exits_cleanly, screen_after
from test_background_commands import ESCAPING, LOOP, gone, pid_in, wait_for
from test_repl_habits_pty import openai_env


def start_two(server):
    server.enqueue(
        Reply(tool_calls=[("call_1", "bash", json.dumps({"command": LOOP.format(name="first"),
                                                         "run_in_background": True}))]),
        Reply(tool_calls=[("call_2", "bash", json.dumps({"command": ESCAPING.format(name="second"),
                                                         "run_in_background": True}))]),
        Reply(tool_calls=[("call_3", "bash", json.dumps({"command": wait_for("escaped.pid") + "; sleep 0.5"}))]),
        Reply(text="Both loops run."))


@pytest.mark.parametrize("leave", ["ctrl-d", "/exit"])
def test_bashes_lists_and_kills_and_leaving_stops_the_rest(spawn, server, tmp_path, leave):
    workspace = tmp_path / "ws"
    child = spawn("--model", "gpt-4o", "--yolo", env_extra=openai_env(server))
    screen_after(child, r"context left")
    start_two(server)
    child.send("start two loops\r")
    screen_after(child, r"Both loops run\.[\s\S]*" + AT_THE_PROMPT_AFTER_A_REPLY)
    first, second = pid_in(workspace / "first.pid"), pid_in(workspace / "second.pid")
    escaped = pid_in(workspace / "escaped.pid")
    child.send("/bashes\r")
    shown = screen_after(child, r"Background commands: 2 of 2 running[\s\S]*bash_2[\s\S]*context left")
    assert "bash_1" in shown and "running" in shown
    child.send("/bashes kill bash_1\r")
    screen_after(child, r"Killed bash_1[\s\S]*context left")
    assert gone(first) and not gone(second, wait=0.2)
    child.send("/bashes kill bash_9\r")
    screen_after(child, r"no background command 'bash_9'[\s\S]*context left")
    if leave == "ctrl-d":
        child.sendcontrol("d")
    else:
        child.send("/exit\r")
    screen_after(child, r"Stopped 1 background command\.[\s\S]*Bye")
    assert_exits_cleanly(child)
    assert gone(second) and gone(escaped)
