"""The Anthropic provider against a fake Messages API over real HTTP (nothing patched)."""

from __future__ import annotations

import pytest
from fakes import Fault, Reply, ask, stream_all
from fakes.anthropic_server import FakeAnthropicServer, anthropic_usage, overflow_fault_body

from mini_letta.errors import AuthenticationError, ContextOverflowError, ProviderError
from mini_letta.messages import Image, Message, ToolCall, ToolSpec
from mini_letta.providers import create_provider
from mini_letta.providers.base import Request, TextDelta, ToolCallStarted

READ_FILE = ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}})
EPHEMERAL = {"type": "ephemeral"}


@pytest.fixture
def server():
    with FakeAnthropicServer() as fake:
        yield fake


@pytest.fixture
def provider(server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    return create_provider("anthropic", "claude-test", server.base_url, timeout=2, max_retries=1)


def test_streamed_text_arrives_as_several_deltas_and_is_assembled(server, provider):
    server.enqueue(Reply(text="Hello from the fake Messages API.", chunk_size=4))
    deltas, message = stream_all(provider, ask())
    assert len(deltas) >= 5 and all(isinstance(d, TextDelta) for d in deltas)
    assert "".join(d.text for d in deltas) == message.text == "Hello from the fake Messages API."
    assert message.stop_reason == "end_turn"


def test_request_uses_the_system_parameter_and_the_override_model_and_a_tiny_one_no_breakpoints(server, provider):
    server.enqueue(Reply(text="ok"))
    stream_all(provider, ask("question", model="claude-cheap", max_tokens=500, tools=[READ_FILE]))
    body = server.requests[0].body
    assert body["model"] == "claude-cheap" and body["max_tokens"] == 500 and body["stream"] is True
    # Far below the smallest prefix Anthropic caches: a breakpoint would only be ignored.
    assert body["system"] == [{"type": "text", "text": "You are terse."}]
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "question"}]}]
    assert body["tools"] == [{"name": "read_file", "description": "Read a file.",
                              "input_schema": READ_FILE.parameters}]


def test_key_from_anthropic_api_key_is_sent(server, provider):
    server.enqueue(Reply(text="ok"))
    stream_all(provider, ask())
    headers = server.requests[0].headers
    assert "sk-ant-test" in (headers.get("x-api-key", ""), headers.get("authorization", "").removeprefix("Bearer "))


def test_tool_use_input_split_over_deltas_is_assembled(server, provider):
    arguments = '{"path": "src/pkg/deeply/nested/module.py"}'
    server.enqueue(Reply(text="Let me look.", tool_calls=[("toolu_1", "read_file", arguments)], chunk_size=5))
    events, message = stream_all(provider, ask(tools=[READ_FILE]))
    assert [e for e in events if isinstance(e, ToolCallStarted)] == [ToolCallStarted("toolu_1", "read_file")]
    assert message.text == "Let me look."
    assert message.tool_calls == [ToolCall("toolu_1", "read_file", arguments)]
    assert message.stop_reason == "tool_use"


def test_tool_results_and_following_text_merge_into_one_user_message_results_first(server, provider):
    server.enqueue(Reply(tool_calls=[("toolu_1", "read_file", '{"path": "a.py"}'),
                                     ("toolu_2", "read_file", '{"path": "b.py"}')]),
                   Reply(text="Done."))
    history = [Message.user("read a and b")]
    _, assistant = stream_all(provider, Request("sys", history, [READ_FILE]))
    history += [assistant, Message.tool_result(assistant.tool_calls[0], "A"),
                Message.tool_result(assistant.tool_calls[1], "no such file", is_error=True),
                Message.user("and be quick")]
    _, final = stream_all(provider, Request("sys", history, [READ_FILE]))
    assert final.text == "Done."
    sent = server.requests[1].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert sent[1]["content"] == [
        {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.py"}},
        {"type": "tool_use", "id": "toolu_2", "name": "read_file", "input": {"path": "b.py"}}]
    assert sent[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "A", "is_error": False},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "no such file", "is_error": True},
        {"type": "text", "text": "and be quick"}]


def test_history_that_anthropic_would_reject_is_made_sendable(server, provider):
    server.enqueue(Reply(text="ok"))
    broken = ToolCall("toolu_9", "read_file", '{"path": "a.py"')  # the model's JSON was cut off
    history = [Message.user("go"), Message.assistant("", [broken]), Message.tool_result(broken, ""),
               Message.user("next"), Message.assistant(""), Message.user("   ")]
    stream_all(provider, Request("sys", history))
    sent = server.requests[0].body["messages"]
    assert sent[1]["content"] == [{"type": "tool_use", "id": "toolu_9", "name": "read_file", "input": {}}]
    assert sent[2]["content"][0]["content"] == "(no output)"
    assert sent[3]["content"] == [{"type": "text", "text": "(no reply)"}]
    assert all(block.get("text", "x").strip() for m in sent for block in m["content"])


def test_summary_is_user_text_and_images_are_base64_blocks(server, provider):
    server.enqueue(Reply(text="ok"))
    history = [Message.user("Earlier history was compacted: ...", kind="summary"), Message.assistant("noted"),
               Message.user("look", images=[Image("image/png", "iVBORw0KGgo=")])]
    stream_all(provider, Request("sys", history))
    sent = server.requests[0].body["messages"]
    assert sent[0]["content"] == [{"type": "text", "text": "Earlier history was compacted: ..."}]
    assert sent[2]["content"] == [
        {"type": "text", "text": "look"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]


def test_usage_counts_cache_creation_and_cache_reads_separately(server, provider):
    server.enqueue(Reply(text="ok", usage=anthropic_usage(12, 40, cache_creation=300, cache_read=5000)))
    _, message = stream_all(provider, ask())
    usage = message.usage
    assert (usage.input_tokens, usage.cache_write_tokens, usage.cache_read_tokens, usage.output_tokens) == \
        (12, 300, 5000, 40)
    assert usage.context_tokens == 5352


def test_zero_usage_gives_no_usage(server, provider):
    server.enqueue(Reply(text="ok", usage=None))
    _, message = stream_all(provider, ask())
    assert message.usage is None


def test_401_is_an_authentication_error_naming_the_provider_and_the_variable(server, provider):
    server.enqueue(Fault(401, "invalid x-api-key"))
    with pytest.raises(AuthenticationError) as caught:
        stream_all(provider, ask())
    assert str(caught.value).startswith("authentication failed for anthropic: invalid x-api-key")
    assert "ANTHROPIC_API_KEY" in str(caught.value)


def test_429_is_retried_and_then_succeeds(server, provider):
    server.enqueue(Fault(429, "Number of request tokens has exceeded your per-minute rate limit",
                         headers={"retry-after-ms": "10"}),
                   Reply(text="finally"))
    _, message = stream_all(provider, ask())
    assert message.text == "finally"
    assert len(server.requests_to("/v1/messages")) == 2


def test_overloaded_529_is_a_retryable_server_error(server, provider):
    server.enqueue(*[Fault(529, "Overloaded", headers={"retry-after-ms": "10"})] * 2)
    with pytest.raises(ProviderError) as caught:
        stream_all(provider, ask())
    assert str(caught.value).startswith("server error from anthropic (HTTP 529)") and caught.value.retryable


def test_prompt_too_long_becomes_overflow_with_limit_and_actual(server, provider):
    server.enqueue(Fault(400, body=overflow_fault_body(limit=200000, actual=210000)))
    with pytest.raises(ContextOverflowError) as caught:
        stream_all(provider, ask())
    assert (caught.value.limit, caught.value.actual, caught.value.provider) == (200000, 210000, "anthropic")


def test_413_request_too_large_becomes_overflow(server, provider):
    server.enqueue(Fault(413, "Request exceeds the maximum allowed number of bytes."))
    with pytest.raises(ContextOverflowError) as caught:
        stream_all(provider, ask())
    assert caught.value.status == 413 and caught.value.limit is None


def test_unknown_model_error_names_the_model(server, provider):
    server.enqueue(Fault(404, "model: claude-nope"))
    with pytest.raises(ProviderError, match="anthropic does not know the model 'claude-nope'"):
        stream_all(provider, ask(model="claude-nope"))


@pytest.mark.parametrize("fault, says", [
    (Reply(text="partial reply here", cut_after=4), "broke off mid-stream"),
    (Reply(text="partial reply here", malformed_after=4), "broke off mid-stream"),
    (Reply(text="partial", error_after=3,
           error_body={"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
     "anthropic reported an error during the reply: Overloaded"),
], ids=["cut", "malformed", "error-event"])
def test_a_stream_that_goes_wrong_midway_becomes_a_provider_error(server, provider, fault, says):
    server.enqueue(fault)
    with pytest.raises(ProviderError) as caught:
        stream_all(provider, ask())
    assert says in str(caught.value)


def test_a_stalled_server_times_out_with_a_clear_message(server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    quick = create_provider("anthropic", "claude-test", server.base_url, timeout=0.3, max_retries=0)
    server.enqueue(Reply(text="too late", stall=3))
    with pytest.raises(ProviderError, match="anthropic timed out"):
        stream_all(quick, ask())


def test_ctrl_c_while_streaming_propagates_and_closes_the_response(server, provider):
    server.enqueue(Reply(text="a long reply " * 50, chunk_size=2, stall=1, stall_after=4))
    stream = provider.stream(ask())
    assert isinstance(next(stream), TextDelta)
    with pytest.raises(KeyboardInterrupt):
        stream.throw(KeyboardInterrupt)
    assert server.client_hung_up.wait(10)


def test_missing_key_is_a_one_line_authentication_error(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))  # no SDK credentials profile under ~/.config/anthropic
    with pytest.raises(AuthenticationError) as caught:
        create_provider("anthropic")
    assert str(caught.value) == "no API key for anthropic: set ANTHROPIC_API_KEY or pass --provider demo."


def test_an_unreadable_credentials_profile_is_an_authentication_error(monkeypatch, tmp_path):
    monkeypatch.setenv("ANTHROPIC_PROFILE", "work")
    monkeypatch.setenv("ANTHROPIC_CONFIG_DIR", str(tmp_path / "missing"))
    with pytest.raises(AuthenticationError, match="^no usable credentials for anthropic .*ANTHROPIC_API_KEY"):
        create_provider("anthropic")


def test_a_server_that_describes_nothing_leaves_the_window_to_the_table(provider):
    assert provider.served_window() is None


def test_anthropic_base_url_variable_is_honoured(server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    server.enqueue(Reply(text="via env"))
    _, message = stream_all(create_provider("anthropic", "claude-test", max_retries=0), ask())
    assert message.text == "via env" and len(server.requests) == 1
