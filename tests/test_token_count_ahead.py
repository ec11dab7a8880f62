"""A resumed session's messages are counted in the background as soon as it is loaded, so its first
step (whose running total starts empty) finds their counts cached: the same counts, earlier."""

from __future__ import annotations

import threading

from mini_letta.app import Options, build_agent
from mini_letta.context.tokens import TokenCounter
from mini_letta.messages import Message, ToolCall
from mini_letta.toolbox import approve_all


def _conversation(count: int) -> list[Message]:
    messages = []
    for index in range(count):
        call = ToolCall(f"call_{index}", "read_file", '{"path": "notes/%d.txt"}' % index)
        messages += [Message.user(f"Read note {index}, then say what it means — é."),
                     Message.assistant("Reading.", [call]), Message.tool_result(call, f"note {index}\n" * 20)]
    return messages


def _refuse_counting(counter: TokenCounter, monkeypatch) -> None:
    def refuse(message):
        raise AssertionError(f"{message.id} was not counted ahead")

    monkeypatch.setattr(counter, "_count_uncached", refuse)


def test_counting_ahead_caches_every_message_with_the_foreground_count(monkeypatch):
    messages = _conversation(40)
    counter = TokenCounter()
    thread = counter.count_ahead(messages)
    assert thread is not None
    thread.join(timeout=60)
    expected = TokenCounter().count_messages(messages)
    _refuse_counting(counter, monkeypatch)
    assert counter.count_messages(messages) == expected
    assert counter.count_ahead([]) is None


def _join_count_ahead() -> None:
    for thread in threading.enumerate():
        if thread.name == "mini-letta-count-ahead":
            thread.join(timeout=60)


def test_a_resumed_session_is_counted_ahead(tmp_path, monkeypatch):
    demo = "demo"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    monkeypatch.setenv("MINI_LETTA_HOME", str(tmp_path / "home"))
    agent = build_agent(Options(workspace=workspace, headless=True, provider=demo), approve_all)
    for turn in range(3):
        agent.run_turn(f"hello {turn}, tell me about note {turn}")
    agent.session.close()
    agent.budget.counter._message_cache.clear()  # the counter is shared per encoding: start empty
    _join_count_ahead()
    resumed = build_agent(Options(workspace=workspace, headless=True, provider=demo, continue_session=True),
                          approve_all)
    messages = resumed.conversation.messages
    assert len(messages) >= 6
    _join_count_ahead()
    expected = TokenCounter(resumed.budget.counter.encoding_name).count_messages(messages)
    _refuse_counting(resumed.budget.counter, monkeypatch)
    assert resumed.budget.counter.count_messages(messages) == expected
    resumed.session.close()
