"""The real REPL in a pseudo-terminal, driven like a person would (pexpect; ``spawn`` is in
conftest.py, the helpers in pty_support.py)."""

import re

import pytest
from pty_support import assert_exits_cleanly, screen_after


@pytest.fixture
def repl(spawn):
    return spawn()


def test_type_a_message_see_the_reply_and_the_status_bar(repl):
    start = screen_after(repl, r"context left")
    assert "offline demo model" in start
    assert re.search(r"\d+% context left · demo:demo · [\d.]+k/16\.4k tokens", start)
    repl.send("hello there\r")
    reply = screen_after(repl, r"You said: “hello there”[\s\S]*context left")
    assert "This request carried 1 message:" in reply


def test_help_lists_the_commands_and_ctrl_d_exits_cleanly(repl):
    screen_after(repl, r"context left")
    repl.send("/help\r")
    shown = screen_after(repl, r"/memory[\s\S]*guessed[\s\S]*context left")  # listed, and the prompt is back
    for name in ("/help", "/exit", "/clear", "/compact [focus]", "/context"):
        assert name in shown
    assert re.search(r'"N% context left" is the room before compaction: at 0%', shown)
    assert "guessed = not known" in re.sub(r"\s+", " ", shown)
    repl.sendcontrol("d")
    screen_after(repl, r"Bye")
    assert_exits_cleanly(repl)


def test_tool_call_asks_for_approval_then_runs(repl):
    screen_after(repl, r"context left")
    repl.send("run echo approved-$((40+2))\r")
    screen_after(repl, r"\[y\]es · \[n\]o \(Esc\)")
    repl.send("y")  # one key, no Enter
    screen_after(repl, r"approved-42")


def test_context_view_and_manual_compaction(repl):
    screen_after(repl, r"context left")
    for _ in range(3):
        repl.send("read app.py\r")
        screen_after(repl, r"now sits in the context")
    repl.send("/context\r")
    view = screen_after(repl, r"Prompt cache:")  # the view's last line: the table is all there
    for category in ("system prompt", "core memory", "tool schemas", "messages"):
        assert category in view
    repl.send("/compact keep the file names\r")
    done = screen_after(repl, r"[Ss]ummarized \d+ older messages: [\d.]+k? → [\d.]+k? tokens, \d+% left")
    line = re.search(r".*[Ss]ummarized.*", done).group(0)
    assert "manual" not in line and " ms" not in line  # the jargon stays in /context and JSON


def test_ctrl_c_twice_at_an_empty_prompt_exits(repl):
    screen_after(repl, r"context left")
    repl.sendcontrol("c")
    screen_after(repl, r"Press Ctrl-C again to exit[\s\S]*context left")
    repl.sendcontrol("c")
    assert_exits_cleanly(repl)


def test_memory_shows_blocks_and_a_remembered_fact(repl):
    screen_after(repl, r"context left")
    repl.send("remember I like small commits\r")
    screen_after(repl, r"core_memory_append[\s\S]*context left")
    repl.send("/memory\r")
    shown = screen_after(repl, r"project[\s\S]*context left")
    assert "persona" in shown and "human" in shown
    assert "I like small commits" in shown


def test_clear_starts_a_new_session_and_keeps_the_old_one_resumable(repl):
    screen_after(repl, r"context left")
    repl.send("first message\r")
    screen_after(repl, r"You said: “first message”[\s\S]*context left")
    repl.send("/clear\r")
    shown = screen_after(repl, r"Started a new session[\s\S]*context left")
    assert re.search(r"mini-letta --resume \d{8}-\d{6}-\w+", shown)
    repl.send("second message\r")
    reply = screen_after(repl, r"You said: “second message”[\s\S]*context left")
    assert "carried 1 message:" in reply  # the new session starts empty


def test_memory_edit_opens_the_editor_and_saves_the_block(repl):
    screen_after(repl, r"context left")
    repl.send("/memory edit project\r")
    screen_after(repl, r"Saved block 'project'[\s\S]*context left")
    repl.send("/memory\r")
    shown = screen_after(repl, r"project[\s\S]*context left")
    assert "The team runs pytest -q before every commit." in shown


def test_a_failed_start_up_is_explained_at_the_next_enter(spawn):
    child = spawn("--provider", "openai")  # no OPENAI_API_KEY in the environment
    screen_after(child, r"start-up failed: press Enter to see why")
    child.send("\r")
    screen_after(child, r"could not start: no API key for openai: set OPENAI_API_KEY")
