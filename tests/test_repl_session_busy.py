"""The REPL when the session it asks for is open in another process: fork or wait (issue 21, item 2)."""

import subprocess
import sys

import pexpect
import pytest

from mini_letta.messages import Message
from mini_letta.sessions.store import SessionWriter, load_session
from mini_letta.sessions.lock import SessionBusyError, acquire
from pty_support import screen_after
from test_session_lock import HOLD_LOCK


def _earlier_session(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    writer = SessionWriter.create(tmp_path / "home", workspace, "demo", "demo")
    writer.append_message(Message.user("hello from yesterday", seq=1))
    writer.append_message(Message.assistant("You said: “hello from yesterday”", seq=2))
    writer.close()
    return writer.path


def _hold(path):
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    return holder


def test_continue_waits_for_the_other_process_and_then_resumes(spawn, tmp_path):
    path = _earlier_session(tmp_path)
    holder = _hold(path)
    try:
        repl = spawn("-c")
        asked = screen_after(repl, r"Fork or wait\? \[f/w\]")
        assert f"Session {path.stem} is open in another mini-letta process (pid {holder.pid}, open since" in asked
        repl.send("w")  # one key
        screen_after(repl, r"Waiting for another mini-letta process \(pid \d+, open since [\d:]+\) to close "
                           r"session [\w-]+… Ctrl-C\s+stops waiting\.")
        holder.communicate("\n")  # the other process closes the session
        recap = screen_after(repl, r"Resumed session[\s\S]*context left")
        assert "You: hello from yesterday" in recap
        with pytest.raises(SessionBusyError, match=f"pid {repl.pid},"):
            acquire(path)  # the REPL holds it now, from the moment its wait ended
        repl.send("and today\r")
        screen_after(repl, r"You said: “and today”[\s\S]*context left")
    finally:
        holder.kill()
    assert [m.text for m in load_session(path).all_messages if m.role == "user"] == [
        "hello from yesterday", "and today"]


def test_ctrl_c_stops_the_wait_and_nothing_is_resumed(spawn, tmp_path):
    path = _earlier_session(tmp_path)
    holder = _hold(path)
    try:
        repl = spawn("-c")
        screen_after(repl, r"Fork or wait\? \[f/w\]")
        repl.send("w")  # one key
        screen_after(repl, r"Ctrl-C\s+stops waiting")
        repl.sendcontrol("c")
        said = screen_after(repl, r"Nothing resumed: session [\w-]+ is still open in\s+another process\.")
        assert "Stopped waiting." in said and "Traceback" not in said
        repl.expect(pexpect.EOF)
        repl.close()
        assert repl.exitstatus == 1
    finally:
        holder.kill()
    assert len(load_session(path).all_messages) == 2


def test_resume_of_a_session_open_in_another_repl_can_fork_it(spawn, tmp_path):
    path = _earlier_session(tmp_path)
    first = spawn("-c")
    screen_after(first, r"Resumed session[\s\S]*context left")
    first.send("first terminal\r")
    screen_after(first, r"You said: “first terminal”[\s\S]*context left")
    second = spawn()
    screen_after(second, r"context left")
    second.send(f"/resume {path.stem}\r")
    asked = screen_after(second, r"Fork or wait\? \[f/w\]")
    assert f"pid {first.pid}" in asked
    second.send("f")  # one key
    forked = screen_after(second, r"Resumed session[\s\S]*Forked session[\s\S]*context left")
    assert f"Forked session {path.stem} into " in forked
    second.send("second terminal\r")
    screen_after(second, r"You said: “second terminal”[\s\S]*context left")
    first.send("first again\r")
    screen_after(first, r"You said: “first again”[\s\S]*context left")
    loaded = load_session(path)
    assert loaded.warnings == []
    assert [m.text for m in loaded.all_messages if m.role == "user"] == [
        "hello from yesterday", "first terminal", "first again"]
    [fork] = [p for p in path.parent.glob("*.jsonl") if load_session(p).header.get("forked_from") == path.stem]
    assert [m.text for m in load_session(fork).all_messages if m.role == "user"] == [
        "hello from yesterday", "first terminal", "second terminal"]
