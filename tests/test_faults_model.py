"""Model misbehaviour over the real wire: broken tool calls, floods of calls, loops, empty replies.

Every bad call must get an error result the model can read (so the history stays sendable), the
turn must end by itself, and the next request must be one a real API accepts.
"""

from __future__ import annotations

import json

import pytest
from fakes import Reply
from fakes.anthropic_server import FakeAnthropicServer
from fault_support import Recorder, anthropic_agent, check_history, cli, openai_agent

from mini_letta.settings import SETTINGS

MAX_TOOL_CALLS_PER_REPLY = SETTINGS.loop.max_tool_calls_per_reply
REPEATED_FAILURE_LIMIT = SETTINGS.loop.repeated_failure_limit


@pytest.fixture
def workspace(tmp_path):
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "notes.txt").write_text("line one\nline two\n")
    return folder


def sent_messages(server, index=-1):
    return server.requests_to("/v1/chat/completions")[index].body["messages"]


def tool_messages(server, index=-1):
    return [m for m in sent_messages(server, index) if m["role"] == "tool"]


@pytest.mark.parametrize("name, arguments, words", [
    ("read_file", '{"path": "notes.txt"', "not valid JSON"),
    ("read_file", '["notes.txt"]', "must be a JSON object"),
    ("read_file", "{}", "missing required argument 'path'"),
    ("read_file", '{"path": "notes.txt", "colour": "red"}', "unexpected argument 'colour'"),
    ("read_file", '{"path": 42}', "must be a string"),
    ("read_file", '{"path": "notes.txt", "limit": -5}', "must be at least"),
    ("launch_missiles", '{"target": "moon"}', "no tool named 'launch_missiles'"),
    ("", "{}", "no tool named ''"),
], ids=["truncated-json", "not-an-object", "missing-field", "extra-field", "wrong-type", "out-of-range",
        "unknown-tool", "no-name"])
@pytest.mark.bad_input
def test_a_bad_tool_call_gets_an_error_result_and_the_turn_goes_on(monkeypatch, server, workspace, name,
                                                                     arguments, words):
    agent = openai_agent(monkeypatch, server, workspace)
    server.enqueue(Reply(tool_calls=[("call_1", name, arguments)]), Reply(text="I see my mistake."))
    result = agent.run_turn("read my notes")
    assert result.text == "I see my mistake." and result.stopped == "done"
    [tool_message] = tool_messages(server)
    assert words in tool_message["content"]
    assert agent.conversation.messages[-2].is_error
    check_history(agent, "read my notes")


@pytest.mark.bad_input
def test_tool_calls_without_ids_or_with_repeated_ids_get_fresh_unique_ids(monkeypatch, server, workspace):
    agent = openai_agent(monkeypatch, server, workspace)
    calls = [("", "glob", '{"pattern": "*.txt"}'), ("dup", "glob", '{"pattern": "*"}'),
             ("dup", "read_file", '{"path": "notes.txt"}')]
    server.enqueue(Reply(tool_calls=calls), Reply(text="done"))
    agent.run_turn("look around")
    sent = sent_messages(server)
    [assistant] = [m for m in sent if m["role"] == "assistant"]
    ids = [c["id"] for c in assistant["tool_calls"]]
    assert len(ids) == 3 and len(set(ids)) == 3 and all(ids)
    assert [m["tool_call_id"] for m in sent if m["role"] == "tool"] == ids
    assert "line one" in tool_messages(server)[2]["content"]
    check_history(agent, "look around")


@pytest.mark.bad_input
def test_fifty_tool_calls_in_one_reply_all_get_a_result_and_the_excess_is_not_run(monkeypatch, server, workspace):
    agent = openai_agent(monkeypatch, server, workspace)
    calls = [(f"call_{i}", "read_file", '{"path": "notes.txt"}') for i in range(50)]
    server.enqueue(Reply(tool_calls=calls, chunk_size=50), Reply(text="that was a lot"))
    events = Recorder()
    assert agent.run_turn("read it fifty times", events).text == "that was a lot"
    results = tool_messages(server)
    assert [m["tool_call_id"] for m in results] == [c[0] for c in calls]
    ran = [m for m in results if "line one" in m["content"]]
    refused = [m for m in results if "Not run: more than" in m["content"]]
    assert len(ran) == MAX_TOOL_CALLS_PER_REPLY and len(refused) == 50 - MAX_TOOL_CALLS_PER_REPLY
    check_history(agent, "read it fifty times")


@pytest.mark.bad_input
def test_the_same_failing_call_repeated_stops_the_turn_after_the_limit(monkeypatch, server, workspace):
    agent = openai_agent(monkeypatch, server, workspace)
    loop = Reply(tool_calls=[("call_x", "read_file", '{"path": "missing.txt"}')])
    server.enqueue(*[loop] * (REPEATED_FAILURE_LIMIT + 3))
    events = Recorder()
    result = agent.run_turn("read missing.txt", events)
    assert result.stopped == "repeated_failure"
    assert len(server.requests_to("/v1/chat/completions")) == REPEATED_FAILURE_LIMIT
    assert any("repeated the same failing tool call" in n for n in events.notices)
    check_history(agent, "read missing.txt")


@pytest.mark.bad_input
def test_a_model_that_calls_tools_forever_is_stopped_by_the_step_limit(monkeypatch, server, workspace):
    agent = openai_agent(monkeypatch, server, workspace)
    agent.max_steps = 4
    server.enqueue(*[Reply(tool_calls=[(f"c{i}", "glob", f'{{"pattern": "*{i}"}}')]) for i in range(6)])
    events = Recorder()
    assert agent.run_turn("explore", events).stopped == "max_turns"
    assert len(server.requests_to("/v1/chat/completions")) == 4
    assert any("model calls in one turn (--max-turns 4)" in n for n in events.notices)
    check_history(agent, "explore")


@pytest.mark.bad_input
def test_arguments_cut_by_the_output_limit_are_not_run_and_the_model_is_told_why(monkeypatch, server, workspace):
    agent = openai_agent(monkeypatch, server, workspace)
    server.enqueue(Reply(tool_calls=[("c1", "write_file", '{"path": "big.txt", "content": "abc')],
                         stop_reason="length"), Reply(text="I will write less at a time."))
    result = agent.run_turn("write a big file")
    told = tool_messages(server)[0]["content"]
    assert "reply limit" in told and "cut mid-JSON" in told and "again, smaller" in told
    assert not (workspace / "big.txt").exists()
    first, retry = (r.body["max_tokens"] for r in server.requests_to("/v1/chat/completions"))
    assert retry == 2 * first  # the window has room: the retry may write a longer reply
    assert result.stopped == "done"
    check_history(agent, "write a big file")


@pytest.mark.bad_input
def test_an_empty_reply_is_noticed_and_the_next_turn_is_sendable(monkeypatch, server, workspace):
    agent = openai_agent(monkeypatch, server, workspace)
    server.enqueue(Reply(text=""), Reply(text="now I talk"))
    events = Recorder()
    assert agent.run_turn("say something", events).text == ""
    assert any("empty reply" in n for n in events.notices)
    assert agent.run_turn("hello?").text == "now I talk"
    assistant = [m for m in sent_messages(server) if m["role"] == "assistant"]
    assert assistant == [{"role": "assistant", "content": ""}]
    check_history(agent, "say something", "hello?")


@pytest.mark.bad_input
def test_anthropic_empty_reply_and_bad_call_make_a_request_anthropic_accepts(monkeypatch, tmp_path, workspace):
    with FakeAnthropicServer() as server:
        agent = anthropic_agent(monkeypatch, server, workspace)
        server.enqueue(Reply(text=""), Reply(tool_calls=[("toolu_1", "nope", "{}")]), Reply(text="ok"))
        agent.run_turn("first")
        agent.run_turn("second")
        messages = server.requests_to("/v1/messages")[-1].body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user"]
    for message in messages:
        blocks = message["content"] if isinstance(message["content"], list) else [message["content"]]
        assert blocks and all(b for b in blocks)
        assert all(b.get("text", "x").strip() for b in blocks if isinstance(b, dict))
    check_history(agent, "first", "second")


@pytest.mark.bad_input
def test_print_mode_stops_at_max_turns_and_says_so_in_json(server, tmp_path, workspace):
    server.enqueue(*[Reply(tool_calls=[(f"c{i}", "glob", f'{{"pattern": "*{i}"}}')]) for i in range(6)])
    completed = cli(["-p", "explore", "--provider", "openai", "--base-url", server.base_url, "--model", "m",
                     "--max-turns", "3", "--output-format", "json"], home=tmp_path / "h", cwd=workspace)
    result = json.loads(completed.stdout)
    assert completed.returncode == 3 and result["stopped"] == "max_turns" and result["is_error"] is True
    assert result["num_turns"] == 3 and len(server.requests_to("/v1/chat/completions")) == 3
    bad = cli(["-p", "explore", "--max-turns", "0", "--provider", "demo"], home=tmp_path / "h", cwd=workspace)
    assert bad.returncode != 0 and "--max-turns" in bad.stderr
