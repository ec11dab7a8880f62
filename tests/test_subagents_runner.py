"""The runner: what a task call asks, what comes back in each ending, and which calls run at once.
The children here are plain objects behind the Child protocol; the real ones are tested against
the fake servers in test_subagents_end_to_end.py."""

from __future__ import annotations

import _thread
import threading
import time

import pytest

from mini_letta.context.tokens import TokenCounter
from mini_letta.settings import SETTINGS
from mini_letta.subagents.catalog import Catalog
from mini_letta.subagents.definitions import AgentType, built_in_types
from mini_letta.subagents.runner import (DONE, FAILED, INTERRUPTED, STEP_LIMIT, ChildEnd, Runner,
                                         TaskRequest, parallel, read_task_request, result_text)
from mini_letta.toolbox.outcome import ToolError, ToolInterrupted

count = TokenCounter().count_text


def catalog() -> Catalog:
    result = Catalog()
    for agent in built_in_types():
        result.add(agent)
    return result


def request(name: str = "explore", prompt: str = "find it") -> TaskRequest:
    return read_task_request({"description": "find", "prompt": prompt, "subagent_type": name}, catalog())


class Scripted:
    """A child that ends as told after ``steps`` steps, noting when it ran."""

    def __init__(self, run, end=None, error=None, steps=2, pause=0.0, log=None):
        self.run, self.end, self.error, self.steps, self.pause, self.log = run, end, error, steps, pause, log

    def work(self, prompt, stop):
        if self.log is not None:
            self.log.append(("start", self.run.agent, time.monotonic()))
        deadline = time.monotonic() + self.pause
        while time.monotonic() < deadline:
            if stop.is_set():
                raise KeyboardInterrupt
            time.sleep(0.01)
        self.run.steps = self.steps
        if self.log is not None:
            self.log.append(("end", self.run.agent, time.monotonic()))
        if self.error:
            raise self.error
        return self.end or ChildEnd(DONE, f"report on {prompt}")

    def finished(self):
        self.finished_as = self.run.status


def test_an_unknown_type_is_refused_with_the_names_there_are():
    with pytest.raises(ToolError, match=r"no agent named 'explorer'; subagent_type is one of: explore, general\."):
        request("explorer")


def test_an_empty_prompt_is_refused():
    with pytest.raises(ToolError, match="prompt is empty"):
        request(prompt="  ")


def test_a_finished_run_gives_its_report():
    runner = Runner(catalog(), lambda req, run: Scripted(run))
    run, report = runner.run(request(prompt="the parser"))
    assert run.status == DONE and report == "report on the parser" and runner.runs == [run]
    assert result_text(run, report, 1_000, count).text == "report on the parser"


def test_step_limit_and_failure_each_say_so_in_one_message():
    runner = Runner(catalog(), lambda req, run: Scripted(run, end=ChildEnd(STEP_LIMIT, "half done")))
    run, report = runner.run(request())
    outcome = result_text(run, report, 1_000, count)
    assert outcome.text == ("[The subagent explore (find) stopped at its step limit (40 steps) before it "
                            "finished. Its last words:]\nhalf done")
    failing = Runner(catalog(), lambda req, run: Scripted(run, error=RuntimeError("openai answered 500")))
    run, report = failing.run(request())
    outcome = result_text(run, report, 1_000, count)
    assert run.status == FAILED and outcome.is_error
    assert outcome.text.startswith("The subagent explore (find) failed after 2 steps: openai answered 500. ")


def test_an_interrupted_run_is_raised_as_a_tool_interrupt_with_what_it_did():
    class Interrupted(Scripted):
        def work(self, prompt, stop):
            self.run.steps = 3
            raise KeyboardInterrupt

    runner = Runner(catalog(), lambda req, run: Interrupted(run))
    with pytest.raises(ToolInterrupted) as raised:
        runner.run(request())
    assert raised.value.outcome.text == "The subagent explore (find) was stopped after 3 steps."
    assert runner.runs[0].status == INTERRUPTED


def test_read_only_types_run_side_by_side_at_most_three_at_a_time():
    log = []
    runner = Runner(catalog(), lambda req, run: Scripted(run, pause=0.3, log=log))
    batch = runner.start_all([request(prompt=str(n)) for n in range(SETTINGS.subagents.max_parallel + 1)])
    results = [batch.result(n) for n in range(SETTINGS.subagents.max_parallel + 1)]
    assert [report for _, report in results] == [f"report on {n}" for n in range(SETTINGS.subagents.max_parallel + 1)]
    running = peak = 0
    for kind, _, _ in sorted(log, key=lambda entry: entry[2]):
        running += 1 if kind == "start" else -1
        peak = max(peak, running)
    assert peak == SETTINGS.subagents.max_parallel


def test_only_calls_that_are_all_read_only_run_side_by_side():
    assert parallel([request("explore"), request("explore")])
    assert not parallel([request("explore"), request("general"), request("explore")])
    assert not parallel([request("explore")])


def test_ctrl_c_while_children_run_side_by_side_stops_them_all():
    runner = Runner(catalog(), lambda req, run: Scripted(run, pause=30))
    timer = threading.Timer(0.3, _thread.interrupt_main)
    timer.start()
    started = time.monotonic()
    batch = runner.start_all([request(prompt="a"), request(prompt="b")])
    with pytest.raises(ToolInterrupted) as raised:
        batch.result(0)
    assert time.monotonic() - started < 10
    assert [run.status for run in runner.runs] == [INTERRUPTED, INTERRUPTED]
    assert raised.value.outcome.text.count("was stopped after") == 2


def test_an_agent_file_types_max_turns_is_the_step_limit():
    agent = AgentType("short", "d", "p", tools=("read_file",), max_turns=5)
    assert TaskRequest("d", "p", agent).max_steps == 5


def test_the_progress_line_says_type_description_steps_tokens_and_context_left():
    from mini_letta.subagents.progress import progress_line
    from mini_letta.subagents.runner import SubagentRun

    run = SubagentRun("explore", "find\x1b[2J the parser", window=4_000, steps=4, tokens=12_345, context_tokens=1_480)
    assert progress_line(run) == "explore · find␛[2J the parser · 4 steps · 12,345 tokens · 63% context left"
    run.status, run.compactions, run.cost_usd = DONE, 2, 0.0123
    assert progress_line(run) == "explore · find␛[2J the parser · 4 steps · 12,345 tokens · done · 2 compactions · $0.0123"
