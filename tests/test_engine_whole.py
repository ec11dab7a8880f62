"""The engine, whole (issue 46): a refusal is not a failure, and one size per model call.

A model that re-reads one file against a server that rejects over 8,000 tokens (counting the
prompt only, as llama.cpp does) used to end its turn on "automatic compaction has stopped after 3
failed attempts" although no compaction had run after the first, and the breaker then failed the
next turn too. The run must end with the progress guard's own reason, and a next turn with new work
must compact and finish.
"""

from __future__ import annotations

import pytest

from agent_support import fake_count, make_agent, script, tool_call

from mini_letta.context.budget import ContextBudget, StepSize
from mini_letta.errors import ContextFullError


def write_module(workspace, lines: int = 300) -> None:
    (workspace / "mod_00.py").write_text("\n".join(
        f"def function_{i}(value):  # step {i} of the module\n    return value * {i}" for i in range(lines)))


@pytest.mark.parametrize("window, given", [(8_000, False), (8_000, True), (5_000, False), (4_096, True)])
def test_a_repeating_model_stops_with_the_guards_reason_and_the_next_turn_compacts(tmp_path, window, given):
    write_module(tmp_path)
    provider = script([tool_call("read_file", path="mod_00.py") for _ in range(40)], window=window, count=fake_count)
    provider.reply_counts = False  # the prompt alone is held against the window
    if not given:  # the server does not say its window: the first rejection teaches it
        provider.served_window = lambda: None
    agent = make_agent(provider, tmp_path)
    with pytest.raises(ContextFullError, match="nothing new came since the last compaction") as stop:
        agent.run_turn("Read mod_00.py.")
    assert stop.value.reason == "no_progress"
    assert "failed attempts" not in str(stop.value)
    guards = agent.compacting.guards
    assert guards.consecutive_failures == 0 and not guards.breaker_open
    before = len(agent.compactions)

    provider.replies.clear()
    provider.default = None
    provider.enqueue("The module multiplies its argument by each step's number.")
    result = agent.run_turn("Something new: what does the module do?")
    assert result.stopped == "done" and result.text.startswith("The module multiplies")
    assert len(agent.compactions) > before  # the new turn compacted before its request
    assert provider.overflows == (0 if given else 1)


def test_every_model_call_is_sized_once(tmp_path, monkeypatch):
    """One StepSize per model call, handed to compaction, the reply budget and the tool caps: the
    conversation is sized once per call (and once more when the turn ends, for /context's history)."""
    write_module(tmp_path, lines=40)
    for n in range(6):
        (tmp_path / f"other_{n}.py").write_text(f"VALUE_{n} = {n}\n" * 200)
    calls = [tool_call("read_file", path=f"other_{n}.py") for n in range(6)] + ["All read."]
    provider = script(calls, window=4_096, count=fake_count)
    agent = make_agent(provider, tmp_path)
    counted = {"steps": 0, "sizes": 0}
    step_init, size = StepSize.__init__, ContextBudget.size

    def counting_step(self, request):
        counted["steps"] += 1
        step_init(self, request)

    def counting_size(self, *args):
        counted["sizes"] += 1
        return size(self, *args)

    monkeypatch.setattr(StepSize, "__init__", counting_step)
    monkeypatch.setattr(ContextBudget, "size", counting_size)
    result = agent.run_turn("Read the other_*.py files, one by one.")
    assert result.stopped == "done"
    chat_calls = sum(1 for request in provider.requests if request.purpose != "summary")
    assert chat_calls == 7 and result.compactions  # the window made it compact on the way
    assert counted["steps"] == chat_calls
    assert counted["sizes"] == chat_calls + 1
