"""The REPL's lines for subagents, without a terminal: several side by side share the footer with
each one's state, and one stopped by Ctrl-C collapses to a line that says it was interrupted."""

from __future__ import annotations

import io

from rich.console import Console

from mini_letta.repl.events import ReplEvents
from mini_letta.subagents.runner import DONE, INTERRUPTED, SubagentRun


class Host:
    def __init__(self):
        self.output = io.StringIO()
        self.console = Console(file=self.output, width=300, color_system=None)

    def status_line(self):
        return ""


def runs(count=3):
    return [SubagentRun("explore", f"audit file_{n}.py", window=4_000, steps=n, context_tokens=1_000 * n)
            for n in range(count)]


def test_side_by_side_subagents_each_show_their_state_in_the_footer():
    events = ReplEvents(Host())
    first, second, third = runs()
    for run in (first, second, third):
        events.subagent_progress(run)
    second.status = DONE
    events.subagent_progress(second)
    third.steps = 5
    events.subagent_progress(third)
    assert events.activity.label == ("3 subagents: explore (audit file_0.py) 0 steps, 100% left · "
                                     "explore (audit file_1.py) done · explore (audit file_2.py) 5 steps, 50% left")


def test_a_collapsed_subagent_leaves_the_footer_to_the_others():
    events = ReplEvents(Host())
    first, second = runs(2)
    events.subagent_progress(first)
    events.subagent_progress(second)
    first.status = DONE
    events.subagent_progress(first)
    events._show_finished_subagents()  # its task call's result was shown
    second.steps = 2
    events.subagent_progress(second)
    assert events.activity.label == "explore · audit file_1.py · 2 steps · 0 tokens · 75% context left"


def test_a_subagent_stopped_by_ctrl_c_collapses_to_a_line_that_says_so():
    host = Host()
    events = ReplEvents(host)
    (run,) = runs(1)
    run.steps = 2
    events.subagent_progress(run)
    run.status = INTERRUPTED  # the runner says so before the turn's interrupt reaches the REPL
    events.subagent_progress(run)
    events.close()
    events.close()  # the REPL closes again in its finally: the line is said once
    assert host.output.getvalue() == "  ◆ explore · audit file_0.py · 2 steps · 0 tokens · interrupted\n"


def test_what_subagents_said_is_shown_with_their_lines_when_the_task_call_ends():
    """Issue 33 item 4: not after the parent's whole turn."""
    from types import SimpleNamespace

    from mini_letta.app import Options
    from mini_letta.toolbox.outcome import ToolOutcome

    host = Host()
    host.options = Options()
    host.remember_output = lambda call, outcome: None
    host.refresh_status = lambda: None
    events = ReplEvents(host)
    (run,) = runs(1)
    events.subagent_progress(run)
    run.status = DONE
    host.options.notices.say("Subagent explore: The model returned an empty reply.")
    events.tool_result(SimpleNamespace(name="task"), ToolOutcome("the report"))
    shown = host.output.getvalue()
    assert "◆ explore · audit file_0.py" in shown and "Subagent explore: The model returned an empty reply." in shown
    assert not host.options.notices.pending()
