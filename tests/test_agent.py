"""The agent loop through a scripted model: replies, tools, bad calls, limits and Ctrl-C."""

import json

import pytest

from mini_letta.loop.agent import AgentEvents, TurnInterrupted
from mini_letta.settings import SETTINGS

MAX_TOOL_CALLS_PER_REPLY = SETTINGS.loop.max_tool_calls_per_reply
from mini_letta.app import Options, build_agent
from mini_letta.messages import Message, ToolCall, validity_problems
from mini_letta.providers.scripted import ScriptedProvider
from mini_letta.sessions.store import load_session
from mini_letta.toolbox import approve_all


def call(name, arguments, call_id="call_1"):
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return ToolCall(call_id, name, text)


def make(tmp_path, *replies, **kw):
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    provider = ScriptedProvider(replies, **kw)
    agent = build_agent(Options(workspace=workspace), approve_all, provider=provider)
    return agent, provider, workspace


class Recorder(AgentEvents):
    def __init__(self, interrupt_after_deltas=None):
        self.deltas = []
        self.notices = []
        self.interrupt_after_deltas = interrupt_after_deltas

    def text(self, delta):
        self.deltas.append(delta)
        if self.interrupt_after_deltas is not None and len(self.deltas) >= self.interrupt_after_deltas:
            raise KeyboardInterrupt

    def notice(self, text):
        self.notices.append(text)


def session_messages(agent):
    return load_session(agent.session.path).all_messages


def test_text_reply_streams_and_is_saved(tmp_path):
    agent, provider, _ = make(tmp_path, "Hello! " * 10)
    events = Recorder()
    result = agent.run_turn("hi", events)
    assert result.text == "Hello! " * 10
    assert len(events.deltas) > 3  # it streamed
    assert [m.role for m in agent.conversation.messages] == ["user", "assistant"]
    assert [m.text for m in session_messages(agent)] == ["hi", "Hello! " * 10]
    assert provider.requests[0].messages[0].text == "hi"
    assert "core_memory" in provider.requests[0].system


def test_tool_round_trip_feeds_the_result_back(tmp_path):
    agent, provider, workspace = make(
        tmp_path, Message.assistant("", [call("read_file", {"path": "notes.txt"})]), "The file says hello.")
    (workspace / "notes.txt").write_text("hello from the file\n")
    result = agent.run_turn("what does notes.txt say?")
    assert result.text == "The file says hello." and result.steps == 2
    tool_message = provider.requests[1].messages[-1]
    assert tool_message.role == "tool" and "hello from the file" in tool_message.text
    assert validity_problems(agent.conversation.messages) == []


@pytest.mark.parametrize("bad_call, expected", [
    (call("read_file", "{not json"), "not valid JSON"),
    (call("launch_rockets", {}), "no tool named 'launch_rockets'"),
    (call("read_file", {}), "missing required argument 'path'"),
    (call("read_file", {"path": "a", "colour": "red"}), "colour"),
])
def test_bad_tool_calls_become_error_results(tmp_path, bad_call, expected):
    agent, provider, _ = make(tmp_path, Message.assistant("", [bad_call]), "sorry")
    agent.run_turn("go")
    result = provider.requests[1].messages[-1]
    assert result.role == "tool" and result.is_error
    assert expected.lower() in result.text.lower()


def test_a_tool_call_without_id_gets_one(tmp_path):
    agent, provider, workspace = make(
        tmp_path, Message.assistant("", [call("glob", {"pattern": "*"}, call_id=""),
                                         call("glob", {"pattern": "*.py"}, call_id="")]), "done")
    agent.run_turn("list")
    ids = [c.id for c in agent.conversation.messages[1].tool_calls]
    assert all(ids) and len(set(ids)) == 2
    assert validity_problems(agent.conversation.messages) == []


def test_too_many_tool_calls_in_one_reply_are_answered_but_not_run(tmp_path):
    calls = [call("write_file", {"path": f"f{i}.txt", "content": "x"}, f"call_{i}") for i in range(50)]
    agent, provider, workspace = make(tmp_path, Message.assistant("", calls), "ok")
    agent.run_turn("make files")
    results = [m for m in agent.conversation.messages if m.role == "tool"]
    assert len(results) == 50
    assert len(list(workspace.glob("f*.txt"))) == MAX_TOOL_CALLS_PER_REPLY
    assert sum("Not run" in r.text for r in results) == 50 - MAX_TOOL_CALLS_PER_REPLY
    assert validity_problems(agent.conversation.messages) == []


def test_the_same_failing_call_repeated_stops_the_turn(tmp_path):
    failing = Message.assistant("", [call("read_file", {"path": "missing.txt"})])
    agent, provider, _ = make(tmp_path, default=failing)
    events = Recorder()
    result = agent.run_turn("read it", events)
    assert result.stopped == "repeated_failure"
    assert len(provider.requests) == 3
    assert any("repeated the same failing tool call" in n for n in events.notices)


def test_step_limit_ends_a_runaway_turn(tmp_path):
    agent, provider, _ = make(tmp_path, default=lambda request: Message.assistant(
        "", [call("glob", {"pattern": f"*{len(request.messages)}"}, f"c{len(request.messages)}")]))
    agent.max_steps = 5
    events = Recorder()
    result = agent.run_turn("loop", events)
    assert result.stopped == "max_turns" and result.steps == 5
    assert validity_problems(agent.conversation.messages) == []


def test_at_the_limit_the_turn_goes_on_when_the_user_says_so(tmp_path):
    agent, provider, _ = make(tmp_path, default=lambda request: Message.assistant(
        "", [call("glob", {"pattern": f"*{len(request.messages)}"}, f"c{len(request.messages)}")]))
    agent.max_steps = 5
    asked = []

    class Asks(Recorder):
        def go_on(self, steps):
            asked.append(steps)
            return len(asked) == 1  # yes the first time, no the second

    result = agent.run_turn("loop", Asks())
    assert asked == [5, 10] and result.stopped == "max_turns" and result.steps == 10
    assert validity_problems(agent.conversation.messages) == []


def test_a_150_step_turn_finishes_under_a_limit_of_200(tmp_path):
    def model(request):
        steps = sum(1 for m in request.messages if m.role == "assistant")
        if steps >= 150:
            return Message.assistant("All 150 files read.")
        return Message.assistant("", [call("glob", {"pattern": f"f{steps}.py"}, f"c{steps}")])

    agent, provider, _ = make(tmp_path, default=model)
    agent.max_steps = 200
    result = agent.run_turn("read them all", Recorder())
    assert result.stopped == "done" and result.steps == 151 and result.text == "All 150 files read."


def test_empty_reply_is_reported(tmp_path):
    agent, _, _ = make(tmp_path, "")
    events = Recorder()
    agent.run_turn("hello?", events)
    assert any("empty reply" in n for n in events.notices)


def test_ctrl_c_during_streaming_keeps_the_partial_reply(tmp_path):
    agent, _, _ = make(tmp_path, "one two three four five six seven eight nine ten", chunk_size=4)
    with pytest.raises(TurnInterrupted):
        agent.run_turn("count", Recorder(interrupt_after_deltas=3))
    user, partial = agent.conversation.messages
    assert user.text == "count"
    assert partial.text == "one two thre" and partial.meta["interrupted"]
    assert [m.text for m in session_messages(agent)] == ["count", "one two thre"]


def test_ctrl_c_during_a_tool_gives_every_call_a_result(tmp_path):
    agent, provider, _ = make(tmp_path, Message.assistant("", [
        call("glob", {"pattern": "*"}, "a"), call("bash", {"command": "sleep 5"}, "b"),
        call("glob", {"pattern": "*"}, "c")]))

    class InterruptOnBash(Recorder):
        def tool_call(self, tool_call, description):
            if tool_call.name == "bash":
                raise KeyboardInterrupt

    with pytest.raises(TurnInterrupted):
        agent.run_turn("go", InterruptOnBash())
    messages = agent.conversation.messages
    assert validity_problems(messages) == []
    assert [m.tool_call_id for m in messages if m.role == "tool"] == ["a", "b", "c"]
    assert validity_problems(session_messages(agent)) == []


def test_memory_edit_reaches_the_next_system_prompt(tmp_path):
    agent, provider, _ = make(
        tmp_path,
        Message.assistant("", [call("core_memory_append", {"label": "human", "content": "Prefers tabs over spaces."})]),
        "Noted.", "Hi again.")
    agent.run_turn("remember: I prefer tabs")
    agent.run_turn("hello")
    assert "Prefers tabs over spaces." not in provider.requests[0].system
    assert "Prefers tabs over spaces." in provider.requests[1].system
    assert "Prefers tabs over spaces." in provider.requests[2].system


def test_over_limit_memory_edit_is_refused_with_the_figure(tmp_path):
    agent, provider, _ = make(
        tmp_path, Message.assistant("", [call("core_memory_append", {"label": "human", "content": "x" * 2_100})]),
        "ok")
    agent.run_turn("remember a lot")
    result = provider.requests[1].messages[-1]
    assert result.is_error and "over its 2,000 limit" in result.text


def test_one_turn_counter_a_resumed_session_goes_on_counting_from_its_own(tmp_path, monkeypatch):
    """The agent's turn number is the conversation's: after -c it goes on from the session's turns,
    and the next typed message carries the next number (they once disagreed after -c)."""
    from mini_letta.conversation import Conversation
    from agent_support import make_agent

    conversation = Conversation()
    for n in range(3):
        conversation.append(Message.user(f"turn {n + 1}"))
        conversation.append(Message.assistant("ok"))
    agent = make_agent(ScriptedProvider([Message.assistant("four")]), tmp_path, conversation=conversation)
    assert agent.turns == 3
    agent.run_turn("the fourth")
    assert agent.turns == 4 == agent.conversation.messages[-2].meta["turn"]
    assert agent.history[-1].turn == 4
