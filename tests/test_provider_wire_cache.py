"""Each provider keeps every message's wire form (``providers/wire_cache.py``) and joins the kept
fragments per request: the bytes must be those of a fresh conversion, whatever happened to the
conversation in between (a tool step, clearing, compaction, an in-place edit, a summary request).

The reference is ``encode_body(provider.request_params(...))``: the request built afresh as data
and serialised once, which the providers sent before they kept anything.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
from fakes import FakeHandler, Reply, stream_all
from fakes.openai_server import FakeOpenAIServer

from mini_letta.messages import Image, Message, ToolCall, ToolSpec
from mini_letta.providers.anthropic_provider import AnthropicProvider
from mini_letta.providers.anthropic_wire import encode_messages, message_form, place_breakpoints
from mini_letta.providers.base import Request, encode_body
from mini_letta.providers.openai_provider import OpenAIProvider
from mini_letta.providers.openai_responses import ResponsesProvider

TOOLS = [ToolSpec("read_file", "Read a file. " * 40, {"type": "object", "properties": {"path": {"type": "string"}}})]
SYSTEM = "You are a careful coding agent. " * 200 + "Today is Thursday; memory: prefers short answers."


def _providers():
    return [OpenAIProvider("gpt-4.1", base_url="http://127.0.0.1:9/v1", api_key="k"),
            OpenAIProvider("llama", name="ollama", base_url="http://127.0.0.1:9/v1", api_key="k"),
            AnthropicProvider("claude-sonnet-4-5", base_url="http://127.0.0.1:9", api_key="k"),
            AnthropicProvider("claude-haiku-4-5", base_url="http://127.0.0.1:9", api_key="k"),
            ResponsesProvider("gpt-5.1-codex", base_url="http://127.0.0.1:9/v1", api_key="k")]


@pytest.fixture(params=range(5), ids=["openai", "ollama", "anthropic", "anthropic-haiku", "openai-responses"])
def provider(request):
    return _providers()[request.param]


def _step(index: int, text: str = "") -> list[Message]:
    call = ToolCall(f"call_{index}", "read_file", json.dumps({"path": f"src/é{index}.py"}))
    return [Message.assistant(text, [call]), Message.tool_result(call, f"print('héllo {index}')\n" * 30)]


def _conversation() -> list[Message]:
    """Every shape the converters treat apart: merged results and text, empty text, images, two
    parallel calls, broken arguments, an error result, an empty result, a summary."""
    both = [ToolCall("call_a", "read_file", '{"path": "a.py"}'), ToolCall("call_b", "grep", "{not json")]
    messages = [Message.user("Summary of the earlier work: the retry fix.", kind="summary"),
                Message.user("Look at this screenshot", images=[Image("image/png", "iVBORw0KGgo=")]),
                Message.assistant("Reading both.", both),
                Message.tool_result(both[0], "a = 1\n"), Message.tool_result(both[1], "", is_error=True),
                Message.user("   "), Message.assistant(""), Message.user("and the tests?")]
    for index in range(12):
        messages += _step(index, "Next." if index % 2 else "")
    return messages + [Message.user("Now fix it — carefully.")]


def _request(messages: list[Message], **kw) -> Request:
    return Request(SYSTEM, messages, TOOLS, max_tokens=2048, system_stable_chars=len(SYSTEM) - 50, **kw)


def _assert_fresh(provider, request: Request) -> None:
    assert provider.request_body(request, provider.model) == encode_body(provider.request_params(request, provider.model))


def test_every_prefix_of_a_conversation_is_sent_as_a_fresh_conversion_would_send_it(provider):
    messages = _conversation()
    for end in range(len(messages) + 1):
        _assert_fresh(provider, _request(messages[:end]))
        _assert_fresh(provider, _request(messages[:end]))  # again, from the cache


def test_a_tool_step_converts_only_what_it_added(provider):
    messages = _conversation()
    provider.request_body(_request(messages), provider.model)
    before = provider._wire.conversions
    messages += _step(99)
    _assert_fresh(provider, _request(messages))
    assert provider._wire.conversions - before == 2


def test_clearing_and_compaction_put_new_messages_in_and_those_are_sent(provider):
    messages = _conversation()
    _assert_fresh(provider, _request(messages))
    # Clearing: a copy with the same id and a placeholder text (compaction/layers.py).
    cleared = [dataclasses.replace(m, text="[cleared]") if m.role == "tool" else m for m in messages]
    assert [m.id for m in cleared] == [m.id for m in messages]
    _assert_fresh(provider, _request(cleared))
    assert "[cleared]" in provider.request_body(_request(cleared), provider.model).decode()
    # Compaction: a summary and the kept tail replace the list.
    compacted = [Message.user("Summary: the fix is in load_session.", kind="summary"), *messages[-5:]]
    _assert_fresh(provider, _request(compacted))
    # And the old conversation is still sent right if asked again (a summarizer's request).
    _assert_fresh(provider, _request(messages))


def test_a_field_reassigned_in_place_is_converted_again(provider):
    messages = _conversation()
    provider.request_body(_request(messages), provider.model)
    messages[3].text = "edited in place"
    messages[2].tool_calls = [ToolCall("call_a", "read_file", '{"path": "b.py"}'), messages[2].tool_calls[1]]
    messages[1].images = []
    _assert_fresh(provider, _request(messages))
    assert "edited in place" in provider.request_body(_request(messages), provider.model).decode()


def test_replaced_messages_are_forgotten():
    provider = _providers()[0]
    for generation in range(3):
        messages = [Message.user(f"turn {generation}.{i}") for i in range(400)]
        provider.request_body(_request(messages), provider.model)
    assert len(provider._wire) <= 2 * 400 + 256


def test_a_request_that_differs_from_the_last_one_anywhere_is_sent_as_a_fresh_conversion_would(provider):
    """The Anthropic provider keeps the last request's merged turns: a message put in, taken out or
    replaced at any point (a user message after a kept user turn merges into it) must not leave a
    kept turn as it was."""
    messages = _conversation()
    for at in range(len(messages) + 1):
        for changed in (messages[:at] + [Message.user("put in here")] + messages[at:],
                        messages[:at] + messages[at + 1:],
                        messages[:at] + [dataclasses.replace(m, text="[cleared]") for m in messages[at:at + 1]]
                        + messages[at + 1:]):
            _assert_fresh(provider, _request(messages))
            _assert_fresh(provider, _request(changed))


def test_an_anthropic_tool_step_merges_only_the_turns_it_added():
    """A step at 500 messages merges the last turn again (a message after it could have merged into
    it) and the two turns it added, not the whole conversation."""
    provider = _providers()[2]
    messages = [Message.user("Read the notes one by one.")]
    for index in range(250):
        messages += _step(index)
    provider.request_body(_request(messages), provider.model)
    before = provider._turns.merged
    messages += _step(250)
    _assert_fresh(provider, _request(messages))
    assert provider._turns.merged - before == 3


def test_anthropic_breakpoints_on_serialised_blocks_are_where_place_breakpoints_puts_them():
    """The estimate of each merged turn from its blocks' lengths equals ``json.dumps`` of the turn,
    so a breakpoint lands on the same block at every minimum, including at the boundaries."""
    from mini_letta.providers.anthropic_wire import _tokens, system_blocks, to_anthropic_messages

    messages = _conversation()
    forms = [message_form(m) for m in messages]
    tools = [{"name": "t", "description": "d", "input_schema": {}}]
    # Every prefix size at which a breakpoint can move, and one token either side.
    prefix, boundaries = _tokens(tools), set()
    for item in system_blocks(SYSTEM[:900], 400) + to_anthropic_messages(messages):
        prefix += _tokens(item)
        boundaries |= {prefix - 1, prefix, prefix + 1}
    for minimum in sorted(boundaries):
        system, fresh_system = system_blocks(SYSTEM[:900], 400), system_blocks(SYSTEM[:900], 400)
        fresh = to_anthropic_messages(messages)
        place_breakpoints(tools, fresh_system, fresh, minimum)
        assert encode_messages(forms, tools, system, minimum) == encode_body(fresh)
        assert system == fresh_system


# --- the OpenAI stream leaves its connection for the next request -------------------------------
@pytest.fixture
def connections(monkeypatch):
    """The client address of every connection the fake servers accept."""
    seen = []
    setup = FakeHandler.setup

    def counting(self):
        seen.append(self.client_address)
        setup(self)

    monkeypatch.setattr(FakeHandler, "setup", counting)
    return seen


def test_openai_requests_reuse_one_connection(connections):
    with FakeOpenAIServer() as server:
        provider = OpenAIProvider("gpt-4.1", base_url=server.base_url, api_key="k", max_retries=0)
        for index in range(3):
            server.enqueue(Reply(text=f"answer {index}"))
            _, message = stream_all(provider, _request([Message.user("hi")]))
            assert message.text == f"answer {index}"
    assert len(connections) == 1


class _ChattyAfterDone(FakeOpenAIServer):
    """Sends ten more events after ``[DONE]``, then drops the connection without ending the body."""

    def events(self, reply, body, prompt):
        yield from super().events(reply, body, prompt)
        for _ in range(10):
            yield b'data: {"late": true}\n\n'

    def _emit(self, handler, reply, body, prompt):
        super()._emit(handler, reply, body, prompt)
        handler.abort()


def test_a_server_that_goes_on_after_done_still_gives_the_whole_reply(connections):
    with _ChattyAfterDone() as server:
        provider = OpenAIProvider("gpt-4.1", base_url=server.base_url, api_key="k", max_retries=0)
        for index in range(2):
            server.enqueue(Reply(text=f"whole {index}", tool_calls=[("call_1", "read_file", '{"path": "a"}')]))
            _, message = stream_all(provider, _request([Message.user("hi")]))
            assert message.text == f"whole {index}" and [c.name for c in message.tool_calls] == ["read_file"]
            assert message.meta.get("stop_reason") in (None, "end")
    assert len(connections) == 2  # each dropped connection is replaced
