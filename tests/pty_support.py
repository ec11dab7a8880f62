"""The real mini-letta in a pseudo-terminal, driven as a person would (pexpect): started in a clean
environment, and watched until the screen shows a state (never a fixed sleep).

The ``spawn`` fixture (conftest.py) starts the REPL with ``start`` in a workspace with one file;
tests that need another start call ``start`` themselves.
"""

from __future__ import annotations

import os
import re
import sys
import time

import pexpect

# Escape codes (colours, cursor moves, modes) and carriage returns: what remains is the text shown.
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][A-Z0-9]|\x1b[=>]|\r")
# prompt_toolkit asks where the cursor is; ``read_until`` answers as a terminal would.
CURSOR_POSITION_REQUEST = "\x1b[6n"
CURSOR_POSITION_ANSWER = "\x1b[20;1R"


def terminal_env(home, **extra: str) -> dict[str, str]:
    """This process's environment without the caller's provider settings, with ``home`` as the user
    data folder and a terminal prompt_toolkit draws for; ``extra`` on top."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "CODEAGENT_"))}
    env.update(MINI_LETTA_HOME=str(home), TERM="xterm-256color", **extra)
    return env


def start(args, workspace, env: dict[str, str], columns: int = 120) -> pexpect.spawn:
    """``mini-letta *args`` in ``workspace``, in a terminal 40 rows high and ``columns`` wide."""
    return pexpect.spawn(sys.executable, ["-m", "mini_letta", *args], cwd=str(workspace), env=env,
                         dimensions=(40, columns), encoding="utf-8", timeout=20)


def read_until(child, pattern, timeout: float = 20, poll: float = 0.5) -> tuple[str, str]:
    """(raw output, output with escape codes removed) up to the first time the latter holds
    ``pattern``; ``poll`` is how long one read may wait.

    Answers prompt_toolkit's cursor-position requests as a terminal would: without an answer it
    cannot tell how tall the screen is and leaves the bottom toolbar out.
    """
    raw = seen = ""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            chunk = child.read_nonblocking(100_000, timeout=poll)
        except pexpect.TIMEOUT:
            continue
        if CURSOR_POSITION_REQUEST in chunk:
            child.send(CURSOR_POSITION_ANSWER)
        raw += chunk
        seen += ANSI.sub("", chunk)
        if re.search(pattern, seen):
            return raw, seen
    raise AssertionError(f"{pattern!r} never appeared; saw:\n{seen[-2000:]}")


def screen_after(child, pattern, timeout: float = 20) -> str:
    """Wait for ``pattern`` in the output with escape codes removed; return that text."""
    return read_until(child, pattern, timeout)[1]


# After a reply: its spend line ("1.2k in · 80 out"), then the prompt's status bar. "context left"
# alone is not enough: the footer drawn during the turn shows it too, and keys sent then are read by
# the turn (Esc interrupts it), not by the prompt.
AT_THE_PROMPT_AFTER_A_REPLY = r"\d out\b[\s\S]*context left"


def assert_exits_cleanly(child) -> None:
    """The process ends, and with status 0 (its session lock is gone with it)."""
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def earlier_session(spawn, tmp_path, message: str):
    """The session (a ``SessionSummary``) of a REPL in which ``message`` was sent and answered, left
    with Ctrl-D. Its process has ended, so its lock on the session is gone too: a REPL started next
    can resume it without being asked to fork or wait."""
    from mini_letta.sessions.listing import list_sessions

    first = spawn()
    screen_after(first, r"context left")
    first.send(message + "\r")
    screen_after(first, "You said: “" + re.escape(message) + r"”[\s\S]*" + AT_THE_PROMPT_AFTER_A_REPLY)
    first.sendcontrol("d")
    first.expect("Bye")
    assert_exits_cleanly(first)
    (session,) = list_sessions(tmp_path / "home", tmp_path / "ws")
    return session


def stop(children) -> None:
    """End what a test left running."""
    for child in children:
        if child.isalive():
            child.terminate(force=True)


def streaming(child) -> None:
    """Start a reply that streams for several seconds (the demo model's ``fill 400 slowly``); return
    once its text is on the screen."""
    screen_after(child, r"context left")
    child.send("fill 400 slowly\r")
    screen_after(child, r"filling the context")


def typed_then_esc(child, text: str) -> None:
    """``text`` typed during a reply, then Esc: the reply is interrupted and the text waits at the
    next prompt, shown once (not echoed into the reply), and Enter sends it."""
    child.send(text)
    child.send("\x1b")
    shown = screen_after(child, r"Interrupted\.[\s\S]*› " + re.escape(text))
    assert shown.count(text) == 1
    child.send("\r")
    screen_after(child, "You said: “" + re.escape(text) + "”")
