"""The task list read from a conversation, checked, and put back after a compaction only when needed."""

from __future__ import annotations

import json

import pytest

from mini_letta.messages import Message, ToolCall
from mini_letta.settings import SETTINGS
from mini_letta.todos.items import Todo, latest, parse
from mini_letta.todos.reattach import TodoReattacher


def written(call_id: str, todos: list[dict], *, error: bool = False) -> list[Message]:
    call = ToolCall(call_id, "todo_write", json.dumps({"todos": todos}))
    return [Message.assistant("", [call]), Message.tool_result(call, "ok", is_error=error)]


def test_the_latest_successful_call_is_the_list():
    first = [{"content": "a", "status": "pending"}]
    second = [{"content": "a", "status": "completed"}, {"content": "b", "status": "in_progress", "activeForm": "Doing b"}]
    messages = [Message.user("go"), *written("c1", first), *written("c2", second), *written("c3", [], error=True)]
    assert latest(messages) == [Todo("a", "completed"), Todo("b", "in_progress", "Doing b")]
    assert latest([Message.user("go")]) == []


@pytest.mark.parametrize("todos, words", [
    ([{"content": "x", "status": "done"}], "use one of pending, in_progress, completed"),
    ([{"content": "  ", "status": "pending"}], "non-empty `content`"),
    (["x"], "must be an object"),
    ([{"content": "x" * 301, "status": "pending"}], "longer than 300 characters"),
])
def test_a_malformed_list_is_refused_with_the_reason(todos, words):
    with pytest.raises(ValueError, match=words.replace("(", r"\(")):
        parse({"todos": todos})


def test_a_list_longer_than_the_setting_is_refused(monkeypatch):
    monkeypatch.setattr(SETTINGS, "todo_max_items", 2)
    with pytest.raises(ValueError, match="at most 2 steps"):
        parse({"todos": [{"content": str(n), "status": "pending"} for n in range(3)]})


def test_a_compaction_that_kept_the_call_gets_no_copy_and_one_that_dropped_it_does():
    steps = [{"content": "a", "status": "in_progress"}]
    before = [Message.user("go"), *written("c1", steps), Message.assistant("done")]
    reattacher = TodoReattacher()
    assert reattacher.after_compaction(before, before[1:], None, len).messages == []
    summary = Message.user("summary", kind="summary")
    back = reattacher.after_compaction(before, [summary], None, len)
    assert latest([summary, *back.messages]) == [Todo("a", "in_progress")]
    assert "re-attached" in back.carryover_line
    assert reattacher.after_compaction([Message.user("go")], [summary], None, len).messages == []


def test_the_task_list_is_no_longer_sent_once_a_rejection_teaches_a_small_window(tmp_path):
    """Offered at an assumed large window, the schema must leave with the window learned from a
    rejection: it would otherwise push the floor over a 2,048-token window again."""
    from agent_support import make_agent, script

    provider = script(["ok"])
    agent = make_agent(provider, tmp_path, window=128_000)
    assert "todo_write" in [spec.name for spec in agent.tool_specs()]
    assert agent.budget.learn_window(2_048)
    assert "todo_write" not in [spec.name for spec in agent.tool_specs()]


def test_a_provider_switch_decides_the_optional_tools_again_by_the_same_rule(tmp_path):
    """``/model`` replaces the budget: the new window decides which optional schemas are sent, as
    at start (``loop/window_tools.py``), and a larger window brings them back."""
    from agent_support import make_agent, script

    from mini_letta.app import switch_provider

    def names(agent):
        return [spec.name for spec in agent.tool_specs()]

    agent = make_agent(script(["ok"]), tmp_path, window=128_000)
    assert "todo_write" in names(agent)
    small = script(["ok"], window=4_096)
    switch_provider(agent, small)
    assert agent.budget.window == 4_096 and "todo_write" not in names(agent)
    switch_provider(agent, script(["ok"], window=64_000))
    assert "todo_write" in names(agent) and "todo_write" in agent.toolbox
    # Started small, the tool is there to be sent once a large window comes.
    started_small = make_agent(script(["ok"]), tmp_path, window=4_096)
    assert "todo_write" not in names(started_small)
    switch_provider(started_small, script(["ok"], window=128_000))
    assert "todo_write" in names(started_small)
