"""Every way a reply can end is named: providers record it as ``meta["stop_reason"]`` (both wire
formats, over real HTTP to the fake servers), the demo and scripted providers too, and the session
file keeps it."""

from __future__ import annotations

import pytest
from fakes import Reply, ask, stream_all
from fakes.anthropic_server import FakeAnthropicServer
from fakes.openai_server import FakeOpenAIServer
from fakes.responses_server import FakeResponsesServer

from mini_letta import endings
from mini_letta.messages import Message, ToolSpec
from mini_letta.providers import create_provider
from mini_letta.providers.base import Request, complete
from mini_letta.providers.demo import DemoProvider
from mini_letta.providers.scripted import ScriptedProvider
from mini_letta.sessions.store import SessionWriter, load_session

WRITE = ToolSpec("write_file", "Write a file.", {"type": "object", "properties": {"path": {"type": "string"}}})


FAKES = {"openai": FakeOpenAIServer, "openai-responses": FakeResponsesServer, "anthropic": FakeAnthropicServer}


@pytest.fixture(params=list(FAKES))
def wire(request, monkeypatch):
    """(fake server, provider) for each wire format."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    fake = FAKES[request.param]()
    with fake:
        url = fake.base_url
        yield fake, create_provider(request.param, "model-test", url, timeout=2, max_retries=0)


def _length(fake) -> str:
    return fake.length_stop  # "length" on the OpenAI wire, "max_output_tokens" on Responses', "max_tokens" on Anthropic's


def test_a_finished_reply_ends_as_end(wire):
    fake, provider = wire
    fake.enqueue(Reply(text="all done"))
    _, message = stream_all(provider, ask())
    assert endings.ending(message) == "end" and message.meta["stop_reason"] == "end"


def test_a_reply_stopped_by_the_limit_ends_as_max_tokens(wire):
    fake, provider = wire
    fake.enqueue(Reply(text="the first half of a long answ", stop_reason=_length(fake)))
    _, message = stream_all(provider, ask(max_tokens=12))
    assert message.meta["stop_reason"] == "max_tokens"
    assert message.text == "the first half of a long answ"


def test_a_tool_call_cut_mid_json_ends_as_max_tokens_with_its_partial_arguments(wire):
    fake, provider = wire
    fake.enqueue(Reply(tool_calls=[("call_1", "write_file", '{"path": "a.py", "content": "def f(')],
                       stop_reason=_length(fake)))
    _, message = stream_all(provider, ask(tools=[WRITE]))
    assert message.meta["stop_reason"] == "max_tokens"
    assert message.tool_calls[0].arguments == '{"path": "a.py", "content": "def f('


def test_a_refusal_ends_as_refusal_with_its_words_kept(wire):
    fake, provider = wire
    if isinstance(fake, (FakeOpenAIServer, FakeResponsesServer)):
        fake.enqueue(Reply(refusal="I can't help with that."))
    else:
        fake.enqueue(Reply(text="I can't help with that.", stop_reason="refusal"))
    _, message = stream_all(provider, ask())
    assert message.meta["stop_reason"] == "refusal"
    assert message.text == "I can't help with that."


def test_an_anthropic_refusal_without_words_still_ends_as_refusal(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    with FakeAnthropicServer() as fake:
        provider = create_provider("anthropic", "m", fake.base_url, timeout=2, max_retries=0)
        fake.enqueue(Reply(stop_reason="refusal"))
        _, message = stream_all(provider, ask())
    assert message.meta["stop_reason"] == "refusal" and message.text == ""


@pytest.mark.parametrize("name", ["openai", "openai-responses"])
def test_openai_content_filter_ends_as_content_filter(name, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with FAKES[name]() as server:
        provider = create_provider(name, "m", server.base_url, timeout=2, max_retries=0)
        server.enqueue(Reply(text="partial", stop_reason="content_filter"))
        _, message = stream_all(provider, ask())
    assert message.meta["stop_reason"] == "content_filter"


def test_a_stream_that_ends_without_its_finish_is_cut_and_keeps_what_arrived(wire):
    fake, provider = wire
    fake.enqueue(Reply(text="what arrived before the end", finish=False))
    _, message = stream_all(provider, ask())
    assert message.meta["stop_reason"] == "cut" and message.text == "what arrived before the end"


def test_scripted_replies_name_their_ending_by_either_apis_stop_reason():
    provider = ScriptedProvider([Message.assistant("x", stop_reason="length"),
                                 Message.assistant("y", stop_reason="refusal"), "z"])
    request = Request(system="s", messages=[Message.user("hi")])
    assert [complete(provider, request).meta["stop_reason"] for _ in range(3)] == ["max_tokens", "refusal", "end"]


def test_the_demo_model_says_when_it_stopped_at_the_reply_limit():
    demo = DemoProvider()
    short = Request(system="s", messages=[Message.user("fill 500")], max_tokens=100)
    roomy = Request(system="s", messages=[Message.user("fill 50")], max_tokens=100)
    assert complete(demo, short).meta["stop_reason"] == "max_tokens"
    assert complete(demo, roomy).meta["stop_reason"] == "end"


def test_the_session_file_keeps_how_a_reply_ended(tmp_path):
    with SessionWriter.create(tmp_path / "home", tmp_path, "demo", "demo") as session:
        session.append_message(Message.user("write a long essay"))
        session.append_message(endings.mark(Message.assistant("It was the best of"), "max_tokens"))
    loaded = load_session(session.path)
    assert endings.ending(loaded.all_messages[-1]) == "max_tokens"
    assert endings.is_incomplete(loaded.all_messages[-1])
