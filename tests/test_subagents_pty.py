"""In a terminal: a running subagent is one line that updates in place and collapses to its outcome,
/agents lists the types, and Esc stops a subagent, ending the turn with the parent's history kept."""

from __future__ import annotations

import threading

import pytest
from fakes import Reply
from pty_support import AT_THE_PROMPT_AFTER_A_REPLY, screen_after
from subagent_support import TeamServer, call, tool_results

ENV = {"OPENAI_API_KEY": "sk-test", "MINI_LETTA_MAX_RETRIES": "0", "MINI_LETTA_TIMEOUT": "30"}


def parent(body, step):
    if not tool_results(body):
        return Reply(tool_calls=[call("task", description="audit app.py", prompt="Read app.py twice and report.",
                                      subagent_type="explore")])
    return Reply(text="The audit is done.")


@pytest.fixture
def held():
    """Each subagent step waits for the test, so the screen can be read while it runs."""
    return [threading.Event() for _ in range(3)]


@pytest.fixture
def team(held):
    def child(body, step):
        if step < 2:
            return Reply(tool_calls=[call("read_file", path="app.py")], hold=held[step])
        return Reply(text="REPORT: app.py defines main and 120 helpers.\nNothing is wrong.", hold=held[2])

    with TeamServer(parent, child) as server:
        yield server


def start(spawn, team):
    return spawn("--provider", "openai", "--model", "gpt-test", "--base-url", team.base_url, env_extra=ENV)


def test_a_running_subagent_is_one_line_that_collapses_to_its_outcome(spawn, team, held):
    repl = start(spawn, team)
    screen_after(repl, r"context left")
    repl.send("Audit the app.\r")
    screen_after(repl, r"task explore: audit app\.py[\s\S]*explore · audit app\.py · 0 steps · 0 tokens · 100% context left")
    held[0].set()
    screen_after(repl, r"explore · audit app\.py · 1 step · [\d,]+ tokens · \d+% context left")
    held[1].set()
    held[2].set()
    shown = screen_after(repl, r"◆ explore · audit app\.py · 3 steps · [\d,]+ tokens · done[\s\S]*"
                               r"⎿ REPORT: app\.py defines main and 120 helpers\.[\s\S]*The audit is done\.[\s\S]*"
                               + AT_THE_PROMPT_AFTER_A_REPLY)
    # The subagent's own tool calls are not printed: its work is the one line.
    assert "read_file app.py" not in shown


def test_esc_stops_a_subagent_and_the_turn_keeps_what_was_said(spawn, team, held, tmp_path):
    from mini_letta.sessions.store import load_session
    repl = start(spawn, team)
    screen_after(repl, r"context left")
    repl.send("Audit the app.\r")
    screen_after(repl, r"explore · audit app\.py · 0 steps")
    repl.send("\x1b")
    screen_after(repl, r"◆ explore · audit app\.py · 0 steps · 0 tokens · interrupted\s+"
                       r"Interrupted\. What was said so far is kept\.[\s\S]*context left")
    repl.send("/agents\r")
    screen_after(repl, r"explore  \(built-in\)[\s\S]*general  \(built-in\)[\s\S]*Agent files:")
    for event in held:
        event.set()
    assert len(team.parent_requests) == 1
    (path,) = (tmp_path / "home" / "sessions").glob("*.jsonl")
    saved = load_session(path).messages_in_context
    assert [m.role for m in saved] == ["user", "assistant", "tool"]
    assert saved[2].text == ("The subagent explore (audit app.py) was stopped after 0 steps.\n"
                             "Interrupted by the user.")
