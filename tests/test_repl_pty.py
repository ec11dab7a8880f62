"""The real REPL in a pseudo-terminal, driven like a person would (pexpect)."""

import os
import re
import sys
import time

import pexpect
import pytest

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][A-Z0-9]|\x1b[=>]|\r")


@pytest.fixture
def spawn(tmp_path):
    """Start ``mini-letta *args`` in a pseudo-terminal, in a workspace with one file."""
    children = []

    def start(*args, env_extra=None, columns=120):
        workspace = tmp_path / "ws"
        workspace.mkdir(exist_ok=True)
        # Big enough that a summary of three reads is clearly smaller than the reads themselves.
        (workspace / "app.py").write_text("def main():\n    return 42\n" + "".join(
            f"\ndef helper_{n}(value):\n    return value * {n}\n" for n in range(120)))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "CODEAGENT_"))}
        env.update(MINI_LETTA_HOME=str(tmp_path / "home"), TERM="xterm-256color", COLUMNS="120", LINES="40",
                   # A stand-in for $EDITOR: writes a new value into the file it is given.
                   EDITOR="""sh -c 'printf "The team runs pytest -q before every commit." > "$0"'""")
        env.pop("VISUAL", None)
        env.update(env_extra or {}, COLUMNS=str(columns))
        child = pexpect.spawn(sys.executable, ["-m", "mini_letta", *args], cwd=str(workspace), env=env,
                              dimensions=(40, columns), encoding="utf-8", timeout=20)
        children.append(child)
        return child

    yield start
    for child in children:
        if child.isalive():
            child.terminate(force=True)


@pytest.fixture
def repl(spawn):
    return spawn()


def screen_after(child, pattern, timeout=20):
    """Wait for ``pattern`` in the output with escape codes removed; return that text.

    Answers prompt_toolkit's cursor-position requests as a terminal would: without an answer it
    cannot tell how tall the screen is and leaves the bottom toolbar out.
    """
    seen = ""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            chunk = child.read_nonblocking(100_000, timeout=0.5)
        except pexpect.TIMEOUT:
            continue
        if "\x1b[6n" in chunk:
            child.send("\x1b[20;1R")
        seen += ANSI.sub("", chunk)
        if re.search(pattern, seen):
            return seen
    raise AssertionError(f"{pattern!r} never appeared; saw:\n{seen[-2000:]}")


def assert_exits_cleanly(child):
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


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
    view = screen_after(repl, r"free")
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
