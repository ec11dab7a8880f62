"""Notices printed above a running prompt leave the terminal in raw mode: with prompt_toolkit's
``run_in_terminal`` (cooked mode meanwhile), a Ctrl-D pressed as a start-up notice appeared was
taken by the terminal as end-of-file and lost (test_repl_startup_pty failed on it in CI)."""

from __future__ import annotations

import sys

import pexpect

SCRIPT = r"""
import sys, termios
from prompt_toolkit import PromptSession
from prompt_toolkit.application import get_app, run_in_terminal
from mini_letta.repl.above_prompt import print_above

def mode():
    print("cooked" if termios.tcgetattr(sys.stdin.fileno())[3] & termios.ICANON else "raw", flush=True)

def check():
    (run_in_terminal if sys.argv[1] == "run_in_terminal" else print_above)(mode).add_done_callback(
        lambda _: get_app().exit(result="done"))

print(PromptSession().prompt("> ", pre_run=check))
"""


def mode_while_printing(how: str) -> str:
    child = pexpect.spawn(sys.executable, ["-c", SCRIPT, how], encoding="utf-8", timeout=20, dimensions=(24, 80))
    child.expect(r"(cooked|raw)")
    seen = child.match.group(1)
    child.expect("done")
    child.expect(pexpect.EOF)
    return seen


def test_printing_above_the_prompt_keeps_the_terminal_raw():
    assert mode_while_printing("print_above") == "raw"
    assert mode_while_printing("run_in_terminal") == "cooked"  # what it replaces: keys meanwhile are lost
