"""Plan mode in the REPL (issue 49): Shift+Tab cycles the modes in the status bar; in plan mode a
write is refused; the plan is shown and answered, and an approval switches the mode."""

import json

from pty_support import AT_THE_PROMPT_AFTER_A_REPLY, screen_after

SHIFT_TAB = "\x1b[Z"


def plan_call(plan: str) -> str:
    return "call exit_plan_mode " + json.dumps({"plan": plan}) + "\r"


def test_shift_tab_to_plan_mode_refuses_a_write_and_an_approved_plan_switches_the_mode(spawn, tmp_path):
    workspace = tmp_path / "ws"
    child = spawn()
    screen_after(child, r"context left")
    child.send(SHIFT_TAB)
    screen_after(child, r"auto-accept edits \(shift\+tab\)")
    child.send(SHIFT_TAB)
    screen_after(child, r"plan mode \(shift\+tab\)")

    child.send("write notes.txt: hello\r")
    screen_after(child, r"in plan mode, where only read-only tools run[\s\S]*" + AT_THE_PROMPT_AFTER_A_REPLY)
    assert not (workspace / "notes.txt").exists()

    child.send(plan_call("## Plan\n1. Write `notes.txt`"))
    screen_after(child, r"Carry out this plan\?")
    child.send("n")
    screen_after(child, r"What should change\?")
    child.send("call it hello.txt\r")
    screen_after(child, r"stays in plan mode[\s\S]*" + AT_THE_PROMPT_AFTER_A_REPLY)

    child.send(plan_call("1. Write `hello.txt`"))
    shown = screen_after(child, r"Carry out this plan\?")
    assert "Write hello.txt" in shown  # rendered as Markdown
    child.send("a")
    screen_after(child, r"approved your plan[\s\S]*auto-accept edits \(shift\+tab\)")
    child.send("write hello.txt: hi\r")
    screen_after(child, r"Allowed without asking \(auto-accept edits mode\)[\s\S]*" + AT_THE_PROMPT_AFTER_A_REPLY)
    assert (workspace / "hello.txt").read_text() == "hi\n"


def test_permission_mode_plan_starts_in_plan_mode(spawn):
    child = spawn("--permission-mode", "plan")
    screen_after(child, r"plan mode \(shift\+tab\)")
    child.send(plan_call("1. nothing"))
    screen_after(child, r"Carry out this plan\?")
    child.send("y")
    shown = screen_after(child, r"approved your plan[\s\S]*" + AT_THE_PROMPT_AFTER_A_REPLY)
    assert "plan mode (shift+tab)" not in shown.split("approved your plan")[-1]
