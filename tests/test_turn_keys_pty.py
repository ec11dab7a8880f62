"""Keys pressed during a reply and at the prompt after it, in the real REPL in a pseudo-terminal,
whatever the timing between them: a loaded machine joins keys pressed apart into one read and
splits keys sent together (repl/turn_keys.py, and Esc Esc at the prompt in repl/app.py)."""

import shutil
import sys
import time

import pexpect
import pytest

from pty_support import (AT_THE_PROMPT_AFTER_A_REPLY, assert_exits_cleanly, screen_after, stop, streaming,
                         terminal_env, typed_then_esc)

# Longer than the pause that tells a lone Esc from an arrow key's start (turn_keys and prompt_toolkit
# alike), shorter than a person's double tap: the second Esc comes in a read of its own.
DOUBLE_TAP_SECONDS = 0.3


def esc_esc(child, apart: bool) -> None:
    """Esc Esc in one write, or in two writes a double tap apart."""
    if apart:
        child.send("\x1b")
        time.sleep(DOUBLE_TAP_SECONDS)
        child.send("\x1b")
    else:
        child.send("\x1b\x1b")


@pytest.mark.parametrize("apart", [False, True], ids=["one write", "two writes apart"])
def test_esc_esc_during_a_reply_interrupts_it_once(spawn, apart):
    child = spawn()
    streaming(child)
    esc_esc(child, apart)
    shown = screen_after(child, r"Interrupted\.[\s\S]*context left")
    child.send("and then\r")
    shown += screen_after(child, r"You said: “and then”[\s\S]*" + AT_THE_PROMPT_AFTER_A_REPLY)
    assert shown.count("Interrupted.") == 1
    assert "Cancelled" not in shown and "Press Ctrl-C again" not in shown


def test_text_and_esc_in_one_read_interrupt_and_the_text_waits_at_the_prompt(spawn):
    child = spawn()
    streaming(child)
    child.send("next question\x1b")
    shown = screen_after(child, r"Interrupted\.[\s\S]*› next question")
    assert shown.count("next question") == 1


def test_arrow_keys_and_a_late_terminal_answer_during_a_reply_leave_nothing_in_the_prompt(spawn):
    child = spawn()
    streaming(child)
    # Left arrow, Alt-b, a cursor-position answer arriving after the prompt that asked had ended.
    child.send("ab\x1b[Dc\x1bbd\x1b[20;1Re")
    child.send("\x1b")
    screen_after(child, r"Interrupted\.[\s\S]*› abcde")
    child.send("\r")
    screen_after(child, r"You said: “abcde”")


@pytest.mark.parametrize("apart", [False, True], ids=["one write", "two writes apart"])
def test_esc_esc_at_the_empty_prompt_after_a_reply_opens_rewind(spawn, apart):
    child = spawn()
    screen_after(child, r"context left")
    child.send("first question\r")
    screen_after(child, r"You said: “first question”[\s\S]*" + AT_THE_PROMPT_AFTER_A_REPLY)
    esc_esc(child, apart)
    listing = screen_after(child, r"Message number \(1-\d+; Enter or Esc cancels\)")
    assert "first question" in listing


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash for job control")
def test_ctrl_z_and_fg_during_a_reply_keep_typing_out_of_the_reply(tmp_path):
    """Suspended and resumed by a shell, which resumes a job in the shell's own terminal mode: the
    turn takes its mode back, so what is typed after ``fg`` is neither echoed into the reply nor
    held until Enter (an Esc still interrupts)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = terminal_env(tmp_path / "home", LINES="40", COLUMNS="120", PS1="shell$ ",
                       HISTFILE=str(tmp_path / "bash_history"))  # not the user's history
    shell = pexpect.spawn("bash", ["--norc", "--noprofile", "-i"], cwd=str(workspace), env=env,
                          dimensions=(40, 120), encoding="utf-8", timeout=20)
    try:
        screen_after(shell, r"shell\$ ")
        shell.send(f"{sys.executable} -m mini_letta\r")
        streaming(shell)
        shell.sendcontrol("z")
        screen_after(shell, r"Stopped[\s\S]*shell\$ ")
        shell.send("fg\r")
        # bash names the job it resumes; text streamed after that means the turn runs again, and
        # took its mode back first (the Ctrl-Z handler does, in the thread that streams).
        screen_after(shell, r"mini_letta[\s\S]*compaction work\.")
        typed_then_esc(shell, "typed after fg")
    finally:
        stop([shell])


def test_ctrl_d_during_a_reply_leaves_once_it_is_complete(spawn):
    child = spawn()
    streaming(child)
    child.sendcontrol("d")
    screen_after(child, r"\d out\b[\s\S]*Bye", timeout=60)
    assert_exits_cleanly(child)
